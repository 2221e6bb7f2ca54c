"""`driftgate draftpr`: draft pull requests and GitHub App installations of the key's org,
through the HTTP API of a running server (`DRIFTGATE_URL`, `DRIFTGATE_API_KEY`).

Exit codes: 0 done, 2 a usage error, an unreachable server or an error answer (its message
and code on one line). See docs/draft-prs.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import click

from cli import api
from cli.common import fail
from cli.output import emit, table
from cli.remote import server, server_command

if TYPE_CHECKING:
    import httpx

MAX_CHANGES = 250  # what the drift webhook takes
MAX_TEXT = 1000


def _rows(items: list[dict[str, Any]]) -> list[str]:
    rows = [
        (
            p["draftPrId"],
            p["state"] + (" (stub)" if p.get("stub") else ""),
            p["repoFullName"],
            str(p.get("number") or "-"),
            p.get("url") or "-",
        )
        for p in items
    ]
    return table(rows, ("ID", "STATE", "REPOSITORY", "NUMBER", "URL"))


def _one(pr: dict[str, Any]) -> list[str]:
    lines = _rows([pr])[1:]
    lines.append(f"  branch {pr['branch']}, watch {pr['watchId']}, event {pr['driftEventId']}")
    if pr.get("draftRefused"):
        lines.append(
            "  the repository refused drafts: a normal pull request labelled driftgate:draft"
        )
    if pr.get("error"):
        lines.append(f"  error: {pr['error']}")
    lint = pr.get("toolManifestLint")
    if lint:
        lines.append(f"  tool-manifest lint: {len(lint['findings'])} finding(s)")
    return lines


@click.group()
def draftpr() -> None:
    """Draft pull requests opened for drift events, through the server's API."""


@draftpr.command("list")
@server_command
def draftpr_list(url: str | None, api_key: str | None, output_format: str) -> None:
    """The org's draft pull requests, newest first."""
    with server(url, api_key) as http:
        found = api.call(http, "GET", "/v1/draftpr/draft-prs")
    emit(found, output_format, lambda d: _rows(d["items"]))


@draftpr.command("show")
@click.argument("draft_pr_id")
@server_command
def draftpr_show(
    draft_pr_id: str, url: str | None, api_key: str | None, output_format: str
) -> None:
    """One draft pull request."""
    with server(url, api_key) as http:
        draft_pr_id = _draft_pr_id(http, draft_pr_id)
        found = api.call(http, "GET", f"/v1/draftpr/draft-prs/{quote(draft_pr_id, safe='')}")
    emit(found, output_format, _one)


@draftpr.command("open")
@click.option("--watch", "watch", required=True, help="The watch (id or name).")
@click.option("--event", "event_id", required=True, help="The drift event (id or a unique prefix).")
@click.option("--repo", "repo", required=True, help="owner/repository")
@click.option(
    "--installation",
    type=click.IntRange(min=1),
    help="The App installation id (default: the only one).",
)
@click.option("--vendored-path", help="A copy of the contract in the repository to update.")
@server_command
def draftpr_open(
    watch: str,
    event_id: str,
    repo: str,
    installation: int | None,
    vendored_path: str | None,
    url: str | None,
    api_key: str | None,
    output_format: str,
) -> None:
    """Open the draft pull request of a drift event in REPO, with the event's changes."""
    with server(url, api_key) as http:
        watch_id = api.watch_id(http, watch)
        event_id = api.drift_event_id(http, event_id)
        event = api.call(http, "GET", f"/api/drift/events/{quote(event_id, safe='')}")
        changes = [
            {
                "path": str(c.get("path", ""))[:MAX_TEXT],
                "severity": c["severity"],
                "message": str(c.get("summary", ""))[:MAX_TEXT],
                "rule": c.get("rule"),
            }
            for c in event.get("changes", [])
            if not c.get("ignored")
        ][:MAX_CHANGES]
        body: dict[str, Any] = {
            "watchId": watch_id,
            "driftEventId": event_id,
            "repoFullName": repo,
            "changes": changes,
        }
        if installation is not None:
            body["installationId"] = str(installation)
        if vendored_path:
            body["vendoredPath"] = vendored_path
        opened = api.call(http, "POST", "/v1/draftpr/webhook", json=body)
    if opened.get("error") == "schemasync_disabled":
        fail(f"{opened.get('message')} (schemasync_disabled)")
    emit(opened, output_format, _one)


@draftpr.command("merged")
@click.argument("draft_pr_id")
@server_command
def draftpr_merged(
    draft_pr_id: str, url: str | None, api_key: str | None, output_format: str
) -> None:
    """Record by hand that a draft pull request was merged (baseline, incident, agents)."""
    with server(url, api_key) as http:
        body = {"draftPrId": _draft_pr_id(http, draft_pr_id)}
        done = api.call(http, "POST", "/v1/draftpr/draft-pr/merged", json=body)

    def text(document: dict[str, Any]) -> list[str]:
        lines = _one(document["draftPr"])
        lines.append(f"  incident resolved: {'yes' if document['incidentResolved'] else 'no'}")
        if document["unblockedAgentIds"]:
            lines.append(f"  unblocked: {', '.join(document['unblockedAgentIds'])}")
        return lines

    emit(done, output_format, text)


def _draft_pr_id(http: httpx.Client, ref: str) -> str:
    """A draft pull request's id, or the one a unique prefix names among the org's."""
    return api.by_prefix(http, "/v1/draftpr/draft-prs", "items", "draft pull requests", ref)


@draftpr.command("installations")
@server_command
def draftpr_installations(url: str | None, api_key: str | None, output_format: str) -> None:
    """The GitHub App installations linked to the org, and the install link."""
    with server(url, api_key) as http:
        found = api.call(http, "GET", "/v1/draftpr/installations")

    def text(document: dict[str, Any]) -> list[str]:
        rows = [
            (str(i["installationId"]), i["account"], i["repositorySelection"], i["status"])
            for i in document["items"]
        ]
        lines = table(rows, ("INSTALLATION", "ACCOUNT", "REPOSITORIES", "STATUS"))
        if document.get("installUrl"):
            lines.append(f"install the App: {document['installUrl']}")
        return lines

    emit(found, output_format, text)


@draftpr.command("link")
@click.argument("installation_id", type=click.IntRange(min=1))
@server_command
def draftpr_link(
    installation_id: int, url: str | None, api_key: str | None, output_format: str
) -> None:
    """Link the App installation with this numeric id to the org (on a GitHub account the
    org has proven; the server's operator links any: `driftgate orgs link-installation`)."""
    with server(url, api_key) as http:
        linked = api.call(
            http, "POST", "/v1/draftpr/installations", json={"installationId": installation_id}
        )
    emit(
        linked,
        output_format,
        lambda d: [f"linked installation {d['installationId']} ({d['account'] or 'unverified'})"],
    )
