"""Agents: bindings, composite status, runtime lifecycle (kill, unblock, ack), and the
agents a watch affects (org-scoped)."""

from __future__ import annotations

from controller.agents import service as agent_service
from web.api import REGISTRY
from web.routes import Call

route = REGISTRY.tagged("agents")


@route("GET /api/agents", "List agents")
def list_agents(call: Call) -> agent_service.AgentList:
    """Agent bindings of the org: policy, watch references and whether each resolved."""
    return agent_service.list_agents(call.session, call.org_id)


@route("GET /api/agents/<agent_id>", "One agent binding")
def get_agent(call: Call) -> agent_service.AgentOut:
    """The binding of the agent with this id or slug."""
    return agent_service.agent_out(
        agent_service.get_agent(call.session, call.org_id, call.path["agent_id"])
    )


@route("GET /api/agents/<agent_id>/status", "Agent status")
def agent_status(call: Call) -> agent_service.AgentStatus:
    """Composite status: the bound watches with their status and whether each blocks, the
    policy, the runtime state, open incidents, unresolved references, agentActions and what a
    preflight would answer now."""
    return agent_service.agent_status(call.session, call.org_id, call.path["agent_id"], call.now)


@route(
    "POST /api/agents/<agent_id>/kill",
    "Kill an agent's in-flight runs",
    body=agent_service.AgentNote,
)
def kill_agent(call: Call) -> agent_service.AgentStatus:
    """Runtime state `killed`; a signed `agent.contract.blocked` (action `kill_in_flight`)
    goes to the agent's runtime webhook. Preflight answers 409 until unblocked (audited)."""
    return _runtime_changed(call, agent_service.kill_agent)


@route(
    "POST /api/agents/<agent_id>/unblock",
    "Unblock an agent",
    body=agent_service.AgentNote,
    errors=(409,),
)
def unblock_agent(call: Call) -> agent_service.AgentStatus:
    """Runtime state back to `running` (`agent.unblocked`). Under a policy that requires
    acknowledgement, open incidents answer 409 `ack_required` (audited)."""
    return _runtime_changed(call, agent_service.unblock_agent)


@route(
    "POST /api/agents/<agent_id>/ack",
    "Acknowledge an agent's incidents",
    body=agent_service.AgentAck,
    errors=(403,),
)
def ack_agent(call: Call) -> agent_service.AckOut:
    """Acknowledges the open incidents of the agent's watches with a note (audited). When the
    agent declares remediation approval rules, `repository` and `branch` must match one, else
    403 `approval_refused` with the rules that failed. An agent killed by drift runs again."""
    agent, acknowledged, rule = agent_service.ack_agent(
        call.session,
        call.principal_required,
        call.path["agent_id"],
        call.body,
        call.secret_box,
        call.now,
    )
    call.session.flush()
    return agent_service.AckOut(
        acknowledged=acknowledged,
        approval=rule,
        approval_verified=False,  # the caller's statement: `AckOut`
        status=agent_service.agent_status(call.session, call.org_id, agent.key, call.now),
    )


@route("GET /api/watches/<watch_id>/affected-agents", "Agents a watch affects")
def affected_agents(call: Call) -> agent_service.AffectedAgents:
    """The agents bound to the watch, with their policy's enforcing actions and runtime state."""
    return agent_service.affected_agents(call.session, call.org_id, call.path["watch_id"])


def _runtime_changed(call: Call, change: agent_service.RuntimeChange) -> agent_service.AgentStatus:
    """Kill or unblock the agent with the caller's note; its status after the change."""
    agent = change(
        call.session,
        call.principal_required,
        call.path["agent_id"],
        call.body.note,
        call.secret_box,
        call.now,
    )
    call.session.flush()
    return agent_service.agent_status(call.session, call.org_id, agent.key, call.now)
