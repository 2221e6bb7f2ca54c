"""`driftgate preflight`: ask a running driftgate server whether a run may start.

A thin client of `POST /api/preflight` for CI jobs and agent launchers. Exit codes: 0 allowed,
1 blocked (HTTP 200 with `allowed: false`, or 409 `policyBlocked`), 2 a usage error, missing
URL or key, an unreachable server, any other HTTP error, or an answer that is not a preflight
result. Errors are one line on stderr; the API key is never printed.

`--wait SECONDS` asks again every `--interval` seconds while the only thing blocking is watches
that have never been checked (`never_checked`); any other reason ends the wait at once, and a
`--dry-run` never waits.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import click

from cli import api, style
from cli.common import fail, format_option

if TYPE_CHECKING:
    import httpx

WATCH_ID_LIMIT = 100  # the API's limit (controller.agents.policy.WATCH_ID_LIMIT)
PATH = "/api/preflight"
NEVER_CHECKED = "never_checked"
EXIT_ALLOWED, EXIT_BLOCKED, EXIT_ERROR = 0, 1, 2


def _ignore_entry(value: str) -> dict[str, str]:
    watch_id, sep, reason = value.partition(":")
    watch_id, reason = watch_id.strip(), reason.strip()
    if not sep or not watch_id or not reason:
        raise click.BadParameter(f"{value!r} is not ID:REASON", param_hint="'--ignore'")
    return {"watchId": watch_id, "reason": reason}


@click.command()
@click.option(
    "--watch",
    "watch_ids",
    multiple=True,
    metavar="ID|NAME",
    help=f"A watch the run depends on, by id, name or a unique id prefix; repeatable (at most "
    f"{WATCH_ID_LIMIT}). "
    "No policy applies.",
)
@click.option(
    "--agent",
    "agent_id",
    metavar="ID",
    help="An agent (id or slug): its bound watches and its policy (409 when it blocks).",
)
@click.option(
    "--wait",
    type=click.FloatRange(min=0),
    default=0,
    metavar="SECONDS",
    help="Keep asking for up to SECONDS while only never-checked watches block (not with "
    "--dry-run).",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0, min_open=True),
    default=5.0,
    show_default=True,
    metavar="SECONDS",
    help="Seconds between two questions while waiting.",
)
@click.option("--dry-run", is_flag=True, help="Evaluate and record, but never answer 409.")
@click.option(
    "--ignore",
    "ignores",
    multiple=True,
    metavar="ID:REASON",
    help="Do not block on watch ID (the REASON is recorded); repeatable. A policy block "
    "cannot be ignored.",
)
@format_option(
    "text",
    "json",
    help="text: a verdict line and one line per blocked watch; json: the server's answer.",
)
@api.server_options
def preflight(
    watch_ids: tuple[str, ...],
    agent_id: str | None,
    wait: float,
    interval: float,
    dry_run: bool,
    ignores: tuple[str, ...],
    output_format: str,
    url: str | None,
    api_key: str | None,
) -> None:
    """Ask the server whether a run may start (POST /api/preflight).

    Give the watches the run depends on (--watch, repeatable) or an agent (--agent).
    Exit codes: 0 allowed, 1 blocked, 2 an error.
    """
    body = _request_body(watch_ids, agent_id, ignores, dry_run)
    if wait and dry_run:
        click.echo("driftgate: warning: --wait has no effect with --dry-run", err=True)
    try:
        with api.client(url, api_key) as http:
            if "watchIds" in body:
                body["watchIds"] = _ids_of(http, body["watchIds"])
            answer = _ask(http, body, wait=0 if dry_run else wait, interval=interval)
    except api.ApiError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted before an answer")  # exit 2, not click's 1 (which means blocked)
    if output_format == "json":
        click.echo(json.dumps(answer, indent=2))
    else:
        for line in render_text(answer):
            click.echo(line)
    sys.exit(EXIT_ALLOWED if answer["allowed"] is True else EXIT_BLOCKED)


def _request_body(
    watch_ids: Sequence[str], agent_id: str | None, ignores: Sequence[str], dry_run: bool
) -> dict[str, Any]:
    if watch_ids and agent_id is not None:
        raise click.UsageError("--watch and --agent are exclusive: give one of them")
    if not watch_ids and agent_id is None:
        raise click.UsageError("give --watch ID (repeatable) or --agent ID")
    if len(watch_ids) > WATCH_ID_LIMIT:
        raise click.UsageError(
            f"at most {WATCH_ID_LIMIT} --watch ids per preflight ({len(watch_ids)} given)"
        )
    body: dict[str, Any] = (
        {"agentId": agent_id} if agent_id is not None else {"watchIds": list(watch_ids)}
    )
    entries = [_ignore_entry(value) for value in ignores]
    if len(entries) > WATCH_ID_LIMIT:
        raise click.UsageError(f"at most {WATCH_ID_LIMIT} --ignore entries ({len(entries)} given)")
    if entries:
        body["ignore"] = entries
    if dry_run:
        body["dryRun"] = True
    return body


def _ask(
    http: httpx.Client, body: dict[str, Any], *, wait: float, interval: float
) -> dict[str, Any]:
    """The final answer: asked once, or again while only unchecked watches block."""
    deadline = time.monotonic() + wait
    announced = False
    while True:
        answer = _post(http, body)
        remaining = deadline - time.monotonic()
        if not waiting_on_first_check(answer) or remaining <= 0:
            return answer
        if not announced:
            count = len(answer.get("blocked") or [])
            click.echo(
                f"driftgate: {count} watch(es) not checked yet; asking again every "
                f"{interval:g}s for up to {wait:g}s",
                err=True,
            )
            announced = True
        time.sleep(min(interval, remaining))


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


def _ids_of(http: httpx.Client, refs: list[str]) -> list[str]:
    """Watch names and unique id prefixes become ids (one listing, only when a ref is not a
    whole id); an id, or a ref that names nothing in the org, goes as it is and the server
    answers `not_found` for it (blocked). A prefix that several ids start with is an error."""
    from controller.model.ids import pick

    if all(_UUID.fullmatch(ref) for ref in refs):
        return refs
    names = api.watch_names(http)
    by_id = [(i, name) for name, i in names.items()]
    return [names.get(ref) or pick("watches", ref, by_id) or ref for ref in refs]


def _post(http: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    status, document = api.send(http, "POST", PATH, json=body)
    if status in (200, 409) and _is_result(document):
        return cast(dict[str, Any], document)
    if status in (200, 409) and not (isinstance(document, dict) and "message" in document):
        where = api.shown(http.base_url)
        raise api.ApiError(f"{where} answered HTTP {status} without a preflight result")
    raise api.refusal(status, document, api.shown(http.base_url))


def _is_result(document: Any) -> bool:
    return (
        isinstance(document, dict)
        and isinstance(document.get("allowed"), bool)
        and isinstance(document.get("blocked"), list)
        and all(isinstance(row, dict) for row in document["blocked"])
    )


def waiting_on_first_check(answer: dict[str, Any]) -> bool:
    """Blocked only by watches never checked yet: worth asking again after their first check.

    Never on a policy block, an agent reason (killed, unresolved reference) or any other
    watch reason, since those do not clear by themselves within a wait."""
    if answer.get("allowed") is not False or answer.get("policyBlocked"):
        return False
    if (answer.get("agent") or {}).get("reasons"):
        return False
    blocked = answer.get("blocked") or []
    return bool(blocked) and all(
        set(row.get("reasons") or ()) == {NEVER_CHECKED} for row in blocked
    )


def render_text(answer: dict[str, Any]) -> list[str]:
    """The verdict line, then one line per blocked watch, the agent's reasons, ignored rows."""
    notes = []
    if answer.get("policyBlocked"):
        notes.append("policy")
    if answer.get("dryRun"):
        notes.append("dry run, policy would block" if answer.get("wouldPolicyBlock") else "dry run")
    verdict = style.paint("allowed" if answer.get("allowed") is True else "blocked")
    if notes:
        verdict += f" ({', '.join(notes)})"
    if answer.get("decisionId"):
        verdict += f" decision {answer['decisionId']}"
    lines = [verdict]
    lines.extend("  " + _row(row) for row in answer.get("blocked") or [])
    agent = answer.get("agent") or {}
    if agent.get("reasons"):
        line = f"  agent {agent.get('slug') or agent.get('id')}: {', '.join(agent['reasons'])}"
        if agent.get("unresolvedReferences"):
            line += f" [{', '.join(agent['unresolvedReferences'])}]"
        if agent.get("agentActions"):
            line += f" -> {', '.join(agent['agentActions'])}"
        lines.append(line)
    for row in answer.get("ignored") or []:
        lines.append(f"  ignored {_row(row)} (ignored: {row.get('ignoreReason') or '-'})")
    return lines


def _row(row: dict[str, Any]) -> str:
    watch_id = row.get("watchId") or "?"
    name = row.get("name")
    label = f"{name} ({watch_id})" if name and name != watch_id else watch_id
    status = style.paint(str(row.get("driftStatus") or "-"))
    text = f"{label}: {status}: {', '.join(row.get('reasons') or [])}"
    if row.get("agentActions"):
        text += f" -> {', '.join(row['agentActions'])}"
    return text
