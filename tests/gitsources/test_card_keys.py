"""`cardKeys` of an `a2a_card` watch in `.driftgate/watch-sets.yaml`: the keys the watch
trusts for its card's signatures, reconciled into the watch; a value a watch cannot trust
(private key material, a key on a watch that is no card) is a file:line problem."""

from __future__ import annotations

import json
from typing import Any

from joserfc.jwk import ECKey

from controller.gitsources.load import load_bundle
from controller.store.db import Database
from controller.store.models import Source, Watch
from tests.conftest import OrgKey
from tests.factories import Make, run
from tests.gitrepos import RepoBuilder

OWNER = ECKey.generate_key("P-256", parameters={"kid": "owner-2026"})
PUBLIC = json.dumps(dict(OWNER.as_dict(private=False)))
PRIVATE = json.dumps(dict(OWNER.as_dict(private=True)))
CARD_URL = "https://agents.example.com/.well-known/agent-card.json"
JWKS_URL = "https://agents.example.com/.well-known/jwks.json"


def watch_sets(*entries: str) -> str:
    head = "version: 1\nwatchSets:\n  - name: agents\n    watches:\n"
    return head + "".join(entries)


CARD = f"""\
      - name: billing-card
        url: {CARD_URL}
        watchType: a2a_card
        cardKeys:
          jwksUrl: {JWKS_URL}
          keys:
            - {PUBLIC}
"""


def problems(text: str, **more: str) -> list[str]:
    files = {"watch-sets.yaml": text.encode(), **{k: v.encode() for k, v in more.items()}}
    return [str(problem) for problem in load_bundle(files).problems]


def test_a_card_watch_declares_the_keys_it_trusts() -> None:
    bundle = load_bundle({"watch-sets.yaml": watch_sets(CARD).encode()})
    assert bundle.problems == []
    assert bundle.watch_sets is not None
    (entry,) = bundle.watch_sets.watch_sets[0].watches
    assert entry.card_keys is not None
    assert entry.card_keys.stored() == {"jwksUrl": JWKS_URL, "keys": [json.loads(PUBLIC)]}


def test_keys_a_watch_cannot_trust_are_problems_at_their_line() -> None:
    found = problems(
        watch_sets(
            CARD,
            f"""\
      - name: spec
        url: https://api.example.com/openapi.json
        watchType: openapi
        cardKeys:
          jwksUrl: {JWKS_URL}
      - name: leaky
        url: {CARD_URL}
        watchType: a2a_card
        cardKeys:
          keys:
            - {PRIVATE}
""",
        )
    )
    assert found == [
        ".driftgate/watch-sets.yaml:16:11: cardKeys: only for a2a_card watches (this one is "
        "openapi)",
        ".driftgate/watch-sets.yaml:21:11: cardKeys: key 0: holds private key material (d): "
        "give the public key only (its kty, n/e or crv/x/y, kid)",
    ]
    assert not any(json.loads(PRIVATE)["d"] in line for line in found)


def test_the_schema_refuses_keys_without_a_url_or_a_key() -> None:
    found = problems(
        watch_sets(
            f"""\
      - name: billing-card
        url: {CARD_URL}
        watchType: a2a_card
        cardKeys: {{}}
"""
        )
    )
    assert len(found) == 1 and found[0].startswith(".driftgate/watch-sets.yaml:8:")


def card_keys(database: Database) -> Any:
    with database.session() as session:
        return {w.name: w.card_keys for w in session.query(Watch)}


def test_reconcile_writes_the_keys_into_the_watch(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    repo.commit({".driftgate/watch-sets.yaml": watch_sets(CARD)})
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    assert run(reconciler, settings).result == "applied"
    assert card_keys(database) == {
        "billing-card": {"jwksUrl": JWKS_URL, "keys": [json.loads(PUBLIC)]}
    }
    assert run(reconciler, settings).result == "unchanged"

    only_url = CARD.split("          keys:")[0]
    repo.commit({".driftgate/watch-sets.yaml": watch_sets(only_url)})
    assert run(reconciler, settings).result == "applied"
    assert card_keys(database) == {"billing-card": {"jwksUrl": JWKS_URL}}

    no_keys = only_url.split("        cardKeys:")[0]
    repo.commit({".driftgate/watch-sets.yaml": watch_sets(no_keys)})
    assert run(reconciler, settings).result == "applied"
    assert card_keys(database) == {"billing-card": None}


def test_keys_on_a_watch_whose_template_is_no_card_are_refused(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    templates = (
        "version: 1\ntemplates:\n  - name: spec\n    watchType: openapi\n"
        "    urlPattern: https://api.example.com/openapi.json\n"
    )
    entry = f"""\
      - name: spec-watch
        template: spec
        cardKeys:
          jwksUrl: {JWKS_URL}
"""
    repo.commit(
        {
            ".driftgate/templates.yaml": templates,
            ".driftgate/watch-sets.yaml": watch_sets(entry),
        }
    )
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    assert run(reconciler, settings).result != "applied"
    with database.session() as session:
        row = session.get_one(Source, "fleet")
        found = [f"{p['file']}:{p['line']}: {p['message']}" for p in row.problems]
    assert found == [
        ".driftgate/watch-sets.yaml:8: cardKeys: only for a2a_card watches (this one is "
        "openapi, from its template)"
    ]
    assert card_keys(database) == {}
