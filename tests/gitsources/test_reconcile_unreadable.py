"""Every file reconcile reads, in `.driftgate/` and in the hosted `.driftguard/` beside it, is a
problem at its path when it cannot be read, in a real git repository (issue 40, point 2): the
revision stalls, and the agents, watches and their history stay as they were.

Before, a link, a directory or a submodule at `.driftguard/agents.yaml` was skipped in
silence and the revision pruned its agents and watches.
"""

from __future__ import annotations

from typing import Any

import pytest
from pygit2.enums import FileMode
from sqlalchemy import func, select

from controller.store.db import Database
from controller.store.models import (
    Agent,
    Dashboard,
    DriftEvent,
    Incident,
    IngressProfile,
    Source,
    Watch,
)
from tests.conftest import OrgKey
from tests.factories import FILES, Make, run, set_state
from tests.gitrepos import RepoBuilder
from tests.gitsources.test_reconcile import ORDER_PROFILE
from tests.gitsources.test_reconcile_hosted import FIXTURES

SUBMODULE = "0123456789abcdef0123456789abcdef01234567"
LEDGER = """\
version: 1
watchSets:
  - name: ledger
    watches:
      - {name: ledger-spec, url: "https://ledger.acme.test/openapi.json", watchType: openapi}
"""
DASHBOARDS = """\
version: 1
dashboards:
  - name: Billing agents
    panels: [health, incidents]
"""
GOOD = {
    **FILES,
    ".driftgate/dashboards.yaml": DASHBOARDS,
    ".driftgate/watch-sets/ledger.yaml": LEDGER,
    ".driftgate/profiles/order.yaml": ORDER_PROFILE,
    ".driftguard/agents.yaml": (FIXTURES / "valid" / "plain-apis.yaml").read_text(),
}
LIMIT = 4096  # git_max_file_bytes: every good file is well within it

# How a path is made unreadable: what to commit there (None: a directory), its mode, and the
# words its problem must have.
KINDS: dict[str, tuple[Any, FileMode | None, str]] = {
    "symlink": ("../elsewhere.yaml", FileMode.LINK, "it is a symbolic link"),
    "directory": (None, None, "it is a directory, not a file"),
    "gitlink": (SUBMODULE, FileMode.COMMIT, "it is a submodule"),
    "not-utf8": (b"version: 1\nagents: []\n# \xff\xfe\n", None, "not UTF-8"),
    "too-large": ("version: 1\n" + "#" * LIMIT, None, "more than the limit of 4 KiB per file"),
}


def state(database: Database) -> dict[str, Any]:
    """What a revision may change or prune, and the history that goes with a pruned watch."""
    with database.session() as session:
        count = {
            table.__name__: session.scalar(select(func.count()).select_from(table))
            for table in (DriftEvent, Incident)
        }
        return {
            **count,
            "watches": sorted(
                (w.id, w.name, w.url, w.drift_status, w.incident_id)
                for w in session.scalars(select(Watch))
            ),
            "agents": sorted(
                (a.key, a.policy, tuple(sorted((b.ref, b.watch_id) for b in a.bindings)))
                for a in session.scalars(select(Agent))
            ),
            "dashboards": sorted(d.name for d in session.scalars(select(Dashboard))),
            "profiles": sorted(p.profile_id for p in session.scalars(select(IngressProfile))),
        }


def history(database: Database) -> None:
    """Give every watch a drift event and an open incident, as checks would."""
    with database.session() as session:
        watches = [(w.id, w.org_id) for w in session.scalars(select(Watch))]
    for watch_id, org_id in watches:
        set_state(database, watch_id, "breaking", incident="open")
        with database.transaction() as session:
            session.add(DriftEvent(org_id=org_id, watch_id=watch_id, changes=b"x"))


@pytest.mark.parametrize(
    "path",
    [
        ".driftguard/agents.yaml",
        ".driftgate/agents.yaml",
        ".driftgate/templates.yaml",
        ".driftgate/watch-sets.yaml",
        ".driftgate/dashboards.yaml",
        ".driftgate/watch-sets/ledger.yaml",
        ".driftgate/profiles/order.yaml",
    ],
)
def test_a_file_that_cannot_be_read_stalls_in_either_directory_and_prunes_nothing(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database, path: str
) -> None:
    good = repo.commit(GOOD)
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url}, git_max_file_bytes=LIMIT
    )
    assert run(reconciler, settings).result == "applied"
    history(database)
    before = state(database)
    assert {"invoice-sync", "payout-bot", "billing-agent"} <= {a[0] for a in before["agents"]}
    assert before["DriftEvent"] == before["Incident"] == len(before["watches"]) > 0
    assert before["dashboards"] and before["profiles"]
    inside: dict[str, str] = {}  # what a directory at `path` holds, removed after
    for kind, (content, mode, needle) in KINDS.items():
        if kind in ("not-utf8", "too-large") and not path.endswith(".yaml"):
            continue
        files: dict[str, Any] = {**dict.fromkeys(inside), path: content}
        if content is None:
            inside = {f"{path}/a.yaml": "version: 1\n"}
            files.update(inside)
        else:
            inside = {}
        bad = repo.commit(files, kind, modes={path: mode} if mode else None)
        result = run(reconciler, settings)
        assert result.result == "stalled", (kind, result.as_dict())
        lines = [str(problem) for problem in result.problems]
        assert any(line.startswith(f"{path}:") and needle in line for line in lines), lines
        assert state(database) == before, kind  # nothing changed, nothing pruned
        with database.session() as session:
            row = session.get_one(Source, "fleet")
        assert row.last_applied_revision == good and row.last_attempted_revision == bad
        stalled = next(c for c in row.conditions if c["type"] == "Stalled")
        ready = next(c for c in row.conditions if c["type"] == "Ready")
        assert stalled["status"] == "True" and ready["status"] == "False", row.conditions
        assert stalled["reason"] == ready["reason"] == "ValidationFailed"
        # The path, why, and what to do about it.
        assert f": {path}:" in stalled["message"] and needle in stalled["message"]
        assert any(
            word in stalled["message"] for word in ("commit", "replace", "save it", "split it")
        )
    fixed = repo.commit({**dict.fromkeys(inside), **GOOD}, "fix")
    assert run(reconciler, settings).result == "applied"
    assert state(database) == before
    with database.session() as session:
        assert session.get_one(Source, "fleet").last_applied_revision == fixed
