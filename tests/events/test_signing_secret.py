"""The org's signing secret is created once, however many delivery threads meet it at once.

On Postgres, several delivery threads claiming an org's first messages used to insert the
secret side by side: one lost with a unique violation, its message stayed leased, and the
weekly summary went out a lease later (CI timed out waiting for it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from controller.crypto import SecretBox, load_secret_box
from controller.events.secrets import signing_secret
from controller.store.db import Database
from tests.conftest import OrgKey, make_settings


def race(database: Database, box: SecretBox, org_id: str, threads: int) -> list[str]:
    """`threads` threads asking for the org's secret at the same moment; their answers."""
    barrier = threading.Barrier(threads)
    found: list[str] = []
    failures: list[BaseException] = []

    def first_use() -> None:
        barrier.wait()
        try:
            with database.transaction() as session:
                found.append(signing_secret(session, org_id, box))
        except BaseException as error:  # noqa: BLE001 - recorded for the assertion
            failures.append(error)

    workers = [threading.Thread(target=first_use) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
    assert failures == []
    return found


def test_threads_meeting_an_orgs_first_message_share_one_secret(
    database: Database, make_org: Callable[..., OrgKey], tmp_path: Path
) -> None:
    box = load_secret_box(make_settings(tmp_path, database_url=database.url))
    for _ in range(5):
        org = make_org()
        found = race(database, box, org.org_id, 4)
        assert len(found) == 4 and len(set(found)) == 1 and found[0].startswith("whsec_")
        with database.transaction() as session:
            assert signing_secret(session, org.org_id, box) == found[0]
