"""The servers of an MCP client configuration as fetch targets, for `driftgate mcp lock` and
`verify`: each server's name (its key in the configuration, as the client names it), its URL
or its stdio command line and environment, and its headers.

Unlike discovery (`controller.discovery.extract`), which never shows a secret and so redacts
them, a target is for connecting: a header or environment value that refers to a variable
(`${VAR}`, `${env:VAR}`, `$VAR`, the forms of ../shared/MCP-CLIENT-CONFIGS.md) takes its value
from the environment given; a value whose variable is not set is left out and named in
`unresolved`, so the caller can say so. Pure: the environment is passed in.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.discovery.extract import parse_config, servers_of
from controller.sources.mcp import STDIO_PREFIX

_REFERENCE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Target:
    """How to reach one server of a configuration."""

    name: str
    url: str | None = None
    command: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    # The header and environment names left out: their variable is not set.
    unresolved: tuple[str, ...] = ()

    @property
    def is_stdio(self) -> bool:
        return self.url is None

    @property
    def shown(self) -> str:
        """The target as messages show it: the URL without its query, or the command's
        program (never its arguments, which may hold tokens)."""
        if self.url is not None:
            return self.url.split("?", 1)[0].split("#", 1)[0]
        return f"{STDIO_PREFIX}{self.command[0] if self.command else ''}"

    @property
    def address(self) -> str:
        """The URL, or `stdio:<command line>` as the fetcher takes it."""
        return self.url if self.url is not None else STDIO_PREFIX + shlex.join(self.command)


def targets_of(text: str, file_name: str, environ: Mapping[str, str]) -> dict[str, Target]:
    """Every server of the configuration `text` (its file's name picks the format) by name;
    `ConfigInvalid` when it cannot be read. Disabled servers are left out."""
    _, servers = servers_of(parse_config(text, file_name), file_name)
    out: dict[str, Target] = {}
    for name, entry in servers.items():
        if isinstance(entry, dict) and not _disabled(entry):
            target = _target(str(name), entry, environ)
            if target is not None:
                out[str(name)] = target
    return out


def _disabled(entry: Mapping[str, Any]) -> bool:
    return bool(entry.get("disabled")) or entry.get("enabled") is False


def _target(name: str, entry: Mapping[str, Any], environ: Mapping[str, str]) -> Target | None:
    unresolved: list[str] = []
    url = entry.get("url") or entry.get("serverUrl") or entry.get("httpUrl")
    if isinstance(url, str) and url:
        headers = _resolved(
            _strings(entry.get("headers")) or _strings(entry.get("http_headers")),
            environ,
            unresolved,
        )
        token_var = entry.get("bearer_token_env_var")
        if isinstance(token_var, str) and token_var:
            if token_var in environ:
                headers["Authorization"] = f"Bearer {environ[token_var]}"
            else:
                unresolved.append("Authorization")
        return Target(name, url=url, headers=headers, unresolved=tuple(unresolved))
    command: Any = entry.get("command")
    args, env = entry.get("args"), entry.get("env")
    if isinstance(command, dict):  # Zed's older shape
        command, args, env = command.get("path"), command.get("args"), command.get("env")
    if not isinstance(command, str) or not command:
        return None
    words = [command, *(str(a) for a in (args if isinstance(args, list) else []) if a is not None)]
    return Target(
        name,
        command=tuple(words),
        env=_resolved(_strings(env), environ, unresolved),
        unresolved=tuple(unresolved),
    )


def _strings(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if v is not None}


def _resolved(
    values: dict[str, str], environ: Mapping[str, str], unresolved: list[str]
) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in values.items():
        names = [a or b for a, b in _REFERENCE.findall(value)]
        if "${input:" in value or any(n not in environ for n in names):
            # A VS Code input is asked of a person when the client starts the server.
            unresolved.append(key)
            continue
        out[key] = _REFERENCE.sub(lambda m: environ[m.group(1) or m.group(2)], value)
    return out
