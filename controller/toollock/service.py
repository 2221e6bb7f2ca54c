"""Locking and verifying servers (`driftgate mcp lock`, `driftgate mcp verify`): fetch each
target's surface live with the MCP fetcher (`controller.sources.mcp`), or take a snapshot file,
and turn it into a lock entry or into violations of one.

Local stdio servers run a command on this machine: they are fetched only when the operator's
switch allows them (`DRIFTGATE_ALLOW_STDIO_MCP`, `Settings.allow_stdio_mcp`), as for watches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.sources.http import FetchError, HttpClient
from controller.sources.mcp import McpLimits, fetch_http_mcp_snapshot, fetch_stdio_mcp_snapshot
from controller.toollock.lock import Violation, compare, entry_of
from controller.toollock.targets import Target


class TargetUnreachable(Exception):
    """A server that could not be read (the message names it, never a secret)."""


@dataclass(frozen=True)
class Verified:
    """One server checked against its lock entry."""

    server: str
    violations: list[Violation]


def fetch_surface(
    target: Target, *, client: HttpClient, allow_stdio: bool, limits: McpLimits
) -> dict[str, Any]:
    """The surface `target` advertises now; `TargetUnreachable` when it cannot be read."""
    try:
        if target.is_stdio:
            snapshot = fetch_stdio_mcp_snapshot(
                list(target.command), allow_stdio=allow_stdio, env=target.env, limits=limits
            )
        else:
            assert target.url is not None
            snapshot = fetch_http_mcp_snapshot(
                client, target.url, headers=target.headers, limits=limits
            )
    except FetchError as exc:
        raise TargetUnreachable(f"server {target.name}: {exc.message}") from None
    snapshot.pop("transport", None)  # how it was reached is no part of what it offers
    return snapshot


def lock_entries(
    targets: Mapping[str, Target], *, client: HttpClient, allow_stdio: bool, limits: McpLimits
) -> dict[str, dict[str, Any]]:
    """The lock entry of each target, by name, from its live surface."""
    return {
        name: entry_of(
            fetch_surface(targets[name], client=client, allow_stdio=allow_stdio, limits=limits)
        )
        for name in sorted(targets)
    }


def verify(surfaces: Mapping[str, Any], entries: Mapping[str, Mapping[str, Any]]) -> list[Verified]:
    """Each surface (by server name) against its server's lock entry."""
    return [Verified(name, compare(surfaces[name], entries[name])) for name in sorted(surfaces)]
