"""The loopback vendor that the controller benchmarks check (checks_bench, scale_bench,
dbfault_bench): a process of its own serving OpenAPI documents with ETags, after an added
latency (a vendor across the internet), and logging every fetch so that a benchmark counts
checks from the vendor's side, not from the controller's.

- `/spec/<n>.json[?query]`: `documents(n, query)` gives the ETag and the body; 304 when the
  client already holds that ETag. Each fetch is logged as `<unix time> <n>`.
- `/trickle/<n>`: one byte every 2 s, for an hour; `/hang/<n>`: never answers.

`SameDocument` and `DistinctDocuments` are the two sets of documents the benchmarks use;
`start` runs a server function in its own process and returns its port.
"""

from __future__ import annotations

import json
import multiprocessing
import tempfile
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.specs import charges_spec

FLAP_SECONDS = 60  # a flapping document changes version once a minute (scale_bench's interval)

# (n, query) -> (ETag, body); no ETag: a vendor that sends none (and so never answers 304).
Documents = Callable[[int, str], tuple[str | None, bytes]]


class SameDocument:
    """Every `/spec/<n>.json` is the charges spec in the version `version_file` names: `v1`,
    or `v2` with a breaking change (fewer required properties, no refunds); followed by
    ` plain`, the same bytes without an ETag (a vendor that sends none)."""

    def __init__(self, version_file: str) -> None:
        self.version_file = version_file
        self.bodies = {
            "v1": json.dumps(charges_spec()).encode(),
            "v2": json.dumps(charges_spec(required=("id",), refunds=False)).encode(),
        }

    def __call__(self, n: int, query: str) -> tuple[str | None, bytes]:
        version, _, mode = Path(self.version_file).read_text().strip().partition(" ")
        return (None if mode == "plain" else f'"{version}"'), self.bodies[version]


class DistinctDocuments:
    """A distinct document per `n` (its title names it); with `?flap` it alternates between
    two versions (one path fewer) every `FLAP_SECONDS`."""

    def __init__(self) -> None:
        self.base = charges_spec()

    def __call__(self, n: int, query: str) -> tuple[str | None, bytes]:
        version = int(time.time() // FLAP_SECONDS) % 2 if query == "flap" else 0
        spec = json.loads(json.dumps(self.base))
        spec["info"]["title"] = f"vendor {n}"
        if version:
            spec["paths"].pop(next(iter(spec["paths"])))
        return f'"{n}-{version}"', json.dumps(spec).encode()


def serve(port_file: str, log_file: str, latency: float, documents: Documents) -> None:
    """Serve until killed; the port goes to `port_file` once the server listens."""
    log = open(log_file, "a", buffering=1)  # noqa: SIM115 - lives as long as the process

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body leave in separate writes; without this, Nagle's algorithm and the
        # client's delayed ACK hold every 200 for 40 ms.
        disable_nagle_algorithm = True

        def do_GET(self) -> None:  # noqa: N802
            path, _, query = self.path.partition("?")
            kind, _, name = path.strip("/").partition("/")
            if kind == "hang":
                time.sleep(3600)
                return
            if kind == "trickle":
                self.send_response(200)
                self.send_header("Content-Length", "1000000")
                self.end_headers()
                try:
                    for _ in range(1800):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                        time.sleep(2)
                except OSError:
                    pass  # the client gave up (its fetch deadline), as it should
                return
            if latency:
                time.sleep(latency)
            n = int(name.split(".")[0])
            tag, body = documents(n, query)
            log.write(f"{time.time():.3f} {n}\n")
            if tag is not None and self.headers.get("If-None-Match") == tag:
                self.send_response(304)
                self.send_header("ETag", tag)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if tag is not None:
                self.send_header("ETag", tag)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.request_queue_size = 1024
    Path(port_file).write_text(str(server.server_address[1]))
    server.serve_forever()


def start(target: Any, *args: Any) -> tuple[multiprocessing.Process, int]:
    """Run `target(port_file, *args)` in a daemon process; its port once it listens."""
    port_file = tempfile.mktemp(prefix="driftgate-bench-port-")
    process = multiprocessing.Process(target=target, args=(port_file, *args), daemon=True)
    process.start()
    while not Path(port_file).exists() or not Path(port_file).read_text():
        time.sleep(0.05)
    return process, int(Path(port_file).read_text())
