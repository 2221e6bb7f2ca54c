"""`driftgate pr-comment`: put a report (a `driftgate diff --format markdown` file) in
driftgate's comment on a GitHub pull request, editing the comment an earlier run left instead
of adding one a push.

Meant for a GitHub Actions job (the repository's action runs it): the repository, the pull
request and the API come from the runner's `GITHUB_*` variables, the token from
`GITHUB_TOKEN`. Exit 0 when the comment is in place, 2 when it could not be (no token, not a
pull request, GitHub refused); the token is never printed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from cli.common import fail

DEFAULT_API = "https://api.github.com"


@click.command("pr-comment")
@click.argument("report", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--key",
    default="diff",
    show_default=True,
    help="Which of driftgate's comments this report is (a second contract in the same pull "
    "request takes another key): letters, digits, . _ / -.",
)
@click.option(
    "--repository",
    envvar="GITHUB_REPOSITORY",
    show_envvar=True,
    metavar="OWNER/NAME",
    help="The repository (in Actions: set by the runner).",
)
@click.option(
    "--pull-request",
    "number",
    type=click.IntRange(min=1),
    metavar="N",
    help="The pull request's number; default: the one of the event that ran the workflow "
    "(GITHUB_EVENT_PATH).",
)
@click.option(
    "--event",
    "event_path",
    envvar="GITHUB_EVENT_PATH",
    show_envvar=True,
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="The workflow's event payload, where the pull request's number is read from when "
    "--pull-request is not given (in Actions: set by the runner).",
)
@click.option(
    "--api-url",
    envvar="GITHUB_API_URL",
    show_envvar=True,
    default=DEFAULT_API,
    show_default=True,
    help="GitHub's REST API (GitHub Enterprise Server: https://HOST/api/v3).",
)
@click.option(
    "--token",
    envvar="GITHUB_TOKEN",
    show_envvar=True,
    metavar="TOKEN",
    help="A token that may write the pull request's comments; prefer the variable.",
)
def pr_comment(
    report: str,
    key: str,
    repository: str | None,
    number: int | None,
    event_path: str | None,
    api_url: str,
    token: str | None,
) -> None:
    """Put REPORT in driftgate's comment on a GitHub pull request (edited, not repeated)."""
    from controller.prcomments.comment import is_key
    from controller.prcomments.github import CommentError, IssueComments
    from controller.prcomments.service import upsert_comment
    from controller.sources.http import make_client

    if not is_key(key):
        raise click.BadParameter("letters, digits, . _ / - (at most 100)", param_hint="'--key'")
    if not token or not token.strip():
        fail("no GitHub token: set GITHUB_TOKEN (in a workflow: ${{ github.token }})")
    if not repository:
        fail("no repository: set GITHUB_REPOSITORY or pass --repository OWNER/NAME")
    if number is None:
        number = _event_pull_request(event_path)
    text = Path(report).read_text(encoding="utf-8")
    # The API address is the workflow's own (GitHub, or an Enterprise Server on a private
    # network): no address rule applies, as for the URLs `driftgate diff` is given.
    with make_client(allow_private=True, user_agent="driftgate-cli", timeout=30.0) as client:
        try:
            posted = upsert_comment(
                IssueComments(client, api_url, repository, token.strip()), number, text, key
            )
        except CommentError as exc:
            fail(str(exc))
    verb = "commented on" if posted.created else "updated the comment on"
    click.echo(f"driftgate: {verb} {repository}#{number} {posted.url}".rstrip())


def _event_pull_request(path: str | None) -> int:
    """The pull request number of the workflow's event (pull_request, pull_request_target)."""
    if not path:
        fail("not a pull request: no --pull-request and no GITHUB_EVENT_PATH")
    try:
        event: Any = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        fail(f"GITHUB_EVENT_PATH cannot be read as JSON: {exc}")
    pull = event.get("pull_request") if isinstance(event, dict) else None
    number = pull.get("number") if isinstance(pull, dict) else None
    if not isinstance(number, int) or number < 1:
        fail("the workflow's event is not a pull request: pass --pull-request N")
    return number
