"""The timeline's pure part: the merge of several sources, keyset pages across them, the
filters a query string gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from controller.activity.timeline import (
    BadFilter,
    Cursor,
    Entry,
    Filters,
    decode_cursor,
    merge,
    parse_filters,
)

T0 = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def entry(key: str, seconds: int, kind: str = "drift") -> Entry:
    return Entry(at=T0 + timedelta(seconds=seconds), key=key, kind=kind, action="a", title=key)


def test_pages_across_sources_neither_repeat_nor_skip_entries_at_the_same_instant() -> None:
    audit = [entry("audit:000000000003", 5), entry("audit:000000000002", 5), entry("audit:1", 1)]
    drift = [entry("drift:b", 5), entry("drift:a", 3)]
    everything = sorted([*audit, *drift], key=lambda e: (e.at, e.key), reverse=True)
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        filters = Filters(limit=2, cursor=decode_cursor(cursor) if cursor else None)
        page = merge([audit, drift], filters)
        seen += [e.key for e in page.entries]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == [e.key for e in everything]


@pytest.mark.parametrize(
    ("cursor_key", "prefix", "bound"),
    [
        ("drift:b", "drift", "b"),  # the same source: ids below the cursor's
        ("drift:b", "audit", None),  # "audit:..." < "drift:b": all of them at that instant
        ("audit:000000000002", "drift", ""),  # "drift:..." > "audit:...": none of them
    ],
)
def test_the_cursor_bounds_each_source(cursor_key: str, prefix: str, bound: str | None) -> None:
    assert Cursor(T0, cursor_key).bound_for(prefix) == bound


def test_kinds_and_time_filter_the_merge() -> None:
    sources = [[entry("drift:a", 10), entry("drift:b", 1)], [entry("audit:1", 5, "baseline")]]
    only = merge(sources, Filters(kinds=("baseline",)))
    assert [e.key for e in only.entries] == ["audit:1"] and only.next_cursor is None
    window = merge(sources, Filters(since=T0 + timedelta(seconds=2)))
    assert [e.key for e in window.entries] == ["drift:a", "audit:1"]


@pytest.mark.parametrize(
    ("kinds", "obj", "since", "cursor", "limit", "named"),
    [
        (["nope"], None, None, None, None, "kind 'nope'"),
        ([], "planet:mars", None, None, None, "object 'planet:mars'"),
        ([], "watch:", None, None, None, "object 'watch:'"),
        ([], None, "last week", None, None, "since 'last week'"),
        ([], None, None, "123", None, "cursor '123'"),
        ([], None, None, None, "many", "limit 'many'"),
    ],
)
def test_filters_that_cannot_be_read_are_named(
    kinds: list[str],
    obj: str | None,
    since: str | None,
    cursor: str | None,
    limit: str | None,
    named: str,
) -> None:
    with pytest.raises(BadFilter, match=named):
        parse_filters(kinds, obj, since, None, cursor, limit)


def test_filters_read_dates_as_utc_and_cap_the_page() -> None:
    filters = parse_filters(["drift", "drift"], "source:fleet", "2026-11-26", None, None, "5000")
    assert filters.kinds == ("drift",) and filters.limit == 100
    assert (filters.object_type, filters.object_id) == ("source", "fleet")
    assert filters.since == datetime(2026, 11, 26, tzinfo=UTC)
