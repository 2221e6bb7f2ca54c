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
from datetime import datetime
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import Field, StringConstraints, model_validator
from sqlalchemy import ColumnElement, or_, select
from sqlalchemy.orm import Session, defer

from controller.diffs.rules import order_actions
from controller.errors import NotFound, Unprocessable
from controller.model.base import ApiModel, RequestModel, utc_iso
from controller.model.watch import TEXT_PATTERN
from controller.replay import catalog
from controller.replay.fixtures import DISCLAIMER, Fixture, build_fixture, digest_of
from controller.store import audit
from controller.store.audit import Caller
from controller.store.models import DriftEvent, Incident, ReplayPublication, Snapshot, Watch
from controller.store.snapshots import decode_changes, decode_snapshot

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
    _, fixture, incident = _build(session, org_id, data.watch_id, data.drift_event_id)
    return answer(fixture, incident)


def _build(
    session: Session, org_id: str, watch_id: str, event_id: str | None
) -> tuple[Watch, Fixture, dict[str, Any] | None]:
    """The fixture of one of the org's drift events (default: the latest; the baseline when
    the watch never drifted)."""
    watch = session.get(Watch, watch_id)
    if watch is None or watch.org_id != org_id:
        raise NotFound("Watch not found")
    event = _event(session, watch, event_id)
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
    return watch, fixture, incident


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
                "agentActions": order_actions(
                    str(c.get("agentAction")) for c in breaking if c.get("agentAction")
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
MAX_PUBLISHED_ROWS = 1000  # the newest published rows a catalog listing considers


class CatalogQuery(RequestModel):
    vendor: Annotated[str, StringConstraints(max_length=200, pattern=TEXT_PATTERN)] | None = None
    watch_type: Annotated[str, StringConstraints(max_length=20, pattern=TEXT_PATTERN)] | None = None
    content_kind: Annotated[str, StringConstraints(max_length=20, pattern=TEXT_PATTERN)] | None = (
        None
    )
    tag: Annotated[str, StringConstraints(max_length=100, pattern=TEXT_PATTERN)] | None = None
    q: Annotated[str, StringConstraints(max_length=200, pattern=TEXT_PATTERN)] | None = Field(
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
    id: Annotated[str, StringConstraints(max_length=200, pattern=TEXT_PATTERN)] = Field(
        examples=sorted(catalog.shipped())[:3],
        description="an installable catalog row's id: a shipped one (oss-...) or a published "
        "one (hosted-...)",
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


def catalog_page(session: Session, query: CatalogQuery, org_id: str | None) -> CatalogPage:
    """The shipped fixtures, the published ones the caller may see (public ones, and its own
    org's when it sent a key), then the placeholders; filtered, paged."""
    filters = catalog.Filters(
        vendor=query.vendor,
        watch_type=query.watch_type,
        content_kind=query.content_kind,
        tag=query.tag,
        query=query.q,
    )
    found = catalog.rows(filters)
    if query.content_kind in (None, "hosted-curated"):
        found += [row for row in _published_rows(session, org_id) if filters.match(row)]
    found += [row for row in STUBS if filters.match(row)]
    start = int(query.cursor or 0)
    page = found[start : start + query.limit]
    more = start + query.limit < len(found)
    return CatalogPage(
        rows=[CatalogRow.model_validate(row) for row in page],
        next_cursor=str(start + query.limit) if more else None,
        disclaimer=DISCLAIMER,
    )


def install(session: Session, data: InstallIn, org_id: str) -> InstalledOut:
    """A catalog fixture's files, without a watch: a shipped one, or a published one the org
    may see (its own, or public)."""
    entry = catalog.shipped().get(data.id)
    if entry is not None:
        return InstalledOut(id=data.id, files=entry.files, digest=digest_of(entry.files))
    publication = _visible_publication(session, data.id, org_id)
    if publication is None:
        raise NotFound(f"no installable fixture {data.id!r} in the catalog")
    return InstalledOut(id=data.id, files=publication.files, digest=publication.digest)


# -- publishing (hosted-curated) -----------------------------------------------------------------

HOSTED_PREFIX = "hosted-"
Tag = Annotated[str, StringConstraints(min_length=1, max_length=50, pattern=r"^[^\x00-\x1f]+$")]
Text200 = Annotated[
    str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f]+$")
]


class PublishIn(FromWatchIn):
    """Body of `POST /v1/replay/fixtures/publish`: publishing the same drift again updates
    its row (title, vendor, tags, visibility)."""

    title: Text200 | None = Field(default=None, description="default: `<watch>: <date> drift`")
    vendor: Text200 | None = Field(default=None, description="default: the watch URL's host")
    tags: list[Tag] = Field(default_factory=list, max_length=20)
    public: bool = Field(
        default=False, description="visible to every caller of the catalog (else the org alone)"
    )


class PublishedOut(ApiModel):
    row: CatalogRow
    public: bool
    fixture_id: str = Field(description="<watch id>:<drift event id> (or :baseline)")
    digest: str


class PublishedList(ApiModel):
    publications: list[PublishedOut]


def publish(session: Session, caller: Caller, data: PublishIn, now: datetime) -> PublishedOut:
    watch, fixture, _ = _build(session, caller.org_id, data.watch_id, data.drift_event_id)
    counts = {
        severity: sum(1 for c in fixture.meta["changes"] if c.get("severity") == severity)
        for severity in ("breaking", "warning", "info")
    }
    detected = fixture.meta["createdAt"]
    publication = session.scalars(
        select(ReplayPublication).where(
            ReplayPublication.org_id == caller.org_id,
            ReplayPublication.fixture_id == fixture.id,
        )
    ).first()
    created = publication is None
    if publication is None:
        publication = ReplayPublication(org_id=caller.org_id, fixture_id=fixture.id, created_at=now)
        session.add(publication)
    publication.watch_id = watch.id
    publication.drift_event_id = fixture.meta.get("driftEventId")
    publication.title = data.title or f"{watch.name}: {detected[:10]} drift"[:200]
    publication.vendor = data.vendor or (urlsplit(watch.url).hostname or watch.name)[:200]
    publication.watch_type = watch.watch_type
    publication.public = data.public
    publication.tags = sorted(
        {*data.tags, watch.watch_type, "breaking" if counts["breaking"] else "compatible"}
    )
    publication.changes = counts
    publication.summary = (
        f"{counts['breaking']} breaking, {counts['warning']} warning, {counts['info']} info "
        f"change(s) of {watch.name}, detected {detected}"
    )
    publication.files = fixture.files
    publication.digest = fixture.digest
    publication.updated_at = now
    session.flush()
    audit.by(
        session,
        caller,
        "replay.publish" if created else "replay.republish",
        publication.id,
        {"fixtureId": fixture.id, "public": data.public},
    )
    return _published_out(publication)


def published(session: Session, org_id: str) -> PublishedList:
    rows = session.scalars(
        select(ReplayPublication)
        .options(defer(ReplayPublication.files))
        .where(ReplayPublication.org_id == org_id)
        .order_by(ReplayPublication.created_at.desc(), ReplayPublication.id)
    )
    return PublishedList(publications=[_published_out(p) for p in rows])


def unpublish(session: Session, caller: Caller, row_id: str) -> None:
    publication = _visible_publication(session, row_id, caller.org_id, own=True)
    if publication is None:
        raise NotFound("Published fixture not found")
    audit.by(
        session, caller, "replay.unpublish", publication.id, {"fixtureId": publication.fixture_id}
    )
    session.delete(publication)


def _row(publication: ReplayPublication) -> dict[str, Any]:
    return {
        "id": HOSTED_PREFIX + publication.id,
        "title": publication.title,
        "vendor": publication.vendor,
        "watchType": publication.watch_type,
        "contentKind": "hosted-curated",
        "tags": publication.tags,
        "installable": True,
        "changes": publication.changes,
        "summary": publication.summary,
        "updatedAt": utc_iso(publication.updated_at),
    }


def _published_out(publication: ReplayPublication) -> PublishedOut:
    return PublishedOut(
        row=CatalogRow.model_validate(_row(publication)),
        public=publication.public,
        fixture_id=publication.fixture_id,
        digest=publication.digest,
    )


def _published_rows(session: Session, org_id: str | None) -> list[dict[str, Any]]:
    visible: ColumnElement[bool] = ReplayPublication.public.is_(True)
    if org_id is not None:
        visible = or_(visible, ReplayPublication.org_id == org_id)
    rows = session.scalars(
        select(ReplayPublication)
        .options(defer(ReplayPublication.files))
        .where(visible)
        .order_by(ReplayPublication.updated_at.desc(), ReplayPublication.id)
        .limit(MAX_PUBLISHED_ROWS)
    )
    return [_row(p) for p in rows]


def _visible_publication(
    session: Session, row_id: str, org_id: str, *, own: bool = False
) -> ReplayPublication | None:
    if not row_id.startswith(HOSTED_PREFIX):
        return None
    publication = session.get(ReplayPublication, row_id.removeprefix(HOSTED_PREFIX))
    if publication is None:
        return None
    if publication.org_id == org_id or (publication.public and not own):
        return publication
    return None


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
