"""`driftgate scan`, `driftgate coverage` and `driftgate suggest`: the contracts a checkout or a
configuration depends on, and whether the org watches them (for CI). See docs/discovery.md.

`scan` runs offline (the same code as `POST /api/repo/scan`); `coverage` and `suggest` ask a
running server (`DRIFTGATE_URL`, `DRIFTGATE_API_KEY`). Exit codes: 0 done (coverage: covered),
1 (coverage) something found is not watched, 2 a usage error, unreadable input or an error
answer. A failing `coverage` prints the commands that cover what it found: a watch per
remote contract, an acknowledgement (`scan --acknowledge`, into `.driftgate/coverage.yaml`)
per local stdio server."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

import click

from cli import api
from cli.common import fail
from cli.output import emit, table
from cli.progress import Progress, progress
from cli.remote import server, server_command

MAX_FILES = 5000
MAX_FILE_BYTES = 1024 * 1024


def checkout_files(directory: str, line: Progress | None = None) -> list[tuple[str, bytes]]:
    """The files of `directory` (relative paths), without `.git/` and what `.gitignore` rules
    ignore when it is a git checkout; at most 5,000, each at most 1 MB (larger: empty). The
    progress `line` counts them."""
    import pygit2

    root = Path(directory).resolve()
    if not root.is_dir():
        fail(f"{directory} is not a directory")
    repo = None
    try:
        found = pygit2.discover_repository(str(root))
        repo = pygit2.Repository(found) if found else None
    except pygit2.GitError:
        repo = None
    workdir = Path(repo.workdir).resolve() if repo is not None and repo.workdir else None
    files: list[tuple[str, bytes]] = []
    for current, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(names):
            path = Path(current) / name
            relative = path.relative_to(root).as_posix()
            if workdir is not None:
                inside = path.relative_to(workdir).as_posix()
                if repo is not None and repo.path_is_ignored(inside):
                    continue
            if path.is_symlink() or not path.is_file():
                continue
            size = path.stat().st_size
            files.append((relative, path.read_bytes() if size <= MAX_FILE_BYTES else b"\0"))
            if line is not None:
                line.say(f"scanning {directory}: {len(files)} files read")
            if len(files) > MAX_FILES:
                fail(f"{directory} has more than {MAX_FILES} files; scan a smaller directory")
    return files


def _candidate_rows(candidates: list[dict[str, Any]]) -> list[str]:
    rows = [
        (
            c["watchType"],
            c["name"],
            c.get("url") or c.get("command") or "-",
            f"{c['source'].get('file') or '-'}:{c['source'].get('line') or '-'}",
            f"{c['confidence']:.2f}",
        )
        for c in candidates
    ]
    lines = table(rows, ("TYPE", "NAME", "URL OR COMMAND", "WHERE", "CONFIDENCE"))
    for c in candidates:
        if c.get("acknowledged"):
            lines.append(f"note: {c['name']} is acknowledged in .driftgate/coverage.yaml")
        elif c.get("floatingVersion"):
            lines.append(f"note: {c['name']} runs the newest {c.get('package')}: a drift risk")
    return lines


def _sarif(candidates: list[dict[str, Any]]) -> dict[str, Any]:
    results = []
    for c in candidates:
        location: dict[str, Any] = {"artifactLocation": {"uri": c["source"].get("file") or "."}}
        if c["source"].get("line"):
            location["region"] = {"startLine": c["source"]["line"]}
        results.append(
            {
                "ruleId": f"contract-{c['watchType']}",
                "level": "note",
                "message": {"text": f"{c['name']}: {c.get('url') or c.get('command')}"},
                "locations": [{"physicalLocation": location}],
            }
        )
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "driftgate-scan"}}, "results": results}],
    }


def watch_set_fragment(
    candidates: list[dict[str, Any]], name: str = "discovered", min_confidence: float = 0.0
) -> str:
    """A `.driftgate/watch-sets.yaml` for the remote candidates at or above `min_confidence`
    (what the coverage gate asserts): a GitOps fix of a failing coverage job is a commit of
    it."""
    import yaml

    watches = [
        {"name": c["name"], "url": c["url"], "watchType": c["watchType"]}
        for c in candidates
        if c.get("url") and c.get("confidence", 1.0) >= min_confidence
    ]
    document = {"version": 1, "watchSets": [{"name": name, "watches": watches}]}
    return str(yaml.safe_dump(document, sort_keys=False))


@click.command()
@click.argument("directory", default=".", required=False)
@click.option(
    "--format", "output_format", type=click.Choice(["text", "json", "sarif"]), default="text"
)
@click.option(
    "--emit",
    "emit_kind",
    type=click.Choice(["watch-set"]),
    help="watch-set: print a .driftgate/watch-sets.yaml for the remote candidates that the "
    "coverage gate asserts (--min-confidence)",
)
@click.option(
    "--min-confidence",
    type=click.FloatRange(0, 1),
    default=0.7,
    show_default=True,
    help="with --emit: leave out candidates below it, as the coverage gate does",
)
@click.option(
    "--acknowledge",
    "acknowledge",
    multiple=True,
    metavar="NAME",
    help="record that the local (stdio) MCP server NAME runs unwatched on purpose, in "
    "DIRECTORY/.driftgate/coverage.yaml (commit it): the coverage gate accepts it while its "
    "command line stays the same (repeatable)",
)
@click.option("--reason", help="with --acknowledge: why it may run unwatched (kept in the file)")
def scan(
    directory: str,
    output_format: str,
    emit_kind: str | None,
    min_confidence: float,
    acknowledge: tuple[str, ...],
    reason: str | None,
) -> None:
    """Find the contracts a checkout depends on (offline; .gitignore respected)."""
    from controller.discovery import service

    if reason is not None and not acknowledge:
        fail("--reason goes with --acknowledge NAME")
    if acknowledge:
        if emit_kind or output_format != "text":
            fail("--acknowledge writes .driftgate/coverage.yaml: use it without --emit/--format")
        _acknowledge(directory, acknowledge, reason)
        return
    shown = output_format == "text" and not emit_kind
    with progress(f"scanning {directory}", shown=shown) as working:
        files = checkout_files(directory, working)
        working.say(f"looking for contracts in {len(files)} files")
        result = service.scan_files_out(files)
    document = result.model_dump(by_alias=True)
    candidates = document["candidates"]
    if emit_kind:
        click.echo(watch_set_fragment(candidates, min_confidence=min_confidence), nl=False)
        return
    if output_format == "json":
        click.echo(json.dumps(document, indent=2))
    elif output_format == "sarif":
        click.echo(json.dumps(_sarif(candidates), indent=2))
    else:
        for line in _candidate_rows(candidates):
            click.echo(line)
        for problem in document["problems"]:
            click.echo(f"problem: {problem}")
        click.echo(
            f"{len(candidates)} contract(s) in {document['filesRead']} file(s); skipped "
            f"{document['skippedBinary']} binary and {document['skippedLarge']} large"
        )


def _acknowledge(directory: str, names: tuple[str, ...], reason: str | None) -> None:
    """Add (or renew) the acknowledgements of the stdio servers `names` found in `directory`
    to its `.driftgate/coverage.yaml`; the others in the file are kept."""
    from pydantic import ValidationError

    from controller.discovery.acknowledgements import render
    from controller.discovery.scan import scan_files
    from controller.model.coverage import ACK_FILE, Acknowledgement

    result = scan_files(checkout_files(directory))
    if result.acknowledgements_invalid is not None:
        fail(f"{result.acknowledgements_invalid.message}; fix or remove the file first")
    local = [c for c in result.candidates if c.transport == "stdio" and c.command]
    unknown = sorted({name for name in names if not any(c.name == name for c in local)})
    if unknown:
        found = ", ".join(sorted({c.name for c in local})) or "none"
        fail(
            f"no local (stdio) MCP server named {', '.join(unknown)} in {directory} "
            f"(the local servers found: {found})"
        )
    chosen = [c for c in local if c.name in names]
    kept = [
        ack
        for ack in result.acknowledgements
        # Renewed: an older acknowledgement of the same name whose command is gone.
        if ack.name not in names or any(ack.covers(c) for c in result.candidates)
    ]
    added = []
    for candidate in chosen:
        previous = next((ack for ack in kept if ack.covers(candidate)), None)
        if previous is not None:
            if reason is not None:
                kept[kept.index(previous)] = previous.model_copy(update={"reason": reason})
            continue
        assert candidate.command is not None
        try:
            ack = Acknowledgement(name=candidate.name, command=candidate.command, reason=reason)
        except ValidationError as exc:
            problem = exc.errors()[0]
            fail(f"cannot acknowledge {candidate.name}: {problem['loc'][0]} {problem['msg']}")
        kept.append(ack)
        added.append(candidate)
    target = Path(directory) / ACK_FILE
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(kept), encoding="utf-8")
    except (OSError, ValueError) as exc:
        fail(f"cannot write {target}: {exc}")
    for candidate in chosen:
        state = "acknowledged" if candidate in added else "already acknowledged"
        click.echo(f"{state}: {candidate.name} ({candidate.command})")
        if candidate.floating_version:
            click.echo(
                f"note: {candidate.name} runs the newest {candidate.package}: a release can "
                "change its tools unnoticed; pin a version so that an upgrade needs a new "
                "acknowledgement"
            )
    click.echo(f"wrote {target}: commit it, and the coverage gate accepts them")


@click.command()
@click.argument("directory", default=".", required=False)
@click.option("--min-confidence", type=float, default=0.7, show_default=True)
@click.option(
    "--format", "output_format", type=click.Choice(["text", "json", "github"]), default="text"
)
@click.option("--url", "url", envvar="DRIFTGATE_URL", help="The server (DRIFTGATE_URL).")
@click.option(
    "--key", "api_key", envvar="DRIFTGATE_API_KEY", help="An API key (DRIFTGATE_API_KEY)."
)
@click.pass_context
def coverage(
    ctx: click.Context,
    directory: str,
    min_confidence: float,
    output_format: str,
    url: str | None,
    api_key: str | None,
) -> None:
    """Fail (exit 1) when a contract the checkout depends on is not watched by the org (or,
    for a local stdio server, acknowledged in .driftgate/coverage.yaml); print the fix."""
    from controller.discovery.scan import relevant

    # Only the files the scan reads: a large checkout still fits in one request.
    files = [
        {"path": path, "content": data.decode("utf-8", "replace")}
        for path, data in checkout_files(directory)
        if relevant(path) and b"\0" not in data[:8192]
    ]
    with server(url, api_key) as http:
        status, answer = api.send(
            http,
            "POST",
            "/api/coverage/assert",
            json={"files": files, "minConfidence": min_confidence},
        )
        missing_watches = isinstance(answer, dict) and answer.get("error") == "missing_watches"
        if status != 200 and not (status == 422 and missing_watches):
            raise api.refusal(status, answer, api.shown(http.base_url))
    missing = answer.get("missing", []) if isinstance(answer, dict) else []
    from_command_line = ctx.get_parameter_source("url") == click.core.ParameterSource.COMMANDLINE
    fix = fix_commands(missing, directory, url if from_command_line else None)
    if output_format == "json":
        click.echo(json.dumps(answer, indent=2))
    elif output_format == "github":
        for m in missing:
            where = m["source"]
            line = f",line={where['line']}" if where.get("line") else ""
            target = m.get("url") or m.get("command")
            file = where.get("file") or "."
            click.echo(f"::error file={file}{line}::{m['name']} ({target}) {_unwatched(m)}")
        for line in fix:
            click.echo(line)
    else:
        if missing:
            click.echo(f"{len(missing)} contract(s) are not watched:")
            for m in missing:
                where = m["source"]
                target = m.get("url") or m.get("command")
                place = f"{where.get('file')}:{where.get('line') or '-'}"
                local = "  (a local stdio server)" if _is_local(m) else ""
                click.echo(f"  {place}  {m['name']}  {target}{local}")
            for line in fix:
                click.echo(line)
        else:
            acknowledged = answer.get("acknowledged", []) if isinstance(answer, dict) else []
            suffix = (
                f" ({len(acknowledged)} local server(s) acknowledged in .driftgate/coverage.yaml)"
                if acknowledged
                else ""
            )
            click.echo(f"covered: every contract found is watched{suffix}")
    raise SystemExit(1 if status == 422 else 0)


def _is_local(missing: dict[str, Any]) -> bool:
    return not missing.get("url") and (
        missing.get("transport") == "stdio" or bool(missing.get("command"))
    )


def _unwatched(missing: dict[str, Any]) -> str:
    if _is_local(missing):
        return "is a local stdio server that is not acknowledged in .driftgate/coverage.yaml"
    return "is not watched"


def fix_commands(missing: list[dict[str, Any]], directory: str, url: str | None) -> list[str]:
    """What covers `missing`, as commands to run in the current directory: a watch of each
    remote contract (`watches create`), an acknowledgement of the local stdio servers
    (`scan --acknowledge`, written to the checkout's `.driftgate/coverage.yaml`)."""
    remote = [m for m in missing if m.get("url")]
    local = sorted({m["name"] for m in missing if _is_local(m)})
    if not remote and not local:
        return []
    lines = ["to cover them, run:"]
    server = f" --url {shlex.quote(url)}" if url else ""
    for m in remote:
        lines.append(
            f"  driftgate watches create {shlex.quote(m['name'])} {shlex.quote(m['url'])} "
            f"--type {m['watchType']}{server}"
        )
    if local:
        names = " ".join(f"--acknowledge {shlex.quote(name)}" for name in local)
        lines.append(f"  driftgate scan {shlex.quote(directory)} {names}")
        written = (Path(directory) / ".driftgate" / "coverage.yaml").as_posix()
        lines.append(
            f"and commit {written}: a local server has no URL to watch; the "
            "acknowledgement holds while its command line stays the same"
        )
    if remote:
        lines.append(
            "(watches kept in git instead: `driftgate scan "
            f"{shlex.quote(directory)} --emit watch-set` prints a .driftgate/watch-sets.yaml "
            "for a GitOps source)"
        )
    return lines


@click.command()
@click.option("--config", "config_file", required=True, help="An MCP client configuration file.")
@click.option("--create", is_flag=True, help="Create watches for the new remote servers.")
@server_command
def suggest(
    config_file: str, create: bool, url: str | None, api_key: str | None, output_format: str
) -> None:
    """Suggest watches for the servers of an MCP client configuration (nothing is started)."""
    try:
        text = Path(config_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read {config_file}: {exc}")
    body = {"mcpJson": text, "fileName": config_file, "create": create}
    with server(url, api_key) as http:
        answer = api.call(http, "POST", "/api/watches/suggest", json=body)

    def text_lines(document: dict[str, Any]) -> list[str]:
        lines = _candidate_rows(document["candidates"])
        if document["created"]:
            lines.append(f"created {len(document['created'])} watch(es)")
        return lines

    emit(answer, output_format, text_lines)
