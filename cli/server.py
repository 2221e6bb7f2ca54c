"""Runs the Flask app under gunicorn with driftgate's server front (web/front.py: gthread
workers that read each request whole before a thread runs it), configured from Settings.

The app is built inside each worker after the fork (no `preload_app`), so every worker owns
its database engine and no connection crosses a process boundary; so does tracing
(`controller.tracing`: the span exporter's thread would not survive a fork), set up in each
worker before its app is built and flushed when the worker exits.

The processes of one `serve` or `up` (the workers, `up`'s controller) write their metrics to a
directory of the run (`metrics_directory_of_run`), from which any worker answers `/metrics`
for all of them (`controller.monitoring.service`).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter
from gunicorn.errors import HaltServer

from cli.supervision import GAVE_UP_EXIT, ControllerSupervisor, RestartPolicy, post_fork
from controller import tracing
from controller.errors import ConfigError
from controller.logs import configure_logging
from controller.settings import METRICS_DIRECTORY_VARIABLE, Settings, metrics_directory


class SupervisingArbiter(Arbiter):  # type: ignore[misc]
    """gunicorn's arbiter, which also keeps `driftgate up`'s controller process running.

    The arbiter reaps every child with `waitpid(-1)`, the controller too (as an unknown
    child): the supervisor reaps its own first, each time, and once more after, to see a
    death the arbiter's reaping took. Restarts happen in the arbiter's loop (about once a
    second); giving up halts the server with a non-zero status."""

    def __init__(self, app: BaseApplication, supervisor: ControllerSupervisor) -> None:
        self.supervisor = supervisor
        super().__init__(app)

    def reap_workers(self) -> None:
        self.supervisor.reap()
        super().reap_workers()
        self.supervisor.reap()

    def manage_workers(self) -> None:
        super().manage_workers()
        reason = self.supervisor.step()
        if reason is not None:
            raise HaltServer(reason, GAVE_UP_EXIT)

    def stop(self, graceful: bool = True) -> None:
        self.supervisor.stopping = True  # a controller that ends now is not restarted
        super().stop(graceful)


class DriftgateServer(BaseApplication):  # type: ignore[misc]
    def __init__(self, settings: Settings, supervisor: ControllerSupervisor | None = None) -> None:
        self.settings = settings
        self.supervisor = supervisor
        super().__init__()

    def run(self) -> None:
        if self.supervisor is None:
            super().run()
            return
        try:
            SupervisingArbiter(self, self.supervisor).run()
        except RuntimeError as error:  # as `BaseApplication.run` reports a start that failed
            print(f"\nError: {error}\n", file=sys.stderr)
            sys.exit(1)

    def load_config(self) -> None:
        options: dict[str, Any] = {
            "bind": f"{self.settings.host}:{self.settings.port}",
            "workers": self.settings.workers,
            "worker_class": "web.front.BufferingWorker",
            "threads": self.settings.threads,
            "timeout": 60,
            "graceful_timeout": 30,
            "keepalive": 5,
            "accesslog": None,
            "errorlog": "-",
            "loglevel": self.settings.log_level.lower(),
            "proc_name": "driftgate-web",
            # gunicorn 27's control socket is one path per user: two servers on a host would
            # share it. driftgate is managed by signals and its own API, so it is off.
            "control_socket_disable": True,
            # Forwarding headers are trusted in one place only, the app's ProxyFix, as far as
            # `trusted_proxy_hops` says. gunicorn's own trust (X-Forwarded-Proto and friends
            # from 127.0.0.1 by default, or FORWARDED_ALLOW_IPS) would let any local client
            # choose the scheme with the setting at 0, and would disagree with it above 0.
            "forwarded_allow_ips": "",
            "secure_scheme_headers": {},
            "forwarder_headers": "",
            # A worker dies with its arbiter, whatever the worker class (cli/supervision.py),
            # and traces its requests when the OpenTelemetry variables ask for it.
            "post_fork": worker_started,
            "worker_exit": worker_exited,
            "child_exit": child_exit,
            "logconfig_dict": self._logconfig(),
        }
        for key, value in options.items():
            self.cfg.set(key, value)

    def _logconfig(self) -> dict[str, Any]:
        """gunicorn's own messages in the same format (JSON lines by default) as ours."""
        formatter = "JsonFormatter" if self.settings.log_format == "json" else "TextFormatter"
        level = self.settings.log_level
        return {
            "version": 1,
            "disable_existing_loggers": False,
            "formatters": {"driftgate": {"()": f"controller.logs.{formatter}"}},
            "handlers": {
                "stderr": {"class": "controller.logs.StderrHandler", "formatter": "driftgate"}
            },
            "loggers": {
                "gunicorn.error": {"handlers": ["stderr"], "level": level, "propagate": False},
                "gunicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
                "driftgate.supervisor": {
                    "handlers": ["stderr"],
                    "level": level,
                    "propagate": False,
                },
            },
            "root": {"handlers": ["stderr"], "level": "WARNING"},
        }

    def load(self) -> Flask:
        from web.app import create_app

        return create_app(self.settings)


def worker_started(server: Any, worker: Any) -> None:
    """gunicorn `post_fork` hook: in the new worker, before it builds the app."""
    post_fork(server, worker)
    # The worker's own lines (tracing's, first) in the format of the rest, before the app's.
    configure_logging(worker.app.settings)
    tracing.setup("web")


def worker_exited(server: Any, worker: Any) -> None:
    """gunicorn `worker_exit` hook: the worker's last spans go out before it ends."""
    tracing.shutdown()


def ensure_port_free(host: str, port: int) -> None:
    """Refuse to start when the address is taken, before anything else starts (a controller
    applying sources, migrations), with what to do instead of gunicorn's retries."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"cannot serve on {host}:{port}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError:
            raise ConfigError(
                f"port {port} on {host} is already in use (another driftgate, such as `make "
                "run`, may be serving it): stop that server or pass --port"
            ) from None


@contextmanager
def metrics_directory_of_run() -> Iterator[Path]:
    """A new, empty directory where every process of this run writes its metrics
    (prometheus_client's multiprocess mode), named to the processes this one starts by
    `PROMETHEUS_MULTIPROC_DIR`; removed when the run ends. prometheus_client picks its mode
    when it is first imported, so this comes before anything imports it."""
    if "prometheus_client.values" in sys.modules:
        raise RuntimeError("prometheus_client was imported before the run's metrics directory")
    directory = Path(tempfile.mkdtemp(prefix="driftgate-metrics-"))
    owner = os.getpid()
    os.environ[METRICS_DIRECTORY_VARIABLE] = str(directory)
    try:
        yield directory
    finally:
        # A forked worker leaves through here too (gunicorn exits it with SystemExit): only
        # the process that made the directory removes it.
        if os.getpid() == owner:
            os.environ.pop(METRICS_DIRECTORY_VARIABLE, None)
            shutil.rmtree(directory, ignore_errors=True)


def process_ended(pid: int) -> None:
    """Forget the live values of a process of this run that ended (its counters stay)."""
    directory = metrics_directory()
    if directory is not None:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid, str(directory))  # type: ignore[no-untyped-call]


def child_exit(server: Any, worker: Any) -> None:
    """gunicorn `child_exit` hook (in the arbiter): a worker ended."""
    process_ended(worker.pid)


def run_gunicorn(settings: Settings, supervisor: ControllerSupervisor | None = None) -> None:
    DriftgateServer(settings, supervisor).run()


def start_controller_process(config: Any) -> subprocess.Popen[bytes]:
    """The controller of `driftgate up`, as its own process beside the web workers; it dies
    with this process (cli/supervision.py)."""
    # It inherits this process's environment: the settings, and the OpenTelemetry variables
    # that turn its tracing on.
    command = [sys.executable, "-m", "cli"]
    if config is not None:
        command += ["--config", str(config)]
    return subprocess.Popen([*command, "controller", "--parent", str(os.getpid())])


def controller_supervisor(settings: Settings, config: Any) -> ControllerSupervisor:
    """What keeps `driftgate up`'s controller running, by the settings' restart policy."""
    policy = RestartPolicy(
        first_delay=settings.controller_restart_delay_seconds,
        limit=settings.controller_restart_limit,
    )
    return ControllerSupervisor(
        lambda: start_controller_process(config), policy, on_exit=process_ended
    )
