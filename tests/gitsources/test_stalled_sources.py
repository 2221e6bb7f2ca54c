"""The sources that do not reconcile now (`controller.gitsources.service.stalled_sources`, the
console's "Blocked now"): a revision that failed validation, a reconcile that fails, a source
not reconciled for twice its interval and a grace; never a suspended one or one that works.
Real repositories reconciled into the real store."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from controller.gitsources.service import stalled_sources
from controller.store.db import Database
from tests.conftest import OrgKey
from tests.factories import TEMPLATES, Make, run
from tests.gitrepos import RepoBuilder

BAD = "version: 1\nagents:\n  - id: bad-bot\n    polcy: notify-only\n    watches: []\n"


def test_stalled_failing_and_stale_sources_are_told_apart(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database, tmp_path: Path
) -> None:
    repo.commit({".driftgate/templates.yaml": TEMPLATES})
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url, "interval": 60},
        {"name": "gone", "org": "acme", "url": str(tmp_path / "missing.git")},
        {"name": "resting", "org": "acme", "url": repo.url, "suspend": True},
        {"name": "unborn", "org": "acme", "url": repo.url},
    )
    assert run(reconciler, settings, "fleet").result == "applied"
    assert run(reconciler, settings, "gone").result == "failed"
    assert run(reconciler, settings, "resting").result == "suspended"
    now = datetime.now(UTC)
    with database.session() as session:
        found = {s.name: s for s in stalled_sources(session, settings, acme.org_id, now)}
    # A source that works, one suspended on purpose, one never reconciled yet: not listed.
    assert set(found) == {"gone"}
    assert found["gone"].state == "failing" and "fetch failed" in found["gone"].message
    assert found["gone"].since is not None and found["gone"].since <= now

    # A bad revision stalls the source (its revision shortened as the pages show them).
    repo.commit({".driftgate/agents.yaml": BAD}, message="bad")
    assert run(reconciler, settings, "fleet").result == "stalled"
    with database.session() as session:
        found = {s.name: s for s in stalled_sources(session, settings, acme.org_id, now)}
    assert found["fleet"].state == "stalled"
    assert "unknown key 'polcy'" in found["fleet"].message
    assert re.search(r"revision [0-9a-f]{12}:", found["fleet"].message)
    assert not re.search(r"[0-9a-f]{40}", found["fleet"].message)

    # Fixed, then no run for longer than twice the interval and the grace: stale.
    repo.commit({".driftgate/agents.yaml": "version: 1\nagents: []\n"}, message="fixed")
    assert run(reconciler, settings, "fleet").result == "applied"
    for later, listed in ((now + timedelta(seconds=200), False), (now + timedelta(hours=1), True)):
        with database.session() as session:
            found = {s.name: s for s in stalled_sources(session, settings, acme.org_id, later)}
        assert ("fleet" in found) is listed, later
    assert found["fleet"].state == "stale" and "every 60 s" in found["fleet"].message
    assert "resting" not in found and "unborn" not in found
