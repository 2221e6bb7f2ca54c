"""One check of one watch: fetch, fingerprint, diff against the baseline, record, notify.

A check reads what it needs in a short transaction, fetches and diffs outside any
transaction (network and CPU), then writes everything it learned in one transaction: the
snapshot (compressed, one row per distinct fingerprint), the drift event, the watch's status
and counts, the incident, and the outbox events; and, whatever the outcome, the access token
(and rotated refresh token) an MCP watch's fetch bought from its authorization server
(`controller.mcpauth`). A failure leaves the baseline and the last
good snapshot untouched. `driftStatus` moves as `controller.watches.status` decides (CONTRACT.md's
table); this module persists what the decision says.

A check either completes and yields a contract, or fails; there is no third outcome (a
listing that did not finish is no contract: `controller.sources.mcp`). Whatever goes wrong
in any stage (fetch, parse, fingerprint, diff, persist), in a way no stage foresaw (a bug, a
value stored before today's input rules), the check still ends as a failed check: `error`
with failure class `internal_error` (reason `check_failed:internal_error`), the stage and the
exception's type recorded, `drift.check_failed` announced. A `RecursionError` in any stage is
a contract nested too deep to read: `invalid_contract`, logged in one line. A check never
ends as a crash that leaves the watch, and the run gate that reads it, as they were.

Flap damping (`flap_window_seconds`): a contract back at its baseline is a revert, found by
fingerprint without a diff. So is one back at the baseline that an automatic (info-only)
advance replaced within the window: that baseline is restored, so a vendor that served a
superset for a while and went back does not leave the watch `drifted` against the superset.
Breaking drift within the window after a revert reopens the reverted incident
(`controller.drift.incidents.reopenable_incident`). A failed check is never damped.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from functools import cache, partial
from typing import Any, Literal, cast

from sqlalchemy import String, Table, bindparam, func, select
from sqlalchemy.orm import Session, lazyload

from controller import metrics, tracing
from controller.agents import runtime
from controller.checks import verdicts
from controller.checks.assessments import ASSESSMENTS
from controller.checks.verdicts import Assessment, Assessor
from controller.collector import collector_paused
from controller.contracts.base import HTTP_DOCUMENT, MCP_SESSION, DiffContext
from controller.contracts.kinds import CONTRACT_KINDS
from controller.crypto import SecretBox
from controller.diffs import ContractParseError, fingerprint
from controller.diffs.explain import with_hints
from controller.diffs.loader import MAX_NESTING, check_nesting
from controller.diffs.rules import gate_reasons, order_actions
from controller.drift.incidents import (
    close_incident,
    current_incident,
    emit_incident,
    reopen_incident,
    reopenable_incident,
)
from controller.events.outbox import emit
from controller.logs import log
from controller.mcpauth.client import fetch_authorized_snapshot
from controller.mcpauth.grants import OAuthState
from controller.mcpauth.rows import keep_renewal, oauth_state
from controller.model.change import Change, Severity
from controller.model.ingress_impact import affected_profiles
from controller.model.waivers import count_waived, unwaive, waive, waived_until
from controller.model.watch import DriftStatus, FailureClass
from controller.settings import Settings
from controller.sources import deadlines
from controller.sources.http import FetchError, fetch
from controller.sources.mcp import McpLimits, fetch_mcp_snapshot, parse_stdio_target, redact_url
from controller.store import audit
from controller.store.models import (
    DriftEvent,
    Incident,
    IngressProfile,
    Snapshot,
    Watch,
)
from controller.store.outage import store_fault
from controller.store.snapshots import (
    count_changes,
    decode_changes,
    decode_snapshot,
    encode_changes,
    encode_document,
)
from controller.store.watch_rows import decrypted_headers
from controller.waivers.rows import watch_waivers
from controller.watches.status import CheckFailed, CheckSucceeded, Counts, facts_of, transition

logger = logging.getLogger("driftgate.checks")

EVENT_CHANGES_IN_ALERTS = 50
# The `flap_window_seconds` setting's default, for callers without settings at hand.
FLAP_WINDOW_SECONDS = 3600.0
# A vendor whose last check timed out gets a quarter of the fetch deadline (never under the
# floor) for its scheduled checks until one completes, so a vendor that trickles holds a
# worker for 15 s a check rather than 60 (issue 40, point 5). Its state is the watch's
# `failure_class`, so a restart keeps it.
SLOW_VENDOR_SHARE = 0.25
SLOW_VENDOR_FLOOR_SECONDS = 1.0


def slow_vendor_deadline(deadline: float) -> float:
    """The fetch budget of a vendor that has timed out, for a fetch deadline of `deadline`."""
    return min(deadline, max(SLOW_VENDOR_FLOOR_SECONDS, deadline * SLOW_VENDOR_SHARE))


# The most frequent write of all, a healthy watch whose contract did not change, is one Core
# statement built once (no ORM unit of work, no statement construction per check).
_WATCHES = cast(Table, Watch.__table__)
_NOW = bindparam("b_now", type_=_WATCHES.c.last_checked_at.type)
_RECORD_HEALTHY_UNCHANGED = (
    _WATCHES.update()
    .where(
        _WATCHES.c.id == bindparam("b_id"),
        _WATCHES.c.drift_status.in_((DriftStatus.OK.value, DriftStatus.DRIFTED.value)),
    )
    .values(
        last_checked_at=_NOW,
        last_success_at=_NOW,
        updated_at=_NOW,
        last_check_status="ok",
        failure_class=None,
        last_error=None,
        etag=bindparam("b_etag"),
        last_modified=bindparam("b_last_modified"),
        protocol_version=func.coalesce(
            bindparam("b_protocol_version", type_=String), _WATCHES.c.protocol_version
        ),
        source_hash=func.coalesce(bindparam("b_source_hash", type_=String), _WATCHES.c.source_hash),
    )
    .returning(_WATCHES.c.drift_status)
)


@dataclass
class Fetched:
    """What a fetcher returns: raw bytes (None when the server said 304) and validators."""

    content: bytes | None
    etag: str | None = None
    last_modified: str | None = None
    document: Any = None  # set by fetchers that parse themselves (MCP)
    protocol_version: str | None = None


Fetcher = Callable[["CheckInput"], Fetched]


@dataclass
class CheckInput:
    """What a check knows about its watch before it touches the network."""

    watch_id: str
    org_id: str
    watch_type: str
    url: str
    method: str | None
    body: Any
    headers: dict[str, str]
    etag: str | None
    last_modified: str | None
    source_hash: str | None
    baseline_snapshot_id: str | None
    last_snapshot_id: str | None
    baseline_fingerprint: str | None = None
    baseline_accepted_at: datetime | None = None
    baseline_accepted_by: str | None = None
    prior_baseline_fingerprint: str | None = None
    # The watch's last check timed out (its vendor has not answered since).
    timed_out: bool = False
    # What the watch asks of its contract whatever its history (`controller.checks.verdicts`):
    # the keys its agent card must be signed with, the tool set its MCP server is pinned to.
    card_keys: dict[str, Any] | None = None
    tool_lock: dict[str, Any] | None = None
    # A remote MCP watch's OAuth (`controller.mcpauth`): its settings, secrets and cached
    # token; the fetch leaves what it bought there, and the check's record stores it.
    oauth: OAuthState | None = None


@dataclass
class CheckResult:
    watch_id: str
    outcome: str  # unchanged | baseline | changed | error | skipped
    status: str | None = None
    drift_event_id: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    failure_class: str | None = None
    error: str | None = None
    # The vendor's HTTP status, when the check failed on it.
    http_status: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, {})}


OnCommit = Callable[[Session, "CheckResult"], None]


def run_check(
    database: Any,
    watch_id: str,
    *,
    box: SecretBox,
    fetcher: Fetcher,
    now: datetime,
    on_commit: OnCommit | None = None,
    prepared: dict[str, CheckInput] | None = None,
    flap_window_seconds: float = FLAP_WINDOW_SECONDS,
    slow_deadline: float | None = None,
    controller: str | None = None,
) -> CheckResult:
    """Check one watch now and record the result.

    `on_commit(session, result)` runs inside the transaction that records the result (the
    controller finishes its job there, so the check and its job commit together; raising
    rolls the check back). `prepared` holds inputs read in bulk by `read_checks`; a watch
    missing from it (paused or deleted meanwhile) is read again here. `flap_window_seconds`
    is the flap damping window (the setting; 0: off). `slow_deadline` bounds the fetch when
    the watch's last check timed out (None: the fetcher's own deadline).
    `controller` names the controller that runs it, for its span and log line.
    """
    with tracing.span(
        "check", {tracing.WATCH_ID: watch_id, tracing.CONTROLLER_ID: controller}
    ) as span:
        check = (prepared or {}).get(watch_id)
        if check is None:
            with database.session() as session:
                check = _read(session, watch_id, box)
        if check is None:
            return _commit(database, on_commit, lambda s: CheckResult(watch_id, "skipped"))
        if check.timed_out and slow_deadline is not None:
            fetcher = _within(fetcher, slow_deadline)
        if check.oauth is not None:
            # The token cache decides on the check's clock; its own copy keeps what it buys.
            check = replace(check, oauth=replace(check.oauth, now=now, renewal=None, spent=[]))
        started = time.perf_counter()
        try:
            write = _evaluate(database, check, box, fetcher, now, flap_window_seconds)
        except _Crashed as crashed:
            write = _crash_recorder(box, check, crashed, now)
        with tracing.span("record"):
            try:
                result = _commit(database, on_commit, _persisting(_renewing(write, check, box)))
            except _Crashed as crashed:
                # The outcome could not be written (its transaction rolled back): record the
                # failure in a transaction of its own.
                recorder = _renewing(_crash_recorder(box, check, crashed, now), check, box)
                result = _commit(database, on_commit, recorder)
        metrics.check_done(
            check.watch_type, result.outcome, time.perf_counter() - started, check.org_id
        )
        _checked(span, check, result, controller)
        return result


def _checked(
    span: tracing.Span, check: CheckInput, result: CheckResult, controller: str | None
) -> None:
    """What a check's span and the log say of its outcome: a failed check is one line, with
    the ids and the failure class, never the URL or a header."""
    tracing.annotate(
        span,
        {
            tracing.ORG_ID: check.org_id,
            tracing.WATCH_TYPE: check.watch_type,
            tracing.CHECK_RESULT: result.outcome,
            tracing.HTTP_STATUS: result.http_status,
        },
    )
    if result.outcome != "error":
        return
    tracing.failed(span, result.failure_class or "error")
    log(
        logger,
        logging.WARNING,
        "check.failed",
        watchId=check.watch_id,
        orgId=check.org_id,
        type=check.watch_type,
        failureClass=result.failure_class,
        httpStatus=result.http_status,
        status=result.status,
        controller=controller,
    )


Write = Callable[[Session], CheckResult]


def _renewing(write: Write, check: CheckInput, box: SecretBox) -> Write:
    """`write`, storing first what the check's fetch bought from an authorization server (a
    token, a rotated refresh token) whatever the outcome: a refresh token the server rotated
    is the only one that still works."""
    if check.oauth is None:
        return write

    def renew_and_write(session: Session) -> CheckResult:
        keep_renewal(session, check.watch_id, check.oauth, box)
        return write(session)

    return renew_and_write


def _within(fetcher: Fetcher, seconds: float) -> Fetcher:
    """`fetcher` bounded to `seconds` overall (the earlier of that and its own deadline)."""

    def bounded(check: CheckInput) -> Fetched:
        with deadlines.within(seconds):
            return fetcher(check)

    return bounded


class _Crashed(Exception):
    """A stage of a check raised what it did not foresee; the check fails as `internal_error`."""

    def __init__(self, stage: str, error: BaseException) -> None:
        super().__init__(stage, type(error).__name__)
        self.stage = stage
        self.error = error


def _commit(database: Any, on_commit: OnCommit | None, write: Write) -> CheckResult:
    with database.transaction() as session:
        result = write(session)
        if on_commit is not None:
            on_commit(session, result)
        return result


def _persisting(write: Write) -> Write:
    def persist(session: Session) -> CheckResult:
        try:
            result = write(session)
            # What the store refuses surfaces here, not at the commit after the job's end.
            session.flush()
            return result
        except Exception as exc:  # noqa: BLE001 - any failure to record is a failed check
            if store_fault(exc) is not None:
                raise  # the store's outage, not the check's: nothing can be recorded now
            raise _Crashed("persist", exc) from exc

    return persist


def _crash_recorder(box: SecretBox, check: CheckInput, crashed: _Crashed, now: datetime) -> Write:
    if isinstance(crashed.error, RecursionError):
        return _too_deep_recorder(box, check, crashed, now)
    logger.error(
        "check.crashed",
        exc_info=crashed.error,
        extra={"fields": {"watchId": check.watch_id, "stage": crashed.stage}},
    )
    # The exception's own text may quote a header value or a URL's credentials: only its type
    # is recorded where users read it.
    message = (
        f"{redact_url(check.url)}: the check failed unexpectedly while it "
        f"{_STAGE_WORDS[crashed.stage]} ({type(crashed.error).__name__}); "
        "the controller's log has the details"
    )
    failure = FailureClass.INTERNAL_ERROR.value
    return lambda s: _record_failure(s, box, check, failure, message, now)


def _too_deep_recorder(
    box: SecretBox, check: CheckInput, crashed: _Crashed, now: datetime
) -> Write:
    """A contract nested deeper than Python's recursion limit, found in any stage, is a
    contract driftgate does not read (`invalid_contract`), not a defect: one log line, no
    trace."""
    logger.warning(
        "check.too_deep",
        extra={"fields": {"watchId": check.watch_id, "stage": crashed.stage}},
    )
    message = (
        f"{redact_url(check.url)}: the contract nests too deep to be read (past the "
        f"recursion limit while the check {_STAGE_WORDS[crashed.stage]}); driftgate does not "
        f"read contracts nested deeper than {MAX_NESTING} levels of objects and arrays"
    )
    failure = FailureClass.INVALID_CONTRACT.value
    return lambda s: _record_failure(s, box, check, failure, message, now)


_STAGE_WORDS = {
    "fetch": "fetched the contract",
    "parse": "read the contract",
    "fingerprint": "fingerprinted the contract",
    "baseline": "read the stored baseline",
    "diff": "compared the contract with its baseline",
    "persist": "recorded the outcome",
}


def _stage(name: str, step: Callable[[], Any]) -> Any:
    """Run one stage of a check; what it did not foresee becomes `_Crashed(name)`."""
    try:
        return step()
    except (FetchError, ContractParseError):
        raise
    except Exception as exc:  # noqa: BLE001 - a crash in any stage is a failed check
        if store_fault(exc) is not None:
            raise  # the store did not answer: the check is not the watch's to fail
        raise _Crashed(name, exc) from exc


def _evaluate(
    database: Any,
    check: CheckInput,
    box: SecretBox,
    fetcher: Fetcher,
    now: datetime,
    flap_window_seconds: float = FLAP_WINDOW_SECONDS,
) -> Write:
    """Fetch and diff outside any transaction; return the write that records the outcome.

    Stored snapshots are read only when the fetched contract is new: an unchanged contract
    (a 304, the same bytes) costs no decompression and no parsing of the baseline. Raises
    `_Crashed` when a stage fails in a way it does not foresee.
    """
    with tracing.span("fetch") as span:
        try:
            fetched: Fetched = _stage("fetch", lambda: fetcher(check))
        except FetchError as exc:
            tracing.annotate(span, {tracing.HTTP_STATUS: exc.status})
            tracing.failed(span, exc.failure_class)
            kind, message, status = exc.failure_class, exc.message, exc.status
            return lambda s: _record_failure(s, box, check, kind, message, now, status)
    if fetched.content is None and fetched.document is None:
        return lambda s: _record_unchanged(s, box, check, fetched, None, now)
    source_hash = (
        hashlib.sha256(fetched.content).hexdigest() if fetched.content is not None else None
    )
    if source_hash is not None and source_hash == check.source_hash:
        return lambda s: _record_unchanged(s, box, check, fetched, source_hash, now)
    try:
        # The spans: `parse` reads the contract into its canonical form (and fingerprint),
        # `diff` compares it with what is stored.
        with tracing.span("parse"):
            document = _stage("parse", lambda: _document(check, fetched))
            print_: str = _stage("fingerprint", lambda: fingerprint(document))
        with tracing.span("diff") as span:
            revert = revert_of(check, print_, now, flap_window_seconds)
            baseline_document, last_fingerprint = _stage(
                "baseline", lambda: _stored(database, check, with_baseline=revert is None)
            )
            if print_ == last_fingerprint:
                return lambda s: _record_unchanged(s, box, check, fetched, source_hash, now)
            changes: list[Change] = []
            untrusted = verdicts.failing(document)
            if untrusted and check.baseline_snapshot_id is None:
                # No baseline to diff against: a contract that fails what the watch asks of
                # it is no baseline to trust either (fail closed).
                message = "; ".join(untrusted)
                return lambda s: _record_failure(s, box, check, "invalid_contract", message, now)
            if baseline_document is not None:
                changes = _stage(
                    "diff",
                    lambda: diff_documents(
                        check.watch_type, baseline_document, document, now.date()
                    ),
                )
            tracing.annotate(span, {tracing.DIFF_CHANGES: len(changes)})
    except ContractParseError as exc:
        message = str(exc)
        return lambda s: _record_failure(s, box, check, "invalid_contract", message, now)
    found = NewSnapshot(document, print_, changes, revert)
    return lambda s: _record_new_snapshot(
        s, box, check, fetched, source_hash, found, now, flap_window_seconds
    )


Revert = Literal["baseline", "prior"]


def revert_of(
    check: CheckInput, print_: str, now: datetime, window_seconds: float
) -> Revert | None:
    """Whether the fetched contract is a revert: `baseline` when it is the baseline's,
    `prior` when it is the baseline's that an automatic advance replaced within the flap
    window (the one before a superset the vendor served for a while), else None."""
    if check.baseline_fingerprint is not None and print_ == check.baseline_fingerprint:
        return "baseline"
    if (
        window_seconds > 0
        and check.prior_baseline_fingerprint == print_
        and (check.baseline_accepted_by or "").startswith("auto:")
        and check.baseline_accepted_at is not None
        and now - check.baseline_accepted_at <= timedelta(seconds=window_seconds)
    ):
        return "prior"
    return None


@dataclass(frozen=True)
class NewSnapshot:
    """What a check found that differs from the last snapshot."""

    document: Any
    fingerprint: str
    changes: list[Change]
    revert: Revert | None = None


def _document(check: CheckInput, fetched: Fetched) -> Any:
    """The fetched contract as a document: parsed from its bytes, or as the fetcher parsed it
    (MCP), bounded in nesting either way."""
    if fetched.document is None:
        return _parse(check, fetched.content)
    check_nesting(fetched.document, redact_url(check.url))
    return fetched.document


def contract_fetcher(settings: Settings, client: Any) -> Fetcher:
    """The fetcher of every watch type: its kind's fetch adapter (`FETCH_ADAPTERS`), one
    document over HTTP or an MCP session. Each ends within `fetch_deadline_seconds` (the whole
    MCP session, every redirect and the whole body), else as a `timeout` failure."""
    adapters = {name: build(settings, client) for name, build in FETCH_ADAPTERS.items()}
    by_type = {kind.name: adapters[kind.fetch] for kind in CONTRACT_KINDS}
    assessors = [(entry, entry.build(settings, client)) for entry in ASSESSMENTS]

    def fetch_contract(check: CheckInput) -> Fetched:
        return _judged(check, by_type[check.watch_type](check), assessors)

    return fetch_contract


def _judged(
    check: CheckInput, fetched: Fetched, assessors: list[tuple[Assessment, Assessor]]
) -> Fetched:
    """The fetched contract with the verdicts of the assessors that judge this watch
    (`controller.checks.verdicts`), parsed here so that they do: a judged contract is never
    "unchanged" by its bytes alone, since what it is judged against (keys, a lock) can change
    while its bytes do not. A contract that does not parse is left to the check to fail."""
    if not assessors or (check.card_keys is None and check.tool_lock is None):
        return fetched
    if fetched.content is None and fetched.document is None:
        return fetched  # a 304: the stored snapshot was judged when it was fetched
    try:
        document = _document(check, fetched)
    except ContractParseError:
        return fetched
    found = {}
    for entry, assess in assessors:
        verdict = assess(check, _as_sent(fetched, document) if entry.reads_as_sent else document)
        if verdict is not None:
            found[entry.name] = verdict
    if not found:
        return fetched
    return Fetched(
        None,
        fetched.etag,
        fetched.last_modified,
        document=verdicts.judged(document, found),
        protocol_version=fetched.protocol_version,
    )


def _as_sent(fetched: Fetched, document: Any) -> Any:
    """The fetched JSON as its server sent it (the kind's reading, bounded in nesting, has
    already accepted it); the parsed document for a fetcher that parses itself."""
    if fetched.content is None:
        return document
    try:
        return json.loads(fetched.content)
    except (ValueError, RecursionError):
        return document


def mcp_fetcher(settings: Settings, client: Any) -> Fetcher:
    """The fetcher of kinds read over an MCP session: the server's tools, resources and
    prompts, parsed by the client."""
    limits = McpLimits(
        total_timeout=settings.fetch_deadline_seconds, max_bytes=settings.fetch_max_bytes
    )

    def fetch_contract(check: CheckInput) -> Fetched:
        if check.oauth is not None and parse_stdio_target(check.url) is None:
            snapshot = fetch_authorized_snapshot(
                client, check.url, check.oauth, headers=check.headers, limits=limits
            )
        else:
            snapshot = fetch_mcp_snapshot(
                check.url,
                client=client,
                headers=check.headers,
                allow_stdio=settings.allow_stdio_mcp,
                limits=limits,
            )
        # How the server was reached is not part of its contract.
        snapshot.pop("transport", None)
        return Fetched(None, document=snapshot, protocol_version=snapshot.get("protocol_version"))

    return fetch_contract


def http_fetcher(settings: Settings, client: Any) -> Fetcher:
    """The fetcher of kinds read as one document over HTTP (conditional GET, or the watch's
    method)."""

    def fetch_contract(check: CheckInput) -> Fetched:
        conditional = check.method in (None, "GET") and check.card_keys is None
        result = fetch(
            client,
            check.url,
            method=check.method or "GET",
            headers=check.headers,
            body=check.body,
            # A judged contract is fetched whole every time (`_judged`).
            etag=check.etag if conditional else None,
            last_modified=check.last_modified if conditional else None,
            max_bytes=settings.fetch_max_bytes,
            deadline=settings.fetch_deadline_seconds,
        )
        if result.not_modified:
            return Fetched(
                None, result.etag or check.etag, result.last_modified or check.last_modified
            )
        return Fetched(result.content, result.etag, result.last_modified)

    return fetch_contract


# How a kind's contract is fetched (`ContractKind.fetch`), each adapter built once per
# controller from its settings and HTTP client.
FETCH_ADAPTERS: dict[str, Callable[[Settings, Any], Fetcher]] = {
    HTTP_DOCUMENT: http_fetcher,
    MCP_SESSION: mcp_fetcher,
}


# -- reading and diffing -------------------------------------------------------------------


def read_checks(database: Any, watch_ids: list[str], box: SecretBox) -> dict[str, CheckInput]:
    """The inputs of several checks in one query (the controller reads a claimed batch)."""
    if not watch_ids:
        return {}
    with database.session() as session:
        watches = session.scalars(
            select(Watch).where(Watch.id.in_(watch_ids)).options(lazyload(Watch.tag_rows))
        )
        inputs = (_input(w, box) for w in watches if w.drift_status != DriftStatus.DISABLED)
        return {check.watch_id: check for check in inputs}


def _read(session: Session, watch_id: str, box: SecretBox) -> CheckInput | None:
    watch = session.scalar(
        select(Watch).where(Watch.id == watch_id).options(lazyload(Watch.tag_rows))
    )
    if watch is None or watch.drift_status == DriftStatus.DISABLED:
        return None
    return _input(watch, box)


def _input(watch: Watch, box: SecretBox) -> CheckInput:
    return CheckInput(
        watch_id=watch.id,
        org_id=watch.org_id,
        watch_type=watch.watch_type,
        url=watch.url,
        method=watch.method,
        body=watch.request_body,
        headers=decrypted_headers(watch, box),
        etag=watch.etag,
        last_modified=watch.last_modified,
        source_hash=watch.source_hash,
        baseline_snapshot_id=watch.baseline_snapshot_id,
        last_snapshot_id=watch.last_snapshot_id,
        baseline_fingerprint=watch.baseline_fingerprint,
        baseline_accepted_at=watch.baseline_accepted_at,
        baseline_accepted_by=watch.baseline_accepted_by,
        prior_baseline_fingerprint=watch.prior_baseline_fingerprint,
        timed_out=watch.failure_class == FailureClass.TIMEOUT,
        card_keys=watch.card_keys,
        tool_lock=watch.tool_lock,
        oauth=oauth_state(watch, box),
    )


def _stored(database: Any, check: CheckInput, *, with_baseline: bool) -> tuple[Any, str | None]:
    """The baseline document (unless not needed: None) and the last snapshot's fingerprint."""
    with database.session() as session:
        baseline_document = None
        if with_baseline and check.baseline_snapshot_id is not None:
            baseline = session.get(Snapshot, check.baseline_snapshot_id)
            if baseline is not None:
                baseline_document = decode_snapshot(baseline)
        last_fingerprint = None
        if check.last_snapshot_id is not None:
            last_fingerprint = session.scalar(
                select(Snapshot.fingerprint).where(Snapshot.id == check.last_snapshot_id)
            )
    return baseline_document, last_fingerprint


def _parse(check: CheckInput, content: bytes | None) -> Any:
    # Each kind raises `ContractParseError` for an answer that is not its contract.
    return CONTRACT_KINDS.of(check.watch_type).load(content or b"", check.url)


def diff_documents(watch_type: str, baseline: Any, document: Any, today: date) -> list[Change]:
    """One change per cause (a schema many operations reach is one change with the
    operations it affects: drift events are read by people), by the watch type's engine;
    `today` (the check's clock, UTC) decides sunset windows."""
    kind = CONTRACT_KINDS.of(watch_type)
    with collector_paused():  # a large contract's diff (controller/collector.py)
        return kind.diff(baseline, document, DiffContext(today=today))


def _affected_profiles(session: Session, watch: Watch, changes: list[Change]) -> list[str]:
    """The consumer profiles that name this watch and whose schema the breaking changes touch
    (`controller.model.ingress_impact`)."""
    rows = session.execute(
        select(IngressProfile.profile_id, IngressProfile.content).where(
            IngressProfile.org_id == watch.org_id, IngressProfile.watch_id == watch.id
        )
    ).all()
    if not rows:
        return []
    return affected_profiles(
        [{"path": c.path, "severity": c.severity.value, "ignored": c.ignored} for c in changes],
        [(pid, (content or {}).get("schema")) for pid, content in rows],
    )


# -- recording -----------------------------------------------------------------------------


def _locked_watch(session: Session, watch_id: str) -> Watch | None:
    # A check never needs the tags; loading them would cost a second query per check.
    stmt = select(Watch).where(Watch.id == watch_id).options(lazyload(Watch.tag_rows))
    if session.get_bind().dialect.name != "sqlite":
        stmt = stmt.with_for_update()
    return session.scalar(stmt)


def _record_failure(
    session: Session,
    box: SecretBox,
    check: CheckInput,
    failure_class: str,
    message: str,
    now: datetime,
    http_status: int | None = None,
) -> CheckResult:
    watch = _locked_watch(session, check.watch_id)
    if watch is None:
        return CheckResult(check.watch_id, "skipped")
    decided = transition(facts_of(watch), CheckFailed(failure_class))
    watch.last_checked_at = now
    watch.last_check_status = "error"
    watch.failure_class = failure_class
    watch.last_error = message[:2000]
    watch.drift_status = decided.status.value
    if decided.announce_failure:
        emit(
            session,
            box,
            org_id=watch.org_id,
            event_type="drift.check_failed",
            data={
                "watchId": watch.id,
                "watchName": watch.name,
                "failureClass": failure_class,
                "error": watch.last_error,
                "reason": decided.reason,
                "affectedAgentIds": runtime.affected_agent_ids(session, watch.id),
            },
            now=now,
            watch=watch,
        )
    return CheckResult(
        watch.id,
        "error",
        watch.drift_status,
        failure_class=failure_class,
        error=message,
        http_status=http_status,
    )


def _record_unchanged(
    session: Session,
    box: SecretBox,
    check: CheckInput,
    fetched: Fetched,
    source_hash: str | None,
    now: datetime,
) -> CheckResult:
    # The common case, one statement: a healthy watch whose contract did not change.
    healthy = (
        session.connection()
        .execute(
            _RECORD_HEALTHY_UNCHANGED,
            {
                "b_id": check.watch_id,
                "b_now": now,
                "b_etag": fetched.etag,
                "b_last_modified": fetched.last_modified,
                "b_protocol_version": fetched.protocol_version or None,
                "b_source_hash": source_hash,
            },
        )
        .scalar()
    )
    if healthy is not None:
        return CheckResult(check.watch_id, "unchanged", healthy)
    watch = _locked_watch(session, check.watch_id)
    if watch is None:
        return CheckResult(check.watch_id, "skipped")
    # The statement above only skips watches whose status this decision leaves as it is.
    decided = transition(facts_of(watch), CheckSucceeded(None))
    _mark_success(watch, fetched, source_hash, now)
    watch.drift_status = decided.status.value
    return CheckResult(watch.id, "unchanged", watch.drift_status)


def _set_open_changes(watch: Watch, counts: Counts | None) -> None:
    if counts is not None:
        watch.open_breaking, watch.open_warning, watch.open_info = (
            counts.breaking,
            counts.warning,
            counts.info,
        )


def _success_values(fetched: Fetched, source_hash: str | None, now: datetime) -> dict[str, Any]:
    """The columns a successful fetch sets on its watch."""
    values: dict[str, Any] = {
        "last_checked_at": now,
        "last_success_at": now,
        "last_check_status": "ok",
        "failure_class": None,
        "last_error": None,
        "etag": fetched.etag,
        "last_modified": fetched.last_modified,
        "updated_at": now,
    }
    if fetched.protocol_version:
        values["protocol_version"] = fetched.protocol_version
    if source_hash is not None:
        values["source_hash"] = source_hash
    return values


def _mark_success(watch: Watch, fetched: Fetched, source_hash: str | None, now: datetime) -> None:
    for column, value in _success_values(fetched, source_hash, now).items():
        setattr(watch, column, value)


def _record_new_snapshot(
    session: Session,
    box: SecretBox,
    check: CheckInput,
    fetched: Fetched,
    source_hash: str | None,
    found: NewSnapshot,
    now: datetime,
    flap_window_seconds: float = FLAP_WINDOW_SECONDS,
) -> CheckResult:
    watch = _locked_watch(session, check.watch_id)
    if watch is None:
        return CheckResult(check.watch_id, "skipped")
    if watch.baseline_snapshot_id != check.baseline_snapshot_id or (
        found.revert == "prior" and watch.prior_baseline_fingerprint != found.fingerprint
    ):
        # A new baseline was accepted while we fetched (or the same one again, which forgets
        # the baseline a revert would restore); the next check diffs against it.
        _mark_success(watch, fetched, None, now)
        return CheckResult(watch.id, "unchanged", watch.drift_status)
    changes = found.changes
    snapshot = session.scalar(
        select(Snapshot).where(
            Snapshot.watch_id == watch.id, Snapshot.fingerprint == found.fingerprint
        )
    )
    if snapshot is None:
        content = encode_document(found.document)
        snapshot = Snapshot(
            watch_id=watch.id,
            fingerprint=found.fingerprint,
            content=content,
            size=len(content),
            created_at=now,
        )
        session.add(snapshot)
        session.flush()
    _mark_success(watch, fetched, source_hash, now)
    watch.last_snapshot_id = snapshot.id
    replaced = watch.baseline_snapshot_id
    if found.revert == "prior":
        _restore_prior_baseline(watch)
    changes = waive(changes, watch_waivers(session, watch), now)
    return _record_comparison(
        session, box, watch, snapshot, changes, found.revert, replaced, now, flap_window_seconds
    )


def reapply_waivers(
    session: Session,
    box: SecretBox,
    watch_id: str,
    now: datetime,
    flap_window_seconds: float = FLAP_WINDOW_SECONDS,
    *,
    due: bool = False,
) -> CheckResult | None:
    """Count the watch's current comparison (its last snapshot against its baseline, as its
    newest drift event holds it) again under the waivers in force at `now`: a waiver that
    expired or left git lets its findings count (a drift event, an incident, agents told), a
    new one waives them. None when nothing changed (only `waived_until` is set again).
    `due`: only if the watch's `waived_until` has passed (read under the row's lock)."""
    watch = _locked_watch(session, watch_id)
    if watch is None:
        return None
    if due and (watch.waived_until is None or watch.waived_until > now):
        return None  # counted again already (another controller), or a waiver renewed
    event = None
    if watch.last_snapshot_id is not None and watch.baseline_snapshot_id is not None:
        event = session.scalar(
            select(DriftEvent)
            .where(
                DriftEvent.watch_id == watch.id,
                DriftEvent.snapshot_id == watch.last_snapshot_id,
                DriftEvent.base_snapshot_id == watch.baseline_snapshot_id,
            )
            .order_by(DriftEvent.detected_at.desc(), DriftEvent.id.desc())
            .limit(1)
        )
    if event is not None:
        stored = decode_changes(event.changes)
    elif watch.last_snapshot_id not in (None, watch.baseline_snapshot_id):
        # No drift event holds the comparison (pruned): diff the stored snapshots again
        # rather than let a waiver's end pass unseen.
        base = session.get_one(Snapshot, watch.baseline_snapshot_id)
        last = session.get_one(Snapshot, watch.last_snapshot_id)
        found_now = diff_documents(
            watch.watch_type, decode_snapshot(base), decode_snapshot(last), now.date()
        )
        stored = [change.to_json() for change in found_now]
    else:
        watch.waived_until = None
        return None
    found = unwaive(Change.model_validate(change) for change in stored)
    changes = waive(found, watch_waivers(session, watch), now)
    if event is not None and [change.to_json() for change in changes] == [
        Change.model_validate(c).to_json() for c in stored
    ]:
        watch.waived_until = waived_until(changes)
        return None
    snapshot = session.get_one(Snapshot, watch.last_snapshot_id)
    return _record_comparison(
        session,
        box,
        watch,
        snapshot,
        changes,
        None,
        watch.baseline_snapshot_id,
        now,
        flap_window_seconds,
    )


def _record_comparison(
    session: Session,
    box: SecretBox,
    watch: Watch,
    snapshot: Snapshot,
    changes: list[Change],
    revert: Revert | None,
    replaced: str | None,
    now: datetime,
    flap_window_seconds: float,
) -> CheckResult:
    """Record the comparison of `snapshot` with the watch's baseline: its drift event, the
    status move and its consequences (incident, agents, outbox)."""
    counts = count_changes(changes)
    decided = transition(
        facts_of(watch),
        CheckSucceeded(
            Counts(**counts, waived=count_waived(changes)), at_baseline=revert is not None
        ),
    )
    watch.waived_until = waived_until(changes) if decided.row != "first_good_check" else None

    if decided.row == "first_good_check":
        assert decided.advance_baseline is not None
        _set_baseline(watch, snapshot, now, decided.advance_baseline)
        watch.drift_status = decided.status.value
        return CheckResult(watch.id, "baseline", watch.drift_status)

    event = None
    if changes:
        event = DriftEvent(
            org_id=watch.org_id,
            watch_id=watch.id,
            detected_at=now,
            base_snapshot_id=watch.baseline_snapshot_id,
            snapshot_id=snapshot.id,
            breaking_count=counts["breaking"],
            warning_count=counts["warning"],
            info_count=counts["info"],
            changes=encode_changes(changes),
            agent_actions=order_actions(c.agentAction for c in changes if not c.ignored),
            gate_reasons=gate_reasons(
                c.rule for c in changes if not c.ignored and c.severity == Severity.BREAKING
            ),
            affected_profiles=_affected_profiles(session, watch, changes)
            if counts["breaking"]
            else [],
        )
        session.add(event)
        session.flush()

    # The watch's bound agents, asked once for every message this check sends.
    agent_ids = cache(partial(runtime.affected_agent_ids, session, watch.id))
    incident = current_incident(session, watch.id)
    if decided.open_incident:
        _set_open_changes(watch, decided.open_changes)
        watch.drift_status = decided.status.value
        if incident is None:
            incident = _open_or_reopen(
                session,
                box,
                watch,
                event,
                counts["breaking"],
                now,
                flap_window_seconds,
                agent_ids(),
            )
            if decided.notify_agents:
                # Never damped: an enforcing policy acts on every return of breaking drift.
                runtime.on_drift(
                    session, box, watch, incident, event.agent_actions if event else [], now
                )
        else:
            incident.breaking_count = counts["breaking"]
            incident.drift_event_id = event.id if event else incident.drift_event_id
        watch.incident_id = incident.id
        if event is not None:
            event.incident_id = incident.id
    else:
        closed = None
        if incident is not None and decided.resolve_incident is not None:
            close_incident(
                session, box, watch, incident, now, resolution=decided.resolve_incident, by="system"
            )
            closed = incident.id
        if decided.announce_cleared:
            emit(
                session,
                box,
                org_id=watch.org_id,
                event_type="drift.cleared",
                data={
                    "watchId": watch.id,
                    "watchName": watch.name,
                    "counts": counts,
                    "incidentId": closed,
                },
                now=now,
                watch=watch,
            )
        if decided.advance_baseline is not None and snapshot.id != watch.baseline_snapshot_id:
            # Info-only (or no semantic change): the baseline advances by itself, and the one
            # it replaces stays restorable for the flap window.
            _remember_prior_baseline(watch)
            _set_baseline(watch, snapshot, now, decided.advance_baseline)
        _set_open_changes(watch, decided.open_changes)
        watch.drift_status = decided.status.value
        if revert is not None and (decided.changed or closed or revert == "prior"):
            _audit_revert(session, watch, revert, replaced, closed, decided.before.value, now)

    if event is not None and decided.announce_drift is not None:
        emit(
            session,
            box,
            org_id=watch.org_id,
            event_type="drift.detected",
            data={
                "watchId": watch.id,
                "watchName": watch.name,
                "watchUrl": watch.url,
                "driftEventId": event.id,
                "incidentId": event.incident_id,
                "counts": counts,
                "agentActions": event.agent_actions,
                "affectedAgentIds": agent_ids(),
                "changes": with_hints(
                    [c.to_json() for c in changes if not c.ignored][:EVENT_CHANGES_IN_ALERTS]
                ),
            },
            now=now,
            watch=watch,
            severity=decided.announce_drift,
        )
    return CheckResult(
        watch.id,
        "changed",
        watch.drift_status,
        drift_event_id=event.id if event else None,
        counts=counts,
    )


def _open_or_reopen(
    session: Session,
    box: SecretBox,
    watch: Watch,
    event: DriftEvent | None,
    breaking: int,
    now: datetime,
    flap_window_seconds: float,
    agent_ids: list[str],
) -> Incident:
    """The incident of breaking drift found now: the one it reverted from within the flap
    window, reopened (one more flap), else a new one."""
    event_id = event.id if event else None
    flapping = reopenable_incident(session, watch, now, flap_window_seconds)
    if flapping is not None:
        reopen_incident(
            session,
            box,
            watch,
            flapping,
            now,
            breaking_count=breaking,
            drift_event_id=event_id,
            agent_ids=agent_ids,
        )
        return flapping
    incident = Incident(
        org_id=watch.org_id,
        watch_id=watch.id,
        status="open",
        opened_at=now,
        breaking_count=breaking,
        drift_event_id=event_id,
        flap_count=0,
    )
    session.add(incident)
    session.flush()
    emit_incident(session, box, watch, incident, "incident.open", now, agent_ids=agent_ids)
    return incident


def _set_baseline(watch: Watch, snapshot: Snapshot, now: datetime, by: str) -> None:
    watch.baseline_snapshot_id = snapshot.id
    watch.baseline_fingerprint = snapshot.fingerprint
    watch.baseline_accepted_at = now
    watch.baseline_accepted_by = by


def _remember_prior_baseline(watch: Watch) -> None:
    watch.prior_baseline_snapshot_id = watch.baseline_snapshot_id
    watch.prior_baseline_fingerprint = watch.baseline_fingerprint
    watch.prior_baseline_accepted_at = watch.baseline_accepted_at
    watch.prior_baseline_accepted_by = watch.baseline_accepted_by


def _restore_prior_baseline(watch: Watch) -> None:
    """The baseline an automatic advance replaced is the baseline again, as it was accepted."""
    watch.baseline_snapshot_id = watch.prior_baseline_snapshot_id
    watch.baseline_fingerprint = watch.prior_baseline_fingerprint
    watch.baseline_accepted_at = watch.prior_baseline_accepted_at
    watch.baseline_accepted_by = watch.prior_baseline_accepted_by
    forget_prior_baseline(watch)


def forget_prior_baseline(watch: Watch) -> None:
    """No baseline to restore (a person accepted one: what came before is not a revert)."""
    watch.prior_baseline_snapshot_id = None
    watch.prior_baseline_fingerprint = None
    watch.prior_baseline_accepted_at = None
    watch.prior_baseline_accepted_by = None


def _audit_revert(
    session: Session,
    watch: Watch,
    revert: Revert,
    replaced: str | None,
    incident_id: str | None,
    before: str,
    now: datetime,
) -> None:
    """The audit log's entry (actor `system`) for a contract back at its baseline."""
    details: dict[str, Any] = {
        "snapshotId": watch.baseline_snapshot_id,
        "fingerprint": watch.baseline_fingerprint,
        "from": before,
        "to": watch.drift_status,
        "incidentId": incident_id,
    }
    if revert == "prior":
        details["restoredBaseline"] = {
            "replaced": replaced,
            "acceptedBy": watch.baseline_accepted_by,
        }
    audit.record(
        session,
        actor="system",
        action="watch.revert",
        target_type="watch",
        target_id=watch.id,
        org_id=watch.org_id,
        details=details,
        at=now,
    )
    logger.info(
        "check.reverted",
        extra={"fields": {"watchId": watch.id, "revert": revert, "incidentId": incident_id}},
    )
