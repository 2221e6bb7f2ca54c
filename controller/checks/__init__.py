"""Checks: the engine that fetches a watched contract, diffs it and records what changed
(`engine`), and the controller heartbeats (`heartbeats_service`)."""
