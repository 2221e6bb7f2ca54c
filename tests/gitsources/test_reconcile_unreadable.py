"""Every file reconcile reads, in `.driftgate/` and in the hosted `.driftguard/` beside it, is a
problem at its path when it cannot be read, in a real git repository (issue 40, point 2): the
revision stalls, and the agents, watches and their history stay as they were.

Before, a link, a directory or a submodule at `.driftguard/agents.yaml` was skipped in
silence and the revision pruned its agents and watches.

So is a file over `git_max_file_bytes`, or one that takes the revision over
`git_max_revision_bytes` (issue 31, points 4 and 7); a file the loader does not read is never
read, however large, and a revision refused as too large is validated again when the limit is
raised.
"""

from __future__ import annotations

import json
from typing import Any

import pygit2
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
from tests.factories import AGENTS, FILES, TEMPLATES, Make, run, set_state
from tests.gitrepos import RepoBuilder
from tests.gitsources.conftest import (
    HOSTED,
    ORDER_PROFILE,
    condition,
    profiles,
    snapshot,
    source_row,
)

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
    ".driftguard/agents.yaml": (HOSTED / "valid" / "plain-apis.yaml").read_text(),
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


# In `.driftgate/` alone, and over the limits (issue 31, points 4 and 7).

PROFILED = {**FILES, ".driftgate/profiles/order.yaml": ORDER_PROFILE}


@pytest.mark.parametrize(
    ("files", "modes", "where", "needle"),
    [
        (
            {".driftgate/agents.yaml": "../shared/agents.yaml"},
            {".driftgate/agents.yaml": FileMode.LINK},
            ".driftgate/agents.yaml:1:1",
            "cannot read: it is a symbolic link",
        ),
        (
            {".driftgate/watch-sets.yaml": SUBMODULE},
            {".driftgate/watch-sets.yaml": FileMode.COMMIT},
            ".driftgate/watch-sets.yaml:1:1",
            "it is a submodule",
        ),
        (
            {".driftgate/templates.yaml": None, ".driftgate/templates.yaml/a.yaml": TEMPLATES},
            {},
            ".driftgate/templates.yaml:1:1",
            "it is a directory, not a file",
        ),
        (
            {".driftgate/profiles/order.yaml": None, ".driftgate/profiles": "../shared-profiles"},
            {".driftgate/profiles": FileMode.LINK},
            ".driftgate/profiles:1:1",
            "symbolic link",
        ),
        (
            {".driftgate/agents.yaml": AGENTS + "# padding\n" * 61},
            {},
            ".driftgate/agents.yaml:1:1",
            "the file has 1,033 bytes (1 KiB), more than the limit of 1 KiB per file",
        ),
        (
            {".driftgate/profiles/zz.json": json.dumps({"id": "zz", "x": "z" * 400})},
            {},
            ".driftgate/profiles/zz.json:1:1",
            "would take more than 1.2 KiB in all (git_max_revision_bytes)",
        ),
    ],
    ids=["symlink", "submodule", "directory", "linked-profiles", "too-large", "over-total"],
)
def test_a_file_that_cannot_be_read_stalls_and_keeps_what_was_applied(
    repo: RepoBuilder,
    make_reconciler: Make,
    acme: OrgKey,
    database: Database,
    files: dict[str, str | None],
    modes: dict[str, FileMode],
    where: str,
    needle: str,
) -> None:
    good = repo.commit(PROFILED)
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url},
        git_max_file_bytes=1024,
        git_max_revision_bytes=1250,
    )
    assert run(reconciler, settings).result == "applied"
    before = snapshot(database), profiles(database)
    assert [agent[0] for agent in before[0]["agents"]] == ["billing-agent", "triage-bot"]
    bad = repo.commit(files, message="cannot be read", modes=modes)
    result = run(reconciler, settings)
    assert result.result == "stalled", result.as_dict()
    # Nothing pruned: the agents (and every other object) the source owned are still there.
    assert (snapshot(database), profiles(database)) == before
    row = source_row(database)
    assert row.last_applied_revision == good and row.last_attempted_revision == bad
    rendered = [f"{p['file']}:{p['line']}:{p['column']}: {p['message']}" for p in row.problems]
    assert any(line.startswith(where) and needle in line for line in rendered), rendered
    ready = condition(row, "Ready")
    assert ready["status"] == "False" and ready["reason"] == "ValidationFailed"
    assert where in ready["message"]
    assert condition(row, "Stalled")["status"] == "True"
    again = run(reconciler, settings)
    assert again.result == "stalled" and again.repeat  # not read again until a new revision
    removed = {path: None for path in files if path not in PROFILED}
    fixed = repo.commit({**removed, **PROFILED}, message="fix")
    assert run(reconciler, settings).result == "applied"
    assert source_row(database).last_applied_revision == fixed


def test_a_large_file_the_loader_does_not_read_is_never_read(
    repo: RepoBuilder,
    make_reconciler: Make,
    acme: OrgKey,
    database: Database,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from controller.sources import git as git_source

    repo.commit({**FILES, ".driftgate/backup.bin": b"\0" * 4096, ".driftgate/NOTES": "../x"})
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url}, git_max_file_bytes=1024
    )
    sizes: list[int] = []
    real_data = git_source._blob_data

    def recording_data(git: pygit2.Repository, item: pygit2.Object) -> bytes:
        data = real_data(git, item)
        sizes.append(len(data))
        return data

    monkeypatch.setattr(git_source, "_blob_data", recording_data)
    result = run(reconciler, settings)
    assert result.result == "applied", result.as_dict()
    assert sorted(sizes) == sorted(len(text.encode()) for text in FILES.values())


def test_a_revision_refused_as_too_large_is_validated_again_under_a_raised_limit(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    repo.commit(FILES)
    source = {"name": "fleet", "org": "acme", "url": repo.url}
    small, settings = make_reconciler(source, git_max_file_bytes=1024)
    assert run(small, settings).result == "applied"
    big = repo.commit({".driftgate/agents.yaml": AGENTS + "# padding\n" * 61})
    assert run(small, settings).result == "stalled"
    assert run(small, settings).repeat
    raised, settings = make_reconciler(source, git_max_file_bytes=2048)
    result = run(raised, settings)
    assert result.result == "applied", result.as_dict()
    assert source_row(database).last_applied_revision == big
