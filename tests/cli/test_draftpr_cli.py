"""`driftgate draftpr` and `driftgate orgs products` against a live server (stub mode: no
GitHub App credentials, so pull requests are recorded with deterministic numbers)."""

from __future__ import annotations

import json
from collections.abc import Callable

from click.testing import Result

from controller.draftpr.changelog import stub_number
from controller.scheduler import Controller
from tests.cli.conftest import cli
from tests.conftest import OrgKey
from tests.servers import SpecServer, WsgiServer
from tests.specs import as_json, charges_spec


def test_a_drift_event_to_a_merged_stub_pull_request(
    api_server: WsgiServer,
    server: SpecServer,
    controller: Controller,
    make_org: Callable[..., OrgKey],
) -> None:
    who = make_org("acme", "pro", products=("draftpr_repo",))

    def run(*args: str) -> Result:
        result = cli(api_server.url, who.key, *args)
        assert result.exit_code == 0, (args, result.output, result.stderr)
        return result

    spec = server.set("/charges.json", as_json(charges_spec()))
    run("watches", "create", "charges", spec, "--type", "openapi")
    run("watches", "check", "charges", "--wait", "20")
    server.set("/charges.json", as_json(charges_spec(refunds=False)))
    run("watches", "check", "charges", "--wait", "20", "--fail-on", "never")
    (event,) = json.loads(run("drift", "list", "--format", "json").output)["events"]

    opened = json.loads(
        run(
            "draftpr",
            "open",
            "--watch",
            "charges",
            "--event",
            event["id"],
            "--repo",
            "acme/client",
            "--format",
            "json",
        ).output
    )
    assert opened["stub"] is True and opened["number"] == stub_number(event["id"], "acme/client")
    table = run("draftpr", "list").output.splitlines()
    assert table[0].split() == ["ID", "STATE", "REPOSITORY", "NUMBER", "URL"]
    assert table[1].split()[:3] == [opened["draftPrId"], "draft", "(stub)"]
    merged = run("draftpr", "merged", opened["draftPrId"]).output
    assert "merged" in merged and "incident resolved: yes" in merged
    assert "status ok" in run("watches", "show", "charges").output
    unknown = cli(api_server.url, who.key, "draftpr", "show", "nope")
    assert unknown.exit_code == 2 and "HTTP 404" in unknown.stderr


def test_the_product_off_is_an_error_exit(
    api_server: WsgiServer,
    server: SpecServer,
    controller: Controller,
    acme: OrgKey,
) -> None:
    spec = server.set("/charges.json", as_json(charges_spec()))
    for args in (
        ("watches", "create", "charges", spec),
        ("watches", "check", "charges", "--wait", "20"),
    ):
        assert cli(api_server.url, acme.key, *args).exit_code == 0
    server.set("/charges.json", as_json(charges_spec(refunds=False)))
    assert (
        cli(api_server.url, acme.key, "watches", "check", "charges", "--wait", "20").exit_code == 1
    )
    listed = cli(api_server.url, acme.key, "drift", "list", "--format", "json").output
    (event,) = json.loads(listed)["events"]
    result = cli(
        api_server.url,
        acme.key,
        *("draftpr", "open", "--watch", "charges", "--event", event["id"], "--repo", "a/b"),
    )
    assert result.exit_code == 2 and "(schemasync_disabled)" in result.stderr


def test_orgs_products_lists_each_product(
    make_org: Callable[..., OrgKey], settings: object
) -> None:
    from click.testing import CliRunner

    from cli.main import main

    make_org("paid", "team", products=("replay_cloud",))
    env = {
        "DRIFTGATE_DATABASE_URL": settings.database_url,
        "DRIFTGATE_DATA_DIR": str(settings.data_dir),
    }  # type: ignore[attr-defined]
    listed = CliRunner().invoke(main, ["orgs", "products", "paid"], env=env)
    assert listed.exit_code == 0, listed.output
    assert [line.split() for line in listed.output.splitlines()[:4]] == [
        ["PRODUCT", "STATE"],
        ["replay_cloud", "on"],
        ["draftpr_repo", "off"],
        ["toolmanifest_org", "off"],
    ]
