"""Split watch-set files (`.driftgate/watch-sets/*.yaml`) reconciled from a real git
repository into the real store: applied together, refused together."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from controller.gitsources import service as sources
from controller.model.gitops import describe_size
from controller.store.db import Database
from controller.store.models import Agent, Source, Watch, WatchSet
from tests.conftest import OrgKey
from tests.factories import AGENTS, TEMPLATES, WATCH_SETS, Make, run
from tests.gitrepos import RepoBuilder

PAYMENTS = """\
version: 1
watchSets:
  - name: payments
    environment: production
    watches:
      - name: adyen
        url: http://127.0.0.1:9/specs/adyen.json
        watchType: openapi
      - name: paypal
        url: http://127.0.0.1:9/specs/paypal.json
        watchType: openapi
"""

TOOLS = """\
version: 1
watchSets:
  - name: tools
    watches:
      - name: search-mcp
        url: http://127.0.0.1:9/search/mcp
        watchType: mcp
"""

SPLIT = {
    ".driftgate/agents.yaml": AGENTS.replace(
        "      - github-mcp\n    repoRef", "      - github-mcp\n      - adyen\n    repoRef"
    ),
    ".driftgate/templates.yaml": TEMPLATES,
    ".driftgate/watch-sets.yaml": WATCH_SETS,
    ".driftgate/watch-sets/payments.yaml": PAYMENTS,
    ".driftgate/watch-sets/tools.yaml": TOOLS,
}


def state(database: Database) -> dict[str, Any]:
    """Every watch, set and agent binding with where it was declared."""
    with database.session() as session:
        sets = {s.id: s.name for s in session.scalars(select(WatchSet))}
        return {
            "watches": {
                w.name: (w.id, w.managed_path, sets.get(w.watch_set_id or ""), w.url)
                for w in session.scalars(select(Watch))
            },
            "sets": {s.name: s.managed_path for s in session.scalars(select(WatchSet))},
            "bindings": {
                a.key: [(b.ref, b.watch_id) for b in a.bindings]
                for a in session.scalars(select(Agent))
            },
        }


def problems(database: Database) -> list[str]:
    with database.session() as session:
        row = session.get(Source, "fleet")
        assert row is not None
        return [f"{p['file']}:{p['line']}:{p['column']}: {p['message']}" for p in row.problems]


def test_several_watch_set_files_are_applied_as_one(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    repo.commit(SPLIT)
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    result = run(reconciler, settings)
    assert result.result == "applied", result.as_dict()
    first = state(database)
    assert {name: value[1:3] for name, value in first["watches"].items()} == {
        "stripe-api": (".driftgate/watch-sets.yaml", "production"),
        "github-mcp": (".driftgate/watch-sets.yaml", "production"),
        "adyen": (".driftgate/watch-sets/payments.yaml", "payments"),
        "paypal": (".driftgate/watch-sets/payments.yaml", "payments"),
        "search-mcp": (".driftgate/watch-sets/tools.yaml", "tools"),
    }
    assert first["sets"] == {
        "production": ".driftgate/watch-sets.yaml",
        "payments": ".driftgate/watch-sets/payments.yaml",
        "tools": ".driftgate/watch-sets/tools.yaml",
    }
    # An agent binds to a watch of a split file.
    billing = dict(first["bindings"]["billing-agent"])
    assert billing["adyen"] == first["watches"]["adyen"][0]
    assert run(reconciler, settings).result == "unchanged"

    # A watch moved to another file is updated in place (same id, its history stays).
    moved = PAYMENTS.replace(
        "      - name: paypal\n        url: http://127.0.0.1:9/specs/paypal.json\n"
        "        watchType: openapi\n",
        "",
    )
    tools = TOOLS + (
        "      - name: paypal\n        url: http://127.0.0.1:9/specs/paypal.json\n"
        "        watchType: openapi\n"
    )
    repo.commit(
        {".driftgate/watch-sets/payments.yaml": moved, ".driftgate/watch-sets/tools.yaml": tools}
    )
    result = run(reconciler, settings)
    assert result.result == "applied", result.as_dict()
    assert result.plan is not None and result.plan.as_dict()["update"] == {"watches": ["paypal"]}
    second = state(database)
    assert second["watches"]["paypal"][:3] == (
        first["watches"]["paypal"][0],
        ".driftgate/watch-sets/tools.yaml",
        "tools",
    )

    # Removing a file prunes what it declared, and only that.
    repo.commit({".driftgate/watch-sets/tools.yaml": None})
    result = run(reconciler, settings)
    assert result.result == "applied", result.as_dict()
    assert result.plan is not None
    assert result.plan.as_dict()["prune"] == {
        "watchSets": ["tools"],
        "watches": ["paypal", "search-mcp"],
    }
    assert set(state(database)["watches"]) == {"stripe-api", "github-mcp", "adyen"}


def test_a_watch_declared_in_two_files_is_refused_and_nothing_is_applied(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    good = repo.commit(SPLIT)
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    assert run(reconciler, settings).result == "applied"
    before = state(database)
    clash = (
        "version: 1\nwatchSets:\n  - name: more\n    watches:\n"
        "      - name: brand-new\n        url: http://127.0.0.1:9/new.json\n"
        "        watchType: openapi\n"
        "      - name: adyen\n        url: http://127.0.0.1:9/other.json\n"
        "        watchType: openapi\n"
    )
    bad = repo.commit(
        {
            ".driftgate/watch-sets/zz-more.yaml": clash,
            ".driftgate/watch-sets/payments.yaml": PAYMENTS.replace("environment: production", ""),
        }
    )
    result = run(reconciler, settings)
    assert result.result == "stalled", result.as_dict()
    assert [str(p) for p in result.problems] == [
        ".driftgate/watch-sets/zz-more.yaml:8:15: duplicate watch 'adyen' "
        "(first at .driftgate/watch-sets/payments.yaml:6)"
    ]
    assert problems(database) == [str(p) for p in result.problems]
    # Nothing of the revision was applied: not the new watch, not the other file's change.
    assert state(database) == before
    with database.session() as session:
        row = session.get(Source, "fleet")
        assert row is not None
        assert row.last_applied_revision == good and row.last_attempted_revision == bad
        # The console's file view opens the split file the problem names.
        shown = sources.source_file(
            session, settings, acme.org_id, "fleet", bad, ".driftgate/watch-sets/zz-more.yaml"
        )
        assert shown.lines[7] == "      - name: adyen" and not shown.note


def test_an_oversized_split_file_is_refused_and_the_revision_total_still_applies(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    good = repo.commit(SPLIT)
    source = {"name": "fleet", "org": "acme", "url": repo.url}
    reconciler, settings = make_reconciler(source, git_max_file_bytes=1024)
    assert run(reconciler, settings).result == "applied"
    before = state(database)
    padded = PAYMENTS.replace("name: paypal", "name: paypal-eu") + "# padding\n" * 120
    repo.commit({".driftgate/watch-sets/payments.yaml": padded})
    result = run(reconciler, settings)
    assert result.result == "stalled", result.as_dict()
    assert [str(p) for p in result.problems] == [
        f".driftgate/watch-sets/payments.yaml:1:1: the file has {len(padded):,} bytes "
        f"({describe_size(len(padded))}), more than the limit of 1 KiB per file "
        "(git_max_file_bytes); driftgate did not read it (split it, or raise the limit)"
    ]
    assert state(database) == before  # and paypal was not pruned: the file is not absent

    # Every file within the per-file limit, but all of them together past the revision's.
    fixed = repo.commit(
        {
            ".driftgate/watch-sets/payments.yaml": PAYMENTS,
            **{
                f".driftgate/watch-sets/part-{i}.yaml": TOOLS.replace("tools", f"t{i}").replace(
                    "search-mcp", f"search-{i}"
                )
                for i in range(8)
            },
        }
    )
    total = sum(len(text.encode()) for text in SPLIT.values()) + 8 * len(TOOLS)
    limited, settings = make_reconciler(
        source, git_max_file_bytes=1024, git_max_revision_bytes=total - 200
    )
    result = run(limited, settings)
    assert result.result == "stalled", result.as_dict()
    assert all("git_max_revision_bytes" in p.message for p in result.problems), result.problems
    assert all(p.file.startswith(".driftgate/watch-sets/") for p in result.problems)
    assert state(database) == before
    raised, settings = make_reconciler(source, git_max_file_bytes=1024)
    assert run(raised, settings).result == "applied"
    with database.session() as session:
        row = session.get(Source, "fleet")
        assert row is not None and row.last_applied_revision == fixed
    assert good != fixed
