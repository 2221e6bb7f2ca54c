"""`driftgate preflight`: ask a running driftgate server whether a run may start.

A thin client of `POST /api/preflight` for CI jobs and agent launchers. Exit codes: 0 allowed,
1 blocked (HTTP 200 with `allowed: false`, or 409 `policyBlocked`), 2 a usage error, missing
URL or key, an unreachable server, any other HTTP error, or an answer that is not a preflight
result. Errors are one line on stderr; the API key is never printed.

`--wait-while-unknown SECONDS` (alias `--wait`) asks again every `--interval` seconds while
the answer is not known yet: the only thing blocking is watches whose first check has not
completed (`never_checked`). Any other reason is a known answer and ends the wait at once.

`--dry-run` is the break-glass: the server decides and records the decision (and an audit
entry, `preflight.dry_run`) but enforces nothing, and the command reports the decision it
would have made and exits 0 whatever it is (2 still for an error: an unanswered question is
no decision). It never waits.

The answer is printed as text, as the server's JSON, or as a JUnit XML report (one test case
per watch: a blocked watch fails with its reasons, an ignored one is skipped).
"""

from __future__ import annotations

import json
import re
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

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
    "--wait-while-unknown",
    "--wait",
    "wait",
    type=click.FloatRange(min=0),
    default=0,
    metavar="SECONDS",
    help="Keep asking for up to SECONDS while the answer is not known yet (only watches "
    "never checked block); any other block ends the wait at once. --wait is an alias. "
    "Not with --dry-run.",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0, min_open=True),
    default=5.0,
    show_default=True,
    metavar="SECONDS",
    help="Seconds between two questions while waiting.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Break-glass: the server decides, records and audits the decision but enforces "
    "nothing; report the decision it would have made and exit 0 whatever it is.",
)
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
    "junit",
    help="text: a verdict line and one line per blocked watch; json: the server's answer; "
    "junit: a JUnit XML report, one test case per watch (a blocked one fails).",
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
        click.echo(
            "driftgate: warning: --wait-while-unknown has no effect with --dry-run", err=True
        )
    try:
        with api.client(url, api_key) as http:
            watches: list[tuple[str, str]] = []  # (as given, id) of each --watch
            if "watchIds" in body:
                body["watchIds"] = _ids_of(http, body["watchIds"])
                watches = list(zip(watch_ids, body["watchIds"], strict=True))
            answer = _ask(http, body, wait=0 if dry_run else wait, interval=interval)
            if output_format == "junit" and agent_id is not None:
                watches = _bound_watches(http, agent_id)
    except api.ApiError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted before an answer")  # exit 2, not click's 1 (which means blocked)
    if output_format == "json":
        click.echo(json.dumps(answer, indent=2))
    elif output_format == "junit":
        click.echo(render_junit(answer, watches), nl=False)
    else:
        for line in render_text(answer):
            click.echo(line)
    allowed = answer["allowed"] is True
    if dry_run:
        if not allowed:
            click.echo(
                f"driftgate: dry run: the run would be blocked; exit 0 (the decision "
                f"{answer.get('decisionId') or '-'} is recorded and audited)",
                err=True,
            )
        sys.exit(EXIT_ALLOWED)
    sys.exit(EXIT_ALLOWED if allowed else EXIT_BLOCKED)


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


def _bound_watches(http: httpx.Client, agent_id: str) -> list[tuple[str, str]]:
    """The agent's watch references and what each resolved to (GET /api/agents/:id), for a
    report with one test case per watch; a reference that names nothing has its ref as id."""
    agent = api.call(http, "GET", f"/api/agents/{quote(agent_id, safe='')}")
    return [(w["ref"], w.get("watchId") or w["ref"]) for w in agent.get("watches") or []]


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
    """The answer is not known yet: blocked only by watches whose first check has not
    completed (`never_checked`), worth asking again once it has.

    Never on a policy block, an agent reason (killed, unresolved reference) or any other
    watch reason: those are known answers. `check_failed:stale` is one too: its remedy is
    `check_controller` (no check has completed for twice the interval, so the scheduler is
    not running them), and waiting would only hide that outage."""
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


def render_junit(answer: dict[str, Any], watches: Sequence[tuple[str, str]]) -> str:
    """The answer as a JUnit XML report (junit-10.xsd): one test case per watch, given as
    (reference, id) pairs, then any blocked or ignored row of a watch not among them; a
    blocked watch fails with its reasons, an ignored one is skipped with its reason, and the
    agent's own reasons are one more case. In a dry run nothing is enforced, so a block is
    reported as skipped ("would block") rather than failed."""
    dry_run = bool(answer.get("dryRun"))
    blocked = {row.get("watchId"): row for row in answer.get("blocked") or []}
    ignored = {row.get("watchId"): row for row in answer.get("ignored") or []}
    cases: list[ET.Element] = []
    seen: set[str] = set()
    for ref, watch_id in watches:
        if watch_id in seen:
            continue
        seen.add(watch_id)
        row = blocked.get(watch_id) or ignored.get(watch_id)
        cases.append(_case(row or {"watchId": watch_id, "name": ref}, watch_id in blocked, dry_run))
    for rows, is_blocked in ((blocked, True), (ignored, False)):
        for watch_id, row in rows.items():
            if watch_id not in seen:
                seen.add(str(watch_id))
                cases.append(_case(row, is_blocked, dry_run))
    agent = answer.get("agent")
    if agent:
        cases.append(_agent_case(answer, agent, dry_run))
    if not cases:
        cases.append(ET.Element("testcase", classname=_CLASSNAME, name="no watches"))
    failures = sum(1 for case in cases if case.find("failure") is not None)
    skipped = sum(1 for case in cases if case.find("skipped") is not None)
    suite = ET.Element(
        "testsuite",
        name="driftgate preflight",
        tests=str(len(cases)),
        failures=str(failures),
        errors="0",
        skipped=str(skipped),
        time=f"{(answer.get('durationMs') or 0) / 1000:.3f}",
        timestamp=str(answer.get("evaluatedAt") or ""),
        id=str(answer.get("decisionId") or ""),
    )
    properties = ET.SubElement(suite, "properties")
    for name in ("decisionId", "allowed", "dryRun", "policyBlocked", "wouldPolicyBlock"):
        value = answer.get(name)
        text = json.dumps(value) if isinstance(value, bool) else str(value or "")
        ET.SubElement(properties, "property", name=name, value=text)
    suite.extend(cases)
    root = ET.Element(
        "testsuites",
        name="driftgate preflight",
        tests=suite.get("tests", "0"),
        failures=str(failures),
        errors="0",
    )
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


_CLASSNAME = "driftgate.preflight"


def _case(row: dict[str, Any], is_blocked: bool, dry_run: bool) -> ET.Element:
    watch_id = str(row.get("watchId") or "?")
    name = row.get("name")
    label = f"{name} ({watch_id})" if name and name != watch_id else watch_id
    case = ET.Element("testcase", classname=_CLASSNAME, name=f"watch {label}")
    reasons = ", ".join(row.get("reasons") or [])
    detail = _row_detail(row)
    if "ignoreReason" in row:
        ET.SubElement(case, "skipped", message=f"ignored: {row.get('ignoreReason') or '-'}")
    elif is_blocked and dry_run:
        skipped = ET.SubElement(case, "skipped", message=f"dry run, would block: {reasons}")
        skipped.text = detail
    elif is_blocked:
        first = (row.get("reasons") or ["blocked"])[0]
        failure = ET.SubElement(case, "failure", type=first, message=f"blocked: {reasons}")
        failure.text = detail
    return case


def _agent_case(answer: dict[str, Any], agent: dict[str, Any], dry_run: bool) -> ET.Element:
    slug = agent.get("slug") or agent.get("id") or "?"
    case = ET.Element("testcase", classname=_CLASSNAME, name=f"agent {slug}")
    reasons = list(agent.get("reasons") or [])
    if answer.get("wouldPolicyBlock"):
        reasons.append(f"policy {agent.get('policy') or '-'} blocks")
    if not reasons:
        return case
    lines = [f"agent: {slug}", f"reasons: {', '.join(agent.get('reasons') or []) or '-'}"]
    if agent.get("unresolvedReferences"):
        lines.append(f"unresolved references: {', '.join(agent['unresolvedReferences'])}")
    if agent.get("agentActions"):
        lines.append(f"agentActions: {', '.join(agent['agentActions'])}")
    if dry_run:
        element = ET.SubElement(
            case, "skipped", message=f"dry run, would block: {', '.join(reasons)}"
        )
    else:
        element = ET.SubElement(
            case, "failure", type="agent", message=f"blocked: {', '.join(reasons)}"
        )
    element.text = "\n".join(lines)
    return case


def _row_detail(row: dict[str, Any]) -> str:
    lines = [
        f"watch: {row.get('name') or '-'} ({row.get('watchId') or '?'})",
        f"driftStatus: {row.get('driftStatus') or '-'}",
        f"reasons: {', '.join(row.get('reasons') or []) or '-'}",
    ]
    if row.get("agentActions"):
        lines.append(f"agentActions: {', '.join(row['agentActions'])}")
    if row.get("lastCheckedAt"):
        lines.append(f"lastCheckedAt: {row['lastCheckedAt']}")
    if row.get("incidentId"):
        lines.append(f"incident: {row['incidentId']}")
    return "\n".join(lines)
