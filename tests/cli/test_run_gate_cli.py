"""`driftgate agents` and `driftgate incidents` against a live server: the run gate from
drift to a killed agent and back without curl (a git source declaring a production-guard
agent with an approval rule, a controller checking a loopback spec server)."""

from __future__ import annotations

import json

from click.testing import Result

from controller.scheduler import Controller
from tests.cli.conftest import cli
from tests.conftest import OrgKey
from tests.factories import Make
from tests.gitrepos import RepoBuilder
from tests.servers import SpecServer, WsgiServer
from tests.specs import as_json, charges_spec

AGENTS = """\
version: 1
agents:
  - id: billing-agent
    environment: production
    policy: production-guard
    watches: [billing-api]
    approvals:
      - repository: acme/billing-agent
        branches: [main, "release/*"]
  - id: triage-bot
    policy: notify-only
    watches: [billing-api, nowhere]
"""


def watch_sets(url: str) -> str:
    return (
        "version: 1\nwatchSets:\n  - name: production\n    watches:\n"
        f"      - name: billing-api\n        url: {url}\n        watchType: openapi\n"
    )


def test_from_drift_to_a_killed_agent_and_back_without_curl(
    api_server: WsgiServer,
    server: SpecServer,
    controller: Controller,
    acme: OrgKey,
    repo: RepoBuilder,
    make_reconciler: Make,
) -> None:
    def run(*args: str, code: int = 0) -> Result:
        result = cli(api_server.url, acme.key, *args)
        assert result.exit_code == code, (args, result.output, result.stderr)
        return result

    spec = server.set("/billing.json", as_json(charges_spec()))
    repo.commit({".driftgate/agents.yaml": AGENTS, ".driftgate/watch-sets.yaml": watch_sets(spec)})
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    source = settings.source("fleet")
    assert source is not None and reconciler.reconcile(source).result == "applied"

    listed = run("agents", "list").output.splitlines()
    assert listed[0].split() == ["ID", "ENVIRONMENT", "POLICY", "RUNTIME", "WATCHES", "SOURCE"]
    assert listed[1].split() == [
        "billing-agent",
        "production",
        "production-guard",
        "running",
        "1",
        "fleet",
    ]
    assert listed[2].split() == [
        "triage-bot",
        "-",
        "notify-only",
        "running",
        "2",
        "(1",
        "unresolved)",
        "fleet",
    ]
    run("watches", "check", "billing-api")
    status = run("agents", "status", "billing-agent").output.splitlines()
    assert status[0] == (
        "billing-agent (production), policy production-guard: block_new_runs, kill_in_flight"
    )
    assert status[1] == "  runtime running"
    assert "  watch billing-api: ok, not blocking" in status
    assert "  ack approval rules: acme/billing-agent on main, release/*" in status
    assert run("incidents", "list").output.splitlines()[1:] == []
    triage = run("agents", "status", "triage-bot").output.splitlines()
    assert triage[0] == "triage-bot (no environment), policy notify-only: alerts only"
    assert "  watch nowhere: unresolved (no such watch in the org)" in triage

    # Breaking drift: an incident opens and production-guard kills the agent.
    server.set("/billing.json", as_json(charges_spec(refunds=False)))
    run("watches", "check", "billing-api", "--fail-on", "never")
    killed = run("agents", "status", "billing-agent").output.splitlines()
    assert killed[1].startswith("  runtime killed (breaking_drift) since ")
    assert killed[2].startswith("  preflight now: blocked (policy, HTTP 409)")
    incidents = json.loads(run("incidents", "list", "--format", "json").stdout)["incidents"]
    (incident,) = incidents
    assert (incident["watchName"], incident["status"]) == ("billing-api", "open")
    row = run("incidents", "list").output.splitlines()[1].split()
    assert [row[0], row[1], row[3], row[4]] == [incident["id"], "open", "billing-api", "1"]

    # The way back, refused first with what to do.
    refused = run("agents", "unblock", "billing-agent", code=2)
    assert refused.stderr == (
        "driftgate: error: agent billing-agent: its policy requires the 1 open incident of its "
        "watches to be acknowledged before it is unblocked; run `driftgate agents ack "
        "billing-agent --note TEXT --repository OWNER/NAME --branch BRANCH` (approval rules: "
        "acme/billing-agent on main, release/*) (HTTP 409, ack_required)\n"
    )
    no_rule = run("agents", "ack", "billing-agent", code=2)
    assert no_rule.stderr == (
        "driftgate: error: no remediation approval rule of agent 'billing-agent' accepts "
        "(no repository)@(no branch): rule acme/billing-agent on main, release/*: the "
        "repository does not match; pass --repository acme/billing-agent --branch main "
        "(HTTP 403, approval_refused)\n"
    )
    wrong_branch = run(
        "agents",
        "ack",
        "billing-agent",
        *("--repository", "acme/billing-agent", "--branch", "dev"),
        code=2,
    )
    assert "rule acme/billing-agent on main, release/*: the branch does not match" in (
        wrong_branch.stderr
    )
    # The watch's own command is the same decision (issue 40, point 3).
    around = run("incidents", "acknowledge", "billing-api", code=2)
    assert around.stderr == no_rule.stderr
    assert (
        json.loads(run("incidents", "list", "--format", "json").stdout)["incidents"][0]["status"]
        == "open"
    )
    acked = run(
        "agents",
        "ack",
        "billing-agent",
        *("--repository", "acme/billing-agent", "--branch", "release/2"),
        *("--note", "client migrated"),
    ).output.splitlines()
    assert acked[0] == (
        f"acknowledged 1 incident: {incident['id']} "
        "(approval rule acme/billing-agent on main, release/*)"
    )
    assert "  runtime running" in acked[2]
    assert acked[3] == "  preflight now: allowed"
    listed_acked = json.loads(run("incidents", "list", "--format", "json").stdout)["incidents"]
    assert [(i["status"], i["ackNote"]) for i in listed_acked] == [
        ("acknowledged", "client migrated")
    ]

    # Resolved by hand, named by its watch; history by status.
    resolved = run("incidents", "resolve", "billing-api", "--note", "done").output
    assert resolved.startswith(f"resolved incident {incident['id']} of billing-api: now resolved")
    assert run("incidents", "list").output.splitlines()[1:] == []
    history = run("incidents", "list", "--status", "resolved").output.splitlines()
    assert history[1].split()[:2] == [incident["id"], "resolved"]
    again = run("incidents", "acknowledge", incident["id"], code=2)
    assert again.stderr == (
        f"driftgate: error: incident {incident['id']} of billing-api is already resolved (manual)\n"
    )

    # Kill by hand and unblock: no incident is open, so nothing waits for an ack.
    manual = run("agents", "kill", "billing-agent", "--note", "rotating keys").output
    assert "  runtime killed (manual) since " in manual and ": rotating keys" in manual
    assert "  runtime running" in run("agents", "unblock", "billing-agent").output.splitlines()[1]
    missing = run("agents", "status", "nobody", code=2)
    assert "(HTTP 404" in missing.stderr
    unknown = run("incidents", "resolve", "nothing-here", code=2)
    assert unknown.stderr == (
        "driftgate: error: no incident, and no watch with id or name 'nothing-here', "
        "in this org (HTTP 404)\n"
    )
