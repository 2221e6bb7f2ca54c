"""The run gate's pure decision: every reason token, policy and waiver, without a store."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from controller.agents.policy import PRESETS, AgentState, WatchState, decide, resolve_policy

NOW = datetime(2026, 11, 22, tzinfo=UTC)


def state(
    watch_id: str,
    status: str,
    *,
    failure: str | None = None,
    incident: str | None = None,
    actions: tuple[str, ...] = (),
) -> WatchState:
    return WatchState(
        id=watch_id,
        name=f"name-{watch_id}",
        drift_status=status,
        failure_class=failure,
        last_checked_at=None if status == "never_run" else NOW,
        interval_minutes=15,
        incident_id="inc-" + watch_id if incident else None,
        incident_status=incident,
        change_actions=actions,
    )


STATES = {
    "ok": state("ok", "ok"),
    "drift": state("drift", "drifted", incident="open", actions=("update_tool_schema",)),
    "acked": state("acked", "drifted", incident="acknowledged", actions=("update_tool_schema",)),
    "err": state("err", "error", failure="timeout"),
    "err2": state("err2", "error"),
    "new": state("new", "never_run"),
    "off": state("off", "disabled"),
}


def agent(policy: str, runtime: str = "running", unresolved: tuple[str, ...] = ()) -> AgentState:
    return AgentState("bot", "bot", resolve_policy(policy, None), runtime, unresolved)


def test_every_reason_token_of_a_plain_watch_list() -> None:
    decision = decide(list(STATES) + ["ghost"], STATES, now=NOW)
    assert not decision.allowed and not decision.policy_blocked
    reasons = {row.watch_id: row.reasons for row in decision.blocked}
    assert reasons == {
        "drift": ["breaking_drift"],
        "acked": ["breaking_drift"],  # a plain list still reports acknowledged drift
        "err": ["check_failed:timeout"],
        "err2": ["check_failed"],
        "new": ["never_checked"],
        "off": ["disabled"],
        "ghost": ["not_found"],
    }
    actions = {row.watch_id: row.agent_actions for row in decision.blocked}
    assert actions["drift"] == ["update_tool_schema", "ack_incident"]
    assert actions["acked"] == ["update_tool_schema"]
    assert actions["ghost"] == ["check_watch_id"] and actions["new"] == ["wait_for_first_check"]
    ghost = decision.blocked[-1]
    assert ghost.name is None and ghost.drift_status is None


def test_empty_and_duplicate_ids() -> None:
    assert decide([], STATES, now=NOW).allowed
    twice = decide(["drift", "drift", "ok"], STATES, now=NOW)
    assert [r.watch_id for r in twice.blocked] == ["drift"]


@pytest.mark.parametrize(
    ("policy", "status", "extra"),
    [
        ("notify-only", 200, []),
        ("staging-strict", 409, ["policy_block:block_new_runs"]),
        ("production-guard", 409, ["policy_block:block_new_runs", "policy_block:kill_in_flight"]),
    ],
)
def test_presets_on_breaking_drift(policy: str, status: int, extra: list[str]) -> None:
    decision = decide(["drift", "ok", "acked"], STATES, agent=agent(policy), now=NOW)
    assert decision.policy_blocked == (status == 409)
    assert [r.watch_id for r in decision.blocked] == ["drift"]  # acknowledged: not blocking
    assert decision.blocked[0].reasons == ["breaking_drift", *extra]
    dry = decide(["drift"], STATES, agent=agent(policy), dry_run=True, now=NOW)
    assert not dry.policy_blocked
    assert dry.would_policy_block == (status == 409) and not dry.allowed


def test_other_states_block_an_agent_without_a_policy_block() -> None:
    decision = decide(["err", "new", "off"], STATES, agent=agent("production-guard"), now=NOW)
    assert not decision.allowed
    assert all(not r.reasons[0].startswith("policy_block") for r in decision.blocked)


def test_killed_agents_and_unresolved_references() -> None:
    killed = decide(["ok"], STATES, agent=agent("notify-only", runtime="killed"), now=NOW)
    assert killed.policy_blocked and killed.agent_reasons == ["agent_killed"]
    assert killed.agent_actions == ["unblock_agent"] and killed.blocked == []
    dangling = decide(
        ["ok"], STATES, agent=agent("staging-strict", unresolved=("gone-api",)), now=NOW
    )
    assert not dangling.policy_blocked and not dangling.allowed
    assert dangling.agent_reasons == ["unresolved_reference"]


def test_ignore_waives_rows_but_never_a_policy_block() -> None:
    waived = decide(
        ["new", "ghost"], STATES, ignore={"new": "first deploy", "ghost": "typo"}, now=NOW
    )
    assert waived.allowed and [r.ignore_reason for r in waived.ignored] == ["first deploy", "typo"]
    enforced = decide(
        ["drift", "new"],
        STATES,
        agent=agent("staging-strict"),
        ignore={"drift": "yolo", "new": "ok"},
        now=NOW,
    )
    assert [r.watch_id for r in enforced.blocked] == ["drift"] and enforced.policy_blocked
    assert [r.watch_id for r in enforced.ignored] == ["new"]


def test_custom_policies_and_fail_closed_names() -> None:
    custom = resolve_policy(
        "careful", {"on_breaking": ["notify", "kill_in_flight"], "require_ack_to_unblock": True}
    )
    assert custom.enforcing == ("kill_in_flight",) and custom.kills
    assert custom.require_ack_to_unblock and custom.on_warning == ()
    decision = decide(["drift"], STATES, agent=AgentState("a", "a", custom, "running"), now=NOW)
    assert decision.blocked[0].reasons == ["breaking_drift", "policy_block:kill_in_flight"]
    unknown = resolve_policy("vanished", None)
    assert unknown.enforcing == ("block_new_runs", "kill_in_flight")
    assert resolve_policy("notify-only", None).on_breaking == ("notify",)
    assert set(PRESETS) == {"notify-only", "staging-strict", "production-guard"}


def test_a_state_reused_across_decisions_keeps_each_answer_its_own() -> None:
    """A gate view reuses its states (and their rows) across preflights: a waiver or a policy
    reason in one answer must not leak into the next."""
    shared = {"d": state("d", "drifted", incident="open", actions=("pause",))}
    plain = decide(["d"], shared, now=NOW)
    waived = decide(["d"], shared, ignore={"d": "known"}, now=NOW)
    agent = AgentState(
        key="a", slug="a", policy=resolve_policy("staging-strict", None), runtime_state="running"
    )
    enforced = decide(["d"], shared, agent=agent, now=NOW)
    again = decide(["d"], shared, now=NOW)
    assert waived.ignored[0].ignore_reason == "known"
    assert enforced.blocked[0].reasons == [
        "breaking_drift",
        "policy_block:block_new_runs",
    ]
    # The row itself is shared, and no answer changed it.
    assert plain.blocked[0] is again.blocked[0]
    assert plain.blocked[0].ignore_reason is None and plain.blocked[0].reasons == ["breaking_drift"]
    for decision in (plain, again):
        row = decision.blocked[0]
        assert row.ignore_reason is None and row.reasons == ["breaking_drift"]
        assert row.agent_actions == ["ack_incident", "pause"]
        assert row.last_checked_at == NOW
    # Only the state's own row may be encoded once and shared (`Row.as_stated`).
    assert plain.blocked[0].as_stated and again.blocked[0].as_stated
    assert not waived.ignored[0].as_stated and not enforced.blocked[0].as_stated


@pytest.mark.parametrize(
    ("actions", "incident", "expected"),
    [
        (
            ("accept_baseline", "update_client_schema"),
            "open",
            ["update_client_schema", "ack_incident", "accept_baseline"],
        ),
        (("accept_baseline", "remove_tool_usage"), None, ["remove_tool_usage", "accept_baseline"]),
        (
            ("review_tool_description", "handle_new_enum_value", "update_tool_schema"),
            "open",
            [
                "update_tool_schema",
                "handle_new_enum_value",
                "review_tool_description",
                "ack_incident",
            ],
        ),
        (("zzz_unknown", "accept_baseline"), None, ["accept_baseline", "zzz_unknown"]),
    ],
)
def test_the_most_useful_action_comes_first(
    actions: tuple[str, ...], incident: str | None, expected: list[str]
) -> None:
    # Clients act on `agentActions[0]` (fuseguard's primary action): the fix, not the waiver.
    watch = state("w", "drifted", incident=incident, actions=actions)
    assert decide(["w"], {"w": watch}, now=NOW).blocked[0].agent_actions == expected


# -- staleness (issue 40, point 4) --------------------------------------------------------

# 15-minute interval: stale beyond 2 x 15 minutes plus the two-minute grace.
LATE = NOW + timedelta(minutes=32)
STALE_AT = NOW + timedelta(minutes=32, seconds=1)


def test_a_watch_whose_checks_stopped_blocks_as_stale_whatever_its_status() -> None:
    assert (
        decide(list(STATES), STATES, now=LATE).blocked
        == decide(list(STATES), STATES, now=NOW).blocked
    )
    decision = decide(list(STATES), STATES, now=STALE_AT)
    assert decision.stale and not decision.allowed
    reasons = {row.watch_id: row.reasons for row in decision.blocked}
    assert reasons == {
        "ok": ["check_failed:stale"],
        "drift": ["breaking_drift", "check_failed:stale"],
        "acked": ["breaking_drift", "check_failed:stale"],
        "err": ["check_failed:timeout", "check_failed:stale"],
        "err2": ["check_failed", "check_failed:stale"],
        "new": ["never_checked"],  # never checked is not stale
        "off": ["disabled"],  # paused on purpose
    }
    rows = {row.watch_id: row for row in decision.blocked}
    # The stored status is shown as it is; the reason carries the staleness.
    assert rows["ok"].drift_status == "ok" and rows["ok"].agent_actions == ["check_controller"]
    assert rows["ok"].last_checked_at == NOW and rows["ok"].name == "name-ok"


def test_staleness_overrides_an_acknowledgement_but_not_a_waiver() -> None:
    guard = agent("production-guard")
    assert decide(["acked", "ok"], STATES, agent=guard, now=NOW).allowed
    stale = decide(["acked", "ok"], STATES, agent=guard, now=STALE_AT)
    assert [row.watch_id for row in stale.blocked] == ["acked", "ok"]
    assert stale.policy_blocked  # stale breaking drift under an enforcing policy
    assert stale.blocked[1].reasons == ["check_failed:stale"]
    waived = decide(["ok"], STATES, ignore={"ok": "known"}, now=STALE_AT)
    assert waived.allowed and waived.ignored[0].reasons == ["check_failed:stale"]


def test_a_findings_own_reason_token_follows_breaking_drift() -> None:
    """`tool_poisoning_suspected` (issue 45): a drift whose counted breaking findings hold a
    poisoning finding says so beside `breaking_drift`; other statuses carry no such token."""
    poisoned = replace(
        state("p", "drifted", incident="open", actions=("review_tool_description",)),
        change_reasons=("tool_poisoning_suspected",),
    )
    decision = decide(["p"], {"p": poisoned}, now=NOW)
    assert decision.blocked[0].reasons == ["breaking_drift", "tool_poisoning_suspected"]
    assert decision.blocked[0].agent_actions == ["review_tool_description", "ack_incident"]
    errored = replace(
        state("e", "error", failure="timeout"), change_reasons=poisoned.change_reasons
    )
    assert decide(["e"], {"e": errored}, now=NOW).blocked[0].reasons == ["check_failed:timeout"]
