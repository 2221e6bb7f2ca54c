"""An ASGI app served by uvicorn in a daemon thread on a loopback socket: the replay server
(`driftgate replay serve`, the pytest plugin) and the demo's vendor simulator.

The socket is bound before the thread starts, so the port is known (and a taken port is an
`OSError` for the caller to word) before anything is served; `TCP_NODELAY` is set on it
(accepted connections inherit it), else small answers wait out the peer's delayed ACK
(~40 ms a request on Linux loopback)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn


class ThreadedServer:
    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0, name: str = "server"):
        self.name = name
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.socket.bind((host, port))
        self.socket.listen(64)
        self.host, self.port = host, int(self.socket.getsockname()[1])
        config = uvicorn.Config(
            app, log_level="warning", timeout_graceful_shutdown=1, lifespan="on"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True
        )

    def start(self, timeout: float = 10.0) -> None:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the {self.name} did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)
        self.socket.close()
