"""The fix `driftgate coverage` prints is complete: on a real git checkout with a remote MCP
server, a vendor SDK and a local (stdio) MCP server, running the printed commands and
committing what they write makes the gate pass on a fresh clone. A local server is covered
by an acknowledgement in `.driftgate/coverage.yaml` that holds for its exact command line."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pygit2
import pytest
from click.testing import Result

from tests.cli.conftest import cli
from tests.conftest import OrgKey
from tests.gitrepos import isolated_git_config
from tests.servers import WsgiServer

FS = "@modelcontextprotocol/server-filesystem"
PACKAGE_JSON = """{
  "name": "stripe-payments-demo",
  "version": "1.0.0",
  "dependencies": {
    "express": "^4.19.0",
    "stripe": "^14.0.0"
  }
}
"""


def mcp_json(fs_version: str) -> str:
    return json.dumps(
        {
            "mcpServers": {
                "billing": {"type": "http", "url": "https://mcp.billing.example/mcp"},
                "fs": {"command": "npx", "args": ["-y", f"{FS}@{fs_version}", "/srv/docs"]},
            }
        },
        indent=2,
    )


def commit(repo: pygit2.Repository, message: str) -> None:
    """Commit everything in the work tree (`git add -A && git commit`)."""
    repo.index.add_all()
    repo.index.write()
    tree = repo.index.write_tree()
    author = pygit2.Signature("Dev", "dev@example.com")
    parents = [] if repo.head_is_unborn else [repo.head.target]
    repo.create_commit("HEAD", author, author, message, tree, parents)


@pytest.fixture
def checkout(tmp_path: Path) -> pygit2.Repository:
    with isolated_git_config(tmp_path / "gitconfig"):
        root = tmp_path / "shop"
        repo = pygit2.init_repository(str(root))
        (root / ".mcp.json").write_text(mcp_json("2025.1.14"))
        (root / "package.json").write_text(PACKAGE_JSON)
        (root / ".gitignore").write_text("node_modules/\n")
        commit(repo, "the shop")
        return repo


def fix_of(result: Result) -> list[list[str]]:
    """The commands of the printed fix, as argv (without the leading `driftgate`)."""
    lines = result.output.splitlines()
    start = lines.index("to cover them, run:") + 1
    commands = []
    for line in lines[start:]:
        if not line.startswith("  driftgate "):
            break
        commands.append(shlex.split(line)[1:])
    return commands


def test_following_the_printed_fix_makes_coverage_green(
    api_server: WsgiServer,
    acme: OrgKey,
    checkout: pygit2.Repository,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = Path(checkout.workdir)
    monkeypatch.chdir(root)

    failing = cli(api_server.url, acme.key, "coverage", ".")
    assert failing.exit_code == 1, failing.output
    output = failing.output
    assert "3 contract(s) are not watched:" in output
    # The dependency's own line, not the package name's (line 2 mentions "stripe" too).
    assert "package.json:6  stripe  https://" in output
    assert f".mcp.json:7  fs  npx -y {FS}@2025.1.14 /srv/docs  (a local stdio server)" in output
    commands = fix_of(failing)
    assert commands == [
        [
            "watches",
            "create",
            "billing",
            "https://mcp.billing.example/mcp",
            "--type",
            "mcp",
        ],
        [
            "watches",
            "create",
            "stripe",
            "https://raw.githubusercontent.com/stripe/openapi/master/openapi/spec3.json",
            "--type",
            "openapi",  # a vendor's OpenAPI description, never `rest`
        ],
        ["scan", ".", "--acknowledge", "fs"],
    ]
    assert "commit .driftgate/coverage.yaml" in output

    for command in commands:
        ran = cli(api_server.url, acme.key, *command)
        assert ran.exit_code == 0, (command, ran.output)
    written = (root / ".driftgate" / "coverage.yaml").read_text()
    assert f"command: npx -y {FS}@2025.1.14 /srv/docs" in written
    with isolated_git_config(tmp_path / "gitconfig"):
        commit(checkout, "cover the contracts")
        # CI runs on a fresh clone: what the fix wrote is committed, not only on disk.
        clone = pygit2.clone_repository(str(root), str(tmp_path / "ci"))
    monkeypatch.chdir(clone.workdir)

    green = cli(api_server.url, acme.key, "coverage", ".")
    assert green.exit_code == 0, green.output
    assert green.output == (
        "covered: every contract found is watched "
        "(1 local server(s) acknowledged in .driftgate/coverage.yaml)\n"
    )
    answer = json.loads(cli(api_server.url, acme.key, "coverage", ".", "--format", "json").output)
    assert [c["name"] for c in answer["acknowledged"]] == ["fs"]
    assert sorted(c["name"] for c in answer["watched"]) == ["billing", "stripe"]
    stripe = next(c for c in answer["watched"] if c["name"] == "stripe")
    assert stripe["watchType"] == "openapi" and stripe["source"]["line"] == 6


def test_an_acknowledgement_holds_for_its_command_line_only(
    api_server: WsgiServer,
    acme: OrgKey,
    checkout: pygit2.Repository,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = Path(checkout.workdir)
    monkeypatch.chdir(root)
    (root / "package.json").unlink()
    servers = {
        "fs": {"command": "npx", "args": ["-y", f"{FS}@1.0.0", "/srv/docs"]},
        "billing": {"command": "uvx", "args": ["billing-mcp"]},
    }
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": servers}, indent=2))

    acked = cli(
        None, None, "scan", ".", "--acknowledge", "fs", "--reason", "reviewed on every upgrade"
    )
    assert acked.exit_code == 0, acked.output
    assert acked.output.startswith(f"acknowledged: fs (npx -y {FS}@1.0.0 /srv/docs)\n")
    # billing floats (no version): acknowledging it says what that means.
    floating = cli(None, None, "scan", ".", "--acknowledge", "billing")
    assert "note: billing runs the newest billing-mcp" in floating.output
    again = cli(None, None, "scan", ".", "--acknowledge", "fs")
    assert again.output.startswith("already acknowledged: fs")
    text = (root / ".driftgate" / "coverage.yaml").read_text()
    assert text.count("- name:") == 2 and "reason: reviewed on every upgrade" in text
    assert cli(api_server.url, acme.key, "coverage", ".").exit_code == 0

    # A new version is a new contract: the gate fails until it is acknowledged again.
    (root / ".mcp.json").write_text(
        (root / ".mcp.json").read_text().replace(f"{FS}@1.0.0", f"{FS}@2.0.0")
    )
    bumped = cli(api_server.url, acme.key, "coverage", ".")
    assert bumped.exit_code == 1, bumped.output
    assert fix_of(bumped) == [["scan", ".", "--acknowledge", "fs"]]
    github = cli(api_server.url, acme.key, "coverage", ".", "--format", "github")
    assert github.output.startswith(
        "::error file=.mcp.json,line=3::fs (npx -y "
        f"{FS}@2.0.0 /srv/docs) is a local stdio server that is not acknowledged"
    )
    renewed = cli(None, None, "scan", ".", "--acknowledge", "fs")
    assert renewed.exit_code == 0
    text = (root / ".driftgate" / "coverage.yaml").read_text()
    assert f"{FS}@2.0.0" in text and f"{FS}@1.0.0" not in text  # the old one is replaced
    assert cli(api_server.url, acme.key, "coverage", ".").exit_code == 0

    unknown = cli(None, None, "scan", ".", "--acknowledge", "nope")
    assert unknown.exit_code == 2
    assert "no local (stdio) MCP server named nope in . (the local servers found: billing, fs)" in (
        unknown.stderr
    )

    # A file that cannot be read stops the gate with its line (exit 2), never a guess.
    (root / ".driftgate" / "coverage.yaml").write_text(
        "version: 1\nacknowledged:\n  - name: fs\n    comand: npx\n"
    )
    broken = cli(api_server.url, acme.key, "coverage", ".")
    assert broken.exit_code == 2, broken.output
    assert broken.stderr == (
        "driftgate: error: .driftgate/coverage.yaml:3: /acknowledged/0/command: Field required; "
        ".driftgate/coverage.yaml:4: /acknowledged/0/comand: unknown key (known: name, command, "
        "reason) (HTTP 422, config_invalid)\n"
    )
    refused = cli(None, None, "scan", ".", "--acknowledge", "fs")
    assert refused.exit_code == 2 and "fix or remove the file first" in refused.stderr
