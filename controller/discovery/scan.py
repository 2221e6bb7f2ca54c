"""Repository scan: the contracts a repository's files depend on. Pure: files in, candidates
out, each citing `file:line`; nothing is fetched or executed.

What is read: MCP client configurations at their paths (`extract.MCP_CONFIG_NAMES`), OpenAPI
documents (their `servers`), `openapi-generator` / `orval` / `openapi-typescript` configs
(the spec URL they generate from), base URLs in `.env.example`-style files, SDK dependencies
of well-known vendors in `package.json`, `requirements*.txt` and `pyproject.toml` (with their
public spec URLs), and the URLs in `.driftgate/*.yaml`. Bounded: files over `MAX_FILE_BYTES`
and binary files are skipped and counted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from controller.discovery.acknowledgements import (
    acknowledged,
    is_ack_file,
    parse_acknowledgements,
)
from controller.discovery.extract import (
    GENERIC,
    Candidate,
    ConfigInvalid,
    format_of,
    from_mcp_config,
    from_text,
    from_urls,
    urls_in_text,
)
from controller.model.coverage import Acknowledgement

MAX_FILES = 5000
MAX_TOTAL_BYTES = 20 * 1024 * 1024
MAX_FILE_BYTES = 1024 * 1024

# Well-known vendors: package names (npm, PyPI) -> (name, the public OpenAPI description).
VENDORS: dict[str, tuple[str, str]] = {
    "stripe": (
        "stripe",
        "https://raw.githubusercontent.com/stripe/openapi/master/openapi/spec3.json",
    ),
    "twilio": (
        "twilio",
        "https://raw.githubusercontent.com/twilio/twilio-oai/main/spec/json/twilio_api_v2010.json",
    ),
    "@octokit/rest": (
        "github",
        "https://raw.githubusercontent.com/github/rest-api-description/main/descriptions/"
        "api.github.com/api.github.com.json",
    ),
    "pygithub": (
        "github",
        "https://raw.githubusercontent.com/github/rest-api-description/main/descriptions/"
        "api.github.com/api.github.com.json",
    ),
    "@slack/web-api": (
        "slack",
        "https://raw.githubusercontent.com/slackapi/slack-api-specs/master/web-api/"
        "slack_web_openapi_v2.json",
    ),
    "slack-sdk": (
        "slack",
        "https://raw.githubusercontent.com/slackapi/slack-api-specs/master/web-api/"
        "slack_web_openapi_v2.json",
    ),
    "openai": (
        "openai",
        "https://raw.githubusercontent.com/openai/openai-openapi/master/openapi.yaml",
    ),
}
_ENV_FILES = re.compile(r"(^|/)\.env(\.[\w-]+)?$|(^|/)[\w.-]*\.env\.example$")
_GENERATOR_FILES = re.compile(
    r"(^|/)(openapitools\.json|openapi-generator[\w.-]*\.(ya?ml|json)|orval\.config\.[cm]?[jt]s|"
    r"openapi-ts\.config\.[cm]?[jt]s|redocly\.ya?ml)$"
)
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass
class ScanResult:
    candidates: list[Candidate] = field(default_factory=list)
    files_read: int = 0
    skipped_binary: int = 0
    skipped_large: int = 0
    problems: list[str] = field(default_factory=list)
    acknowledgements: list[Acknowledgement] = field(default_factory=list)
    # `.driftgate/coverage.yaml` could not be read: the coverage gate refuses to guess.
    acknowledgements_invalid: ConfigInvalid | None = None


def scan_files(files: Sequence[tuple[str, bytes | str]]) -> ScanResult:
    """Candidates of `files` ((path, content)), deduplicated by contract, in file order."""
    result = ScanResult()
    seen: set[str] = set()
    for path, raw in files:
        data = raw.encode() if isinstance(raw, str) else raw
        if len(data) > MAX_FILE_BYTES:
            result.skipped_large += 1
            continue
        if b"\x00" in data[:8192]:
            result.skipped_binary += 1
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            result.skipped_binary += 1
            continue
        result.files_read += 1
        if is_ack_file(path):
            try:
                result.acknowledgements += parse_acknowledgements(text, path)
            except ConfigInvalid as exc:
                result.problems.append(exc.message)
                result.acknowledgements_invalid = exc
            continue
        try:
            found = scan_file(path, text)
        except ConfigInvalid as exc:
            result.problems.append(exc.message)
            continue
        for candidate in found:
            candidate.file = candidate.file or path
            if candidate.key not in seen:
                seen.add(candidate.key)
                result.candidates.append(candidate)
    acknowledged(result.candidates, result.acknowledgements)
    return result


def relevant(path: str) -> bool:
    """Whether the scan reads this file at all (by its path): what a client sends of a
    checkout, so that a large repository fits in one request."""
    name = path.rsplit("/", 1)[-1]
    lowered = path.lower()
    return bool(
        format_of(path) is not None
        or name in ("package.json", "pyproject.toml")
        or re.match(r"requirements[\w.-]*\.txt$", name)
        or _ENV_FILES.search(lowered)
        or _GENERATOR_FILES.search(lowered)
        or lowered.startswith(".driftgate/")
        or "/.driftgate/" in lowered
        or lowered.endswith((".json", ".yaml", ".yml"))
    )


def scan_file(path: str, text: str) -> list[Candidate]:
    """The candidates one file holds."""
    name = path.rsplit("/", 1)[-1]
    lowered = path.lower()
    if format_of(path) is not None and _is_mcp_config(path, text):
        return from_mcp_config(text, path)
    if name == "package.json":
        return _package_json(path, text)
    if re.match(r"requirements[\w.-]*\.txt$", name) or name == "pyproject.toml":
        return _python_dependencies(path, text)
    if _ENV_FILES.search(lowered):
        return _env_urls(path, text)
    if (
        _GENERATOR_FILES.search(lowered)
        or lowered.startswith(".driftgate/")
        or "/.driftgate/" in lowered
    ):
        found = from_text(text, file=path)
        for candidate in found:
            candidate.reasons.append("named in a code generator or driftgate configuration")
        return found
    if lowered.endswith((".json", ".yaml", ".yml")) and re.search(
        r'^\s*"?(openapi|swagger)"?\s*:', text[:4096], re.MULTILINE
    ):
        return _openapi_document(path, text)
    return []


def _is_mcp_config(path: str, text: str) -> bool:
    kind = format_of(path)
    if kind in ("codex",):  # config.toml is a common name: only with mcp_servers in it
        return "mcp_servers" in text
    if kind in ("vscode-settings", "zed", "gemini", "continue", "openclaw", GENERIC):
        return any(k in text for k in ("mcpServers", "context_servers", '"mcp"', "servers"))
    return True


def _line(text: str, needle: str) -> int | None:
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number
    return None


def _vendor(path: str, line: int | None, package: str) -> Candidate | None:
    """The candidate of a well-known vendor's SDK, cited at the dependency's own line. Each
    table entry is the vendor's published OpenAPI description: an `openapi` watch, whatever
    its URL looks like."""
    known = VENDORS.get(package.lower())
    if known is None:
        return None
    name, url = known
    return Candidate(
        name=name,
        watch_type="openapi",
        url=url,
        file=path,
        line=line,
        confidence=0.8,
        reasons=[
            f"the code depends on the {package} SDK; this is the OpenAPI description of "
            f"{name}'s public API"
        ],
    )


def _package_json(path: str, text: str) -> list[Candidate]:
    try:
        document = json.loads(text)
    except ValueError:
        return []
    if not isinstance(document, dict):
        return []
    lines = text.splitlines()
    found = []
    for key in ("dependencies", "devDependencies", "peerDependencies"):
        section = document.get(key)
        if not isinstance(section, dict):
            continue
        start = _key_line(lines, key, 0) or 0
        for package in section:
            candidate = _vendor(path, _key_line(lines, str(package), start), str(package))
            if candidate is not None:
                found.append(candidate)
    return found


def _key_line(lines: list[str], key: str, start: int) -> int | None:
    """The 1-based line, at or after line `start`, where `"key":` is written (a JSON object
    key: never the `"name": "..."` line whose value merely contains it)."""
    pattern = re.compile(rf'"{re.escape(json.dumps(key)[1:-1])}"\s*:')
    for number in range(max(start - 1, 0), len(lines)):
        if pattern.search(lines[number]):
            return number + 1
    return None


def _python_dependencies(path: str, text: str) -> list[Candidate]:
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip().strip('",')
        match = _REQUIREMENT.match(stripped)
        if match and not stripped.startswith(("#", "[")):
            candidate = _vendor(path, number, match.group(1))
            if candidate is not None:
                found.append(candidate)
    return found


def _env_urls(path: str, text: str) -> list[Candidate]:
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        key, sep, value = line.partition("=")
        if not sep or not re.search(r"(URL|URI|ENDPOINT|HOST|BASE)", key.upper()):
            continue
        for url, _ in urls_in_text(value):
            for candidate in from_urls([url], file=path):
                candidate.line = number
                candidate.confidence = min(candidate.confidence, 0.6)
                candidate.reasons.append(f"the base URL in {key.strip()}")
                found.append(candidate)
    return found


def _openapi_document(path: str, text: str) -> list[Candidate]:
    """A vendored OpenAPI document: its servers, at low confidence (the spec's own URL, which
    a watch needs, is not in the file)."""
    found = []
    for url, line in urls_in_text(text):
        if (
            _line(text, "servers")
            and line >= (_line(text, "servers") or 0)
            and "url" in text.splitlines()[line - 1]
        ):
            for candidate in from_urls([url], file=path):
                candidate.line = line
                candidate.confidence = 0.4
                candidate.reasons = [
                    "a server of an OpenAPI document kept in the repository: watch the "
                    "document's published URL"
                ]
                found.append(candidate)
            break
    return found
