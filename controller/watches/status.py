"""The `driftStatus` state machine: CONTRACT.md's transition table as code.

    never_run --first good check--> ok (becomes the baseline)
    ok --breaking changes--> drifted (incident opens)
    ok --warning/info only--> ok (event recorded; info-only advances the baseline)
    drifted --breaking changes gone--> ok (incident resolved: reverted)
    drifted --back at the baseline--> ok (incident resolved: reverted; baseline kept as it is)
    drifted --baseline accepted--> ok (incident resolved)
    any but disabled --fetch or parse fails--> error (reason check_failed:<class>)
    error --next good check--> ok or drifted by the diff against the baseline
    any --paused--> disabled; resuming recomputes the status

A watch with no completed check stays `never_run`; an error on a watch that never had a good
check stays `error`. Beyond the table (what the code has always done, kept as it is):

- a check that lands on a paused watch (paused while it fetched) records what it found, opens
  or resolves the incident, but leaves the status `disabled` and tells no agent;
- a good check whose contract is the last snapshot's brings an `error` watch back to what its
  stored comparison says (`drifted` with open breaking changes, else `ok`; `never_run` without
  a baseline) and changes nothing else;
- accepting a baseline moves `drifted` and `never_run` to `ok`; `error` and `disabled` stay;
- resuming a watch whose last check failed returns it to `error`;
- a contract that is back at its baseline (its fingerprint, or that of the baseline a
  recent automatic advance replaced, which the caller restores: flap damping) is a revert:
  `ok`, the incident resolved `reverted`, and the baseline's acceptance left as it is (a
  zero-change diff would otherwise "advance" the baseline onto itself as `auto:info-only`).

`transition(facts, event)` decides; it returns the new status and the consequences as data.
The callers (checks, baseline acceptance, pause/resume, watch creation and reconcile) persist
them. Pure: no I/O, no database, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from controller.model.watch import DriftStatus

__all__ = [
    "INITIAL",
    "BaselineAccepted",
    "CheckFailed",
    "CheckSucceeded",
    "Counts",
    "DriftStatus",
    "Event",
    "Paused",
    "Resumed",
    "Row",
    "StatusFacts",
    "Transition",
    "facts_of",
    "transition",
]

# A new watch (created through the API or declared in git) has had no completed check.
INITIAL = DriftStatus.NEVER_RUN

Resolution = Literal["reverted", "baseline_accepted"]
Row = Literal[
    "first_good_check",
    "breaking",
    "warning_info_only",
    "breaking_gone",
    "back_at_baseline",
    "unchanged",
    "error_recovered",
    "check_failed",
    "baseline_accepted",
    "paused",
    "resumed",
    "no_op",
]


@dataclass(frozen=True)
class Counts:
    """Changes against the baseline by severity (ignored changes not counted)."""

    breaking: int = 0
    warning: int = 0
    info: int = 0
    # Changes a waiver accepts (not counted above): they keep the baseline where it is, so
    # that they count again when the waiver ends.
    waived: int = 0


NO_CHANGES = Counts()


@dataclass(frozen=True)
class StatusFacts:
    """What the machine needs to know about a watch."""

    status: DriftStatus
    has_baseline: bool = False
    open_breaking: int = 0
    last_check_status: str | None = None


class WatchState(Protocol):
    """The columns of a stored watch the machine reads (any object that has them)."""

    @property
    def drift_status(self) -> str: ...
    @property
    def baseline_snapshot_id(self) -> str | None: ...
    @property
    def open_breaking(self) -> int: ...
    @property
    def last_check_status(self) -> str | None: ...


def facts_of(watch: WatchState) -> StatusFacts:
    return StatusFacts(
        status=DriftStatus(watch.drift_status),
        has_baseline=watch.baseline_snapshot_id is not None,
        open_breaking=watch.open_breaking,
        last_check_status=watch.last_check_status,
    )


# -- events --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckSucceeded:
    """A check fetched and parsed the contract.

    `changes` is None when the contract is the last snapshot's (nothing new to compare), else
    the counts of the diff of the new snapshot against the baseline (zero without a baseline).
    `at_baseline`: the new snapshot is the baseline itself (a revert; no diff was needed).
    """

    changes: Counts | None = None
    at_baseline: bool = False


@dataclass(frozen=True)
class CheckFailed:
    failure_class: str


@dataclass(frozen=True)
class BaselineAccepted:
    """The last good snapshot became the baseline (API, CLI, merged draft PR)."""


@dataclass(frozen=True)
class Paused:
    pass


@dataclass(frozen=True)
class Resumed:
    """Recomputes the status from `StatusFacts.has_baseline`, `last_check_status` and
    `open_breaking`."""


Event = CheckSucceeded | CheckFailed | BaselineAccepted | Paused | Resumed


# -- the decision --------------------------------------------------------------------------


@dataclass(frozen=True)
class Transition:
    """The new status and what has to happen with it."""

    before: DriftStatus
    status: DriftStatus
    row: Row
    # Make the snapshot the baseline, accepted by this name.
    advance_baseline: str | None = None
    # The watch's open change counts become these.
    open_changes: Counts | None = None
    # Open an incident (or, when one is open, update its breaking count).
    open_incident: bool = False
    # Tell the runtime hooks of affected agents when an incident opens.
    notify_agents: bool = False
    # Resolve the open incident, if there is one, with this resolution.
    resolve_incident: Resolution | None = None
    # `check_failed:<failureClass>` for failed checks.
    reason: str | None = None
    # Outbox events: `drift.check_failed`, `drift.cleared`, `drift.detected` (by its severity).
    announce_failure: bool = False
    announce_cleared: bool = False
    announce_drift: Literal["breaking", "warning"] | None = None

    @property
    def changed(self) -> bool:
        return self.status != self.before


def transition(facts: StatusFacts, event: Event) -> Transition:
    current = DriftStatus(facts.status)
    if isinstance(event, CheckSucceeded):
        if event.changes is None:
            return _unchanged(facts, current)
        if event.at_baseline and facts.has_baseline:
            return _back_at_baseline(current)
        return _new_snapshot(facts, current, event.changes)
    if isinstance(event, CheckFailed):
        return _failed(current, event.failure_class)
    if isinstance(event, BaselineAccepted):
        accepted = (
            DriftStatus.OK if current in (DriftStatus.DRIFTED, DriftStatus.NEVER_RUN) else current
        )
        return Transition(
            current,
            accepted,
            "baseline_accepted",
            open_changes=NO_CHANGES,
            resolve_incident="baseline_accepted",
        )
    if isinstance(event, Paused):
        if current == DriftStatus.DISABLED:
            return Transition(current, current, "no_op")
        return Transition(current, DriftStatus.DISABLED, "paused")
    if isinstance(event, Resumed):
        if current != DriftStatus.DISABLED:
            return Transition(current, current, "no_op")
        return Transition(current, _recomputed(facts), "resumed")
    raise TypeError(f"not a driftStatus event: {event!r}")


def _keep_if_paused(current: DriftStatus, status: DriftStatus) -> DriftStatus:
    return current if current == DriftStatus.DISABLED else status


def _unchanged(facts: StatusFacts, current: DriftStatus) -> Transition:
    if current != DriftStatus.ERROR:
        return Transition(current, current, "unchanged")
    # Back from an error with the same contract: the stored comparison still holds.
    if not facts.has_baseline:
        status = DriftStatus.NEVER_RUN
    elif facts.open_breaking > 0:
        status = DriftStatus.DRIFTED
    else:
        status = DriftStatus.OK
    return Transition(current, status, "error_recovered")


def _new_snapshot(facts: StatusFacts, current: DriftStatus, counts: Counts) -> Transition:
    paused = current == DriftStatus.DISABLED
    if not facts.has_baseline:
        return Transition(
            current,
            _keep_if_paused(current, DriftStatus.OK),
            "first_good_check",
            advance_baseline="first-check",
        )
    if counts.breaking > 0:
        return Transition(
            current,
            _keep_if_paused(current, DriftStatus.DRIFTED),
            "breaking",
            open_changes=counts,
            open_incident=True,
            notify_agents=not paused,
            announce_drift="breaking",
        )
    info_only = counts.warning == 0 and counts.waived == 0
    return Transition(
        current,
        _keep_if_paused(current, DriftStatus.OK),
        "breaking_gone" if current == DriftStatus.DRIFTED else "warning_info_only",
        # Info-only (or no semantic change): the baseline advances by itself.
        advance_baseline="auto:info-only" if info_only else None,
        open_changes=NO_CHANGES if info_only else Counts(0, counts.warning, counts.info),
        resolve_incident="reverted",
        announce_cleared=current == DriftStatus.DRIFTED,
        announce_drift="warning" if counts.warning else None,
    )


def _back_at_baseline(current: DriftStatus) -> Transition:
    drifted = current == DriftStatus.DRIFTED
    return Transition(
        current,
        _keep_if_paused(current, DriftStatus.OK),
        "breaking_gone" if drifted else "back_at_baseline",
        open_changes=NO_CHANGES,
        resolve_incident="reverted",
        announce_cleared=drifted,
    )


def _failed(current: DriftStatus, failure_class: str) -> Transition:
    reason = f"check_failed:{failure_class}"
    if current == DriftStatus.DISABLED:
        return Transition(current, current, "no_op", reason=reason)
    return Transition(
        current,
        DriftStatus.ERROR,
        "check_failed",
        reason=reason,
        announce_failure=current != DriftStatus.ERROR,
    )


def _recomputed(facts: StatusFacts) -> DriftStatus:
    """The status a paused watch returns to: recomputed from what its checks last found."""
    if facts.last_check_status == "error":
        return DriftStatus.ERROR
    if not facts.has_baseline:
        return DriftStatus.NEVER_RUN
    return DriftStatus.DRIFTED if facts.open_breaking > 0 else DriftStatus.OK
