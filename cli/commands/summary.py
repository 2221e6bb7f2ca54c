"""`driftgate summary`: the weekly summary e-mail of an org, printed or sent now."""

from __future__ import annotations

import click

from cli.common import Context, fail, format_option


@click.command()
@click.option("--org", "org_name", required=True, help="the org's name or id")
@click.option(
    "--send",
    is_flag=True,
    help="queue it for every recipient and deliver it now (else print it)",
)
@format_option("text", "html", "json", help="how to print it (without --send)")
@click.pass_obj
def summary(obj: Context, org_name: str, send: bool, output_format: str) -> None:
    """Print this week's summary e-mail of an org, or `--send` it to its recipients now
    (through the org's SMTP relay; deliveries count in the alert stats as channel email).
    The controller sends it on its own once a week when the org opted in."""
    from controller.crypto import load_secret_box
    from controller.errors import Unprocessable
    from controller.events.channels import delivering
    from controller.events.delivery import deliver_due
    from controller.orgs.service import get_org
    from controller.sources.http import configured_client
    from controller.store.types import utcnow
    from controller.summary import compose, service

    settings = obj.settings()
    box = load_secret_box(settings)
    now = utcnow()
    with obj.transaction() as session:
        org = get_org(session, org_name)
        if not send:
            figures = service.figures(session, org, now)
        else:
            try:
                ids = service.queue(session, box, settings, org, now)
            except Unprocessable as exc:
                fail(exc.message)
    if not send:
        link = "<each recipient's own unsubscribe link>"
        if output_format == "json":
            click.echo(figures.model_dump_json(by_alias=True, indent=2))
        elif output_format == "html":
            click.echo(compose.render_html(figures, link), nl=False)
        else:
            click.echo(f"Subject: {compose.subject(figures)}\n")
            click.echo(compose.render_text(figures, link), nl=False)
        return
    database = obj.database()
    channels = delivering(
        service.channels(settings, database, box), settings.delivery_deadline_seconds
    )
    with configured_client(settings) as client:
        deliver_due(database, box, client, now, ids=ids, channels=channels)
    failed = 0
    for status, hint, error in service.delivered(database, ids):
        if status == "delivered":
            click.echo(f"sent to {hint}")
        else:
            failed += 1
            click.echo(f"not sent to {hint}: {error}; the controller retries it", err=True)
    if failed:
        raise SystemExit(1)
