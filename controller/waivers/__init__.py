"""Waivers: accepted findings kept in git (`.driftgate/waivers.yaml`), their expiry and the
notices to their owners (docs/gitops-files.md, "waivers.yaml")."""
