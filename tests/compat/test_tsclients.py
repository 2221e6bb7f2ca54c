"""The TypeScript clients' prerequisites and their TLS front's configuration, without running
them: what skips (naming what is missing), what fails when CI requires the clients, and the
nginx block taken from docs/operations.md. Runs on every clone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.compat import tsclients
from tests.compat.tlsfront import server_block
from tests.compat.tsclients import REQUIRE, require_ts_clients, snapshot_digest


def snapshot(tmp_path: Path) -> Path:
    folder = tmp_path / "driftguard"
    (folder / "src").mkdir(parents=True)
    (folder / "package-lock.json").write_text("{}")
    (folder / "src" / "cli.ts").write_text("export {};\n")
    return folder


def test_a_missing_snapshot_skips_naming_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"\.\./shared/clients/driftguard"):
        require_ts_clients(tmp_path / "absent")


def test_a_missing_snapshot_fails_when_the_clients_are_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REQUIRE, "1")
    with pytest.raises(pytest.fail.Exception, match=r"\.\./shared/clients/driftguard"):
        require_ts_clients(tmp_path / "absent")


@pytest.mark.parametrize("missing", ["npm", "node", "nginx"])
def test_a_missing_command_skips_naming_it_or_fails_when_required(
    missing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    which = shutil.which
    monkeypatch.setattr(
        tsclients.shutil, "which", lambda name: None if name == missing else which(name) or name
    )
    folder = snapshot(tmp_path)
    monkeypatch.delenv(REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception, match=f"`{missing}`"):
        require_ts_clients(folder)
    monkeypatch.setenv(REQUIRE, "1")
    with pytest.raises(pytest.fail.Exception, match=f"`{missing}`"):
        require_ts_clients(folder)


def test_the_cache_key_follows_the_lockfile_and_the_sources(tmp_path: Path) -> None:
    folder = snapshot(tmp_path)
    first = snapshot_digest(folder)
    (folder / "src" / "node_modules").mkdir()
    (folder / "src" / "node_modules" / "x.js").write_text("ignored")
    assert snapshot_digest(folder) == first
    (folder / "src" / "cli.ts").write_text("export const changed = 1;\n")
    second = snapshot_digest(folder)
    assert second != first
    (folder / "package-lock.json").write_text('{"lockfileVersion": 3}')
    assert snapshot_digest(folder) not in (first, second)


def test_the_tls_front_is_the_documented_nginx_block(tmp_path: Path) -> None:
    block = server_block(8443, 8080, tmp_path / "c.pem", tmp_path / "c.key")
    assert "listen 127.0.0.1:8443 ssl;" in block and "server_name 127.0.0.1;" in block
    assert f"ssl_certificate {tmp_path / 'c.pem'};" in block
    assert "proxy_pass http://127.0.0.1:8080;" in block
    for header in ("For", "Proto", "Host", "Port"):
        assert f"proxy_set_header X-Forwarded-{header}" in block
