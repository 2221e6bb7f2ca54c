"""What every `driftgate` command shares: the context (settings and store, built lazily),
the one way to fail (a line on stderr, exit code 2), the actor name for audit entries, and
the walk through a paged listing of the API."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from controller.errors import ConfigError

if TYPE_CHECKING:  # imported when used: `driftgate diff` never opens a store
    from sqlalchemy.orm import Session

    from controller.settings import Settings
    from controller.store.db import Database

F = TypeVar("F", bound=Callable[..., Any])
CLI_ACTOR = "cli"


class Context:
    """What every command gets through `ctx.obj`: settings, built lazily once."""

    def __init__(self, config: Path | None) -> None:
        self.config = config
        self._settings: Settings | None = None
        self._database: Database | None = None

    def settings(self, **overrides: Any) -> Settings:
        from controller.settings import load_settings

        if self._settings is None or overrides:
            self._settings = load_settings(config_file=self.config, **overrides)
        return self._settings

    def database(self) -> Database:
        from controller.store.db import Database

        if self._database is None:
            # A connect timeout, but no statement timeout: migrations and admin commands may
            # run long statements, and a person is there to stop them.
            settings = self.settings()
            self._database = Database(
                settings.effective_database_url,
                connect_timeout=settings.database_connect_timeout_seconds,
            )
        return self._database

    def ensure_current_schema(self) -> None:
        """Refuse to work on a store whose schema is not this release's."""
        from controller.store import migrate

        database = self.database()
        current, head = migrate.current_revision(database), migrate.head_revision(database)
        if current != head and migrate.is_ahead(current):
            raise ConfigError(
                f"the database schema is at revision {current}, newer than this release's "
                f"{head}: a newer driftgate migrated it; use that release's driftgate"
            )
        if current != head:
            raise ConfigError(
                f"the database schema is at revision {current or 'none'}, "
                f"this release needs {head}; "
                "run `driftgate db upgrade` first"
            )

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A transaction on a store whose schema is current (else a clear error)."""
        self.ensure_current_schema()
        with self.database().transaction() as session:
            yield session

    def close(self) -> None:
        if self._database is not None:
            self._database.dispose()


def fail(message: str) -> NoReturn:
    """One line on stderr and exit code 2: a usage, input or environment error."""
    click.echo(f"driftgate: error: {message}", err=True)
    sys.exit(2)


def options(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    """Several click options as one decorator, in the order given."""

    def apply(func: F) -> F:
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return apply


def format_option(*formats: str, help: str) -> Callable[[F], F]:
    """`--format` (the command's `output_format`): one of `formats`, the first by default."""
    return click.option(
        "--format",
        "output_format",
        type=click.Choice(formats),
        default=formats[0],
        show_default=True,
        help=help,
    )


def pages(fetch: Callable[[str | None], Any]) -> Iterator[Any]:
    """The pages of an API listing, first to last: `fetch(cursor)` gets one (the first with
    None), then each page's `nextCursor` the next, until a page has none. Lazy: a caller that
    stops reading fetches no more pages."""
    cursor: str | None = None
    while True:
        page = fetch(cursor)
        yield page
        cursor = page.get("nextCursor")
        if not cursor:
            return
