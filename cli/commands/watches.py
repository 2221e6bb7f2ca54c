"""`driftgate watches` and `driftgate drift`: the watches and drift events of the key's org,
through the HTTP API of a running server (`DRIFTGATE_URL`, `DRIFTGATE_API_KEY`).

A watch is named by its id or its name. Human tables by default, `--format json` for the
server's answer as it is. Exit codes: 0 done, 2 a usage error, an unreachable server or an
error answer (its message and code on one line)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import click
from click.core import ParameterSource

from cli import api, style
from cli.common import pages
from cli.output import emit, table
from cli.remote import server, server_command
from controller.contracts.kinds import CONTRACT_KINDS


def _watch_rows(watches: Sequence[dict[str, Any]]) -> list[str]:
    rows = [
        (
            w["id"],
            w["name"],
            w["watchType"],
            w["driftStatus"],
            w.get("lastCheckedAt") or "never",
            w["url"],
        )
        for w in watches
    ]
    return table(rows, ("ID", "NAME", "TYPE", "STATUS", "LAST CHECK", "URL"), {3: style.paint})


# `--fail-on` of `watches check`: `diff --fail-on`'s thresholds, and `error` below `breaking`.
GATES = ("breaking", "warning", "info", "error", "never")
_REACHED = {
    "breaking": ("breaking",),
    "warning": ("breaking", "warning"),
    "info": ("breaking", "warning", "info"),
}


def _status_text(document: dict[str, Any], open_only: bool = False) -> list[str]:
    """A watch's status (`GET /api/watches/<id>/status`): the watch, why it blocks preflight
    (a failed check's class and error), what to do, and its last drift event (with
    `open_only`, only while it holds open changes)."""
    watch = document["watch"]
    lines = _watch_text(watch)
    if document.get("reasons"):
        lines.append(f"  blocks preflight: {', '.join(document['reasons'])}")
    if watch.get("driftStatus") == "error" and watch.get("lastError"):
        lines.append(f"  last error: {watch['lastError']}")
    if document.get("agentActions"):
        lines.append(f"  to do: {', '.join(document['agentActions'])}")
    event = document.get("lastDriftEvent")
    if open_only and not any((watch.get("openChanges") or {}).values()):
        event = None
    if event:
        lines.append(f"  last drift event {event.get('id')} at {event.get('detectedAt')}")
        lines += _change_lines(event.get("changes") or [], "    ")
    return lines


def _watch_text(watch: dict[str, Any]) -> list[str]:
    lines = [
        f"{watch['name']} ({watch['id']})",
        f"  type {watch['watchType']}, status {style.paint(watch['driftStatus'])}, every "
        f"{watch['intervalMinutes']} min",
        f"  url {watch['url']}",
        f"  last check {watch.get('lastCheckedAt') or 'never'}",
    ]
    if watch.get("tags"):
        lines.append(f"  tags {', '.join(watch['tags'])}")
    counts = watch.get("openChanges") or {}
    if any(counts.values()):
        lines.append(f"  open changes: {style.counts(_counts(counts))}")
    incident = watch.get("incident")
    if incident:
        lines.append(f"  incident {incident.get('id')} {style.paint(str(incident.get('status')))}")
    return lines


@click.group()
def watches() -> None:
    """The org's watches, through the server's API."""


@watches.command("list")
@click.option("--tag", "tags", multiple=True, help="Only watches with this tag (repeatable).")
@click.option("--status", help="Only watches in this driftStatus (ok, drifted, error, ...).")
@server_command
def watches_list(
    tags: tuple[str, ...],
    status: str | None,
    url: str | None,
    api_key: str | None,
    output_format: str,
) -> None:
    """List the org's watches (every page)."""
    found: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": 200, "tag": list(tags)}
    if status:
        params["driftStatus"] = status
    with server(url, api_key) as http:
        for page in pages(
            lambda cursor: api.call(
                http,
                "GET",
                "/api/watches",
                params={**params, **({"cursor": cursor} if cursor else {})},
            )
        ):
            found.extend(page.get("watches", []))
    emit({"watches": found}, output_format, lambda d: _watch_rows(d["watches"]))


@watches.command("create")
@click.argument("name")
@click.argument("watch_url", metavar="URL")
@click.option(
    "--type",
    "watch_type",
    type=click.Choice(CONTRACT_KINDS.names()),
    help="Else inferred.",
)
@click.option("--interval", type=int, help="Minutes between checks (default: the org's).")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="NAME:VALUE",
    help="A header sent with every check (repeatable; stored encrypted).",
)
@click.option(
    "--oauth-client-id",
    metavar="ID",
    help="An MCP server behind OAuth: the client driftgate authenticates as "
    "(docs/checks.md, 'MCP servers behind OAuth').",
)
@click.option(
    "--oauth-grant",
    type=click.Choice(["client_credentials", "refresh_token"]),
    default="client_credentials",
    show_default=True,
    help="How the access token is obtained.",
)
@click.option(
    "--oauth-client-secret",
    envvar="DRIFTGATE_OAUTH_CLIENT_SECRET",
    show_envvar=True,
    metavar="SECRET",
    help="The client secret; give it in the environment, not on the command line.",
)
@click.option(
    "--oauth-refresh-token",
    envvar="DRIFTGATE_OAUTH_REFRESH_TOKEN",
    show_envvar=True,
    metavar="TOKEN",
    help="The refresh token (grant refresh_token); give it in the environment.",
)
@click.option("--oauth-scope", metavar="SCOPE", help="Scopes to ask for (space-separated).")
@click.option(
    "--oauth-issuer",
    metavar="URL",
    help="The authorization server to trust (default: the first the server names).",
)
@server_command
def watches_create(
    name: str,
    watch_url: str,
    watch_type: str | None,
    interval: int | None,
    tags: tuple[str, ...],
    headers: tuple[str, ...],
    oauth_client_id: str | None,
    oauth_grant: str,
    oauth_client_secret: str | None,
    oauth_refresh_token: str | None,
    oauth_scope: str | None,
    oauth_issuer: str | None,
    url: str | None,
    api_key: str | None,
    output_format: str,
) -> None:
    """Create a watch of URL named NAME (checked at the controller's next round)."""
    body: dict[str, Any] = {"name": name, "url": watch_url, "tags": list(tags)}
    if watch_type:
        body["watchType"] = watch_type
    if interval is not None:
        body["intervalMinutes"] = interval
    if headers:
        body["headers"] = dict(_header(value) for value in headers)
    if oauth_client_id is not None:
        oauth = {
            "grant": oauth_grant,
            "clientId": oauth_client_id,
            "clientSecret": oauth_client_secret,
            "refreshToken": oauth_refresh_token,
            "scope": oauth_scope,
            "authorizationServer": oauth_issuer,
        }
        body["oauth"] = {k: v for k, v in oauth.items() if v is not None}
    elif oauth_scope is not None or oauth_issuer is not None:
        raise click.UsageError("--oauth-scope and --oauth-issuer need --oauth-client-id")
    with server(url, api_key) as http:
        created = api.call(http, "POST", "/api/watches", json=body)
    emit(created, output_format, _watch_text)


def _header(value: str) -> tuple[str, str]:
    name, sep, text = value.partition(":")
    if not sep or not name.strip():
        raise click.BadParameter(f"{name!r} is not NAME:VALUE", param_hint="'--header'")
    return name.strip(), text.strip()


@watches.command("show")
@click.argument("watch")
@server_command
def watches_show(watch: str, url: str | None, api_key: str | None, output_format: str) -> None:
    """A watch (by id or name) with its preflight reasons and its last drift event."""
    with server(url, api_key) as http:
        status = api.call(http, "GET", f"/api/watches/{api.watch_id(http, watch)}/status")

    emit(status, output_format, _status_text)


@watches.command("check")
@click.argument("watch")
@click.option(
    "--wait",
    type=click.FloatRange(0, 60),
    default=30,
    show_default=True,
    metavar="SECONDS",
    help="Wait up to SECONDS for the result (0: queue it and return, exit 0).",
)
@click.option(
    "--fail-on",
    type=click.Choice(GATES),
    default="breaking",
    show_default=True,
    help="Exit 1 when the check failed or left open changes at least this severe (as `diff "
    "--fail-on`); error: only when the check failed; never: always 0.",
)
@server_command
@click.pass_context
def watches_check(
    ctx: click.Context,
    watch: str,
    wait: float,
    fail_on: str,
    url: str | None,
    api_key: str | None,
    output_format: str,
) -> None:
    """Check a watch now (by id or name): the outcome, the reason a check failed, the open
    changes. Exit 0 passed, 1 the check failed or its open changes reach --fail-on (or it did
    not finish within --wait), 2 a usage error or an error answer."""
    if wait == 0 and ctx.get_parameter_source("fail_on") is ParameterSource.COMMANDLINE:
        raise click.UsageError("--fail-on needs the check's result: --wait 0 only queues it")
    with server(url, api_key) as http:
        watch_id = api.watch_id(http, watch)
        answer = api.call(http, "POST", f"/api/watches/{watch_id}/check", params={"wait": wait})
        status = None
        if answer.get("watch") is not None and output_format == "text":
            status = api.call(http, "GET", f"/api/watches/{watch_id}/status")

    def text(document: dict[str, Any]) -> list[str]:
        if document.get("watch") is None:
            return [f"check {document['jobId']} {document['status']}: not finished yet"]
        lines = [f"check {document['jobId']} {document['status']}"]
        return lines + _status_text(status or {"watch": document["watch"]}, open_only=True)

    emit(answer, output_format, text)
    if wait == 0:
        return
    failed = gate_failure(answer, fail_on, wait)
    if failed:
        click.echo(f"driftgate: check gate failed (--fail-on {fail_on}): {failed}", err=True)
        sys.exit(1)


def gate_failure(answer: dict[str, Any], fail_on: str, wait: float) -> str | None:
    """Why a finished check fails the gate `fail_on` (None: it passes). A check that failed
    fails every gate but `never`, as it blocks preflight; so does one not finished in time."""
    if fail_on == "never":
        return None
    watch = answer.get("watch")
    if watch is None:
        return f"the check did not finish within {wait:g} s (job {answer.get('jobId')})"
    name = watch.get("name")
    if answer.get("status") == "failed" or watch.get("driftStatus") == "error":
        failure = watch.get("failureClass") or "unknown"
        return f"the check of {name} failed (check_failed:{failure})"
    counts = watch.get("openChanges") or {}
    reached = [f"{counts[s]} {s}" for s in _REACHED.get(fail_on, ()) if counts.get(s)]
    if reached:
        return f"{name} has open changes: {', '.join(reached)}"
    return None


def _watch_action(action: str, summary: str) -> click.Command:
    @click.argument("watch")
    @server_command
    def command(watch: str, url: str | None, api_key: str | None, output_format: str) -> None:
        with server(url, api_key) as http:
            watch_id = api.watch_id(http, watch)
            changed = api.call(http, "POST", f"/api/watches/{watch_id}/{action}")
        emit(changed, output_format, _watch_text)

    command.__doc__ = summary
    return watches.command(action)(command)


_watch_action("pause", "Pause a watch (by id or name): not checked, and blocking preflight.")
_watch_action("resume", "Resume a watch (by id or name): its status from the last check.")


@watches.command("baseline")
@click.argument("watch")
@click.option("--reason", required=True, help="Why the current contract is accepted (audited).")
@server_command
def watches_baseline(
    watch: str, reason: str, url: str | None, api_key: str | None, output_format: str
) -> None:
    """Accept the last fetched contract as the baseline; resolves the open incident."""
    with server(url, api_key) as http:
        watch_id = api.watch_id(http, watch)
        path = f"/api/watches/{watch_id}/baseline"
        accepted = api.call(http, "POST", path, json={"reason": reason})
    emit(accepted, output_format, _watch_text)


@watches.command("delete")
@click.argument("watch")
@api.server_options
def watches_delete(watch: str, url: str | None, api_key: str | None) -> None:
    """Delete a watch (by id or name); git-managed watches are refused."""
    with server(url, api_key) as http:
        watch_id = api.watch_id(http, watch)
        api.call(http, "DELETE", f"/api/watches/{watch_id}")
    click.echo(f"deleted watch {watch} ({watch_id})")


@click.group()
def drift() -> None:
    """The org's drift events, through the server's API."""


@drift.command("list")
@click.option("--watch", help="Only the events of this watch (id or name).")
@click.option("--limit", type=click.IntRange(1, 50), default=20, show_default=True)
@server_command
def drift_list(
    watch: str | None, limit: int, url: str | None, api_key: str | None, output_format: str
) -> None:
    """The newest drift events, newest first."""
    with server(url, api_key) as http:
        params: dict[str, Any] = {"limit": limit}
        if watch:
            params["watchId"] = api.watch_id(http, watch)
        page = api.call(http, "GET", "/api/drift", params=params)

    def text(document: dict[str, Any]) -> list[str]:
        rows = [
            (
                e["id"],
                e.get("detectedAt", ""),
                e.get("watchName") or e.get("watchId", ""),
                _counts(e.get("counts") or {}),
            )
            for e in document.get("events", [])
        ]
        return table(rows, ("ID", "DETECTED", "WATCH", "CHANGES"), {3: style.counts})

    emit(page, output_format, text)


def _counts(counts: dict[str, int]) -> str:
    return (
        f"{counts.get('breaking', 0)} breaking, {counts.get('warning', 0)} warning, "
        f"{counts.get('info', 0)} info"
    )


@drift.command("show")
@click.argument("event_id")
@server_command
def drift_show(event_id: str, url: str | None, api_key: str | None, output_format: str) -> None:
    """One drift event with every change (EVENT_ID: its id or a unique prefix of it)."""
    with server(url, api_key) as http:
        found = api.drift_event_id(http, event_id)
        event = api.call(http, "GET", f"/api/drift/events/{quote(found, safe='')}")

    def text(document: dict[str, Any]) -> list[str]:
        lines = [
            f"drift event {document['id']} at {document.get('detectedAt')}: "
            f"{style.counts(_counts(document.get('counts') or {}))}"
        ]
        return lines + _change_lines(document.get("changes", []), "  ")

    emit(event, output_format, text)


SEVERITY_ORDER = ("breaking", "warning", "info")


def _severity_rank(change: dict[str, Any]) -> int:
    severity = str(change.get("severity", "")).lower()
    return SEVERITY_ORDER.index(severity) if severity in SEVERITY_ORDER else len(SEVERITY_ORDER)


def _change_lines(changes: Sequence[dict[str, Any]], indent: str) -> list[str]:
    """Each change, breaking first, then warning, then info (in the server's order within a
    severity): severity, its cause (a change to a shared schema: the schema and what
    changed in it, and how many operations it reaches) or its summary, its agentAction token,
    and its hint below."""
    lines = []
    for change in sorted(changes, key=_severity_rank):
        action = change.get("agentAction")
        suffix = f" -> {action}" if action else ""
        severity = str(change.get("severity", "")).upper()
        count = int(change.get("affectedCount") or 1)
        if change.get("cause"):
            plural = "s" if count != 1 else ""
            told = f"{change['cause']} ({count} operation{plural})"
        else:
            more = f" (+{count - 1} more operations)" if count > 1 else ""
            told = f"{change.get('summary')}{more}"
        lines.append(f"{indent}{style.paint(f'{severity:8}', severity)} {told}{suffix}")
        if change.get("hint"):
            lines.append(f"{indent}         hint: {change['hint']}")
    return lines
