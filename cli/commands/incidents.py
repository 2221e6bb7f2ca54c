"""`driftgate incidents`: the org's incidents through a running server (`DRIFTGATE_URL`,
`DRIFTGATE_API_KEY`): list them, acknowledge or resolve one.

An incident is named by its id, or by the id or name of its watch (a watch has at most one
incident that is not resolved). Exit codes: 0 done, 2 a usage error, an unreachable server or
an error answer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import click

from cli import api
from cli.common import fail, pages
from cli.output import emit, table
from cli.remote import server, server_command

if TYPE_CHECKING:  # for annotations only: `--help` loads no HTTP client
    import httpx

PAGE = 50  # the API's page size (controller.drift.service.PAGE_LIMIT)


@click.group()
def incidents() -> None:
    """The org's incidents (breaking drift until it is resolved): list, acknowledge, resolve."""


@incidents.command("list")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(["open", "acknowledged", "resolved"]),
    help="Only incidents in this state (repeatable; default: open and acknowledged).",
)
@click.option("--watch", help="Only the incidents of this watch (id or name).")
@click.option(
    "--limit",
    type=click.IntRange(1, 10_000),
    default=100,
    show_default=True,
    help="At most this many, newest opened first.",
)
@server_command
def incidents_list(
    statuses: tuple[str, ...],
    watch: str | None,
    limit: int,
    url: str | None,
    api_key: str | None,
    output_format: str,
) -> None:
    """The newest incidents: id, state, when opened, watch, breaking changes, who acted."""
    found: list[dict[str, Any]] = []
    with server(url, api_key) as http:
        params: dict[str, Any] = {"status": list(statuses)}
        if watch:
            params["watchId"] = api.watch_id(http, watch)
        for page in pages(
            lambda cursor: api.call(
                http,
                "GET",
                "/api/incidents",
                params={
                    **params,
                    "limit": min(PAGE, limit - len(found)),
                    **({"cursor": cursor} if cursor else {}),
                },
            )
        ):
            found.extend(page.get("incidents", []))
            if len(found) >= limit:
                break
    emit({"incidents": found}, output_format, _rows)


def _rows(document: dict[str, Any]) -> list[str]:
    rows = [
        (
            i["id"],
            i["status"],
            i["openedAt"],
            i.get("watchName") or i["watchId"],
            str(i.get("breakingCount", 0)),
            _who(i),
        )
        for i in document["incidents"]
    ]
    return table(rows, ("ID", "STATUS", "OPENED", "WATCH", "BREAKING", "BY"))


def _who(incident: dict[str, Any]) -> str:
    if incident["status"] == "resolved":
        return f"{incident.get('resolution') or 'resolved'} ({incident.get('resolvedBy') or '-'})"
    if incident["status"] == "acknowledged":
        return incident.get("acknowledgedBy") or "-"
    return "-"


def _incident_action(
    action: str, name: str, summary: str, done: str, evidence: bool = False
) -> click.Command:
    """`driftgate incidents <name>`; with `evidence`, the --repository and --branch the
    approval rules of the agents it unblocks are checked against."""

    @click.argument("ref", metavar="INCIDENT|WATCH")
    @click.option("--note", help="Why (kept with the incident and in the audit log).")
    @server_command
    def command(
        ref: str,
        note: str | None,
        url: str | None,
        api_key: str | None,
        output_format: str,
        repository: str | None = None,
        branch: str | None = None,
    ) -> None:
        body = {
            key: value
            for key, value in (("note", note), ("repository", repository), ("branch", branch))
            if value
        }
        with server(url, api_key) as http:
            watch_id, watch_name = _watch_of(http, ref)
            path = f"/api/watches/{watch_id}/incident/{action}"
            code, answer = api.send(http, "POST", path, json=body)
            if (
                code == 403
                and isinstance(answer, dict)
                and answer.get("error") == ("approval_refused")
            ):
                fail(api.approval_refused(answer, ("--repository", "--branch")))
            if not 200 <= code < 300:
                raise api.refusal(code, answer, api.shown(http.base_url))

        def text(document: dict[str, Any]) -> list[str]:
            return [
                f"{done} incident {document['id']} of {watch_name}: now {document['status']} "
                f"(opened {document['openedAt']}, {document['breakingCount']} breaking)"
            ]

        emit(answer, output_format, text)

    if evidence:
        command = click.option("--branch", help="Its branch (checked against the approval rules).")(
            command
        )
        command = click.option(
            "--repository",
            metavar="OWNER/NAME",
            help="The repository of the change that fixes it (checked against the approval "
            "rules of every agent bound to the watch).",
        )(command)
    command.__doc__ = summary
    return incidents.command(name)(command)


def _watch_of(http: httpx.Client, ref: str) -> tuple[str, str]:
    """The watch (id, name) whose incident `ref` names: an incident id, else a watch id or
    name. A resolved incident cannot be acted on."""
    code, found = api.send(http, "GET", f"/api/incidents/{quote(ref, safe='')}")
    if code == 200 and isinstance(found, dict):
        if found["status"] == "resolved":
            fail(
                f"incident {ref} of {found['watchName']} is already resolved "
                f"({found.get('resolution') or 'resolved'})"
            )
        return str(found["watchId"]), str(found["watchName"])
    if code != 404:
        fail(str(api.refusal(code, found, api.shown(http.base_url))))
    try:
        watch_id = api.watch_id(http, ref)
    except api.ApiError as exc:
        if exc.status != 404:
            raise
        fail(f"no incident, and no watch with id or name {ref!r}, in this org (HTTP 404)")
    current = api.call(http, "GET", "/api/incidents", params={"watchId": watch_id, "limit": 1})
    if not current.get("incidents"):
        fail(f"watch {ref} has no open or acknowledged incident")
    return watch_id, str(current["incidents"][0].get("watchName") or ref)


_incident_action(
    "ack",
    "acknowledge",
    "Acknowledge an open incident (audited): agents whose policy waits for it may run again. "
    "When an agent bound to its watch declares approval rules, --repository and --branch must "
    "match one of each such agent's rules.",
    "acknowledged",
    evidence=True,
)
_incident_action(
    "resolve",
    "resolve",
    "Resolve an incident by hand (the baseline stays as it is; audited).",
    "resolved",
)
