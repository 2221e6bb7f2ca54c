"""The org's last admin stays (issue 40, point 6): two admins demoting or removing each other
at the same moment leave exactly one admin, on both stores; the console refuses it too."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

from flask.testing import FlaskClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from controller.accounts import service as accounts
from controller.errors import Conflict
from controller.orgs import service as org_service
from controller.store.db import Database
from controller.store.models import User
from controller.store.types import utcnow
from tests.conftest import OrgKey
from tests.factories import csrf_of, make_user, sign_in

RACES = 20
Change = Callable[..., None]


def demote(session: Session, user: User, *, actor: str) -> None:
    accounts.change_role(session, user, "viewer", actor=actor)


CHANGES: tuple[tuple[Change, Change], ...] = (
    (demote, demote),
    (accounts.remove_user, accounts.remove_user),
    (demote, accounts.remove_user),
)


def two_admins(database: Database) -> tuple[str, str, str]:
    """A new org with two admins (no passwords: the race needs none); their ids."""
    with database.transaction() as session:
        org = org_service.create_org(session, f"race-{uuid.uuid4().hex[:8]}", actor="test")
        ids = []
        for name in ("a", "b"):
            user, _token = accounts.create_user(
                session, org, f"{name}@{org.name}.example", "admin", actor="test", now=utcnow()
            )
            ids.append(user.id)
        return org.id, ids[0], ids[1]


def race(
    database: Database, org_id: str, changes: tuple[Change, Change], targets: list[str]
) -> list[str]:
    """Each thread changes its target in a transaction of its own, the two at once; what
    each one ended with (`ok` or the error code)."""
    # On Postgres both read their target and then meet, so that without a lock each would
    # count the other as an admin. On SQLite a writing transaction takes the write lock at
    # its first statement: the second thread waits there, so they meet before it.
    meet = threading.Barrier(2, timeout=30)
    outcomes = ["", ""]

    def change(n: int) -> None:
        try:
            if database.is_sqlite:
                meet.wait()
            with database.transaction() as session:
                target = accounts.member(session, org_id, targets[n])
                if not database.is_sqlite:
                    meet.wait()
                changes[n](session, target, actor=f"user:{n}")
            outcomes[n] = "ok"
        except Conflict as exc:
            outcomes[n] = exc.code

    threads = [threading.Thread(target=change, args=(n,)) for n in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes


def test_two_admins_demoting_or_removing_each_other_leave_one_admin(database: Database) -> None:
    results = []
    for n in range(RACES):
        org_id, a, b = two_admins(database)
        outcomes = race(database, org_id, CHANGES[n % len(CHANGES)], [b, a])
        with database.session() as session:
            admins = session.scalar(
                select(func.count())
                .select_from(User)
                .where(User.org_id == org_id, User.role == "admin")
            )
        results.append((sorted(outcomes), admins))
    assert results == [(["last_admin", "ok"], 1)] * RACES


def test_the_console_refuses_to_demote_or_remove_the_last_admin(
    client: FlaskClient, database: Database, acme: OrgKey
) -> None:
    make_user(database, "acme", "only@example.com")
    sign_in(client, "only@example.com")
    with database.session() as session:
        me = session.scalar(select(User.id).where(User.email == "only@example.com"))
    csrf = csrf_of(client.get("/console/settings").get_data(as_text=True))
    for action, form in (("role", {"role": "viewer"}), ("remove", {})):
        answer = client.post(
            f"/console/settings/members/{me}/{action}", data={"csrf_token": csrf, **form}
        )
        assert answer.status_code == 409, answer.get_data(as_text=True)
        assert "last admin and cannot be" in answer.get_data(as_text=True)
    with database.session() as session:
        assert session.scalar(select(User.role).where(User.id == me)) == "admin"
