"""SQLAlchemy 2 typed models of the state store.

Every org-owned row carries `org_id`; queries always filter by it so that another org's id
behaves exactly like a missing one. Secrets are stored only as ciphertext or hashes.
"""

from __future__ import annotations

import os
import random
import time
import uuid
from datetime import date, datetime
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import (
    BigInteger,
    Boolean,
    Date,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    event,
    inspect,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

from controller.store.types import JSONDocument, JSONType, UTCDateTime, utcnow

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def new_id() -> str:
    return str(uuid.uuid4())


_REQUEST_IDS = random.Random()  # its own generator: no `random.seed` elsewhere can replay it
os.register_at_fork(after_in_child=_REQUEST_IDS.seed)  # each worker draws its own ids


def request_id() -> str:
    """A version-4 UUID for ids made on every request (correlation ids, run-gate decisions).

    `uuid4` reads the kernel's random source, and that call lets go of Python's GIL: under a
    threaded server every request then waits for the GIL once more. These ids need to be
    unique, not secret (every read is scoped by org), so they come from a generator of this
    module's own, seeded from the kernel at start and again in each forked worker.
    """
    return str(uuid.UUID(int=_REQUEST_IDS.getrandbits(128), version=4))


def ordered_id() -> str:
    """A version-7 UUID (RFC 9562): the Unix time in milliseconds, then 74 random bits, from
    the same generator as `request_id`.

    For rows written on every request and never updated (run-gate decisions): consecutive ids
    land next to each other in the primary-key index, where random ones would touch a random
    leaf page per insert. Measured under the preflight benchmark on SQLite: the decision
    INSERT cost 280 us of CPU with random ids, 190 us with these.
    """
    random_bits = _REQUEST_IDS.getrandbits(74)
    value = (
        (time.time_ns() // 1_000_000) << 80
        | 0x7 << 76
        | (random_bits >> 62) << 64
        | 0b10 << 62
        | random_bits & ((1 << 62) - 1)
    )
    return str(uuid.UUID(int=value))


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {datetime: UTCDateTime(), dict[str, Any]: JSONType}


class Org(Base):
    __tablename__ = "orgs"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    plan: Mapped[str] = mapped_column(String(16), default="free")
    products: Mapped[list[str]] = mapped_column(JSONType, default=list)
    is_trial: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100), default="")
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    hint: Mapped[str] = mapped_column(String(4))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(default=None)
    revoked_at: Mapped[datetime | None] = mapped_column(default=None)

    org: Mapped[Org] = relationship(lazy="joined")


class TrialSession(Base):
    __tablename__ = "trial_sessions"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    hint: Mapped[str] = mapped_column(String(4))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]
    validations_period: Mapped[str] = mapped_column(String(7), default="")
    validations_used: Mapped[int] = mapped_column(Integer, default=0)

    org: Mapped[Org] = relationship(lazy="joined")


class Watch(Base):
    __tablename__ = "watches"
    __table_args__ = (
        UniqueConstraint("org_id", "name"),
        Index("ix_watches_org_status", "org_id", "drift_status"),
        Index("ix_watches_org_created", "org_id", "created_at", "id"),
        Index("ix_watches_gate_stamp", "gate_stamp"),
        Index("ix_watches_waived_until", "waived_until"),
        Index("ix_watches_org_vendor", "org_id", "vendor"),
        # What the controller schedules: the watches not paused, by when they are due.
        Index(
            "ix_watches_due",
            "next_check_at",
            postgresql_where=text("drift_status <> 'disabled'"),
            sqlite_where=text("drift_status <> 'disabled'"),
        ),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    # Written by the database's triggers only (migration 0005): when the run gate's view of
    # this watch changed. See `controller/gate/readmodel.py`.
    gate_stamp: Mapped[int] = mapped_column(
        BigInteger, default=0, server_default=text("0"), deferred=True
    )
    watch_type: Mapped[str] = mapped_column(String(16))
    url: Mapped[str] = mapped_column(String(2048))
    method: Mapped[str | None] = mapped_column(String(8), default=None)
    request_body: Mapped[Any | None] = mapped_column(JSONType, default=None)
    drift_status: Mapped[str] = mapped_column(String(16), default="never_run")
    interval_minutes: Mapped[int] = mapped_column(Integer, default=15)
    headers_ciphertext: Mapped[str | None] = mapped_column(Text, default=None)
    header_names: Mapped[list[str]] = mapped_column(JSONType, default=list)
    webhook_url: Mapped[str | None] = mapped_column(String(2048), default=None)

    last_checked_at: Mapped[datetime | None] = mapped_column(default=None)
    last_check_status: Mapped[str | None] = mapped_column(String(16), default=None)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    failure_class: Mapped[str | None] = mapped_column(String(32), default=None)

    baseline_snapshot_id: Mapped[str | None] = mapped_column(String(36), default=None)
    baseline_fingerprint: Mapped[str | None] = mapped_column(String(64), default=None)
    baseline_accepted_at: Mapped[datetime | None] = mapped_column(default=None)
    baseline_accepted_by: Mapped[str | None] = mapped_column(String(200), default=None)
    # The baseline before the last automatic (info-only) advance: a contract that returns to
    # it within the flap window is a revert, and it becomes the baseline again (migration 0018).
    prior_baseline_snapshot_id: Mapped[str | None] = mapped_column(String(36), default=None)
    prior_baseline_fingerprint: Mapped[str | None] = mapped_column(String(64), default=None)
    prior_baseline_accepted_at: Mapped[datetime | None] = mapped_column(default=None)
    prior_baseline_accepted_by: Mapped[str | None] = mapped_column(String(200), default=None)

    open_breaking: Mapped[int] = mapped_column(Integer, default=0)
    open_warning: Mapped[int] = mapped_column(Integer, default=0)
    open_info: Mapped[int] = mapped_column(Integer, default=0)
    incident_id: Mapped[str | None] = mapped_column(String(36), default=None)
    # When the first waiver hiding a breaking change of the current comparison ends (the gate
    # blocks from then until the findings are counted again; `controller.waivers`).
    waived_until: Mapped[datetime | None] = mapped_column(default=None)

    etag: Mapped[str | None] = mapped_column(String(512), default=None)
    last_modified: Mapped[str | None] = mapped_column(String(128), default=None)
    source_hash: Mapped[str | None] = mapped_column(String(64), default=None)
    last_snapshot_id: Mapped[str | None] = mapped_column(String(36), default=None)
    last_success_at: Mapped[datetime | None] = mapped_column(default=None)
    next_check_at: Mapped[datetime | None] = mapped_column(default=None)
    protocol_version: Mapped[str | None] = mapped_column(String(32), default=None)
    # Issue 45 (migration 0025). The keys an `a2a_card` watch trusts for the card's signatures
    # (`{"jwksUrl": ..., "keys": [JWK, ...]}`; `controller.cardtrust`).
    card_keys: Mapped[dict[str, Any] | None] = mapped_column(JSONType, default=None)
    # OAuth 2.1 for a remote MCP watch (`controller.mcpauth`): the non-secret settings, the
    # secrets (client secret, refresh token) encrypted, and the cached access token.
    oauth: Mapped[dict[str, Any] | None] = mapped_column(JSONType, default=None)
    oauth_ciphertext: Mapped[str | None] = mapped_column(Text, default=None, deferred=True)
    oauth_token_ciphertext: Mapped[str | None] = mapped_column(Text, default=None, deferred=True)
    oauth_token_expires_at: Mapped[datetime | None] = mapped_column(default=None, deferred=True)
    # The pinned tool set of an MCP watch's server (its `.driftgate/mcp.lock` entry;
    # `controller.toollock`).
    tool_lock: Mapped[dict[str, Any] | None] = mapped_column(JSONType, default=None)

    managed_source: Mapped[str | None] = mapped_column(String(200), default=None)
    managed_path: Mapped[str | None] = mapped_column(String(1024), default=None)
    managed_revision: Mapped[str | None] = mapped_column(String(64), default=None)
    managed_digest: Mapped[str | None] = mapped_column(String(64), default=None)
    watch_set_id: Mapped[str | None] = mapped_column(
        ForeignKey("watch_sets.id", ondelete="SET NULL"), default=None, index=True
    )

    # Derived on every flush from the `vendor:` tag, else the URL's host (`vendor_of`): the
    # portfolio views group by it in SQL.
    vendor: Mapped[str] = mapped_column(String(200), default="")

    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    tag_rows: Mapped[list[WatchTag]] = relationship(
        back_populates="watch",
        cascade="all, delete-orphan",
        lazy="selectin",
        order_by="WatchTag.position",
    )

    @property
    def tags(self) -> list[str]:
        return [row.tag for row in self.tag_rows]


def vendor_of(tags: list[str], url: str) -> str:
    """A watch's vendor: its `vendor:` tag, else its URL's host."""
    for tag in tags:
        if tag.startswith("vendor:"):
            return tag.split(":", 1)[1][:200]
    return (urlsplit(url).hostname or "")[:200]


@event.listens_for(Session, "before_flush")
def _derive_vendor(session: Session, context: Any, instances: Any) -> None:
    # `session.new` and `session.dirty` build a new set on every access: read each once (a
    # membership test of `session.new` per object made a flush of n new watches O(n^2)).
    new = session.new
    for obj in (*new, *session.dirty):
        if not isinstance(obj, Watch):
            continue
        if obj not in new:
            state = inspect(obj)
            if not (
                state.attrs.url.history.has_changes() or state.attrs.tag_rows.history.has_changes()
            ):
                continue  # a check's write: neither the URL nor the tags moved
        vendor = vendor_of(obj.tags, obj.url or "")
        if obj.vendor != vendor:
            obj.vendor = vendor


class WatchTag(Base):
    """One tag of a watch; a table rather than a JSON column so tag filters use an index."""

    __tablename__ = "watch_tags"

    watch_id: Mapped[str] = mapped_column(
        ForeignKey("watches.id", ondelete="CASCADE"), primary_key=True
    )
    tag: Mapped[str] = mapped_column(String(200), primary_key=True, index=True)
    position: Mapped[int] = mapped_column(Integer, default=0)

    watch: Mapped[Watch] = relationship(back_populates="tag_rows")


class AuditEntry(Base):
    """An administrative action: who did what to which object, never with secret values."""

    __tablename__ = "audit_log"
    __table_args__ = (Index("ix_audit_log_org_created", "org_id", "created_at"),)

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    org_id: Mapped[str | None] = mapped_column(String(36), default=None)
    actor: Mapped[str] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(64))
    target_type: Mapped[str] = mapped_column(String(32))
    target_id: Mapped[str | None] = mapped_column(String(200), default=None)
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class FunnelCounter(Base):
    """Anonymous usage counts per event name and day; no personal data is kept."""

    __tablename__ = "funnel_counters"

    event: Mapped[str] = mapped_column(String(64), primary_key=True)
    day: Mapped[str] = mapped_column(String(10), primary_key=True)
    count: Mapped[int] = mapped_column(Integer, default=0)


class Snapshot(Base):
    """A fetched contract, canonical JSON compressed with zlib; one row per distinct fingerprint."""

    __tablename__ = "snapshots"
    __table_args__ = (UniqueConstraint("watch_id", "fingerprint"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    watch_id: Mapped[str] = mapped_column(ForeignKey("watches.id", ondelete="CASCADE"), index=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    content: Mapped[bytes] = mapped_column(LargeBinary)
    size: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Incident(Base):
    """Breaking drift on a watch, from detection until it is resolved."""

    __tablename__ = "incidents"
    __table_args__ = (
        Index("ix_incidents_watch_status", "watch_id", "status"),
        Index("ix_incidents_org_status_resolved", "org_id", "status", "resolved_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), index=True)
    watch_id: Mapped[str] = mapped_column(ForeignKey("watches.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(16), default="open")
    opened_at: Mapped[datetime] = mapped_column(default=utcnow)
    breaking_count: Mapped[int] = mapped_column(Integer, default=0)
    drift_event_id: Mapped[str | None] = mapped_column(String(36), default=None)
    acknowledged_at: Mapped[datetime | None] = mapped_column(default=None)
    acknowledged_by: Mapped[str | None] = mapped_column(String(200), default=None)
    ack_note: Mapped[str | None] = mapped_column(Text, default=None)
    resolved_at: Mapped[datetime | None] = mapped_column(default=None)
    resolution: Mapped[str | None] = mapped_column(String(32), default=None)
    resolved_by: Mapped[str | None] = mapped_column(String(200), default=None)
    # Flap damping: how many times breaking drift came back within the flap window after the
    # incident was resolved as `reverted` (each time it reopened), and when it last did.
    flap_count: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    reopened_at: Mapped[datetime | None] = mapped_column(default=None)


class DriftEvent(Base):
    """The changes one check found against the baseline (compressed JSON change objects)."""

    __tablename__ = "drift_events"
    __table_args__ = (
        Index("ix_drift_events_org_detected", "org_id", "detected_at", "id"),
        Index("ix_drift_events_watch_detected", "watch_id", "detected_at"),
        # Covers the portfolio's aggregates (no read of the rows and their change blobs).
        Index(
            "ix_drift_events_org_detected_counts",
            "org_id",
            "detected_at",
            "watch_id",
            "breaking_count",
            "warning_count",
        ),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"))
    watch_id: Mapped[str] = mapped_column(ForeignKey("watches.id", ondelete="CASCADE"))
    detected_at: Mapped[datetime] = mapped_column(default=utcnow)
    kind: Mapped[str] = mapped_column(String(16), default="drift")
    base_snapshot_id: Mapped[str | None] = mapped_column(String(36), default=None)
    snapshot_id: Mapped[str | None] = mapped_column(String(36), default=None)
    breaking_count: Mapped[int] = mapped_column(Integer, default=0)
    warning_count: Mapped[int] = mapped_column(Integer, default=0)
    info_count: Mapped[int] = mapped_column(Integer, default=0)
    changes: Mapped[bytes] = mapped_column(LargeBinary)
    incident_id: Mapped[str | None] = mapped_column(String(36), default=None)
    agent_actions: Mapped[list[str]] = mapped_column(JSONType, default=list)
    # consumer profiles naming this watch whose schema the breaking changes touch
    affected_profiles: Mapped[list[str] | None] = mapped_column(JSONType, default=None)
    # The gate's reason tokens for this comparison's breaking changes (`breaking_drift`,
    # `tool_poisoning_suspected`, ...); null for events recorded before migration 0025.
    gate_reasons: Mapped[list[str] | None] = mapped_column(JSONType, default=None)


class Job(Base):
    """Work for the controller: queued by the ticker or the API, claimed with a lease.

    `(key, period)` is unique so periodic work is enqueued once per period by any number of
    replicas; partial unique indexes keep at most one queued and one running job per key;
    `fence` increases with every claim, so a worker whose lease expired cannot finish it.
    `org_id` (the watch's org for a check; None for work of no org) and `priority` (0 asked
    for now, 1 a watch's first check, 2 scheduled) decide the order of claims: each org its
    share of a controller's workers, then the most urgent first (migration 0022).
    """

    __tablename__ = "jobs"
    __table_args__ = (
        UniqueConstraint("key", "period"),
        Index("ix_jobs_claim", "status", "run_after"),
        Index(
            "uq_jobs_one_queued",
            "key",
            unique=True,
            sqlite_where=text("status = 'queued'"),
            postgresql_where=text("status = 'queued'"),
        ),
        Index(
            "uq_jobs_one_running",
            "key",
            unique=True,
            sqlite_where=text("status = 'running'"),
            postgresql_where=text("status = 'running'"),
        ),
    )

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    kind: Mapped[str] = mapped_column(String(32))
    key: Mapped[str] = mapped_column(String(200))
    period: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default="queued")
    run_after: Mapped[datetime] = mapped_column(default=utcnow)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    fence: Mapped[int] = mapped_column(Integer, default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(200), default=None)
    lease_expires_at: Mapped[datetime | None] = mapped_column(default=None)
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    org_id: Mapped[str | None] = mapped_column(String(36), default=None)
    priority: Mapped[int] = mapped_column(Integer, default=2, server_default=text("2"))
    result: Mapped[dict[str, Any] | None] = mapped_column(JSONType, default=None)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(default=None)
    finished_at: Mapped[datetime | None] = mapped_column(default=None)


class OutboxMessage(Base):
    """An event to deliver, written in the same transaction as the change that causes it."""

    __tablename__ = "outbox"
    __table_args__ = (
        Index("ix_outbox_due", "status", "next_attempt_at"),
        Index("ix_outbox_org_created", "org_id", "created_at"),
        Index("ix_outbox_topic_created", "topic", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"))
    event_type: Mapped[str] = mapped_column(String(64))
    channel: Mapped[str] = mapped_column(String(16))
    destination_ciphertext: Mapped[str] = mapped_column(Text)
    destination_hint: Mapped[str] = mapped_column(String(200))
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    watch_id: Mapped[str | None] = mapped_column(String(36), default=None)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(default=utcnow)
    lease_expires_at: Mapped[datetime | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    delivered_at: Mapped[datetime | None] = mapped_column(default=None)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    # Delivery grouping (`controller.events.grouping`): the watch, incident, event family and
    # destination the message is about, keyed (null: never grouped), and how many earlier
    # messages of that topic this one stands for (status `suppressed` on theirs).
    topic: Mapped[str | None] = mapped_column(String(64), default=None)
    suppressed_count: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    # The org destination (`controller.destinations`) the message goes to, if any: its
    # channel settings, secrets, grouping window and health come from that row (migration 0024).
    destination_id: Mapped[str | None] = mapped_column(String(36), default=None, index=True)


class DeliveryAttempt(Base):
    """One try to deliver an outbox message; the raw material of the alert stats."""

    __tablename__ = "delivery_attempts"
    __table_args__ = (Index("ix_delivery_attempts_org_time", "org_id", "attempted_at"),)

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    outbox_id: Mapped[str] = mapped_column(ForeignKey("outbox.id", ondelete="CASCADE"), index=True)
    org_id: Mapped[str] = mapped_column(String(36))
    attempted_at: Mapped[datetime] = mapped_column(default=utcnow)
    success: Mapped[bool] = mapped_column(Boolean, default=False)
    status_code: Mapped[int | None] = mapped_column(Integer, default=None)
    latency_ms: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text, default=None)


class NotificationDefaults(Base):
    """An org's defaults for new watches: destination, interval and which severities alert."""

    __tablename__ = "notification_defaults"

    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), primary_key=True)
    destination_kind: Mapped[str | None] = mapped_column(String(16), default=None)
    destination_ciphertext: Mapped[str | None] = mapped_column(Text, default=None)
    destination_hint: Mapped[str | None] = mapped_column(String(200), default=None)
    interval_minutes: Mapped[int | None] = mapped_column(Integer, default=None)
    alert_severities: Mapped[list[str]] = mapped_column(JSONType, default=list)
    # The weekly summary e-mail's opt-in (`controller.model.summary_schedule.WeeklySummaryIn`).
    weekly_summary: Mapped[dict[str, Any] | None] = mapped_column(JSONType, default=None)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Destination(Base):
    """An org's named destination (`controller.destinations`): a channel, its settings, its
    secrets encrypted, which events it takes, how they are grouped, and its health."""

    __tablename__ = "destinations"
    __table_args__ = (UniqueConstraint("org_id", "name"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(16))
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    settings: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    secrets_ciphertext: Mapped[str | None] = mapped_column(Text, default=None)
    secret_hints: Mapped[dict[str, str]] = mapped_column(JSONType, default=dict)
    # Routing (`controller.destinations.routing.Routing`), as its JSON form.
    routing: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    group_seconds: Mapped[int | None] = mapped_column(Integer, default=None)
    digest: Mapped[str] = mapped_column(String(16), default="off")
    # Health, written by every delivery attempt (`controller.events.delivery.record`).
    last_attempt_at: Mapped[datetime | None] = mapped_column(default=None)
    last_delivered_at: Mapped[datetime | None] = mapped_column(default=None)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    failing_since: Mapped[datetime | None] = mapped_column(default=None)
    failed_attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_retry_at: Mapped[datetime | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class DestinationThread(Base):
    """What a destination's service calls the message it posted about an incident (Slack's
    channel and `ts`), so that later steps update that message instead of posting anew."""

    __tablename__ = "destination_threads"

    destination_id: Mapped[str] = mapped_column(
        ForeignKey("destinations.id", ondelete="CASCADE"), primary_key=True
    )
    incident_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    reference: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class WebhookSecret(Base):
    """An org's signing secret (Standard Webhooks `whsec_...`), encrypted at rest."""

    __tablename__ = "webhook_secrets"

    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), primary_key=True)
    secret_ciphertext: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class SmtpSettings(Base):
    """An org's SMTP relay for the weekly summary e-mail; the password encrypted at rest."""

    __tablename__ = "smtp_settings"

    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), primary_key=True)
    host: Mapped[str] = mapped_column(String(253))
    port: Mapped[int] = mapped_column(Integer)
    security: Mapped[str] = mapped_column(String(16))
    username: Mapped[str | None] = mapped_column(String(200), default=None)
    password_ciphertext: Mapped[str | None] = mapped_column(Text, default=None)
    from_address: Mapped[str] = mapped_column(String(254))
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class User(Base):
    """A person who signs in to the console: one org, role `admin` or `viewer`."""

    __tablename__ = "users"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), index=True)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    password_hash: Mapped[str | None] = mapped_column(Text, default=None)
    setup_token_hash: Mapped[str | None] = mapped_column(String(64), unique=True, default=None)
    setup_expires_at: Mapped[datetime | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_sign_in_at: Mapped[datetime | None] = mapped_column(default=None)


class ConsoleSession(Base):
    """A signed-in browser: the SHA-256 of its cookie's token, its CSRF token, its end."""

    __tablename__ = "console_sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"))
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime] = mapped_column()
    address: Mapped[str] = mapped_column(String(64))


class SignInAttempt(Base):
    """One sign-in attempt, counted for the rate limits per account, per account and client,
    and per client; `address` is the client's key (`controller.model.clients`: an IPv6 /64)."""

    __tablename__ = "sign_in_attempts"
    __table_args__ = (
        Index("ix_sign_in_attempts_email_at", "email", "at"),
        Index("ix_sign_in_attempts_address_at", "address", "at"),
        Index("ix_sign_in_attempts_at", "at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    email: Mapped[str] = mapped_column(String(254))
    address: Mapped[str] = mapped_column(String(64))
    at: Mapped[datetime] = mapped_column()
    success: Mapped[bool] = mapped_column(Boolean)


class ManagedBySource:
    """Columns of an object applied from a git source (`managedBy` in the API); an object
    with `managed_source` set is read-only through the API and pruned only by its source."""

    managed_source: Mapped[str | None] = mapped_column(String(63), default=None)
    managed_path: Mapped[str | None] = mapped_column(String(1024), default=None)
    managed_revision: Mapped[str | None] = mapped_column(String(64), default=None)
    managed_digest: Mapped[str | None] = mapped_column(String(64), default=None)


class Source(Base):
    """The status of one git source (its definition lives in the controller's config file)."""

    __tablename__ = "sources"

    name: Mapped[str] = mapped_column(String(63), primary_key=True)
    org_id: Mapped[str | None] = mapped_column(
        ForeignKey("orgs.id", ondelete="CASCADE"), default=None, index=True
    )
    url: Mapped[str] = mapped_column(String(2048), default="")
    branch: Mapped[str] = mapped_column(String(255), default="main")
    path: Mapped[str] = mapped_column(String(1024), default=".driftgate")
    suspended: Mapped[bool] = mapped_column(Boolean, default=False)
    last_fetched_revision: Mapped[str | None] = mapped_column(String(64), default=None)
    last_attempted_revision: Mapped[str | None] = mapped_column(String(64), default=None)
    last_applied_revision: Mapped[str | None] = mapped_column(String(64), default=None)
    last_fetched_at: Mapped[datetime | None] = mapped_column(default=None)
    last_applied_at: Mapped[datetime | None] = mapped_column(default=None)
    conditions: Mapped[list[dict[str, Any]]] = mapped_column(JSONType, default=list)
    problems: Mapped[list[dict[str, Any]]] = mapped_column(JSONType, default=list)
    runs: Mapped[list[dict[str, Any]]] = mapped_column(JSONType, default=list)
    inventory: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    next_reconcile_at: Mapped[datetime | None] = mapped_column(default=None)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Template(ManagedBySource, Base):
    """An org's watch template (system starter templates live in code, not here)."""

    __tablename__ = "templates"
    __table_args__ = (UniqueConstraint("org_id", "name"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    watch_type: Mapped[str] = mapped_column(String(16))
    url_pattern: Mapped[str] = mapped_column(String(2048))
    policy_preset: Mapped[str | None] = mapped_column(String(64), default=None)
    headers_ciphertext: Mapped[str | None] = mapped_column(Text, default=None)
    header_names: Mapped[list[str]] = mapped_column(JSONType, default=list)
    tags: Mapped[list[str]] = mapped_column(JSONType, default=list)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class WatchSet(ManagedBySource, Base):
    """A named set of an org's watches (e.g. staging, production)."""

    __tablename__ = "watch_sets"
    __table_args__ = (UniqueConstraint("org_id", "name"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    environment: Mapped[str | None] = mapped_column(String(100), default=None)
    description: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Agent(ManagedBySource, Base):
    """An agent binding: which watches an agent depends on and the policy of its run gate."""

    __tablename__ = "agents"
    __table_args__ = (
        UniqueConstraint("org_id", "key", name="uq_agents_org_key"),
        UniqueConstraint("org_id", "slug", name="uq_agents_org_slug"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(200))
    slug: Mapped[str] = mapped_column(String(200))
    name: Mapped[str | None] = mapped_column(String(200), default=None)
    environment: Mapped[str | None] = mapped_column(String(100), default=None)
    policy: Mapped[str] = mapped_column(String(64), default="notify-only")
    policy_rules: Mapped[dict[str, Any] | None] = mapped_column(JSONType, default=None)
    runtime_webhook: Mapped[str | None] = mapped_column(String(2048), default=None)
    repo_ref: Mapped[str | None] = mapped_column(String(512), default=None)
    # watch name (or id, URL) -> the path of its contract's copy in repo_ref
    vendored_paths: Mapped[dict[str, str] | None] = mapped_column(JSONType, default=None)
    conditions: Mapped[list[dict[str, Any]]] = mapped_column(JSONType, default=list)
    # Remediation approval rules: who may acknowledge this agent's incidents (repo, branches).
    approvals: Mapped[list[dict[str, Any]]] = mapped_column(JSONType, default=list)
    # Runtime lifecycle (not configuration: a source never writes these).
    runtime_state: Mapped[str] = mapped_column(String(16), default="running")
    runtime_reason: Mapped[str | None] = mapped_column(String(32), default=None)
    runtime_note: Mapped[str | None] = mapped_column(Text, default=None)
    runtime_changed_at: Mapped[datetime | None] = mapped_column(default=None)
    runtime_changed_by: Mapped[str | None] = mapped_column(String(200), default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    bindings: Mapped[list[AgentWatch]] = relationship(
        cascade="all, delete-orphan", lazy="selectin", order_by="AgentWatch.position"
    )


class AgentWatch(Base):
    """One watch reference of an agent; `watch_id` is null while it resolves to nothing
    (the agent's preflight then fails closed)."""

    __tablename__ = "agent_watches"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    ref: Mapped[str] = mapped_column(String(2048))
    watch_id: Mapped[str | None] = mapped_column(
        ForeignKey("watches.id", ondelete="SET NULL"), default=None, index=True
    )


class HookDelivery(Base):
    """A push webhook delivery already handled (GitHub retries deliveries)."""

    __tablename__ = "hook_deliveries"

    delivery_id: Mapped[str] = mapped_column(String(100), primary_key=True)
    received_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)


class PreflightDecision(Base):
    """One run-gate answer, kept for the audit export: inputs, rows and result."""

    __tablename__ = "preflight_decisions"
    __table_args__ = (Index("ix_preflight_decisions_org_evaluated", "org_id", "evaluated_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"))
    actor: Mapped[str] = mapped_column(String(200))
    agent_key: Mapped[str | None] = mapped_column(String(200), default=None)
    watch_count: Mapped[int] = mapped_column(Integer, default=0)
    allowed: Mapped[bool] = mapped_column(Boolean)
    policy_blocked: Mapped[bool] = mapped_column(Boolean, default=False)
    dry_run: Mapped[bool] = mapped_column(Boolean, default=False)
    status_code: Mapped[int] = mapped_column(Integer)
    duration_ms: Mapped[int] = mapped_column(Integer, default=0)
    evaluated_at: Mapped[datetime] = mapped_column(default=utcnow)
    inputs: Mapped[dict[str, Any]] = mapped_column(JSONDocument, default=dict)
    result: Mapped[dict[str, Any]] = mapped_column(JSONDocument, default=dict)


class GateClock(Base):
    """SQLite only: the one counter the run gate's triggers stamp changes with (SQLite has one
    writer at a time, so the counter follows commit order). Postgres stamps with transaction
    ids instead and leaves this table empty."""

    __tablename__ = "gate_clock"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    stamp: Mapped[int] = mapped_column(BigInteger, default=0)


class GateEvent(Base):
    """A change that makes the run gate reload an org's view (incidents, agents, bindings,
    deleted watches), written by triggers; `org_id` null means every org. Pruned after a day
    by the controller."""

    __tablename__ = "gate_events"
    __table_args__ = (Index("ix_gate_events_stamp", "stamp"),)

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
    stamp: Mapped[int] = mapped_column(BigInteger)
    org_id: Mapped[str | None] = mapped_column(String(36), default=None)
    created_at: Mapped[int] = mapped_column(BigInteger, doc="Unix seconds")


class FuseTrip(Base):
    """A fleet-guard trip event, idempotent per org by the client's `tripId`."""

    __tablename__ = "fuse_trips"
    __table_args__ = (
        UniqueConstraint("org_id", "trip_id"),
        Index("ix_fuse_trips_org_received", "org_id", "received_at", "id"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"))
    trip_id: Mapped[str] = mapped_column(String(200))
    reason: Mapped[str] = mapped_column(String(64))
    watch_id: Mapped[str | None] = mapped_column(String(36), default=None)
    agent_key: Mapped[str | None] = mapped_column(String(200), default=None)
    tool: Mapped[str | None] = mapped_column(String(200), default=None)
    decision_id: Mapped[str | None] = mapped_column(String(36), default=None)
    trip_metadata: Mapped[dict[str, Any]] = mapped_column("metadata", JSONType, default=dict)
    # The guard's own record beyond driftgate's fields (fuseguard's trip log), as sent.
    guard_fields: Mapped[dict[str, Any] | None] = mapped_column(JSONType, default=None)
    digest: Mapped[str] = mapped_column(String(64))
    actor: Mapped[str] = mapped_column(String(200))
    occurred_at: Mapped[datetime | None] = mapped_column(default=None)
    received_at: Mapped[datetime] = mapped_column(default=utcnow)


class FuseSnapshot(Base):
    """An on-demand snapshot a fleet guard asked for: a check of one watch, run now."""

    __tablename__ = "fuse_snapshots"
    __table_args__ = (Index("ix_fuse_snapshots_org_requested", "org_id", "requested_at", "id"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"))
    watch_id: Mapped[str] = mapped_column(String(36))
    actor: Mapped[str] = mapped_column(String(200))
    reason: Mapped[str | None] = mapped_column(String(200), default=None)
    status: Mapped[str] = mapped_column(String(16), default="queued")
    job_id: Mapped[int | None] = mapped_column(BigInteger, default=None)
    summary: Mapped[dict[str, Any] | None] = mapped_column(JSONType, default=None)
    requested_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(default=None)


class GitHubInstallation(Base):
    """A GitHub App installation linked to an org (draft pull requests open through it).

    An installation is linked to one org at most (`installation_id` is unique): another org's
    link of it is refused, however it is asked for (docs/draft-prs.md, the threat model)."""

    __tablename__ = "github_installations"
    __table_args__ = (UniqueConstraint("installation_id"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), index=True)
    installation_id: Mapped[int] = mapped_column(BigInteger)
    account: Mapped[str] = mapped_column(String(200), default="")
    # GitHub's id of the account (user or organization) the App is installed on: logins can
    # be renamed and taken over, ids cannot.
    account_id: Mapped[int | None] = mapped_column(BigInteger, default=None)
    # How the org proved the link: install (the signed install flow), operator (the server's
    # admin, `driftgate orgs link-installation`), account (by id, an account the org had
    # proven), legacy (linked before ownership was checked).
    linked_by: Mapped[str] = mapped_column(String(20), default="legacy")
    repository_selection: Mapped[str] = mapped_column(String(20), default="")
    # active, deleted (uninstalled on GitHub) or suspended
    status: Mapped[str] = mapped_column(String(20), default="active")
    linked_at: Mapped[datetime] = mapped_column(default=utcnow)


class DraftPr(Base):
    """A pull request driftgate opened (or stubbed) for one drift event in one repository.

    `(org_id, drift_event_id, repo_full_name)` is unique: the same event never opens a second
    branch or pull request; a retry finds this row."""

    __tablename__ = "draft_prs"
    __table_args__ = (UniqueConstraint("org_id", "drift_event_id", "repo_full_name"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), index=True)
    watch_id: Mapped[str] = mapped_column(ForeignKey("watches.id", ondelete="CASCADE"))
    drift_event_id: Mapped[str] = mapped_column(String(36))
    repo_full_name: Mapped[str] = mapped_column(String(200))
    installation_id: Mapped[int | None] = mapped_column(BigInteger, default=None)
    branch: Mapped[str] = mapped_column(String(255))
    number: Mapped[int | None] = mapped_column(Integer, default=None)
    url: Mapped[str | None] = mapped_column(String(500), default=None)
    # pending (queued for the controller), draft, open, merged, closed, failed
    state: Mapped[str] = mapped_column(String(20), default="pending")
    stub: Mapped[bool] = mapped_column(Boolean, default=False)
    # the repository refused drafts: a normal pull request labelled driftgate:draft
    draft_refused: Mapped[bool] = mapped_column(Boolean, default=False)
    request: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    # the tool-manifest lint of an MCP watch's after tool list: findings, commented
    lint: Mapped[dict[str, Any] | None] = mapped_column(JSONType, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    merged_at: Mapped[datetime | None] = mapped_column(default=None)


class IngressProfile(ManagedBySource, Base):
    """A consumer profile in the org's hosted registry (or reconciled from git)."""

    __tablename__ = "ingress_profiles"
    __table_args__ = (UniqueConstraint("org_id", "profile_id"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), index=True)
    profile_id: Mapped[str] = mapped_column(String(200))
    version: Mapped[int] = mapped_column(Integer)
    content: Mapped[dict[str, Any]] = mapped_column(JSONType)
    content_hash: Mapped[str] = mapped_column(String(64))
    watch_id: Mapped[str | None] = mapped_column(String(36), default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class ValidationMeter(Base):
    """Validations an org ran in one calendar month (UTC): the quota's counter."""

    __tablename__ = "validation_meters"

    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), primary_key=True)
    period: Mapped[str] = mapped_column(String(7), primary_key=True)  # YYYY-MM
    used: Mapped[int] = mapped_column(BigInteger, default=0)


class ValidationSource(Base):
    """Validations by the caller's `X-Service-Source` label, per org and month (reporting)."""

    __tablename__ = "validation_sources"

    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), primary_key=True)
    period: Mapped[str] = mapped_column(String(7), primary_key=True)
    source: Mapped[str] = mapped_column(String(100), primary_key=True)
    used: Mapped[int] = mapped_column(BigInteger, default=0)


class ReplayPublication(Base):
    """A replay fixture an org published to the catalog (`hosted-curated`) from one of its
    drift events: the files as built when it was published, visible to the org alone unless
    `public`. It outlives the watch (no foreign key to it): a regression fixture stays."""

    __tablename__ = "replay_publications"
    __table_args__ = (UniqueConstraint("org_id", "fixture_id"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), index=True)
    fixture_id: Mapped[str] = mapped_column(String(80))  # <watch>:<event> or <watch>:baseline
    watch_id: Mapped[str | None] = mapped_column(String(36), default=None)
    drift_event_id: Mapped[str | None] = mapped_column(String(36), default=None)
    title: Mapped[str] = mapped_column(String(200))
    vendor: Mapped[str] = mapped_column(String(200))
    watch_type: Mapped[str] = mapped_column(String(16))
    public: Mapped[bool] = mapped_column(Boolean, default=False, index=True)
    tags: Mapped[list[str]] = mapped_column(JSONType, default=list)
    changes: Mapped[dict[str, int]] = mapped_column(JSONType, default=dict)
    summary: Mapped[str] = mapped_column(Text, default="")
    files: Mapped[dict[str, str]] = mapped_column(JSONType, default=dict)
    digest: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class Dashboard(ManagedBySource, Base):
    """An org's dashboard template: a named view of the portfolio (filters, panels)."""

    __tablename__ = "dashboards"
    __table_args__ = (UniqueConstraint("org_id", "name"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    filters: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    panels: Mapped[list[str]] = mapped_column(JSONType, default=list)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class WaiverRow(ManagedBySource, Base):
    """A waiver of a git source's `.driftgate/waivers.yaml` (`controller.model.waivers`), keyed
    by what it matches; the notices to its owner are each sent once."""

    __tablename__ = "waivers"
    __table_args__ = (UniqueConstraint("org_id", "key"), Index("ix_waivers_expires", "expires"))

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(64))
    watch: Mapped[str] = mapped_column(String(300))
    rule: Mapped[str] = mapped_column(String(120))
    path: Mapped[str | None] = mapped_column(String(300), default=None)
    operation: Mapped[str | None] = mapped_column(String(300), default=None)
    tool: Mapped[str | None] = mapped_column(String(300), default=None)
    owner: Mapped[str] = mapped_column(String(254))
    reason: Mapped[str] = mapped_column(String(500))
    expires: Mapped[date] = mapped_column(Date)
    expiring_notified_at: Mapped[datetime | None] = mapped_column(default=None)
    expired_notified_at: Mapped[datetime | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class DiffRun(Base):
    """A diff of two contracts sent to the API (`POST /api/openapi/diffs`, the hosted CLI's
    `openapi-diff --remote`), kept so that its link can be opened later."""

    __tablename__ = "diff_runs"
    __table_args__ = (Index("ix_diff_runs_org_created", "org_id", "created_at", "id"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"))
    base_label: Mapped[str] = mapped_column(String(200))
    target_label: Mapped[str] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(32))
    contract_type: Mapped[str] = mapped_column(String(16))
    counts: Mapped[dict[str, Any]] = mapped_column(JSONType)
    # The changes as drift events keep theirs (`controller.store.snapshots.encode_changes`).
    changes: Mapped[bytes] = mapped_column(LargeBinary)
    actor: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ControllerHeartbeat(Base):
    """One controller process, alive as of `beat_at`: each one writes its row every tick and
    deletes it when it stops cleanly (`controller.checks.heartbeats_service`); a row that stops
    moving is a controller that died or is stuck."""

    __tablename__ = "controller_heartbeats"

    worker: Mapped[str] = mapped_column(String(200), primary_key=True)
    started_at: Mapped[datetime] = mapped_column()
    beat_at: Mapped[datetime] = mapped_column(index=True)
    tick_seconds: Mapped[float] = mapped_column()
