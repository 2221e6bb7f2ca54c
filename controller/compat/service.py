"""The compat use cases: driftgate's services answered in the shapes the hosted clients read.

Each function calls the service of driftgate's own route and maps its answer (mockdrift reads
`fixtures[]` where the catalog answers `rows[]`, and `{fixture: {beforeSchema, ...}}` where
install answers the files). Nothing is computed twice. See docs/compat.md.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import Field, ValidationError
from sqlalchemy.orm import Session

from controller.diffruns import service as diffruns
from controller.draftpr import service as draftpr
from controller.errors import NotFound
from controller.model.base import ApiModel, RequestModel
from controller.model.hosted import HEADER_ALIASES, HOSTED_ONLY, header
from controller.model.principal import Principal
from controller.replay import service as replay
from controller.replay.fixtures import Fixture
from controller.replay.service import CatalogPage, CatalogRow, FixtureOut, InstalledOut

__all__ = ["HEADER_ALIASES", "HOSTED_ONLY", "header"]


class HostedCatalogRow(CatalogRow):
    lane: str = Field(description="`oss` for shipped fixtures, `hosted` for the others")


class HostedCatalog(ApiModel):
    """mockdrift's catalog answer: the rows are `fixtures`."""

    fixtures: list[HostedCatalogRow]
    next_cursor: str | None
    disclaimer: str


class HostedFixture(FixtureOut):
    """mockdrift's fixture answer: driftgate's, plus the ids it caches beside the files."""

    watch_id: str | None = None
    fixture_id: str
    event_id: str | None = None


class HostedDiffRun(diffruns.DiffRunOut):
    """The TypeScript CLI's `openapi-diff --remote` answer: driftgate's run, plus `runId`,
    which it prints with `url`."""

    run_id: str


def hosted_diff_run(run: diffruns.DiffRunOut) -> HostedDiffRun:
    return HostedDiffRun(**run.model_dump(), run_id=run.id)


class TriggerRemediationIn(RequestModel):
    """Body of the hosted MCP server's `trigger_remediation`."""

    drift_event_id: draftpr.ObjectId | None = None


def trigger_remediation(
    session: Session,
    principal: Principal,
    watch_id: str,
    data: TriggerRemediationIn,
    now: datetime,
) -> tuple[draftpr.RemediationOut, bool]:
    """`draftpr.remediate` for the watch in the path."""
    try:
        request = draftpr.RemediateIn(watch_id=watch_id, drift_event_id=data.drift_event_id)
    except ValidationError:
        raise NotFound("Watch not found") from None  # no watch has such an id
    return draftpr.remediate(session, principal, request, now)


def from_watch(session: Session, org_id: str, data: replay.FromWatchIn) -> HostedFixture:
    """`replay.from_watch`, with the ids mockdrift caches beside the files."""
    return hosted_fixture(replay.from_watch(session, org_id, data))


def install(session: Session, data: replay.InstallIn, org_id: str) -> HostedFixture:
    """`replay.install`, answered as mockdrift writes a fixture to disk."""
    installed = replay.install(session, data, org_id)
    out = replay.answer(installed_fixture(installed), None)
    return HostedFixture(**out.model_dump(), fixture_id=installed.id)


def hosted_catalog(page: CatalogPage) -> HostedCatalog:
    """The catalog page as mockdrift reads it (`fixtures[]`, each with its `lane`)."""
    return HostedCatalog(
        fixtures=[
            HostedCatalogRow(
                **row.model_dump(),
                lane="oss" if row.content_kind == "oss-curated" else "hosted",
            )
            for row in page.rows
        ],
        next_cursor=page.next_cursor,
        disclaimer=page.disclaimer,
    )


def hosted_fixture(out: FixtureOut) -> HostedFixture:
    """A fixture built from a watch, with the ids mockdrift caches (`<watch>:<event>`)."""
    watch_id, _, event_id = out.fixture.id.partition(":")
    return HostedFixture(
        **out.model_dump(),
        watch_id=watch_id,
        fixture_id=out.fixture.id,
        event_id=event_id if event_id and event_id != "baseline" else None,
    )


def installed_fixture(installed: InstalledOut) -> Fixture:
    """An installed catalog fixture's files read back as a fixture (the files are the
    fixture: `cloud-meta.json` is its metadata, `mock-responses/*.json` its mocks)."""
    files = installed.files
    meta = _json(files.get("cloud-meta.json")) or {}
    mocks = {
        path.removeprefix("mock-responses/").removesuffix(".json"): _json(content)
        for path, content in files.items()
        if path.startswith("mock-responses/") and path.endswith(".json")
    }
    meta = meta if isinstance(meta, dict) else {}
    meta.setdefault("changes", [])
    return Fixture(id=installed.id, files=files, mock_responses=mocks, meta=meta)


def _json(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None
