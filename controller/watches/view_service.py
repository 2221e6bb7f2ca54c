"""What a watch currently sees: the operations or tools of its last snapshot and of its
baseline, side by side, with the ones the diff engine found changed marked.

The changes are computed by the same engine, with the same options, as the check that
stored the snapshot (`controller.checks.engine.diff_documents`); the surface and the marks are
`controller.diffs.surface`, each kind's surface named by its entry (`controller.contracts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from controller.checks.engine import diff_documents
from controller.contracts.kinds import CONTRACT_KINDS
from controller.diffs.surface import MARKS, Marked, SurfaceView, compare
from controller.store.models import Snapshot, Watch
from controller.store.snapshots import decode_snapshot
from controller.watches.service import get_watch


@dataclass(frozen=True)
class ContractView:
    watch: Watch
    view: SurfaceView
    current_at: datetime | None
    baseline_at: datetime | None
    accepted_by: str | None
    is_baseline_current: bool
    has_snapshot: bool


def contract_view(session: Session, org_id: str, watch_id: str, now: datetime) -> ContractView:
    """The watch's two surfaces (404 for another org's watch); empty before the first check."""
    watch = get_watch(session, org_id, watch_id)
    current = session.get(Snapshot, watch.last_snapshot_id) if watch.last_snapshot_id else None
    baseline = (
        session.get(Snapshot, watch.baseline_snapshot_id) if watch.baseline_snapshot_id else None
    )
    current_doc = decode_snapshot(current) if current is not None else None
    baseline_doc = decode_snapshot(baseline) if baseline is not None else None
    same = current is not None and baseline is not None and current.id == baseline.id
    changes = (
        diff_documents(watch.watch_type, baseline_doc, current_doc, now.date())
        if current_doc is not None and baseline_doc is not None and not same
        else []
    )
    kinds = CONTRACT_KINDS
    view = compare(
        kinds.surface_of(watch.watch_type, baseline_doc) if baseline_doc is not None else [],
        kinds.surface_of(watch.watch_type, current_doc) if current_doc is not None else [],
        changes,
    )
    return ContractView(
        watch=watch,
        view=view,
        current_at=current.created_at if current is not None else None,
        baseline_at=watch.baseline_accepted_at or (baseline.created_at if baseline else None),
        accepted_by=watch.baseline_accepted_by,
        is_baseline_current=same,
        has_snapshot=current is not None,
    )


__all__ = ["MARKS", "ContractView", "Marked", "contract_view"]
