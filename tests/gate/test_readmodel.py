"""The run gate's in-memory view (`controller.gate.readmodel`) on a real store.

Every change is written through a second `Database` (its own connections, as another process
would: a check in the controller, an ack in another worker), and the view must show it on
the very next read; a view nobody changed is not read again; a view once handed out never
changes under its reader. The triggers that make this work are tested here too.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from sqlalchemy import delete, func, insert, select, update

from controller.errors import NotFound
from controller.gate.readmodel import GateCache, OrgView, gate_cache
from controller.gate.service import PreflightRequest, PreflightResult, answer_status, preflight
from controller.gate.statements import _statements as preflight_statements
from controller.model.principal import Principal
from controller.orgs import service as org_service
from controller.store.db import Database
from controller.store.fastpath import autocommit_cursor
from controller.store.models import (
    Agent,
    AgentWatch,
    DriftEvent,
    GateEvent,
    Incident,
    Org,
    PreflightDecision,
    Watch,
)
from tests.conftest import ON_POSTGRES


@pytest.fixture
def other(database: Database) -> Iterator[Database]:
    """The same store through connections of its own (another process's writes)."""
    second = Database(database.url)
    yield second
    second.dispose()


def make_org(database: Database, name: str) -> str:
    with database.transaction() as session:
        return org_service.create_org(session, name, "pro", actor="test").id


def add_watch(database: Database, org_id: str, name: str, status: str = "ok") -> str:
    with database.transaction() as session:
        watch = Watch(
            org_id=org_id,
            name=name,
            watch_type="openapi",
            url=f"https://{name}.example.com/openapi.json",
            drift_status=status,
            last_checked_at=None if status == "never_run" else datetime.now(UTC),
        )
        session.add(watch)
        session.flush()
        return watch.id


def add_agent(database: Database, org_id: str, key: str, watch_ids: list[str | None]) -> str:
    with database.transaction() as session:
        agent = Agent(org_id=org_id, key=key, slug=f"{key}-slug", policy="staging-strict")
        session.add(agent)
        session.flush()
        for position, watch_id in enumerate(watch_ids):
            session.add(
                AgentWatch(
                    agent_id=agent.id, position=position, ref=f"ref-{position}", watch_id=watch_id
                )
            )
        return agent.id


def view(database: Database, org_id: str) -> OrgView:
    with autocommit_cursor(database) as cursor:
        return gate_cache(database).view(cursor, org_id)


def settled(database: Database, org_id: str) -> OrgView:
    """The org's view once it is read again no more. On Postgres a transaction open anywhere
    in the cluster (another test worker's) holds `xmin` back, and the view reads this test's
    own writes again as changes (re-read more often, never wrong) until every such
    transaction has ended; on SQLite the first view is settled."""
    first = view(database, org_id)
    for _ in range(100):
        second = view(database, org_id)
        if second is first:
            return first
        first = second
        time.sleep(0.05)
    raise AssertionError("the view was read again on every call for 5 s with nothing changed")


def stamp(database: Database, watch_id: str) -> int:
    with database.session() as session:
        return int(session.scalar(select(Watch.gate_stamp).where(Watch.id == watch_id)) or 0)


def events(database: Database) -> list[str | None]:
    with database.session() as session:
        return list(session.scalars(select(GateEvent.org_id).order_by(GateEvent.id)))


@pytest.fixture
def acme(database: Database) -> str:
    return make_org(database, "acme")


def test_triggers_stamp_gate_changes_and_nothing_else(
    database: Database, other: Database, acme: str
) -> None:
    healthy = add_watch(other, acme, "healthy")
    failing = add_watch(other, acme, "failing", "error")
    first = stamp(database, healthy)
    assert first > 0

    def write(watch_id: str, **values: object) -> None:
        with other.transaction() as session:
            session.execute(update(Watch).where(Watch.id == watch_id).values(**values))

    # A routine check of an `ok` watch changes nothing the gate shows.
    write(healthy, last_checked_at=datetime.now(UTC), interval_minutes=5)
    assert stamp(database, healthy) == first
    # Its status does; and a failing watch's check time is shown, so it stamps too.
    write(healthy, drift_status="drifted")
    assert stamp(database, healthy) > first
    before = stamp(database, failing)
    write(failing, last_checked_at=datetime.now(UTC))
    assert stamp(database, failing) > before
    for column, value in (("name", "renamed"), ("failure_class", "dns"), ("incident_id", "i-1")):
        before = stamp(database, failing)
        write(failing, **{column: value})
        assert stamp(database, failing) > before, column

    assert events(database) == []
    with other.transaction() as session:
        incident = Incident(org_id=acme, watch_id=failing, status="open")
        session.add(incident)
    with other.transaction() as session:
        session.execute(update(Incident).values(status="acknowledged"))
        session.execute(update(Incident).values(ack_note="seen"))  # not a gate column
    agent = add_agent(other, acme, "bot", [healthy])
    with other.transaction() as session:
        session.execute(update(Agent).values(runtime_state="killed"))
        session.execute(update(Agent).values(runtime_note="why"))  # not a gate column
        session.execute(delete(AgentWatch).where(AgentWatch.agent_id == agent))
        session.execute(delete(Watch).where(Watch.id == healthy))
    # incident insert + status; agent insert, its binding, runtime state; binding and watch
    # deleted: each one event for the org (bindings find theirs through the agent).
    assert events(database) == [acme] * 7


def test_a_view_follows_every_change_made_elsewhere(
    database: Database, other: Database, acme: str
) -> None:
    ok_id = add_watch(other, acme, "stable")
    drifting = add_watch(other, acme, "drifting")
    agent_key = "deployer"
    add_agent(other, acme, agent_key, [ok_id, drifting, None])
    first = settled(database, acme)  # nothing changed: nothing read again
    assert first.watches[ok_id].drift_status == first.watches[drifting].drift_status == "ok"
    before = first.watches[drifting]
    agent = first.agent(agent_key)
    assert agent is not None and first.agent("deployer-slug") is agent
    gate, ids = first.agent_input(agent)
    assert ids == [ok_id, drifting] and gate.unresolved == ("ref-2",)

    # A check finds drift: status, incident and drift event in one transaction.
    with other.transaction() as session:
        event = DriftEvent(org_id=acme, watch_id=drifting, changes=b"", agent_actions=["pause"])
        session.add(event)
        session.flush()
        incident = Incident(org_id=acme, watch_id=drifting, status="open", drift_event_id=event.id)
        session.add(incident)
        session.flush()
        session.execute(
            update(Watch)
            .where(Watch.id == drifting)
            .values(drift_status="drifted", incident_id=incident.id)
        )
        incident_id = incident.id
    second = view(database, acme)
    state = second.watches[drifting]
    assert (state.drift_status, state.incident_id, state.incident_status) == (
        "drifted",
        incident_id,
        "open",
    )
    assert state.change_actions == ("pause",)
    assert first.watches[drifting] is before  # the view handed out before is unchanged

    with other.transaction() as session:
        session.execute(update(Incident).values(status="acknowledged"))
    assert view(database, acme).watches[drifting].incident_status == "acknowledged"

    with other.transaction() as session:
        session.execute(update(Agent).values(runtime_state="killed"))
    killed = view(database, acme).agent(agent_key)
    assert killed is not None and killed.runtime_state == "killed"

    added = add_watch(other, acme, "added", "never_run")
    assert view(database, acme).watches[added].drift_status == "never_run"

    with other.transaction() as session:
        session.execute(delete(Watch).where(Watch.id == ok_id))
    latest = view(database, acme)
    assert ok_id not in latest.watches
    rebound = latest.agent(agent_key)
    assert rebound is not None
    _, ids = latest.agent_input(rebound)
    assert ids == [drifting]  # the deleted watch's binding no longer resolves

    with other.transaction() as session:
        session.execute(delete(Agent))
    assert view(database, acme).agent(agent_key) is None


def test_orgs_are_apart_and_an_unchanged_org_is_not_read_again(
    database: Database, other: Database, acme: str
) -> None:
    globex = make_org(database, "globex")
    mine = add_watch(other, acme, "mine")
    theirs = add_watch(other, globex, "theirs")
    acme_view = settled(database, acme)
    globex_view = view(database, globex)
    assert theirs not in acme_view.watches and mine not in globex_view.watches

    with other.transaction() as session:
        session.execute(update(Watch).where(Watch.id == theirs).values(drift_status="error"))
    assert view(database, globex).watches[theirs].drift_status == "error"
    assert view(database, acme) is acme_view  # another org's change left this one as it was

    add_agent(other, globex, "their-agent", [theirs])  # an event for globex only
    assert view(database, acme) is acme_view
    assert view(database, globex).agent("their-agent") is not None

    with other.transaction() as session:
        session.execute(delete(Org).where(Org.id == globex))
    assert view(database, globex).watches == {}


def test_a_second_cache_of_the_same_store_agrees(
    database: Database, other: Database, acme: str
) -> None:
    """Two processes' caches (here two on one process) see the same committed state."""
    watch = add_watch(database, acme, "shared")
    mine = view(database, acme)
    theirs = view(other, acme)
    assert mine.watches[watch].drift_status == theirs.watches[watch].drift_status == "ok"
    with database.transaction() as session:
        session.execute(update(Watch).values(drift_status="disabled"))
    assert view(database, acme).watches[watch].drift_status == "disabled"
    assert view(other, acme).watches[watch].drift_status == "disabled"
    assert gate_cache(database) is not gate_cache(other)
    assert isinstance(gate_cache(database), GateCache)


def test_gate_events_are_pruned_after_a_day(database: Database, acme: str) -> None:
    from controller.gate.readmodel import prune_events

    add_agent(database, acme, "bot", [])
    with database.transaction() as session:
        session.execute(update(GateEvent).values(created_at=GateEvent.created_at - 90_000))
    add_agent(database, acme, "bot-2", [])
    assert prune_events(database) == 1
    with database.session() as session:
        assert session.scalar(select(func.count()).select_from(GateEvent)) == 1


def test_a_cache_left_unchecked_for_an_hour_starts_again(database: Database, acme: str) -> None:
    """Gate events are pruned after a day; a cache that has not looked for an hour may have
    missed some, so it reads its views again whole."""
    from controller.gate.readmodel import STALE_SECONDS

    add_watch(database, acme, "w")
    first = settled(database, acme)
    gate_cache(database).checked -= STALE_SECONDS + 1
    again = view(database, acme)
    assert again is not first and again.watches == first.watches


def ask(
    database: Database, org_id: str, at: datetime | None = None, **body: object
) -> tuple[int, dict[str, object]]:
    principal = Principal(org_id, "acme", "pro", frozenset(), "api_key", "key-1")
    request = PreflightRequest.model_validate(body)
    now = at or datetime.now(UTC)
    outcome = preflight(database, principal, request, now, time.perf_counter())
    answer = orjson.loads(orjson.dumps(outcome.answer()))  # rows come encoded (orjson fragments)
    PreflightResult.model_validate(answer)  # the shape the OpenAPI document publishes
    return answer_status(outcome.decision), answer


def decisions(database: Database) -> list[tuple[str, bool]]:
    with database.session() as session:
        rows = session.execute(
            select(PreflightDecision.id, PreflightDecision.allowed).order_by(PreflightDecision.id)
        )
        return [(row.id, row.allowed) for row in rows]


def test_a_preflight_records_only_on_a_current_view(
    database: Database, other: Database, acme: str
) -> None:
    """The preflight decides on the view it holds and records the decision in one statement
    that first confirms the view is current; when another process changed the store in
    between, nothing is recorded from the old view: the view is read again, the decision
    made again, and only that one is recorded."""
    watch = add_watch(other, acme, "charges")
    status, answer = ask(database, acme, watchIds=[watch])  # no view yet: read, then record
    assert (status, answer["allowed"]) == (200, True)
    settled(database, acme)  # on Postgres, once no other worker's transaction holds xmin back
    held = gate_cache(database).current

    status, answer = ask(database, acme, watchIds=[watch])
    assert answer["allowed"] is True
    assert gate_cache(database).current is held  # nothing changed: nothing read again

    with other.transaction() as session:
        session.execute(update(Watch).where(Watch.id == watch).values(drift_status="error"))
    status, answer = ask(database, acme, watchIds=[watch])
    assert answer["allowed"] is False
    assert answer["blocked"][0]["reasons"] == ["check_failed"]  # type: ignore[index]
    assert gate_cache(database).current is not held
    recorded = decisions(database)
    assert [allowed for _, allowed in recorded] == [True, True, False]
    assert recorded[-1][0] == answer["decisionId"]

    # An agent created elsewhere after the view was read is found, not a 404; an agent that
    # does not exist is a 404 on a current view, and records nothing.
    add_agent(other, acme, "billing-bot", [watch])
    status, answer = ask(database, acme, agentId="billing-bot")
    assert answer["agent"]["id"] == "billing-bot"  # type: ignore[index]
    with pytest.raises(NotFound):
        ask(database, acme, agentId="nobody")
    assert len(decisions(database)) == 4


def test_a_watchs_row_is_encoded_once_per_view_and_a_changed_row_never_reuses_it(
    database: Database, other: Database, acme: str
) -> None:
    """The answer and the decision record embed each blocked row's JSON; a row that shows its
    watch as it is, is encoded once per gate view and shared by later preflights; a waived
    row is encoded as it is; a changed watch gets new bytes."""
    watch = add_watch(other, acme, "charges", status="error")
    principal = Principal(acme, "acme", "pro", frozenset(), "api_key", "key-1")

    def run(**body: object) -> list[object]:
        request = PreflightRequest.model_validate(body)
        outcome = preflight(database, principal, request, datetime.now(UTC), time.perf_counter())
        return [*outcome.blocked, *outcome.ignored]

    # On Postgres a transaction open anywhere in the cluster (another test worker's) holds
    # `xmin` back, and the view reads this test's own writes again as changes (re-read more
    # often, never wrong): the row settles once every such transaction has ended.
    (first,) = run(watchIds=[watch])
    for _ in range(100):
        (second,) = run(watchIds=[watch])
        if second is first:
            break
        first = second
        time.sleep(0.05)
    assert second is first
    (waived,) = run(watchIds=[watch], ignore=[{"watchId": watch, "reason": "known"}])
    assert waived is not first and orjson.loads(orjson.dumps(waived))["ignoreReason"] == "known"
    with other.transaction() as session:
        session.execute(update(Watch).where(Watch.id == watch).values(drift_status="disabled"))
    (third,) = run(watchIds=[watch])
    assert third is not first
    assert orjson.loads(orjson.dumps(third))["reasons"] == ["disabled"]


@pytest.mark.skipif(not ON_POSTGRES, reason="Postgres' plan cache")
def test_postgres_plans_the_decision_insert_once(database: Database, acme: str) -> None:
    """psycopg prepares a statement after five runs; Postgres then reuses one generic plan
    unless a parameter changes the plan (a bound LIMIT did, so the statement was planned on
    every preflight). The gate's constants are written into the statement instead."""
    with database.transaction() as session:  # enough rows for the planner to care
        session.execute(
            insert(Watch),
            [
                {
                    "org_id": acme,
                    "name": f"api-{n}",
                    "watch_type": "openapi",
                    "url": f"https://api-{n}.example.com/openapi.json",
                }
                for n in range(2000)
            ],
        )
        session.execute(
            insert(GateEvent), [{"stamp": n, "org_id": acme, "created_at": 0} for n in range(2000)]
        )
    with autocommit_cursor(database) as cursor:
        cursor.execute("ANALYZE watches")
        cursor.execute("ANALYZE gate_events")
    statement = preflight_statements(database.engine.dialect).record_if_current
    values = {
        "id": "d-1",
        "org_id": acme,
        "actor": "test",
        "agent_key": None,
        "watch_count": 0,
        "allowed": True,
        "policy_blocked": False,
        "dry_run": False,
        "status_code": 200,
        "duration_ms": 0,
        "evaluated_at": datetime.now(UTC),
        "inputs": {},
        "result": {},
        "gate_low": 0,  # never current: nothing is inserted
    }
    with autocommit_cursor(database) as cursor:
        for _ in range(20):
            assert statement.execute(cursor, values).rowcount == 0
        cursor.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements "
            "WHERE statement LIKE 'INSERT INTO preflight_decisions%'"
        )
        generic, custom = cursor.fetchone()
    assert custom <= 5 < generic  # (10, 5) with psycopg's default prepare threshold


# -- staleness (issue 40, point 4) --------------------------------------------------------


def test_a_cached_allow_turns_into_a_stale_block_as_time_passes_without_any_write(
    database: Database, other: Database, acme: str
) -> None:
    """Checks stop (a dead controller): nothing is written, the view stays current, and yet
    once the last check is older than twice the interval plus the grace, the same view
    answers `check_failed:stale`. A check recorded after that (which stamps nothing for an
    `ok` watch) opens the gate again once the last checks are read again."""
    from controller.gate.readmodel import RECHECK_SECONDS

    watch = add_watch(other, acme, "charges")
    with other.transaction() as session:
        checked = session.scalar(select(Watch.last_checked_at).where(Watch.id == watch))
        assert checked is not None
    status, answer = ask(database, acme, checked, watchIds=[watch])
    assert answer["allowed"] is True
    settled(database, acme)
    held = gate_cache(database).current
    # Late (twice the 15-minute interval, not yet the grace): still allowed, nothing read.
    status, answer = ask(database, acme, checked + timedelta(minutes=32), watchIds=[watch])
    assert answer["allowed"] is True and gate_cache(database).current is held

    stale_at = checked + timedelta(minutes=32, seconds=1)
    status, answer = ask(database, acme, stale_at, watchIds=[watch])
    assert (status, answer["allowed"]) == (200, False)
    (row,) = answer["blocked"]  # type: ignore[misc]
    assert row["reasons"] == ["check_failed:stale"] and row["driftStatus"] == "ok"
    assert row["agentActions"] == ["check_controller"] and row["name"] == "charges"
    # The last checks were read again once, and still say stale: the next answers within
    # RECHECK_SECONDS decide on that read.
    rechecked = gate_cache(database).current[1][acme]
    assert rechecked.checks_read_at == stale_at
    status, answer = ask(database, acme, stale_at, watchIds=[watch])
    assert answer["allowed"] is False and gate_cache(database).current[1][acme] is rechecked
    # An agent bound to it is blocked too, and dryRun does not open it.
    add_agent(other, acme, "bot", [watch])
    status, answer = ask(database, acme, stale_at, agentId="bot", dryRun=True)
    assert answer["allowed"] is False

    # The controller is back: a check is recorded, the gate opens within RECHECK_SECONDS.
    later = stale_at + timedelta(seconds=RECHECK_SECONDS + 1)
    with other.transaction() as session:
        session.execute(update(Watch).where(Watch.id == watch).values(last_checked_at=later))
    status, answer = ask(database, acme, later, watchIds=[watch])
    assert answer["allowed"] is True
    # Every answer was recorded (ids order by time only to the millisecond).
    assert sorted(allowed for _, allowed in decisions(database)) == [False] * 3 + [True] * 3


def test_a_view_older_than_the_stale_limit_does_not_block_a_watch_checked_since(
    database: Database, other: Database, acme: str
) -> None:
    """A view read long ago holds an `ok` watch's last check as it was then; the watch has
    been checked since (no stamp): the answer reads the last checks again, not block."""
    watch = add_watch(other, acme, "charges")
    first = datetime.now(UTC)
    assert ask(database, acme, first, watchIds=[watch])[1]["allowed"] is True
    much_later = first + timedelta(hours=3)
    with other.transaction() as session:
        session.execute(update(Watch).where(Watch.id == watch).values(last_checked_at=much_later))
    assert ask(database, acme, much_later, watchIds=[watch])[1]["allowed"] is True


# -- who is blocked now (issue 43, point 7: the console's overview) -----------------------


def test_agents_now_answers_as_each_agents_preflight_and_records_nothing(
    database: Database, other: Database, acme: str
) -> None:
    """`agents_now` is the gate's own decision on the gate's own view, for every agent at
    once: the same allowed and policy block as a dry-run preflight of each, nothing recorded;
    and, as a preflight, it reads the last checks again before it believes staleness."""
    from controller.gate.service import agents_now

    charges = add_watch(other, acme, "charges")
    refunds = add_watch(other, acme, "refunds", status="drifted")
    with other.transaction() as session:
        incident = Incident(org_id=acme, watch_id=refunds, status="open", breaking_count=1)
        session.add(incident)
        session.flush()
        session.execute(update(Watch).where(Watch.id == refunds).values(incident_id=incident.id))
    add_agent(other, acme, "calm", [charges])
    add_agent(other, acme, "drifting", [charges, refunds])
    add_agent(other, acme, "dangling", [charges, None])
    killed = add_agent(other, acme, "killed", [charges])
    with other.transaction() as session:
        session.execute(update(Agent).where(Agent.id == killed).values(runtime_state="killed"))
    now = datetime.now(UTC)
    answers = {a.key: a for a in agents_now(database, acme, now)}
    assert set(answers) == {"calm", "drifting", "dangling", "killed"}
    assert decisions(database) == []  # a look, not a preflight: nothing recorded
    for key, answer in answers.items():
        _, asked = ask(database, acme, now, agentId=key, dryRun=True)
        assert answer.decision.allowed is asked["allowed"], key
        assert answer.decision.would_policy_block is asked["wouldPolicyBlock"], key
        assert [r.watch_id for r in answer.decision.blocked] == [
            r["watchId"]
            for r in asked["blocked"]  # type: ignore[attr-defined]
        ], key
    assert [k for k, a in sorted(answers.items()) if a.blocked] == [
        "dangling",
        "drifting",
        "killed",
    ]
    assert answers["dangling"].unresolved == ("ref-1",)
    assert answers["drifting"].watch_ids == (charges, refunds)
    assert answers["drifting"].decision.blocked[0].reasons == [
        "breaking_drift",
        "policy_block:block_new_runs",
    ]
    assert [a.key for a in agents_now(database, acme, now, {"calm"})] == ["calm"]

    # Hours later, the view still holds the old last check of `charges`, checked since (no
    # stamp for an `ok` watch): read again, not believed stale.
    much_later = now + timedelta(hours=3)
    with other.transaction() as session:
        session.execute(update(Watch).where(Watch.id == charges).values(last_checked_at=much_later))
    assert (
        next(a for a in agents_now(database, acme, much_later) if a.key == "calm").blocked is False
    )
