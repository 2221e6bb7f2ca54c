"""Reconcile of the hosted `.driftguard/agents.yaml` beside `.driftgate/`, in a real git
repository: its agents and inline watches are applied as driftgate's own."""

from __future__ import annotations

from sqlalchemy import select

from controller.store.db import Database
from controller.store.models import Agent, Watch
from tests.conftest import OrgKey
from tests.factories import Make, run
from tests.gitrepos import RepoBuilder
from tests.gitsources.conftest import HOSTED

OURS = """\
version: 1
watchSets:
  - name: prod
    watches:
      - {name: ledger-spec, url: "https://ledger.acme.test/openapi.json", watchType: openapi}
"""


def test_the_hosted_file_is_applied_beside_driftgates_own(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    repo.commit(
        {
            ".driftgate/watch-sets.yaml": OURS,
            ".driftguard/agents.yaml": (HOSTED / "valid" / "plain-apis.yaml").read_text(),
            ".driftguard/gates.yaml": "not: [driftgate's",  # the hosted harness's: not read
        }
    )
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    result = run(reconciler, settings)
    assert result.result == "applied", result.as_dict()
    with database.session() as session:
        watches = {w.name: w for w in session.scalars(select(Watch))}
        # the openapi URL is the watch set's watch; the api one is a new rest watch
        assert sorted(watches) == ["ledger-spec", "ledger.acme.test/v2/invoices"]
        assert watches["ledger.acme.test/v2/invoices"].watch_type == "rest"
        assert watches["ledger.acme.test/v2/invoices"].managed_path == ".driftguard/agents.yaml"
        agents = {a.key: a for a in session.scalars(select(Agent))}
        assert agents["invoice-sync"].policy == "notify-only"  # dev-flexible
        assert agents["payout-bot"].policy == "hold-and-ask"
        assert agents["payout-bot"].policy_rules is not None
        assert agents["payout-bot"].policy_rules["require_ack_to_unblock"] is True
        assert [b.watch_id for b in agents["payout-bot"].bindings] == [watches["ledger-spec"].id]


def test_an_a2a_card_watch_is_declared_and_a_bad_hosted_file_stalls(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    card = (HOSTED / "valid" / "card-and-tools.yaml").read_text()
    repo.commit({".driftguard/agents.yaml": card})
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    assert run(reconciler, settings).result == "applied"
    with database.session() as session:
        kinds = {w.name: w.watch_type for w in session.scalars(select(Watch))}
    assert kinds == {
        "triage.acme.test/.well-known/agent.json": "a2a_card",
        "helpdesk-mcp": "mcp",
    }
    repo.commit({".driftguard/agents.yaml": card.replace("org: acme", "org: globex")})
    stalled = run(reconciler, settings)
    assert stalled.result == "stalled"
    assert [str(p) for p in stalled.problems] == [
        ".driftguard/agents.yaml:3:6: org 'globex' is not the org this source applies to; "
        "fix it or remove the key (the source's org decides)"
    ]
    with database.session() as session:  # nothing changed
        assert len(session.scalars(select(Watch)).all()) == 2
