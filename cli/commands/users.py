"""`driftgate users`: console accounts (create with a one-time set-password link, list,
reset)."""

from __future__ import annotations

import click

from cli.common import CLI_ACTOR, Context
from cli.output import emit, output_format, table, when


@click.group()
def users() -> None:
    """Console accounts of an org: people who sign in at /console."""


def _base(obj: Context) -> str:
    settings = obj.settings()
    return settings.public_base_url or f"http://{settings.host}:{settings.port}"


@users.command("create")
@click.option("--org", "org_name", required=True, help="the org's name or id")
@click.option("--email", required=True, help="the person's e-mail address (their sign-in)")
@click.option(
    "--role",
    type=click.Choice(["admin", "viewer"]),
    default="viewer",
    show_default=True,
    help="admin may change things; viewer reads",
)
@click.pass_obj
def users_create(obj: Context, org_name: str, email: str, role: str) -> None:
    """Create a user and print the one-time link that sets their password (72 hours)."""
    from controller.accounts import service
    from controller.orgs.service import get_org
    from controller.store.types import utcnow

    with obj.transaction() as session:
        org = get_org(session, org_name)
        user, token = service.create_user(session, org, email, role, actor=CLI_ACTOR, now=utcnow())
        click.echo(f"created {user.role} {user.email} in org {org.name}")
    click.echo(f"set-password link (once, 72 hours): {service.setup_link(_base(obj), token)}")


@users.command("reset")
@click.option("--email", required=True)
@click.pass_obj
def users_reset(obj: Context, email: str) -> None:
    """Print a new one-time set-password link for a user (the old password keeps working
    until the new one is set)."""
    from controller.accounts import service
    from controller.store.types import utcnow

    with obj.transaction() as session:
        user = service.find_user(session, email)
        token = service.reset_link(session, user, actor=CLI_ACTOR, now=utcnow())
    click.echo(f"set-password link (once, 72 hours): {service.setup_link(_base(obj), token)}")


@users.command("list")
@click.option("--org", "org_name", required=True)
@output_format
@click.pass_obj
def users_list(obj: Context, org_name: str, output_format: str) -> None:
    """List an org's users with their roles and last sign-in."""
    from controller.accounts import service
    from controller.orgs.service import get_org

    with obj.transaction() as session:
        org = get_org(session, org_name)
        found = [
            {
                "email": user.email,
                "role": user.role,
                "state": "active" if user.password_hash else "invited",
                "lastSignInAt": user.last_sign_in_at and when(user.last_sign_in_at),
            }
            for user in service.members(session, org.id)
        ]
    rows = [(u["email"], u["role"], u["state"], u["lastSignInAt"] or "never") for u in found]
    header = ("EMAIL", "ROLE", "STATE", "LAST SIGN-IN")
    emit({"users": found}, output_format, lambda _: table(rows, header))
