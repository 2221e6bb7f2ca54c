"""`driftgate keys`: API keys (shown once, stored hashed)."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from cli.common import CLI_ACTOR, Context


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
@click.pass_obj
def keys_list(obj: Context, org_name: str) -> None:
    """List an org's keys: id, hint, name, created, last used, revoked."""
    from controller.orgs import auth_service as auth
    from controller.orgs import service as org_service

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
