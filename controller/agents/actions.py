"""Policy actions: what each name a policy's `on_breaking` may list does.

- `notify`: nothing of its own; alerts go to the org's destinations whatever the policy
  lists (`controller.events.outbox` decides by severity).
- `draft_pr`: when a bound watch turns drifted, the drift event's pull request is queued in
  the agent's `repoRef` repository (`controller.draftpr.service` attaches it).
- `block_new_runs`: preflight blocks the agent on breaking drift (`policy_block:<action>`,
  HTTP 409).
- `kill_in_flight`: blocks new runs too, and when a bound watch turns drifted the agent is
  killed (`agent.contract.blocked`).

Each name is a `PolicyAction` in the `ACTIONS` registry. Its `blocks_new_runs` is read by the
pure run gate (`controller.agents.policy`), so this module imports nothing with I/O. Its `on_drift`
effect, run by `controller.agents.runtime.on_drift` for every bound agent when a watch turns
drifted, does I/O and is attached from above: `controller.agents.runtime` attaches the kill to
`kill_in_flight`, `controller.draftpr.service` the pull request to `draft_pr`. A new action
is one more `register`/`attach`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from controller.registry import Registry

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from controller.crypto import SecretBox
    from controller.store.models import Agent, Incident, Watch

NOTIFY = "notify"
DRAFT_PR = "draft_pr"
BLOCK_NEW_RUNS = "block_new_runs"
KILL_IN_FLIGHT = "kill_in_flight"


@dataclass(frozen=True)
class Drift:
    """A watch that just turned drifted, as an action's effect sees it."""

    session: Session
    box: SecretBox
    watch: Watch
    incident: Incident
    agent_actions: list[str]
    now: datetime


# What an action does to one bound agent when a watch turns drifted; True when it changed it.
DriftEffect = Callable[[Drift, "Agent"], bool]


@dataclass(frozen=True)
class PolicyAction:
    name: str
    blocks_new_runs: bool = False
    on_drift: DriftEffect | None = None


class PolicyActions(Registry[PolicyAction]):
    """The registry of policy actions, looked up by the names a policy lists."""

    what = "policy action"

    def __init__(self, actions: Sequence[PolicyAction] = ()) -> None:
        self._blocking: tuple[str, ...] = ()
        super().__init__(actions)

    def attach(self, name: str, on_drift: DriftEffect) -> PolicyAction:
        """Give a registered action its effect on drift (from the layer that can do it)."""
        action = self._entries[name]
        if action.on_drift is not None and action.on_drift is not on_drift:
            raise ValueError(f"policy action {name!r} already has an effect on drift")
        self._entries[name] = replace(action, on_drift=on_drift)
        self._changed()
        return self._entries[name]

    def blocking(self) -> tuple[str, ...]:
        """The names that block new runs, in registration order (the run gate's order)."""
        return self._blocking

    def _changed(self) -> None:
        # Read on every preflight: computed when the registry changes, not per read.
        self._blocking = tuple(a.name for a in self if a.blocks_new_runs)


ACTIONS = PolicyActions(
    [
        PolicyAction(NOTIFY),
        PolicyAction(DRAFT_PR),
        PolicyAction(BLOCK_NEW_RUNS, blocks_new_runs=True),
        PolicyAction(KILL_IN_FLIGHT, blocks_new_runs=True),
    ]
)
