"""Acknowledging drift: the one decision every path that acknowledges goes through.

An acknowledged incident no longer blocks any agent bound to its watch (`controller.agents.policy`,
rule 3), so an acknowledgement is accepted only when the remediation approval rules of each of
those agents accept the evidence given (`repository` and `branch`). One refusal refuses the
whole acknowledgement (403 `approval_refused`, naming each agent, rule and the part that
failed) and nothing is stored. The API's agent and watch routes, the console's forms, the MCP
tools and the CLI all come here: this module is the only caller of
`controller.drift.incidents.acknowledge_incident` (tests/drift/test_acknowledgement.py holds this).

What the rules are matched against, and whether anyone vouches for it (docs/run-gate.md,
"What approval rules verify"): an acknowledgement's `repository` and `branch` are what its
caller states (any holder of an org key can state any), so they are recorded as unverified
(`verified: false`). The merge of a draft pull request driftgate opened (which also lifts
the block: its contract becomes the baseline) is judged by the same rules against that pull
request's own repository and base branch instead: from GitHub's signed delivery when GitHub
says so (`verified: true`), else from the store's record of the pull request (`merge_approval`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any

from pydantic import StringConstraints
from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.agents import runtime
from controller.crypto import SecretBox
from controller.drift.incidents import acknowledge_incident
from controller.errors import Forbidden
from controller.model.base import RequestModel
from controller.model.gitops import REPOSITORY_PATTERN
from controller.model.principal import Principal
from controller.model.watch import LABEL_PATTERN, Note
from controller.store import audit
from controller.store.models import Agent, AgentWatch, Incident, Watch

Repository = Annotated[str, StringConstraints(max_length=300, pattern=REPOSITORY_PATTERN)]
Branch = Annotated[str, StringConstraints(min_length=1, max_length=255, pattern=LABEL_PATTERN)]


class AckEvidence(RequestModel):
    """What an acknowledgement carries: a note, and the `repository` and `branch` of the fix
    that the approval rules of the agents it unblocks are checked against."""

    note: Note | None = None
    repository: Repository | None = None
    branch: Branch | None = None


@dataclass(frozen=True)
class Acknowledged:
    """What an accepted acknowledgement did."""

    incidents: list[Incident]  # moved open -> acknowledged by this call
    approvals: dict[str, dict[str, Any] | None]  # agent id -> the rule that accepted (None: none)
    unblocked: list[str] = field(default_factory=list)  # agents killed by drift, running again


def acknowledge_agent(
    session: Session,
    principal: Principal,
    agent: Agent,
    evidence: AckEvidence,
    box: SecretBox,
    now: datetime,
) -> Acknowledged:
    """The open incidents of the agent's watches (one audit entry `agent.ack`); the agent's
    own rules decide even when nothing is open."""
    acked = _acknowledge(
        session, principal, _open_incidents(session, agent), evidence, box, now, agents=[agent]
    )
    audit.by(
        session,
        principal,
        "agent.ack",
        agent.key,
        {
            "incidents": [i.id for i in acked.incidents],
            "note": evidence.note,
            "repository": evidence.repository,
            "branch": evidence.branch,
            "verified": False,  # the caller's statement (module docstring)
            "approvalRule": acked.approvals.get(agent.key),
            "approvals": acked.approvals,
        },
    )
    return acked


def acknowledge_watch(
    session: Session,
    principal: Principal,
    watch: Watch,
    incident: Incident,
    evidence: AckEvidence,
    box: SecretBox,
    now: datetime,
) -> Acknowledged:
    """The watch's incident when it is open (audited `incident.acknowledge`); an incident
    already acknowledged stays as it is, with nothing to decide or audit."""
    acked = _acknowledge(session, principal, [(watch, incident)], evidence, box, now, agents=[])
    if acked.incidents:
        audit.by(
            session,
            principal,
            "incident.acknowledge",
            incident.id,
            {
                "note": evidence.note,
                "repository": evidence.repository,
                "branch": evidence.branch,
                "verified": False,  # the caller's statement (module docstring)
                "approvals": acked.approvals,
            },
        )
    return acked


@dataclass(frozen=True)
class MergeApproval:
    """The approval rules' decision on a merged draft pull request: its repository and base
    branch, whether they come from GitHub's signed delivery (`verified`), each agent's accepted
    rule, and the refusals (empty when accepted)."""

    repository: str
    branch: str | None
    verified: bool
    approvals: dict[str, dict[str, Any] | None]
    refused: list[dict[str, Any]]

    def refusal(self) -> Forbidden:
        """403 `approval_refused` naming each rule that refused and the part that failed."""
        by_agent: dict[str, list[dict[str, Any]]] = {}
        for failure in self.refused:
            by_agent.setdefault(str(failure["agentId"]), []).append(failure)
        return _refusal(by_agent, self.repository, self.branch)

    def audited(self) -> dict[str, Any]:
        """What the audit entry of the merge records of the decision."""
        return {
            "repository": self.repository,
            "branch": self.branch,
            "verified": self.verified,
            "approvals": self.approvals,
            "approvalRefused": self.refused,
        }


def merge_approval(
    session: Session, watch_id: str, repository: str, branch: str | None, *, verified: bool
) -> MergeApproval:
    """The rules of every agent bound to the watch, judged against a merged pull request's
    `repository` and base `branch` (not against anything a caller states); one refusal
    refuses the merge's effect for all of them, as for an acknowledgement."""
    approvals: dict[str, dict[str, Any] | None] = {}
    refused: list[dict[str, Any]] = []
    for agent in sorted(runtime.bound_agents(session, watch_id), key=lambda a: a.key):
        accepted, failures = _judge(agent, repository, branch)
        approvals[agent.key] = accepted
        refused.extend(failures)
    return MergeApproval(repository, branch, verified, approvals, refused)


def approval_rules(session: Session, watch_id: str) -> dict[str, list[dict[str, Any]]]:
    """The approval rules an acknowledgement of the watch must satisfy: each bound agent that
    declares rules, by id (the console's acknowledge form names them before it is sent)."""
    return {
        agent.key: list(agent.approvals)
        for agent in runtime.bound_agents(session, watch_id)
        if agent.approvals
    }


def check_approval(
    agent: Agent, repository: str | None, branch: str | None
) -> dict[str, Any] | None:
    """The first approval rule of the agent that accepts `repository`@`branch`; None when it
    has no rules (anyone with an org key may acknowledge). Refusal is 403 naming each rule
    and the part of it that failed."""
    accepted, failures = _judge(agent, repository, branch)
    if failures:
        raise _refusal({agent.key: failures}, repository, branch)
    return accepted


def _acknowledge(
    session: Session,
    principal: Principal,
    targets: Sequence[tuple[Watch, Incident]],
    evidence: AckEvidence,
    box: SecretBox,
    now: datetime,
    *,
    agents: Sequence[Agent],
) -> Acknowledged:
    """The decision: the rules of every agent the acknowledgement unblocks (those named, and
    those bound to the watch of each open incident) must accept, else 403 before any write."""
    opened = [(w, i) for w, i in targets if i.status == "open"]
    deciding = {a.key: a for a in agents}
    for watch, _ in opened:
        for agent in runtime.bound_agents(session, watch.id):
            deciding.setdefault(agent.key, agent)
    approvals: dict[str, dict[str, Any] | None] = {}
    refused: dict[str, list[dict[str, Any]]] = {}
    for key in sorted(deciding):
        accepted, failures = _judge(deciding[key], evidence.repository, evidence.branch)
        if failures:
            refused[key] = failures
        approvals[key] = accepted
    if refused:
        raise _refusal(refused, evidence.repository, evidence.branch)
    moved = [
        incident
        for watch, incident in opened
        if acknowledge_incident(
            session, box, watch, incident, now, by=principal.actor, note=evidence.note
        )
    ]
    session.flush()
    unblocked = []
    for key in sorted(deciding):
        agent = deciding[key]
        # A drift kill ends once nothing the agent depends on is unacknowledged; a manual
        # kill needs an unblock.
        if agent.runtime_reason != "breaking_drift" or _open_incidents(session, agent):
            continue
        if runtime.unblock(session, box, agent, now, by=principal.actor, note=evidence.note):
            unblocked.append(key)
    return Acknowledged(incidents=moved, approvals=approvals, unblocked=unblocked)


def _judge(
    agent: Agent, repository: str | None, branch: str | None
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """(the first rule that accepts, []) or (None, each rule with the part that failed)."""
    rules = agent.approvals or []
    failures: list[dict[str, Any]] = []
    for rule in rules:
        if repository is None or repository.lower() != str(rule["repository"]).lower():
            failures.append({"agentId": agent.key, "rule": rule, "failed": "repository"})
        elif branch is None or not any(
            fnmatch.fnmatchcase(branch, pattern) for pattern in rule.get("branches") or ["*"]
        ):
            failures.append({"agentId": agent.key, "rule": rule, "failed": "branch"})
        else:
            return dict(rule), []
    return None, failures


def _refusal(
    refused: dict[str, list[dict[str, Any]]], repository: str | None, branch: str | None
) -> Forbidden:
    names = " and ".join(repr(key) for key in refused)
    return Forbidden(
        f"no remediation approval rule of agent{'s' if len(refused) > 1 else ''} {names} "
        f"accepts {repository or '(no repository)'}@{branch or '(no branch)'}",
        code="approval_refused",
        details=[failure for failures in refused.values() for failure in failures],
    )


def _open_incidents(session: Session, agent: Agent) -> list[tuple[Watch, Incident]]:
    """The open incidents of the agent's bound watches, with their watch, oldest first."""
    rows = session.execute(
        select(Watch, Incident)
        .join(Incident, Incident.watch_id == Watch.id)
        .where(
            Watch.id.in_(select(AgentWatch.watch_id).where(AgentWatch.agent_id == agent.id)),
            Incident.status == "open",
        )
        .order_by(Incident.opened_at, Incident.id)
    )
    return [(watch, incident) for watch, incident in rows]
