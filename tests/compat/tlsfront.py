"""nginx as the TLS front of a live driftgate, configured from docs/operations.md.

The hosted product's TypeScript clients take only an `https://` base URL, so their tests
reach driftgate as operators run it: one nginx terminating TLS on 127.0.0.1, driftgate behind
it with `trusted_proxy_hops=1`. The `server` block is read from the ```nginx example of
docs/operations.md ("Behind a TLS proxy") and only its host-specific values are replaced (the
listen address, the server name, the upstream port, the certificate), so these tests are
also the check that the documented configuration works: if the page's example breaks, they
fail. nginx runs in the foreground with every path (pid, logs, temp files) in a temporary
folder, and is stopped at teardown.
"""

from __future__ import annotations

import os
import pwd
import re
import ssl
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.processes import spawn, stop_process, wait_until
from tests.tls import self_signed_certificate

ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = ROOT / "docs" / "operations.md"


@dataclass
class TlsFront:
    """A running nginx: its https base URL, the CA that signed its certificate, its logs."""

    base: str
    ca_file: Path
    logs: list[Path]


def documented_server_block() -> str:
    """The ```nginx example of docs/operations.md's "Behind a TLS proxy" section."""
    text = OPERATIONS.read_text(encoding="utf-8")
    section = text.split("## Behind a TLS proxy", 1)[1]
    found = re.search(r"```nginx\n(.*?)```", section, re.DOTALL)
    assert found, "docs/operations.md: no ```nginx example under 'Behind a TLS proxy'"
    return found.group(1)


def server_block(port: int, upstream_port: int, cert: Path, key: Path) -> str:
    """The documented block with this host's values: each replaced exactly once."""
    block = documented_server_block()
    replacements = {
        r"listen 443 ssl;": (
            f"listen 127.0.0.1:{port} ssl;\n"
            f"    ssl_certificate {cert};\n    ssl_certificate_key {key};"
        ),
        r"server_name \S+;": "server_name 127.0.0.1;",
        r"proxy_pass http://127\.0\.0\.1:\d+;": f"proxy_pass http://127.0.0.1:{upstream_port};",
    }
    for pattern, value in replacements.items():
        block, count = re.subn(pattern, lambda _m, v=value: v, block)
        assert count == 1, f"docs/operations.md's nginx example: {pattern!r} found {count} times"
    return block


def nginx_conf(folder: Path, block: str) -> str:
    # A root master would run its worker as `nobody`, which cannot enter pytest's 0700
    # folders: the worker runs as whoever runs the tests.
    user = pwd.getpwuid(os.geteuid()).pw_name
    temp = "\n".join(
        f"    {kind}_temp_path {folder / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""user {user};
worker_processes 1;
pid {folder / "nginx.pid"};
error_log {folder / "error.log"} info;
events {{ worker_connections 128; }}
http {{
    access_log {folder / "access.log"};
{temp}
{block}
}}
"""


@contextmanager
def tls_front(folder: Path, port: int, upstream_port: int) -> Iterator[TlsFront]:
    """nginx on `https://127.0.0.1:<port>` in front of driftgate on `upstream_port`, with a
    throwaway certificate of its own CA, until the block exits."""
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = self_signed_certificate(folder)
    conf = folder / "nginx.conf"
    conf.write_text(nginx_conf(folder, server_block(port, upstream_port, cert, key)))
    logs = [folder / "error.log", folder / "access.log"]
    base = f"https://127.0.0.1:{port}"
    command = ["nginx", "-p", f"{folder}/", "-e", str(logs[0]), "-c", str(conf)]
    context = ssl.create_default_context(cafile=str(cert))
    with open(folder / "nginx.stderr", "wb") as stderr:
        process = spawn([*command, "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=stderr)
    try:

        def is_answering() -> bool:
            if process.poll() is not None:
                raise AssertionError(
                    (folder / "nginx.stderr").read_text() + logs[0].read_text(errors="replace")
                )
            try:
                return httpx.get(f"{base}/health", verify=context, timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        wait_until(is_answering)
        yield TlsFront(base, cert, logs)
    finally:
        stop_process(process)
