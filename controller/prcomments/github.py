"""GitHub's REST API for the three calls a sticky comment needs, with a workflow's token
(`GITHUB_TOKEN` or any token that may write the pull request's issues): list a pull
request's comments, create one, update one (REST API version 2022-11-28).

httpx through `controller.sources.http` (`call_json`); the caller's client decides which
addresses it may reach. A refusal raises `CommentError` with GitHub's message and status,
never the token.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from controller import __version__
from controller.errors import DriftgateError
from controller.sources.http import FetchError, JsonAnswer, call_json

API_VERSION = "2022-11-28"
USER_AGENT = f"driftgate/{__version__} (pull request comments)"
PAGE_SIZE = 100
MAX_PAGES = 30  # 3,000 comments: a pull request longer than that gets a new comment


class CommentError(DriftgateError):
    """GitHub refused or could not be reached; the message says which and why."""

    code = "github_error"


class IssueComments:
    """The comments of one repository's issues and pull requests, as its token may see them."""

    def __init__(self, client: Any, api_url: str, repository: str, token: str) -> None:
        owner, sep, name = repository.partition("/")
        if not sep or not owner or not name or "/" in name:
            raise CommentError(f"{repository!r} is not a repository (owner/name)")
        self.client = client
        self.base = f"{api_url.rstrip('/')}/repos/{quote(owner, safe='')}/{quote(name, safe='')}"
        self.headers = {
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {token}",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": USER_AGENT,
        }

    def list(self, number: int) -> Iterator[dict[str, Any]]:
        """The pull request's comments, oldest first, a page at a time."""
        for page in range(1, MAX_PAGES + 1):
            answer = self._send(
                "GET", f"/issues/{number}/comments?per_page={PAGE_SIZE}&page={page}", None
            )
            self._check(answer, 200, f"listing the comments of #{number}")
            if not isinstance(answer.body, list):
                raise CommentError("GitHub answered the comment listing with something else")
            yield from (c for c in answer.body if isinstance(c, dict))
            if len(answer.body) < PAGE_SIZE:
                return

    def create(self, number: int, text: str) -> dict[str, Any]:
        answer = self._send("POST", f"/issues/{number}/comments", {"body": text})
        self._check(answer, 201, f"commenting on #{number}")
        return _object(answer)

    def update(self, comment_id: int, text: str) -> dict[str, Any]:
        answer = self._send("PATCH", f"/issues/comments/{comment_id}", {"body": text})
        self._check(answer, 200, f"updating comment {comment_id}")
        return _object(answer)

    def _send(self, method: str, path: str, body: Any) -> JsonAnswer:
        try:
            return call_json(
                self.client,
                method,
                self.base + path,
                headers=self.headers,
                body=body,
                label="GitHub",
            )
        except FetchError as exc:
            raise CommentError(f"GitHub could not be reached: {exc}") from None

    @staticmethod
    def _check(answer: JsonAnswer, expected: int, what: str) -> None:
        if answer.status == expected:
            return
        message = answer.body.get("message") if isinstance(answer.body, dict) else None
        hint = ""
        if answer.status in (401, 403, 404):
            hint = (
                " (the token needs permission to write pull requests or issues: in a workflow, "
                "`permissions: pull-requests: write`)"
            )
        raise CommentError(
            f"GitHub refused {what}: HTTP {answer.status} {message or ''}".rstrip() + hint
        )


def _object(answer: JsonAnswer) -> dict[str, Any]:
    if not isinstance(answer.body, dict):
        raise CommentError("GitHub answered with something other than a comment")
    return answer.body
