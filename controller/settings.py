"""Process settings: the only place that reads `DRIFTGATE_*` environment variables.

Settings come from three layers, later ones winning: built-in defaults, an optional YAML
file (`--config FILE` or `DRIFTGATE_CONFIG`, keys in snake_case), and the environment. They
are validated once at start by pydantic; a bad value raises `ConfigError` naming the
variable (or file:line) and what is wrong. The result is frozen and passed explicitly.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from controller.errors import ConfigError

ENV_PREFIX = "DRIFTGATE_"


class Settings(BaseModel):
    """Validated, immutable settings of one driftgate process."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    data_dir: Path = Field(
        default=Path("driftgate-data"),
        description="where the SQLite file and the generated secret key live",
    )
    database_url: str | None = Field(
        default=None, description="SQLAlchemy URL; default: SQLite file in data_dir"
    )
    secret_key: tuple[SecretStr, ...] = Field(
        default=(), description="comma-separated keys; the first encrypts, all decrypt (rotation)"
    )
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    workers: int = Field(default=2, ge=1, le=64)
    threads: int = Field(default=8, ge=1, le=256)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["json", "text"] = "json"
    max_body_bytes: int = Field(default=1_048_576, ge=1024, le=64 * 1_048_576)
    allow_private_targets: bool = False
    allow_stdio_mcp: bool = False
    refuse_default_user_agents: bool = False
    trial_validations_per_month: int = Field(default=500, ge=0)
    trial_days: int = Field(default=30, ge=1, le=365)
    public_base_url: str | None = None
    config: Path | None = Field(
        default=None, description="the YAML file these settings were read from"
    )

    @field_validator("secret_key", mode="before")
    @classmethod
    def _split_keys(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("database_url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        if not value.startswith(("sqlite", "postgresql")):
            raise ValueError("must be a sqlite:// or postgresql+psycopg:// URL")
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @property
    def effective_database_url(self) -> str:
        """The URL the store connects to: the configured one, or a SQLite file in data_dir."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'driftgate.db').resolve()}"

    @property
    def secret_key_file(self) -> Path:
        return self.data_dir / "secret.key"


FIELDS = tuple(Settings.model_fields)


def env_name(field: str) -> str:
    return ENV_PREFIX + field.upper()


def load_settings(
    env: Mapping[str, str] | None = None,
    config_file: str | Path | None = None,
    **overrides: Any,
) -> Settings:
    """Build settings from defaults, the YAML file, the environment, then explicit overrides."""
    environ = os.environ if env is None else env
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}

    path_text = config_file or environ.get(env_name("config"))
    lines: dict[str, int] = {}
    if path_text:
        path = Path(path_text)
        file_values, lines = _read_config_file(path)
        for key, value in file_values.items():
            values[key] = value
            origin[key] = f"{path}:{lines.get(key, 1)}: {key}"
        values["config"] = path
    for field in FIELDS:
        name = env_name(field)
        if name in environ and field != "config":
            values[field] = environ[name]
            origin[field] = name
    for field, value in overrides.items():
        if value is not None:
            values[field] = value
            origin[field] = f"--{field.replace('_', '-')}"

    try:
        return Settings(**values)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = str(error["loc"][0]) if error["loc"] else "settings"
            where = origin.get(field, env_name(field))
            problems.append(f"{where}: {error['msg']}")
        raise ConfigError("invalid settings: " + "; ".join(problems)) from None


def _read_config_file(path: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """Read a driftgate.yaml; return its values and the line of each top-level key."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror}") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{path}{line}: invalid YAML: {problem}") from None
    if data is None:
        return {}, {}
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        raise ConfigError(f"{path}:1: the config file must be a mapping of setting names")
    lines = {str(k.value): k.start_mark.line + 1 for k, _ in node.value if hasattr(k, "value")}
    for key in data:
        if key not in FIELDS or key == "config":
            known = ", ".join(f for f in FIELDS if f != "config")
            raise ConfigError(
                f"{path}:{lines.get(str(key), 1)}: unknown setting {key!r} (known: {known})"
            )
    return dict(data), lines
