"""The CLI at a terminal (issue 34, point 8): colour for severities and statuses on a real
pseudo-terminal, none when piped, with `NO_COLOR` or in a machine format, and colour that
changes nothing but colour; progress on stderr that erases itself; shell completion."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from cli import style
from cli.progress import progress
from tests.conftest import OrgKey
from tests.processes import DRIFTGATE, PATIENCE, started, wait_until
from tests.servers import WsgiServer

FIXTURES = Path(__file__).parent / "fixtures"
ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
RED, YELLOW, GREY = "\x1b[31m", "\x1b[33m", "\x1b[90m"


def on_terminal(args: list[str], env: dict[str, str] | None = None) -> str:
    """What a `driftgate` process writes to a terminal (stdout and stderr on one pty)."""
    primary, secondary = pty.openpty()
    chunks = []
    with started(
        [*DRIFTGATE, *args],
        stdin=subprocess.DEVNULL,
        stdout=secondary,
        stderr=secondary,
        env={**os.environ, "TERM": "xterm", **(env or {})},
    ) as process:
        os.close(secondary)
        try:
            while select.select([primary], [], [], PATIENCE)[0]:
                try:
                    chunk = os.read(primary, 65536)
                except OSError:  # the process closed the terminal (EIO)
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            else:
                raise AssertionError(f"silent for {PATIENCE:g} s: {b''.join(chunks)!r}")
        finally:
            os.close(primary)
        process.wait(timeout=PATIENCE)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def piped(args: list[str], env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [*DRIFTGATE, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "TERM": "xterm", **(env or {})},
        timeout=60,
    )
    return done.stdout + done.stderr


def test_a_diff_on_a_terminal_is_coloured_and_otherwise_plain() -> None:
    args = ["diff", str(FIXTURES / "shop-v1.yaml"), str(FIXTURES / "shop-v2.yaml")]
    coloured = on_terminal(args, {"NO_COLOR": ""})  # empty: not set, by no-color.org
    assert f"  {RED}\x1b[1mBREAKING\x1b[0m " in coloured
    assert f"\n{RED}\x1b[1mFAIL\x1b[0m (--fail-on breaking)\n" in coloured
    plain = piped(args)
    assert not ESCAPE.search(plain)
    assert ESCAPE.sub("", coloured) == plain  # colour changes nothing but colour
    assert not ESCAPE.search(on_terminal(args, {"NO_COLOR": "1"}))
    assert not ESCAPE.search(on_terminal([*args, "--format", "json"]))
    assert not ESCAPE.search(on_terminal([*args, "--format", "sarif"]))


def test_watch_statuses_are_coloured_in_aligned_columns(
    api_server: WsgiServer, acme: OrgKey
) -> None:
    for name in ("charges", "a-much-longer-watch-name"):
        created = httpx.post(
            f"{api_server.url}/api/watches",
            json={"name": name, "url": f"https://api.example.com/{name}/openapi.json"},
            headers=acme.headers,
            timeout=10,
        )
        assert created.status_code == 201, created.text
    env = {"DRIFTGATE_URL": api_server.url, "DRIFTGATE_API_KEY": acme.key}
    coloured = on_terminal(["watches", "list"], env)
    assert f"{GREY}never_run\x1b[0m" in coloured
    plain = piped(["watches", "list"], env)
    assert ESCAPE.sub("", coloured) == plain
    header = plain.splitlines()[0]
    assert all(line.index("https://") == header.index("URL") for line in plain.splitlines()[1:])
    listed = on_terminal(["watches", "list", "--format", "json"], env)
    assert not ESCAPE.search(listed) and json.loads(listed)["watches"]


def test_paint_and_counts() -> None:
    assert style.paint("drifted", on=False) == "drifted"
    assert style.paint("drifted", on=True) == "\x1b[31m\x1b[1mdrifted\x1b[0m"
    assert style.paint("warning ", "warning", on=True) == f"{YELLOW}warning \x1b[0m"
    assert style.paint("charges", on=True) == "charges"  # not a status: as it is
    shown = style.counts("2 breaking, 0 warning, 1 info", on=True)
    assert shown == "\x1b[31m\x1b[1m2 breaking\x1b[0m, 0 warning, \x1b[36m1 info\x1b[0m"
    assert (
        style.report_line("  WARNING  /pets: x", on=True) == f"  {YELLOW}WARNING\x1b[0m  /pets: x"
    )


class Terminal(io.StringIO):
    """A stream that says it is a terminal, and keeps what was written to it."""

    def isatty(self) -> bool:
        return True


def test_progress_draws_on_a_terminal_and_erases_itself() -> None:
    screen = Terminal()
    with progress("scanning big/", stream=screen, after=0, every=0.01) as line:
        wait_until(lambda: "scanning big/ (0 s)" in screen.getvalue())
        line.say("scanning big/: 12 files read")
        wait_until(lambda: "12 files read" in screen.getvalue())
    drawn = screen.getvalue()
    assert drawn.startswith("\rdriftgate: scanning big/ (0 s)")
    width = len("driftgate: scanning big/: 12 files read (0 s)")
    assert drawn.endswith("\r" + " " * width + "\r")  # erased: the output starts clean
    assert "\n" not in drawn and not ESCAPE.search(drawn)


def test_progress_is_silent_in_machine_formats_and_off_a_terminal() -> None:
    for stream, shown in ((Terminal(), False), (io.StringIO(), True)):
        with progress("diffing", shown=shown, stream=stream, after=0, every=0.01) as line:
            line.say("still diffing")
            assert "progress" not in {t.name for t in threading.enumerate()}  # no drawing
        assert stream.getvalue() == "", shown


def test_completion_scripts_and_a_completion_round_trip() -> None:
    bash = subprocess.run(
        [*DRIFTGATE, "completion", "bash"], capture_output=True, text=True, check=True
    ).stdout
    assert "_DRIFTGATE_COMPLETE=bash_complete" in bash
    assert "complete -o nosort -F _driftgate_completion driftgate" in bash
    zsh = piped(["completion", "zsh"])
    assert zsh.startswith("#compdef driftgate")
    assert "complete --no-files --command driftgate" in piped(["completion", "fish"])
    refused = subprocess.run([*DRIFTGATE, "completion", "tcsh"], capture_output=True, text=True)
    assert refused.returncode == 2 and "'tcsh' is not one of" in refused.stderr

    def complete(words: str, cword: int) -> list[str]:
        env = {
            **os.environ,
            "COMP_WORDS": words,
            "COMP_CWORD": str(cword),
            "_DRIFTGATE_COMPLETE": "bash_complete",
        }
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "cli"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        loaded = re.findall(r"^import time:.*\| *(\w+)[\w.]*$", done.stderr, re.MULTILINE)
        assert not {"sqlalchemy", "httpx", "alembic", "flask"} & set(loaded)
        return done.stdout.split()

    assert complete("driftgate wat", 1) == ["plain,watches"]
    assert complete("driftgate watches l", 2) == ["plain,list"]
    assert complete("driftgate diff --format m", 3) == ["plain,markdown"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completes_with_the_printed_script() -> None:
    entry = Path(sys.executable).parent / "driftgate"
    if not entry.is_file():
        pytest.skip("no driftgate entry point beside the interpreter (not installed)")
    script = subprocess.run(
        [str(entry), "completion", "bash"], capture_output=True, text=True, check=True
    ).stdout
    shell = (
        f"{script}\nCOMP_WORDS=(driftgate dr); COMP_CWORD=1\n"
        f'_driftgate_completion {entry}\necho "${{COMPREPLY[@]}}"\n'
    )
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["draftpr", "drift"], done.stderr
