"""Secrets at rest and credential hashing.

`SecretBox` encrypts values such as watch headers with MultiFernet: the first key of
`DRIFTGATE_SECRET_KEY` encrypts, every listed key decrypts, so keys rotate by prepending a
new one and running `driftgate secrets rotate`. Keys may be Fernet keys or any passphrase
of 16+ characters (stretched with HKDF-SHA256). API keys and trial tokens are random
256-bit strings, so a plain SHA-256 is the right hash: it is fast to look up and cannot be
brute-forced.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from controller.errors import ConfigError, PermanentError
from controller.settings import Settings

_HKDF_INFO = b"driftgate secret box v1"


class SecretBox:
    """Encrypt and decrypt small JSON values with a rotating set of keys."""

    def __init__(self, keys: list[str]) -> None:
        if not keys:
            raise ConfigError("DRIFTGATE_SECRET_KEY: at least one key is needed")
        self._fernet = MultiFernet([Fernet(_to_fernet_key(k)) for k in keys])
        self._keys = list(keys)

    def encrypt_json(self, value: Any) -> str:
        raw = json.dumps(value, separators=(",", ":"), sort_keys=True).encode()
        return self._fernet.encrypt(raw).decode("ascii")

    def decrypt_json(self, token: str) -> Any:
        try:
            return json.loads(self._fernet.decrypt(token.encode("ascii")))
        except InvalidToken:
            raise PermanentError(
                "a stored secret cannot be decrypted with the configured keys; "
                "keep the old key in DRIFTGATE_SECRET_KEY until `driftgate secrets rotate` ran",
                code="secret_undecryptable",
            ) from None

    def derived_keys(self, purpose: str) -> list[bytes]:
        """One key per configured key (primary first) for another purpose, e.g. signing audit
        exports; derived with HKDF so the encryption keys are never used twice."""
        info = f"driftgate {purpose} v1".encode()
        return [
            HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(k.encode())
            for k in self._keys
        ]

    def sign(self, purpose: str, payload: bytes) -> str:
        """`payload` with an HMAC-SHA256 under the primary key derived for `purpose`, as
        URL-safe base64 without padding: a token a link or a callback can carry."""
        mac = hmac.new(self.derived_keys(purpose)[0], payload, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(payload + b"." + mac).decode().rstrip("=")

    def verify(self, purpose: str, token: str) -> bytes | None:
        """The payload of a token `sign` made for `purpose` under any configured key, or None
        when it was forged, altered, signed for another purpose or is not a token at all."""
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except (ValueError, UnicodeEncodeError):
            return None
        payload, dot, mac = raw[:-33], raw[-33:-32], raw[-32:]
        if dot != b"." or len(mac) != 32:
            return None
        signed = any(
            hmac.compare_digest(mac, hmac.new(key, payload, hashlib.sha256).digest())
            for key in self.derived_keys(purpose)
        )
        return payload if signed else None

    def rotate(self, token: str) -> str:
        """Re-encrypt a token with the primary key."""
        return self._fernet.rotate(token.encode("ascii")).decode("ascii")


def _to_fernet_key(key: str) -> bytes:
    try:
        raw = base64.urlsafe_b64decode(key.encode("ascii"))
        if len(raw) == 32 and len(key) == 44:
            return key.encode("ascii")
    except (ValueError, UnicodeEncodeError):
        pass
    if len(key) < 16:
        raise ConfigError(
            "DRIFTGATE_SECRET_KEY: each key must be a Fernet key or a passphrase of 16+ characters"
        )
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_HKDF_INFO).derive(
        key.encode()
    )
    return base64.urlsafe_b64encode(derived)


def load_secret_box(settings: Settings, *, create: bool = False) -> SecretBox:
    """The box for these settings: configured keys, else the key file in data_dir.

    With `create`, a missing key file is generated (mode 0600) so that `driftgate up` works
    on a fresh machine without setup.
    """
    keys = [k.get_secret_value() for k in settings.secret_key]
    if keys:
        return SecretBox(keys)
    path = settings.secret_key_file
    if path.exists():
        return SecretBox([_read_key_file(path)])
    if not create:
        raise ConfigError(
            f"DRIFTGATE_SECRET_KEY is not set and {path} does not exist; "
            "set the variable or run `driftgate up` once to generate the key file"
        )
    write_key_file(path, Fernet.generate_key().decode("ascii"))
    return SecretBox([_read_key_file(path)])


def _read_key_file(path: Path) -> str:
    key = path.read_text(encoding="ascii").strip()
    if not key:
        raise ConfigError(f"{path}: the key file is empty")
    return key


def write_key_file(path: Path, key: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(key + "\n")


def new_token(prefix: str) -> str:
    """A fresh credential such as `dg_...`: 256 random bits, URL-safe."""
    return prefix + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def tokens_equal(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())
