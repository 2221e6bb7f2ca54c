"""`driftgate watches check` as a gate: the reason a check failed and the open changes are
printed, and `--fail-on` sets the exit code as `diff --fail-on` does (a live server on
127.0.0.1, a controller checking a loopback spec server)."""

from __future__ import annotations

import json

from click.testing import Result

from controller.scheduler import Controller
from tests.cli.conftest import cli
from tests.conftest import OrgKey
from tests.servers import SpecServer, WsgiServer
from tests.specs import as_json, charges_spec


def test_drift_fails_the_gate_at_breaking_and_shows_the_open_changes(
    api_server: WsgiServer,
    server: SpecServer,
    controller: Controller,
    acme: OrgKey,
) -> None:
    def check(*args: str) -> Result:
        return cli(api_server.url, acme.key, "watches", "check", "charges", *args)

    spec = server.set("/charges.json", as_json(charges_spec()))
    created = cli(api_server.url, acme.key, "watches", "create", "charges", spec)
    assert created.exit_code == 0, created.stderr
    first = check()
    assert first.exit_code == 0, first.stderr
    assert "status ok" in first.output and "last drift event" not in first.output

    # A new enum value in a response is a warning: the default gate (breaking) passes.
    server.set("/charges.json", as_json(charges_spec(status_enum=("paid", "failed", "held"))))
    warned = check()
    assert warned.exit_code == 0, warned.stderr
    assert "open changes: 0 breaking, 1 warning, 0 info" in warned.output
    assert any(line.strip().startswith("WARNING") for line in warned.output.splitlines())
    assert check("--fail-on", "info").exit_code == 1
    refused = check("--fail-on", "warning")
    assert refused.exit_code == 1
    assert refused.stderr == (
        "driftgate: check gate failed (--fail-on warning): charges has open changes: 1 warning\n"
    )
    assert check("--fail-on", "error").exit_code == 0

    server.set("/charges.json", as_json(charges_spec(refunds=False)))
    drifted = check()
    assert drifted.exit_code == 1
    lines = drifted.output.splitlines()
    assert "  blocks preflight: breaking_drift" in lines
    assert any(line.strip().startswith("BREAKING") for line in lines)
    assert "open changes: 1 breaking" in drifted.stderr
    assert check("--fail-on", "error").exit_code == 0
    assert check("--fail-on", "never").exit_code == 0
    # The machine format is the server's answer as it is; the exit code is the same gate.
    as_json_answer = check("--format", "json")
    assert as_json_answer.exit_code == 1
    assert json.loads(as_json_answer.stdout)["watch"]["driftStatus"] == "drifted"


def test_a_failed_check_prints_its_reason_and_fails_every_gate_but_never(
    api_server: WsgiServer,
    server: SpecServer,
    controller: Controller,
    acme: OrgKey,
) -> None:
    spec = server.set("/gone.json", as_json(charges_spec()))
    cli(api_server.url, acme.key, "watches", "create", "gone", spec, "--type", "openapi")
    del server.routes["/gone.json"]  # the vendor answers 404 from now on

    failed = cli(api_server.url, acme.key, "watches", "check", "gone")
    assert failed.exit_code == 1
    lines = failed.output.splitlines()
    assert "  blocks preflight: check_failed:http_error" in lines
    assert any(line.startswith("  last error: ") and "404" in line for line in lines)
    assert failed.stderr == (
        "driftgate: check gate failed (--fail-on breaking): "
        "the check of gone failed (check_failed:http_error)\n"
    )
    for gate, code in (("error", 1), ("warning", 1), ("never", 0)):
        result = cli(api_server.url, acme.key, "watches", "check", "gone", "--fail-on", gate)
        assert result.exit_code == code, (gate, result.output, result.stderr)


def test_a_gate_without_a_result_is_a_usage_error(api_server: WsgiServer, acme: OrgKey) -> None:
    result = cli(
        api_server.url, acme.key, "watches", "check", "x", "--wait", "0", "--fail-on", "info"
    )
    assert result.exit_code == 2
    assert "--fail-on needs the check's result: --wait 0 only queues it" in result.stderr
    typo = cli(api_server.url, acme.key, "watches", "check", "x", "--fail-on", "breaks")
    assert typo.exit_code == 2 and "'breaks' is not one of" in typo.stderr
