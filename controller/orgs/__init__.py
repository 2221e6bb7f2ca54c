"""Orgs and their credentials: API keys and trial sessions (`auth_service`), orgs
(`service`), search, anonymous usage counts and key rotation of secrets at rest."""
