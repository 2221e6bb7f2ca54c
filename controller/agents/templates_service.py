"""Watch templates through the API: the catalog (system starters beside the org's own
templates), org templates, and launching a watch (and an optional agent binding) from one.

A launch copies the template's values into a new watch; the template is not linked, so later
edits to it or to the watch never touch sibling watches (SPEC.md "Template").
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import Field, field_validator
from sqlalchemy import or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from controller.agents import service as agent_service
from controller.agents.service import AgentOut
from controller.crypto import SecretBox
from controller.errors import Conflict, NotFound, Unprocessable
from controller.model.base import ApiModel, RequestModel
from controller.model.catalog import SYSTEM_TEMPLATES, SystemTemplate
from controller.model.gitops import Environment, PolicyPreset, Slug, UrlTemplate
from controller.model.managed import ensure_unmanaged, managed_by
from controller.model.principal import Principal
from controller.model.problems import compose
from controller.model.watch import (
    MAX_TAGS,
    REDACTED,
    HeaderName,
    HeaderValue,
    HttpUrl,
    Interval,
    Label,
    ManagedBy,
    ObjectId,
    Tag,
    WatchCreate,
    WatchName,
    WatchOut,
    WatchType,
)
from controller.store import audit
from controller.store.models import Agent, Template, Watch
from controller.targets import refuse_unsendable
from controller.watches import service as watch_service
from controller.watches import sets_service as watch_sets

# The catalog and launches through the API.


class TemplateOut(ApiModel):
    """A template of the catalog: a system starter (`system: true`, read-only) or the org's."""

    id: str = Field(description="`system/...` for system templates")
    name: str
    watch_type: WatchType
    url_pattern: str
    policy_preset: PolicyPreset | None
    tags: list[str]
    headers: dict[str, str] = Field(description="header names; values are never shown")
    description: str | None
    system: bool
    managed_by: ManagedBy | None
    created_at: datetime | None
    updated_at: datetime | None


class TemplateList(ApiModel):
    templates: list[TemplateOut]


class TemplateCreate(RequestModel):
    """Body of `POST /api/templates`."""

    name: WatchName
    watch_type: WatchType
    url_pattern: UrlTemplate = Field(
        description="URL of watches launched from the template; `{placeholders}` make `url` "
        "required at launch"
    )
    policy_preset: PolicyPreset | None = None
    tags: Annotated[list[Tag], Field(max_length=50)] = Field(default_factory=list)
    headers: Annotated[dict[HeaderName, HeaderValue], Field(max_length=50)] | None = Field(
        default=None, description="shared headers (for example auth), encrypted at rest"
    )

    @field_validator("name")
    @classmethod
    def _not_system(cls, name: str) -> str:
        if name.startswith(SYSTEM_PREFIX):
            raise ValueError(f"names starting with {SYSTEM_PREFIX!r} are reserved")
        return name

    @field_validator("tags")
    @classmethod
    def _dedupe(cls, tags: list[str]) -> list[str]:
        return list(dict.fromkeys(tags))


class AgentBindingIn(RequestModel):
    """The agent a launched watch is bound to; created when it does not exist."""

    id: Slug = Field(description="agent id; an existing API agent gains the watch")
    slug: Slug | None = Field(default=None, description="for a new agent; defaults to `id`")
    name: WatchName | None = None
    environment: Environment | None = None


class LaunchFromTemplate(RequestModel):
    """Body of `POST /api/watches/from-template`: template values are defaults, these win."""

    template_id: Label = Field(
        description="a template id or name (`system/...` for system templates)"
    )
    name: WatchName | None = Field(
        default=None,
        description="defaults to the template name (with `-2`, `-3`... when it is taken)",
    )
    url: HttpUrl | None = Field(default=None, description="overrides the template's urlPattern")
    headers: Annotated[dict[HeaderName, HeaderValue], Field(max_length=50)] | None = Field(
        default=None, description="merged over the template's headers"
    )
    policy_preset: PolicyPreset | None = Field(
        default=None, description="policy of a new agent binding (default: the template's)"
    )
    tags: Annotated[list[Tag], Field(max_length=50)] = Field(
        default_factory=list, description="added to the template's tags"
    )
    interval_minutes: Interval | None = None
    webhook_url: HttpUrl | None = None
    watch_set_id: ObjectId | None = Field(default=None, description="an API watch set to join")
    agent: AgentBindingIn | None = Field(
        default=None, description="bind the new watch to this agent"
    )


class TemplateRef(ApiModel):
    id: str
    name: str
    system: bool


class LaunchOut(ApiModel):
    watch: WatchOut
    template: TemplateRef
    agent: AgentOut | None


SYSTEM_PREFIX = "system/"


def _system_out(template: SystemTemplate) -> TemplateOut:
    return TemplateOut(
        id=template.name,
        name=template.name,
        watch_type=WatchType(template.watch_type),
        url_pattern=template.url_pattern,
        policy_preset=template.policy_preset,
        tags=list(template.tags),
        headers={},
        description=template.description,
        system=True,
        managed_by=None,
        created_at=None,
        updated_at=None,
    )


def template_out(template: Template) -> TemplateOut:
    return TemplateOut(
        id=template.id,
        name=template.name,
        watch_type=WatchType(template.watch_type),
        url_pattern=template.url_pattern,
        policy_preset=template.policy_preset,
        tags=list(template.tags or []),
        headers={name: REDACTED for name in template.header_names or []},
        description=None,
        system=False,
        managed_by=managed_by(template),
        created_at=template.created_at,
        updated_at=template.updated_at,
    )


def list_templates(session: Session, org_id: str) -> TemplateList:
    """System starter templates first, then the org's (from git and through the API) by name."""
    rows = session.scalars(
        select(Template).where(Template.org_id == org_id).order_by(Template.name)
    )
    return TemplateList(
        templates=[_system_out(t) for t in SYSTEM_TEMPLATES.values()]
        + [template_out(t) for t in rows]
    )


def create_template(
    session: Session, principal: Principal, data: TemplateCreate, box: SecretBox
) -> Template:
    refuse_unsendable(templates={"/urlPattern": data.url_pattern}, headers=data.headers)
    template = Template(
        org_id=principal.org_id,
        name=data.name,
        watch_type=data.watch_type.value,
        url_pattern=data.url_pattern,
        policy_preset=data.policy_preset,
        tags=data.tags,
    )
    _set_headers(template, data.headers, box)
    session.add(template)
    try:
        session.flush()
    except IntegrityError:
        raise Conflict(
            f"a template named {data.name!r} already exists", code="duplicate_name"
        ) from None
    audit.by(
        session,
        principal,
        "template.create",
        template.id,
        {"name": template.name, "watchType": template.watch_type},
    )
    return template


def delete_template(session: Session, principal: Principal, template_id: str) -> None:
    """Removes an org template; watches launched from it keep their values."""
    template = _org_template(session, principal.org_id, template_id)
    if template is None:
        raise NotFound("Template not found")
    ensure_unmanaged(template, "template", template.name)
    session.delete(template)
    audit.by(session, principal, "template.delete", template.id, {"name": template.name})


def launch(
    session: Session,
    principal: Principal,
    data: LaunchFromTemplate,
    box: SecretBox,
    *,
    default_interval: int | None = None,
) -> tuple[Watch, TemplateRef, Agent | None]:
    """A new watch from a template (copies, never links), optionally bound to an agent."""
    values, ref = _template_values(session, principal.org_id, data.template_id, box)
    url = data.url or values["url_pattern"]
    if PLACEHOLDER.search(url):
        raise Unprocessable(
            f"template {ref.name!r} has {{placeholders}} in its urlPattern; send `url`",
            details=[{"path": "/url", "message": "required for this template"}],
        )
    name = data.name or _free_name(session, principal.org_id, ref.name.removeprefix(SYSTEM_PREFIX))
    tags = list(dict.fromkeys([*values["tags"], *data.tags]))
    if len(tags) > MAX_TAGS:
        raise Unprocessable(
            f"template {ref.name!r} has {len(values['tags'])} tags; with the ones sent the watch "
            f"would have {len(tags)}, more than {MAX_TAGS}",
            details=[{"path": "/tags", "message": f"at most {MAX_TAGS} with the template's"}],
        )
    # The request matched its schema; what the template adds to it may still not make a watch
    # (too many headers, a urlPattern that is not a URL): 422 naming the request's field.
    create = compose(
        WatchCreate,
        {
            "name": name,
            "url": url,
            "watchType": values["watch_type"],
            "tags": tags,
            "headers": {**values["headers"], **(data.headers or {})} or None,
            "intervalMinutes": data.interval_minutes,
            "webhookUrl": data.webhook_url,
        },
        what=f"a watch from template {ref.name!r}",
    )
    watch = watch_service.create_watch(
        session, principal, create, box, default_interval=default_interval
    )
    if data.watch_set_id is not None:
        watch_sets.join(session, principal.org_id, data.watch_set_id, [watch])
    agent = None
    if data.agent is not None:
        policy = data.policy_preset or values["policy_preset"] or "notify-only"
        agent = agent_service.bind(
            session,
            principal,
            data.agent.id,
            watch,
            policy=policy,
            slug=data.agent.slug,
            name=data.agent.name,
            environment=data.agent.environment,
        )
    audit.by(
        session,
        principal,
        "template.launch",
        watch.id,
        {"template": ref.name, "agent": data.agent.id if data.agent else None},
        target_type="watch",
    )
    return watch, ref, agent


PLACEHOLDER = re.compile(r"\{[^{}]*\}")


def _template_values(
    session: Session, org_id: str, template_id: str, box: SecretBox
) -> tuple[dict[str, Any], TemplateRef]:
    values: dict[str, Any]
    system = SYSTEM_TEMPLATES.get(template_id)
    if system is not None:
        values = {
            "watch_type": system.watch_type,
            "url_pattern": system.url_pattern,
            "policy_preset": system.policy_preset,
            "tags": list(system.tags),
            "headers": {},
        }
        return values, TemplateRef(id=system.name, name=system.name, system=True)
    template = _org_template(session, org_id, template_id)
    if template is None:
        raise NotFound("Template not found")
    values = {
        "watch_type": template.watch_type,
        "url_pattern": template.url_pattern,
        "policy_preset": template.policy_preset,
        "tags": list(template.tags or []),
        "headers": box.decrypt_json(template.headers_ciphertext)
        if template.headers_ciphertext
        else {},
    }
    return values, TemplateRef(id=template.id, name=template.name, system=False)


def _org_template(session: Session, org_id: str, id_or_name: str) -> Template | None:
    return session.scalar(
        select(Template).where(
            Template.org_id == org_id, or_(Template.id == id_or_name, Template.name == id_or_name)
        )
    )


def _free_name(session: Session, org_id: str, base: str) -> str:
    """`base`, or `base-N` with the lowest N >= 2 that no watch of the org uses."""
    taken = set(
        session.scalars(
            select(Watch.name).where(
                Watch.org_id == org_id, or_(Watch.name == base, Watch.name.like(f"{base}-%"))
            )
        )
    )
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


def _set_headers(template: Template, headers: dict[str, str] | None, box: SecretBox) -> None:
    template.headers_ciphertext = box.encrypt_json(headers) if headers else None
    template.header_names = sorted(headers or {})
