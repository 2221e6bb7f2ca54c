"""The GitHub App client: app JWTs, installation tokens and the few REST calls a drift pull
request needs (REST API version 2022-11-28; GitHub Enterprise Server through `github_api_url`).

httpx (through `controller.sources.http`, with the operator's address rules) and PyJWT for
RS256; docs/decisions.md says why not a generated SDK. Installation tokens are cached until
five minutes before they expire. Rate limits (primary and secondary: 403/429 with
`retry-after` or `x-ratelimit-reset`) raise `GitHubRateLimited` with the time to retry, which the
job turns into a later job, never a busy loop. Every other refusal raises `GitHubError`
naming the cause in words a person can act on; no token or key is ever part of a message.
Each call ends within `delivery_deadline_seconds` (connect, first byte, whole body). A GitHub
that cannot be reached (refused, timed out, TLS) or that the address rules refuse is a
`GitHubError` too (`github_unreachable`, `github_address_refused`), so every caller, on a
request path or in a job, handles one kind of failure (a 502 on a request, never a 500).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import jwt

from controller import __version__
from controller.errors import ConfigError, DriftgateError
from controller.settings import Settings
from controller.sources.http import FetchError, JsonAnswer, call_json

API_VERSION = "2022-11-28"
USER_AGENT = f"driftgate/{__version__} (draft pull requests)"
TOKEN_MARGIN = timedelta(minutes=5)
JWT_LIFETIME = 540  # seconds; GitHub accepts at most ten minutes
JWT_SKEW = 60  # seconds back-dated against clock drift, as GitHub recommends


class GitHubError(DriftgateError):
    """GitHub refused a call; `cause` is one of installation_gone, repository_inaccessible,
    permissions_missing, bad_credentials, rejected."""

    code = "github_error"

    def __init__(self, message: str, cause: str) -> None:
        super().__init__(message)
        self.cause = cause


class GitHubRateLimited(DriftgateError):
    """GitHub asked to wait; retry at `retry_at`."""

    code = "github_rate_limited"

    def __init__(self, message: str, retry_at: datetime) -> None:
        super().__init__(message)
        self.retry_at = retry_at


@dataclass(frozen=True)
class Installation:
    id: int
    account: str
    account_id: int | None  # GitHub's id of the user or organization: stable across renames
    repository_selection: str
    suspended: bool
    created_at: datetime | None


@dataclass(frozen=True)
class PullRequest:
    number: int
    url: str
    state: str  # draft, open, merged, closed
    draft_refused: bool = False
    base: str | None = None  # the branch it merges into


@dataclass(frozen=True)
class FileChange:
    path: str
    content: str


class GitHubApp:
    """One App's view of GitHub. Thread-safe: the token cache is shared by the workers."""

    def __init__(self, settings: Settings, client: Any, clock: Any = None) -> None:
        key = settings.github_app_key()
        if settings.github_app_id is None or not key:
            raise ConfigError("github_app_id and github_app_private_key(_file) are needed")
        self.app_id = settings.github_app_id
        self._key = key
        self.base = settings.github_api_url.rstrip("/")
        self.client = client
        self.deadline = settings.delivery_deadline_seconds
        self.clock = clock or (lambda: datetime.now(UTC))
        self._tokens: dict[int, tuple[str, datetime]] = {}
        self._lock = threading.Lock()

    # -- authentication -----------------------------------------------------------------------

    def app_jwt(self) -> str:
        now = int(time.time())
        claims = {"iat": now - JWT_SKEW, "exp": now + JWT_LIFETIME, "iss": str(self.app_id)}
        try:
            return jwt.encode(claims, self._key, algorithm="RS256")
        except (ValueError, TypeError) as exc:
            raise ConfigError(
                f"github_app_private_key is not a usable RSA private key ({type(exc).__name__})"
            ) from None

    def installation_token(self, installation_id: int) -> str:
        with self._lock:
            cached = self._tokens.get(installation_id)
            if cached is not None and cached[1] - TOKEN_MARGIN > self.clock():
                return cached[0]
        answer = self._send(
            "POST",
            f"/app/installations/{installation_id}/access_tokens",
            f"Bearer {self.app_jwt()}",
        )
        if answer.status == 404:
            raise GitHubError(
                f"GitHub App installation {installation_id} is gone (uninstalled, or not an "
                "installation of this App)",
                "installation_gone",
            )
        self._raise_for(answer, f"installation {installation_id}")
        data = _object(answer, f"the token of installation {installation_id}")
        try:
            token = str(data["token"])
            expires = datetime.fromisoformat(str(data["expires_at"]).replace("Z", "+00:00"))
        except (KeyError, ValueError):
            raise _malformed(f"the token of installation {installation_id}") from None
        with self._lock:
            self._tokens[installation_id] = (token, expires)
        return token

    def forget(self, installation_id: int) -> None:
        with self._lock:
            self._tokens.pop(installation_id, None)

    # -- calls ----------------------------------------------------------------------------------

    def _send(self, method: str, path: str, authorization: str, body: Any = None) -> JsonAnswer:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": USER_AGENT,
            "Authorization": authorization,
        }
        try:
            answer = call_json(
                self.client,
                method,
                self.base + path,
                headers=headers,
                body=body,
                label="GitHub",
                deadline=self.deadline,
            )
        except FetchError as exc:
            raise _unreachable(exc) from None
        self._raise_if_limited(answer)
        return answer

    def _as_installation(
        self, installation_id: int, method: str, path: str, body: Any = None
    ) -> JsonAnswer:
        token = self.installation_token(installation_id)
        answer = self._send(method, path, f"Bearer {token}", body)
        if answer.status == 401:
            # A revoked token (the installation was removed or its token expired early):
            # ask once for a new one, which says whether the installation is still there.
            self.forget(installation_id)
            token = self.installation_token(installation_id)
            answer = self._send(method, path, f"Bearer {token}", body)
        return answer

    def _raise_if_limited(self, answer: JsonAnswer) -> None:
        if answer.status not in (403, 429):
            return
        headers = answer.headers
        now = self.clock()
        if "retry-after" in headers:
            wait = _seconds(headers["retry-after"], 60)
            raise GitHubRateLimited(
                f"GitHub asked to retry after {wait} s", now + timedelta(seconds=wait)
            )
        if headers.get("x-ratelimit-remaining") == "0":
            reset = _seconds(headers.get("x-ratelimit-reset", ""), 0)
            at = datetime.fromtimestamp(reset, UTC) if reset else now + timedelta(minutes=1)
            raise GitHubRateLimited(
                "GitHub's rate limit is used up", max(at, now + timedelta(seconds=1))
            )

    def _raise_for(self, answer: JsonAnswer, what: str) -> None:
        if 200 <= answer.status < 300:
            return
        said = str((answer.body or {}).get("message", "")) if isinstance(answer.body, dict) else ""
        if answer.status == 401:
            raise GitHubError(
                "GitHub refused the App's credentials (check github_app_id and the private key)",
                "bad_credentials",
            )
        if answer.status == 403 and "not accessible by integration" in said.lower():
            raise GitHubError(
                f"the App lacks a permission for {what}: it needs contents and pull requests "
                "read and write",
                "permissions_missing",
            )
        if answer.status in (403, 404):
            raise GitHubError(
                f"{what} is not accessible to the App installation (not selected for it, or gone)",
                "repository_inaccessible",
            )
        raise GitHubError(
            f"GitHub answered {answer.status} for {what}: {said[:200]}".rstrip(": "), "rejected"
        )

    # -- installations ----------------------------------------------------------------------

    def installation(self, installation_id: int) -> Installation:
        answer = self._send(
            "GET", f"/app/installations/{installation_id}", f"Bearer {self.app_jwt()}"
        )
        if answer.status == 404:
            raise GitHubError(
                f"GitHub App installation {installation_id} does not exist for this App",
                "installation_gone",
            )
        self._raise_for(answer, f"installation {installation_id}")
        data = _object(answer, f"installation {installation_id}")
        account = data.get("account")
        account = account if isinstance(account, dict) else {}
        found = _integer(data.get("id"))
        if found is None:
            raise _malformed(f"installation {installation_id}")
        return Installation(
            id=found,
            account=str(account.get("login") or account.get("slug") or ""),
            account_id=_integer(account.get("id")),
            repository_selection=str(data.get("repository_selection", "")),
            suspended=data.get("suspended_at") is not None,
            created_at=_instant(data.get("created_at")),
        )

    # -- a drift pull request ---------------------------------------------------------------

    def open_pull_request(
        self,
        installation_id: int,
        repo: str,
        *,
        branch: str,
        files: list[FileChange],
        message: str,
        title: str,
        body: str,
        label: str,
        base: str | None = None,
    ) -> PullRequest:
        """Make (or find) `branch` with one commit of `files` on `base` (default: the
        repository's default branch), and a draft pull request from it into `base` (or find
        the one already made). A repository that refuses drafts gets a normal pull request
        labelled `label`."""
        owner = repo.split("/", 1)[0]
        where = f"/repos/{_path(repo)}"
        found = self._find_pull(installation_id, repo, owner, branch)
        if found is not None:
            return found
        if base is None:
            info = self._as_installation(installation_id, "GET", where)
            self._raise_for(info, f"repository {repo}")
            base = str(info.body["default_branch"])
        head = self._ref(installation_id, repo, branch)
        if head is None:
            parent = self._ref(installation_id, repo, base)
            if parent is None:
                raise GitHubError(f"repository {repo} has no branch {base}", "rejected")
            commit = self._as_installation(installation_id, "GET", f"{where}/git/commits/{parent}")
            self._raise_for(commit, f"repository {repo}")
            tree = self._as_installation(
                installation_id,
                "POST",
                f"{where}/git/trees",
                {
                    "base_tree": commit.body["tree"]["sha"],
                    "tree": [
                        {"path": f.path, "mode": "100644", "type": "blob", "content": f.content}
                        for f in files
                    ],
                },
            )
            self._raise_for(tree, f"repository {repo}")
            made = self._as_installation(
                installation_id,
                "POST",
                f"{where}/git/commits",
                {"message": message, "tree": tree.body["sha"], "parents": [parent]},
            )
            self._raise_for(made, f"repository {repo}")
            ref = self._as_installation(
                installation_id,
                "POST",
                f"{where}/git/refs",
                {"ref": f"refs/heads/{branch}", "sha": made.body["sha"]},
            )
            if ref.status != 422:  # 422: another attempt made the branch meanwhile
                self._raise_for(ref, f"repository {repo}")
        request = {"title": title, "head": branch, "base": base, "body": body, "draft": True}
        created = self._as_installation(installation_id, "POST", f"{where}/pulls", request)
        refused = created.status == 422 and "draft" in _errors_text(created).lower()
        if refused:
            request["draft"] = False
            created = self._as_installation(installation_id, "POST", f"{where}/pulls", request)
        if created.status == 422 and "already exists" in _errors_text(created):
            again = self._find_pull(installation_id, repo, owner, branch)
            if again is not None:
                return again
        self._raise_for(created, f"repository {repo}")
        pull = _pull(created.body, draft_refused=refused)
        if refused:
            labelled = self._as_installation(
                installation_id,
                "POST",
                f"{where}/issues/{pull.number}/labels",
                {"labels": [label]},
            )
            self._raise_for(labelled, f"repository {repo}")
        return pull

    def comment(self, installation_id: int, repo: str, number: int, text: str) -> None:
        answer = self._as_installation(
            installation_id,
            "POST",
            f"/repos/{_path(repo)}/issues/{number}/comments",
            {"body": text},
        )
        self._raise_for(answer, f"repository {repo}")

    def _ref(self, installation_id: int, repo: str, branch: str) -> str | None:
        answer = self._as_installation(
            installation_id, "GET", f"/repos/{_path(repo)}/git/ref/heads/{quote(branch)}"
        )
        if answer.status == 404:
            return None
        self._raise_for(answer, f"repository {repo}")
        return str(answer.body["object"]["sha"])

    def _find_pull(
        self, installation_id: int, repo: str, owner: str, branch: str
    ) -> PullRequest | None:
        answer = self._as_installation(
            installation_id,
            "GET",
            f"/repos/{_path(repo)}/pulls?state=all&head={quote(owner)}:{quote(branch)}",
        )
        self._raise_for(answer, f"repository {repo}")
        pulls = answer.body if isinstance(answer.body, list) else []
        return _pull(pulls[0]) if pulls else None


def _object(answer: JsonAnswer, what: str) -> dict[str, Any]:
    """The JSON object a successful answer must be (an HTML page from a proxy is not)."""
    if not isinstance(answer.body, dict):
        raise _malformed(what)
    return answer.body


def _malformed(what: str) -> GitHubError:
    return GitHubError(
        f"GitHub's answer for {what} is not what its API describes (check github_api_url)",
        "github_malformed",
    )


def _unreachable(exc: FetchError) -> GitHubError:
    """A request that never got GitHub's answer, named without the request's headers (the
    fetcher's messages quote no header) and with what to do."""
    said = exc.message.removeprefix("GitHub: ")
    if exc.failure_class == "blocked_target":
        return GitHubError(
            f"GitHub was not asked: the address rules refuse it ({said}); check github_api_url",
            "github_address_refused",
        )
    return GitHubError(
        f"GitHub cannot be reached ({said}); try again later, or check github_api_url",
        "github_unreachable",
    )


def _pull(data: dict[str, Any], *, draft_refused: bool = False) -> PullRequest:
    if data.get("merged_at"):
        state = "merged"
    elif data.get("state") == "closed":
        state = "closed"
    else:
        state = "draft" if data.get("draft") else "open"
    base = data.get("base")
    ref = base.get("ref") if isinstance(base, dict) else None
    return PullRequest(
        int(data["number"]),
        str(data["html_url"]),
        state,
        draft_refused,
        str(ref) if isinstance(ref, str) and ref else None,
    )


def _message(answer: JsonAnswer) -> str:
    return str(answer.body.get("message", "")) if isinstance(answer.body, dict) else ""


def _errors_text(answer: JsonAnswer) -> str:
    """A 422's message and the messages of its `errors` (where GitHub says what failed)."""
    if not isinstance(answer.body, dict):
        return ""
    errors = answer.body.get("errors") or []
    said = [str(e.get("message", "")) for e in errors if isinstance(e, dict)]
    return " ".join([_message(answer), *said])


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _instant(value: Any) -> datetime | None:
    """GitHub's ISO 8601 time (`2026-01-02T03:04:05Z`), or None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _path(repo: str) -> str:
    owner, _, name = repo.partition("/")
    return f"{quote(owner)}/{quote(name)}"


def _seconds(value: str, default: int) -> int:
    try:
        return max(0, int(float(value)))
    except ValueError:
        return default
