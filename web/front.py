"""The server front: a gunicorn worker that gives a thread only to a request that has arrived.

gunicorn's `gthread` worker hands a connection to a thread as soon as its first bytes arrive,
and the thread then reads the headers and the body with blocking reads and no timeout. A
client that sends half a request (slowloris), or a Content-Length larger than what it sends,
holds that thread for as long as it likes; twenty such clients hold every thread of a
two-worker server and `/health` stops answering.

`BufferingWorker` keeps gthread's model (one event loop per worker process, a pool of
threads running the WSGI app) but reads each request whole in the event loop first,
without blocking: the header section must be complete within `header_timeout` seconds and the
body within `body_timeout` more, or the client gets 408 and the connection is closed. A body
announced or sent larger than the limit gets 413 before any of it is buffered past the limit,
and a header section over `MAX_HEADER_BYTES` gets 431. Only then is the request handed to a
thread, which parses it from memory (gunicorn's own parser, so framing rules are unchanged)
and runs the app; a pipelined request behind it goes back through the same buffering.

Framing is judged here only to find where a request ends (Content-Length, or the chunked
coding's last chunk and trailers). A malformed chunk size is refused here (400), since the
parser would only meet it after the app had answered; any other header this reading cannot
make sense of (a malformed or repeated length, both Content-Length and Transfer-Encoding)
is handed to gunicorn's parser as it is, which refuses it before the app runs. Every error
the server itself sends, here or from the parser, is the JSON envelope `{error, message}` of
the API, never gunicorn's HTML page.

`GET /health` (and `HEAD`) is answered here too, in the event loop, and never reaches a
thread: liveness must not wait behind requests that wait on a frozen database (each of them
holds a thread up to the statement timeout). It touches nothing but the version string, as
the route does (`web.api.health`), and keeps the connection alive as the app would.

`GET /health/ready` runs the app, since it asks the store, but on threads of its own
(`READY_THREADS`), not behind the requests that wait for a thread: readiness answers within
its budget (`web.api.health`) while every other thread waits on the database.

Each request handed to a thread carries the time it arrived whole (`ARRIVED_ENVIRON` in its
WSGI environ): its deadline (`request_deadline_seconds`, `web.lane`) counts its wait for a
thread. The time a client takes to send is its own, bounded by the header and body timeouts.
"""

from __future__ import annotations

import errno
import json
import selectors
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from gunicorn.http import errors as http_errors
from gunicorn.http.message import Request
from gunicorn.http.unreader import IterUnreader
from gunicorn.workers.gthread import TConn, ThreadWorker

from controller import __version__
from web.edge import ARRIVED_ENVIRON, access_log, correlation_id
from web.routes import CORRELATION_HEADER

MAX_HEADER_BYTES = 64 * 1024
"""The request line and header fields together; gunicorn limits each line further."""

DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_BODY_TIMEOUT = 30.0
DEFAULT_MAX_BODY = 1_048_576
RECV_SIZE = 256 * 1024
DRAIN_LIMIT = 64 * 1024 * 1024  # read and dropped after a refusal, so the client sees it
DRAIN_SECONDS = 10.0
STOP_LINGER = 2.0
READY_THREADS = 2
_READINESS = (b"GET /health/ready ", b"GET /health/ready?", b"HEAD /health/ready")
_CHUNK_LINE_LIMIT = 4096  # a chunk-size line with its extensions

_REASONS = {
    400: "Bad Request",
    403: "Forbidden",
    408: "Request Timeout",
    413: "Content Too Large",
    414: "URI Too Long",
    417: "Expectation Failed",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
}
_CODES = {
    400: "bad_request",
    403: "forbidden",
    408: "request_timeout",
    413: "payload_too_large",
    414: "uri_too_long",
    417: "expectation_failed",
    431: "header_fields_too_large",
    500: "internal_error",
    501: "not_implemented",
}
# gunicorn's parser errors and the status each one answers (its own choice, kept).
_PARSER_STATUS: tuple[tuple[type[Exception], int], ...] = (
    (http_errors.LimitRequestLine, 414),
    (http_errors.LimitRequestHeaders, 431),
    (http_errors.UnsupportedTransferCoding, 501),
    (http_errors.ExpectationFailed, 417),
    (http_errors.ForbiddenProxyRequest, 403),
    (http_errors.ParseException, 400),
)


HEALTH_BODY = json.dumps({"status": "ok", "version": __version__}, separators=(",", ":")).encode()


def health_response(correlation: str, *, keep_alive: bool, head: bool) -> bytes:
    """`/health`'s 200, as the app answers it (`web.api.health`)."""
    lines = (
        "HTTP/1.1 200 OK\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(HEALTH_BODY)}\r\n"
        f"{CORRELATION_HEADER}: {correlation}\r\n"
        + ("" if keep_alive else "Connection: close\r\n")
        + "\r\n"
    )
    return lines.encode("latin-1") + (b"" if head else HEALTH_BODY)


def health_request(cfg: Any, head: bytes, peer: Any) -> tuple[bool, bool, str] | None:
    """For a header section that asks for `/health` without a body and that gunicorn's own
    parser accepts: (whether it is a HEAD, whether the connection stays open, the
    `X-Service-Source`); None for any other request, which a thread serves (or refuses)."""
    try:
        request = Request(cfg, IterUnreader([head]), peer)
    except Exception:  # noqa: BLE001 - the thread's parser refuses it the same way
        return None
    if request.method not in ("GET", "HEAD") or request.path != "/health":
        return None
    source = ""
    for name, value in request.headers:
        if name == "TRANSFER-ENCODING" or (name == "CONTENT-LENGTH" and value != "0"):
            return None
        if name == "X-SERVICE-SOURCE":
            source = value[:100]
    return request.method == "HEAD", not request.should_close(), source


def error_response(status: int, message: str, correlation: str = "") -> bytes:
    """A complete HTTP/1.1 response carrying the API's error envelope; closes the connection.

    `correlation` is the caller's `X-Service-Correlation-Id`, echoed as the app would (a
    malformed or missing one is replaced by a new id)."""
    body = json.dumps({"error": _CODES.get(status, "http_error"), "message": message}).encode()
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        "Connection: close\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"{CORRELATION_HEADER}: {correlation_id(correlation)}\r\n\r\n"
    )
    return head.encode("latin-1") + body


class Framing:
    """Where one HTTP/1.1 request ends in the bytes received so far (see the module docstring).

    `feed()` answers `None` while more is needed, `True` when the request is complete (or is
    malformed in a way the parser must judge), or an `(status, message)` refusal."""

    def __init__(self, max_body: int) -> None:
        self.max_body = max_body
        self.header_end = -1
        self.scanned = 0
        self.length: int | None = None
        self.chunked = False
        self.chunk_pos = 0
        self.chunk_total = 0
        self.in_trailers = False
        self.expects_continue = False
        self.correlation = ""

    def feed(self, buffer: bytearray) -> bool | tuple[int, str] | None:
        if self.header_end < 0:
            end = buffer.find(b"\r\n\r\n", max(self.scanned - 3, 0))
            if end < 0:
                self.scanned = len(buffer)
                if len(buffer) > MAX_HEADER_BYTES:
                    return 431, f"the request header section exceeds {MAX_HEADER_BYTES} bytes"
                return None
            if end + 4 > MAX_HEADER_BYTES:
                return 431, f"the request header section exceeds {MAX_HEADER_BYTES} bytes"
            self.header_end = end + 4
            framing = self._read_headers(bytes(buffer[:end]))
            if framing is not None:
                return framing
        if self.chunked:
            return self._scan_chunks(buffer)
        if self.length is None:
            return True
        return len(buffer) - self.header_end >= self.length or None

    def _read_headers(self, head: bytes) -> bool | tuple[int, str] | None:
        lengths: list[bytes] = []
        codings: list[bytes] = []
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                lengths.append(value.strip())
            elif name == b"transfer-encoding":
                codings.append(value.strip().lower())
            elif name == b"x-service-correlation-id":
                self.correlation = value.strip().decode("latin-1")
            elif name == b"expect" and value.strip().lower() == b"100-continue":
                self.expects_continue = b"HTTP/1.0" not in head.split(b"\r\n", 1)[0]
        if codings:
            if lengths or not codings[-1].endswith(b"chunked"):
                return True  # the parser refuses it
            self.chunked = True
            self.chunk_pos = self.header_end
            return None
        if not lengths:
            return True  # no body
        if len(set(lengths)) != 1 or not lengths[0].isdigit():
            return True  # the parser refuses it
        self.length = int(lengths[0])
        if self.length > self.max_body:
            return 413, f"the request body exceeds the limit of {self.max_body} bytes"
        return None

    def _scan_chunks(self, buffer: bytearray) -> bool | tuple[int, str] | None:
        while True:
            eol = buffer.find(b"\r\n", self.chunk_pos)
            if eol < 0:
                if len(buffer) - self.chunk_pos > _CHUNK_LINE_LIMIT:
                    return 400, "a chunk-size line or trailer field is too long"
                return None
            if self.in_trailers:
                if eol == self.chunk_pos:
                    return True  # the empty line after the last chunk and its trailers
                self.chunk_pos = eol + 2
                continue
            size_text = bytes(buffer[self.chunk_pos : eol]).split(b";", 1)[0].strip()
            if not size_text or size_text.strip(b"0123456789abcdefABCDEF"):
                return 400, f"invalid chunk size: {size_text[:20]!r}"
            size = int(size_text, 16)
            if size == 0:
                self.in_trailers = True
                self.chunk_pos = eol + 2
                continue
            if self.chunk_total + size > self.max_body:
                return 413, f"the request body exceeds the limit of {self.max_body} bytes"
            after = eol + 2 + size + 2
            if len(buffer) < after:
                return None
            self.chunk_total += size
            self.chunk_pos = after


class _Arrival:
    """A connection whose next request is being read in the event loop."""

    __slots__ = ("conn", "buffer", "framing", "deadline", "in_body", "draining", "registered")

    def __init__(self, conn: TConn, initial: bytes, max_body: int, deadline: float) -> None:
        self.conn = conn
        self.buffer = bytearray(initial)
        self.framing = Framing(max_body)
        self.deadline = deadline
        self.in_body = False
        self.draining = 0  # bytes still to read and drop after a refusal
        self.registered = False


class BufferingWorker(ThreadWorker):  # type: ignore[misc]
    """gunicorn's gthread worker, giving a thread only to a request that arrived whole."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        settings = getattr(self.app, "settings", None)
        self.header_timeout = float(
            getattr(settings, "header_timeout_seconds", DEFAULT_HEADER_TIMEOUT)
        )
        self.body_timeout = float(getattr(settings, "body_timeout_seconds", DEFAULT_BODY_TIMEOUT))
        self.max_body = int(getattr(settings, "max_body_bytes", DEFAULT_MAX_BODY))
        self.arrivals: dict[TConn, _Arrival] = {}
        self.ready: set[TConn] = set()
        self.next_sweep = 0.0
        self.stopping = False
        self.readiness: set[TConn] = set()
        self.ready_pool: ThreadPoolExecutor | None = None
        self.serving = threading.local()  # the arrival time of the request a thread serves

    def init_process(self) -> None:
        self.ready_pool = ThreadPoolExecutor(READY_THREADS, thread_name_prefix="driftgate-ready")
        super().init_process()

    def load_wsgi(self) -> None:
        super().load_wsgi()
        app: Any = getattr(self, "wsgi")  # noqa: B009 - gunicorn leaves it untyped
        serving = self.serving

        def stamped(environ: dict[str, Any], start_response: Any) -> Any:
            environ[ARRIVED_ENVIRON] = getattr(serving, "arrived", None)
            return app(environ, start_response)

        self.wsgi = stamped

    def handle_request(self, req: Any, conn: TConn) -> Any:
        self.serving.arrived = getattr(conn, "arrived", None)
        try:
            return super().handle_request(req, conn)
        finally:
            self.serving.arrived = None

    @classmethod
    def check_config(cls, cfg: Any, log: Any) -> None:
        super().check_config(cfg, log)
        if cfg.is_ssl:
            raise RuntimeError("driftgate's server front reads plain HTTP; terminate TLS ahead")

    # Where gthread hands a connection to a thread, read its request first.

    def accept(self, listener: socket.socket) -> None:
        try:
            sock, client = listener.accept()
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        self._await_request(TConn(self.cfg, sock, client, listener.getsockname()), b"")

    def on_client_socket_readable(self, conn: TConn, client: Any) -> None:
        """A kept-alive connection has bytes: its next request is starting."""
        self.poller.unregister(client)
        self.keepalived_conns.remove(conn)
        arrival = self._await_request(conn, b"")
        if arrival is not None:
            self._on_readable(arrival, conn.sock)

    def enqueue_req(self, conn: TConn) -> None:
        if conn in self.ready:
            self.ready.discard(conn)
            if conn in self.readiness and self.ready_pool is not None:
                self.readiness.discard(conn)
                # gthread submits to `self.tpool`; this loop is the only thread that does.
                threads: Any = getattr(self, "tpool")  # noqa: B009 - untyped in gunicorn
                self.tpool = self.ready_pool
                try:
                    super().enqueue_req(conn)
                finally:
                    self.tpool = threads
                return
            super().enqueue_req(conn)
            return
        # gthread re-queues a kept-alive connection whose parser read into the next request.
        leftover = conn.parser.unreader.take_buffered() if conn.parser is not None else b""
        self._await_request(conn, leftover)

    def murder_pending(self) -> None:
        super().murder_pending()
        now = time.monotonic()
        if now < self.next_sweep and self.alive:
            return
        self.next_sweep = now + 0.25
        if not self.alive and not self.stopping:
            # Stopping: a request still arriving gets as long as a kept-alive connection does
            # (gthread's linger), not its whole timeout.
            self.stopping = True
            for arrival in self.arrivals.values():
                arrival.deadline = min(arrival.deadline, now + STOP_LINGER)
        for arrival in list(self.arrivals.values()):
            if arrival.draining or not arrival.buffer:
                if arrival.deadline <= now or not self.alive:
                    self._close(arrival)
            elif arrival.deadline <= now:
                what = "body" if arrival.in_body else "line and headers"
                limit = self.body_timeout if arrival.in_body else self.header_timeout
                self._refuse(arrival, 408, f"the request {what} did not arrive within {limit:g} s")

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        """The parser's and the app's failures as the API's JSON envelope, not an HTML page."""
        status = 500
        if not isinstance(
            exc, http_errors.InvalidResponseHeader | http_errors.InvalidResponseHeaderName
        ):
            status = next((s for kind, s in _PARSER_STATUS if isinstance(exc, kind)), 500)
        if status == 500:
            self.log.exception("Error handling request")
            message = "an unexpected error occurred; it was logged"
        else:
            self.log.warning("Invalid request from ip=%s: %s", (addr or ("",))[0], exc)
            message = str(exc) or _REASONS[status]
        try:
            client.sendall(error_response(status, message))
        except OSError:
            pass

    # The reading itself.

    def _await_request(self, conn: TConn, initial: bytes) -> _Arrival | None:
        conn.sock.setblocking(False)
        arrival = _Arrival(conn, initial, self.max_body, time.monotonic() + self.header_timeout)
        self.arrivals[conn] = arrival
        if initial and self._progress(arrival):
            return None
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_readable, arrival))
        arrival.registered = True
        return arrival

    def _on_readable(self, arrival: _Arrival, _sock: Any) -> None:
        try:
            data = arrival.conn.sock.recv(RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(arrival)
            return
        if not data:
            self._close(arrival)
        elif arrival.draining:
            arrival.draining -= len(data)
            if arrival.draining <= 0:
                self._close(arrival)
        else:
            arrival.buffer += data
            self._progress(arrival)

    def _progress(self, arrival: _Arrival) -> bool:
        """Act on what has arrived; True when the connection left the loop's reading."""
        outcome = arrival.framing.feed(arrival.buffer)
        if outcome is None:
            if arrival.framing.header_end >= 0 and not arrival.in_body:
                arrival.in_body = True
                arrival.deadline = time.monotonic() + self.body_timeout
                if arrival.framing.expects_continue:
                    self._send(arrival, b"HTTP/1.1 100 Continue\r\n\r\n")
            return False
        if isinstance(outcome, tuple):
            status, message = outcome
            self._refuse(arrival, status, message)
        elif not self._answer_health(arrival):
            self._hand_over(arrival)
        return True

    def _answer_health(self, arrival: _Arrival) -> bool:
        """Answer `GET /health` here (see the module docstring); False for any other request."""
        end = arrival.framing.header_end
        if end < 0 or not arrival.buffer.startswith((b"GET /health", b"HEAD /health")):
            return False
        asked = health_request(self.cfg, bytes(arrival.buffer[:end]), arrival.conn.client)
        if asked is None:
            return False
        head, keep_alive, source = asked
        keep_alive = keep_alive and self.alive
        started = time.perf_counter()
        correlation = correlation_id(arrival.framing.correlation)
        answer = health_response(correlation, keep_alive=keep_alive, head=head)
        access_log(
            "HEAD" if head else "GET",
            "/health",
            200,
            started,
            correlation,
            org=None,
            source=source or None,
        )
        if not keep_alive:
            self._send_and_close(arrival, answer)
            return True
        try:
            sent = arrival.conn.sock.send(answer)
        except OSError:
            sent = -1
        if sent != len(answer):  # a client that does not read its answers: let it go
            self._close(arrival)
            return True
        # The next request on this connection (perhaps already here, pipelined).
        self._forget(arrival)
        self._await_request(arrival.conn, bytes(arrival.buffer[end:]))
        return True

    def _hand_over(self, arrival: _Arrival) -> None:
        self._forget(arrival)
        conn = arrival.conn
        conn.init()  # plain HTTP/1.x (check_config): builds the parser, reads nothing
        conn.parser.unreader.unread(bytes(arrival.buffer))
        conn.arrived = time.monotonic()
        if arrival.buffer.startswith(_READINESS):
            self.readiness.add(conn)
        self.ready.add(conn)
        self.enqueue_req(conn)

    def _refuse(self, arrival: _Arrival, status: int, message: str) -> None:
        """Answer `status` and close, reading what the client still sends for a moment so that
        it sees the answer rather than a reset."""
        self._send_and_close(arrival, error_response(status, message, arrival.framing.correlation))

    def _send_and_close(self, arrival: _Arrival, answer: bytes) -> None:
        self._send(arrival, answer)
        try:
            arrival.conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            self._close(arrival)
            return
        announced = arrival.framing.length or 0
        arrival.draining = min(max(announced - len(arrival.buffer), RECV_SIZE), DRAIN_LIMIT)
        arrival.deadline = time.monotonic() + min(self.body_timeout, DRAIN_SECONDS)
        if not arrival.registered:
            self.arrivals[arrival.conn] = arrival
            self.poller.register(
                arrival.conn.sock, selectors.EVENT_READ, partial(self._on_readable, arrival)
            )
            arrival.registered = True

    @staticmethod
    def _send(arrival: _Arrival, data: bytes) -> None:
        try:
            arrival.conn.sock.send(data)  # small; fits the socket's send buffer
        except OSError:
            pass

    def _forget(self, arrival: _Arrival) -> None:
        self.arrivals.pop(arrival.conn, None)
        if arrival.registered:
            try:
                self.poller.unregister(arrival.conn.sock)
            except (KeyError, ValueError, OSError):
                pass
            arrival.registered = False

    def _close(self, arrival: _Arrival) -> None:
        self._forget(arrival)
        self.nr_conns -= 1
        arrival.conn.close()
