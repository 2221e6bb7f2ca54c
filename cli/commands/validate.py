"""`driftgate validate`: check a `.driftgate/` directory offline, as a CI job before a merge.

The hosted product's `.driftguard/agents.yaml` beside it is checked with it (its other files
are the hosted harness's and are not read); so is a `.driftguard` directory given alone.

Exit codes: 0 valid (a one-line summary), 1 problems found (each as file:line:column:
message), 2 the directory is missing or unreadable, or a file it reads cannot be read (a
link, a directory, a FIFO, over the limit, not UTF-8: printed like the other problems).
Nothing is fetched or stored.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from cli.common import format_option

if TYPE_CHECKING:  # imported when the command runs: `driftgate validate --help` loads none
    from controller.gitsources.load import Bundle, Problem
    from controller.model.gitops import Unreadable, UnreadableKind


@click.command()
@click.argument("directory", default=".driftgate", type=click.Path(path_type=Path))
@format_option(
    "text",
    "json",
    "github",
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

    DIRECTORY is the .driftgate directory itself or a repository root that contains one
    (a .driftguard/agents.yaml beside it is checked too), or a .driftguard directory.
    """
    from controller.gitsources.load import FILES, HOSTED_AGENTS, WATCH_SETS, load_bundle
    from controller.model.catalog import SYSTEM_TEMPLATES
    from controller.toollock.hosted import HOSTED_LOCK

    target, hosted = _directories(directory)
    for folder in (target, hosted):
        mode = None if folder is None else _mode(folder)
        if mode is not None and stat.S_ISLNK(mode):
            # A server refuses the revision (it reads no link): say so here, not "valid".
            _fail(f"{folder} is a symbolic link: commit the directory itself")
    files, unreadable = _read_files(target) if target.is_dir() else ({}, {})
    if hosted is not None and _mode(hosted / "agents.yaml") is not None:
        read = _read_regular(hosted / "agents.yaml")
        if isinstance(read, bytes):
            files[HOSTED_AGENTS] = read
        else:
            unreadable[HOSTED_AGENTS] = read
    # The hosted product's MCP lock, read as reconcile reads it (`controller.toollock`).
    hosted_lock = None if hosted is None else hosted.parent / HOSTED_LOCK
    if hosted_lock is not None and _mode(hosted_lock) is not None:
        read = _read_regular(hosted_lock)
        if isinstance(read, bytes):
            files[HOSTED_LOCK] = read
        else:
            unreadable[HOSTED_LOCK] = read
    shown = target.as_posix() if target.is_dir() or hosted is None else hosted.as_posix()

    known = {*templates, *SYSTEM_TEMPLATES}
    bundle = load_bundle(
        files, directory=target.as_posix(), known_templates=known, unreadable=unreadable
    )
    if not bundle.problems and not any(
        name in (*FILES, HOSTED_AGENTS) or name.startswith(f"{WATCH_SETS}/") for name in files
    ):
        _fail(f"{shown} has none of {', '.join(FILES)}, {WATCH_SETS}/*.yaml, {HOSTED_AGENTS}")
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
    unread = sum(problem.unread for problem in bundle.problems)
    if unread:
        # A server would stall on these too; CI must tell "cannot read" from "invalid".
        click.echo(
            f"driftgate: error: cannot read {_plural(unread, 'file')} in {shown} "
            f"({_plural(len(bundle.problems), 'problem')} in all, above)",
            err=True,
        )
        sys.exit(2)
    if not bundle.ok:
        click.echo(f"driftgate: {_plural(len(bundle.problems), 'problem')} in {shown}", err=True)
        sys.exit(1)


def summarize(bundle: Bundle) -> dict[str, int]:
    """Counts of what the bundle declares; `watches` counts watch-set entries and inline
    watches of agents (each becomes a watch in the org)."""
    from controller.model.gitops import InlineWatch

    agents = bundle.agents.agents if bundle.agents else []
    sets = bundle.watch_sets.watch_sets if bundle.watch_sets else []
    inline = sum(isinstance(watch, InlineWatch) for agent in agents for watch in agent.watches)
    return {
        "agents": len(agents),
        "templates": len(bundle.templates.templates) if bundle.templates else 0,
        "watchSets": len(sets),
        "watches": sum(len(watch_set.watches) for watch_set in sets) + inline,
    }


def _directories(directory: Path) -> tuple[Path, Path | None]:
    """The `.driftgate` directory to read (it may be absent when only the hosted one is
    there) and the hosted `.driftguard` directory beside it, if any."""
    from controller.gitsources.load import HOSTED_DIRECTORY

    if directory.name == HOSTED_DIRECTORY and directory.is_dir():
        return directory.parent / ".driftgate", directory
    if (directory / HOSTED_DIRECTORY).is_dir() and not (directory / ".driftgate").is_dir():
        return directory / ".driftgate", directory / HOSTED_DIRECTORY
    beside = directory.parent / HOSTED_DIRECTORY
    if directory.name == ".driftgate" and not directory.exists() and beside.is_dir():
        return directory, beside  # `driftgate validate` in a repository with only .driftguard/
    target = _find_directory(directory)
    hosted = target.parent / HOSTED_DIRECTORY
    return target, hosted if target.name == ".driftgate" and hosted.is_dir() else None


def _find_directory(directory: Path) -> Path:
    nested = directory / ".driftgate"
    if nested.is_dir():
        return nested
    if directory.is_dir():
        return directory
    if directory.exists():
        _fail(f"{directory} is not a directory")
    _fail(f"no such directory: {directory}")


def _read_files(directory: Path) -> tuple[dict[str, bytes], dict[str, Unreadable]]:
    """The files the loader reads (FILES, near misses such as `agents.yml`,
    `profiles/*.json|yaml` and `watch-sets/*.yaml`), and why any of them was not read, by the
    rules of a git source:
    a symbolic link, a directory, a FIFO or other special file, a file over the per-file limit
    or past the total is a problem at its path, never followed, opened for a blocking read or
    read whole."""
    from controller.gitsources.load import PROFILES, WATCH_SETS, is_read
    from controller.model.gitops import MAX_REVISION_BYTES, Unreadable

    files: dict[str, bytes] = {}
    unreadable: dict[str, Unreadable] = {}
    total = 0
    try:
        entries = [(entry.name, entry) for entry in sorted(directory.iterdir())]
        for folder in (PROFILES, WATCH_SETS):
            mode = _mode(directory / folder)
            if mode is not None and stat.S_ISDIR(mode):
                inside = sorted((directory / folder).iterdir())
                entries += [(f"{folder}/{e.name}", e) for e in inside]
            elif mode is not None:
                unreadable[folder] = Unreadable(_kind(mode) or "file")
        for name, entry in entries:
            if name in (PROFILES, WATCH_SETS) or not is_read(name):
                continue
            read = _read_regular(entry)
            if isinstance(read, Unreadable):
                unreadable[name] = read
            elif total + len(read) > MAX_REVISION_BYTES:
                unreadable[name] = Unreadable("over_total", limit=MAX_REVISION_BYTES)
            else:
                total += len(read)
                files[name] = read
        return files, unreadable
    except OSError as exc:
        _fail(f"cannot read {exc.filename or directory}: {exc.strerror or exc}")


def _mode(path: Path) -> int | None:
    """The mode of `path` itself (a link is not followed); None when nothing is there."""
    try:
        return path.lstat().st_mode
    except FileNotFoundError:
        return None


def _kind(mode: int) -> UnreadableKind | None:
    """Why a path of `mode` cannot be read as a file; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "symlink"
    return "directory" if stat.S_ISDIR(mode) else "special"


def _read_regular(path: Path) -> bytes | Unreadable:
    """The content of `path` when it is a regular file within MAX_FILE_BYTES. The size is
    looked at before reading, and the file is opened without following a link and without
    waiting (a FIFO put there after the look must not hang the command)."""
    from controller.model.gitops import MAX_FILE_BYTES, Unreadable

    looked = path.lstat()
    kind = _kind(looked.st_mode)
    if kind is not None:
        return Unreadable(kind)
    if looked.st_size > MAX_FILE_BYTES:
        return Unreadable("too_large", looked.st_size, MAX_FILE_BYTES)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Unreadable("symlink")
        raise
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(handle.fileno())
        kind = _kind(status.st_mode)
        if kind is not None:  # replaced after the look
            return Unreadable(kind)
        if status.st_size > MAX_FILE_BYTES:
            return Unreadable("too_large", status.st_size, MAX_FILE_BYTES)
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:  # it grew after the look
        return Unreadable("too_large", len(data), MAX_FILE_BYTES)
    return data


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
