"""`driftgate audit`: audit exports."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cli.common import Context


@click.group()
def audit() -> None:
    """Audit exports."""


@audit.command("verify")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.pass_obj
def audit_verify(obj: Context, path: str) -> None:
    """Check the signature of an audit export; exit 1 when it does not verify."""
    from controller.crypto import load_secret_box
    from controller.drift.export_service import AuditVerificationError, verify_audit

    box = load_secret_box(obj.settings())
    try:
        document = verify_audit(Path(path).read_bytes(), box)
    except AuditVerificationError as exc:
        click.echo(f"driftgate: audit file does not verify: {exc}", err=True)
        sys.exit(1)
    click.echo(
        f"verified: {len(document.get('events', []))} events, exported {document.get('exportedAt')}"
    )
