"""The watch's OAuth columns (`controller.mcpauth.rows`): what a check bought is written back
only while the watch's secrets are the ones the check read, and giving the same settings
again keeps the cached token."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from controller.crypto import SecretBox, load_secret_box
from controller.mcpauth.grants import OAuthSecrets, OAuthSettings, OAuthState, Renewal, Token
from controller.mcpauth.rows import keep_renewal, oauth_state, set_oauth
from controller.store.db import Database
from controller.store.models import Watch
from tests.conftest import OrgKey, make_settings
from tests.factories import make_watches

MCP = "https://mcp.example.com/mcp"
SETTINGS = OAuthSettings("refresh_token", "driftgate", scope="mcp:read")
EXPIRES = datetime(2026, 11, 21, 13, 0, tzinfo=UTC)


def read(database: Database, watch_id: str, box: SecretBox) -> OAuthState:
    with database.session() as session:
        watch = session.get(Watch, watch_id)
        assert watch is not None
        state = oauth_state(watch, box)
        assert state is not None
        return state


def given(database: Database, watch_id: str, box: SecretBox, refresh: str) -> None:
    with database.transaction() as session:
        watch = session.get(Watch, watch_id)
        assert watch is not None
        set_oauth(watch, SETTINGS, OAuthSecrets(refresh_token=refresh), box)


def bought(state: OAuthState, access: str, refresh: str | None) -> OAuthState:
    state.renewal = Renewal(Token(access, MCP, "https://login.example.com", EXPIRES), refresh)
    return state


def test_a_renewal_is_kept_unless_the_secrets_changed_meanwhile(
    database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    box = load_secret_box(make_settings(tmp_path, database_url=database.url))
    (watch_id,) = make_watches(database, acme, tmp_path, ["https://a.example.com/openapi.json"])
    given(database, watch_id, box, "rt-given")
    state = bought(read(database, watch_id, box), "at-1", "rt-rotated")
    with database.transaction() as session:
        keep_renewal(session, watch_id, state, box)
    kept = read(database, watch_id, box)
    assert kept.token == Token("at-1", MCP, "https://login.example.com", EXPIRES)
    assert kept.secrets.refresh_token == "rt-rotated"
    # The same settings and secrets given again (a reapplied file): nothing is forgotten.
    given(database, watch_id, box, "rt-given")
    assert read(database, watch_id, box) == kept
    # A check that read the old secrets finishes after the user gave new ones: its token and
    # its rotated refresh token are dropped, the new secrets stay.
    stale = bought(read(database, watch_id, box), "at-2", "rt-stale")
    given(database, watch_id, box, "rt-new")
    with database.transaction() as session:
        keep_renewal(session, watch_id, stale, box)
    now = read(database, watch_id, box)
    assert now.token is None and now.secrets.refresh_token == "rt-new"
