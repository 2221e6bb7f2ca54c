"""The server front (web/front.py): where a request ends, and the real server under clients that
never finish their requests, send too much, or send nonsense. Every answer the server itself
gives is the API's JSON envelope."""

from __future__ import annotations

import json
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from gunicorn.config import Config

from controller import __version__
from controller.store import migrate
from controller.store.db import Database
from tests.processes import (
    DRIFTGATE,
    PATIENCE,
    driftgate_env,
    free_port,
    started,
    stop_process,
    wait_until_healthy,
    wait_until_taken,
)
from web.front import (
    MAX_HEADER_BYTES,
    Framing,
    error_response,
    health_request,
    health_response,
)

LIMIT = 1024 * 1024

# Where a request ends: None (more needed), True (complete, or the parser's to refuse), or a
# refusal (status, message).


def frame(data: bytes, max_body: int = LIMIT) -> bool | tuple[int, str] | None:
    return Framing(max_body).feed(bytearray(data))


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"GET / HTTP/1.1\r\nHost: x\r\n", None),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", True),
        (b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nabc", None),
        (b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcde", True),
        (b"POST / HTTP/1.1\r\ncontent-length:  5 \r\n\r\nabcdeGET", True),
        (b"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", True),
        (b"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", True),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", None),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", True),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\r\n", None),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\r\n\r\n", True),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nab", None),
        (
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            (400, "invalid chunk size: b'zz'"),
        ),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", True),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", True),
    ],
)
def test_framing_finds_where_a_request_ends(
    data: bytes, expected: bool | tuple[int, str] | None
) -> None:
    assert frame(data) == expected


def test_framing_refuses_what_is_over_a_limit() -> None:
    too_long = b"POST / HTTP/1.1\r\nContent-Length: 1025\r\n\r\n"
    assert frame(too_long, max_body=1024) == (
        413,
        "the request body exceeds the limit of 1024 bytes",
    )
    chunks = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + b"200\r\n" + b"a" * 512
    chunks += b"\r\n201\r\n"
    refused = frame(chunks, max_body=1024)
    assert isinstance(refused, tuple) and refused[0] == 413
    endless = b"GET / HTTP/1.1\r\n" + b"X: " + b"a" * MAX_HEADER_BYTES
    assert frame(endless) == (431, f"the request header section exceeds {MAX_HEADER_BYTES} bytes")


def test_framing_reads_in_pieces() -> None:
    framing = Framing(LIMIT)
    buffer = bytearray()
    request = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n"
    outcomes = []
    for byte in request:
        buffer.append(byte)
        outcomes.append(framing.feed(buffer))
    assert outcomes[-1] is True and all(o is None for o in outcomes[:-1])


def test_an_error_response_is_the_json_envelope() -> None:
    raw = error_response(408, "too slow", "caller-id-1")
    head, body = raw.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert b"\r\nX-Service-Correlation-Id: caller-id-1" in head
    assert b"Content-Type: application/json" in head
    assert json.loads(body) == {"error": "request_timeout", "message": "too slow"}
    generated = error_response(400, "bad", "not a valid id!").split(b"\r\n\r\n")[0]
    assert b"X-Service-Correlation-Id: not a valid id!" not in generated


@pytest.mark.parametrize(
    ("head", "asked"),
    [
        (b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", (False, True, "")),
        (b"GET /health?probe=1 HTTP/1.1\r\nX-Service-Source: lb\r\n\r\n", (False, True, "lb")),
        (b"HEAD /health HTTP/1.1\r\nConnection: close\r\n\r\n", (True, False, "")),
        (b"GET /health HTTP/1.0\r\n\r\n", (False, False, "")),
        (b"GET /health HTTP/1.1\r\nContent-Length: 0\r\n\r\n", (False, True, "")),
        # Anything else is a thread's: another route, a body, what gunicorn's parser refuses.
        (b"GET /health/ready HTTP/1.1\r\n\r\n", None),
        (b"POST /health HTTP/1.1\r\nContent-Length: 2\r\n\r\n", None),
        (b"GET /health HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", None),
        (b"GET /health HTTP/1.1\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n", None),
        (b"GET /health HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", None),
        (b"GET /health HTTP/1.1\r\nExpect: tea\r\n\r\n", None),
        (b"GET /health HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n", None),
        (b"GET /health HTTP/9.9\r\n\r\n", None),
    ],
)
def test_the_front_answers_health_itself_only_when_gunicorn_would_serve_it(
    head: bytes, asked: tuple[bool, bool, str] | None
) -> None:
    assert health_request(Config(), head, ("127.0.0.1", 40000)) == asked


def test_the_fronts_health_answer_is_the_apps() -> None:
    answer = health_response("req-1", keep_alive=False, head=False)
    head, body = answer.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"Connection: close" in head
    assert b"X-Service-Correlation-Id: req-1" in head
    assert json.loads(body) == {"status": "ok", "version": __version__}
    assert health_response("req-1", keep_alive=True, head=True).endswith(b"\r\n\r\n")


# The real server: one worker with two threads, short timeouts.


@contextmanager
def front_server(
    database_url: str, directory: Path, **env: str
) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """`driftgate serve` on `database_url` with the settings above and `env` over them."""
    port = free_port()
    settings = driftgate_env(
        database_url,
        directory,
        header_timeout_seconds="1",
        body_timeout_seconds="1.5",
        max_body_bytes="65536",
        log_level="WARNING",
    )
    log = directory / "server.log"
    command = [*DRIFTGATE, "serve", "--port", str(port), "--workers", "1", "--threads", "2"]
    with started(command, env={**settings, **env}, log=log) as process:
        wait_until_healthy(f"http://127.0.0.1:{port}", process, log)
        yield port, process
        assert stop_process(process) == 0


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, _template_database: str) -> Iterator[int]:
    """One server for the tests that only talk to it (nothing is stored), on a SQLite file of
    its own: their exchanges are the front's, the same on any store."""
    directory = tmp_path_factory.mktemp("front")
    path = directory / "driftgate.db"
    if _template_database.startswith("postgresql"):  # the worker's database: not this one
        migrate.upgrade(Database(f"sqlite:///{path}"))
    else:
        shutil.copyfile(_template_database, path)
    with front_server(f"sqlite:///{path}", directory) as (port, _process):
        yield port


@pytest.fixture
def server_process(
    tmp_path: Path, database: Database, request: pytest.FixtureRequest
) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """A server of the test's own, with the settings it names (`request.param`)."""
    with front_server(database.url, tmp_path, **getattr(request, "param", {})) as running:
        yield running


def exchange(port: int, data: bytes, *, wait: float = 30.0) -> tuple[bytes, float]:
    """Send `data`, read until the server closes (or `wait` passes); the bytes and the time."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(wait)
        sock.sendall(data)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except TimeoutError:
            pass
    return received, time.monotonic() - started


def envelope(raw: bytes) -> tuple[int, dict[str, str]]:
    head, body = raw.split(b"\r\n\r\n", 1)
    assert b"content-type: application/json" in head.lower()
    assert b"x-service-correlation-id: " in head.lower()
    return int(head.split(b" ", 2)[1]), json.loads(body)


def silent(sock: socket.socket) -> bool:
    """Nothing has arrived on `sock` and the server has not closed it."""
    try:
        sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return True
    return False


# Header and body timeouts far longer than an answer to /health takes on a busy machine.
HOLD_SECONDS = "5"


@pytest.mark.slow
@pytest.mark.parametrize(
    "server_process",
    [
        {
            "DRIFTGATE_HEADER_TIMEOUT_SECONDS": HOLD_SECONDS,
            "DRIFTGATE_BODY_TIMEOUT_SECONDS": HOLD_SECONDS,
        }
    ],
    indirect=True,
)
def test_half_open_connections_do_not_hold_threads(
    server_process: tuple[int, subprocess.Popen[bytes]],
) -> None:
    served = server_process[0]
    holders = []
    try:
        for index in range(20):  # ten times the threads
            sock = socket.create_connection(("127.0.0.1", served))
            if index % 2:
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: a")
            else:
                sock.sendall(b"POST /api/preflight HTTP/1.1\r\nContent-Length: 500\r\n\r\n{")
            holders.append(sock)
        wait_until_taken(*holders)  # the server holds all twenty
        with httpx.Client(base_url=f"http://127.0.0.1:{served}", timeout=PATIENCE) as http:
            assert http.get("/health").status_code == 200
            # Answered while the server still holds every half-open connection: none of them
            # took one of its two threads (the answer would have waited for their timeouts).
            assert all(silent(sock) for sock in holders)
            for _ in range(19):
                assert http.get("/health").status_code == 200
        for sock in holders:  # each one gets its 408 and is closed
            sock.settimeout(PATIENCE)
            received = b""
            while chunk := sock.recv(65536):
                received += chunk
            status, body = envelope(received)
            assert status == 408 and body["error"] == "request_timeout"
    finally:
        for sock in holders:
            sock.close()


@pytest.mark.slow
def test_the_server_answers_its_own_errors_as_json(served: int) -> None:
    partial, took = exchange(served, b"GET /health HTTP/1.1\r\nHost: x\r\n")
    assert envelope(partial) == (
        408,
        {
            "error": "request_timeout",
            "message": "the request line and headers did not arrive within 1 s",
        },
    )
    # Not before the 1 s it names, and well before the default's 10 s: the setting applies.
    assert 0.9 < took < 9
    short, took = exchange(served, b"POST /api/watches HTTP/1.1\r\nContent-Length: 10\r\n\r\n{}")
    assert envelope(short)[1]["message"] == "the request body did not arrive within 1.5 s"
    cases = [
        (b"GARBAGE\r\n\r\n", 400, "bad_request"),
        (b"GET / HTTP/9.9\r\nHost: x\r\n\r\n", 400, "bad_request"),
        (b"GET /health HTTP/1.1\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n", 431, None),
        (b"GET /health HTTP/1.1\r\nX-Big: " + b"a" * MAX_HEADER_BYTES, 431, None),
        (b"POST /api/watches HTTP/1.1\r\nContent-Length: 70000\r\n\r\n", 413, None),
        (b"GET /api/watches?tag=" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n", 414, "uri_too_long"),
        (
            b"POST /api/watches HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
            + b"8000\r\n"
            + b"a" * 0x8000
            + b"\r\n8001\r\n",
            413,
            "payload_too_large",
        ),
        (b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "bad_request"),
    ]
    for data, expected, code in cases:
        received, _ = exchange(served, data)
        status, body = envelope(received.split(b"HTTP/1.1 100 Continue\r\n\r\n")[-1])
        assert status == expected, (data[:60], received[:300])
        assert code is None or body["error"] == code
        assert body["message"]


@pytest.mark.slow
def test_whole_requests_still_work_in_every_framing(served: int) -> None:
    pipelined = (
        b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
        b"POST /api/preflight HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
        b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    received, _ = exchange(served, pipelined)
    assert re.findall(rb"HTTP/1.1 (\d{3}) ", received) == [b"200", b"401", b"200"]
    chunked = (
        b"POST /api/preflight HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        b"Expect: 100-continue\r\nConnection: close\r\n\r\n1\r\n{\r\n1\r\n}\r\n0\r\nX-T: 1\r\n\r\n"
    )
    received, _ = exchange(served, chunked)
    final = received.split(b"HTTP/1.1 100 Continue\r\n\r\n")[-1]
    assert envelope(final)[0] == 401  # read whole and handed to the app, which wants a key
    with httpx.Client(base_url=f"http://127.0.0.1:{served}", timeout=60) as http:
        big = http.post("/api/preflight", content=b" " * 60_000 + b"{}")
        assert big.status_code == 401
        assert [http.get("/health").status_code for _ in range(5)] == [200] * 5


@pytest.mark.slow
@pytest.mark.parametrize(
    "server_process", [{"DRIFTGATE_BODY_TIMEOUT_SECONDS": "600"}], indirect=True
)
def test_a_stop_does_not_wait_for_requests_that_never_finish(
    server_process: tuple[int, subprocess.Popen[bytes]],
) -> None:
    port, process = server_process
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(5)]
    try:
        for sock in held:
            sock.sendall(b"POST /api/preflight HTTP/1.1\r\nContent-Length: 500\r\n\r\n{")
        wait_until_taken(*held)  # the server is reading five bodies that never finish
        process.send_signal(signal.SIGTERM)
        # The body timeout is 600 s, the linger 2 s: a stop within the patience of a wait
        # (120 s) did not wait for the bodies (a loaded 2-core machine took over 6 s).
        assert process.wait(timeout=PATIENCE) == 0
    finally:
        for sock in held:
            sock.close()
