"""The `driftgate` command: run the service, migrate the store, administer orgs and keys.

Exit codes: 0 success, 1 a gate failed (later commands such as `diff` and `preflight`),
2 a usage, input or environment error. Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import click
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from controller import __version__
from controller.errors import ConfigError, DriftgateError
from controller.settings import Settings, load_settings, process_environment
from controller.store import migrate
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
        if self._settings is None or overrides:
            self._settings = load_settings(config_file=self.config, **overrides)
        return self._settings

    def database(self) -> Database:
        if self._database is None:
            self._database = Database(self.settings().effective_database_url)
        return self._database

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A transaction on a store whose schema is current (else a clear error)."""
        database = self.database()
        current, head = migrate.current_revision(database), migrate.head_revision(database)
        if current != head:
            raise ConfigError(
                f"the database schema is at revision {current or 'none'}, "
                f"this release needs {head}; "
                "run `driftgate db upgrade` first"
            )
        with database.transaction() as session:
            yield session

    def close(self) -> None:
        if self._database is not None:
            self._database.dispose()


class DriftgateGroup(click.Group):
    """Turns driftgate errors into one line on stderr and exit code 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except DriftgateError as exc:
            _fail(exc.message)
        except SQLAlchemyError as exc:
            origin = getattr(exc, "orig", None)
            reason = (str(origin or exc).strip().splitlines() or ["unknown"])[0]
            _fail(f"database error: {reason}")
        except OSError as exc:
            _fail(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc))


def _fail(message: str) -> None:
    click.echo(f"driftgate: error: {message}", err=True)
    sys.exit(2)


@click.group(cls=DriftgateGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="DRIFTGATE_CONFIG",
    help="driftgate.yaml with settings (environment variables override it).",
)
@click.pass_context
def main(ctx: click.Context, config: Path | None) -> None:
    """driftgate: contract drift monitor and run gate for REST/OpenAPI APIs and MCP servers."""
    ctx.obj = Context(config)
    ctx.call_on_close(ctx.obj.close)


@main.command()
def version() -> None:
    """Print the driftgate version."""
    click.echo(f"driftgate {__version__}")


@main.group()
def db() -> None:
    """Manage the state store."""


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True, help="Target migration revision.")
@click.pass_obj
def db_upgrade(obj: Context, revision: str) -> None:
    """Apply database migrations (SQLite by default, Postgres via DRIFTGATE_DATABASE_URL)."""
    now = migrate.upgrade(obj.database(), revision)
    click.echo(f"database at revision {now}")


@db.command("current")
@click.pass_obj
def db_current(obj: Context) -> None:
    """Print the current and the latest migration revision."""
    database = obj.database()
    current = migrate.current_revision(database) or "none"
    click.echo(f"current {current}, head {migrate.head_revision(database)}")


def _server_options(func: F) -> F:
    for option in reversed(
        [
            click.option("--host", help="Address to bind (default 127.0.0.1; 0.0.0.0 in Docker)."),
            click.option("--port", type=int, help="Port to bind (default 8080)."),
            click.option("--workers", type=int, help="gunicorn worker processes (default 2)."),
            click.option("--threads", type=int, help="Threads per worker (default 8)."),
        ]
    ):
        func = option(func)
    return func


@main.command()
@_server_options
@click.pass_obj
def serve(
    obj: Context, host: str | None, port: int | None, workers: int | None, threads: int | None
) -> None:
    """Serve the HTTP API with gunicorn (gthread workers)."""
    settings = obj.settings(host=host, port=port, workers=workers, threads=threads)
    from cli.server import run_gunicorn

    run_gunicorn(settings)


@main.command()
@_server_options
@click.option("--no-controller", is_flag=True, help="Serve the API only (no checks run).")
@click.pass_obj
def up(
    obj: Context,
    host: str | None,
    port: int | None,
    workers: int | None,
    threads: int | None,
    no_controller: bool,
) -> None:
    """Run everything on one machine: migrate the store, start the controller, serve the API."""
    settings = obj.settings(host=host, port=port, workers=workers, threads=threads)
    from controller.crypto import load_secret_box

    load_secret_box(settings, create=True)
    if not no_controller:
        from controller.scheduler import ensure_controller_can_start

        # Refuse the whole start, not only its controller: `up` without one is half a server.
        ensure_controller_can_start(settings.effective_database_url)
    revision = migrate.upgrade(obj.database(), "head")
    click.echo(
        f"driftgate {__version__}: database at revision {revision}; "
        f"serving on http://{settings.host}:{settings.port}",
        err=True,
    )
    from cli.server import run_gunicorn, start_controller_process

    child = None if no_controller else start_controller_process(obj.config)
    try:
        run_gunicorn(settings)
    finally:
        if child is not None:
            child.terminate()
            child.wait(timeout=60)


@main.command()
@click.option(
    "--concurrency",
    type=click.IntRange(1, 64),
    default=8,
    show_default=True,
    help="Checks run at once.",
)
@click.option("--tick", type=float, default=5.0, show_default=True, help="Seconds between rounds.")
@click.option(
    "--lease",
    type=float,
    default=120.0,
    show_default=True,
    help="Seconds a claimed check is reserved; a crashed worker's checks are retried after it.",
)
# `driftgate up` passes its pid: the controller it starts dies with it (cli/supervision.py).
@click.option("--parent", type=int, hidden=True)
@click.pass_obj
def controller(
    obj: Context, concurrency: int, tick: float, lease: float, parent: int | None
) -> None:
    """Run the controller: schedule and run checks, deliver events (no HTTP serving)."""
    import signal
    import threading

    if parent is not None:
        from cli.supervision import die_with_parent

        die_with_parent(parent)
    from controller.crypto import load_secret_box
    from controller.logs import configure_logging
    from controller.scheduler import Controller

    settings = obj.settings()
    configure_logging(settings)
    # Every worker, the lease thread and the ticker may hold a connection at once.
    database = Database(settings.effective_database_url, pool_size=concurrency + 4)
    current, head = migrate.current_revision(database), migrate.head_revision(database)
    if current != head:
        raise ConfigError(
            f"the database schema is at {current or 'none'}; run `driftgate db upgrade`"
        )
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    runner = Controller(
        settings,
        database,
        load_secret_box(settings, create=True),
        concurrency=concurrency,
        tick_seconds=tick,
        lease=timedelta(seconds=lease),
        env=process_environment(),
    )
    runner.start()
    stop.wait()
    runner.stop()
    database.dispose()


@main.group()
def orgs() -> None:
    """Administer organizations (plans and overlay products)."""


@orgs.command("create")
@click.argument("name")
@click.option(
    "--plan",
    type=click.Choice(["free", "pro", "team", "enterprise"]),
    default="free",
    show_default=True,
)
@click.pass_obj
def orgs_create(obj: Context, name: str, plan: str) -> None:
    """Create an org."""
    from controller.services import orgs as service

    with obj.transaction() as session:
        org = service.create_org(session, name, plan, actor=CLI_ACTOR)
        click.echo(f"created org {org.name} ({org.id}) on plan {org.plan}")


@orgs.command("list")
@click.pass_obj
def orgs_list(obj: Context) -> None:
    """List orgs with their plans and products."""
    from controller.services import orgs as service

    with obj.transaction() as session:
        for org in service.list_orgs(session):
            products = ",".join(org.products) or "-"
            click.echo(f"{org.name}\t{org.plan}\t{products}\t{org.id}")


@orgs.command("set-plan")
@click.argument("name")
@click.argument("plan", type=click.Choice(["free", "pro", "team", "enterprise"]))
@click.pass_obj
def orgs_set_plan(obj: Context, name: str, plan: str) -> None:
    """Change an org's plan (moving to free switches overlay products off)."""
    from controller.services import orgs as service

    with obj.transaction() as session:
        org = service.set_plan(session, service.get_org(session, name), plan, actor=CLI_ACTOR)
        click.echo(f"org {org.name} is on plan {org.plan}")


def _product_command(enabled: bool) -> Callable[..., None]:
    @click.argument("name")
    @click.argument(
        "product", type=click.Choice(["replay_cloud", "draftpr_repo", "toolmanifest_org"])
    )
    @click.pass_obj
    def command(obj: Context, name: str, product: str) -> None:
        from controller.services import orgs as service

        with obj.transaction() as session:
            org = service.set_product(
                session, service.get_org(session, name), product, enabled, actor=CLI_ACTOR
            )
            click.echo(f"org {org.name} products: {', '.join(org.products) or 'none'}")

    return command


orgs.command("enable-product", help="Enable an overlay product for an org (paid plans only).")(
    _product_command(True)
)
orgs.command("disable-product", help="Disable an overlay product for an org.")(
    _product_command(False)
)


@main.group()
def keys() -> None:
    """Administer API keys (shown once, stored hashed)."""


@keys.command("create")
@click.option("--org", "org_name", required=True, help="Org name or id.")
@click.option("--name", default="", help="A label for the key.")
@click.pass_obj
def keys_create(obj: Context, org_name: str, name: str) -> None:
    """Create an API key; the key alone goes to stdout, once."""
    from controller.services import auth
    from controller.services import orgs as org_service

    with obj.transaction() as session:
        issued = auth.create_api_key(
            session, org_service.get_org(session, org_name), name, actor=CLI_ACTOR
        )
    click.echo(
        f"created key {issued.key.id} (ends in {issued.key.hint}) for org {org_name}; "
        "it is shown once, store it now",
        err=True,
    )
    click.echo(issued.secret)


@keys.command("list")
@click.option("--org", "org_name", required=True, help="Org name or id.")
@click.pass_obj
def keys_list(obj: Context, org_name: str) -> None:
    """List an org's keys: id, hint, name, created, last used, revoked."""
    from controller.services import auth
    from controller.services import orgs as org_service

    with obj.transaction() as session:
        for key in auth.list_api_keys(session, org_service.get_org(session, org_name)):
            click.echo(
                "\t".join(
                    [
                        key.id,
                        f"...{key.hint}",
                        key.name or "-",
                        key.created_at.isoformat(timespec="seconds"),
                        key.last_used_at.isoformat(timespec="seconds")
                        if key.last_used_at
                        else "never",
                        f"revoked {key.revoked_at.isoformat(timespec='seconds')}"
                        if key.revoked_at
                        else "active",
                    ]
                )
            )


@keys.command("revoke")
@click.argument("key_id")
@click.pass_obj
def keys_revoke(obj: Context, key_id: str) -> None:
    """Revoke a key by id; it stops working at once."""
    from controller.services import auth

    with obj.transaction() as session:
        key = auth.revoke_api_key(session, key_id, datetime.now(UTC), actor=CLI_ACTOR)
        click.echo(f"revoked key {key.id} (ends in {key.hint})")


@main.group()
def secrets() -> None:
    """Manage the encryption of secrets at rest."""


@secrets.command("rotate")
@click.pass_obj
def secrets_rotate(obj: Context) -> None:
    """Re-encrypt every stored secret with the first key of DRIFTGATE_SECRET_KEY."""
    from controller.crypto import load_secret_box
    from controller.services.secrets import rotate_all

    box = load_secret_box(obj.settings())
    with obj.transaction() as session:
        count = rotate_all(session, box)
    click.echo(f"re-encrypted {count} secrets with the primary key")


_TYPES = click.Choice(["auto", "openapi", "mcp", "json"])
_THRESHOLDS = click.Choice(["breaking", "warning", "info", "never"])
_FORMATS = click.Choice(["text", "json", "markdown", "github", "sarif", "junit"])


def _report_options(func: F) -> F:
    for option in reversed(
        [
            click.option(
                "--fail-on",
                type=_THRESHOLDS,
                default="breaking",
                show_default=True,
                help="Exit 1 when a change that is not ignored is at least this severe.",
            ),
            click.option("--format", "fmt", type=_FORMATS, default="text", show_default=True),
            click.option(
                "--rules",
                type=click.Path(dir_okay=False),
                help="Rules file: severity overrides and ignores (with reasons).",
            ),
            click.option(
                "-o",
                "--output",
                type=click.Path(dir_okay=False, writable=True),
                help="Write the report to a file instead of stdout.",
            ),
        ]
    ):
        func = option(func)
    return func


def _emit(report: Any, fmt: str, fail_on: str, output: str | None) -> None:
    from controller.reports import render

    text = render(report, fmt, fail_on)  # type: ignore[arg-type]
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
    sys.exit(1 if report.reaches(fail_on) else 0)


@main.command()
@click.argument("base")
@click.argument("revision")
@click.option("--type", "contract_type", type=_TYPES, default="auto", show_default=True)
@_report_options
def diff(
    base: str,
    revision: str,
    contract_type: str,
    fail_on: str,
    fmt: str,
    rules: str | None,
    output: str | None,
) -> None:
    """Diff two contracts (files or http(s) URLs): OpenAPI, MCP snapshots or JSON.

    Exit 0 when nothing reaches --fail-on, 1 when something does, 2 when an input cannot be
    read or parsed.
    """
    from controller.services.diffing import diff_contracts, load_rules

    rules_file = load_rules(rules) if rules else None
    report = diff_contracts(base, revision, contract_type=contract_type, rules=rules_file)  # type: ignore[arg-type]
    _emit(report, fmt, fail_on, output)


@main.command()
@click.argument("base")
@click.argument("revision")
@click.option(
    "--profile",
    type=click.Choice(["cli", "hosted"]),
    default="cli",
    show_default=True,
    help="cli: strict, a removed field is breaking; hosted: a removed optional field is a warning.",
)
@_report_options
def compare(
    base: str,
    revision: str,
    profile: str,
    fail_on: str,
    fmt: str,
    rules: str | None,
    output: str | None,
) -> None:
    """Compare two JSON payloads by their inferred schemas (the offline `compare_json`)."""
    from controller.services.diffing import compare_payloads, load_rules

    rules_file = load_rules(rules) if rules else None
    report = compare_payloads(base, revision, profile=profile, rules=rules_file)  # type: ignore[arg-type]
    _emit(report, fmt, fail_on, output)


@orgs.command("webhook-secret")
@click.argument("name")
@click.option(
    "--rotate", is_flag=True, help="Replace the secret; receivers must switch to the new one."
)
@click.pass_obj
def orgs_webhook_secret(obj: Context, name: str, rotate: bool) -> None:
    """Print the org's webhook signing secret (whsec_...), creating or rotating it."""
    from controller.crypto import load_secret_box
    from controller.services import notifications
    from controller.services import orgs as org_service

    box = load_secret_box(obj.settings())
    with obj.transaction() as session:
        org = org_service.get_org(session, name)
        if rotate:
            secret = notifications.rotate_signing_secret(session, org.id, box, actor=CLI_ACTOR)
        else:
            secret = notifications.signing_secret(session, org.id, box)
    click.echo(secret)


@main.group()
def audit() -> None:
    """Audit exports."""


@audit.command("verify")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.pass_obj
def audit_verify(obj: Context, path: str) -> None:
    """Check the signature of an audit export; exit 1 when it does not verify."""
    from controller.crypto import load_secret_box
    from controller.services.export import AuditVerificationError, verify_audit

    box = load_secret_box(obj.settings())
    try:
        document = verify_audit(Path(path).read_bytes(), box)
    except AuditVerificationError as exc:
        click.echo(f"driftgate: audit file does not verify: {exc}", err=True)
        sys.exit(1)
    click.echo(
        f"verified: {len(document.get('events', []))} events, exported {document.get('exportedAt')}"
    )


@main.command()
@click.option("--source", "source_name", help="Only this source (default: every source).")
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option("--force", is_flag=True, help="Apply again even when the revision is applied.")
@click.pass_obj
def reconcile(obj: Context, source_name: str | None, dry_run: bool, force: bool) -> None:
    """Reconcile git sources now: fetch, validate, plan (creates, updates, prunes), apply.

    Exit 0 when every source is applied (or unchanged), 1 when one is invalid or failed.
    """
    from controller.crypto import load_secret_box
    from controller.reconcile import Reconciler

    settings = obj.settings()
    specs = list(settings.sources)
    if source_name is not None:
        spec = settings.source(source_name)
        if spec is None:
            known = ", ".join(s.name for s in specs) or "none configured"
            raise ConfigError(f"unknown source {source_name!r} (sources: {known})")
        specs = [spec]
    if not specs:
        raise ConfigError("no sources configured: add `sources:` to the config file (--config)")
    with obj.transaction():
        pass  # the schema must be current before anything is applied
    reconciler = Reconciler(
        settings, obj.database(), load_secret_box(settings, create=True), env=process_environment()
    )
    failed = False
    for spec in specs:
        result = reconciler.reconcile(spec, force=force, dry_run=dry_run)
        revision = (result.revision or "-")[:12]
        click.echo(f"{spec.name}: {result.result} at {revision} ({result.duration_ms} ms)")
        if result.message and result.result not in ("applied", "dry_run"):
            click.echo(f"  {result.message}")
        if result.plan is not None:
            plan = result.plan.as_dict()
            for verb in ("create", "update", "prune"):
                for kind, names in plan[verb].items():
                    for name in names:
                        click.echo(f"  {verb} {kind[:-1] if kind != 'watches' else 'watch'} {name}")
            click.echo(
                f"  {plan['created']} to create, {plan['updated']} to update, "
                f"{plan['pruned']} to prune"
                if dry_run
                else f"  {plan['created']} created, {plan['updated']} updated, "
                f"{plan['pruned']} pruned"
            )
        for problem in result.problems:
            click.echo(f"  {problem}")
        failed = failed or result.result in ("stalled", "failed")
    if failed:
        sys.exit(1)


@main.group()
def sources() -> None:
    """Git sources and their reconcile status."""


@sources.command("list")
@click.pass_obj
def sources_list(obj: Context) -> None:
    """One line per configured source: ready, applied revision, last run."""
    from controller.store.models import Source

    with obj.transaction() as session:
        for spec in obj.settings().sources:
            row = session.get(Source, spec.name)
            ready = next(
                (c for c in (row.conditions if row else []) if c.get("type") == "Ready"), None
            )
            state = "suspended" if spec.suspend else (ready or {}).get("reason", "NotReconciled")
            applied = (row.last_applied_revision or "-")[:12] if row else "-"
            click.echo(f"{spec.name}\t{spec.org}\t{state}\t{applied}\t{spec.branch}:{spec.path}")


@sources.command("status")
@click.argument("name")
@click.pass_obj
def sources_status(obj: Context, name: str) -> None:
    """The full status of one source as JSON (the same as GET /api/sources/NAME)."""
    from controller.services import sources as source_service
    from controller.services.orgs import get_org

    settings = obj.settings()
    spec = settings.source(name)
    if spec is None:
        raise ConfigError(f"unknown source {name!r}")
    with obj.transaction() as session:
        org = get_org(session, spec.org)
        out = source_service.get_source(session, settings, org.id, name)
        click.echo(out.model_dump_json(by_alias=True, indent=2))


from cli.validate import validate  # noqa: E402  (a command of its own module)

main.add_command(validate)
from cli.preflight import preflight  # noqa: E402  (a command of its own module)

main.add_command(preflight)
