"""SQLAlchemy 2 typed models of the state store.

Every org-owned row carries `org_id`; queries always filter by it so that another org's id
behaves exactly like a missing one. Secrets are stored only as ciphertext or hashes.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from controller.store.types import JSONType, UTCDateTime, utcnow

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def new_id() -> str:
    return str(uuid.uuid4())


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
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
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

    open_breaking: Mapped[int] = mapped_column(Integer, default=0)
    open_warning: Mapped[int] = mapped_column(Integer, default=0)
    open_info: Mapped[int] = mapped_column(Integer, default=0)
    incident_id: Mapped[str | None] = mapped_column(String(36), default=None)

    managed_source: Mapped[str | None] = mapped_column(String(200), default=None)
    managed_path: Mapped[str | None] = mapped_column(String(1024), default=None)
    managed_revision: Mapped[str | None] = mapped_column(String(64), default=None)

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
