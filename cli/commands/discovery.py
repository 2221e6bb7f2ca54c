"""`driftgate scan`, `driftgate coverage` and `driftgate suggest`: the contracts a checkout or a
configuration depends on, and whether the org watches them (for CI). See docs/discovery.md.

`scan` runs offline (the same code as `POST /api/repo/scan`); `coverage` and `suggest` ask a
running server (`DRIFTGATE_URL`, `DRIFTGATE_API_KEY`). Exit codes: 0 done (coverage: covered),
1 (coverage) something found is not watched, 2 a usage error, unreadable input or an error
answer."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from cli import api
from cli.common import fail
from cli.progress import Progress, progress
from cli.remote import emit, server, server_command, table

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
        if c.get("floatingVersion"):
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


def watch_set_fragment(candidates: list[dict[str, Any]], name: str = "discovered") -> str:
    """A `.driftgate/watch-sets.yaml` for the remote candidates: the fix of a failing coverage
    job is a commit of it."""
    import yaml

    watches = [
        {"name": c["name"], "url": c["url"], "watchType": c["watchType"]}
        for c in candidates
        if c.get("url")
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
    help="watch-set: print a .driftgate/watch-sets.yaml for the remote candidates",
)
def scan(directory: str, output_format: str, emit_kind: str | None) -> None:
    """Find the contracts a checkout depends on (offline; .gitignore respected)."""
    from controller.discovery import service

    shown = output_format == "text" and not emit_kind
    with progress(f"scanning {directory}", shown=shown) as working:
        files = checkout_files(directory, working)
        working.say(f"looking for contracts in {len(files)} files")
        result = service.scan_files_out(files)
    document = result.model_dump(by_alias=True)
    candidates = document["candidates"]
    if emit_kind:
        click.echo(watch_set_fragment(candidates), nl=False)
        return
    if output_format == "json":
        click.echo(json.dumps(document, indent=2))
    elif output_format == "sarif":
        click.echo(json.dumps(_sarif(candidates), indent=2))
    else:
        for line in _candidate_rows(candidates):
            click.echo(line)
        click.echo(
            f"{len(candidates)} contract(s) in {document['filesRead']} file(s); skipped "
            f"{document['skippedBinary']} binary and {document['skippedLarge']} large"
        )


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
def coverage(
    directory: str, min_confidence: float, output_format: str, url: str | None, api_key: str | None
) -> None:
    """Fail (exit 1) when a contract the checkout depends on is not watched by the org."""
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
    if output_format == "json":
        click.echo(json.dumps(answer, indent=2))
    elif output_format == "github":
        for m in missing:
            where = m["source"]
            line = f",line={where['line']}" if where.get("line") else ""
            target = m.get("url") or m.get("command")
            file = where.get("file") or "."
            click.echo(f"::error file={file}{line}::{m['name']} ({target}) is not watched")
    else:
        if missing:
            click.echo(f"{len(missing)} contract(s) are not watched:")
            for m in missing:
                where = m["source"]
                target = m.get("url") or m.get("command")
                place = f"{where.get('file')}:{where.get('line') or '-'}"
                click.echo(f"  {place}  {m['name']}  {target}")
            click.echo("driftgate scan --emit watch-set prints the watch set that covers them")
        else:
            click.echo("covered: every contract found is watched")
    raise SystemExit(1 if status == 422 else 0)


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
