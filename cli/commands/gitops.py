"""`driftgate reconcile` and `driftgate sources`: the GitOps side, run now or inspected."""

from __future__ import annotations

import json
import sys
from typing import Any
from urllib.parse import quote

import click

from cli import api, style
from cli.common import Context, options
from cli.output import emit, output_format, table
from cli.progress import progress
from cli.remote import server
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
    from controller.gitsources.service import reconcile_now
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
    names = ", ".join(spec.name for spec in specs)
    with progress(f"reconciling {names}: fetch, validate, plan, apply"):
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


# Asked of the server when it is known (DRIFTGATE_URL or --url, with an org key), the way the
# other remote commands are; else read from the config file and the store here, and said so.
_where = options(
    api.server_options,
    output_format,
    click.option(
        "--local",
        is_flag=True,
        help="Read the config file (--config) and the store here even when DRIFTGATE_URL is set.",
    ),
)


@sources.command("list")
@_where
@click.pass_obj
def sources_list(
    obj: Context, url: str | None, api_key: str | None, output_format: str, local: bool
) -> None:
    """One line per source: readiness, applied revision, branch and path, last run.

    Asked of the server (DRIFTGATE_URL, DRIFTGATE_API_KEY: the sources of the key's org);
    without a server URL, or with --local, read from the config file and the store here.
    """
    if url and not local:
        with server(url, api_key) as http:
            listed = api.call(http, "GET", "/api/sources")
        emit(listed, output_format, lambda d: _source_rows(d.get("sources", [])))
        return
    from controller.gitsources import service as source_service

    settings = obj.settings()
    _say_local(obj, url)
    if not settings.sources:
        click.echo(
            "driftgate: no sources configured: add `sources:` to the config file (--config or "
            "DRIFTGATE_CONFIG); see docs/gitops.md",
            err=True,
        )
    with obj.transaction() as session:
        found = source_service.configured_sources(session, settings)
    document = {
        "sources": [
            {**out.model_dump(mode="json", by_alias=True), "org": org} for org, out in found
        ]
    }
    emit(document, output_format, lambda d: _source_rows(d["sources"], with_org=True))


@sources.command("status")
@click.argument("name")
@_where
@click.pass_obj
def sources_status(
    obj: Context, name: str, url: str | None, api_key: str | None, output_format: str, local: bool
) -> None:
    """The full status of one source as JSON (GET /api/sources/NAME), from the server or,
    without a server URL or with --local, from the config file and the store here."""
    if url and not local:
        with server(url, api_key) as http:
            found = api.call(http, "GET", f"/api/sources/{quote(name, safe='')}")
        click.echo(json.dumps(found, indent=2))
        return
    from controller.gitsources import service as source_service
    from controller.orgs.service import get_org

    settings = obj.settings()
    _say_local(obj, url)
    spec = settings.source(name)
    if spec is None:
        raise ConfigError(f"unknown source {name!r}")
    with obj.transaction() as session:
        org = get_org(session, spec.org)
        out = source_service.get_source(session, settings, org.id, name)
        click.echo(out.model_dump_json(by_alias=True, indent=2))


def _say_local(obj: Context, url: str | None) -> None:
    """Where the answer comes from, on stderr: not a server."""
    config = f"the config file {obj.config}" if obj.config else "the settings (no --config)"
    why = "--local" if url else "no DRIFTGATE_URL"
    click.echo(
        f"driftgate: reading {config} and the store here, not a server ({why}; set "
        "DRIFTGATE_URL and DRIFTGATE_API_KEY to ask one)",
        err=True,
    )


def _source_rows(found: list[dict[str, Any]], with_org: bool = False) -> list[str]:
    """The table of `sources list`; its ORG column when the sources of several orgs are
    listed (read from the config file here)."""
    rows = []
    for source in found:
        conditions = source.get("conditions") or []
        ready: dict[str, Any] = next((c for c in conditions if c.get("type") == "Ready"), {})
        state = "suspended" if source.get("suspended") else ready.get("reason") or "NotReconciled"
        runs = source.get("runs") or []
        last = f"{runs[0]['result']} {runs[0]['at']}" if runs else "-"
        org = (source.get("org", "-"),) if with_org else ()
        rows.append(
            (
                source["name"],
                *org,
                state,
                (source.get("lastAppliedRevision") or "-")[:12],
                f"{source['branch']}:{source['path']}",
                last,
            )
        )
    header = (
        "NAME",
        *(("ORG",) if with_org else ()),
        "STATE",
        "APPLIED",
        "BRANCH:PATH",
        "LAST RUN",
    )
    return table(rows, header, {2 if with_org else 1: style.paint})
