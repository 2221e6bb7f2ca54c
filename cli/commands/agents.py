"""`driftgate agents`: the run gate's agents through a running server (`DRIFTGATE_URL`,
`DRIFTGATE_API_KEY`): their bindings and composite status, and the runtime lifecycle (kill,
unblock, acknowledge) without curl.

An agent is named by its id or slug. A refusal names its way out: an unblock that the policy
refuses until the incidents are acknowledged names `driftgate agents ack`, and an
acknowledgement that no remediation approval rule accepts names each rule and the part that
failed. Exit codes: 0 done, 2 a usage error, an unreachable server or an error answer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import click

from cli import api
from cli.common import fail
from cli.output import emit, table
from cli.remote import server, server_command

if TYPE_CHECKING:  # for annotations only: `--help` loads no HTTP client
    import httpx

_note = click.option("--note", help="Why (kept in the audit log and on the agent).")


@click.group()
def agents() -> None:
    """The org's agents and the run gate's lifecycle: status, kill, unblock, ack."""


@agents.command("list")
@server_command
def agents_list(url: str | None, api_key: str | None, output_format: str) -> None:
    """Every agent of the org: environment, policy, runtime state, watches, source."""
    with server(url, api_key) as http:
        found = api.call(http, "GET", "/api/agents")

    def text(document: dict[str, Any]) -> list[str]:
        rows = [
            (
                a["id"],
                a.get("environment") or "-",
                a["policy"],
                a.get("runtimeState", "-"),
                _watch_count(a["watches"]),
                (a.get("managedBy") or {}).get("source") or "api",
            )
            for a in document["agents"]
        ]
        return table(rows, ("ID", "ENVIRONMENT", "POLICY", "RUNTIME", "WATCHES", "SOURCE"))

    emit(found, output_format, text)


def _watch_count(watches: list[dict[str, Any]]) -> str:
    unresolved = sum(1 for w in watches if not w.get("resolved"))
    return f"{len(watches)}" + (f" ({unresolved} unresolved)" if unresolved else "")


@agents.command("status")
@click.argument("agent")
@server_command
def agents_status(agent: str, url: str | None, api_key: str | None, output_format: str) -> None:
    """An agent's composite status: policy, runtime, bound watches (blocking or not), open
    incidents, what preflight answers now and what to do."""
    with server(url, api_key) as http:
        status = api.call(http, "GET", f"{_path(agent)}/status")
    emit(status, output_format, _status_text)


@agents.command("kill")
@click.argument("agent")
@_note
@server_command
def agents_kill(
    agent: str, note: str | None, url: str | None, api_key: str | None, output_format: str
) -> None:
    """Kill an agent's in-flight runs: runtime `killed`, a signed `agent.contract.blocked` to
    its runtime webhook, preflight refused (409) until it is unblocked (audited)."""
    with server(url, api_key) as http:
        status = api.call(http, "POST", f"{_path(agent)}/kill", json=_body(note))
    emit(status, output_format, _status_text)


@agents.command("unblock")
@click.argument("agent")
@_note
@server_command
def agents_unblock(
    agent: str, note: str | None, url: str | None, api_key: str | None, output_format: str
) -> None:
    """Let a killed agent run again (`agent.unblocked`). A policy that requires
    acknowledgement refuses while an incident of its watches is open: `agents ack` first."""
    with server(url, api_key) as http:
        code, answer = api.send(http, "POST", f"{_path(agent)}/unblock", json=_body(note))
        if code == 409 and _error(answer) == "ack_required":
            fail(_ack_required(http, agent, answer))
        status = _answer(http, code, answer)
    emit(status, output_format, _status_text)


@agents.command("ack")
@click.argument("agent")
@_note
@click.option(
    "--repository",
    metavar="OWNER/NAME",
    help="The repository of the change that fixes it (checked against the agent's approval rules).",
)
@click.option("--branch", help="Its branch (checked against the approval rules).")
@server_command
def agents_ack(
    agent: str,
    note: str | None,
    repository: str | None,
    branch: str | None,
    url: str | None,
    api_key: str | None,
    output_format: str,
) -> None:
    """Acknowledge the open incidents of an agent's watches (audited); an agent killed by
    drift runs again. When the agent declares remediation approval rules, --repository and
    --branch must match one of them."""
    body = {
        **_body(note),
        **({"repository": repository} if repository else {}),
        **({"branch": branch} if branch else {}),
    }
    with server(url, api_key) as http:
        code, answer = api.send(http, "POST", f"{_path(agent)}/ack", json=body)
        if code == 403 and _error(answer) == "approval_refused":
            fail(api.approval_refused(answer, ("--repository", "--branch")))
        acked = _answer(http, code, answer)

    def text(document: dict[str, Any]) -> list[str]:
        ids = document.get("acknowledged") or []
        rule = document.get("approval")
        lines = [
            f"acknowledged {len(ids)} incident{'s' if len(ids) != 1 else ''}"
            + (f": {', '.join(ids)}" if ids else "")
            + (f" (approval rule {api.approval_rule(rule)})" if rule else "")
        ]
        return lines + _status_text(document["status"])

    emit(acked, output_format, text)


def _path(agent: str) -> str:
    return f"/api/agents/{quote(agent, safe='')}"


def _body(note: str | None) -> dict[str, Any]:
    return {"note": note} if note else {}


def _error(answer: Any) -> str | None:
    return answer.get("error") if isinstance(answer, dict) else None


def _answer(http: httpx.Client, code: int, answer: Any) -> Any:
    if 200 <= code < 300:
        return answer
    raise api.refusal(code, answer, api.shown(http.base_url))


def _ack_required(http: httpx.Client, agent: str, answer: dict[str, Any]) -> str:
    """The 409 of an unblock, with the command that acknowledges (and the approval rules its
    --repository and --branch must match)."""
    count = len(answer.get("details") or [])
    rules: list[str] = []
    code, bound = api.send(http, "GET", _path(agent))
    if code == 200 and isinstance(bound, dict):
        rules = [api.approval_rule(r) for r in bound.get("approvals") or []]
    command = f"driftgate agents ack {agent} --note TEXT"
    if rules:
        command += " --repository OWNER/NAME --branch BRANCH"
    told = (
        f"agent {agent}: its policy requires the {count} open incident"
        f"{'s' if count != 1 else ''} of its watches to be acknowledged before it is unblocked; "
        f"run `{command}`"
    )
    if rules:
        told += f" (approval rules: {'; '.join(rules)})"
    return f"{told} (HTTP 409, ack_required)"


def _status_text(document: dict[str, Any]) -> list[str]:
    agent, policy, runtime = document["agent"], document["policy"], document["runtime"]
    gate = document["preflight"]
    enforcing = ", ".join(policy.get("enforcing") or []) or "alerts only"
    lines = [
        f"{agent['id']} ({agent.get('environment') or 'no environment'}), policy "
        f"{policy['name']}: {enforcing}",
        f"  runtime {runtime['state']}"
        + (f" ({runtime['reason']})" if runtime.get("reason") else "")
        + (f" since {runtime['changedAt']}" if runtime.get("changedAt") else "")
        + (f" by {runtime['changedBy']}" if runtime.get("changedBy") else "")
        + (f": {runtime['note']}" if runtime.get("note") else ""),
    ]
    verdict = "allowed" if gate["allowed"] else "blocked"
    if not gate["allowed"] and gate.get("policyBlocked"):
        verdict += " (policy, HTTP 409)"
    reasons = gate.get("reasons") or []
    lines.append(f"  preflight now: {verdict}" + (f": {', '.join(reasons)}" if reasons else ""))
    for watch in document.get("watches") or []:
        state = "blocking" if watch["blocking"] else "not blocking"
        why = f" ({', '.join(watch['reasons'])})" if watch.get("reasons") else ""
        incident = (
            f", incident {watch['incidentId']} {watch['incidentStatus']}"
            if watch.get("incidentId")
            else ""
        )
        lines.append(f"  watch {watch['name']}: {watch['driftStatus']}, {state}{why}{incident}")
    for ref in document.get("unresolvedReferences") or []:
        lines.append(f"  watch {ref}: unresolved (no such watch in the org)")
    if document.get("agentActions"):
        lines.append(f"  to do: {', '.join(document['agentActions'])}")
    rules = agent.get("approvals") or []
    if rules:
        lines.append(f"  ack approval rules: {'; '.join(api.approval_rule(r) for r in rules)}")
    return lines
