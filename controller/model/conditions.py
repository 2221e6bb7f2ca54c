"""The status conditions of git sources and agent bindings: their types, statuses and reasons
(Kubernetes-style `{type, status, reason, message}`), named once. Reconcile writes them,
`GET /api/sources`, `driftgate sources list` and the agent views read them."""

from __future__ import annotations

from pydantic import Field

from controller.model.base import ApiModel

# Types.
READY = "Ready"
RECONCILING = "Reconciling"
STALLED = "Stalled"
WATCHES_RESOLVED = "WatchesResolved"
ORDER = {READY: 0, RECONCILING: 1, STALLED: 2}  # how a source's conditions are listed

# Statuses.
TRUE = "True"
FALSE = "False"

# Reasons.
SUCCEEDED = "Succeeded"
VALIDATION_FAILED = "ValidationFailed"
RECONCILIATION_FAILED = "ReconciliationFailed"
SUSPENDED = "Suspended"
IDLE = "Idle"
RESOLVED = "Resolved"
WATCH_NOT_FOUND = "WatchNotFound"
NOT_RECONCILED = "NotReconciled"  # shown for a source without a Ready condition yet


class Condition(ApiModel):
    """One condition as the API serves it."""

    type: str
    status: str
    reason: str
    message: str
    last_transition_time: str | None = None
    refs: list[str] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="WatchesResolved: the references that point at no watch",
    )
