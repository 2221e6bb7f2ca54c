"""`driftgate check-payload` (offline, the API's validator) and `driftgate profiles` (the
org's consumer profile registry, through a running server). See docs/validate.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import click

from cli import api
from cli.common import fail
from cli.output import emit, table
from cli.remote import server, server_command


def _read(path: str, what: str) -> Any:
    from controller.diffs.errors import ContractParseError
    from controller.diffs.loader import load_document

    try:
        return load_document(Path(path).read_bytes(), path, kind="json")
    except OSError as exc:
        fail(f"cannot read the {what} {path}: {exc.strerror or exc}")
    except ContractParseError as exc:
        fail(f"the {what} {path} is not valid JSON or YAML: {exc}")


def _lines(answer: dict[str, Any]) -> list[str]:
    if answer["ok"]:
        return ["ok: the payload fits the profile"]
    lines = [f"invalid ({answer['severity']}): {len(answer['errors'])} error(s)"]
    lines += [f"  {e['path']}: {e['message']} ({e['code']})" for e in answer["errors"]]
    if answer.get("truncated"):
        lines.append("  (more errors were left out)")
    return lines


@click.command("check-payload")
@click.argument("payload_file", metavar="PAYLOAD")
@click.option(
    "--profile", "profile_file", required=True, help="The consumer profile (JSON or YAML)."
)
@click.option(
    "--mode",
    type=click.Choice(["block", "warn", "quarantine"]),
    default="block",
    show_default=True,
    help="warn: exit 0 even when the payload does not fit (quarantine checks like block here).",
)
@click.option(
    "--profile-mode",
    type=click.Choice(["cli", "hosted"]),
    default="cli",
    show_default=True,
    help="cli: every declared property is required unless the profile says otherwise; "
    "hosted: only the schema's required.",
)
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text")
def check_payload(
    payload_file: str, profile_file: str, mode: str, profile_mode: str, output_format: str
) -> None:
    """Check PAYLOAD (a JSON file) against a consumer profile, offline, with the same code as
    POST /api/validate. Exit 0 when it fits (or in warn mode), 1 when it does not, 2 when a
    file cannot be read or the profile cannot be used."""
    from controller.ingress.service import validate_offline
    from controller.model.ingress_profiles import ProfileInvalid

    payload = _read(payload_file, "payload")
    profile = _read(profile_file, "profile")
    try:
        answer = validate_offline(profile, payload, profile_mode).model_dump(by_alias=True)
    except ProfileInvalid as exc:
        fail(f"the profile {profile_file} cannot be used: {exc.message} (profile_invalid)")
    answer.pop("correlationId", None)
    answer.pop("validationsRemaining", None)
    if output_format == "json":
        click.echo(json.dumps(answer, indent=2))
    else:
        for line in _lines(answer):
            click.echo(line)
    raise SystemExit(0 if answer["ok"] or mode == "warn" else 1)


@click.group()
def profiles() -> None:
    """The org's consumer profiles (the registry of POST /api/validate's profileId)."""


@profiles.command("push")
@click.argument("profile_file", metavar="PROFILE")
@server_command
def profiles_push(
    profile_file: str, url: str | None, api_key: str | None, output_format: str
) -> None:
    """Store a profile (JSON or YAML) under its id; a change needs a higher version."""
    profile = _read(profile_file, "profile")
    if not isinstance(profile, dict) or not isinstance(profile.get("id"), str):
        fail(f"the profile {profile_file} has no id")
    with server(url, api_key) as http:
        stored = api.call(
            http, "PUT", f"/api/ingress-profiles/{quote(profile['id'], safe='')}", json=profile
        )
    emit(stored, output_format, lambda d: [f"stored profile {d['id']} version {d['version']}"])


@profiles.command("list")
@server_command
def profiles_list(url: str | None, api_key: str | None, output_format: str) -> None:
    """The org's profiles."""
    with server(url, api_key) as http:
        found = api.call(http, "GET", "/api/ingress-profiles")

    def text(document: dict[str, Any]) -> list[str]:
        rows = [
            (p["id"], str(p["version"]), p.get("managedBy") or "-", p["updatedAt"])
            for p in document["profiles"]
        ]
        return table(rows, ("ID", "VERSION", "SOURCE", "UPDATED"))

    emit(found, output_format, text)


@profiles.command("delete")
@click.argument("profile_id")
@server_command
def profiles_delete(
    profile_id: str, url: str | None, api_key: str | None, output_format: str
) -> None:
    """Remove a profile from the registry."""
    with server(url, api_key) as http:
        api.call(http, "DELETE", f"/api/ingress-profiles/{quote(profile_id, safe='')}")
    emit({"deleted": profile_id}, output_format, lambda d: [f"deleted profile {d['deleted']}"])
