"""People's accounts for the console: local users of an org, their passwords, their sessions.

- `passwords.py` (pure apart from hashing): argon2id hashes (`argon2-cffi`), and what a
  password must be;
- `service.py`: users (create, set a password through a one-time link, roles), sign-in with
  rate limits per account and per address, server-side sessions (rotated at sign-in,
  expiring, signed out one by one or everywhere) with their CSRF tokens.
"""
