"""`driftgate orgs`: organizations, their plans, overlay products, webhook secret and GitHub
App installations (run on the server: the operator's commands)."""

from __future__ import annotations

from collections.abc import Callable

import click

from cli.common import CLI_ACTOR, Context
from cli.output import emit, output_format, table, when
from controller.model.hosted import PRODUCT_ALIASES
from controller.model.plans import PLANS, PRODUCTS, allows


@click.group()
def orgs() -> None:
    """Administer organizations (plans and overlay products)."""


@orgs.command("create")
@click.argument("name")
@click.option(
    "--plan",
    type=click.Choice(PLANS),
    help="Default: the server's default plan (setting default_plan, enterprise unless set; "
    "docs/plans.md says what each plan unlocks).",
)
@click.pass_obj
def orgs_create(obj: Context, name: str, plan: str | None) -> None:
    """Create an org."""
    from controller.orgs import service

    default_plan = obj.settings().default_plan
    with obj.transaction() as session:
        org = service.create_org(session, name, plan, actor=CLI_ACTOR, default_plan=default_plan)
        click.echo(f"created org {org.name} ({org.id}) on plan {org.plan}")


@orgs.command("list")
@click.option(
    "--trials",
    is_flag=True,
    help="Also list the sandbox orgs of trial sessions (marked `trial`, after the others).",
)
@output_format
@click.pass_obj
def orgs_list(obj: Context, trials: bool, output_format: str) -> None:
    """List orgs with their plans and products (name, plan, products, id); the sandbox orgs
    that trial sessions made are counted on stderr, and listed with --trials."""
    from controller.orgs import service

    with obj.transaction() as session:
        listed = service.list_orgs(session, trials=trials)
        found = [
            {
                "name": org.name,
                "plan": org.plan,
                "products": list(org.products),
                "id": org.id,
                "trial": bool(org.is_trial),
                "createdAt": when(org.created_at),
            }
            for org in listed
        ]
        rows: list[tuple[str, ...]] = [
            (org.name, org.plan, ",".join(org.products) or "-", org.id)
            # a fifth column, with --trials, says which orgs are trial sessions' sandboxes
            + ((("trial" if org.is_trial else "org"),) if trials else ())
            for org in listed
        ]
        hidden = 0 if trials else service.count_trial_orgs(session)
    header = ("NAME", "PLAN", "PRODUCTS", "ID") + (("KIND",) if trials else ())
    emit(
        {"orgs": found, "trialOrgsNotListed": hidden},
        output_format,
        lambda _: table(rows, header),
    )
    if hidden:
        click.echo(
            f"({hidden} trial org{'s' if hidden > 1 else ''} of trial sessions not listed: "
            "driftgate orgs list --trials)",
            err=True,
        )


@orgs.command("set-plan")
@click.argument("name")
@click.argument("plan", type=click.Choice(PLANS))
@click.pass_obj
def orgs_set_plan(obj: Context, name: str, plan: str) -> None:
    """Change an org's plan (moving to free switches overlay products off)."""
    from controller.orgs import service

    with obj.transaction() as session:
        org = service.set_plan(session, service.get_org(session, name), plan, actor=CLI_ACTOR)
        click.echo(f"org {org.name} is on plan {org.plan}")


def _product_command(enabled: bool) -> Callable[..., None]:
    @click.argument("name")
    @click.argument(
        "product", type=click.Choice([*PRODUCTS, *PRODUCT_ALIASES])
    )  # the hosted SKU names too: `mockdrift_cloud` is `replay_cloud`
    @click.pass_obj
    def command(obj: Context, name: str, product: str) -> None:
        from controller.orgs import service

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


@orgs.command("products")
@click.argument("name")
@output_format
@click.pass_obj
def orgs_products(obj: Context, name: str, output_format: str) -> None:
    """An org's overlay products, on or off (paid plans can enable them)."""
    from controller.orgs import service

    with obj.transaction() as session:
        org = service.get_org(session, name)
        enabled = [(product, product in org.products) for product in PRODUCTS]
        paid = allows(org.plan, "overlay_products")
    document = {
        "org": org.name,
        "plan": org.plan,
        "products": [{"product": p, "enabled": on} for p, on in enabled],
    }
    emit(
        document,
        output_format,
        lambda _: table([(p, "on" if on else "off") for p, on in enabled], ("PRODUCT", "STATE")),
    )
    if not paid and output_format == "text":
        click.echo(f"(org {org.name} is on the {org.plan} plan: products cannot be enabled)")


@orgs.command("webhook-secret")
@click.argument("name")
@click.option(
    "--rotate", is_flag=True, help="Replace the secret; receivers must switch to the new one."
)
@click.pass_obj
def orgs_webhook_secret(obj: Context, name: str, rotate: bool) -> None:
    """Print the org's webhook signing secret (whsec_...), creating or rotating it."""
    from controller.crypto import load_secret_box
    from controller.notifications import service as notifications
    from controller.orgs import service as org_service

    box = load_secret_box(obj.settings())
    with obj.transaction() as session:
        org = org_service.get_org(session, name)
        if rotate:
            secret = notifications.rotate_signing_secret(session, org.id, box, actor=CLI_ACTOR)
        else:
            secret = notifications.signing_secret(session, org.id, box)
    click.echo(secret)


@orgs.command("installations")
@click.argument("name", required=False)
@output_format
@click.pass_obj
def orgs_installations(obj: Context, name: str | None, output_format: str) -> None:
    """GitHub App installations linked to an org (or to every org), with how each link was
    proven (`legacy`: linked before ownership was checked; review those)."""
    from controller.draftpr import service as draftpr
    from controller.orgs import service

    with obj.transaction() as session:
        org = service.get_org(session, name) if name else None
        found = [
            {
                "org": org_name,
                "installationId": link.installation_id,
                "account": link.account or None,
                "status": link.status,
                "linkedBy": link.linked_by,
            }
            for org_name, link in draftpr.all_links(session, org)
        ]
    rows = [
        (i["org"], str(i["installationId"]), i["account"] or "-", i["status"], i["linkedBy"])
        for i in found
    ]
    header = ("ORG", "INSTALLATION", "ACCOUNT", "STATUS", "LINKED BY")
    emit({"installations": found}, output_format, lambda _: table(rows, header))


@orgs.command("link-installation")
@click.argument("name")
@click.argument("installation_id", type=click.IntRange(min=1, max=2**63 - 1))
@click.pass_obj
def orgs_link_installation(obj: Context, name: str, installation_id: int) -> None:
    """Link a GitHub App installation to an org as the server's admin, vouching that it is
    the org's (GitHub confirms the App has it; the App credentials are needed)."""
    from controller.draftpr import service as draftpr
    from controller.orgs import service

    # GitHub first: the store's transaction never waits on it.
    with draftpr.app_for(obj.settings()) as app:
        found = draftpr.verify_installation(app, installation_id)
    with obj.transaction() as session:
        org = service.get_org(session, name)
        link = draftpr.operator_link(session, org, installation_id, found, CLI_ACTOR)
        click.echo(f"linked installation {link.installation_id} ({link.account}) to org {org.name}")


@orgs.command("unlink-installation")
@click.argument("name")
@click.argument("installation_id", type=click.IntRange(min=1, max=2**63 - 1))
@click.pass_obj
def orgs_unlink_installation(obj: Context, name: str, installation_id: int) -> None:
    """Remove an org's link of a GitHub App installation (pull requests stop using it)."""
    from controller.draftpr import service as draftpr
    from controller.orgs import service

    with obj.transaction() as session:
        org = service.get_org(session, name)
        draftpr.operator_unlink(session, org, installation_id, CLI_ACTOR)
        click.echo(f"unlinked installation {installation_id} from org {org.name}")
