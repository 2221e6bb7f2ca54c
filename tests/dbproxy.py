"""A loopback TCP proxy in front of a database server, to make it go down or freeze without
touching the server (the tests' Postgres is shared).

- `forward()`: bytes flow both ways, new connections are accepted;
- `down()`: like a stopped server: every connection is cut and new ones are refused (the
  listening socket is closed; `forward()` opens it again on the same port);
- `freeze()`: like a server that was SIGSTOPped, or a network path that died: connections
  stay open and new ones complete their TCP handshake in the kernel's backlog, but nothing is
  read or forwarded any more, either way; `forward()` lets everything through again.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from sqlalchemy.engine import make_url

POLL = 0.05


class DatabaseProxy:
    def __init__(self, target: tuple[str, int] = ("127.0.0.1", 5432)) -> None:
        self.target = target
        self.flowing = threading.Event()
        self.flowing.set()
        self.closed = threading.Event()
        self.lock = threading.Lock()
        self.sockets: set[socket.socket] = set()
        self.clients: set[socket.socket] = set()  # the accepted ends of `sockets`
        self.listener: socket.socket | None = None
        self.port = 0
        self._listen()
        self.accepted = 0
        self.thread = threading.Thread(target=self._accept, name="db-proxy", daemon=True)
        self.thread.start()

    def url(self, database_url: str) -> str:
        """`database_url` pointed at this proxy."""
        return (
            make_url(database_url)
            .set(host="127.0.0.1", port=self.port)
            .render_as_string(hide_password=False)
        )

    def forward(self) -> None:
        with self.lock:
            if self.listener is None:
                self._listen()
        self.flowing.set()

    def freeze(self) -> None:
        self.flowing.clear()

    def down(self) -> None:
        with self.lock:
            listener, self.listener = self.listener, None
            sockets, self.sockets = self.sockets, set()
            self.clients = set()
        if listener is not None:
            _cut(listener)
        for sock in sockets:
            _cut(sock)
        self.flowing.set()

    def held(self) -> int:
        """How many clients wait on the frozen proxy: connections whose bytes it does not
        read, plus one when connections wait in the backlog (the kernel completed their
        handshake; nobody accepts them)."""
        with self.lock:
            clients = [sock for sock in self.clients if sock.fileno() >= 0]
            listener = self.listener
        waiting = select.select(clients, [], [], 0)[0] if clients else []
        pending = listener is not None and bool(select.select([listener], [], [], 0)[0])
        return len(waiting) + int(pending)

    def close(self) -> None:
        self.closed.set()
        self.down()
        self.thread.join(timeout=5)

    def _listen(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        for _ in range(100):  # the closed listener's port is free once no poll holds it
            try:
                listener.bind(("127.0.0.1", self.port))
                break
            except OSError:
                if not self.port:
                    raise
                time.sleep(0.02)
        else:
            raise OSError(f"port {self.port} stays taken")
        listener.listen(128)
        self.port = listener.getsockname()[1]
        self.listener = listener

    def _accept(self) -> None:
        while not self.closed.is_set():
            self.flowing.wait(POLL)
            listener = self.listener
            if listener is None or not self.flowing.is_set():
                continue  # frozen: connections wait in the kernel's backlog
            try:
                ready, _, _ = select.select([listener], [], [], POLL)
                if not ready:
                    continue
                client, _ = listener.accept()
            except (OSError, ValueError):
                continue  # closed meanwhile (down)
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            self.accepted += 1
            with self.lock:
                self.sockets.update((client, upstream))
                self.clients.add(client)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while not self.closed.is_set():
                if not self.flowing.wait(POLL):
                    continue  # frozen: what was sent stays in the kernel's buffers
                ready, _, _ = select.select([source], [], [], POLL)
                if not ready or not self.flowing.is_set():
                    continue
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except (OSError, ValueError):
            pass
        finally:
            with self.lock:
                self.sockets.discard(source)
                self.sockets.discard(sink)
                self.clients.discard(source)
                self.clients.discard(sink)
            _cut(source)
            _cut(sink)


def _cut(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


@contextmanager
def database_proxy(target: tuple[str, int]) -> Iterator[DatabaseProxy]:
    proxy = DatabaseProxy(target)
    try:
        yield proxy
    finally:
        proxy.close()
