"""`driftgate diff` and `compare`: offline diffs of two contracts or two JSON payloads, as a
report in the chosen format, with an exit code for CI."""

from __future__ import annotations

import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import click

from cli import style
from cli.common import options
from cli.progress import Progress, progress
from controller.contracts.kinds import CONTRACT_KINDS

_TYPES = click.Choice(["auto", *CONTRACT_KINDS.diff_types()])
_THRESHOLDS = click.Choice(["breaking", "warning", "info", "never"])
_FORMATS = click.Choice(["text", "json", "markdown", "github", "sarif", "junit"])


_report_options = options(
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
        help="Rules file: severity overrides, ignores (with reasons) and waivers (with an "
        "owner and an expiry; an expired one does not apply and is said on stderr).",
    ),
    click.option(
        "--markdown-max-chars",
        type=click.IntRange(min=1000),
        default=60_000,
        show_default=True,
        help="--format markdown: keep the report under this many characters (GitHub refuses "
        "comments over 65,536); the summary and top causes stay, rows that do not fit are "
        "counted.",
    ),
    click.option(
        "--annotations",
        type=click.IntRange(min=0),
        default=9,
        show_default=True,
        help="--format github: how many changes to annotate, most severe first, besides the "
        "summary annotation (GitHub shows ten of a kind per step).",
    ),
    click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, writable=True),
        help="Write the report to a file instead of stdout.",
    ),
)


def _emit(
    report: Any,
    fmt: str,
    fail_on: str,
    output: str | None,
    markdown_max_chars: int,
    annotations: int,
    line: Progress,
) -> None:
    from controller.diffruns.offline_service import render_report

    line.say(f"writing the {fmt} report of {sum(report.counts.values())} changes")
    text = render_report(
        report, fmt, fail_on, markdown_max_chars=markdown_max_chars, annotations=annotations
    )
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        line.stop()
        if fmt == "text" and style.enabled():
            text = "".join(style.report_line(row, on=True) for row in text.splitlines(True))
        click.echo(text, nl=False)
    sys.exit(1 if report.reaches(fail_on) else 0)


def _say_expired(rules_file: Any, today: date | None) -> None:
    """Each waiver of the rules file that has expired, on stderr: it does not apply."""
    from controller.diffruns.offline_service import expired_waivers

    for waiver in expired_waivers(rules_file, today or datetime.now(UTC).date()):
        where = waiver.operation or waiver.path or waiver.tool or "every place"
        click.echo(
            f"driftgate: the waiver of {waiver.rule} ({where}, owner {waiver.owner}) expired "
            f"on {waiver.expires.isoformat()}: its findings count again",
            err=True,
        )


@click.command()
@click.argument("base")
@click.argument("revision")
@click.option("--type", "contract_type", type=_TYPES, default="auto", show_default=True)
@click.option(
    "--today",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    help="The date sunset windows are judged on (default: today, UTC): removing an "
    "operation before its x-sunset date is breaking.",
)
@click.option(
    "--flat",
    is_flag=True,
    help="One change per operation, as the engines find them, instead of one per cause "
    "with the operations it affects.",
)
@click.option(
    "--check-version",
    is_flag=True,
    help="Also report breaking changes whose document kept, lowered or only minor-bumped "
    "its info.version (api-version-not-bumped, -decreased, api-major-version-not-bumped).",
)
@_report_options
def diff(
    base: str,
    revision: str,
    contract_type: str,
    today: datetime | None,
    flat: bool,
    check_version: bool,
    fail_on: str,
    fmt: str,
    markdown_max_chars: int,
    annotations: int,
    rules: str | None,
    output: str | None,
) -> None:
    """Diff two contracts (files or http(s) URLs): OpenAPI, MCP snapshots or JSON.

    Exit 0 when nothing reaches --fail-on, 1 when something does, 2 when an input cannot be
    read or parsed.
    """
    from controller.diffruns.offline_service import diff_contracts, load_rules

    rules_file = load_rules(rules) if rules else None
    if rules_file is not None:
        _say_expired(rules_file, today.date() if today else None)
    with progress(f"diffing {base} and {revision}", shown=fmt == "text") as line:
        report = diff_contracts(
            base,
            revision,
            contract_type=contract_type,
            rules=rules_file,
            today=today.date() if today else None,
            flat=flat,
            check_version=check_version,
        )
        _emit(report, fmt, fail_on, output, markdown_max_chars, annotations, line)


@click.command()
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
    markdown_max_chars: int,
    annotations: int,
    rules: str | None,
    output: str | None,
) -> None:
    """Compare two JSON payloads by their inferred schemas (the offline `compare_json`)."""
    from controller.diffruns.offline_service import compare_payloads, load_rules

    rules_file = load_rules(rules) if rules else None
    if rules_file is not None:
        _say_expired(rules_file, None)
    with progress(f"comparing {base} and {revision}", shown=fmt == "text") as line:
        report = compare_payloads(base, revision, profile=profile, rules=rules_file)  # type: ignore[arg-type]
        _emit(report, fmt, fail_on, output, markdown_max_chars, annotations, line)
