"""Which destinations an event reaches: the routing rule as a table, then `emit` fanning out
on the real store (tags, watch sets, environments, severities, event types, kinds, disabled
destinations), the grouping window per destination and the digest."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from controller.model.routing import Facts, Routing, is_digested, period_of, takes
from controller.store.models import Watch, WatchSet
from tests.destinations import fakes
from tests.destinations.conftest import NOW, World

POLICY = ("breaking", "warning")
PAYMENTS = Facts(
    "drift.detected",
    "breaking",
    watch=True,
    tags=("team:payments", "vendor:stripe"),
    watch_set="prod-apis",
    environment="production",
)
NO_WATCH = Facts("destination.failing")


@pytest.mark.parametrize(
    ("routing", "facts", "expected"),
    [
        (Routing(), PAYMENTS, True),
        (Routing(), Facts("drift.detected", "info", watch=True), False),  # org policy
        (Routing(severities=("info",)), Facts("drift.detected", "info", watch=True), True),
        (Routing(severities=("warning",)), PAYMENTS, False),
        (Routing(tags=("team:*",)), PAYMENTS, True),
        (Routing(tags=("team:search", "vendor:str*")), PAYMENTS, True),
        (Routing(tags=("team:search",)), PAYMENTS, False),
        (Routing(watch_sets=("prod-apis",)), PAYMENTS, True),
        (Routing(watch_sets=("staging-apis",)), PAYMENTS, False),
        (Routing(environments=("production",)), PAYMENTS, True),
        (Routing(environments=("staging",)), PAYMENTS, False),
        (Routing(events=("incident.open",)), PAYMENTS, False),
        (Routing(tags=("team:*",), environments=("staging",)), PAYMENTS, False),  # AND
        (Routing(tags=("team:search",), environments=("staging",)), NO_WATCH, True),
        (Routing(events=("drift.detected",)), NO_WATCH, False),
    ],
)
def test_the_routing_rule(routing: Routing, facts: Facts, expected: bool) -> None:
    assert takes(routing, facts, POLICY) is expected


def test_digest_periods_and_what_is_never_digested() -> None:
    at = NOW + timedelta(minutes=17, seconds=5)
    assert period_of("hourly", at) == (NOW, NOW + timedelta(hours=1))
    midnight = NOW.replace(hour=0)
    assert period_of("daily", at) == (midnight, midnight + timedelta(days=1))
    assert is_digested("hourly", "drift.detected", kind_digests=True)
    assert not is_digested("off", "drift.detected", kind_digests=True)
    assert not is_digested("hourly", "drift.detected", kind_digests=False)
    assert not is_digested("daily", "destination.test", kind_digests=True)


def hook(name: str, **routing: Any) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "webhook",
        "secrets": {"url": f"https://{name}.example.com/hook"},
        "routing": routing,
    }


def test_emit_fans_out_to_every_destination_whose_routing_takes_the_event(world: World) -> None:
    with world.database.transaction() as session:
        prod = WatchSet(org_id=world.org.org_id, name="prod-apis", environment="production")
        session.add(prod)
        session.flush()
        watch = session.get(Watch, world.watch_id)
        assert watch is not None
        watch.watch_set_id = prod.id
    ids = {
        "all": world.add(hook("all")),
        "team": world.add(hook("team", tags=["team:*"])),
        "search": world.add(hook("search", tags=["team:search"])),
        "staging": world.add(hook("staging", watchSets=["staging-apis"])),
        "prod": world.add(hook("prod", environments=["production"])),
        "info": world.add(hook("info", severities=["info"])),
        "failures": world.add(hook("failures", events=["drift.check_failed"])),
        "off": world.add({**hook("off"), "enabled": False}),
        "pager": world.add(
            {"name": "pager", "kind": "pagerduty", "secrets": {"routingKey": "K" * 32}}
        ),
    }
    names = {v: k for k, v in ids.items()}

    def reached(event: str, severity: str | None = None, *, watch: bool = True) -> set[str]:
        queued = world.emit(event, severity=severity, watch=watch)
        messages = {m.id: m for m in world.messages()}
        return {names[messages[i].destination_id or ""] for i in queued}

    assert reached("drift.detected", "breaking") == {"all", "team", "prod"}
    assert reached("drift.detected", "info") == {"info"}
    assert reached("drift.check_failed") == {"all", "team", "prod", "info", "failures"}
    assert reached("incident.open") == {"all", "team", "prod", "pager"}
    # About no watch: the watch filters do not apply.
    assert reached("destination.recovered", watch=False) == {
        "all",
        "team",
        "search",
        "staging",
        "prod",
        "info",
    }


def test_the_watch_webhook_and_the_default_destination_still_get_their_messages(
    world: World,
) -> None:
    from controller.store.models import NotificationDefaults

    with world.database.transaction() as session:
        watch = session.get(Watch, world.watch_id)
        assert watch is not None
        watch.webhook_url = "https://watch.example.com/hook"
        session.add(
            NotificationDefaults(
                org_id=world.org.org_id,
                destination_kind="webhook",
                destination_ciphertext=world.box.encrypt_json("https://org.example.com/hook"),
                destination_hint="https://org.example.com",
            )
        )
    world.add(hook("named"))
    world.emit("drift.detected", severity="breaking")
    assert sorted(m.destination_hint for m in world.messages()) == [
        "https://named.example.com",
        "https://org.example.com",
        "https://watch.example.com",
    ]


def test_each_destination_groups_repeats_over_its_own_window(world: World) -> None:
    fake, teams = fakes.discord(), fakes.teams()
    try:
        url = fake.url(fakes.DISCORD_PATH)
        grouped = world.add(
            {"name": "grouped", "kind": "discord", "secrets": {"url": url}, "groupSeconds": 600}
        )
        every = world.add(
            {"name": "every", "kind": "teams", "secrets": {"url": teams.url(fakes.TEAMS_PATH)}}
        )
        for minute in (0, 1):
            at = NOW + timedelta(minutes=minute)
            world.emit("drift.detected", {"incidentId": "i-1"}, severity="breaking", at=at)
            world.deliver(at=at)
        held = [m.status for m in world.messages(grouped)]
        assert held == ["delivered", "pending"]  # the repeat waits out the 10 minutes
        assert [m.status for m in world.messages(every)] == ["delivered", "delivered"]
        assert fake.invalid == teams.invalid == []
    finally:
        fake.stop()
        teams.stop()


def test_a_digest_collects_the_period_and_sends_one_message_when_it_ends(world: World) -> None:
    fake = fakes.discord()
    try:
        digest = world.add(
            {
                "name": "digest",
                "kind": "discord",
                "secrets": {"url": fake.url(fakes.DISCORD_PATH)},
                "digest": "hourly",
            }
        )
        for minute in (5, 20, 40):
            at = NOW + timedelta(minutes=minute)
            world.emit("drift.detected", severity="warning", at=at)
            world.deliver(at=at)
        assert fake.received == []
        (message,) = world.messages(digest)
        assert message.event_type == "digest" and message.payload["data"]["count"] == 3
        world.deliver(at=NOW + timedelta(hours=1))
        (sent,) = fake.received
        assert fake.invalid == []
        assert sent.body["content"] == "driftgate digest: 3 event(s)"
        assert sent.body["embeds"][0]["description"].count("Contract drift on payments") == 3
        # The next hour starts a digest of its own; a test goes out at once.
        world.emit("drift.detected", severity="warning", at=NOW + timedelta(minutes=70))
        assert len(world.messages(digest)) == 2
    finally:
        fake.stop()
