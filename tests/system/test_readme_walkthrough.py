"""README.md's offline walkthrough, run as written: its commands in order, in a scratch copy of
the clone, against a real `driftgate up` and the demo's vendor simulator on 127.0.0.1; the test
fails when a line the README shows no longer holds.

The README marks what runs with HTML comments (the convention is written in the comment that
opens the walkthrough, `<!-- walkthrough: begin`): `start NAME` and `stop NAME` for the
commands that keep a shell of their own (the simulator, the server), `run` for a block of
commands and the output they show. Two things differ from a person's run, both said in that
comment: the fixed ports 8080 and 8090 become free ones (in the README's text and in the
scratch copy's `examples/`), and `make run` becomes the `driftgate up` it runs (the test
checks that the Makefile still says so), since the scratch copy shares this checkout's venv.
"""

from __future__ import annotations

import os
import re
import resource
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pygit2
import pytest

from tests.gitrepos import isolated_git_config
from tests.processes import free_port, kill_group

# Real processes end to end: left out of `make check`, run by `make test`.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MARKER = re.compile(r"<!-- walkthrough: (begin|end|start|stop|run)\b(?: (\w+))?")
# What a shown line's wildcards stand for (the README's comment lists them).
WILDCARDS = re.compile(
    r"(?P<uuid>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
    r"|(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d))"
    r"|(?P<ms>\b\d+ ms\b)"
    r"|(?P<hex>\b[0-9a-f]{7,40}\b)"
    r"|(?P<any>\.\.\.)"
    r"|(?P<space>[ \t]+)"
)
PATTERNS = {
    "uuid": r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    "time": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)",
    "ms": r"\d+ ms",
    "hex": r"[0-9a-f]{7,40}",
    "any": r".*?",
    "space": r"[ \t]+",
}
COMMAND_TIMEOUT = 180  # `preflight --wait 120` may wait that long on a slow machine
START_TIMEOUT = 120
STOP_TIMEOUT = 60


@dataclass
class Command:
    line: int  # in README.md
    text: str
    shown: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0, or N when the command's comment ends in `exit N`."""
        found = re.search(r"(?:^|\s)#.*\bexit (\d+)$", self.text, re.MULTILINE)
        return int(found.group(1)) if found else 0


@dataclass
class Step:
    action: str  # start, stop or run
    name: str
    commands: list[Command]


def walkthrough(text: str) -> list[Step]:
    """The marked steps between `walkthrough: begin` and `walkthrough: end`, in order."""
    lines = text.splitlines()
    steps: list[Step] = []
    inside = False
    pending: tuple[str, str] | None = None
    number = 0
    while number < len(lines):
        line = lines[number]
        marker = MARKER.search(line)
        if marker:
            action, name = marker.groups()
            where = f"README.md:{number + 1}"
            assert pending is None, f"{where}: a marker while the one before waits for its block"
            assert inside or action == "begin", f"{where}: a marker outside the walkthrough"
            assert name or action not in ("start", "stop"), f"{where}: {action} without a NAME"
            if action in ("begin", "end"):
                assert inside == (action == "end"), f"{where}: {action} twice"
                inside = action == "begin"
            elif action == "stop":
                steps.append(Step("stop", name or "", []))
            else:
                pending = (action, name or "")
        elif pending and line.startswith("```"):
            end = next(i for i in range(number + 1, len(lines)) if lines[i].startswith("```"))
            steps.append(Step(pending[0], pending[1], _commands(lines, number + 1, end)))
            pending, number = None, end
        number += 1
    assert not inside and pending is None, "README.md: the walkthrough is not closed"
    return steps


def _commands(lines: list[str], start: int, end: int) -> list[Command]:
    commands: list[Command] = []
    number = start
    while number < end:
        line = lines[number]
        assert line.startswith("$ "), f"README.md:{number + 1}: output before any `$ ` command"
        command = Command(number + 1, line[2:])
        while _goes_on(command.text):
            number += 1
            command.text += "\n" + lines[number]
        number += 1
        while number < end and not lines[number].startswith("$ "):
            if lines[number].strip() != "...":
                command.shown.append(lines[number].rstrip())
            number += 1
        commands.append(command)
    return commands


def _goes_on(command: str) -> bool:
    if command.endswith("\\"):
        return True
    try:
        shlex.split(command, comments=True)
    except ValueError:  # a quote is open
        return True
    return False


def matches(shown: str, line: str) -> bool:
    """Whether an output line is what the README shows, wildcards and all."""
    pattern, position = "", 0
    for found in WILDCARDS.finditer(shown):
        pattern += re.escape(shown[position : found.start()]) + PATTERNS[str(found.lastgroup)]
        position = found.end()
    pattern += re.escape(shown[position:])
    return re.fullmatch(pattern, line.rstrip()) is not None


def missing(shown: list[str], output: str) -> str | None:
    """The first shown line not found in `output` (after the ones before it), else None."""
    lines = iter(output.splitlines())
    for expected in shown:
        if not any(matches(expected, line) for line in lines):
            return expected
    return None


# -- the run ----------------------------------------------------------------------------------


@dataclass
class Background:
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


class Walk:
    """A reader of the README at work: a scratch clone, one shell's environment, and the
    commands started in shells of their own."""

    def __init__(self, clone: Path, ports: dict[str, str]) -> None:
        self.clone = clone
        self.ports = ports
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTGATE_")}
        # `make run` serves on the default port; the config file's port is replaced in place.
        self.env.update(DRIFTGATE_PORT=ports["8080"], NO_COLOR="1")
        self.background: dict[str, Background] = {}
        self.transcript: list[str] = []
        # Wall and CPU seconds per step, printed (-s); a background command's CPU counts
        # when it stops (or not at all when the test ends it).
        self.timings: list[tuple[float, float, str]] = []

    def localize(self, text: str) -> str:
        for fixed, free in self.ports.items():
            text = text.replace(f"127.0.0.1:{fixed}", f"127.0.0.1:{free}")
        return text

    def command(self, text: str) -> str:
        text = self.localize(text).replace("make run", ".venv/bin/driftgate up")
        if "driftgate demo vendor" in text and "--port" not in text:
            text = text.replace(
                "driftgate demo vendor", f"driftgate demo vendor --port {self.ports['8090']}"
            )
        return text

    def start(self, name: str, command: Command) -> None:
        began, cpu = time.monotonic(), _children_cpu()
        assert name not in self.background, f"README.md:{command.line}: {name} runs already"
        log = self.clone.parent / f"{name}-{len(self.transcript)}.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                ["bash", "-c", self.command(command.text)],
                cwd=self.clone,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, as a terminal's job
            )
        running = self.background[name] = Background(process, log)
        shown = [self.localize(line) for line in command.shown]
        deadline = time.monotonic() + START_TIMEOUT
        while (gap := missing(shown, running.output())) is not None:
            assert process.poll() is None and time.monotonic() < deadline, self.failure(
                command, f"{name} did not print {gap!r}", running.output()
            )
            time.sleep(0.1)
        for port in re.findall(r"127\.0\.0\.1:(\d+)", "\n".join(shown)):
            while not _accepts(int(port)):
                assert process.poll() is None and time.monotonic() < deadline, self.failure(
                    command, f"{name} does not accept connections on {port}", running.output()
                )
                time.sleep(0.1)
        self.transcript.append(f"started {name}: {command.text}")
        self.timings.append((*_since(began, cpu), f"start {name}"))

    def stop(self, name: str) -> None:
        began, cpu = time.monotonic(), _children_cpu()
        running = self.background.pop(name)
        os.killpg(running.process.pid, signal.SIGINT)  # Ctrl-C
        try:
            running.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(running.process.pid, signal.SIGKILL)
            running.process.wait()
            raise AssertionError(f"{name} did not stop on Ctrl-C:\n{running.output()}") from None
        self.transcript.append(f"stopped {name}")
        self.timings.append((*_since(began, cpu), f"stop {name}"))

    def run(self, command: Command) -> None:
        began, cpu = time.monotonic(), _children_cpu()
        state = self.clone.parent / "shell.env"
        script = f"{self.command(command.text)}\n__status=$?\nenv -0 > {state}\nexit $__status\n"
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=self.clone,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=COMMAND_TIMEOUT,
        )
        output = done.stdout.decode(errors="replace")
        self.transcript.append(f"$ {command.text}\n{output}")
        self.timings.append((*_since(began, cpu), command.text.splitlines()[0][:70]))
        assert done.returncode == command.exit_code, self.failure(
            command, f"exit {done.returncode}, the README says {command.exit_code}", output
        )
        gap = missing([self.localize(line) for line in command.shown], output)
        assert gap is None, self.failure(command, f"no line is {gap!r}", output)
        if state.exists():  # the shell's exports carry over to the next command
            pairs = state.read_bytes().decode().split("\0")
            self.env = dict(pair.split("=", 1) for pair in pairs if "=" in pair)

    def failure(self, command: Command, what: str, output: str) -> str:
        logs = "\n".join(
            f"--- {name} ---\n{running.output()[-3000:]}"
            for name, running in self.background.items()
        )
        return (
            f"README.md:{command.line}: `{command.text}`: {what}\n--- its output ---\n{output}\n"
            f"{logs}\n--- the walkthrough so far ---\n" + "\n".join(self.transcript[-8:])
        )

    def close(self) -> None:
        """End every command still running, and what each started (its process group)."""
        for running in self.background.values():
            kill_group(running.process)
            running.process.wait()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _since(began: float, cpu: float) -> tuple[float, float]:
    return time.monotonic() - began, _children_cpu() - cpu


def _accepts(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def scratch_clone(path: Path, ports: dict[str, str]) -> Path:
    """What the walkthrough needs of a clone: `examples/` (ports replaced) committed on `main`
    (the source `examples/driftgate.yaml` declares), and the venv of this checkout."""
    clone = path / "clone"
    shutil.copytree(ROOT / "examples", clone / "examples")
    for file in (f for f in (clone / "examples").rglob("*") if f.is_file()):
        text = file.read_text(encoding="utf-8")
        for fixed, free in ports.items():
            text = text.replace(f"127.0.0.1:{fixed}", f"127.0.0.1:{free}")
        file.write_text(text.replace("port: 8080", f"port: {ports['8080']}"), encoding="utf-8")
    with isolated_git_config(path / "gitconfig"):
        repo = pygit2.init_repository(str(clone), initial_head="main")
        repo.index.add_all()
        repo.index.write()
        who = pygit2.Signature("walkthrough", "walkthrough@example.invalid")
        repo.create_commit("HEAD", who, who, "examples", repo.index.write_tree(), [])
    (clone / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    return clone


@pytest.fixture
def walk(tmp_path: Path) -> Iterator[Walk]:
    if os.environ.get("DRIFTGATE_TEST_DATABASE_URL", "").startswith("postgresql"):
        pytest.skip("the README's walkthrough runs on SQLite (`make run`): the SQLite pass runs it")
    if not (Path(sys.prefix) / "bin" / "driftgate").exists():
        pytest.skip(f"the walkthrough runs .venv/bin/driftgate: not installed in {sys.prefix}")
    if shutil.which("curl") is None:
        pytest.skip("the README's walkthrough calls the HTTP API with curl, which is not on PATH")
    if shutil.which("bash") is None:
        pytest.skip("the README's walkthrough is run by bash, which is not on PATH")
    ports = {"8080": str(free_port()), "8090": str(free_port())}
    running = Walk(scratch_clone(tmp_path, ports), ports)
    try:
        yield running
    finally:
        running.close()


def test_make_run_is_driftgate_up() -> None:
    """The walkthrough's `make run` is replaced by what the Makefile runs after installing."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^run: .*\n\t(.+)$", makefile, re.MULTILINE)
    assert recipe is not None and recipe.group(1) == "$(BIN)/driftgate up", makefile


def test_the_wildcards_of_a_shown_line() -> None:
    shown = "c55dbfc6-1e4b-4a8f-b0d2-7f3e9c6a5d14  stripe  ok  2026-11-25T03:53:26.744596Z  ..."
    real = "0b7c2d9e-45aa-4f1b-9d3c-2e8f1a6b7c90  stripe  ok      2027-01-02T10:00:00Z  http://x"
    assert matches(shown, real)
    assert not matches(shown, real.replace("stripe", "github"))
    assert matches("demo: dry_run at 2e6b41f01a0f (303 ms)", "demo: dry_run at 80f5ee327 (9 ms)")
    assert not matches("check ... done", "check 3 failed")
    assert missing(["a", "c"], "a\nb\nc") is None and missing(["c", "a"], "a\nb\nc") == "a"


def test_the_walkthrough_is_marked() -> None:
    steps = walkthrough(README.read_text(encoding="utf-8"))
    commands = [c for step in steps for c in step.commands]
    assert [s.action for s in steps][:2] == ["start", "start"] and len(commands) > 20
    assert all(step.commands for step in steps if step.action != "stop")
    # the checks that find the drift and the preflights it blocks
    assert sum(c.exit_code == 1 for c in commands) == 4


def test_the_readme_walkthrough_works_as_written(walk: Walk) -> None:
    for step in walkthrough(README.read_text(encoding="utf-8")):
        if step.action == "stop":
            walk.stop(step.name)
        elif step.action == "start":
            assert len(step.commands) == 1, f"README.md:{step.commands[0].line}: one command"
            walk.start(step.name, step.commands[0])
        else:
            for command in step.commands:
                walk.run(command)
    print("\nthe walkthrough's steps: wall and CPU seconds")
    for wall, cpu, what in walk.timings:
        print(f"{wall:6.1f} {cpu:6.1f}  {what}")
    print(f"{sum(t[0] for t in walk.timings):6.1f} {sum(t[1] for t in walk.timings):6.1f}  in all")
