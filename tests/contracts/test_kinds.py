"""Every registered contract kind is reachable from everywhere a watch type is chosen: the API,
the `.driftgate/` files, the CLI, the tool server, discovery, the portfolio, the console and
the check engine. Each test derives its cases from the registry, so a new kind is tested
here without a line added; the registry's own rules are tested on kinds made for the test."""

from __future__ import annotations

import re
from typing import Any

import click
import pytest
from flask import Flask
from flask.testing import FlaskClient

from controller.accounts import service as accounts
from controller.checks.engine import FETCH_ADAPTERS
from controller.contracts.base import HTTP_DOCUMENT, ContractKind, ContractKinds
from controller.contracts.kinds import CONTRACT_KINDS
from controller.gitsources.load import load_bundle
from controller.model.watch import WatchType, infer_watch_type
from controller.orgs.service import get_org
from controller.store.db import Database
from controller.store.types import utcnow
from tests.conftest import OrgKey

KINDS = list(CONTRACT_KINDS)
ALIASES = [(alias, kind) for kind in CONTRACT_KINDS for alias in kind.aliases]
# A URL that names no kind: the type sent decides.
PLAIN_URL = "https://contracts.example.com/v1/contract"


def by_name(kind: ContractKind) -> str:
    return kind.name


# -- the names, one per kind ------------------------------------------------------------------


def test_the_watch_type_enum_is_the_registry() -> None:
    assert [t.value for t in WatchType] == list(CONTRACT_KINDS.names())
    for alias, kind in ALIASES:
        assert WatchType(alias) is WatchType(kind.name)
        assert WatchType(alias.upper()) is WatchType(kind.name)
    with pytest.raises(ValueError):
        WatchType("not-a-kind")


@pytest.mark.parametrize("kind", KINDS, ids=by_name)
def test_each_kind_is_fetched_by_a_bound_adapter(kind: ContractKind) -> None:
    assert kind.fetch in FETCH_ADAPTERS


# -- the API -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=by_name)
def test_the_api_creates_and_lists_a_watch_of_each_kind(
    client: FlaskClient, acme: OrgKey, kind: ContractKind
) -> None:
    created = client.post(
        "/api/watches",
        json={"name": f"a-{kind.name}", "url": PLAIN_URL, "watchType": kind.name},
        headers=acme.headers,
    )
    assert created.status_code == 201, created.json
    assert created.json is not None and created.json["watchType"] == kind.name
    listed = client.get(f"/api/watches?watchType={kind.name}", headers=acme.headers).json
    assert listed is not None
    assert [w["watchType"] for w in listed["watches"]] == [kind.name]


@pytest.mark.parametrize(("alias", "kind"), ALIASES)
def test_the_api_reads_an_alias_as_its_kind(
    client: FlaskClient, acme: OrgKey, alias: str, kind: ContractKind
) -> None:
    created = client.post(
        "/api/watches",
        json={"name": f"an-{alias}", "url": PLAIN_URL, "watchType": alias},
        headers=acme.headers,
    )
    assert created.status_code == 201, created.json
    assert created.json is not None and created.json["watchType"] == kind.name


def test_the_api_publishes_every_kind(client: FlaskClient) -> None:
    document = client.get("/openapi.json").json
    assert document is not None
    schemas = document["components"]["schemas"]
    assert schemas["WatchType"]["enum"] == list(CONTRACT_KINDS.names())
    shown = [kind.name for kind in CONTRACT_KINDS.shown()]
    assert schemas["CandidateOut"]["properties"]["watchType"]["enum"] == shown


def test_a_refused_create_names_every_kind(client: FlaskClient, acme: OrgKey) -> None:
    refused = client.post(
        "/api/watches", json={"name": "unknown", "url": PLAIN_URL}, headers=acme.headers
    )
    assert refused.status_code == 422
    assert refused.json is not None
    for kind in CONTRACT_KINDS:
        assert kind.name in refused.json["message"]


# -- the `.driftgate/` files --------------------------------------------------------------------


@pytest.mark.parametrize("spelling", CONTRACT_KINDS.spellings())
def test_the_files_accept_every_spelling(spelling: str) -> None:
    watch_sets = (
        "version: 1\nwatchSets:\n  - name: all\n    watches:\n"
        f"      - name: w\n        url: {PLAIN_URL}\n        watchType: {spelling}\n"
    )
    agents = (
        "version: 1\nagents:\n  - id: agent\n    watches:\n"
        f"      - {{url: {PLAIN_URL}, type: {spelling}}}\n"
    )
    bundle = load_bundle({"watch-sets.yaml": watch_sets.encode(), "agents.yaml": agents.encode()})
    assert bundle.problems == []
    expected = CONTRACT_KINDS.read(spelling)
    assert expected is not None and bundle.watch_sets is not None and bundle.agents is not None
    (entry,) = bundle.watch_sets.watch_sets[0].watches
    (inline,) = bundle.agents.agents[0].watches
    assert entry.watch_type is not None and entry.watch_type.value == expected.name
    assert not isinstance(inline, str) and inline.watch_type.value == expected.name


# -- the CLI and the tool server ------------------------------------------------------------------


def choices_of(command: click.Command, option: str) -> list[str]:
    (param,) = [p for p in command.params if option in p.opts]
    assert isinstance(param.type, click.Choice)
    return [str(choice) for choice in param.type.choices]


def test_the_cli_offers_every_kind() -> None:
    from cli.commands.diff import diff
    from cli.commands.watches import watches

    create = watches.commands["create"]
    assert choices_of(create, "--type") == list(CONTRACT_KINDS.names())
    offered = choices_of(diff, "--type")
    assert offered[0] == "auto"
    assert sorted(offered[1:]) == sorted(kind.diff_type for kind in CONTRACT_KINDS)


def test_the_tool_server_offers_every_spelling() -> None:
    from cli.toolserver.tools import TOOLS

    schema = TOOLS["register_watch"].input_schema()["properties"]["watchType"]
    (listed,) = [choice["enum"] for choice in schema["anyOf"] if "enum" in choice]
    assert listed == list(CONTRACT_KINDS.spellings())
    for alias, kind in ALIASES:
        assert f"`{alias}` means `{kind.name}`" in schema["description"]


# -- discovery and the portfolio -----------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=by_name)
def test_discovery_and_the_portfolio_take_every_kind(kind: ContractKind) -> None:
    from controller.discovery.service import CandidateOut, SourceOut
    from controller.portfolio.dashboards import DashboardFilters

    candidate = CandidateOut(
        name="c",
        watch_type=kind.name,
        source=SourceOut(file=None, line=None),
        confidence=0.5,
        reasons=[],
    )
    assert candidate.watch_type == kind.name
    assert DashboardFilters(watch_type=kind.name).watch_type == kind.name


def test_discovery_names_the_type_a_watch_of_the_url_gets() -> None:
    from controller.discovery.extract import from_urls

    urls = [
        "https://api.example.com/openapi.json",
        "https://mcp.example.com/openapi.json",
        "https://agent.example.com/.well-known/agent-card.json",
        "https://tools.example.com/sse/",
        PLAIN_URL,
    ]
    for candidate in from_urls(urls):
        assert candidate.url is not None
        inferred = infer_watch_type(candidate.url)
        expected = inferred.value if inferred is not None else CONTRACT_KINDS.catch_all.name
        assert candidate.watch_type == expected


# -- the console ------------------------------------------------------------------------------


def signed_in_admin(app: Flask, database: Database, org: str) -> FlaskClient:
    password = "correct horse battery staple"
    with database.transaction() as session:
        _user, token = accounts.create_user(
            session, get_org(session, org), "admin@example.com", "admin", actor="test", now=utcnow()
        )
        accounts.set_password(session, token, password, utcnow())
    client = app.test_client()
    form = client.get("/console/sign-in").get_data(as_text=True)
    found = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert found is not None
    answer = client.post(
        "/console/sign-in",
        data={"email": "admin@example.com", "password": password, "csrf_token": found[1]},
    )
    assert answer.status_code == 302
    return client


def test_the_console_offers_every_kind_with_its_label(
    app: Flask, database: Database, acme: OrgKey
) -> None:
    page = signed_in_admin(app, database, acme.org_name).get("/console/watches")
    shown = page.get_data(as_text=True)
    for select in ("f-type", "add-type"):
        options = re.search(rf'<select id="{select}".*?</select>', shown, re.DOTALL)
        assert options is not None
        listed = re.findall(r'<option value="([^"]+)"[^>]*>([^<]+)</option>', options[0])
        assert listed == [(kind.name, kind.label) for kind in CONTRACT_KINDS.shown()]


# -- the registry's rules, on kinds made for the test --------------------------------------------


def toy(name: str, *, fetch: str = HTTP_DOCUMENT, **fields: Any) -> ContractKind:
    return ContractKind(
        name=name, fetch=fetch, load=lambda data, where: data, diff=lambda a, b, c: [], **fields
    )


def test_names_default_to_the_kind_and_spellings_are_unique() -> None:
    kind = toy("graphql", looks_like=lambda d: False)
    assert (kind.label, kind.diff_type, kind.family) == ("graphql", "graphql", "graphql")
    with pytest.raises(ValueError, match="names two contract kinds"):
        ContractKinds([toy("a", looks_like=bool), toy("b", aliases=("A",), looks_like=bool)])
    with pytest.raises(ValueError, match="only one kind"):
        ContractKinds([toy("a"), toy("b")])
    with pytest.raises(ValueError, match="already registered"):
        ContractKinds([toy("a"), toy("a")])


def test_the_most_specific_kind_is_told_first() -> None:
    kinds = ContractKinds(
        [
            toy(
                "doc",
                url_hint=lambda path, host: "a doc" if path.endswith(".json") else None,
                looks_like=lambda d: "doc" in d,
            ),
            toy("any"),
            toy(
                "card",
                url_hint=lambda path, host: "a card" if "card" in path else None,
                looks_like=lambda d: "card" in d,
            ),
        ]
    )
    found = kinds.infer("https://x.example/CARD.json/")
    assert found is not None and (found[0].name, found[1]) == ("card", "a card")
    assert kinds.infer("https://x.example/v1") is None
    assert kinds.catch_all.name == "any"
    assert kinds.diff_types() == ("doc", "card", "any")
    assert kinds.listed() == "doc, any or card"
    told = kinds.detect({"doc": 1, "card": 1})
    assert told is not None and told.name == "card"
    assert kinds.detect({"other": 1}) is None


def test_a_kind_of_another_fetch_is_not_told_from_a_served_document() -> None:
    kinds = ContractKinds(
        [toy("doc", looks_like=lambda d: "doc" in d), toy("session", fetch="mcp", looks_like=bool)]
    )
    anywhere = kinds.detect({"doc": 1})
    assert anywhere is not None and anywhere.name == "session"
    told = kinds.detect({"doc": 1}, fetch=HTTP_DOCUMENT)
    assert told is not None and told.name == "doc"
