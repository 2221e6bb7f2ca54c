"""Acknowledged local servers: `.driftgate/coverage.yaml`, the record of the local (stdio) MCP
servers a repository runs unwatched on purpose, which the coverage gate honours.

A watch needs a URL, and a stdio server has none: watching one means starting it on the
monitor's host. So a checkout covers a stdio server by acknowledging it in a reviewed commit:

    version: 1
    acknowledged:
      - name: fs
        command: npx -y @modelcontextprotocol/server-filesystem /docs
        reason: a local file server; its tools are reviewed on every upgrade

An acknowledgement holds for that exact command line (as `driftgate scan` shows it, secrets
redacted): a new package, version or argument is a new contract and needs a new one. Pure:
text in, acknowledgements or a `ConfigInvalid` naming the file and line out.
"""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import ValidationError

from controller.discovery.extract import Candidate, ConfigInvalid
from controller.model.coverage import (
    ACK_FILE,
    ACK_FILES,
    VERSION,
    Acknowledgement,
    CoverageFile,
)
from controller.settings import yaml_line


def is_ack_file(path: str) -> bool:
    """Whether `path` (relative to the scanned directory) is the acknowledgements file."""
    return path.replace("\\", "/") in ACK_FILES


def parse_acknowledgements(text: str, file: str = ACK_FILE) -> list[Acknowledgement]:
    """The acknowledgements of a `coverage.yaml`, or `ConfigInvalid` naming file:line."""
    try:
        # No aliases: a few of them can make a small text a huge document (the preview takes
        # this file from anyone), and an acknowledgement list has no use for them.
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                line = event.start_mark.line + 1 if event.start_mark else 1
                raise ConfigInvalid(f"{file}:{line}: YAML aliases are not allowed here")
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not YAML"
        raise ConfigInvalid(f"{file}{where}: invalid YAML: {problem}") from None
    if document is None:
        return []
    try:
        return CoverageFile.model_validate(document).acknowledged
    except ValidationError as exc:
        problems = sorted(_problem(node, error) for error in exc.errors())
        raise ConfigInvalid(
            "; ".join(f"{file}:{line}: {text}" for line, text in problems)
        ) from None


def render(acknowledgements: list[Acknowledgement]) -> str:
    """The file's text: a comment that says what it is, then the acknowledgements."""
    document = CoverageFile(version=VERSION, acknowledged=acknowledgements).model_dump(
        exclude_none=True
    )
    return (
        "# Local (stdio) MCP servers this repository runs unwatched on purpose: the coverage\n"
        "# gate (driftgate coverage) accepts them while their command line stays the same.\n"
        "# Written by `driftgate scan --acknowledge NAME`; see docs/discovery.md.\n"
        + yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
    )


def acknowledged(
    candidates: list[Candidate], acknowledgements: list[Acknowledgement]
) -> list[Candidate]:
    """Mark the candidates an acknowledgement covers (`candidate.acknowledged`); return them."""
    for candidate in candidates:
        if any(ack.covers(candidate) for ack in acknowledgements):
            candidate.acknowledged = True
    return candidates


def _problem(node: Any, error: Any) -> tuple[int, str]:
    """(line, `/json/path: what is wrong`) of one validation error."""
    loc = tuple(error["loc"])
    path = "/" + "/".join(str(part) for part in loc) if loc else "/"
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "literal_error" and loc == ("version",):
        message = f"must be {VERSION}"
    elif error["type"] == "extra_forbidden":
        model = Acknowledgement if len(loc) == 3 else CoverageFile
        message = f"unknown key (known: {', '.join(model.model_fields)})"
    return yaml_line(node, loc), f"{path}: {message}"
