"""The sticky pull request comment (`controller.prcomments`): the marker, the size cut, and
the edit-or-add against a loopback GitHub that checks every call against GitHub's REST
description (pages of comments included)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import main
from controller.prcomments.comment import MAX_CHARS, body, marker, own_comment
from controller.prcomments.github import CommentError, IssueComments
from controller.prcomments.service import upsert_comment
from controller.sources.http import make_client
from tests.github_fake import COMMENT_IDS, FakeGitHub

REPO = "acme/shop"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub.serving(REPO) as fake:
        yield fake


def test_the_marker_leads_and_a_long_report_is_cut_to_githubs_limit() -> None:
    text = body("# report\n", "diff")
    assert text == "<!-- driftgate-comment: diff -->\n# report\n"
    long = body("x" * 70_000, "contracts/payments")
    assert len(long) == MAX_CHARS and long.endswith("the job summary has the whole report)*\n")
    comments = [
        {"id": 1, "body": "looks good"},
        {"id": 2, "body": f"quoting you: {marker('diff')}"},  # not ours: the marker leads
        {"id": 3, "body": body("old", "other")},
        {"id": 4, "body": body("old", "diff")},
    ]
    assert own_comment(comments, "diff") == 4 and own_comment(comments, "none") is None
    with pytest.raises(ValueError):
        marker("no spaces allowed")


def test_the_comment_is_found_on_a_later_page_and_edited(github: FakeGitHub) -> None:
    repo = github.repositories[REPO]
    repo.comments.extend((9, f"comment {i}") for i in range(150))  # someone else's thread
    with make_client(allow_private=True) as client:
        comments = IssueComments(client, github.url, REPO, github.workflow_token(REPO))
        first = upsert_comment(comments, 9, "one", "diff")
        second = upsert_comment(comments, 9, "two", "diff")
    assert first.created and not second.created
    assert first.comment_id == second.comment_id == COMMENT_IDS + 150
    assert repo.comments[150] == (9, "<!-- driftgate-comment: diff -->\ntwo")
    assert len(repo.comments) == 151
    assert github.paths().count(f"GET /repos/{REPO}/issues/9/comments") == 4  # 2 pages, twice


def test_a_refusal_names_the_permission_and_never_the_token(github: FakeGitHub) -> None:
    github.add_repository("acme/other")
    token = github.workflow_token("acme/other")
    with make_client(allow_private=True) as client:
        comments = IssueComments(client, github.url, REPO, token)
        with pytest.raises(CommentError) as refused:
            upsert_comment(comments, 1, "x", "diff")
    assert "HTTP 404" in str(refused.value) and "pull-requests: write" in str(refused.value)
    assert token not in str(refused.value)


def test_the_command_reads_the_runner_and_exits_2_on_a_mistake(
    github: FakeGitHub, tmp_path: Path
) -> None:
    folder = tmp_path
    report = folder / "report.md"
    report.write_text("### driftgate: no changes\n")
    event = folder / "event.json"
    event.write_text('{"pull_request": {"number": 12}}')
    env = {
        "GITHUB_TOKEN": github.workflow_token(REPO),
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_API_URL": github.url,
    }
    runner = CliRunner()
    done = runner.invoke(main, ["pr-comment", str(report)], env=env)
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith(f"driftgate: commented on {REPO}#12 https://")
    assert github.repositories[REPO].comments == [
        (12, "<!-- driftgate-comment: diff -->\n### driftgate: no changes\n")
    ]
    no_token = runner.invoke(main, ["pr-comment", str(report)], env={**env, "GITHUB_TOKEN": ""})
    assert no_token.exit_code == 2 and "no GitHub token" in no_token.stderr
    event.write_text('{"ref": "refs/heads/main"}')  # a push
    pushed = runner.invoke(main, ["pr-comment", str(report)], env=env)
    assert pushed.exit_code == 2 and "not a pull request" in pushed.stderr
    bad_key = runner.invoke(main, ["pr-comment", str(report), "--key", "a b"], env=env)
    assert bad_key.exit_code == 2
