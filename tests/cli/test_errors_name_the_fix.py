"""Errors that name the fix: a mistyped command gets a suggestion, and a refusal for a plan or
a product says which one and the command that changes it (issue 34, point 9)."""

from __future__ import annotations

from click.testing import CliRunner

from cli.main import main
from tests.cli.conftest import cli
from tests.conftest import OrgKey
from tests.servers import WsgiServer


def test_a_mistyped_command_gets_a_suggestion() -> None:
    typo = CliRunner().invoke(main, ["watchs", "list"], env={"DRIFTGATE_CONFIG": None})
    assert typo.exit_code == 2
    assert "No such command 'watchs'. Did you mean 'watches'?" in typo.stderr
    far = CliRunner().invoke(main, ["xyzzy"], env={"DRIFTGATE_CONFIG": None})
    assert far.exit_code == 2
    assert "No such command 'xyzzy'." in far.stderr and "Did you mean" not in far.stderr


def test_a_product_that_is_off_names_the_command_that_enables_it(
    api_server: WsgiServer,
    acme: OrgKey,
) -> None:
    refused = cli(api_server.url, acme.key, "replay", "published")
    assert refused.exit_code == 2
    assert "`driftgate orgs enable-product acme replay_cloud`" in refused.stderr
    assert refused.stderr.rstrip().endswith("(HTTP 403, PRODUCT_REQUIRED: replay_cloud)")
