"""`oauth` of an MCP watch in `.driftgate/watch-sets.yaml`: secrets only as `${env:NAME}`,
resolved by the controller and stored encrypted; an unchanged file keeps the cached token
and a rotated refresh token."""

from __future__ import annotations

from sqlalchemy import select

from controller.crypto import load_secret_box
from controller.mcpauth.grants import Renewal, Token
from controller.mcpauth.rows import keep_renewal, oauth_state
from controller.store.db import Database
from controller.store.models import Watch
from tests.conftest import OrgKey
from tests.factories import FILES, Make, run
from tests.gitrepos import RepoBuilder

SETS = """\
version: 1
watchSets:
  - name: production
    watches:
      - name: tools
        url: https://mcp.example.com/mcp
        watchType: mcp
        tags: [{tag}]
        oauth:
          grant: refresh_token
          clientId: driftgate
          clientSecret: {secret}
          refreshToken: ${{env:MCP_REFRESH}}
          scope: mcp:read
"""
ENV = {"MCP_SECRET": "client-secret-from-env", "MCP_REFRESH": "refresh-token-from-env"}


def files(secret: str = "${env:MCP_SECRET}", tag: str = "a") -> dict[str, str]:
    return {**FILES, ".driftgate/watch-sets.yaml": SETS.format(secret=secret, tag=tag)}


def tools(database: Database) -> Watch:
    with database.session() as session:
        watch = session.scalar(select(Watch).where(Watch.name == "tools"))
        assert watch is not None
        _ = (watch.oauth_ciphertext, watch.oauth_token_ciphertext, watch.oauth_token_expires_at)
        return watch


def test_oauth_secrets_come_from_the_environment_and_survive_reapplying(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    repo.commit(files())
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url}, env=ENV
    )
    assert run(reconciler, settings).result == "applied"
    box = load_secret_box(settings)
    watch = tools(database)
    assert watch.oauth is not None and watch.oauth["clientId"] == "driftgate"
    assert "client-secret-from-env" not in str(watch.oauth)
    state = oauth_state(watch, box)
    assert state is not None
    assert state.secrets.client_secret == "client-secret-from-env"
    assert state.secrets.refresh_token == "refresh-token-from-env"
    # A check bought a token and the server rotated the refresh token.
    token = Token("at-1", "https://mcp.example.com/mcp", "https://login.example.com", None)
    state.renewal = Renewal(token, "refresh-token-rotated")
    with database.transaction() as session:
        keep_renewal(session, watch.id, state, box)
    # Another change to the watch (its tags) leaves the OAuth as the check left it.
    repo.commit(files(tag="b"))
    assert run(reconciler, settings).result == "applied"
    kept = oauth_state(tools(database), box)
    assert kept is not None and kept.token is not None and kept.token.access_token == "at-1"
    assert kept.secrets.refresh_token == "refresh-token-rotated"
    # A new secret in the environment is a new OAuth: the token is forgotten.
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url},
        env={**ENV, "MCP_SECRET": "another-client-secret"},
    )
    repo.commit(files(tag="c"))
    assert run(reconciler, settings).result == "applied"
    fresh = oauth_state(tools(database), box)
    assert fresh is not None and fresh.token is None
    assert fresh.secrets.client_secret == "another-client-secret"
    assert fresh.secrets.refresh_token == "refresh-token-from-env"


def test_a_plain_secret_in_oauth_is_refused_and_names_no_value(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    repo.commit(files(secret="plain-client-secret"))
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url}, env=ENV
    )
    result = run(reconciler, settings)
    assert result.result != "applied"
    text = str(result.as_dict())
    assert "plain secrets in git are refused" in text
    assert "plain-client-secret" not in text
