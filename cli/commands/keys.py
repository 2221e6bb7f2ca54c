"""`driftgate keys`: API keys (shown once, stored hashed)."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from cli.common import CLI_ACTOR, Context
from cli.output import emit, output_format, table, when


@click.group()
def keys() -> None:
    """Administer API keys (shown once, stored hashed)."""


@keys.command("create")
@click.option("--org", "org_name", required=True, help="Org name or id.")
@click.option("--name", default="", help="A label for the key.")
@click.pass_obj
def keys_create(obj: Context, org_name: str, name: str) -> None:
    """Create an API key; the key alone goes to stdout, once."""
    from controller.orgs import auth_service as auth
    from controller.orgs import service as org_service

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
@output_format
@click.pass_obj
def keys_list(obj: Context, org_name: str, output_format: str) -> None:
    """List an org's keys: id, hint, name, created, last used, revoked."""
    from controller.orgs import auth_service as auth
    from controller.orgs import service as org_service

    with obj.transaction() as session:
        found = [
            {
                "id": key.id,
                "hint": key.hint,
                "name": key.name,
                "createdAt": when(key.created_at),
                "lastUsedAt": key.last_used_at and when(key.last_used_at),
                "revokedAt": key.revoked_at and when(key.revoked_at),
            }
            for key in auth.list_api_keys(session, org_service.get_org(session, org_name))
        ]
    rows = [
        (
            k["id"],
            f"...{k['hint']}",
            k["name"] or "-",
            k["createdAt"],
            k["lastUsedAt"] or "never",
            f"revoked {k['revokedAt']}" if k["revokedAt"] else "active",
        )
        for k in found
    ]
    header = ("ID", "HINT", "NAME", "CREATED", "LAST USED", "STATE")
    emit({"keys": found}, output_format, lambda _: table(rows, header))


@keys.command("revoke")
@click.argument("key_id")
@click.option("--org", "org_name", help="Only a key of this org (name or id).")
@click.pass_obj
def keys_revoke(obj: Context, key_id: str, org_name: str | None) -> None:
    """Revoke a key by id (or a unique prefix of it); it stops working at once."""
    from controller.orgs import auth_service as auth
    from controller.orgs import service as org_service

    with obj.transaction() as session:
        org_id = org_service.get_org(session, org_name).id if org_name else None
        found = auth.find_api_key(session, key_id, org_id)
        key = auth.revoke_api_key(session, found, datetime.now(UTC), actor=CLI_ACTOR)
        click.echo(f"revoked key {key.id} (ends in {key.hint})")
