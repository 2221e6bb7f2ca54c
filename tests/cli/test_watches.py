"""`driftgate watches` and `driftgate drift` against a live server (the app served on
127.0.0.1, a controller checking a loopback spec server): the first hour without curl."""

from __future__ import annotations

import json

from click.testing import Result

from controller.scheduler import Controller
from tests.cli.conftest import cli
from tests.conftest import OrgKey
from tests.servers import SpecServer, WsgiServer
from tests.specs import as_json, charges_spec


def test_a_watch_from_creation_to_drift_and_back_without_copying_ids(
    api_server: WsgiServer, server: SpecServer, controller: Controller, acme: OrgKey
) -> None:
    def run(*args: str) -> Result:
        result = cli(api_server.url, acme.key, *args)
        assert result.exit_code == 0, (args, result.output, result.stderr)
        return result

    spec = server.set("/charges.json", as_json(charges_spec()))
    created = run("watches", "create", "charges", spec, "--type", "openapi", "--tag", "team:pay")
    assert created.output.startswith("charges (") and "status never_run" in created.output
    listed = json.loads(run("watches", "list", "--format", "json").output)["watches"]
    assert [(w["name"], w["tags"]) for w in listed] == [("charges", ["team:pay"])]
    table = run("watches", "list", "--tag", "team:pay").output.splitlines()
    assert table[0].split() == ["ID", "NAME", "TYPE", "STATUS", "LAST", "CHECK", "URL"]
    assert table[1].split()[1:3] == ["charges", "openapi"]

    first = run("watches", "check", "charges", "--wait", "20").output
    assert "status ok" in first
    server.set("/charges.json", as_json(charges_spec(refunds=False)))
    second = json.loads(
        run("watches", "check", "charges", "--fail-on", "never", "--format", "json").output
    )
    assert second["status"] == "done" and second["watch"]["driftStatus"] == "drifted"

    shown = run("watches", "show", "charges").output
    assert "blocks preflight: breaking_drift" in shown and "last drift event" in shown
    events = json.loads(run("drift", "list", "--watch", "charges", "--format", "json").output)
    (event,) = events["events"]
    detail = run("drift", "show", event["id"]).output.splitlines()
    assert detail[0].startswith(f"drift event {event['id']} at ")
    assert any(line.strip().startswith("BREAKING") for line in detail[1:])
    assert any(line.strip().startswith("hint: ") for line in detail[1:])
    assert "hint: " in shown
    assert event["id"] in run("drift", "list").output

    accepted = run("watches", "baseline", "charges", "--reason", "new field is fine").output
    assert "status ok" in accepted
    assert "status disabled" in run("watches", "pause", "charges").output
    assert "status ok" in run("watches", "resume", "charges").output
    watch_id = listed[0]["id"]
    assert run("watches", "delete", watch_id).output == f"deleted watch {watch_id} ({watch_id})\n"
    gone = cli(api_server.url, acme.key, "watches", "show", "charges")
    assert gone.exit_code == 2
    assert gone.stderr == (
        "driftgate: error: no watch with id or name 'charges' in this org (HTTP 404)\n"
    )


def test_errors_are_one_line_and_exit_2(api_server: WsgiServer, acme: OrgKey) -> None:
    no_url = cli(None, acme.key, "watches", "list")
    assert (no_url.exit_code, no_url.stderr) == (
        2,
        "driftgate: error: no server URL: set DRIFTGATE_URL (or pass --url)\n",
    )
    wrong_key = cli(api_server.url, "dg_not_a_key", "drift", "list")
    assert wrong_key.exit_code == 2 and "(HTTP 401, invalid_api_key)" in wrong_key.stderr
    assert "dg_not_a_key" not in wrong_key.stderr
    refused = cli(api_server.url, acme.key, "watches", "create", "x", "https://x.example.com/v1")
    assert refused.exit_code == 2
    assert "cannot infer watchType from the URL" in refused.stderr
    assert "(HTTP 422, validation_error)" in refused.stderr
    down = cli("http://127.0.0.1:9", acme.key, "watches", "list")
    assert down.exit_code == 2 and down.stderr.startswith("driftgate: error: cannot reach ")
