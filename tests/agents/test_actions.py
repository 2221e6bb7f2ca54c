"""The registry of policy actions: the four names, which block new runs at the gate, and
that a watch turning drifted runs each listed action's effect on the bound agents."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from controller.agents import runtime
from controller.agents.actions import (
    ACTIONS,
    BLOCK_NEW_RUNS,
    DRAFT_PR,
    KILL_IN_FLIGHT,
    NOTIFY,
    Drift,
    PolicyAction,
    PolicyActions,
)
from controller.agents.policy import resolve_policy
from controller.crypto import load_secret_box
from controller.model.principal import Principal
from controller.model.watch import WatchCreate
from controller.store.db import Database
from controller.store.models import Agent, AgentWatch, Incident, OutboxMessage, Watch
from controller.watches import service as watch_service
from tests.conftest import OrgKey, make_settings

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def test_the_registry_names_the_four_actions() -> None:
    assert [action.name for action in ACTIONS] == [
        NOTIFY,
        DRAFT_PR,
        BLOCK_NEW_RUNS,
        KILL_IN_FLIGHT,
    ]
    assert ACTIONS.blocking() == (BLOCK_NEW_RUNS, KILL_IN_FLIGHT)
    from controller.draftpr import service as draftpr  # attaches draft_pr's effect

    effects = {action.name: action.on_drift for action in ACTIONS}
    # notify has no effect of its own; draft_pr queues the drift event's pull request.
    assert effects == {
        NOTIFY: None,
        DRAFT_PR: draftpr.open_on_drift,
        BLOCK_NEW_RUNS: None,
        KILL_IN_FLIGHT: runtime.kill_on_drift,
    }


def test_the_gate_blocks_by_the_registry() -> None:
    drafts = resolve_policy("drafts", {"on_breaking": ["notify", "draft_pr"]})
    assert drafts.enforcing == () and not drafts.kills
    strict = resolve_policy("production-guard", None)
    assert strict.enforcing == (BLOCK_NEW_RUNS, KILL_IN_FLIGHT) and strict.kills


def test_names_and_effects_are_given_once() -> None:
    actions = PolicyActions([PolicyAction("open_ticket")])
    with pytest.raises(ValueError, match="open_ticket"):
        actions.register(PolicyAction("open_ticket"))
    actions.attach("open_ticket", lambda drift, agent: False)
    with pytest.raises(ValueError, match="already has an effect"):
        actions.attach("open_ticket", lambda drift, agent: True)
    assert actions.blocking() == ()
    actions.register(PolicyAction("page_someone", blocks_new_runs=True))
    assert actions.blocking() == ("page_someone",)


def bound_watch(
    database: Database, org: OrgKey, tmp_path: Path, policies: dict[str, dict[str, Any]]
) -> str:
    """A watch with one agent bound to it per custom policy (keyed by agent id)."""
    box = load_secret_box(make_settings(tmp_path, database_url=database.url))
    principal = Principal(org.org_id, org.org_name, "pro", frozenset(), "api_key", org.key_id)
    with database.transaction() as session:
        data = WatchCreate.model_validate(
            {"name": "payments", "url": "https://api.example.com/spec", "watchType": "openapi"}
        )
        watch_id = watch_service.create_watch(session, principal, data, box).id
        for key, rules in policies.items():
            agent = Agent(org_id=org.org_id, key=key, slug=key, policy=key, policy_rules=rules)
            session.add(agent)
            session.flush()
            session.add(
                AgentWatch(agent_id=agent.id, position=0, ref="payments", watch_id=watch_id)
            )
    return watch_id


def test_a_drift_runs_each_listed_actions_effect_on_bound_agents(
    database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    watch_id = bound_watch(
        database,
        acme,
        tmp_path,
        {
            "drafter": {"on_breaking": ["notify", "draft_pr"]},
            "killer": {"on_breaking": ["notify", KILL_IN_FLIGHT]},
            "quiet": {"on_breaking": ["notify"]},
        },
    )
    drafted: list[tuple[str, str, list[str]]] = []

    def draft(drift: Drift, agent: Agent) -> bool:
        drafted.append((agent.key, drift.watch.name, drift.agent_actions))
        return False  # nothing about the agent changed

    actions = PolicyActions(
        [
            PolicyAction(NOTIFY),
            PolicyAction(DRAFT_PR, on_drift=draft),
            PolicyAction(KILL_IN_FLIGHT, blocks_new_runs=True, on_drift=runtime.kill_on_drift),
        ]
    )
    box = load_secret_box(make_settings(tmp_path, database_url=database.url))
    with database.transaction() as session:
        watch = session.get(Watch, watch_id)
        assert watch is not None
        for agent in session.scalars(select(Agent)):
            agent.runtime_webhook = f"https://orchestrator.example.com/{agent.key}"
        incident = Incident(org_id=acme.org_id, watch_id=watch_id, opened_at=NOW)
        session.add(incident)
        session.flush()
        changed = runtime.on_drift(session, box, watch, incident, ["pin_version"], NOW, actions)
    assert changed == ["killer"]
    assert drafted == [("drafter", "payments", ["pin_version"])]
    with database.session() as session:
        agents = session.scalars(select(Agent))
        states = {a.key: (a.runtime_state, a.runtime_reason) for a in agents}
        sent = [
            (m.event_type, m.payload["data"]["agentId"], m.payload["data"]["action"])
            for m in session.scalars(select(OutboxMessage))
        ]
    assert states == {
        "drafter": ("running", None),
        "killer": ("killed", "breaking_drift"),
        "quiet": ("running", None),
    }
    # Only the killed agent's orchestrator hears of it, as before the registry.
    assert sent == [("agent.contract.blocked", "killer", KILL_IN_FLIGHT)]
