"""Discovery: watch suggestions, coverage assert and preview, repository scan. See
docs/discovery.md."""

from __future__ import annotations

from pydantic import RootModel

from controller.discovery import service
from web.api import REGISTRY
from web.routes import COVERAGE_PREVIEW, Call, ErrorEnvelope, Reply, requires_plan

route = REGISTRY.tagged("discovery")

PREVIEW_BURST = 10


class CoverageRefusal(RootModel[service.CoverageMissing | ErrorEnvelope]):
    """422: contracts found that the org does not watch (`missing_watches`), or an input that
    cannot be read (the error envelope: `config_invalid`, naming the file and line)."""


@route(
    "POST /api/watches/suggest",
    "Suggest watches from URLs, text or an MCP client configuration",
    body=service.SuggestIn,
    errors=(409, 422),
)
def suggest_watches(call: Call) -> service.SuggestOut:
    """The contracts in `urls`, `text` and `mcpJson` (alias `config`; `fileName` picks the
    client format, else the shape does), each with `existingWatchId` when the org watches it.
    With `create: true` the new remote ones become watches (org defaults apply). Secrets never
    come back; nothing is fetched or started. A configuration that cannot be read is 422
    `config_invalid` naming the file and line; with `create`, a candidate that cannot be a
    watch is 422 naming where the request held it (`/urls/0`, `/text`, `/mcpJson`), and
    nothing is created."""
    return service.suggest(call.session, call.principal_required, call.body, call.secret_box)


@route(
    "POST /api/coverage/assert",
    "Fail when a contract found is not watched",
    body=service.CoverageIn,
    responses={200: service.CoverageOk, 422: CoverageRefusal},
    guards=(requires_plan("coverage_assert"),),
)
def coverage_assert(call: Call) -> Reply:
    """200 `{covered: true, ...}` when every contract found (at or above `minConfidence`) is
    watched by the org, else 422 `{error: "missing_watches", missing, missingCount, ...}`.
    Inputs as for suggest, or a repository's `files` (CI: with `repo`, `runId`); a
    configuration that cannot be read is 422 `config_invalid`."""
    ok, answer = service.assert_coverage(
        call.session, call.principal_required, call.body, service.scanned(call.body.files)
    )
    return Reply(200 if ok else 422, answer)


@route(
    "POST /api/coverage/preview",
    "What coverage would assert, without a key",
    auth="none",
    body=service.CoverageIn,
    errors=(422, 429),
    switch=COVERAGE_PREVIEW,
)
def coverage_preview(call: Call) -> service.PreviewOut:
    """The contracts found, without a key and without reading any org's data (nothing says
    whether a watch exists anywhere); rate limited per client address (429, `Retry-After`)."""
    call.rate_limit(
        "coverage-preview",
        per_minute=call.settings.coverage_preview_per_minute,
        burst=PREVIEW_BURST,
    )
    return service.preview(call.body, service.scanned(call.body.files))


@route(
    "POST /api/repo/scan", "Find the contracts a repository's files depend on", body=service.ScanIn
)
def repo_scan(call: Call) -> service.ScanOut:
    """`files: [{path, content}]` (at most 5,000 files and 20 MB: 413 beyond): MCP client
    configurations, OpenAPI documents, code generator configs, base URLs in `.env` examples,
    SDK dependencies of well-known vendors and `.driftgate/` files; each candidate cites its
    file and line. Binary and oversized files are skipped and counted."""
    return service.scan(call.body)
