"""`driftgate mcp --print-config` names a command that works as installed (issue 34, point
10): `driftgate` when PATH finds this very executable, else its absolute path, and says which
on stderr; the printed command runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.toolserver.configs import installed_command

ENTRY = Path(sys.executable).parent / "driftgate"


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_command_is_driftgate_only_when_path_finds_this_one(tmp_path: Path) -> None:
    mine = executable(tmp_path / "venv" / "bin" / "driftgate")
    python = str(tmp_path / "venv" / "bin" / "python")
    other = executable(tmp_path / "elsewhere" / "driftgate")

    found = installed_command(str(mine), python, path=str(mine.parent))
    assert (found.command, found.args) == ("driftgate", ["mcp"])
    assert found.why.startswith(f"driftgate on PATH is this one ({mine})")

    alone = installed_command(str(mine), python, path=str(tmp_path / "empty"))
    assert (alone.command, alone.args) == (str(mine), ["mcp"])
    assert alone.why == "driftgate is not on PATH: the entry names this one by its absolute path"

    shadowed = installed_command(str(mine), python, path=str(other.parent))
    assert shadowed.command == str(mine)
    assert shadowed.why == f"driftgate on PATH is another one ({other}): the entry names this one"

    # `python -m cli`: the entry point beside the interpreter, or the module itself.
    module = str(tmp_path / "src" / "cli" / "__main__.py")
    assert installed_command(module, python, path="").command == str(mine)
    bare = installed_command(module, str(tmp_path / "bare" / "python"), path="")
    assert (bare.command, bare.args) == (str(tmp_path / "bare" / "python"), ["-m", "cli", "mcp"])


@pytest.mark.skipif(not ENTRY.is_file(), reason="driftgate is not installed beside python")
@pytest.mark.parametrize("on_path", [False, True])
def test_the_printed_command_runs(tmp_path: Path, on_path: bool) -> None:
    path = os.pathsep.join([str(ENTRY.parent)] if on_path else ["/usr/bin", "/bin"])
    printed = subprocess.run(
        [str(ENTRY), "mcp", "--print-config", "claude-code"],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": path},
        cwd=tmp_path,
        timeout=60,
        check=True,
    )
    entry = json.loads(printed.stdout)["mcpServers"]["driftgate"]
    assert entry["args"] == ["mcp"]
    if on_path:
        assert entry["command"] == "driftgate"
        assert "# command: driftgate on PATH is this one" in printed.stderr
    else:
        assert entry["command"] == str(ENTRY)
        assert "# command: driftgate is not on PATH: the entry names this one" in printed.stderr
    # What the client would start, with `version` instead of `mcp`, from another directory.
    ran = subprocess.run(
        [entry["command"], "version"],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": path},
        cwd=tmp_path,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("driftgate ")
