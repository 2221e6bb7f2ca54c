"""GitHub's REST description, cut to what the loopback GitHub (`tests/github_fake.py`) uses.

The fake validates every request body and answer against GitHub's published description and
builds its answers from the description's schemas. The whole document is 4 MB and lives outside
the repository (`../shared/bench/openapi/github-2022-07-18.json`), so the repository holds a
cut of it (`tests/fixtures/github/`, source and licence in the README there): the operations in
`OPERATIONS` (operation id, request body and answers, each media type's schema only) and every
component they and `COMPONENTS` reference, transitively, verbatim.

Regenerate after changing what the fake uses:
`python -m tests.github_description --write [--source PATH]`;
`tests/draftpr/test_github_description.py` keeps the cut complete, and equal to a new cut when
the whole document is beside the clone.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "github" / "rest-api-2022-07-18.json"
# The whole document, when a checkout has the shared benchmark data beside it.
SOURCE = Path(__file__).resolve().parents[2] / "shared/bench/openapi/github-2022-07-18.json"

# (template, method) of every operation the fake serves.
OPERATIONS: tuple[tuple[str, str], ...] = (
    ("/app/installations/{installation_id}/access_tokens", "post"),
    ("/app/installations/{installation_id}", "get"),
    ("/repos/{owner}/{repo}", "get"),
    ("/repos/{owner}/{repo}/git/ref/{ref}", "get"),
    ("/repos/{owner}/{repo}/git/refs", "post"),
    ("/repos/{owner}/{repo}/git/commits/{commit_sha}", "get"),
    ("/repos/{owner}/{repo}/git/trees", "post"),
    ("/repos/{owner}/{repo}/git/commits", "post"),
    ("/repos/{owner}/{repo}/pulls", "get"),
    ("/repos/{owner}/{repo}/pulls", "post"),
    ("/repos/{owner}/{repo}/issues/{issue_number}/labels", "post"),
    ("/repos/{owner}/{repo}/issues/{issue_number}/comments", "get"),
    ("/repos/{owner}/{repo}/issues/{issue_number}/comments", "post"),
    ("/repos/{owner}/{repo}/issues/comments/{comment_id}", "patch"),
)
# Component schemas the fake builds answers and webhook payloads from (`github_fake.example`).
COMPONENTS: tuple[str, ...] = (
    "full-repository",
    "git-commit",
    "git-ref",
    "git-tree",
    "installation",
    "installation-token",
    "issue-comment",
    "label",
    "pull-request",
    "pull-request-simple",
    "repository",
    "simple-user",
)


def load() -> dict[str, Any]:
    """The cut the repository holds."""
    document: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return document


def cut(document: dict[str, Any]) -> dict[str, Any]:
    """The parts of the whole description that the fake uses, in the document's order."""
    paths: dict[str, dict[str, Any]] = {}
    wanted: list[str] = [f"#/components/schemas/{name}" for name in COMPONENTS]
    for template, method in OPERATIONS:
        operation = document["paths"][template][method]
        kept = {
            "operationId": operation["operationId"],
            **{
                key: _schemas_only(operation[key])
                for key in ("requestBody", "responses")
                if key in operation
            },
        }
        paths.setdefault(template, {})[method] = kept
        wanted += _refs(kept)
    found: set[tuple[str, str]] = set()
    while wanted:
        kind, name = wanted.pop().removeprefix("#/components/").split("/")[:2]
        if (kind, name) not in found:
            found.add((kind, name))
            wanted += _refs(_component(document, kind, name))
    components: dict[str, dict[str, Any]] = {}
    for kind, members in document["components"].items():
        for name in members:
            if (kind, name) in found:
                components.setdefault(kind, {})[name] = _component(document, kind, name)
    return {
        "openapi": document["openapi"],
        "info": {key: document["info"][key] for key in ("title", "version", "license")},
        "paths": paths,
        "components": components,
    }


def _component(document: dict[str, Any], kind: str, name: str) -> Any:
    value = document["components"][kind][name]
    return _schemas_only(value) if kind in ("responses", "requestBodies") else value


def dump(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def _schemas_only(node: Any) -> Any:
    """A request body, an answer, or an operation's answers (status -> answer), with each media
    type object reduced to its schema: the fake never reads examples, most of an answer's size."""
    if not isinstance(node, dict) or "$ref" in node:
        return node
    if "content" in node:
        content = {
            kind: {key: value for key, value in media.items() if key == "schema"}
            for kind, media in node["content"].items()
        }
        return {**node, "content": content}
    return {key: value if key == "schema" else _schemas_only(value) for key, value in node.items()}


def _refs(node: Any) -> list[str]:
    if isinstance(node, list):
        return [ref for item in node for ref in _refs(item)]
    if not isinstance(node, dict):
        return []
    own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
    return own + [ref for key, value in node.items() if key != "$ref" for ref in _refs(value)]


def main() -> None:
    parser = argparse.ArgumentParser(description="Cut GitHub's REST description for the fake.")
    parser.add_argument("--source", type=Path, default=SOURCE, help="the whole description")
    parser.add_argument("--write", action="store_true", help=f"write {FIXTURE.name}")
    args = parser.parse_args()
    text = dump(cut(json.loads(args.source.read_text(encoding="utf-8"))))
    if args.write:
        FIXTURE.parent.mkdir(parents=True, exist_ok=True)
        FIXTURE.write_text(text, encoding="utf-8")
    print(f"{len(text)} characters{' written to ' + str(FIXTURE) if args.write else ''}")


if __name__ == "__main__":
    main()
