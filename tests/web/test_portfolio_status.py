"""`GET /api/portfolio/status` a page at a time: the pages cover every watch once, the counts
and the total are over every watch of the org, and a page never reads more than its rows."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import event

from controller.store.db import Database
from controller.store.models import Watch
from tests.conftest import OrgKey

STATUSES = ("ok", "drifted", "error", "never_run", "disabled")
T0 = datetime(2026, 11, 1, 12, 0, 0, 123457, tzinfo=UTC)
# Checked recently: a watch whose last check is older than twice its interval is stale, and
# its reasons say `check_failed:stale` too (issue 40, point 4).
CHECKED = datetime.now(UTC)


def seed(database: Database, org: OrgKey, count: int, prefix: str) -> dict[str, str]:
    """`count` watches in `org`, by id -> status; every third shares its creation instant with
    the one before (the cursor's id breaks the tie), and the names do not follow that order."""
    made: dict[str, str] = {}
    with database.transaction() as session:
        for i in range(count):
            status = STATUSES[i % len(STATUSES)]
            watch = Watch(
                org_id=org.org_id,
                name=f"{prefix}-{(i * 7) % count:03d}",
                watch_type="openapi",
                url=f"https://{prefix}{i}.example.com/openapi.json",
                drift_status=status,
                failure_class="timeout" if status == "error" else None,
                open_breaking=2 if status == "drifted" else 0,
                last_checked_at=None if status == "never_run" else CHECKED,
                created_at=T0 + timedelta(microseconds=i - i // 3),
                header_names=[],
            )
            session.add(watch)
            session.flush()
            made[watch.id] = status
    return made


def status(client: FlaskClient, who: OrgKey, query: str = "") -> Any:
    answer = client.get(f"/api/portfolio/status{query}", headers=who.headers)
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()


def walk(client: FlaskClient, who: OrgKey, limit: int) -> list[dict[str, Any]]:
    pages = []
    cursor = None
    while True:
        query = f"?limit={limit}" + (f"&cursor={cursor}" if cursor else "")
        page = status(client, who, query)
        pages.append(page)
        cursor = page["nextCursor"]
        if cursor is None:
            return pages


@pytest.fixture
def loaded_watches() -> Iterator[list[str]]:
    """The ids of the watch rows the ORM builds while the test runs."""
    loaded: list[str] = []

    def on_load(target: Watch, _context: Any) -> None:
        loaded.append(target.id)

    event.listen(Watch, "load", on_load)
    yield loaded
    event.remove(Watch, "load", on_load)


def test_pages_cover_every_watch_once_with_counts_over_all(
    client: FlaskClient, database: Database, make_org: Callable[..., OrgKey]
) -> None:
    acme, other = make_org("acme"), make_org("other")
    mine = seed(database, acme, 23, "acme")
    theirs = seed(database, other, 9, "other")
    pages = walk(client, acme, 5)
    assert [len(p["watches"]) for p in pages] == [5, 5, 5, 5, 3]
    seen = [w["id"] for p in pages for w in p["watches"]]
    assert sorted(seen) == sorted(mine) and len(set(seen)) == len(seen)
    assert not set(seen) & set(theirs)  # another org's watches never appear
    expected = {s: 0 for s in STATUSES} | dict(Counter(mine.values()))
    for page in pages:  # every page carries the figures of all the org's watches
        assert page["counts"] == expected and page["total"] == 23
    assert status(client, other)["total"] == 9
    # Oldest first, ties on the creation instant in id order.
    with database.session() as session:
        rows = session.query(Watch.id, Watch.created_at).filter(Watch.org_id == acme.org_id)
        order = [row.id for row in sorted(rows, key=lambda r: (r.created_at, r.id))]
    assert seen == order
    row = next(w for p in pages for w in p["watches"] if w["driftStatus"] == "error")
    assert row["reasons"] == ["check_failed:timeout"] and row["lastCheckedAt"].endswith("Z")
    drifted = next(w for p in pages for w in p["watches"] if w["driftStatus"] == "drifted")
    assert drifted["reasons"] == ["breaking_drift"] and drifted["openBreaking"] == 2


def test_default_and_largest_page(client: FlaskClient, database: Database, acme: OrgKey) -> None:
    seed(database, acme, 230, "w")
    first = status(client, acme)
    assert len(first["watches"]) == 50 and first["nextCursor"] is not None
    assert first["total"] == 230 and sum(first["counts"].values()) == 230
    largest = status(client, acme, "?limit=200")
    assert len(largest["watches"]) == 200
    rest = status(client, acme, f"?limit=200&cursor={largest['nextCursor']}")
    assert len(rest["watches"]) == 30 and rest["nextCursor"] is None


def test_a_page_reads_only_its_rows(
    client: FlaskClient, database: Database, acme: OrgKey, loaded_watches: list[str]
) -> None:
    seed(database, acme, 60, "w")
    loaded_watches.clear()
    page = status(client, acme, "?limit=10")
    assert len(page["watches"]) == 10 and page["total"] == 60
    assert len(loaded_watches) <= 11  # the page and the one that says there is more


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("?limit=0", "/limit"),
        ("?limit=201", "/limit"),
        ("?limit=ten", "/limit"),
        ("?cursor=!!notacursor", "/cursor"),
        ("?cursor=12.not-a-uuid", "/cursor"),
        ("?page=2", "/page"),
    ],
)
def test_a_bad_limit_or_cursor_is_400_with_the_envelope(
    client: FlaskClient, acme: OrgKey, query: str, path: str
) -> None:
    answer = client.get(f"/api/portfolio/status{query}", headers=acme.headers)
    assert answer.status_code == 400
    body = answer.get_json()
    assert body["error"] == "validation_error" and body["message"]
    assert [d["path"] for d in body["details"]] == [path]


def test_a_cursor_past_the_end_is_an_empty_last_page(
    client: FlaskClient, database: Database, acme: OrgKey
) -> None:
    seed(database, acme, 4, "w")
    beyond = "9999999999999999.ffffffff-ffff-ffff-ffff-ffffffffffff"
    page = status(client, acme, f"?cursor={beyond}")
    assert page["watches"] == [] and page["nextCursor"] is None and page["total"] == 4


def test_another_orgs_cursor_shows_only_the_callers_watches(
    client: FlaskClient, database: Database, make_org: Callable[..., OrgKey]
) -> None:
    acme, other = make_org("acme"), make_org("other")
    mine = seed(database, acme, 6, "acme")
    seed(database, other, 6, "other")
    theirs = status(client, other, "?limit=2")
    page = status(client, acme, f"?limit=50&cursor={theirs['nextCursor']}")
    assert {w["id"] for w in page["watches"]} <= set(mine)
    assert page["total"] == 6
