"""The end of a test run checks that no process the tests started is left running.

Each test process (every xdist worker, or the one process without xdist) marks its
environment with a token of its own (`MARK`), which every process it starts inherits unless
a test hands a child a made-up environment. At the end of the session it looks for the
processes still running that either descend from it or carry its token (an orphan that was
reparented to init no longer descends from anyone), gives them `GRACE` seconds to exit, then
kills them, names them (their command line and the test that was running when each started)
and fails the run. Under xdist a worker hands its findings to the controller
(`workeroutput`), which reports them and sets the exit status.

Zombies are not counted: they hold no port, file or lock and run nothing. Servers the suite
keeps in-process are threads, not processes; a browser, a git daemon or an MCP server started
by a fixture must have been stopped by that fixture's own teardown by then.
"""

from __future__ import annotations

import bisect
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest

MARK = "SUITE_RUN_MARK"  # not DRIFTGATE_*: the system tests' child_env() drops those
GRACE = 5.0
OUTPUT_KEY = "driftgate_leaked_processes"


@dataclass(eq=False)  # a plugin: pluggy keeps plugins in sets
class LeakCheck:
    """A pytest plugin: marks this process's environment and checks for leftovers at the end."""

    config: pytest.Config
    token: str = field(default_factory=lambda: f"{os.getpid()}-{uuid.uuid4().hex[:12]}")
    # When each test started (wall clock, as psutil reports a process's start) and its id.
    starts: list[float] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    # The controller's collection of every worker's findings.
    reported: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        os.environ[MARK] = self.token

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.starts.append(time.clock_gettime(time.CLOCK_BOOTTIME))
        self.tests.append(nodeid)

    @pytest.hookimpl(trylast=True)  # after every fixture's teardown
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.pluginmanager.has_plugin("dsession"):  # the xdist controller
            leaked = self.reported
        else:
            leaked = self.leftovers()
            workeroutput = getattr(self.config, "workeroutput", None)
            if workeroutput is not None:
                workeroutput[OUTPUT_KEY] = leaked
                return
        if leaked:
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_sep("=", "processes the tests left running (killed)", red=True)
                for line in leaked:
                    reporter.write_line(line)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        self.reported.extend(output.get(OUTPUT_KEY, []))

    def leftovers(self) -> list[str]:
        """Kill what is left of the processes this one started; a line about each."""
        found = {p.pid: p for p in self._started()}
        _gone, alive = psutil.wait_procs(list(found.values()), timeout=GRACE)
        lines = []
        for process in alive:
            try:
                if process.status() == psutil.STATUS_ZOMBIE:
                    continue
                command = " ".join(process.cmdline())
                started = _started_since_boot(process.pid)
                process.kill()
            except (psutil.NoSuchProcess, OSError):
                continue
            lines.append(f"pid {process.pid} ({self._test_at(started)}): {command}")
        return sorted(lines)

    def _started(self) -> list[psutil.Process]:
        me = psutil.Process()
        mine = {p.pid: p for p in me.children(recursive=True)}
        for process in psutil.process_iter():
            if process.pid in mine or process.pid == me.pid:
                continue
            try:
                if process.environ().get(MARK) == self.token:
                    mine[process.pid] = process
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
                continue
        running = []
        for process in mine.values():
            try:
                if process.status() != psutil.STATUS_ZOMBIE:
                    running.append(process)
            except psutil.NoSuchProcess:
                continue
        return running

    def _test_at(self, started: float) -> str:
        # The start is counted in whole clock ticks: the test is the last one that began by
        # the end of that tick.
        index = bisect.bisect_right(self.starts, started + 1 / os.sysconf("SC_CLK_TCK")) - 1
        return f"started during {self.tests[index]}" if index >= 0 else "started before the tests"


def _started_since_boot(pid: int) -> float:
    """When `pid` started, in seconds since boot (Linux's /proc/PID/stat, in clock ticks: the
    clock `time.CLOCK_BOOTTIME` reads; psutil's start times are rounded to whole seconds)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[19]) / os.sysconf("SC_CLK_TCK")
