"""Git sources as the API and the CLI show them: status of each configured source of an org,
requests to reconcile one, and push webhooks that only enqueue.

A source's definition lives in the controller's config file; its status lives in the store.
Another org's source answers 404, exactly like a missing one.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from pydantic import Field
from sqlalchemy import delete, func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from controller.crypto import SecretBox
from controller.errors import NotFound, Unauthorized
from controller.gitsources.reconcile import Reconciler, RunResult
from controller.model import conditions as cond
from controller.model.base import ApiModel
from controller.model.conditions import Condition
from controller.model.gitops import Unreadable, describe_size
from controller.model.watch import STALE_FACTOR, STALE_GRACE_SECONDS
from controller.settings import Settings, SourceSpec
from controller.sources.git import GitCache, GitError, redact_url
from controller.store.db import Database
from controller.store.jobs import request_reconcile
from controller.store.models import Agent, HookDelivery, Org, Source, Template, Watch, WatchSet

HOOK_DELIVERIES_KEPT = timedelta(days=7)


class SourceProblem(ApiModel):
    file: str
    line: int
    column: int
    path: str
    message: str


class SourceRun(ApiModel):
    revision: str | None
    result: str
    at: str
    duration_ms: int
    message: str = ""
    created: int | None = None
    updated: int | None = None
    pruned: int | None = None


class SourceOut(ApiModel):
    # The component name /openapi.json published before the code moved (web/routes.py).
    published_name: ClassVar[str] = "controller__services__sources__SourceOut"
    name: str
    url: str
    branch: str
    path: str
    interval_seconds: int
    suspended: bool
    allow_empty: bool
    last_fetched_revision: str | None
    last_attempted_revision: str | None
    last_applied_revision: str | None
    last_fetched_at: datetime | None
    last_applied_at: datetime | None
    conditions: list[Condition]
    problems: list[SourceProblem]
    runs: list[SourceRun]
    inventory: dict[str, int] = Field(description="objects this source owns, by kind")


class SourceList(ApiModel):
    sources: list[SourceOut]


class ReconcileQueued(ApiModel):
    source: str
    job_id: int


class HookAccepted(ApiModel):
    queued: list[str]
    duplicate: bool = False


def _org_sources(settings: Settings, session: Session, org_id: str) -> list[SourceSpec]:
    org = session.get(Org, org_id)
    if org is None:
        return []
    return [s for s in settings.sources if s.org in (org.id, org.name)]


def list_sources(session: Session, settings: Settings, org_id: str) -> SourceList:
    return SourceList(
        sources=[
            _source_out(session, spec, org_id) for spec in _org_sources(settings, session, org_id)
        ]
    )


def get_source(session: Session, settings: Settings, org_id: str, name: str) -> SourceOut:
    spec = next((s for s in _org_sources(settings, session, org_id) if s.name == name), None)
    if spec is None:
        raise NotFound("Source not found")
    return _source_out(session, spec, org_id)


def queue_reconcile(
    session: Session, settings: Settings, org_id: str, name: str, now: datetime
) -> ReconcileQueued:
    get_source(session, settings, org_id, name)
    return ReconcileQueued(source=name, job_id=request_reconcile(session, name, now, "api"))


@dataclass(frozen=True)
class StalledSource:
    """A git source whose desired state is not being applied now, and why."""

    name: str
    state: str  # `stalled` (a bad revision), `failing` (reconcile fails) or `stale` (no run)
    message: str
    since: datetime | None


def stalled_sources(
    session: Session, settings: Settings, org_id: str, now: datetime
) -> list[StalledSource]:
    """The org's sources that do not reconcile now: `Stalled` (a revision failed validation,
    the applied state keeps serving), `Ready` false because reconcile fails (fetch, apply),
    or no run for longer than twice the interval and a grace (the watches' rule of
    staleness: the controller is not reconciling it). A suspended source is left out: it
    stands still on purpose. One read of the org's source rows."""
    specs = [s for s in _org_sources(settings, session, org_id) if not s.suspend]
    if not specs:
        return []
    rows = {
        row.name: row
        for row in session.scalars(select(Source).where(Source.name.in_([s.name for s in specs])))
    }
    found = []
    for spec in specs:
        row = rows.get(spec.name)
        if row is None:
            continue  # never reconciled yet: nothing applied, nothing failing
        stalled = _condition_of(row.conditions, cond.STALLED)
        ready = _condition_of(row.conditions, cond.READY)
        if stalled is not None and stalled.get("status") == cond.TRUE:
            found.append(_stalled("stalled", stalled, spec.name))
        elif ready is not None and ready.get("reason") == cond.RECONCILIATION_FAILED:
            found.append(_stalled("failing", ready, spec.name))
        else:
            last = _run_time((row.runs or [{}])[0].get("at")) or row.last_fetched_at
            limit = timedelta(seconds=STALE_FACTOR * spec.interval + STALE_GRACE_SECONDS)
            if last is not None and now - _aware(last) > limit:
                message = f"no reconcile since then; one is expected every {spec.interval} s"
                found.append(StalledSource(spec.name, "stale", message, _aware(last)))
    return found


def _condition_of(conditions: list[dict[str, Any]] | None, kind: str) -> dict[str, Any] | None:
    return next((c for c in conditions or [] if c.get("type") == kind), None)


def _stalled(state: str, condition: dict[str, Any], name: str) -> StalledSource:
    since = _run_time(condition.get("lastTransitionTime"))
    message = str(condition.get("message") or condition.get("reason") or state)
    message = _REVISION.sub(lambda m: m.group(0)[:12], message)  # as the pages show them
    return StalledSource(name, state, message, since)


_REVISION = re.compile(r"\b[0-9a-f]{40}\b")


def _run_time(value: object) -> datetime | None:
    """A time the reconcile wrote into a condition or a run (ISO 8601, `Z`)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return _aware(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError:
        return None


def _aware(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def _source_out(session: Session, spec: SourceSpec, org_id: str | None) -> SourceOut:
    row = session.get(Source, spec.name)
    inventory = {}
    for kind, model in (
        ("templates", Template),
        ("watchSets", WatchSet),
        ("watches", Watch),
        ("agents", Agent),
    ):
        inventory[kind] = int(
            session.scalar(
                select(func.count())
                .select_from(model)
                .where(model.org_id == org_id, model.managed_source == spec.name)
            )
            or 0
        )
    return SourceOut(
        name=spec.name,
        url=redact_url(spec.url),
        branch=spec.branch,
        path=spec.path,
        interval_seconds=spec.interval,
        suspended=spec.suspend,
        allow_empty=spec.allow_empty,
        last_fetched_revision=row.last_fetched_revision if row else None,
        last_attempted_revision=row.last_attempted_revision if row else None,
        last_applied_revision=row.last_applied_revision if row else None,
        last_fetched_at=row.last_fetched_at if row else None,
        last_applied_at=row.last_applied_at if row else None,
        conditions=[Condition.model_validate(_camel(c)) for c in (row.conditions if row else [])],
        problems=[SourceProblem.model_validate(p) for p in (row.problems if row else [])],
        runs=[SourceRun.model_validate(_camel(r)) for r in (row.runs if row else [])],
        inventory=inventory,
    )


def _camel(values: dict[str, Any]) -> dict[str, Any]:
    return {_snake(k): v for k, v in values.items()}


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


# -- push webhooks -------------------------------------------------------------------------


def verify_github_signature(secret: str | None, body: bytes, signature: str | None) -> None:
    """`X-Hub-Signature-256: sha256=<hex HMAC of the body>`; anything else is 401."""
    if not secret:
        raise Unauthorized("push webhooks are not configured (github_webhook_secret)")
    if not signature or not signature.startswith("sha256="):
        raise Unauthorized("missing X-Hub-Signature-256")
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, signature.removeprefix("sha256=")):
        raise Unauthorized("X-Hub-Signature-256 does not match the body")


def seen_delivery(session: Session, delivery_id: str | None, now: datetime) -> bool:
    """Record a GitHub delivery id; True when it was recorded before (GitHub retries
    deliveries). Ids are kept for `HOOK_DELIVERIES_KEPT`."""
    if not delivery_id:
        return False
    session.execute(
        delete(HookDelivery).where(HookDelivery.received_at < now - HOOK_DELIVERIES_KEPT)
    )
    try:
        with session.begin_nested():
            session.execute(
                insert(HookDelivery).values(delivery_id=delivery_id[:100], received_at=now)
            )
    except IntegrityError:
        return True
    return False


def accept_push(
    session: Session,
    settings: Settings,
    delivery_id: str | None,
    event: str | None,
    payload: dict[str, Any],
    now: datetime,
) -> HookAccepted:
    """Record the delivery once and queue the sources it concerns; never touches git."""
    if seen_delivery(session, delivery_id, now):
        return HookAccepted(queued=[], duplicate=True)
    if event not in ("push", None):
        return HookAccepted(queued=[])
    repository = payload.get("repository") or {}
    names = {
        str(repository.get(key) or "").lower().removesuffix(".git").rstrip("/")
        for key in ("clone_url", "ssh_url", "git_url", "html_url", "url", "full_name")
    } - {""}
    branch = str(payload.get("ref") or "").removeprefix("refs/heads/")
    queued = []
    for spec in settings.sources:
        if spec.suspend or spec.branch != branch:
            continue
        if not any(_same_repository(spec.url, name) for name in names):
            continue
        request_reconcile(session, spec.name, now, "push")
        queued.append(spec.name)
    return HookAccepted(queued=queued)


def _same_repository(url: str, name: str) -> bool:
    clean = redact_url(url).lower().removesuffix(".git").rstrip("/")
    return clean == name or clean.endswith("/" + name) or clean.endswith(":" + name)


def reconcile_now(
    settings: Settings,
    database: Database,
    box: SecretBox,
    specs: list[SourceSpec],
    *,
    force: bool = False,
    dry_run: bool = False,
    env: Mapping[str, str],
) -> Iterator[tuple[SourceSpec, RunResult]]:
    """Reconcile `specs` one after the other now (`driftgate reconcile`), yielding each
    source's result as it is done."""
    reconciler = Reconciler(settings, database, box, env=env)
    for spec in specs:
        yield spec, reconciler.reconcile(spec, force=force, dry_run=dry_run)


def configured_sources(session: Session, settings: Settings) -> list[tuple[str, SourceOut]]:
    """Every source of the settings with its org's name as configured, read from the store
    here (`driftgate sources list` without a server): a source whose org does not exist yet
    is listed as it is (nothing reconciled, nothing owned), not refused."""
    found = []
    for spec in settings.sources:
        org = session.get(Org, spec.org) or session.scalar(select(Org).where(Org.name == spec.org))
        found.append((spec.org, _source_out(session, spec, org.id if org else None)))
    return found


SHOWN_FILE_BYTES = 256 * 1024
"""What the console shows of a source's file: its first 256 KiB (whole lines)."""


@dataclass(frozen=True)
class ShownFile:
    """A `.driftgate/` file as the console shows it: its first lines, and a note when they
    are not the whole file or when the file was not read (too large, a symbolic link ...)."""

    lines: list[str]
    truncated: bool = False
    note: str = ""


def source_file(
    session: Session, settings: Settings, org_id: str, name: str, revision: str, file: str
) -> ShownFile:
    """The first lines (at most SHOWN_FILE_BYTES) of one `.driftgate/` file of the org's
    source at `revision`, read from this host's git cache (the console shows a problem's
    file:line in it); a file over `git_max_file_bytes` or not a regular file is never read,
    only named with why. 404 when the revision, the file or the cache is not here."""
    spec = next((s for s in _org_sources(settings, session, org_id) if s.name == name), None)
    if spec is None:
        raise NotFound("Source not found")
    prefix = spec.path.strip("/") + "/"
    cache = GitCache(settings.data_dir / "git", max_file_bytes=settings.git_max_file_bytes)
    try:
        content = cache.read_file(name, revision, spec.path, file.removeprefix(prefix))
    except GitError as exc:
        raise NotFound(exc.message, code="revision_not_cached") from None
    if content is None:
        raise NotFound(f"{file} is not in {spec.path} at {revision[:12]}")
    if isinstance(content, Unreadable):
        return ShownFile([], note=content.message)
    if len(content) <= SHOWN_FILE_BYTES:
        return ShownFile(content.decode("utf-8", "replace").splitlines())
    shown = content[:SHOWN_FILE_BYTES]
    end = shown.rfind(b"\n")
    shown = shown[: end + 1] if end > 0 else shown
    lines = shown.decode("utf-8", "replace").splitlines()
    note = (
        f"Showing the first {len(lines):,} lines ({describe_size(len(shown))}) of "
        f"{describe_size(len(content))}; the rest is not shown here."
    )
    return ShownFile(lines, truncated=True, note=note)
