"""Password hashing with argon2id (`argon2-cffi`, the reference implementation's binding).

argon2id is the password hash OWASP recommends; the library's default parameters (RFC 9106's
low-memory profile) are used, and a hash made with older parameters is re-made at the next
sign-in (`needs_rehash`). A password is 12 to 200 characters; nothing else is demanded of it
(NIST SP 800-63B: length, not composition rules).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from argon2 import PasswordHasher

MIN_LENGTH = 12
MAX_LENGTH = 200


@cache
def _hasher() -> PasswordHasher:
    # Made when a password is first hashed or checked: a process that only creates accounts
    # (`driftgate users create`) neither imports argon2 nor hashes the dummy.
    from argon2 import PasswordHasher

    return PasswordHasher()


@cache
def _dummy() -> str:
    """Verified against when an account does not exist, so a sign-in takes as long either way."""
    return _hasher().hash("driftgate: no such account")


def password_problem(password: str) -> str | None:
    if len(password) < MIN_LENGTH:
        return f"a password has at least {MIN_LENGTH} characters"
    if len(password) > MAX_LENGTH:
        return f"a password has at most {MAX_LENGTH} characters"
    if any(ord(c) < 32 or ord(c) == 127 for c in password):
        return "a password holds no control characters"
    return None


def hash_password(password: str) -> str:
    return _hasher().hash(password)


def verify(stored: str | None, password: str) -> bool:
    """Whether `password` matches `stored` (a missing hash is checked against a dummy, and
    never matches)."""
    from argon2.exceptions import InvalidHashError, VerificationError

    try:
        return _hasher().verify(stored or _dummy(), password) and stored is not None
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(stored: str) -> bool:
    return _hasher().check_needs_rehash(stored)
