"""The delivery lane: threads of their own that drain the outbox, apart from the checks.

Deliveries used to run inside the controller's tick, one message after another: a webhook
receiver that took 40 s to answer held the tick, so the checks due meanwhile were neither
queued nor started. Here a small pool of threads (`delivery_concurrency`) each claims one
due message at a time, sends it through its channel with the channel's own deadline, records
the attempt, and claims the next; idle threads look again every `poll_seconds`, or at once
when `wake()` is called. A slow receiver holds at most the threads that are sending to it,
never a check, the ticker or the claims; the checks' HTTP client is not shared either.

Claims keep their per-message lease (`controller.events.delivery`), so several controllers'
lanes share one outbox without sending a message twice.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from controller.crypto import SecretBox
from controller.events.channels import Channels
from controller.events.delivery import deliver_due
from controller.store.db import Database

logger = logging.getLogger("driftgate.deliveries")


class DeliveryWorkers:
    """`concurrency` threads delivering the outbox until `stop`."""

    def __init__(
        self,
        database: Database,
        box: SecretBox,
        client: Any,
        channels: Channels,
        clock: Callable[[], datetime],
        *,
        concurrency: int = 4,
        poll_seconds: float = 1.0,
        group_seconds: float = 0,
    ) -> None:
        self.database = database
        self.box = box
        self.client = client
        self.channels = channels
        self.clock = clock
        self.concurrency = concurrency
        self.poll_seconds = poll_seconds
        # `delivery_group_seconds`: repeats about one watch are grouped (`events.grouping`).
        self.group_seconds = group_seconds
        self.stopping = threading.Event()
        self.work = threading.Condition()
        # One log line when delivering starts failing (the store is down, say), one when it
        # works again: not a trace per thread and round.
        self.failing = False
        self.threads = [
            threading.Thread(target=self._run, name=f"driftgate-deliver-{i}", daemon=True)
            for i in range(concurrency)
        ]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def wake(self) -> None:
        """Look for due messages now (something was just queued)."""
        with self.work:
            self.work.notify_all()

    def stop(self, grace: float) -> None:
        """Stop claiming; let sends in progress end within `grace` seconds (a message whose
        send is cut off is sent again once its lease expires)."""
        self.stopping.set()
        self.wake()
        for thread in self.threads:
            if thread.is_alive():
                thread.join(timeout=grace)

    def deliver_once(self) -> int:
        """Claim, send and record one due message in the caller's thread; how many (0 or 1)."""
        return deliver_due(
            self.database,
            self.box,
            self.client,
            self.clock(),
            1,
            channels=self.channels,
            group_seconds=self.group_seconds,
        )

    def drain(self) -> int:
        """Deliver every message due now in the caller's thread (tests, `run_until_done`)."""
        total = 0
        while (sent := self.deliver_once()) > 0:
            total += sent
        return total

    def _run(self) -> None:
        while not self.stopping.is_set():
            try:
                sent = self.deliver_once()
            except Exception as exc:  # noqa: BLE001 - the lane must survive a bad round
                # The store's outage is logged by the store, once (`controller.store.outage`).
                if self.database.unavailable(exc) is None and not self.failing:
                    self.failing = True
                    logger.exception("deliveries.failing")
                sent = 0
            else:
                if self.failing:
                    self.failing = False
                    logger.info("deliveries.recovered")
            if sent == 0:
                with self.work:
                    if not self.stopping.is_set():
                        self.work.wait(self.poll_seconds)
