"""Replay use cases: a fixture of one of the org's drifts (`POST /v1/replay/fixtures/
from-watch`), built from the stored snapshots. See docs/replay.md.

The routes that need it are gated by the `replay_cloud` product (403
`PRODUCT_REQUIRED: replay_cloud`, the same check as the draft-PR routes).
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from typing import Annotated, Any

from pydantic import Field, JsonValue, StringConstraints, model_validator
from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.checks import decode_changes, decode_snapshot
from controller.errors import NotFound, Unprocessable
from controller.model.base import ApiModel, RequestModel, utc_iso
from controller.replay import catalog
from controller.replay.fixtures import DISCLAIMER, Fixture, build_fixture, digest_of
from controller.store.models import DriftEvent, Incident, Snapshot, Watch

PRODUCT = "replay_cloud"
ObjectId = Annotated[str, StringConstraints(max_length=64, pattern=r"^[A-Za-z0-9._:-]{1,64}$")]


class FromWatchIn(RequestModel):
    """Body of `POST /v1/replay/fixtures/from-watch` (`eventId` is accepted for
    `driftEventId`)."""

    watch_id: ObjectId
    drift_event_id: ObjectId | None = Field(default=None, description="default: the latest")
    event_id: ObjectId | None = Field(default=None, description="an alias of driftEventId")

    @model_validator(mode="after")
    def _alias(self) -> FromWatchIn:
        if self.drift_event_id is None:
            self.drift_event_id = self.event_id
        return self


class IncidentOut(ApiModel):
    status: str
    drift_event_id: str | None
    detected_at: str | None


class ExpectOut(ApiModel):
    breaking: int = Field(description="breaking changes the fixture's drift holds")
    agent_actions: list[str] = Field(description="what an agent should do about them")


class FixtureBody(ApiModel):
    id: str
    before_schema: Any
    after_schema: Any
    mock_responses: dict[str, Any]
    sample_error: Any = None
    metadata: dict[str, Any]
    expect: ExpectOut = Field(description="what a test of the agent should expect")


class FixtureOut(ApiModel):
    fixture: FixtureBody
    incident: IncidentOut | None = None
    files: dict[str, str] = Field(description="path -> content: the fixture's files")
    digest: str = Field(description="sha256 of the files: the same drift, the same digest")


def from_watch(session: Session, org_id: str, data: FromWatchIn) -> FixtureOut:
    watch = session.get(Watch, data.watch_id)
    if watch is None or watch.org_id != org_id:
        raise NotFound("Watch not found")
    event = _event(session, watch, data.drift_event_id)
    if event is not None:
        before = _document(session, event.base_snapshot_id)
        after = _document(session, event.snapshot_id)
        changes = decode_changes(event.changes)
    else:
        before = after = _document(session, watch.baseline_snapshot_id)
        changes = []
    if after is None:
        raise Unprocessable("the watch has no snapshot yet: run a check first", code="no_snapshot")
    incident = None
    if event is not None and event.incident_id is not None:
        row = session.get(Incident, event.incident_id)
        if row is not None:
            incident = {
                "status": row.status,
                "driftEventId": event.id,
                "detectedAt": utc_iso(event.detected_at),
            }
    fixture = build_fixture(
        fixture_id=f"{watch.id}:{event.id if event else 'baseline'}",
        watch_type=watch.watch_type,
        before=before if before is not None else after,
        after=after,
        changes=changes,
        content_kind="hosted-curated",
        source=f"watch {watch.name}",
        created_at=utc_iso(event.detected_at) if event is not None else "baseline",
        watch_id=watch.id,
        drift_event_id=event.id if event else None,
        incident=incident,
    )
    return answer(fixture, incident)


def answer(fixture: Fixture, incident: dict[str, Any] | None) -> FixtureOut:
    breaking = [c for c in fixture.meta["changes"] if c.get("severity") == "breaking"]
    return FixtureOut(
        fixture=FixtureBody(
            id=fixture.id,
            before_schema=_json(fixture.files["before.schema.json"]),
            after_schema=_json(fixture.files["after.schema.json"]),
            mock_responses=fixture.mock_responses,
            sample_error=None,
            metadata=fixture.meta,
            expect={
                "breaking": len(breaking),
                "agentActions": sorted(
                    {str(c.get("agentAction")) for c in breaking if c.get("agentAction")}
                ),
            },
        ),
        incident=IncidentOut(
            status=incident["status"],
            drift_event_id=incident["driftEventId"],
            detected_at=incident["detectedAt"],
        )
        if incident
        else None,
        files=fixture.files,
        digest=fixture.digest,
    )


def _event(session: Session, watch: Watch, event_id: str | None) -> DriftEvent | None:
    if event_id is not None:
        event = session.get(DriftEvent, event_id)
        if event is None or event.watch_id != watch.id:
            raise NotFound("Drift event not found")
        return event
    return session.scalars(
        select(DriftEvent)
        .where(DriftEvent.watch_id == watch.id)
        .order_by(DriftEvent.detected_at.desc(), DriftEvent.id.desc())
        .limit(1)
    ).first()


def _document(session: Session, snapshot_id: str | None) -> Any:
    if snapshot_id is None:
        return None
    snapshot = session.get(Snapshot, snapshot_id)
    return decode_snapshot(snapshot) if snapshot is not None else None


def _json(text: str) -> Any:
    return json.loads(text)


# -- the catalog ---------------------------------------------------------------------------------

PAGE = 50


class CatalogQuery(RequestModel):
    vendor: Annotated[str, StringConstraints(max_length=200)] | None = None
    watch_type: Annotated[str, StringConstraints(max_length=20)] | None = None
    content_kind: Annotated[str, StringConstraints(max_length=20)] | None = None
    tag: Annotated[str, StringConstraints(max_length=100)] | None = None
    q: Annotated[str, StringConstraints(max_length=200)] | None = Field(
        default=None, description="words of the title or summary"
    )
    limit: int = Field(default=PAGE, ge=1, le=200)
    cursor: Annotated[str, StringConstraints(pattern=r"^[0-9]{1,6}$")] | None = None


class ChangeCountsOut(ApiModel):
    breaking: int
    warning: int
    info: int


class CatalogRow(ApiModel):
    id: str
    title: str
    vendor: str
    watch_type: str
    content_kind: str = Field(description="oss-curated, hosted-curated or hosted-stub")
    tags: list[str]
    installable: bool
    changes: ChangeCountsOut
    summary: str
    updated_at: str


class CatalogPage(ApiModel):
    rows: list[CatalogRow]
    next_cursor: str | None
    disclaimer: str


class InstallIn(RequestModel):
    id: Annotated[str, StringConstraints(max_length=200)] = Field(
        json_schema_extra={"enum": list[JsonValue](sorted(catalog.shipped()))},
        description="an installable catalog row's id",
    )


class InstalledOut(ApiModel):
    id: str
    files: dict[str, str]
    digest: str


# Placeholders: contracts with no curated fixture yet; they say so, and cannot be installed.
STUBS: tuple[dict[str, Any], ...] = tuple(
    {
        "id": f"stub-{vendor}",
        "title": f"{vendor} (placeholder: not vendor-verified)",
        "vendor": vendor,
        "watchType": "openapi",
        "contentKind": "hosted-stub",
        "tags": ["openapi", "placeholder", vendor],
        "installable": False,
        "changes": {"breaking": 0, "warning": 0, "info": 0},
        "summary": "A placeholder row: no fixture has been built for this contract yet.",
        "updatedAt": "2026-11-25T00:00:00Z",
    }
    for vendor in ("stripe", "github")
)


def catalog_page(query: CatalogQuery) -> CatalogPage:
    found = catalog.rows(
        vendor=query.vendor,
        watch_type=query.watch_type,
        content_kind=query.content_kind,
        tag=query.tag,
        query=query.q,
    )
    found += [
        row
        for row in STUBS
        if (query.content_kind in (None, "hosted-stub"))
        and (query.vendor in (None, row["vendor"]))
        and (query.watch_type in (None, row["watchType"]))
        and (query.tag is None or query.tag in row["tags"])
        and (query.q is None or query.q.lower() in row["title"].lower())
    ]
    start = int(query.cursor or 0)
    page = found[start : start + query.limit]
    more = start + query.limit < len(found)
    return CatalogPage(
        rows=[CatalogRow.model_validate(row) for row in page],
        next_cursor=str(start + query.limit) if more else None,
        disclaimer=DISCLAIMER,
    )


def install(data: InstallIn) -> InstalledOut:
    """A catalog fixture's files, without a watch."""
    entry = catalog.shipped().get(data.id)
    if entry is None:
        raise NotFound(f"no installable fixture {data.id!r} in the catalog")
    return InstalledOut(id=data.id, files=entry.files, digest=digest_of(entry.files))


def tar_gz(files: dict[str, str], prefix: str) -> bytes:
    """The files as a gzip-compressed tar (paths under `prefix/`), the same bytes every time."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as zipped:
        with tarfile.open(fileobj=zipped, mode="w") as archive:
            for path in sorted(files):
                data = files[path].encode()
                info = tarfile.TarInfo(f"{prefix}/{path}")
                info.size, info.mtime, info.mode = len(data), 0, 0o644
                archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
