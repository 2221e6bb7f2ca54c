"""`driftgate validate`: check a `.driftgate/` directory offline, as a CI job before a merge.

Exit codes: 0 valid (a one-line summary), 1 problems found (each as file:line:column:
message), 2 the directory is missing or unreadable. Nothing is fetched or stored.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import NoReturn

import click

from controller.gitops import FILES, Bundle, Problem, load_bundle
from controller.gitops.load import MAX_FILE_BYTES
from controller.model.gitops import InlineWatch

_CANDIDATE_SUFFIXES = (".yaml", ".yml", ".json")


@click.command()
@click.argument("directory", default=".driftgate", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "github"]),
    default="text",
    show_default=True,
    help="text: file:line:column: message; json: one document; github: workflow annotations.",
)
@click.option(
    "--template",
    "templates",
    multiple=True,
    metavar="NAME",
    help="A template that exists outside templates.yaml (built-in or org); repeatable.",
)
def validate(directory: Path, output_format: str, templates: tuple[str, ...]) -> None:
    """Check the .driftgate/ files offline: schema, references, secrets.

    DIRECTORY is the .driftgate directory itself or a repository root that contains one.
    """
    target = _find_directory(directory)
    files = _read_files(target)
    shown = target.as_posix()
    from controller.model.catalog import SYSTEM_TEMPLATES

    known = {*templates, *SYSTEM_TEMPLATES}
    bundle = load_bundle(files, directory=shown, known_templates=known)
    if not bundle.problems and not any(name in files for name in FILES):
        _fail(f"{shown} has none of {', '.join(FILES)}")
    counts = summarize(bundle)
    if output_format == "json":
        document = {
            "valid": bundle.ok,
            "directory": shown,
            "summary": counts,
            "problems": [problem.to_json() for problem in bundle.problems],
        }
        click.echo(json.dumps(document, indent=2))
    else:
        for problem in bundle.problems:
            click.echo(_github(problem) if output_format == "github" else str(problem))
        if bundle.ok:
            click.echo(
                f"{shown}: valid: {_plural(counts['agents'], 'agent')}, "
                f"{_plural(counts['templates'], 'template')}, "
                f"{_plural(counts['watchSets'], 'watch set')}, "
                f"{_plural(counts['watches'], 'watch', 'watches')}"
            )
    if not bundle.ok:
        click.echo(f"driftgate: {_plural(len(bundle.problems), 'problem')} in {shown}", err=True)
        sys.exit(1)


def summarize(bundle: Bundle) -> dict[str, int]:
    """Counts of what the bundle declares; `watches` counts watch-set entries and inline
    watches of agents (each becomes a watch in the org)."""
    agents = bundle.agents.agents if bundle.agents else []
    sets = bundle.watch_sets.watch_sets if bundle.watch_sets else []
    inline = sum(isinstance(watch, InlineWatch) for agent in agents for watch in agent.watches)
    return {
        "agents": len(agents),
        "templates": len(bundle.templates.templates) if bundle.templates else 0,
        "watchSets": len(sets),
        "watches": sum(len(watch_set.watches) for watch_set in sets) + inline,
    }


def _find_directory(directory: Path) -> Path:
    nested = directory / ".driftgate"
    if nested.is_dir():
        return nested
    if directory.is_dir():
        return directory
    if directory.exists():
        _fail(f"{directory} is not a directory")
    _fail(f"no such directory: {directory}")


def _read_files(directory: Path) -> dict[str, bytes]:
    """The FILES present, and near misses (`agents.yml`) for the loader to point out."""
    try:
        entries = sorted(directory.iterdir())
        files = {}
        for entry in entries:
            near_miss = entry.suffix.lower() in _CANDIDATE_SUFFIXES and entry.is_file()
            if entry.name in FILES or near_miss:
                with entry.open("rb") as handle:
                    files[entry.name] = handle.read(MAX_FILE_BYTES + 1)
        return files
    except OSError as exc:
        _fail(f"cannot read {exc.filename or directory}: {exc.strerror or exc}")


def _github(problem: Problem) -> str:
    # GitHub workflow command escaping: data escapes % CR LF; properties also : and ,.
    def data(text: str) -> str:
        return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")

    def prop(text: str) -> str:
        return data(text).replace(":", "%3A").replace(",", "%2C")

    return (
        f"::error file={prop(problem.file)},line={problem.line},col={problem.column}"
        f"::{data(problem.message)}"
    )


def _plural(count: int, singular: str, plural: str | None = None) -> str:
    return f"{count} {singular if count == 1 else plural or singular + 's'}"


def _fail(message: str) -> NoReturn:
    click.echo(f"driftgate: error: {message}", err=True)
    sys.exit(2)
