"""Diff runs: `POST /api/openapi/diffs` diffs two OpenAPI documents sent in the body and keeps
the result for `GET /api/openapi/diffs/<id>` and the console's page of it.

The documents come from the caller, so nothing outside them is read: a `$ref` to another file
or URL is refused (the server would otherwise read its own files or fetch on the caller's
behalf). The diff is `controller.diffruns.offline_service.diff_contracts`, the one behind
`driftgate diff`, through a reader that serves only the two documents. See docs/api.md.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

from pydantic import Field, StringConstraints
from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.diffruns.offline_service import InputError, Reader, diff_contracts
from controller.diffs.explain import with_hints
from controller.errors import NotFound, Unprocessable
from controller.model.base import ApiModel, RequestModel
from controller.model.change import ChangeOut
from controller.model.jsonvalue import JsonValue
from controller.model.principal import Principal
from controller.model.watch import ChangeCounts
from controller.store.models import DiffRun
from controller.store.snapshots import count_changes, decode_changes, encode_changes

CONSOLE_PATH = "/console/diffs/"
BASE, TARGET = "before", "after"

Label = Annotated[
    str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]*$")
]
Source = Annotated[
    str, StringConstraints(min_length=1, max_length=32, pattern=r"^[a-z][a-z0-9_-]*$")
]


class DiffRunIn(RequestModel):
    before: JsonValue = Field(
        description="the base document: an OpenAPI document as a JSON object, or its text "
        "(JSON or YAML)"
    )
    after: JsonValue = Field(description="the revised document, in the same forms")
    base_label: Label | None = Field(
        default=None, description="what the base is (a file name, a tag); `before` if absent"
    )
    target_label: Label | None = Field(
        default=None, description="what the revision is; `after` if absent"
    )
    source: Source = Field(default="api", description="who asked (`cli`, `ci`, `api`)")


class DiffRunOut(ApiModel):
    id: str
    url: str = Field(description="the run's page in the console")
    base_label: str
    target_label: str
    source: str
    contract_type: str = Field(description="`openapi`")
    counts: ChangeCounts
    changes: list[ChangeOut] = Field(description="each with its human `hint`, grouped by cause")
    created_at: datetime


class _Documents(Reader):
    """A reader of the two documents of the request and of nothing else."""

    def __init__(self, documents: dict[str, bytes]) -> None:
        super().__init__(allow_private=False)
        self.documents = documents

    def read(self, location: str) -> bytes:
        if location in self.documents:
            return self.documents[location]
        raise InputError(
            f"a $ref to {location!r} is outside the two documents sent: a diff run reads "
            "nothing else (bundle the documents first)"
        )


def _bytes(document: Any) -> bytes:
    if isinstance(document, str):
        return document.encode()
    return json.dumps(document).encode()


def create(
    session: Session, principal: Principal, body: DiffRunIn, base_url: str, now: datetime
) -> DiffRunOut:
    """Diff the two documents and keep the run; 422 `invalid_contract` when one is not an
    OpenAPI document the engine can read (the message says which and why)."""
    reader = _Documents({BASE: _bytes(body.before), TARGET: _bytes(body.after)})
    try:
        report = diff_contracts(
            BASE, TARGET, contract_type="openapi", reader=reader, today=now.date()
        )
    except InputError as exc:
        raise Unprocessable(str(exc), code="invalid_contract") from None
    run = DiffRun(
        org_id=principal.org_id,
        base_label=body.base_label or BASE,
        target_label=body.target_label or TARGET,
        source=body.source,
        contract_type=report.contract_type,
        counts=count_changes(report.changes),
        changes=encode_changes(report.changes),
        actor=principal.actor,
        created_at=now,
    )
    session.add(run)
    session.flush()
    return run_out(run, base_url)


def get(session: Session, org_id: str, run_id: str) -> DiffRun:
    """The org's run; another org's id, or one past retention, is a 404."""
    run = session.scalar(select(DiffRun).where(DiffRun.id == run_id, DiffRun.org_id == org_id))
    if run is None:
        raise NotFound("no such diff run")
    return run


def link(base_url: str, run_id: str) -> str:
    return f"{base_url.rstrip('/')}{CONSOLE_PATH}{run_id}"


def run_out(run: DiffRun, base_url: str) -> DiffRunOut:
    return DiffRunOut(
        id=run.id,
        url=link(base_url, run.id),
        base_label=run.base_label,
        target_label=run.target_label,
        source=run.source,
        contract_type=run.contract_type,
        counts=ChangeCounts.model_validate(run.counts),
        changes=[ChangeOut.model_validate(c) for c in with_hints(decode_changes(run.changes))],
        created_at=run.created_at,
    )
