"""Draft pull requests: the use cases behind `/v1/draftpr/...` and the jobs that talk to GitHub.

The web process never writes to GitHub: `request_draft_pr` records the pull request (state
`pending`) and queues a `draft_pr` job; the controller's `run_draft_pr` opens it through the
App and records the answer. Without App credentials the record is a stub with a
deterministic number (local development). Inbound GitHub deliveries are recorded and queued
the same way (`github_delivery` jobs); a merged pull request accepts the after contract as the
baseline, resolves the incident and unblocks the bound agents, exactly like
`POST /v1/draftpr/draft-pr/merged`.

An App installation serves one org, and linking it proves that it is the org's: the signed
install flow, the operator, or by id an account the org proved (the threat model is in
docs/draft-prs.md).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import Field, RootModel, StringConstraints, ValidationError
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from controller.agents.actions import ACTIONS, Drift
from controller.agents.actions import DRAFT_PR as DRAFT_PR_ACTION
from controller.agents.policy import resolve_policy
from controller.agents.runtime import bound_agents, unblock
from controller.agents.service import ApprovalRuleOut
from controller.contracts.kinds import CONTRACT_KINDS
from controller.crypto import SecretBox
from controller.diffs.explain import cause_text, hint_for
from controller.diffs.fails import what_fails
from controller.diffs.rules import CATALOG
from controller.draftpr import changelog, lint
from controller.draftpr.github import (
    FileChange,
    GitHubApp,
    GitHubError,
    GitHubRateLimited,
    Installation,
)
from controller.drift import acknowledgement_service as acknowledgement
from controller.drift.service import accept_baseline
from controller.errors import (
    Conflict,
    Forbidden,
    NotFound,
    Unauthorized,
    Unprocessable,
    UpstreamError,
    ValidationFailed,
)
from controller.model.base import (
    NUMERIC_ID_TEXT,
    ApiModel,
    BodyBool,
    BodyNumericId,
    RequestModel,
)
from controller.model.gitops import VendoredPath
from controller.model.hosted import product_name
from controller.model.plans import allows
from controller.model.principal import Principal
from controller.orgs import service as orgs
from controller.orgs.service import PRODUCTS
from controller.settings import Settings
from controller.sources.http import configured_client
from controller.store import audit, jobs
from controller.store.db import Database
from controller.store.models import (
    Agent,
    DraftPr,
    DriftEvent,
    GitHubInstallation,
    Incident,
    Org,
    Snapshot,
    Watch,
)
from controller.store.snapshots import decode_changes, decode_snapshot

DRAFT_PR = "draft_pr"
GITHUB_DELIVERY = "github_delivery"
PRODUCT = "draftpr_repo"
LINT_PRODUCT = "toolmanifest_org"
STATE_TTL = timedelta(hours=1)
STATE_PURPOSE = "draftpr install state"
# GitHub's clock and ours may differ this much when an installation's creation time is
# compared with the time an install link was issued.
CLOCK_SKEW = timedelta(minutes=5)
# How a link was made (GitHubInstallation.linked_by): through the signed install flow, by
# the server's operator, or by id for an account the org had proven. The first two prove
# the installation's account to the org.
BY_INSTALL, BY_OPERATOR, BY_ACCOUNT = "install", "operator", "account"
PROVING = (BY_INSTALL, BY_OPERATOR)
# Recorded without App credentials (local development): nothing confirmed it.
UNVERIFIED = "unverified"
# Linked before ownership was checked (migration 0015): used, but it proves no account.
LEGACY = "legacy"
# Links a pull request may use: all but the unverified.
USABLE = (BY_INSTALL, BY_OPERATOR, BY_ACCOUNT, LEGACY)
MAX_WAIT = 25.0

RepoName = Annotated[
    str, StringConstraints(max_length=200, pattern=r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")
]
ObjectId = Annotated[str, StringConstraints(max_length=64, pattern=r"^[A-Za-z0-9._:-]{1,64}$")]
# Stored as sent (the change list of the pull request): no NUL, which Postgres cannot hold.
_NO_NUL = "^[^\\u0000]*$"
Text = Annotated[str, StringConstraints(max_length=1000, pattern=_NO_NUL)]


class DraftPrChangeIn(RequestModel):
    """One change of the drift webhook body; `summary` is accepted for `message`."""

    path: Text
    severity: Literal["breaking", "warning", "info"]
    message: Text | None = None
    summary: Text | None = None
    rule: Annotated[str, StringConstraints(max_length=200, pattern=_NO_NUL)] | None = None


class DraftPrWebhookIn(RequestModel):
    """Body of `POST /v1/draftpr/webhook` (SPEC.md: Draft-PR drift webhook body)."""

    watch_id: ObjectId
    drift_event_id: ObjectId
    installation_id: BodyNumericId | None = Field(
        default=None,
        description="numeric id of the GitHub App installation (an integer, or its digits as "
        "a string); default: the org's only one",
    )
    repo_full_name: RepoName = Field(description="owner/repository")
    # Bounded so the largest valid body stays under the default request size limit (1 MB).
    changes: list[DraftPrChangeIn] = Field(default_factory=list, max_length=250)
    vendored_path: VendoredPath | None = Field(
        default=None,
        description="a copy of the contract in the repository, rewritten to the new contract "
        "in the same commit; default: the path a bound agent with this repoRef declares "
        "(vendoredPaths)",
    )


class LintFindingOut(ApiModel):
    rule: str
    severity: str
    tool: str
    message: str


class ToolManifestLintOut(ApiModel):
    """Tool-manifest lint of the after tool list (`toolmanifest_org`, MCP watches)."""

    findings: list[LintFindingOut]
    commented: bool = Field(description="posted on the pull request as a comment")


class DraftPrOut(ApiModel):
    draft_pr_id: str
    number: int | None
    url: str | None
    branch: str
    state: str = Field(description="pending, draft, open, merged, closed or failed")
    stub: bool = Field(description="true without App credentials: nothing exists on GitHub")
    draft_refused: bool = Field(
        description="the repository refused drafts: a normal pull request labelled driftgate:draft"
    )
    watch_id: str
    drift_event_id: str
    repo_full_name: str
    installation_id: int | None
    error: str | None
    created_at: datetime
    merged_at: datetime | None
    tool_manifest_lint: ToolManifestLintOut | None = Field(
        default=None,
        description="with toolmanifest_org on, for MCP watches; absent: a schema-only draft",
    )


class DraftPrList(ApiModel):
    items: list[DraftPrOut]


class SchemasyncDisabled(ApiModel):
    """The error envelope of CONTRACT.md, answered with 202; `code` repeats `error` for
    clients written against SPEC.md's wording ("202 with code `schemasync_disabled`")."""

    error: Literal["schemasync_disabled"] = "schemasync_disabled"
    message: str
    code: Literal["schemasync_disabled"] = "schemasync_disabled"


class DraftPrAccepted(RootModel[DraftPrOut | SchemasyncDisabled]):
    """202: still being opened (state `pending`), or the product is off
    (`schemasync_disabled`)."""


class CallbackQuery(RequestModel):
    """What GitHub appends to the App's setup URL after an install."""

    installation_id: Annotated[str, StringConstraints(pattern=NUMERIC_ID_TEXT)] = Field(
        alias="installation_id"
    )
    setup_action: Annotated[str, StringConstraints(max_length=20)] | None = Field(
        default=None, alias="setup_action"
    )
    state: Annotated[str, StringConstraints(max_length=500)] = Field(alias="state")


class InstallationOut(ApiModel):
    installation_id: int
    account: str
    repository_selection: str
    status: str = Field(description="active, deleted (uninstalled on GitHub) or suspended")
    linked_by: str = Field(
        description="install (the signed install flow), operator (the server's admin), "
        "account (by id, for an account the org had proven), legacy (linked before ownership "
        "was checked) or unverified (recorded without App credentials: never used)"
    )
    linked_at: datetime


class InstallationList(ApiModel):
    items: list[InstallationOut]
    install_url: str | None = Field(
        description="where an org admin installs the App (with a signed state naming the org)"
    )


class InstallationLinkIn(RequestModel):
    installation_id: BodyNumericId = Field(
        description="the numeric installation id on GitHub (an integer, or its digits as a string)"
    )


class MergedIn(RequestModel):
    draft_pr_id: ObjectId


class MergeApprovalOut(ApiModel):
    """The remediation approval rules of the agents bound to the watch, judged against the
    merged pull request's own repository and base branch (docs/run-gate.md)."""

    repository: str = Field(description="the pull request's repository, as driftgate opened it")
    branch: str | None = Field(
        description="the base branch it merges into, as recorded when it was opened (null: "
        "not known, which a rule refuses)"
    )
    verified: bool = Field(
        description="true only for a merge GitHub's signed delivery reported (repository and "
        "base branch from it); false for a merge recorded by hand: the pull request's record "
        "is driftgate's, the merge the caller's statement"
    )
    approvals: dict[str, ApprovalRuleOut | None] = Field(
        description="agent id -> the rule that accepted (null: the agent has no rules)"
    )


class MergedOut(ApiModel):
    draft_pr: DraftPrOut
    incident_resolved: bool
    unblocked_agent_ids: list[str]
    approval: MergeApprovalOut


class ProductOut(ApiModel):
    product: str
    enabled: bool


class ProductsOut(ApiModel):
    plan: str
    can_enable: bool = Field(description="false on the free plan")
    products: list[ProductOut]


class ProductIn(RequestModel):
    enabled: BodyBool


# -- products ------------------------------------------------------------------------------


def products(session: Session, org_id: str) -> ProductsOut:
    return products_of(session.get_one(Org, org_id))


def set_product(session: Session, principal: Principal, product: str, enabled: bool) -> ProductsOut:
    """Switch one overlay product of the caller's org (audited); 404 for an unknown one, 403
    on the free plan. A hosted SKU's name (`mockdrift_cloud`) names driftgate's product."""
    product = product_name(product)
    if product not in PRODUCTS:
        raise NotFound(f"no product {product!r} (one of: {', '.join(PRODUCTS)})")
    org = session.get_one(Org, principal.org_id)
    orgs.set_product(session, org, product, enabled, actor=principal.actor)
    return products_of(org)


@contextmanager
def app_for(settings: Settings) -> Iterator[GitHubApp | None]:
    """The App client for a short read on the request path or from the CLI (verifying an
    installation), or None without App credentials; its connections close after."""
    if not configured(settings):
        yield None
        return
    with configured_client(settings) as client:
        yield GitHubApp(settings, client)


def link_from_install(
    session: Session,
    org_id: str,
    issued: datetime,
    installation_id: int,
    found: Installation | None,
    now: datetime,
) -> GitHubInstallation:
    """GitHub's install flow came back with a valid state (`verify_state`: the org and when
    the link was issued) and the installation GitHub confirmed. Anyone can call this address
    with any id (GitHub's warning about the setup URL), so an installation the org has not
    linked yet must have been made after its install link was issued (403 otherwise)."""
    org = session.get(Org, org_id)
    if org is None:
        raise NotFound("the org of this install state no longer exists")

    def made_through_this_link(found: Installation, current: GitHubInstallation | None) -> None:
        if current is not None and current.org_id == org_id:
            return
        if found.created_at is None or found.created_at < issued - CLOCK_SKEW:
            raise Forbidden(
                f"installation {installation_id} was made before this install link was issued, so "
                "the link cannot prove it is yours: link it by id once your org has proven "
                "its account, or ask the server's operator (driftgate orgs link-installation)",
                code="installation_not_proven",
            )

    return link_installation(
        session,
        installer(org),
        installation_id,
        found,
        now,
        how=BY_INSTALL,
        check=made_through_this_link,
    )


def products_of(org: Org) -> ProductsOut:
    return ProductsOut(
        plan=org.plan,
        can_enable=allows(org.plan, "overlay_products"),
        products=[ProductOut(product=p, enabled=p in org.products) for p in PRODUCTS],
    )


# -- opening -------------------------------------------------------------------------------


def draft_pr_out(row: DraftPr) -> DraftPrOut:
    return DraftPrOut(
        draft_pr_id=row.id,
        number=row.number,
        url=row.url,
        branch=row.branch,
        state=row.state,
        stub=row.stub,
        draft_refused=row.draft_refused,
        watch_id=row.watch_id,
        drift_event_id=row.drift_event_id,
        repo_full_name=row.repo_full_name,
        installation_id=row.installation_id,
        error=row.error,
        created_at=row.created_at,
        merged_at=row.merged_at,
        tool_manifest_lint=ToolManifestLintOut.model_validate(row.lint) if row.lint else None,
    )


def configured(settings: Settings) -> bool:
    """True when App credentials are set: pull requests are real, not stubs."""
    return settings.github_app_id is not None and (
        settings.github_app_private_key is not None
        or settings.github_app_private_key_file is not None
    )


def request_draft_pr(
    session: Session,
    principal: Principal,
    data: DraftPrWebhookIn,
    settings: Settings,
    now: datetime,
) -> tuple[DraftPr, bool]:
    """Record the pull request for a drift event and queue it (or stub it); the row and
    whether it is new. The same event and repository answer the row already made."""
    event = session.get(DriftEvent, data.drift_event_id)
    watch = session.get(Watch, data.watch_id)
    if (
        event is None
        or watch is None
        or event.org_id != principal.org_id
        or watch.org_id != principal.org_id
        or event.watch_id != watch.id
    ):
        raise NotFound("Drift event not found", code="not_found")
    existing = _existing(session, principal.org_id, event.id, data.repo_full_name)
    if existing is not None:
        return existing, False
    stub = not configured(settings)
    if stub:
        # Nothing is sent anywhere and no link could be verified: the id is only recorded.
        installation = data.installation_id
    else:
        installation = _installation_for(session, principal.org_id, data.installation_id)
    if not stub and installation is None:
        raise UpstreamError(
            "no GitHub App installation is linked to this org: install the App or link one "
            "(POST /v1/draftpr/installations), or pass installationId",
            code="installation_missing",
        )
    request = data.model_dump(by_alias=True, exclude_none=True)
    declared = declared_vendored_path(session, watch, data.repo_full_name)
    if data.vendored_path is None and declared is not None:
        request["vendoredPath"] = declared
    row, created = open_record(
        session,
        watch,
        event,
        data.repo_full_name,
        installation,
        request,
        lint=LINT_PRODUCT in principal.products,
        now=now,
        stub=stub,
    )
    if created:
        audit.by(
            session,
            principal,
            "draftpr.open",
            row.id,
            {"repo": row.repo_full_name, "driftEventId": event.id, "stub": stub},
        )
    return row, created


def declared_vendored_path(session: Session, watch: Watch, repo: str) -> str | None:
    """The path an agent bound to `watch` declares for its contract (`vendoredPaths`, by the
    watch's name, id or URL) when the agent's `repoRef` is `repo`."""
    for agent in bound_agents(session, watch.id):
        if not agent.repo_ref or agent.repo_ref.partition("@")[0].lower() != repo.lower():
            continue
        paths = agent.vendored_paths or {}
        for key in (watch.name, watch.id, watch.url):
            if key in paths:
                return str(paths[key])
    return None


def open_record(
    session: Session,
    watch: Watch,
    event: DriftEvent,
    repo: str,
    installation: int | None,
    request: dict[str, Any],
    *,
    lint: bool,
    now: datetime,
    stub: bool = False,
) -> tuple[DraftPr, bool]:
    """The pull request record of `event` in `repo`: made now (a stub completed at once, or
    `pending` with a `draft_pr` job queued in the same transaction), or the one that exists.
    Exactly once per event and repository, whichever process gets there first."""
    existing = _existing(session, watch.org_id, event.id, repo)
    if existing is not None:
        return existing, False
    row = DraftPr(
        org_id=watch.org_id,
        watch_id=watch.id,
        drift_event_id=event.id,
        repo_full_name=repo,
        installation_id=installation,
        branch=changelog.branch_name(event.id),
        state="pending",
        stub=False,
        request={**request, "lint": lint and CONTRACT_KINDS.of(watch.watch_type).lints_tools},
        created_at=now,
        updated_at=now,
    )
    try:
        with session.begin_nested():
            session.add(row)
            session.flush()
    except IntegrityError:
        # A concurrent request for the same event and repository won: answer its row.
        existing = _existing(session, watch.org_id, event.id, repo)
        assert existing is not None
        return existing, False
    if stub:
        _complete_stub(session, row, now)
    else:
        jobs.enqueue(
            session,
            kind=DRAFT_PR,
            key=f"{DRAFT_PR}:{row.id}",
            period="open",
            run_after=now,
            payload={"draftPrId": row.id},
        )
    return row, True


def _complete_stub(session: Session, row: DraftPr, now: datetime) -> None:
    """Local development: a deterministic number, nothing sent anywhere."""
    row.stub, row.state, row.updated_at = True, "draft", now
    row.number = changelog.stub_number(row.drift_event_id, row.repo_full_name)
    row.url = f"https://github.com/{row.repo_full_name}/pull/{row.number}"
    if row.request.get("lint"):
        row.lint = _lint(session, row, commented=False)


def _lint(session: Session, row: DraftPr, *, commented: bool) -> dict[str, Any] | None:
    """The lint of the event's after tool list (against the tools before it)."""
    event = session.get_one(DriftEvent, row.drift_event_id)
    after = session.get(Snapshot, event.snapshot_id) if event.snapshot_id else None
    if after is None:
        return None
    before = session.get(Snapshot, event.base_snapshot_id) if event.base_snapshot_id else None
    tools = lint.tools_of(decode_snapshot(after))
    previous = lint.tools_of(decode_snapshot(before)) if before is not None else None
    findings = lint.lint_tools(tools, previous)
    return {
        "findings": [
            {"rule": f.rule, "severity": f.severity, "tool": f.tool, "message": f.message}
            for f in findings
        ],
        "commented": commented,
        "toolCount": len(tools),
    }


def _existing(session: Session, org_id: str, event_id: str, repo: str) -> DraftPr | None:
    return session.scalar(
        select(DraftPr).where(
            DraftPr.org_id == org_id,
            DraftPr.drift_event_id == event_id,
            DraftPr.repo_full_name == repo,
        )
    )


def _installation_for(session: Session, org_id: str, given: int | None) -> int | None:
    """The installation a pull request of the org goes through: `given` when it is one of
    the org's usable links (404 otherwise: another org's installation is never used), else
    the org's only one."""
    linked = _usable_links(session, org_id)
    if given is not None:
        if given not in linked:
            raise NotFound(
                f"installation {given} is not linked to this org (POST /v1/draftpr/installations)",
                code="installation_not_linked",
            )
        return given
    return linked[0] if len(linked) == 1 else None


def _usable_links(session: Session, org_id: str) -> list[int]:
    """The org's active installations whose link was verified against GitHub."""
    return list(
        session.scalars(
            select(GitHubInstallation.installation_id)
            .where(
                GitHubInstallation.org_id == org_id,
                GitHubInstallation.status == "active",
                GitHubInstallation.linked_by.in_(USABLE),
            )
            .order_by(GitHubInstallation.linked_at, GitHubInstallation.installation_id)
        )
    )


def wait_for_draft_pr(database: Database, row_id: str, timeout: float) -> DraftPr:
    """Poll until the controller opened (or failed) the pull request, or `timeout` passed."""
    deadline = time.monotonic() + timeout
    pause = 0.02
    while True:
        with database.session() as session:
            row = session.get(DraftPr, row_id)
            assert row is not None
            if row.state != "pending" or time.monotonic() >= deadline:
                session.expunge(row)
                return row
        time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
        pause = min(0.25, pause * 1.5)


def run_draft_pr(
    database: Database,
    settings: Settings,
    app: GitHubApp | None,
    box: SecretBox,
    job: jobs.Claimed,
) -> None:
    """The `draft_pr` job: open the pull request on GitHub (a stub without App credentials)
    and record the answer, with the tool-manifest lint comment when asked. GitHub's refusals
    fail the record (and the job) with the cause; a rate limit queues a later try."""
    now = datetime.now(UTC)
    with database.transaction() as session:
        row = session.get(DraftPr, str(job.payload.get("draftPrId")))
        if row is None or row.state != "pending":
            jobs.finish_in(session, job, now, result={"result": "skipped"})
            return
        if app is None:
            _complete_stub(session, row, now)
            jobs.finish_in(session, job, now, result={"number": row.number, "stub": True})
            return
        work = _pull_request_work(session, row, settings)
        row_id, installation, repo = row.id, row.installation_id, row.repo_full_name
        wants_lint = bool(row.request.get("lint"))
        # Checked again as the job runs: a link removed or moved since the request (or an
        # id recorded in stub mode) never reaches GitHub.
        linked = installation is not None and installation in _usable_links(session, row.org_id)
    try:
        if installation is None:
            raise GitHubError(
                "no GitHub App installation is linked to this org (POST /v1/draftpr/installations)",
                "installation_missing",
            )
        if not linked:
            raise GitHubError(
                f"installation {installation} is not linked to this org "
                "(POST /v1/draftpr/installations)",
                "installation_not_linked",
            )
        pull = app.open_pull_request(installation, repo, **work)
        linted = None
        if wants_lint:
            with database.session() as session:
                linted = _lint(session, session.get_one(DraftPr, row_id), commented=True)
            if linted is not None:
                findings = [lint.LintFinding(**f) for f in linted["findings"]]
                app.comment(
                    installation,
                    repo,
                    pull.number,
                    lint.render_comment(findings, linted["toolCount"]),
                )
    except GitHubRateLimited as limited:
        with database.transaction() as session:
            jobs.finish_in(session, job, now, result={"result": "rate_limited"})
            jobs.enqueue(
                session,
                kind=DRAFT_PR,
                key=job.key,
                period=f"retry:{limited.retry_at.isoformat()}",
                run_after=limited.retry_at,
                payload=job.payload,
            )
        return
    except Exception as exc:  # noqa: BLE001 - any failure fails the record, named
        message = exc.message if isinstance(exc, GitHubError) else f"{type(exc).__name__}: {exc}"
        with database.transaction() as session:
            failed = session.get_one(DraftPr, row_id)
            failed.state, failed.error, failed.updated_at = "failed", message[:500], now
            jobs.finish_in(session, job, now, error=message[:500])
        return
    with database.transaction() as session:
        done = session.get_one(DraftPr, row_id)
        done.number, done.url, done.state = pull.number, pull.url, pull.state
        if pull.base and not done.request.get("base"):
            # The repository's default branch, which GitHub chose: what a merge is judged on.
            done.request = {**done.request, "base": pull.base}
        done.draft_refused, done.error, done.updated_at = pull.draft_refused, None, now
        done.lint = linted
        jobs.finish_in(session, job, now, result={"number": pull.number})


def _pull_request_work(session: Session, row: DraftPr, settings: Settings) -> dict[str, Any]:
    """What the pull request holds: the changelog file and the vendored contract."""
    watch = session.get_one(Watch, row.watch_id)
    event = session.get_one(DriftEvent, row.drift_event_id)
    lines = [_line(c) for c in row.request.get("changes", [])]
    vendored = row.request.get("vendoredPath")
    link = (
        f"{settings.public_base_url.rstrip('/')}/api/drift/events/{event.id}"
        if settings.public_base_url
        else None
    )
    parts: dict[str, Any] = {
        "watch_name": watch.name,
        "watch_url": watch.url,
        "event_id": event.id,
        "changes": lines,
        "link": link,
        "vendored_path": vendored,
    }
    text = changelog.render_changelog(**parts)
    shown = changelog.render_changelog(**parts, max_chars=changelog.MAX_BODY_CHARS)
    files = [FileChange(changelog.changelog_path(event.id), text)]
    if vendored and event.snapshot_id:
        snapshot = session.get(Snapshot, event.snapshot_id)
        if snapshot is not None:
            document = decode_snapshot(snapshot)
            files.append(FileChange(vendored, json.dumps(document, indent=2) + "\n"))
    return {
        "branch": row.branch,
        "files": files,
        "message": f"driftgate: {watch.name} contract drift ({event.id})",
        "title": changelog.title(watch.name, lines),
        "body": changelog.body(shown, draft_refused=False),
        "label": changelog.DRAFT_LABEL,
        "base": row.request.get("base") or None,
    }


def _requested(change: dict[str, Any]) -> dict[str, Any]:
    """A stored change as a draft pull request lists it: a change to a shared schema by its
    cause (`refund.reason: maxLength 5000 removed (385 operations)`, at the schema), any
    other by its summary and path."""
    cause = cause_text(change)
    if cause is not None:
        count = int(change.get("affectedCount") or len(change.get("affected") or []) or 1)
        path = str(change.get("origin"))
        message = f"{cause} ({count} operation{'s' if count != 1 else ''})"
    else:
        path, message = str(change.get("path", "")), str(change.get("summary", ""))
    requested = {
        "path": path[:1000],
        "severity": change.get("severity", "info"),
        "message": message[:1000],
        "rule": change.get("rule"),
    }
    # What a client sees fail needs the change's operation and values, which the listed
    # change no longer carries: kept beside it for the pull request's rows.
    fails = what_fails(change)
    if fails is not None:
        requested["fails"] = fails
    waiver = change.get("waiver")
    if change.get("waived") and isinstance(waiver, dict):
        requested["waived"] = (
            f"by {waiver.get('owner')} until {waiver.get('expires')}: {waiver.get('reason')}"
        )
    return requested


def _line(change: dict[str, Any]) -> changelog.ChangeLine:
    rule = str(change.get("rule") or "")
    return changelog.ChangeLine(
        severity=str(change.get("severity", "info")),
        path=str(change.get("path", "")),
        message=str(change.get("message") or change.get("summary") or rule or ""),
        rule=rule,
        hint=hint_for({**change, "severity": change.get("severity", "info")}) if rule else "",
        agent_action=known.agent_action if (known := CATALOG.get(rule)) else "",
        waived=str(change.get("waived") or ""),
    )


# -- reading -------------------------------------------------------------------------------


def get_draft_pr(session: Session, org_id: str, draft_pr_id: str) -> DraftPr:
    row = session.get(DraftPr, draft_pr_id)
    if row is None or row.org_id != org_id:
        raise NotFound("draft pull request not found", code="not_found")
    return row


def list_draft_prs(session: Session, org_id: str) -> DraftPrList:
    rows = session.scalars(
        select(DraftPr)
        .where(DraftPr.org_id == org_id)
        .order_by(DraftPr.created_at.desc(), DraftPr.id)
        .limit(500)
    )
    return DraftPrList(items=[draft_pr_out(r) for r in rows])


# -- merged ----------------------------------------------------------------------------------


def merge_by_hand(
    session: Session, principal: Principal, row: DraftPr, box: SecretBox, now: datetime
) -> MergedOut:
    """`POST /v1/draftpr/draft-pr/merged`: the caller says the pull request was merged. The
    approval rules are judged against the pull request's record (its repository, and the
    base branch it was opened against), never against anything the caller sends; a refusal
    is 403 `approval_refused` and nothing is stored."""
    approval = acknowledgement.merge_approval(
        session, row.watch_id, row.repo_full_name, _base_of(row), verified=False
    )
    if approval.refused and row.state != "merged":
        raise approval.refusal()
    return record_merge(session, principal, row, box, now, approval)


def record_merge(
    session: Session,
    principal: Principal,
    row: DraftPr,
    box: SecretBox,
    now: datetime,
    approval: acknowledgement.MergeApproval,
) -> MergedOut:
    """The pull request was merged: record it, accept the event's contract as the baseline,
    resolve the incident, unblock the agents bound to the watch, when the approval rules of
    those agents accept the pull request's repository and base branch (`approval`); when they
    refuse, the merge is recorded and nothing else (the incident stays open, the agents stay
    as they are). A second call changes nothing."""
    answered = MergeApprovalOut(
        repository=approval.repository,
        branch=approval.branch,
        verified=approval.verified,
        approvals={
            key: None if rule is None else ApprovalRuleOut.model_validate(rule)
            for key, rule in approval.approvals.items()
        },
    )
    if row.state == "merged":
        return MergedOut(
            draft_pr=draft_pr_out(row),
            incident_resolved=False,
            unblocked_agent_ids=[],
            approval=answered,
        )
    row.state, row.merged_at, row.updated_at = "merged", now, now
    if approval.refused:
        audit.by(
            session,
            principal,
            "draftpr.merged",
            row.id,
            {
                "repo": row.repo_full_name,
                "number": row.number,
                "unblocked": [],
                **approval.audited(),
            },
        )
        return MergedOut(
            draft_pr=draft_pr_out(row),
            incident_resolved=False,
            unblocked_agent_ids=[],
            approval=answered,
        )
    watch = session.get_one(Watch, row.watch_id)
    had_incident = watch.open_breaking > 0 or watch.drift_status == "drifted"
    resolved = False
    if watch.last_snapshot_id is not None:
        accept_baseline(session, principal, watch.id, f"draft PR {row.id} merged", box, now)
        resolved = had_incident
    unblocked = [
        agent.id
        for agent in bound_agents(session, watch.id)
        if unblock(session, box, agent, now, by=principal.actor, note=f"draft PR {row.id} merged")
    ]
    audit.by(
        session,
        principal,
        "draftpr.merged",
        row.id,
        {
            "repo": row.repo_full_name,
            "number": row.number,
            "unblocked": unblocked,
            **approval.audited(),
        },
    )
    return MergedOut(
        draft_pr=draft_pr_out(row),
        incident_resolved=resolved,
        unblocked_agent_ids=unblocked,
        approval=answered,
    )


def _base_of(row: DraftPr) -> str | None:
    """The base branch of the pull request as recorded: the one asked for, or the one
    GitHub reported when the App opened it (the repository's default branch)."""
    base = row.request.get("base")
    return str(base) if base else None


# -- installations ---------------------------------------------------------------------------


def installation_out(row: GitHubInstallation) -> InstallationOut:
    return InstallationOut(
        installation_id=row.installation_id,
        account=row.account,
        repository_selection=row.repository_selection,
        status=row.status,
        linked_by=row.linked_by,
        linked_at=row.linked_at,
    )


def list_installations(
    session: Session, org_id: str, settings: Settings, box: SecretBox
) -> InstallationList:
    rows = session.scalars(
        select(GitHubInstallation)
        .where(GitHubInstallation.org_id == org_id)
        .order_by(GitHubInstallation.linked_at)
    )
    return InstallationList(
        items=[installation_out(r) for r in rows],
        install_url=install_url(settings, box, org_id),
    )


def verify_installation(app: GitHubApp | None, installation_id: int) -> Installation | None:
    """What GitHub says of an installation of the App (502 when it does not know it), or
    None without App credentials (nothing can be verified). Called before the store is
    written, so no transaction waits on GitHub."""
    if app is None:
        return None
    try:
        return app.installation(installation_id)
    except GitHubError as exc:
        raise UpstreamError(exc.message, code=exc.cause) from None
    except GitHubRateLimited as exc:
        raise UpstreamError(exc.message, code="github_rate_limited") from None


def link_installation(
    session: Session,
    caller: audit.Caller,
    installation_id: int,
    found: Installation | None,
    now: datetime,
    *,
    how: str,
    check: Callable[[Installation, GitHubInstallation | None], None] | None = None,
) -> GitHubInstallation:
    """Link an installation GitHub confirmed (`found`, from `verify_installation`) to the
    caller's org. `how` says what proves it is the org's: the install flow (`check`
    decides), the operator, or (`account`) an account the org had proven, else 403. An
    installation linked to another org is refused (409), in the store too (one row per
    installation). Without App credentials (`found` None) the link is recorded `unverified`:
    listed, never used for a pull request, and it gives way to a verified link."""
    current = _link_of(session, installation_id)
    if found is not None and current is not None and current.linked_by == UNVERIFIED:
        if current.org_id != caller.org_id:
            session.delete(current)
            session.flush()
            current = None
    _refuse_other_org(current, caller.org_id, installation_id)
    if found is None:
        if current is not None:
            return current  # nothing new can be said of it
        row = GitHubInstallation(
            org_id=caller.org_id,
            installation_id=installation_id,
            linked_by=UNVERIFIED,
            account="",
            repository_selection="",
            status="active",
            linked_at=now,
        )
    else:
        row = _verified_link(session, caller, installation_id, found, current, now, how, check)
    try:
        with session.begin_nested():
            session.add(row)
            session.flush()
    except IntegrityError:
        # A concurrent link of the same installation was stored first: another org's is
        # refused, the org's own is the answer.
        winner = _link_of(session, installation_id)
        _refuse_other_org(winner, caller.org_id, installation_id)
        if winner is None:
            raise
        return winner
    audit.by(
        session,
        caller,
        "draftpr.link_installation",
        row.id,
        {"installationId": installation_id, "account": row.account, "linkedBy": row.linked_by},
    )
    return row


def _verified_link(
    session: Session,
    caller: audit.Caller,
    installation_id: int,
    found: Installation,
    current: GitHubInstallation | None,
    now: datetime,
    how: str,
    check: Callable[[Installation, GitHubInstallation | None], None] | None,
) -> GitHubInstallation:
    if check is not None:
        check(found, current)
    if how == BY_ACCOUNT and not (current is not None and current.linked_by in PROVING):
        if found.account_id is None or found.account_id not in proven_accounts(
            session, caller.org_id
        ):
            raise Forbidden(
                f"installation {installation_id} is on the GitHub account "
                f"{found.account or '(unknown)'!r}, which this org has not proven: install "
                "the App through the install link (GET /v1/draftpr/installations, installUrl), "
                "or ask the server's operator (driftgate orgs link-installation)",
                code="installation_not_proven",
            )
    row = current or GitHubInstallation(org_id=caller.org_id, installation_id=installation_id)
    if how in PROVING or row.linked_by not in PROVING:
        row.linked_by = how
    row.account, row.account_id = found.account, found.account_id
    row.repository_selection = found.repository_selection
    row.status = "suspended" if found.suspended else "active"
    row.linked_at = now
    return row


@dataclass(frozen=True)
class Operator:
    """The server's admin acting on one org from the CLI (the audit log's `actor`)."""

    org_id: str
    actor: str


def operator_link(
    session: Session, org: Org, installation_id: int, found: Installation | None, actor: str
) -> GitHubInstallation:
    """`driftgate orgs link-installation`: the operator vouches for the org, GitHub confirmed
    the installation (`verify_installation`); one linked to another org is refused, naming
    that org (the operator sees every org)."""
    current = _link_of(session, installation_id)
    if not (found is not None and current is not None and current.linked_by == UNVERIFIED):
        _refuse_other_org_named(session, org.id, installation_id)
    return link_installation(
        session,
        Operator(org.id, actor),
        installation_id,
        found,
        datetime.now(UTC),
        how=BY_OPERATOR,
    )


def operator_unlink(
    session: Session, org: Org, installation_id: int, actor: str
) -> GitHubInstallation:
    """`driftgate orgs unlink-installation`: remove the org's link (a link made before
    ownership was checked, an installation moving to another org)."""
    _refuse_other_org_named(session, org.id, installation_id)
    return unlink_installation(session, Operator(org.id, actor), installation_id)


def all_links(session: Session, org: Org | None) -> list[tuple[str, GitHubInstallation]]:
    """Every link (of `org`, or of every org) with its org's name, for the operator."""
    query = (
        select(Org.name, GitHubInstallation)
        .join(Org, Org.id == GitHubInstallation.org_id)
        .order_by(Org.name, GitHubInstallation.installation_id)
    )
    if org is not None:
        query = query.where(GitHubInstallation.org_id == org.id)
    return [(name, link) for name, link in session.execute(query)]


def _refuse_other_org_named(session: Session, org_id: str, installation_id: int) -> None:
    current = _link_of(session, installation_id)
    if current is not None and current.org_id != org_id:
        other = session.get_one(Org, current.org_id)
        raise Conflict(
            f"installation {installation_id} is linked to org {other.name!r}: unlink it "
            f"there first (driftgate orgs unlink-installation {other.name} {installation_id})",
            code="installation_linked_elsewhere",
        )


def unlink_installation(
    session: Session, caller: audit.Caller, installation_id: int
) -> GitHubInstallation:
    """Remove the org's link of an installation (the operator's undo); 404 when the org has
    none."""
    row = _link_of(session, installation_id)
    if row is None or row.org_id != caller.org_id:
        raise NotFound(f"installation {installation_id} is not linked to this org")
    session.delete(row)
    session.flush()
    audit.by(
        session, caller, "draftpr.unlink_installation", row.id, {"installationId": installation_id}
    )
    return row


def proven_accounts(session: Session, org_id: str) -> set[int]:
    """GitHub account ids the org has proven: those of its installations linked through the
    install flow or by the operator."""
    return {
        account_id
        for account_id in session.scalars(
            select(GitHubInstallation.account_id).where(
                GitHubInstallation.org_id == org_id,
                GitHubInstallation.linked_by.in_(PROVING),
                GitHubInstallation.account_id.is_not(None),
            )
        )
        if account_id is not None
    }


def _link_of(session: Session, installation_id: int) -> GitHubInstallation | None:
    return session.scalar(
        select(GitHubInstallation).where(GitHubInstallation.installation_id == installation_id)
    )


def _refuse_other_org(
    current: GitHubInstallation | None, org_id: str, installation_id: int
) -> None:
    if current is not None and current.org_id != org_id:
        raise Conflict(
            f"installation {installation_id} is linked to another org: an installation "
            "serves one org",
            code="installation_linked_elsewhere",
        )


def install_url(settings: Settings, box: SecretBox, org_id: str) -> str | None:
    if not settings.github_app_slug:
        return None
    web = settings.github_api_url.rstrip("/")
    web = "https://github.com" if web == "https://api.github.com" else web.removesuffix("/api/v3")
    state = sign_state(box, org_id, datetime.now(UTC))
    return f"{web}/apps/{settings.github_app_slug}/installations/new?state={state}"


def sign_state(box: SecretBox, org_id: str, now: datetime) -> str:
    """A signed, expiring token naming the org, carried through GitHub's install flow."""
    return box.sign(STATE_PURPOSE, f"{org_id}.{int((now + STATE_TTL).timestamp())}".encode())


def verify_state(box: SecretBox, token: str, now: datetime) -> tuple[str, datetime]:
    """The org a state token names and when it was issued; 401 when it was forged, altered
    or has expired."""
    invalid = Unauthorized("the install state is not valid", code="invalid_state")
    payload = box.verify(STATE_PURPOSE, token)
    if payload is None:
        raise invalid
    try:
        org_id, expires = payload.decode().rsplit(".", 1)
        deadline = int(expires)
    except (ValueError, UnicodeDecodeError):
        raise invalid from None
    if deadline < now.timestamp():
        raise Unauthorized(
            "the install state has expired; start the install again", code="invalid_state"
        )
    return org_id, datetime.fromtimestamp(deadline, UTC) - STATE_TTL


# -- GitHub deliveries ---------------------------------------------------------------------


class _Repository(ApiModel):
    full_name: str


class _Head(ApiModel):
    ref: str


class _PullRequest(ApiModel):
    number: int
    merged: bool = False
    head: _Head
    base: _Head | None = None  # GitHub always sends it: the branch the pull request merges into


class _InstallationRef(ApiModel):
    id: int


class PullRequestEvent(ApiModel):
    """What driftgate reads of GitHub's `pull_request` delivery (the rest is ignored). A
    delivery without an installation matches nothing: driftgate's pull requests are all
    made through one."""

    action: str
    number: int
    pull_request: _PullRequest
    repository: _Repository
    installation: _InstallationRef | None = None


class InstallationEvent(ApiModel):
    """What driftgate reads of GitHub's `installation` delivery."""

    action: str
    installation: _InstallationRef


def queue_delivery(
    session: Session,
    delivery_id: str | None,
    event: str | None,
    payload: dict[str, Any],
    now: datetime,
) -> bool:
    """Queue a verified delivery for the controller (False for an event that is ignored); a
    payload that is not shaped like GitHub's for its event is refused (400)."""
    parsed: dict[str, Any]
    try:
        if event == "pull_request":
            pull = PullRequestEvent.model_validate(payload)
            parsed = {
                "action": pull.action,
                "number": pull.number,
                "merged": pull.pull_request.merged,
                "repo": pull.repository.full_name,
                "headRef": pull.pull_request.head.ref,
                "baseRef": pull.pull_request.base.ref if pull.pull_request.base else None,
                "installationId": pull.installation.id if pull.installation else None,
            }
        elif event == "installation":
            install = InstallationEvent.model_validate(payload)
            parsed = {"action": install.action, "installationId": install.installation.id}
        else:
            return False
    except ValidationError as exc:
        raise ValidationFailed(
            f"the {event} delivery is not shaped like GitHub's: {exc.errors()[0]['msg']}"
        ) from None
    jobs.enqueue(
        session,
        kind=GITHUB_DELIVERY,
        key=f"{GITHUB_DELIVERY}:{delivery_id or now.isoformat()}",
        period="once",
        run_after=now,
        payload={"event": event, "payload": parsed},
    )
    return True


def run_delivery(database: Database, box: SecretBox, job: jobs.Claimed) -> None:
    """The `github_delivery` job: a merged pull request driftgate opened is a merge; an
    uninstalled or suspended installation marks its links; anything else is ignored."""
    now = datetime.now(UTC)
    event = job.payload.get("event")
    data = job.payload.get("payload") or {}
    result: dict[str, Any] = {"result": "ignored"}
    with database.transaction() as session:
        if (
            event == "pull_request"
            and data.get("action") == "closed"
            and data.get("installationId") is not None
        ):
            # Only the pull requests the delivery's installation opened, of the org it is
            # linked to: another org's record of the same repository and number is not it.
            rows = session.scalars(
                select(DraftPr)
                .join(
                    GitHubInstallation,
                    (GitHubInstallation.org_id == DraftPr.org_id)
                    & (GitHubInstallation.installation_id == DraftPr.installation_id),
                )
                .where(
                    DraftPr.repo_full_name == data.get("repo"),
                    DraftPr.number == data.get("number"),
                    DraftPr.stub.is_(False),
                    DraftPr.installation_id == data.get("installationId"),
                )
            )
            for row in rows:
                if data.get("merged"):
                    org = session.get_one(Org, row.org_id)
                    # GitHub's signed word: the repository and the base branch are its.
                    approval = acknowledgement.merge_approval(
                        session,
                        row.watch_id,
                        str(data.get("repo")),
                        data.get("baseRef") or None,
                        verified=True,
                    )
                    record_merge(session, _github_principal(org, job), row, box, now, approval)
                    result = {"result": "merged", "draftPrId": row.id}
                    if approval.refused:
                        result["approvalRefused"] = approval.refused
                elif row.state != "merged":
                    row.state, row.updated_at = "closed", now
                    result = {"result": "closed", "draftPrId": row.id}
        elif event == "installation" and data.get("action") in ("deleted", "suspend", "unsuspend"):
            status = {"deleted": "deleted", "suspend": "suspended", "unsuspend": "active"}
            for link in session.scalars(
                select(GitHubInstallation).where(
                    GitHubInstallation.installation_id == data.get("installationId")
                )
            ):
                link.status = status[str(data["action"])]
                result = {"result": link.status}
        jobs.finish_in(session, job, now, result=result)


def installer(org: Org) -> Principal:
    """Who links an installation through GitHub's install flow (the state named the org)."""
    return Principal(
        org_id=org.id,
        org_name=org.name,
        plan=org.plan,
        products=frozenset(org.products),
        kind="github_install",
        credential_id="callback",
    )


def _github_principal(org: Org, job: jobs.Claimed) -> Principal:
    return Principal(
        org_id=org.id,
        org_name=org.name,
        plan=org.plan,
        products=frozenset(org.products),
        kind="github",
        credential_id=job.key.split(":", 1)[-1][:64],
    )


def require_product(principal: Principal, product: str = PRODUCT) -> None:
    if product not in principal.products:
        raise orgs.product_required(principal.org_name, principal.plan, product)


def job_kinds(
    settings: Settings, database: Database, box: SecretBox, client: Any
) -> list[jobs.JobKind]:
    """The controller's job kinds of this capability: opening pull requests (stubs without App
    credentials) and handling GitHub's deliveries."""
    app: list[GitHubApp | None] = []

    def github() -> GitHubApp | None:
        if not app:
            app.append(GitHubApp(settings, client) if configured(settings) else None)
        return app[0]

    return [
        jobs.JobKind(
            DRAFT_PR,
            run=lambda job, _prepared: run_draft_pr(database, settings, github(), box, job),
        ),
        jobs.JobKind(GITHUB_DELIVERY, run=lambda job, _prepared: run_delivery(database, box, job)),
    ]


# -- the draft_pr policy action ------------------------------------------------------------


def open_on_drift(drift: Drift, agent: Agent) -> bool:
    """`draft_pr`'s effect when a watch the agent depends on turns drifted: queue the pull
    request of the drift event in the agent's `repoRef` repository (its branch, if named, is
    the base), once per event and repository however many replicas run checks. Needs the
    `draftpr_repo` product and a GitHub-shaped `repoRef` (owner/repo[@branch]); the agent
    itself is not changed (False). A flapping incident that reopened (flap damping) keeps the
    pull request it already has in the repository rather than getting one per flip."""
    session, watch = drift.session, drift.watch
    org = session.get(Org, watch.org_id)
    event_id = drift.incident.drift_event_id
    if org is None or PRODUCT not in org.products or event_id is None:
        return False
    event = session.get(DriftEvent, event_id)
    repo = _agent_repo(agent)
    if event is None or repo is None:
        return False
    if drift.incident.flap_count and _has_draft_since(session, watch, repo[0], drift.incident):
        return False
    open_for_agent(session, org, watch, event, agent, drift.now)
    return False


def open_for_agent(
    session: Session, org: Org, watch: Watch, event: DriftEvent, agent: Agent, now: datetime
) -> tuple[DraftPr, bool] | None:
    """The pull request of `event` in the agent's `repoRef` repository (made now, or the one
    that exists); None when the agent names no GitHub-shaped repository."""
    repo_ref = _agent_repo(agent)
    if repo_ref is None:
        return None
    repo, base = repo_ref
    # Waived findings are listed, marked (`.driftgate/waivers.yaml`); other ignored ones not.
    changes = [
        _requested(c)
        for c in decode_changes(event.changes)
        if not c.get("ignored") or c.get("waived")
    ][:250]
    request = {
        "watchId": watch.id,
        "driftEventId": event.id,
        "repoFullName": repo,
        "changes": changes,
        "base": base or None,
        "agentId": agent.key,
    }
    paths = agent.vendored_paths or {}
    vendored = next((paths[k] for k in (watch.name, watch.id, watch.url) if k in paths), None)
    if vendored is not None:
        request["vendoredPath"] = vendored
    installation = _installation_for(session, org.id, None)
    return open_record(
        session,
        watch,
        event,
        repo,
        installation,
        request,
        lint=LINT_PRODUCT in org.products,
        now=now,
    )


def _agent_repo(agent: Agent) -> tuple[str, str] | None:
    if not agent.repo_ref:
        return None
    repo, _, base = agent.repo_ref.partition("@")
    return (repo, base) if repo.count("/") == 1 else None


class RemediateIn(RequestModel):
    """Body of `POST /v1/draftpr/remediate`."""

    watch_id: ObjectId
    drift_event_id: ObjectId | None = Field(
        default=None, description="default: the open incident's drift event, else the latest"
    )


class RemediationOut(ApiModel):
    watch_id: str
    drift_event_id: str
    draft_prs: list[DraftPrOut] = Field(
        description="one per repository of the bound agents whose policy lists draft_pr"
    )


def remediate(
    session: Session, principal: Principal, data: RemediateIn, now: datetime
) -> tuple[RemediationOut, bool]:
    """Open now the pull requests the `draft_pr` policies of the watch's agents ask for (as
    when the watch turned drifted, without waiting for it): one per agent repository, for the
    given drift event or the current one. True when one was made now (queued)."""
    require_product(principal)
    watch = session.get(Watch, data.watch_id)
    if watch is None or watch.org_id != principal.org_id:
        raise NotFound("Watch not found")
    event = _remediated_event(session, watch, data.drift_event_id)
    org = session.get_one(Org, principal.org_id)
    rows: dict[str, DraftPr] = {}
    made = False
    for agent in bound_agents(session, watch.id):
        if DRAFT_PR_ACTION not in resolve_policy(agent.policy, agent.policy_rules).on_breaking:
            continue
        opened = open_for_agent(session, org, watch, event, agent, now)
        if opened is not None:
            rows.setdefault(opened[0].id, opened[0])
            made = made or opened[1]
    if not rows:
        raise Unprocessable(
            "no agent bound to this watch has a draft_pr policy with a GitHub repoRef "
            "(owner/repo[@branch]) in .driftgate/agents.yaml: there is no repository to open "
            "the pull request in",
            code="no_remediation_target",
        )
    audit.by(
        session,
        principal,
        "draft_pr.remediate",
        watch.id,
        {"driftEventId": event.id, "draftPrIds": sorted(rows)},
    )
    answer = RemediationOut(
        watch_id=watch.id,
        drift_event_id=event.id,
        draft_prs=[draft_pr_out(r) for r in rows.values()],
    )
    return answer, made


def _remediated_event(session: Session, watch: Watch, event_id: str | None) -> DriftEvent:
    if event_id is not None:
        event = session.get(DriftEvent, event_id)
        if event is None or event.watch_id != watch.id:
            raise NotFound("Drift event not found")
        return event
    if watch.incident_id is not None:
        incident = session.get(Incident, watch.incident_id)
        if incident is not None and incident.drift_event_id is not None:
            current = session.get(DriftEvent, incident.drift_event_id)
            if current is not None:
                return current
    latest = session.scalar(
        select(DriftEvent)
        .where(DriftEvent.watch_id == watch.id)
        .order_by(DriftEvent.detected_at.desc(), DriftEvent.id.desc())
        .limit(1)
    )
    if latest is None:
        raise Unprocessable("the watch has no drift event to remediate", code="no_drift_event")
    return latest


def _has_draft_since(session: Session, watch: Watch, repo: str, incident: Incident) -> bool:
    """Whether the watch got a pull request in `repo` since the incident first opened."""
    found = session.scalar(
        select(DraftPr.id)
        .where(
            DraftPr.org_id == watch.org_id,
            DraftPr.watch_id == watch.id,
            DraftPr.repo_full_name == repo,
            DraftPr.created_at >= incident.opened_at,
        )
        .limit(1)
    )
    return found is not None


ACTIONS.attach(DRAFT_PR_ACTION, open_on_drift)
