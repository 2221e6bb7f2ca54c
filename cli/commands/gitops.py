"""`driftgate reconcile` and `driftgate sources`: the GitOps side, run now or inspected."""

from __future__ import annotations

import sys

import click

from cli.common import Context
from controller.errors import ConfigError


@click.command()
@click.option("--source", "source_name", help="Only this source (default: every source).")
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option("--force", is_flag=True, help="Apply again even when the revision is applied.")
@click.pass_obj
def reconcile(obj: Context, source_name: str | None, dry_run: bool, force: bool) -> None:
    """Reconcile git sources now: fetch, validate, plan (creates, updates, prunes), apply.

    Exit 0 when every source is applied (or unchanged), 1 when one is invalid or failed.
    """
    from controller.crypto import load_secret_box
    from controller.services.sources import reconcile_now
    from controller.settings import process_environment

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
    obj.ensure_current_schema()  # before anything is applied
    box = load_secret_box(settings, create=True)
    failed = False
    runs = reconcile_now(
        settings,
        obj.database(),
        box,
        specs,
        force=force,
        dry_run=dry_run,
        env=process_environment(),
    )
    for spec, result in runs:
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


@click.group()
def sources() -> None:
    """Git sources and their reconcile status."""


@sources.command("list")
@click.pass_obj
def sources_list(obj: Context) -> None:
    """One line per configured source: ready, applied revision, last run."""
    from controller.services.sources import readiness

    specs = obj.settings().sources
    if not specs:
        click.echo(
            "no sources configured: add `sources:` to the config file (--config or "
            "DRIFTGATE_CONFIG); see docs/gitops.md"
        )
        return
    with obj.transaction() as session:
        for spec in specs:
            state, applied = readiness(session, spec)
            shown = (applied or "-")[:12]
            click.echo(f"{spec.name}\t{spec.org}\t{state}\t{shown}\t{spec.branch}:{spec.path}")


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
