"""Pydantic domain models shared by every layer (changes, severities, watches, manifests)."""
