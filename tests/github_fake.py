"""A loopback GitHub for the draft pull request tests.

It checks what a real GitHub would: the App JWT (RS256, signed by the App's key, `iss` the App
id, not expired) on `/app/...` calls, an installation token it issued on repository calls,
and that the installation may reach the repository. It keeps repositories, refs, commits,
trees, pulls, labels and comments in memory. Every request body and every response it sends
is validated against GitHub's published REST description (the operations used, cut from the
real document by `tests/github_description.py` into `tests/fixtures/github/`), so the client
cannot drift from GitHub's API and the fake cannot answer what GitHub would not. Responses are
built from the description's schemas (every required field) with the values that matter set.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import jsonschema
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests import github_description
from tests.servers import Loopback, QuietHandler

APP_ID = 424242


@cache
def description() -> dict[str, Any]:
    """GitHub's REST description, with OpenAPI 3.0 `nullable` turned into JSON Schema types."""
    document = github_description.load()
    return {"paths": document["paths"], "components": _nullable(document["components"])}


def _nullable(node: Any) -> Any:
    if isinstance(node, list):
        return [_nullable(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _nullable(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable"):
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        if "$ref" in out or "allOf" in out or "anyOf" in out or "oneOf" in out:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def _schema(operation: dict[str, Any], status: str | None) -> dict[str, Any] | None:
    if status is None:
        body = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
    else:
        answer = operation["responses"].get(status, {})
        if "$ref" in answer:
            answer = _resolve(answer["$ref"])
        body = answer.get("content", {}).get("application/json", {})
    schema = body.get("schema")
    return None if schema is None else {**schema, "components": description()["components"]}


def _resolve(ref: str) -> Any:
    node: Any = description()
    for part in ref.lstrip("#/").split("/"):
        node = node[part]
    return node


def validate(method: str, template: str, status: str | None, value: Any) -> None:
    """Raise when `value` is not what GitHub's description says for this operation: its
    request body (`status` None) or its answer with `status`."""
    operation = description()["paths"][template][method.lower()]
    schema = _schema(operation, status)
    if schema is None:
        return
    jsonschema.validate(value, schema, cls=jsonschema.Draft7Validator)


def example(pointer: str, **values: Any) -> dict[str, Any]:
    """An instance of the component schema at `pointer` with every required field, then
    `values`."""
    instance = _example(_resolve(pointer), 0)
    instance.update(values)
    return instance


def _example(schema: dict[str, Any], depth: int) -> Any:
    if "$ref" in schema:
        return _example(_resolve(schema["$ref"]), depth + 1)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"]
            return _example(options[0], depth + 1)
    if "allOf" in schema:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(_example(part, depth + 1))
        return merged
    kind = schema.get("type")
    if isinstance(kind, list):
        if "null" in kind:
            return None
        kind = kind[0]
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object" or "properties" in schema:
        return {
            name: _example(schema["properties"][name], depth + 1)
            for name in schema.get("required", [])
            if name in schema.get("properties", {})
        }
    if kind == "array":
        return []
    if kind == "integer":
        return 1
    if kind == "number":
        return 1.0
    if kind == "boolean":
        return False
    fmt = schema.get("format")
    if fmt == "date-time":
        return "2026-01-01T00:00:00Z"
    if fmt == "uri":
        return "https://github.example/x"
    if fmt == "email":
        return "x@example.invalid"
    return "x"


class Revoked(Exception):
    """The installation token's installation is gone."""


@dataclass
class Repository:
    full_name: str
    default_branch: str = "main"
    allow_drafts: bool = True
    refs: dict[str, str] = field(default_factory=dict)  # branch -> commit sha
    commits: dict[str, dict[str, Any]] = field(default_factory=dict)  # sha -> {tree, parents}
    trees: dict[str, dict[str, str]] = field(default_factory=dict)  # sha -> {path: content}
    pulls: list[dict[str, Any]] = field(default_factory=list)
    comments: list[tuple[int, str]] = field(default_factory=list)
    labels: dict[int, list[str]] = field(default_factory=dict)

    def files(self, branch: str) -> dict[str, str]:
        return self.trees[self.commits[self.refs[branch]]["tree"]]


@dataclass
class Installation:
    id: int
    account: str
    account_id: int
    repositories: set[str]
    created_at: datetime
    suspended: bool = False
    read_only: bool = False  # contents and pull requests granted read, not write


class FakeGitHub:
    """The loopback GitHub: `url` is its API base; `calls` lists (method, path, status)."""

    def __init__(self) -> None:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.private_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        self.public_key = key.public_key()
        self.repositories: dict[str, Repository] = {}
        self.installations: dict[int, Installation] = {}
        self.accounts: dict[str, int] = {}  # login -> GitHub's account id
        self.tokens: dict[str, tuple[int, datetime]] = {}
        self.calls: list[tuple[str, str, int]] = []
        # What a real GitHub would have refused (a bad token, a body not as described): the
        # fake answers 500 and the test's fixture fails on any of these.
        self.problems: list[str] = []
        self.rate_limited = 0  # answer this many calls with a primary rate limit
        self.lock = threading.Lock()
        self.loopback = Loopback(self._handler())

    # -- setup --------------------------------------------------------------------------------

    def add_repository(self, full_name: str, *, allow_drafts: bool = True) -> Repository:
        repo = Repository(full_name, allow_drafts=allow_drafts)
        tree = self._sha("tree", full_name)
        repo.trees[tree] = {"README.md": f"# {full_name}\n"}
        commit = self._sha("commit", full_name)
        repo.commits[commit] = {"tree": tree, "parents": [], "message": "initial"}
        repo.refs["main"] = commit
        self.repositories[full_name] = repo
        return repo

    def add_installation(
        self, installation_id: int, account: str, *repos: str, created_at: datetime | None = None
    ) -> Installation:
        """The App installed on `account` (now, unless `created_at`) for `repos`."""
        account_id = self.accounts.setdefault(account, 1000 + len(self.accounts))
        found = Installation(
            installation_id, account, account_id, set(repos), created_at or datetime.now(UTC)
        )
        self.installations[installation_id] = found
        return found

    def writes(self) -> list[str]:
        """What was asked to change on GitHub: every call but reads and App tokens."""
        return [
            f"{method} {path}"
            for method, path, _ in self.calls
            if method != "GET" and not path.endswith("/access_tokens")
        ]

    @property
    def url(self) -> str:
        return self.loopback.url("")

    def start(self) -> FakeGitHub:
        self.loopback.start()
        return self

    def stop(self) -> None:
        self.loopback.stop()

    @classmethod
    @contextmanager
    def serving(cls, *repositories: str) -> Iterator[FakeGitHub]:
        """A started fake holding `repositories`, stopped afterwards; it must have seen no
        request its description refuses."""
        fake = cls()
        for repository in repositories:
            fake.add_repository(repository)
        fake.start()
        try:
            yield fake
        finally:
            fake.stop()
        assert fake.problems == []

    def paths(self) -> list[str]:
        return [f"{method} {path}" for method, path, _ in self.calls]

    @staticmethod
    def _sha(*parts: str) -> str:
        return hashlib.sha1("\n".join([*parts, secrets.token_hex(4)]).encode()).hexdigest()

    # -- serving ------------------------------------------------------------------------------

    def _handler(self) -> type[QuietHandler]:
        fake = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:  # noqa: N802
                self._serve("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._serve("POST")

            def do_PATCH(self) -> None:  # noqa: N802
                self._serve("PATCH")

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                status, answer, headers = fake.dispatch(method, self.path, dict(self.headers), body)
                self.answer(status, json.dumps(answer).encode(), headers=headers)

        return Handler

    def dispatch(
        self, method: str, target: str, headers: dict[str, str], body: Any
    ) -> tuple[int, Any, dict[str, str]]:
        parts = urlsplit(target)
        path = unquote(parts.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        try:
            with self.lock:
                status, template, answer, extra = self._route(method, path, query, headers, body)
                self.calls.append((method, path, status))
            if template is not None:
                # What GitHub answers, by its own description (errors included).
                validate(method, template, str(status), answer)
        except Exception as exc:  # noqa: BLE001 - a test fails on it (see `problems`)
            self.problems.append(f"{method} {path}: {type(exc).__name__}: {str(exc)[:300]}")
            return 500, {"message": "the fake GitHub refused this call"}, {}
        return status, answer, extra

    def _route(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        headers: dict[str, str],
        body: Any,
    ) -> tuple[int, str | None, Any, dict[str, str]]:
        assert headers.get("X-GitHub-Api-Version") == "2022-11-28", headers
        assert headers.get("Accept") == "application/vnd.github+json", headers
        assert headers.get("User-Agent", "").startswith("driftgate/"), headers
        if self.rate_limited:
            self.rate_limited -= 1
            reset = int((datetime.now(UTC) + timedelta(seconds=30)).timestamp())
            limited = {"message": "API rate limit exceeded", "documentation_url": "https://docs"}
            return (
                403,
                None,
                limited,
                {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
            )
        for pattern, verb, template, handler in ROUTES:
            match = re.fullmatch(pattern, path)
            if match and verb == method:
                if body is not None:
                    validate(method, template, None, body)  # what the client sent
                try:
                    status, answer = handler(self, match.groupdict(), query, headers, body or {})
                except Revoked:
                    return (
                        401,
                        None,
                        {"message": "Bad credentials", "documentation_url": "https://docs"},
                        {},
                    )
                return status, template, answer, {}
        return 404, None, {"message": "Not Found", "documentation_url": "https://docs"}, {}

    # -- authentication -----------------------------------------------------------------------

    def _app(self, headers: dict[str, str]) -> None:
        token = headers.get("Authorization", "").removeprefix("Bearer ")
        claims = jwt.decode(
            token, self.public_key, algorithms=["RS256"], options={"require": ["exp", "iat", "iss"]}
        )
        assert str(claims["iss"]) == str(APP_ID), claims
        assert claims["exp"] - claims["iat"] <= 600, claims

    def _installation(self, headers: dict[str, str], repo: str) -> int | None:
        """The installation the token belongs to when it may reach `repo`, else None; a
        token of an installation that is gone raises `Revoked` (GitHub answers 401)."""
        token = headers.get("Authorization", "").removeprefix("Bearer ")
        assert token in self.tokens, "not an installation token this GitHub issued"
        installation_id, expires = self.tokens[token]
        assert expires > datetime.now(UTC), "expired installation token"
        found = self.installations.get(installation_id)
        if found is None:
            raise Revoked
        if found.suspended or repo not in found.repositories:
            return None
        return installation_id

    # -- handlers -----------------------------------------------------------------------------

    def access_token(
        self, path: dict[str, str], query: Any, headers: Any, body: Any
    ) -> tuple[int, Any]:
        self._app(headers)
        installation = self.installations.get(int(path["installation_id"]))
        if installation is None:
            return 404, {"message": "Not Found", "documentation_url": "https://docs"}
        token = "ghs_" + secrets.token_urlsafe(24)
        expires = datetime.now(UTC) + timedelta(hours=1)
        self.tokens[token] = (installation.id, expires)
        return 201, example(
            "#/components/schemas/installation-token",
            token=token,
            expires_at=expires.isoformat().replace("+00:00", "Z"),
        )

    def installation(
        self, path: dict[str, str], query: Any, headers: Any, body: Any
    ) -> tuple[int, Any]:
        self._app(headers)
        found = self.installations.get(int(path["installation_id"]))
        if found is None:
            return 404, {"message": "Not Found", "documentation_url": "https://docs"}
        account = example(
            "#/components/schemas/simple-user", login=found.account, id=found.account_id
        )
        return 200, example(
            "#/components/schemas/installation",
            id=found.id,
            account=account,
            repository_selection="selected",
            created_at=found.created_at.isoformat().replace("+00:00", "Z"),
            suspended_at="2026-01-01T00:00:00Z" if found.suspended else None,
        )

    def _repo(self, path: dict[str, str], headers: Any) -> Repository | None:
        name = f"{path['owner']}/{path['repo']}"
        if self._installation(headers, name) is None:
            return None
        return self.repositories.get(name)

    def get_repo(
        self, path: dict[str, str], query: Any, headers: Any, body: Any
    ) -> tuple[int, Any]:
        repo = self._repo(path, headers)
        if repo is None:
            return 404, {"message": "Not Found", "documentation_url": "https://docs"}
        return 200, example(
            "#/components/schemas/full-repository",
            full_name=repo.full_name,
            name=repo.full_name.split("/")[1],
            default_branch=repo.default_branch,
        )

    def get_ref(self, path: dict[str, str], query: Any, headers: Any, body: Any) -> tuple[int, Any]:
        repo = self._repo(path, headers)
        branch = path["ref"].removeprefix("heads/")
        if repo is None or branch not in repo.refs:
            return 404, {"message": "Not Found", "documentation_url": "https://docs"}
        return 200, self._ref_answer(branch, repo.refs[branch])

    @staticmethod
    def _ref_answer(branch: str, sha: str) -> dict[str, Any]:
        target = example("#/components/schemas/git-ref/properties/object", sha=sha, type="commit")
        return example("#/components/schemas/git-ref", ref=f"refs/heads/{branch}", object=target)

    def create_ref(
        self, path: dict[str, str], query: Any, headers: Any, body: Any
    ) -> tuple[int, Any]:
        repo = self._repo(path, headers)
        assert repo is not None
        branch = body["ref"].removeprefix("refs/heads/")
        if branch in repo.refs:
            return 422, {"message": "Reference already exists", "documentation_url": "https://docs"}
        assert body["sha"] in repo.commits
        repo.refs[branch] = body["sha"]
        return 201, self._ref_answer(branch, body["sha"])

    def get_commit(
        self, path: dict[str, str], query: Any, headers: Any, body: Any
    ) -> tuple[int, Any]:
        repo = self._repo(path, headers)
        if repo is None or path["sha"] not in repo.commits:
            return 404, {"message": "Not Found", "documentation_url": "https://docs"}
        return 200, self._commit_answer(path["sha"], repo.commits[path["sha"]])

    @staticmethod
    def _commit_answer(sha: str, commit: dict[str, Any]) -> dict[str, Any]:
        tree = example("#/components/schemas/git-commit/properties/tree", sha=commit["tree"])
        return example(
            "#/components/schemas/git-commit", sha=sha, tree=tree, message=commit["message"]
        )

    def create_tree(
        self, path: dict[str, str], query: Any, headers: Any, body: Any
    ) -> tuple[int, Any]:
        repo = self._repo(path, headers)
        if repo is None:
            return 404, {"message": "Not Found", "documentation_url": "https://docs"}
        installation = self.installations[
            self.tokens[headers["Authorization"].removeprefix("Bearer ")][0]
        ]
        if installation.read_only:
            return 403, {
                "message": "Resource not accessible by integration",
                "documentation_url": "https://docs",
            }
        files = dict(repo.trees[body["base_tree"]]) if body.get("base_tree") else {}
        for entry in body["tree"]:
            files[entry["path"]] = entry["content"]
        sha = self._sha("tree", json.dumps(files, sort_keys=True))
        repo.trees[sha] = files
        return 201, example("#/components/schemas/git-tree", sha=sha, tree=[])

    def create_commit(
        self, path: dict[str, str], query: Any, headers: Any, body: Any
    ) -> tuple[int, Any]:
        repo = self._repo(path, headers)
        if repo is None:
            return 404, {"message": "Not Found", "documentation_url": "https://docs"}
        assert body["tree"] in repo.trees and all(p in repo.commits for p in body["parents"])
        sha = self._sha("commit", body["message"])
        repo.commits[sha] = {
            "tree": body["tree"],
            "parents": body["parents"],
            "message": body["message"],
        }
        return 201, self._commit_answer(sha, repo.commits[sha])

    def list_pulls(
        self, path: dict[str, str], query: dict[str, str], headers: Any, body: Any
    ) -> tuple[int, Any]:
        repo = self._repo(path, headers)
        if repo is None:
            return 404, {"message": "Not Found", "documentation_url": "https://docs"}
        owner, _, branch = query.get("head", ":").partition(":")
        found = [
            self._pull_answer(repo, p, simple=True)
            for p in repo.pulls
            if p["head"] == branch and owner == repo.full_name.split("/")[0]
        ]
        return 200, found

    def create_pull(
        self, path: dict[str, str], query: Any, headers: Any, body: Any
    ) -> tuple[int, Any]:
        repo = self._repo(path, headers)
        if repo is None:
            return 403, {
                "message": "Resource not accessible by integration",
                "documentation_url": "https://docs",
            }
        if body.get("draft") and not repo.allow_drafts:
            return 422, {
                "message": "Validation Failed",
                "errors": [
                    {
                        "resource": "PullRequest",
                        "code": "custom",
                        "message": "Draft pull requests are not supported in this repository.",
                    }
                ],
                "documentation_url": "https://docs",
            }
        if body["head"] not in repo.refs:
            return 422, {"message": "Validation Failed", "documentation_url": "https://docs"}
        if any(p["head"] == body["head"] and p["state"] == "open" for p in repo.pulls):
            return 422, {
                "message": "Validation Failed",
                "errors": [
                    {
                        "resource": "PullRequest",
                        "code": "custom",
                        "message": "A pull request already exists",
                    }
                ],
                "documentation_url": "https://docs",
            }
        pull = {
            "number": len(repo.pulls) + 1,
            "head": body["head"],
            "base": body["base"],
            "title": body["title"],
            "body": body.get("body"),
            "draft": bool(body.get("draft")),
            "state": "open",
            "merged": False,
        }
        repo.pulls.append(pull)
        return 201, self._pull_answer(repo, pull, simple=False)

    def _pull_answer(
        self, repo: Repository, pull: dict[str, Any], *, simple: bool
    ) -> dict[str, Any]:
        name = "pull-request-simple" if simple else "pull-request"
        url = f"https://github.example/{repo.full_name}/pull/{pull['number']}"
        values: dict[str, Any] = {
            "number": pull["number"],
            "html_url": url,
            "state": pull["state"],
            "draft": pull["draft"],
            "title": pull["title"],
            "merged_at": "2026-01-02T00:00:00Z" if pull["merged"] else None,
        }
        answer = example(f"#/components/schemas/{name}", **values)
        # The branches it joins, as GitHub names them (the description's example has others).
        answer["head"] = {**copy.deepcopy(answer.get("head", {})), "ref": pull["head"]}
        answer["base"] = {**copy.deepcopy(answer.get("base", {})), "ref": pull["base"]}
        return answer

    def add_labels(
        self, path: dict[str, str], query: Any, headers: Any, body: Any
    ) -> tuple[int, Any]:
        repo = self._repo(path, headers)
        assert repo is not None
        number = int(path["number"])
        repo.labels.setdefault(number, []).extend(body["labels"])
        return 200, [example("#/components/schemas/label", name=n) for n in repo.labels[number]]

    def comment(self, path: dict[str, str], query: Any, headers: Any, body: Any) -> tuple[int, Any]:
        repo = self._repo(path, headers)
        assert repo is not None
        repo.comments.append((int(path["number"]), body["body"]))
        return 201, self._comment_answer(repo, len(repo.comments) - 1)

    def list_comments(
        self, path: dict[str, str], query: dict[str, str], headers: Any, body: Any
    ) -> tuple[int, Any]:
        """A page of an issue's comments, oldest first (`per_page` at most 100, `page`)."""
        repo = self._repo(path, headers)
        if repo is None:
            return 404, {"message": "Not Found", "documentation_url": "https://docs"}
        number = int(path["number"])
        per_page = min(int(query.get("per_page", "30")), 100)
        page = int(query.get("page", "1"))
        ours = [i for i, (n, _) in enumerate(repo.comments) if n == number]
        shown = ours[(page - 1) * per_page : page * per_page]
        return 200, [self._comment_answer(repo, i) for i in shown]

    def update_comment(
        self, path: dict[str, str], query: Any, headers: Any, body: Any
    ) -> tuple[int, Any]:
        repo = self._repo(path, headers)
        index = int(path["comment_id"]) - COMMENT_IDS
        if repo is None or not 0 <= index < len(repo.comments):
            return 404, {"message": "Not Found", "documentation_url": "https://docs"}
        repo.comments[index] = (repo.comments[index][0], body["body"])
        return 200, self._comment_answer(repo, index)

    @staticmethod
    def _comment_answer(repo: Repository, index: int) -> dict[str, Any]:
        number, text = repo.comments[index]
        comment_id = COMMENT_IDS + index
        return example(
            "#/components/schemas/issue-comment",
            id=comment_id,
            body=text,
            html_url=f"https://github.example/{repo.full_name}/pull/{number}#issuecomment-{comment_id}",
        )

    def workflow_token(self, repo: str) -> str:
        """A token like a workflow's `GITHUB_TOKEN`: an installation token of `repo` alone."""
        installation_id = 9000 + len(self.installations)
        self.add_installation(installation_id, repo.split("/")[0], repo)
        token = "ghs_" + secrets.token_urlsafe(24)
        self.tokens[token] = (installation_id, datetime.now(UTC) + timedelta(hours=1))
        return token


COMMENT_IDS = 5_000_000  # a comment's id is this plus its index in `Repository.comments`


_REPO = r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"
ROUTES: list[tuple[str, str, str, Any]] = [
    (
        r"/app/installations/(?P<installation_id>\d+)/access_tokens",
        "POST",
        "/app/installations/{installation_id}/access_tokens",
        FakeGitHub.access_token,
    ),
    (
        r"/app/installations/(?P<installation_id>\d+)",
        "GET",
        "/app/installations/{installation_id}",
        FakeGitHub.installation,
    ),
    (_REPO, "GET", "/repos/{owner}/{repo}", FakeGitHub.get_repo),
    (
        _REPO + r"/git/ref/(?P<ref>.+)",
        "GET",
        "/repos/{owner}/{repo}/git/ref/{ref}",
        FakeGitHub.get_ref,
    ),
    (_REPO + r"/git/refs", "POST", "/repos/{owner}/{repo}/git/refs", FakeGitHub.create_ref),
    (
        _REPO + r"/git/commits/(?P<sha>[0-9a-f]+)",
        "GET",
        "/repos/{owner}/{repo}/git/commits/{commit_sha}",
        FakeGitHub.get_commit,
    ),
    (_REPO + r"/git/trees", "POST", "/repos/{owner}/{repo}/git/trees", FakeGitHub.create_tree),
    (
        _REPO + r"/git/commits",
        "POST",
        "/repos/{owner}/{repo}/git/commits",
        FakeGitHub.create_commit,
    ),
    (_REPO + r"/pulls", "GET", "/repos/{owner}/{repo}/pulls", FakeGitHub.list_pulls),
    (_REPO + r"/pulls", "POST", "/repos/{owner}/{repo}/pulls", FakeGitHub.create_pull),
    (
        _REPO + r"/issues/(?P<number>\d+)/labels",
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels",
        FakeGitHub.add_labels,
    ),
    (
        _REPO + r"/issues/(?P<number>\d+)/comments",
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        FakeGitHub.list_comments,
    ),
    (
        _REPO + r"/issues/(?P<number>\d+)/comments",
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        FakeGitHub.comment,
    ),
    (
        _REPO + r"/issues/comments/(?P<comment_id>\d+)",
        "PATCH",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        FakeGitHub.update_comment,
    ),
]


def merge(fake: FakeGitHub, repo: str, number: int) -> None:
    """A person merged the pull request on GitHub."""
    for pull in fake.repositories[repo].pulls:
        if pull["number"] == number:
            pull["state"], pull["merged"] = "closed", True


def delivery(
    fake: FakeGitHub, event: str, action: str, repo: str, number: int = 0, installation: int = 0
) -> dict[str, Any]:
    """A webhook payload shaped like GitHub's for `event` (`pull_request`, `installation`)."""
    account = example("#/components/schemas/simple-user", login=repo.split("/")[0])
    repository = example(
        "#/components/schemas/repository", full_name=repo, name=repo.split("/")[1], owner=account
    )
    payload: dict[str, Any] = {
        "action": action,
        "sender": account,
        "installation": {"id": installation, "node_id": "x"},
    }
    if event == "pull_request":
        for pull in fake.repositories[repo].pulls:
            if pull["number"] == number:
                answer = fake._pull_answer(fake.repositories[repo], pull, simple=False)
                answer["merged"] = pull["merged"]
                payload.update(number=number, pull_request=answer, repository=repository)
    else:
        payload["installation"] = example(
            "#/components/schemas/installation", id=installation, account=account
        )
    return payload
