"""Helpers of the reconcile tests (real git repositories into the real store): what reconcile
may touch as plain values, a source's row and its conditions, a consumer profile and the
profiles in the store, and the hosted `.driftguard/agents.yaml` fixtures; for the loader's
tests, a valid bundle's files and a way to load files given as text."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent
from typing import Any

from sqlalchemy import select

from controller.gitsources.load import Bundle, Problem, load_bundle
from controller.store.db import Database
from controller.store.models import Agent, IngressProfile, Source, Template, Watch, WatchSet

# The hosted product's agents.yaml files, valid and invalid (README.md there says whence).
HOSTED = Path(__file__).parent / "hosted"


def snapshot(database: Database) -> dict[str, Any]:
    """Everything reconcile may touch, as plain values (to compare before and after)."""
    with database.session() as session:
        return {
            "watches": sorted(
                (w.name, w.url, w.watch_type, w.managed_source, tuple(w.tags))
                for w in session.scalars(select(Watch))
            ),
            "agents": sorted(
                (a.key, a.policy, tuple((b.ref, b.watch_id) for b in a.bindings))
                for a in session.scalars(select(Agent))
            ),
            "templates": sorted(t.name for t in session.scalars(select(Template))),
            "sets": sorted(s.name for s in session.scalars(select(WatchSet))),
        }


def source_row(database: Database, name: str = "fleet") -> Source:
    with database.session() as session:
        row = session.get(Source, name)
        assert row is not None
        return row


def condition(row: Source, kind: str) -> dict[str, Any]:
    return next(c for c in row.conditions if c["type"] == kind)


ORDER_PROFILE = """\
id: order
version: 1
schema:
  type: object
  properties:
    email: {type: string}
  required: [email]
"""


def profiles(database: Database) -> list[tuple[str, int, str | None, str | None]]:
    with database.session() as session:
        return [
            (p.profile_id, p.version, p.managed_source, p.managed_path)
            for p in session.scalars(select(IngressProfile).order_by(IngressProfile.profile_id))
        ]


# The loader's tests: a valid bundle (agents, templates, watch sets) and files given as text.

VALID_AGENTS = """\
version: 1
policies:
  review-first:
    on_breaking: [notify, draft_pr]
    require_ack_to_unblock: true
agents:
  - id: billing-agent
    name: Billing agent
    environment: production
    policy: production-guard
    watches:
      - stripe-api
      - {name: petstore, url: "https://petstore.example.com/openapi.json", type: openapi}
    runtime_webhook: https://orchestrator.example.com/hooks/driftgate
    repoRef: acme/billing-agent@main
  - id: triage-bot
    slug: triage
    policy: review-first
"""

VALID_TEMPLATES = """\
version: 1
templates:
  - name: stripe
    watchType: openapi
    urlPattern: https://stripe.example.com/openapi.json
    policyPreset: production-guard
    headers:
      Authorization: ${env:STRIPE_AUTHORIZATION}
      Stripe-Version: "2024-06-20"
    tags: [vendor:stripe]
"""

VALID_WATCH_SETS = """\
version: 1
watchSets:
  - name: production
    environment: production
    watches:
      - name: stripe-api
        template: stripe
        intervalMinutes: 5
      - name: github-mcp
        url: https://mcp.example.com/mcp
        watchType: mcp
"""

SECRET_SETS = """\
version: 1
watchSets:
  - name: prod
    watches:
      - name: a
        url: https://a.example.com/openapi.json
        watchType: openapi
        headers:
          Authorization: Bearer sk_live_0123456789abcdef
          X-Api-Key: sk_live_0123456789abcdef
          X-Session-Token: ${env:lower_case}
          Cookie: ${env:SESSION_COOKIE}
          Accept-Language: en
          Bad Header: x
"""


def load(**texts: str) -> Bundle:
    """Load files given as keyword arguments: agents=..., templates=..., watch_sets=..."""
    files = {f"{key.replace('_', '-')}.yaml": dedent(text).encode() for key, text in texts.items()}
    return load_bundle(files)


def problems(**texts: str) -> list[tuple[str, int, int, str]]:
    return [(p.file, p.line, p.column, p.message) for p in load(**texts).problems]


def only(**texts: str) -> Problem:
    found = load(**texts).problems
    assert len(found) == 1, found
    return found[0]
