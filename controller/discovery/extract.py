"""Discovery: turn what a team pastes (URLs, text, MCP client configuration files) into watch
candidates. Pure: no I/O, nothing is fetched, started or executed.

A candidate is `{name, watchType, url | command, transport, source: {file, line}, confidence,
reasons, floatingVersion?}`. MCP client configurations follow `../shared/MCP-CLIENT-CONFIGS.md`:
Claude Desktop and Code, Cursor, VS Code (`servers` + `inputs`, and the legacy `settings.json`
key), Windsurf (`serverUrl`), Cline (`streamableHttp`), Zed (`context_servers`, both shapes),
Codex (TOML `mcp_servers`), Gemini (`httpUrl` vs `url`), Kiro, Amazon Q, Copilot CLI, Roo,
Continue (YAML) and OpenClaw (`mcp.servers`), JSONC (comments, trailing commas) and a pasted
inner `{name: {...}}` fragment. Secrets never come back: header and env values are redacted
(`${env:TOKEN}`-style placeholders stay placeholders, literal values become `<redacted>`).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import json5
import yaml

from controller.contracts.base import MCP_SESSION
from controller.contracts.kinds import CONTRACT_KINDS, MCP
from controller.errors import Unprocessable

REDACTED = "<redacted>"
PLACEHOLDER = re.compile(
    r"^(?:.*?)(\$\{(?:env:|input:|file:)?[A-Za-z_][A-Za-z0-9_.:-]*(?::-[^}]*)?\}|\$[A-Za-z_][A-Za-z0-9_]*)"
)
_URL = re.compile(r"https?://[^\s\"'<>`)\]}]+", re.IGNORECASE)
_UNTOLD = "an HTTP endpoint that is not a spec document or an MCP endpoint"


class ConfigInvalid(Unprocessable):
    """A configuration that cannot be read: names the file and the line. 422: the request
    matched its schema (the configuration is text), it cannot be acted on."""

    code = "config_invalid"


@dataclass
class Candidate:
    name: str
    watch_type: str  # a contract kind's name (`controller.contracts.kinds`)
    url: str | None = None
    command: str | None = None  # a stdio server: the command line (secrets redacted)
    transport: str | None = None  # stdio, http, sse (MCP)
    file: str | None = None
    line: int | None = None
    confidence: float = 0.5
    reasons: list[str] = field(default_factory=list)
    package: str | None = None
    floating_version: bool | None = None
    headers: dict[str, str] = field(default_factory=dict)  # redacted
    env: dict[str, str] = field(default_factory=dict)  # redacted
    disabled: bool = False
    acknowledged: bool = False  # a stdio server acknowledged in .driftgate/coverage.yaml
    origin: str = ""  # where the request held it: a JSON pointer (/urls/0, /text, /mcpJson)

    @property
    def key(self) -> str:
        """What identifies the contract: the URL, or the stdio command."""
        return (self.url or self.command or self.name).rstrip("/").lower()


# -- URLs -------------------------------------------------------------------------------------


def infer_watch_type(url: str) -> tuple[str, str]:
    """(watch type, reason) of a URL by its shape: the type a watch created from the URL
    without `watchType` gets (`controller.model.watch.infer_watch_type`) wherever that tells,
    so a candidate and its watch never disagree; else the catch-all (`rest`)."""
    found = CONTRACT_KINDS.infer(url)
    if found is not None:
        return found[0].name, found[1]
    return CONTRACT_KINDS.catch_all.name, _UNTOLD


def _parses(url: str) -> bool:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises for a port out of range
    except ValueError:
        return False
    return bool(parts.hostname)


def from_urls(urls: list[str], *, file: str | None = None) -> list[Candidate]:
    """Candidates of URLs (one that does not parse as a URL is left out)."""
    out = []
    for url in urls:
        if not _parses(url):
            continue
        watch_type, reason = infer_watch_type(url)
        # A session's transport; a URL that names no kind is a guess.
        transport = "sse" if urlsplit(url).path.rstrip("/").endswith("/sse") else "http"
        is_session = CONTRACT_KINDS.of(watch_type).fetch == MCP_SESSION
        out.append(
            Candidate(
                name=_name_of(url),
                watch_type=watch_type,
                url=url,
                transport=transport if is_session else None,
                file=file,
                confidence=0.9 if reason != _UNTOLD else 0.6,
                reasons=[reason],
            )
        )
    return out


def urls_in_text(text: str) -> list[tuple[str, int]]:
    """(URL, line) of every http(s) URL in free text, in order, without duplicates."""
    found: list[tuple[str, int]] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        for match in _URL.finditer(line):
            url = match.group(0).rstrip(".,;:")
            if url not in seen:
                seen.add(url)
                found.append((url, number))
    return found


def from_text(text: str, *, file: str | None = None) -> list[Candidate]:
    out = []
    for url, line in urls_in_text(text):
        for candidate in from_urls([url], file=file):
            candidate.line = line
            out.append(candidate)
    return out


def _name_of(url: str) -> str:
    parts = urlsplit(url)
    host = (parts.hostname or "service").removeprefix("www.").removeprefix("api.")
    return host.split(".")[0] or "service"


# -- MCP client configurations ------------------------------------------------------------------

# File name (its end) -> format. The format decides where the servers are and how they read.
_FORMATS: tuple[tuple[str, str], ...] = (
    ("claude_desktop_config.json", "claude-desktop"),
    (".claude.json", "claude-code-user"),
    (".mcp.json", "claude-code"),
    (".cursor/mcp.json", "cursor"),
    (".vscode/mcp.json", "vscode"),
    ("code/user/mcp.json", "vscode"),
    (".vscode/settings.json", "vscode-settings"),
    ("code/user/settings.json", "vscode-settings"),
    ("windsurf/mcp_config.json", "windsurf"),
    ("cline_mcp_settings.json", "cline"),
    (".zed/settings.json", "zed"),
    ("zed/settings.json", "zed"),
    (".codex/config.toml", "codex"),
    ("config.toml", "codex"),
    (".gemini/settings.json", "gemini"),
    ("antigravity/mcp_config.json", "antigravity"),
    (".kiro/settings/mcp.json", "kiro"),
    ("amazonq/mcp.json", "amazon-q"),
    (".copilot/mcp-config.json", "copilot-cli"),
    (".roo/mcp.json", "roo"),
    (".continue/config.yaml", "continue"),
    ("openclaw.json", "openclaw"),
)
# A plain `mcp.json` (the hosted CLI's first scan root, and many projects' shared file) is no
# one client's: the shape decides where its servers are. Matched by its whole name only.
GENERIC_NAME, GENERIC = "mcp.json", "mcp-json"
MCP_CONFIG_NAMES = (*(name for name, _ in _FORMATS), GENERIC_NAME)


def format_of(file_name: str | None) -> str | None:
    """The client format a file name stands for, else None (then the shape decides)."""
    if not file_name:
        return None
    path = file_name.replace("\\", "/").lower()
    for suffix, name in _FORMATS:
        if path == suffix or path.endswith("/" + suffix) or path.endswith(suffix):
            return name
    if path.rsplit("/", 1)[-1] == GENERIC_NAME:
        return GENERIC
    return None


def parse_config(text: str, file_name: str | None = None) -> Any:
    """JSON with comments and trailing commas, TOML (Codex) or YAML (Continue)."""
    shown = file_name or "the configuration"
    kind = format_of(file_name)
    lowered = (file_name or "").lower()
    if kind == "codex" or lowered.endswith(".toml"):
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigInvalid(f"{shown}: invalid TOML: {exc}") from None
    if kind == "continue" or lowered.endswith((".yaml", ".yml")):
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f":{mark.line + 1}" if mark is not None else ""
            raise ConfigInvalid(f"{shown}{where}: invalid YAML") from None
    try:
        return json5.loads(text)
    except ValueError as exc:
        match = re.search(r":(\d+) (.*)$", str(exc))
        if match:
            raise ConfigInvalid(
                f"{shown}:{match.group(1)}: invalid JSON: {match.group(2)}"
            ) from None
        raise ConfigInvalid(f"{shown}: invalid JSON: {exc}") from None


def servers_of(document: Any, file_name: str | None = None) -> tuple[str, dict[str, Any]]:
    """(format, name -> server entry) of a parsed configuration."""
    kind = format_of(file_name)
    if kind == GENERIC:
        kind = None  # the shape decides
    if not isinstance(document, dict):
        raise ConfigInvalid(f"{file_name or 'the configuration'}: expected an object of servers")
    if kind == "codex" or "mcp_servers" in document:
        return "codex", _dict(document.get("mcp_servers"))
    if kind == "vscode-settings" or (
        isinstance(document.get("mcp"), dict) and "servers" in document["mcp"]
    ):
        return "vscode", _dict(_dict(document.get("mcp")).get("servers"))
    if kind == "openclaw" or (
        isinstance(document.get("mcp"), dict) and "servers" in document["mcp"]
    ):
        return "openclaw", _dict(_dict(document.get("mcp")).get("servers"))
    if kind == "zed" or "context_servers" in document:
        return "zed", _dict(document.get("context_servers"))
    if kind == "continue" or isinstance(document.get("mcpServers"), list):
        entries = document.get("mcpServers") or []
        return "continue", {
            str(e.get("name") or f"server-{i}"): e
            for i, e in enumerate(entries)
            if isinstance(e, dict)
        }
    if "servers" in document and isinstance(document["servers"], dict):
        return "vscode", document["servers"]
    if "mcpServers" in document:
        servers = dict(_dict(document.get("mcpServers")))
        if kind == "claude-code-user" or "projects" in document:
            for project in _dict(document.get("projects")).values():
                for name, entry in _dict(_dict(project).get("mcpServers")).items():
                    servers.setdefault(name, entry)
        return kind or "mcp-servers", servers
    if all(isinstance(v, dict) and _looks_like_server(v) for v in document.values()) and document:
        return "fragment", document
    return kind or "unknown", {}


def _looks_like_server(entry: dict[str, Any]) -> bool:
    return any(k in entry for k in ("command", "url", "serverUrl", "httpUrl", "type"))


def from_mcp_config(text: str, file_name: str | None = None) -> list[Candidate]:
    """The servers of an MCP client configuration as candidates (nothing is started)."""
    document = parse_config(text, file_name)
    kind, servers = servers_of(document, file_name)
    out = []
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            continue
        candidate = _server(str(name), entry, kind)
        candidate.file = file_name
        candidate.line = _line_of(text, str(name))
        out.append(candidate)
    return out


def _server(name: str, entry: dict[str, Any], kind: str) -> Candidate:
    disabled = bool(entry.get("disabled")) or entry.get("enabled") is False
    headers = _redacted(_dict(entry.get("headers")) or _dict(entry.get("http_headers")))
    if entry.get("bearer_token_env_var"):
        headers["Authorization"] = f"Bearer ${{env:{entry['bearer_token_env_var']}}}"
    env = _redacted(_dict(entry.get("env")))
    url = entry.get("url") or entry.get("serverUrl") or entry.get("httpUrl")
    command = entry.get("command")
    args = entry.get("args")
    if isinstance(command, dict):  # Zed's older shape
        args, env = command.get("args"), _redacted(_dict(command.get("env")))
        command = command.get("path")
    reasons = [f"a server of a {kind} MCP client configuration"]
    if isinstance(url, str) and url:
        transport = _transport(entry, kind, url)
        return Candidate(
            name=name,
            watch_type=MCP.name,
            url=url,
            transport=transport,
            confidence=0.95,
            reasons=reasons + [f"remote server ({transport})"],
            headers=headers,
            disabled=disabled,
        )
    words = [str(command or "")] + [str(a) for a in args or [] if a is not None]
    line = " ".join(_redact_arg(w) for w in words if w)
    package, floating = _package(words)
    reasons.append("a local (stdio) server: watched by starting it, when you confirm")
    if floating:
        reasons.append(
            f"{package} runs whatever version is newest: a release can change its tools "
            "without any change on your side"
        )
    return Candidate(
        name=name,
        watch_type=MCP.name,
        command=line or None,
        transport="stdio",
        confidence=0.8,
        reasons=reasons,
        package=package,
        floating_version=floating,
        env=env,
        disabled=disabled,
    )


def _transport(entry: dict[str, Any], kind: str, url: str) -> str:
    declared = str(entry.get("type") or entry.get("transport") or "").lower()
    if declared in ("sse",):
        return "sse"
    if declared in ("http", "streamable-http", "streamablehttp", "streamable_http"):
        return "http"
    if "httpUrl" in entry:
        return "http"  # Gemini: httpUrl is Streamable HTTP, url is SSE
    if kind == "gemini" and "url" in entry:
        return "sse"
    if kind == "cline" and not declared:
        return "sse"  # Cline reads a url without type as SSE
    return "sse" if urlsplit(url).path.rstrip("/").endswith("/sse") else "http"


def _package(words: list[str]) -> tuple[str | None, bool | None]:
    """The package a stdio command runs (npx, uvx, pipx, docker) and whether its version
    floats (no version, or `latest`)."""
    if not words:
        return None, None
    launcher = words[0].rsplit("/", 1)[-1].lower()
    rest = [w for w in words[1:] if not w.startswith("-")]
    if launcher in ("npx", "bunx", "pnpx") or (launcher in ("npm", "pnpm") and "exec" in words):
        name = next((w for w in rest if w not in ("exec", "dlx")), None)
        if name is None:
            return None, None
        base, _, version = (
            name.rpartition("@")
            if name.count("@") > (1 if name.startswith("@") else 0)
            else (name, "", "")
        )
        return (base or name), (not version or version == "latest")
    if launcher in ("uvx", "pipx"):
        name = next((w for w in rest if w != "run"), None)
        if name is None:
            return None, None
        base, sep, version = name.partition("==")
        if not sep:
            base, sep, version = name.partition("@")
        return base, (not version or version == "latest")
    if launcher in ("docker", "podman") and "run" in words:
        image = _image(words)
        if image is None:
            return None, None
        tagged = image.rsplit("/", 1)[-1]
        pinned = "@sha256:" in image or (":" in tagged and not tagged.endswith(":latest"))
        return image, not pinned
    return None, None


def _image(words: list[str]) -> str | None:
    """The image of `docker run [options] IMAGE [args]`: the first word after `run` that is
    neither an option nor an option's value."""
    takes_value = {
        "-e",
        "--env",
        "-v",
        "--volume",
        "-p",
        "--publish",
        "--name",
        "--network",
        "-w",
        "--workdir",
        "--env-file",
        "-u",
        "--user",
    }
    after = words[words.index("run") + 1 :]
    skip = False
    for word in after:
        if skip:
            skip = False
            continue
        if word.startswith("-"):
            skip = word in takes_value
            continue
        return word
    return None


def _redacted(values: dict[str, Any]) -> dict[str, str]:
    return {str(k): redact(str(v)) for k, v in values.items()}


def redact(value: str) -> str:
    """A header or env value as it may be shown: its placeholder, else `<redacted>`."""
    match = PLACEHOLDER.match(value)
    if match:
        prefix = value[: match.start(1)]
        return (
            (prefix + match.group(1))
            if prefix.strip().lower() in ("bearer", "token", "")
            else match.group(1)
        )
    return REDACTED


def _redact_arg(word: str) -> str:
    """A command-line word, with the value of `KEY=value` and `--token value`-like secrets
    hidden."""
    if "=" in word and not word.startswith("-"):
        key, _, value = word.partition("=")
        if re.search(r"(key|token|secret|password|auth)", key, re.IGNORECASE):
            return f"{key}={redact(value)}"
    if re.match(r"^(sk|ghp|gho|xox[bap]|glpat|AKIA)[-_A-Za-z0-9]{8,}", word):
        return REDACTED
    return word


def _line_of(text: str, name: str) -> int | None:
    """The first line that names a server (by its key)."""
    for number, line in enumerate(text.splitlines(), start=1):
        if (
            f'"{name}"' in line
            or f"'{name}'" in line
            or re.search(rf"\b{re.escape(name)}\s*[:=\]]", line)
            or f"mcp_servers.{name}]" in line
        ):
            return number
    return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
