"""Keep driftgate's comment on a pull request: edit it when it is there, else add it."""

from __future__ import annotations

from dataclasses import dataclass

from controller.prcomments.comment import body, own_comment
from controller.prcomments.github import IssueComments


@dataclass(frozen=True)
class Posted:
    comment_id: int
    url: str
    created: bool  # False: an existing comment was edited


def upsert_comment(comments: IssueComments, number: int, report: str, key: str) -> Posted:
    """Put `report` in driftgate's comment for `key` on pull request `number`."""
    text = body(report, key)
    existing = own_comment(comments.list(number), key)
    if existing is None:
        answer = comments.create(number, text)
    else:
        answer = comments.update(existing, text)
    return Posted(
        int(answer.get("id") or existing or 0), str(answer.get("html_url") or ""), existing is None
    )
