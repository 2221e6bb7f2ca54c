"""Settings: defaults, environment, YAML file with line numbers, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.errors import ConfigError
from controller.settings import load_settings


def test_defaults_use_sqlite_in_the_data_dir(tmp_path: Path) -> None:
    settings = load_settings(env={"DRIFTGATE_DATA_DIR": str(tmp_path)})
    assert settings.effective_database_url == f"sqlite:///{(tmp_path / 'driftgate.db').resolve()}"
    assert settings.port == 8080 and settings.workers == 2
    assert settings.allow_private_targets is False


def test_environment_values_are_parsed(tmp_path: Path) -> None:
    settings = load_settings(
        env={
            "DRIFTGATE_DATABASE_URL": "postgresql+psycopg://u@db/driftgate",
            "DRIFTGATE_SECRET_KEY": "first-key-0123456789, second-key-0123456789",
            "DRIFTGATE_ALLOW_PRIVATE_TARGETS": "true",
            "DRIFTGATE_LOG_LEVEL": "debug",
            "DRIFTGATE_PORT": "9000",
        }
    )
    assert settings.effective_database_url == "postgresql+psycopg://u@db/driftgate"
    assert [k.get_secret_value() for k in settings.secret_key] == [
        "first-key-0123456789",
        "second-key-0123456789",
    ]
    assert settings.allow_private_targets is True
    assert settings.log_level == "DEBUG" and settings.port == 9000
    assert "first-key" not in repr(settings)


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"DRIFTGATE_PORT": "eighty"}, "DRIFTGATE_PORT"),
        ({"DRIFTGATE_PORT": "70000"}, "DRIFTGATE_PORT"),
        ({"DRIFTGATE_WORKERS": "0"}, "DRIFTGATE_WORKERS"),
        ({"DRIFTGATE_DATABASE_URL": "mysql://x"}, "DRIFTGATE_DATABASE_URL"),
        ({"DRIFTGATE_ALLOW_PRIVATE_TARGETS": "perhaps"}, "DRIFTGATE_ALLOW_PRIVATE_TARGETS"),
        ({"DRIFTGATE_LOG_FORMAT": "xml"}, "DRIFTGATE_LOG_FORMAT"),
        ({"DRIFTGATE_PRIVATE_TARGET_ALLOWLIST": "localhost:8090"}, "IP-address:port"),
        ({"DRIFTGATE_PRIVATE_TARGET_ALLOWLIST": "127.0.0.1"}, "IP-address:port"),
        ({"DRIFTGATE_PRIVATE_TARGET_ALLOWLIST": "127.0.0.1:0"}, "IP-address:port"),
    ],
)
def test_bad_values_name_the_variable(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(env=env)
    assert needle in info.value.message


def test_the_private_target_allowlist_is_normalised() -> None:
    env = {"DRIFTGATE_PRIVATE_TARGET_ALLOWLIST": " 127.0.0.1:8090, [::1]:8091 ,"}
    assert load_settings(env=env).private_target_allowlist == ("127.0.0.1:8090", "[::1]:8091")


def test_yaml_file_with_env_overrides(tmp_path: Path) -> None:
    config = tmp_path / "driftgate.yaml"
    config.write_text("port: 9100\nworkers: 3\nlog_format: text\n")
    settings = load_settings(env={"DRIFTGATE_CONFIG": str(config), "DRIFTGATE_WORKERS": "4"})
    assert settings.port == 9100 and settings.workers == 4 and settings.log_format == "text"
    assert settings.config == config


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("port: 80\nworkers: many\n", "driftgate.yaml:2: workers"),
        ("port: 80\ncolour: red\n", "driftgate.yaml:2: unknown setting 'colour'"),
        ("port: [1,\n", "driftgate.yaml:2: invalid YAML"),
        ("- a\n- b\n", "driftgate.yaml:1: the config file must be a mapping"),
    ],
)
def test_bad_yaml_files_give_file_and_line(tmp_path: Path, text: str, needle: str) -> None:
    config = tmp_path / "driftgate.yaml"
    config.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_settings(env={}, config_file=config)
    assert needle in info.value.message


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_settings(env={}, config_file=tmp_path / "absent.yaml")


def test_every_setting_is_documented() -> None:
    from controller.settings import FIELDS, FILE_ONLY, env_name

    text = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text(
        encoding="utf-8"
    )
    missing = [
        f
        for f in FIELDS
        if f != "config"
        and (f"`{f}`" not in text or (env_name(f) not in text and f not in FILE_ONLY))
    ]
    assert missing == []


def _pem(key: object, fmt: object, encryption: object | None = None) -> str:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(  # type: ignore[attr-defined, no-any-return]
        serialization.Encoding.PEM,
        fmt,
        encryption or serialization.NoEncryption(),
    ).decode()


def test_the_github_app_key_is_checked_when_settings_load(tmp_path: Path) -> None:
    """Issue 31, point 6: a key that cannot sign GitHub's RS256 App JWTs is refused at start,
    naming the setting (or the config file's line) and never quoting the key; the key file is
    read once, so a file changed later cannot fail a request."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    good = _pem(rsa_key, serialization.PrivateFormat.TraditionalOpenSSL)
    pkcs8 = _pem(rsa_key, serialization.PrivateFormat.PKCS8)
    elliptic = _pem(ec.generate_private_key(ec.SECP256R1()), serialization.PrivateFormat.PKCS8)
    locked = _pem(
        rsa_key,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"a passphrase"),
    )
    app = {"DRIFTGATE_GITHUB_APP_ID": "424242"}
    for text in (good, pkcs8):
        settings = load_settings(env={**app, "DRIFTGATE_GITHUB_APP_PRIVATE_KEY": text})
        assert settings.github_app_key() == text
    refused = {
        "not a key at all": "not a PEM private key",
        good[:300]: "not a PEM private key",  # cut short
        good.replace("PRIVATE KEY", "PUBLIC KEY"): "not a PEM private key",
        elliptic: "not an RSA private key",
        locked: "encrypted",
    }
    for text, needle in refused.items():
        with pytest.raises(ConfigError) as info:
            load_settings(env={**app, "DRIFTGATE_GITHUB_APP_PRIVATE_KEY": text})
        message = info.value.message
        assert message.startswith("invalid settings: DRIFTGATE_GITHUB_APP_PRIVATE_KEY: "), message
        assert needle in message
        assert all(line not in message for line in text.splitlines()[1:-1])  # no key text

    key_file = tmp_path / "app.pem"
    key_file.write_text(good)
    settings = load_settings(env={**app, "DRIFTGATE_GITHUB_APP_PRIVATE_KEY_FILE": str(key_file)})
    key_file.write_text("replaced by something else")
    assert settings.github_app_key() == good
    config = tmp_path / "driftgate.yaml"
    config.write_text(f"github_app_id: 424242\ngithub_app_private_key_file: {key_file}\n")
    with pytest.raises(ConfigError) as info:
        load_settings(env={}, config_file=config)
    assert info.value.message.startswith(
        f"invalid settings: {config}:2: github_app_private_key_file: "
    ), info.value.message
    missing = tmp_path / "absent.pem"
    with pytest.raises(ConfigError) as info:
        load_settings(env={**app, "DRIFTGATE_GITHUB_APP_PRIVATE_KEY_FILE": str(missing)})
    assert f"DRIFTGATE_GITHUB_APP_PRIVATE_KEY_FILE: Value error, cannot read {missing}" in (
        info.value.message
    )


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"DRIFTGATE_GITHUB_APP_ID": "424242"}, "DRIFTGATE_GITHUB_APP_ID) is set without"),
        ({"PRIVATE_KEY": "yes"}, "DRIFTGATE_GITHUB_APP_PRIVATE_KEY) is set but"),
        ({"PRIVATE_KEY": "yes", "PRIVATE_KEY_FILE": "yes"}, "are both set: set one"),
    ],
)
def test_half_a_github_app_is_refused(tmp_path: Path, env: dict[str, str], needle: str) -> None:
    """Without the App id or its key, driftgate would quietly open stub pull requests."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    pem = _pem(
        rsa.generate_private_key(public_exponent=65537, key_size=2048),
        serialization.PrivateFormat.TraditionalOpenSSL,
    )
    key_file = tmp_path / "app.pem"
    key_file.write_text(pem)
    values = {"PRIVATE_KEY": pem, "PRIVATE_KEY_FILE": str(key_file)}
    environ = {
        name if name.startswith("DRIFTGATE_") else f"DRIFTGATE_GITHUB_APP_{name}": (
            values.get(name, value)
        )
        for name, value in env.items()
    }
    with pytest.raises(ConfigError) as info:
        load_settings(env=environ)
    assert needle in info.value.message, info.value.message
