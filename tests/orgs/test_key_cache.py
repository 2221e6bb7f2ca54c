"""The per-process API-key cache: reuse within its TTL, forgetting on local changes, LRU bound."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from pydantic import BaseModel
from sqlalchemy import update

from controller.crypto import hash_token
from controller.errors import Unauthorized
from controller.model.principal import Principal
from controller.orgs import auth_service
from controller.orgs import service as org_service
from controller.orgs.auth_service import KEY_CACHE, KeyCache
from controller.store.db import Database
from controller.store.models import ApiKey
from tests.conftest import OrgKey, make_settings
from web.auth import authenticate
from web.routes import Call, Registry

TTL = 60.0  # on the test's clock, which moves only when the test moves it


class Clock:
    """The key cache's clock (`time.monotonic` as `controller.orgs.auth_service` reads it),
    standing still until the test moves it on: expiry without waiting for it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    made = Clock()
    monkeypatch.setattr(auth_service, "time", made)
    return made


@pytest.fixture(autouse=True)
def _fresh_key_cache() -> Iterator[None]:
    """KEY_CACHE is a module global: every test starts and ends with it empty, TTL restored."""
    ttl = KEY_CACHE.ttl
    KEY_CACHE.clear()
    yield
    KEY_CACHE.clear()
    KEY_CACHE.ttl = ttl


class Who(BaseModel):
    plan: str
    products: list[str]


@pytest.fixture
def who_client(app: Flask) -> FlaskClient:
    """The real app plus a route answering the caller's plan and products."""
    registry = Registry()

    @registry.route("GET", "/test/who", summary="who", tag="test", responses={200: Who})
    def who(call: Call) -> Who:
        principal = call.principal_required
        return Who(plan=principal.plan, products=sorted(principal.products))

    registry.install(app, authenticate)
    return app.test_client()


def revoke_in_database(database: Database, key_id: str) -> None:
    """Revoke a key the way another process would: the row alone, no cache in this process."""
    with database.transaction() as session:
        session.execute(
            update(ApiKey).where(ApiKey.id == key_id).values(revoked_at=datetime.now(UTC))
        )


def principal(name: str) -> Principal:
    return Principal(f"id-{name}", name, "pro", frozenset(), "api_key", f"key-{name}")


def test_create_app_sets_the_ttl_from_the_setting(tmp_path: Path, database: Database) -> None:
    from web.app import create_app

    create_app(make_settings(tmp_path, database_url=database.url), database=database)
    assert KEY_CACHE.ttl == 2.0
    settings = make_settings(tmp_path, database_url=database.url, api_key_cache_seconds=0.25)
    create_app(settings, database=database)
    assert KEY_CACHE.ttl == 0.25


def test_a_key_revoked_elsewhere_works_until_the_ttl_passes(
    client: FlaskClient, acme: OrgKey, database: Database, clock: Clock
) -> None:
    KEY_CACHE.ttl = TTL
    assert client.get("/api/watches", headers=acme.headers).status_code == 200
    revoke_in_database(database, acme.key_id)
    assert client.get("/api/watches", headers=acme.headers).status_code == 200
    clock.advance(TTL - 1)
    assert client.get("/api/watches", headers=acme.headers).status_code == 200
    clock.advance(1)  # the TTL has passed since the key was read
    response = client.get("/api/watches", headers=acme.headers)
    assert response.status_code == 401
    assert response.json is not None and response.json["error"] == "invalid_api_key"
    # A refused key is not cached.
    assert KEY_CACHE._entries == {}


def test_revoking_in_this_process_refuses_the_next_request(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    assert KEY_CACHE.ttl == 2.0
    assert client.get("/api/watches", headers=acme.headers).status_code == 200
    assert len(KEY_CACHE._entries) == 1
    with database.transaction() as session:
        auth_service.revoke_api_key(session, acme.key_id, datetime.now(UTC), actor="test")
        # A request before the commit reads the key as still valid and caches it again...
        assert client.get("/api/watches", headers=acme.headers).status_code == 200
        assert len(KEY_CACHE._entries) == 1
    # ...and the commit forgets it.
    assert KEY_CACHE._entries == {}
    assert client.get("/api/watches", headers=acme.headers).status_code == 401


def test_plan_and_product_changes_are_seen_at_once(
    who_client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    assert who_client.get("/test/who", headers=acme.headers).json == {
        "plan": "pro",
        "products": [],
    }
    assert len(KEY_CACHE._entries) == 1
    with database.transaction() as session:
        org = org_service.get_org(session, acme.org_id)
        org_service.set_plan(session, org, "enterprise", actor="test")
    assert who_client.get("/test/who", headers=acme.headers).json == {
        "plan": "enterprise",
        "products": [],
    }
    with database.transaction() as session:
        org = org_service.get_org(session, acme.org_id)
        org_service.set_product(session, org, "replay_cloud", True, actor="test")
    assert who_client.get("/test/who", headers=acme.headers).json == {
        "plan": "enterprise",
        "products": ["replay_cloud"],
    }


def test_ttl_zero_reads_the_key_on_every_request(
    tmp_path: Path, acme: OrgKey, database: Database
) -> None:
    from web.app import create_app

    settings = make_settings(tmp_path, database_url=database.url, api_key_cache_seconds=0)
    client = create_app(settings, database=database).test_client()
    assert KEY_CACHE.ttl == 0
    assert client.get("/api/watches", headers=acme.headers).status_code == 200
    assert KEY_CACHE._entries == {}
    revoke_in_database(database, acme.key_id)
    assert client.get("/api/watches", headers=acme.headers).status_code == 401


def test_authenticate_api_key_caches_the_principal_without_the_touch(
    acme: OrgKey, database: Database
) -> None:
    KEY_CACHE.ttl = 60.0
    now = datetime.now(UTC)
    with database.session() as session:
        first = auth_service.authenticate_api_key(session, acme.key, now)
    # Never used: the caller is told to record the use; the cached copy does not say so again.
    assert first.touch and first.org_id == acme.org_id and first.credential_id == acme.key_id
    revoke_in_database(database, acme.key_id)
    with database.session() as session:
        again = auth_service.authenticate_api_key(session, acme.key, now)
    assert again == Principal(
        acme.org_id, "acme", "pro", frozenset(), "api_key", acme.key_id, touch=False
    )
    KEY_CACHE.clear()
    with database.session() as session, pytest.raises(Unauthorized):
        auth_service.authenticate_api_key(session, acme.key, now)


def test_forget_cached_keys_clears_now_and_again_on_commit(database: Database) -> None:
    KEY_CACHE.ttl = 60.0
    KEY_CACHE.put("a", principal("a"))
    with database.transaction() as session:
        auth_service.forget_cached_keys(session)
        assert KEY_CACHE._entries == {}
        KEY_CACHE.put("b", principal("b"))
    assert KEY_CACHE._entries == {}


def test_the_least_recently_used_key_is_evicted() -> None:
    cache = KeyCache(size=2)
    cache.ttl = 60.0
    cache.put("a", principal("a"))
    cache.put("b", principal("b"))
    assert cache.get("a") == principal("a")  # "a" is now the most recently used
    cache.put("c", principal("c"))
    assert cache.get("b") is None
    assert cache.get("a") == principal("a")
    assert cache.get("c") == principal("c")
    assert list(cache._entries) == ["a", "c"]


def test_an_expired_entry_is_dropped_on_read(clock: Clock) -> None:
    cache = KeyCache()
    cache.ttl = TTL
    cache.put("a", principal("a"))
    assert cache.get("a") == principal("a")
    clock.advance(TTL)
    assert cache.get("a") is None
    assert cache._entries == {}


def test_a_disabled_cache_holds_nothing() -> None:
    cache = KeyCache()
    assert cache.ttl == 0
    cache.put("a", principal("a"))
    assert cache.get("a") is None
    assert cache._entries == {}


def test_the_cache_holds_key_hashes_never_the_secret(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    assert client.get("/api/watches", headers=acme.headers).status_code == 200
    assert list(KEY_CACHE._entries) == [hash_token(acme.key)]
    for key_hash, (_expires, cached) in KEY_CACHE._entries.items():
        assert acme.key not in key_hash
        assert acme.key not in repr(cached)
