"""Secrets at rest: MultiFernet with rotation, generated key files, token hashing."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from flask.testing import FlaskClient
from sqlalchemy import select

from controller.crypto import SecretBox, hash_token, load_secret_box, new_token
from controller.errors import ConfigError, PermanentError
from controller.orgs.secrets_service import rotate_all
from controller.store.db import Database
from controller.store.models import Watch
from tests.conftest import OrgKey, make_settings


def test_round_trip_with_passphrase_and_fernet_keys() -> None:
    for key in ("a long enough passphrase", Fernet.generate_key().decode()):
        box = SecretBox([key])
        token = box.encrypt_json({"Authorization": "Bearer x"})
        assert "Bearer" not in token
        assert box.decrypt_json(token) == {"Authorization": "Bearer x"}


def test_short_keys_are_refused() -> None:
    with pytest.raises(ConfigError, match="16\\+ characters"):
        SecretBox(["short"])


def test_rotation_keeps_old_tokens_readable_then_drops_the_old_key() -> None:
    old, new = "the old key 0123456789", "the new key 0123456789"
    token = SecretBox([old]).encrypt_json({"a": "1"})
    both = SecretBox([new, old])
    assert both.decrypt_json(token) == {"a": "1"}
    rotated = both.rotate(token)
    assert SecretBox([new]).decrypt_json(rotated) == {"a": "1"}
    with pytest.raises(PermanentError) as info:
        SecretBox([new]).decrypt_json(token)
    assert info.value.code == "secret_undecryptable"


def test_key_file_is_generated_once_with_private_mode(tmp_path: Path) -> None:
    settings = make_settings(tmp_path).model_copy(update={"secret_key": ()})
    with pytest.raises(ConfigError, match="DRIFTGATE_SECRET_KEY is not set"):
        load_secret_box(settings)
    box = load_secret_box(settings, create=True)
    assert stat.S_IMODE(settings.secret_key_file.stat().st_mode) == 0o600
    token = box.encrypt_json([1])
    assert load_secret_box(settings).decrypt_json(token) == [1]


def test_token_hashing() -> None:
    token = new_token("dg_")
    assert token.startswith("dg_") and len(token) > 40
    assert hash_token(token) == hash_token(token) != hash_token(token + "x")


def test_rotate_all_rewrites_stored_headers(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    client.post(
        "/api/watches",
        json={"name": "a", "url": "https://x.example/openapi.json", "headers": {"X-Key": "v1"}},
        headers=acme.headers,
    )
    new = "a brand new key 0123456789"
    from tests.conftest import SECRET

    with database.transaction() as session:
        assert rotate_all(session, SecretBox([new, SECRET])) == 1
    with database.session() as session:
        watch = session.scalars(select(Watch)).one()
        assert watch.headers_ciphertext is not None
        assert SecretBox([new]).decrypt_json(watch.headers_ciphertext) == {"X-Key": "v1"}


def test_rotation_covers_every_encrypted_column() -> None:
    # A column named `*_ciphertext` that `rotate_all` forgot would stay under the old key, and
    # become unreadable once that key is dropped (a template's headers once were).
    from controller.orgs.secrets_service import ENCRYPTED
    from controller.store.models import Base

    stored = {
        f"{table.name}.{column.name}"
        for table in Base.metadata.sorted_tables
        for column in table.columns
        if column.name.endswith("_ciphertext")
    }
    rotated = {f"{c.class_.__tablename__}.{c.key}" for c in ENCRYPTED}
    assert stored == rotated


def test_signed_tokens_are_bound_to_their_purpose_and_keys() -> None:
    box = SecretBox(["an-old-key-of-sixteen-chars", "a-new-key-of-sixteen-chars"])
    token = box.sign("one purpose", b"payload")
    assert box.verify("one purpose", token) == b"payload"
    assert box.verify("another purpose", token) is None
    # Signed under the key that is now second: still valid during a rotation.
    rotated = SecretBox(["a-new-key-of-sixteen-chars", "an-old-key-of-sixteen-chars"])
    assert rotated.verify("one purpose", token) == b"payload"
    assert SecretBox(["a-new-key-of-sixteen-chars"]).verify("one purpose", token) is None
    for broken in ("", "%%%", token[:-1], token + "A"):
        assert box.verify("one purpose", broken) is None
