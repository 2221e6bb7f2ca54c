"""The run gate's decision: a pure function of the watches' states, the agent and the request.

Nothing here reads the store, the clock (`now` is an argument) or the network, so every
answer of `POST /api/preflight` (and of the agent status view) is a function of one
consistent read and a time, and the rules below can be tested exhaustively. Rules (SPEC.md
"Preflight", CONTRACT.md "Preflight"):

1. A watch is blocked while it is `drifted` (`breaking_drift`), `error`
   (`check_failed:<failureClass>`), `never_run` (`never_checked`) or `disabled` (`disabled`);
   an id the org does not have is blocked with `not_found`. Whatever its status, a watch
   whose checks are stale at `now` (`controller.model.watch.is_stale_check`: its last
   completed check is older than twice its interval plus a grace) is blocked with
   `check_failed:stale` too: nothing vouches for its state any more, so no acknowledgement
   or waiver lets it through except `ignore`.
2. A plain watch list has no policy: HTTP 200 with `allowed` true or false.
3. With an agent, its policy applies. Breaking drift whose incident is acknowledged no longer
   blocks the agent. Breaking drift under a policy whose `on_breaking` has `block_new_runs`
   or `kill_in_flight` adds `policy_block:<action>` and sets `policy_blocked` (the API answers
   409 for it). A killed agent is policy-blocked until it is unblocked; a watch reference that
   resolves to nothing blocks the agent (fail closed) without a policy block.
4. `ignore` moves a row to `ignored` unless a policy block is on it: an enforcing policy cannot
   be waived by the caller. `dryRun` evaluates everything but never sets `policy_blocked`
   (`would_policy_block` says what it would have done).

The decision is a domain value: how it is serialized and which HTTP status answers it belong
to the preflight service and the route (`controller.gate.service`, `web.api.preflight`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from typing import Any

from controller.agents.actions import ACTIONS, KILL_IN_FLIGHT
from controller.diffs.rules import order_actions
from controller.model.watch import stale_from

PRESETS: dict[str, dict[str, Any]] = {
    "notify-only": {
        "on_breaking": ["notify"],
        "on_warning": ["notify"],
        "require_ack_to_unblock": False,
        "auto_resolve_incident": True,
    },
    "staging-strict": {
        "on_breaking": ["notify", "block_new_runs"],
        "on_warning": ["notify"],
        "require_ack_to_unblock": False,
        "auto_resolve_incident": True,
    },
    "production-guard": {
        "on_breaking": ["notify", "block_new_runs", "kill_in_flight"],
        "on_warning": ["notify"],
        "require_ack_to_unblock": True,
        "auto_resolve_incident": True,
    },
}
WATCH_ID_LIMIT = 100

# Remediation hints per state (the drift engine adds its own per change, e.g. update_tool_schema).
ACTIONS_NOT_FOUND = ("check_watch_id",)
ACTIONS_ERROR = ("check_watch_config",)
ACTIONS_NEVER_RUN = ("wait_for_first_check",)
ACTIONS_DISABLED = ("resume_watch",)
ACTIONS_STALE = ("check_controller",)
STALE = "check_failed:stale"
# A waiver that hid breaking changes of the watch ended (`controller.model.waivers`): the
# gate blocks from that moment, before anything has counted the findings again.
WAIVER_EXPIRED = "waiver_expired"
ACTIONS_WAIVER_EXPIRED = ("renew_waiver_or_fix",)
ACTION_ACK = "ack_incident"
ACTION_UNBLOCK = "unblock_agent"
ACTION_FIX_REFERENCE = "fix_watch_reference"


@dataclass(frozen=True)
class Policy:
    name: str
    on_breaking: tuple[str, ...]
    on_warning: tuple[str, ...]
    require_ack_to_unblock: bool
    auto_resolve_incident: bool

    @property
    def enforcing(self) -> tuple[str, ...]:
        """The actions on breaking drift that block new runs (`controller.agents.actions`)."""
        return tuple(a for a in ACTIONS.blocking() if a in self.on_breaking)

    @property
    def kills(self) -> bool:
        return KILL_IN_FLIGHT in self.on_breaking


def resolve_policy(name: str, rules: Mapping[str, Any] | None) -> Policy:
    """A preset by name, or the custom policy `rules` an agents.yaml declared under `name`.

    An unknown name without rules cannot happen for reconciled agents (the loader refuses it);
    should it, the strictest preset applies rather than none (fail closed).
    """
    values = dict(PRESETS.get(name) or rules or PRESETS["production-guard"])
    return Policy(
        name=name,
        on_breaking=tuple(values.get("on_breaking") or ()),
        on_warning=tuple(values.get("on_warning") or ()),
        require_ack_to_unblock=bool(values.get("require_ack_to_unblock", False)),
        auto_resolve_incident=bool(values.get("auto_resolve_incident", True)),
    )


@dataclass(frozen=True)
class WatchState:
    """What the gate needs of a watch, read in one query with its incident and drift event."""

    id: str
    name: str
    drift_status: str
    failure_class: str | None
    last_checked_at: datetime | None
    interval_minutes: int
    incident_id: str | None
    incident_status: str | None
    change_actions: tuple[str, ...] = ()
    # The reason tokens of the drift's findings themselves (`tool_poisoning_suspected`:
    # `controller.diffs.rules.gate_reasons`), added to `breaking_drift`.
    change_reasons: tuple[str, ...] = ()
    # When the first waiver hiding a breaking change of the current comparison ends.
    waived_until: datetime | None = None

    @cached_property
    def stale_from(self) -> datetime | None:
        """When this state turns stale (`controller.model.watch.stale_from`)."""
        return stale_from(
            status=self.drift_status,
            last_checked_at=self.last_checked_at,
            interval_minutes=self.interval_minutes,
        )

    @cached_property
    def stale_from_ts(self) -> float:
        """`stale_from` as a POSIX time (infinite: never), compared once per watch and answer."""
        at = self.stale_from
        return math.inf if at is None else at.timestamp()

    def is_stale(self, now: datetime) -> bool:
        """Whether checks stopped vouching for this state at `now`: judged on every answer,
        never kept, so a cached state turns stale as time passes without any write."""
        return now.timestamp() > self.stale_from_ts

    # Derived once per state: a process's gate view keeps its states while they are current
    # (`controller.gate.readmodel`), so each preflight reuses them.
    @cached_property
    def reasons(self) -> list[str]:
        return watch_reasons(self)

    @cached_property
    def actions(self) -> list[str]:
        return _actions(self, self.reasons)

    @cached_property
    def row(self) -> Row:
        """This watch's blocked row as it is (no policy reasons, not ignored). Shared by every
        decision that shows it, so never changed: an ignored or policy-blocked row is a new
        one."""
        return Row(
            self.id,
            self.name,
            self.drift_status,
            self.reasons,
            self.actions,
            self.last_checked_at,
            self.incident_id,
            state=self,
        )

    @cached_property
    def waived_until_ts(self) -> float:
        """`waived_until` as a POSIX time (infinite: no waiver ends)."""
        return math.inf if self.waived_until is None else self.waived_until.timestamp()

    @cached_property
    def waiver_row(self) -> Row:
        """This watch's blocked row once a waiver of its breaking changes has ended: its own
        reasons and `waiver_expired`, the stored status as it is."""
        return Row(
            self.id,
            self.name,
            self.drift_status,
            [*self.reasons, WAIVER_EXPIRED],
            order_actions({*self.actions, *ACTIONS_WAIVER_EXPIRED}),
            self.last_checked_at,
            self.incident_id,
        )

    @cached_property
    def stale_row(self) -> Row:
        """This watch's blocked row while its checks are stale: its own reasons and
        `check_failed:stale`, the stored status as it is."""
        return Row(
            self.id,
            self.name,
            self.drift_status,
            [*self.reasons, STALE],
            order_actions({*self.actions, *ACTIONS_STALE}),
            self.last_checked_at,
            self.incident_id,
        )


@dataclass(frozen=True)
class AgentState:
    key: str
    slug: str
    policy: Policy
    runtime_state: str
    unresolved: tuple[str, ...] = ()


@dataclass
class Row:
    watch_id: str
    name: str | None
    drift_status: str | None
    reasons: list[str]
    agent_actions: list[str]
    last_checked_at: datetime | None = None
    incident_id: str | None = None
    ignore_reason: str | None = None
    # The state this row shows as it is (no policy reasons, not ignored), when it does: such
    # rows are shared by every decision on the same state, and so can be encoded once.
    state: WatchState | None = None

    @property
    def as_stated(self) -> bool:
        """Whether the row is its state's row unchanged (see `state`)."""
        return self.state is not None and self.ignore_reason is None


@dataclass
class Decision:
    allowed: bool
    policy_blocked: bool
    would_policy_block: bool
    blocked: list[Row] = field(default_factory=list)
    ignored: list[Row] = field(default_factory=list)
    agent_reasons: list[str] = field(default_factory=list)
    agent_actions: list[str] = field(default_factory=list)
    # Whether a row blocks (or is ignored) because its watch's checks are stale.
    stale: bool = False


def reasons_for(
    drift_status: str, failure_class: str | None, change_reasons: Sequence[str] = ()
) -> list[str]:
    """Rule 1's reason tokens of a watch in `drift_status` (empty when it does not block);
    drifted, `breaking_drift` then its findings' own tokens (`change_reasons`)."""
    if drift_status == "drifted":
        return ["breaking_drift", *change_reasons]
    if drift_status == "error":
        return [f"check_failed:{failure_class}" if failure_class else "check_failed"]
    if drift_status == "never_run":
        return ["never_checked"]
    if drift_status == "disabled":
        return ["disabled"]
    return []


def watch_reasons(state: WatchState) -> list[str]:
    """Rule 1's reason token of a watch state by its status (empty when it does not block)."""
    return reasons_for(state.drift_status, state.failure_class, state.change_reasons)


def reasons_at(state: WatchState, now: datetime) -> list[str]:
    """Rule 1's reason tokens of a watch state at `now`, staleness included."""
    return state.stale_row.reasons if state.is_stale(now) else state.reasons


def _actions(state: WatchState, reasons: list[str]) -> list[str]:
    status = state.drift_status
    if status == "drifted":
        actions = set(state.change_actions)
        if state.incident_status == "open":
            actions.add(ACTION_ACK)
        return order_actions(actions)
    if status == "error":
        return list(ACTIONS_ERROR)
    if status == "never_run":
        return list(ACTIONS_NEVER_RUN)
    if status == "disabled":
        return list(ACTIONS_DISABLED)
    return []


def decide(
    requested: Sequence[str],
    states: Mapping[str, WatchState],
    *,
    now: datetime,
    agent: AgentState | None = None,
    ignore: Mapping[str, str] | None = None,
    dry_run: bool = False,
) -> Decision:
    """The answer for the watch ids `requested` (deduplicated, in order), given their states
    (ids missing from `states` are not the org's) at `now`."""
    ignore = ignore or {}
    blocked: list[Row] = []
    ignored: list[Row] = []
    policy_hit = any_stale = False
    enforced = agent.policy.enforcing if agent is not None else ()
    now_ts = now.timestamp()
    for watch_id in dict.fromkeys(requested):
        state = states.get(watch_id)
        if state is None:
            row = Row(watch_id, None, None, ["not_found"], list(ACTIONS_NOT_FOUND))
        else:
            # Stale: whatever the status says, nothing vouches for it now.
            stale = now_ts > state.stale_from_ts
            # A waiver ended: fail closed until its findings are counted again.
            unwaived = now_ts >= state.waived_until_ts
            if not stale and not unwaived and (state.drift_status == "ok" or not state.reasons):
                continue  # most watches
            row = state.stale_row if stale else state.waiver_row if unwaived else state.row
            any_stale |= stale
            if agent is not None and state.drift_status == "drifted":
                if state.incident_status == "acknowledged" and not stale:
                    continue  # an acknowledged incident no longer blocks the agent
                if enforced:
                    # An enforcing policy's block: a row of its own, which `ignore` cannot
                    # waive.
                    policy_hit = True
                    reasons = row.reasons + [f"policy_block:{a}" for a in enforced]
                    blocked.append(replace(row, reasons=reasons, state=None))
                    continue
        waived = ignore.get(watch_id) if ignore else None
        if waived is None:
            blocked.append(row)
        else:
            ignored.append(replace(row, ignore_reason=waived))

    agent_reasons: list[str] = []
    agent_actions: list[str] = []
    if agent is not None:
        if agent.runtime_state == "killed":
            agent_reasons.append("agent_killed")
            agent_actions.append(ACTION_UNBLOCK)
            policy_hit = True
        if agent.unresolved:
            agent_reasons.append("unresolved_reference")
            agent_actions.append(ACTION_FIX_REFERENCE)
    allowed = not blocked and not agent_reasons
    policy_blocked = policy_hit and not dry_run
    return Decision(
        allowed=allowed,
        policy_blocked=policy_blocked,
        would_policy_block=policy_hit,
        blocked=blocked,
        ignored=ignored,
        agent_reasons=agent_reasons,
        agent_actions=agent_actions,
        stale=any_stale,
    )
