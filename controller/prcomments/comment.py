"""The sticky pull request comment: which of a pull request's comments is driftgate's, and
what it says. Pure: no I/O.

A workflow that runs on every push to a pull request would add a comment per push; people stop
reading a thread that grows by one report a push. So driftgate's comment carries a hidden
marker (an HTML comment, invisible on GitHub) naming what it reports, and the next run edits
the comment that has it instead of adding one. Two reports on one pull request (two contracts,
two jobs) use two keys and keep two comments.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

MAX_CHARS = 65_536
"""GitHub refuses a comment body over 65,536 characters."""
_KEY = re.compile(r"[A-Za-z0-9._/-]{1,100}")
_CUT = "\n\n*(cut to fit GitHub's comment limit; the job summary has the whole report)*\n"


def is_key(key: str) -> bool:
    """Whether `key` may name a comment: letters, digits, `.`, `_`, `/` or `-`, at most 100."""
    return _KEY.fullmatch(key) is not None


def marker(key: str) -> str:
    """The hidden line that marks driftgate's comment for `key`."""
    if not is_key(key):
        raise ValueError(f"{key!r} is not a comment key (letters, digits, . _ / -)")
    return f"<!-- driftgate-comment: {key} -->"


def body(report: str, key: str) -> str:
    """The comment: the marker, then the report, cut to GitHub's size limit."""
    head = marker(key) + "\n"
    room = MAX_CHARS - len(head)
    if len(report) > room:
        report = report[: room - len(_CUT)] + _CUT
    return head + report


def own_comment(comments: Iterable[Mapping[str, Any]], key: str) -> int | None:
    """The id of the first comment that carries `key`'s marker, if any."""
    wanted = marker(key)
    for comment in comments:
        text = comment.get("body")
        if isinstance(text, str) and text.startswith(wanted) and isinstance(comment.get("id"), int):
            return int(comment["id"])
    return None
