"""`driftgate version`."""

from __future__ import annotations

import click

from controller import __version__


@click.command()
def version() -> None:
    """Print the driftgate version."""
    click.echo(f"driftgate {__version__}")
