"""`driftgate validate`: exit codes 0/1/2, the text, json and github formats, offline."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cli.commands.validate import _github, validate
from controller.gitsources.load import FILES, Problem
from controller.model.gitops import MAX_FILE_BYTES

ROOT = Path(__file__).resolve().parents[2]
BROKEN_AGENTS = "version: 1\nagents:\n  - id: Billing\n    policy: strict\n  - name: x\n"


def run(*args: str) -> Result:
    return CliRunner().invoke(validate, list(args), catch_exceptions=False)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository root (the current directory) whose .driftgate/ holds the examples."""
    directory = tmp_path / ".driftgate"
    directory.mkdir()
    for name in FILES:
        shutil.copy(ROOT / "examples" / name, directory / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_valid_directory_prints_a_summary(repo: Path) -> None:
    result = run()
    assert result.exit_code == 0, result.output
    assert result.stdout == (".driftgate: valid: 3 agents, 2 templates, 2 watch sets, 3 watches\n")
    assert result.stderr == ""


def test_a_repository_root_or_the_directory_itself(repo: Path) -> None:
    assert run(".").stdout.startswith(".driftgate: valid:")
    assert run(str(repo)).stdout.startswith(f"{repo}/.driftgate: valid:")
    assert run(str(repo / ".driftgate")).stdout.startswith(f"{repo}/.driftgate: valid:")


def test_invalid_files_print_every_problem_and_exit_1(repo: Path) -> None:
    (repo / ".driftgate" / "agents.yaml").write_text(BROKEN_AGENTS)
    (repo / ".driftgate" / "templates.yml").write_text("version: 1\n")
    result = run()
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        ".driftgate/agents.yaml:3:9: id must be a lowercase slug: a-z, 0-9, '-' and '_', "
        "at most 64 characters, starting and ending with a letter or digit",
        ".driftgate/agents.yaml:5:5: missing required key 'id'",
        ".driftgate/templates.yml:1:1: did you mean templates.yaml? driftgate reads only "
        "agents.yaml, templates.yaml, watch-sets.yaml, dashboards.yaml, waivers.yaml",
    ]
    assert result.stderr == "driftgate: 3 problems in .driftgate\n"


def test_json_format(repo: Path) -> None:
    valid = json.loads(run("--format", "json").stdout)
    assert valid == {
        "valid": True,
        "directory": ".driftgate",
        "summary": {"agents": 3, "templates": 2, "watchSets": 2, "watches": 3},
        "problems": [],
    }
    (repo / ".driftgate" / "agents.yaml").write_text(BROKEN_AGENTS)
    result = run("--format", "json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["valid"] is False
    assert document["summary"]["agents"] == 0  # an invalid file yields no model
    assert document["problems"][0] == {
        "file": ".driftgate/agents.yaml",
        "line": 3,
        "column": 9,
        "path": "agents[0].id",
        "message": "id must be a lowercase slug: a-z, 0-9, '-' and '_', at most 64 characters, "
        "starting and ending with a letter or digit",
    }


def test_github_format(repo: Path) -> None:
    assert run("--format", "github").stdout.startswith(".driftgate: valid:")
    (repo / ".driftgate" / "agents.yaml").write_text(
        "version: 1\nagents:\n  - id: a\n    policy: strict\n"
    )
    result = run(".", "--format", "github")
    assert result.exit_code == 1
    assert result.stdout == (
        "::error file=.driftgate/agents.yaml,line=4,col=13::unknown policy 'strict': use a preset "
        "(notify-only, staging-strict, production-guard) or declare it under policies; "
        "did you mean 'staging-strict'?\n"
    )


def test_github_annotations_escape_their_properties_and_data() -> None:
    problem = Problem("dir,x:y/agents.yaml", 2, 3, "50% wrong\nreally")
    assert _github(problem) == (
        "::error file=dir%2Cx%3Ay/agents.yaml,line=2,col=3::50%25 wrong%0Areally"
    )


def test_known_templates_can_be_named(repo: Path) -> None:
    sets = repo / ".driftgate" / "watch-sets.yaml"
    sets.write_text(
        "version: 1\nwatchSets:\n  - name: p\n    watches:\n"
        "      - {name: s, template: system/stripe-openapi}\n"
        "      - {name: t, template: org-template}\n"
    )
    assert run().exit_code == 1  # the built-in template is known, the org's is not
    assert run("--template", "org-template").exit_code == 0


def test_unusable_directories_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    missing = run()
    assert missing.exit_code == 2
    assert missing.stderr == "driftgate: error: no such directory: .driftgate\n"
    (tmp_path / "file.txt").write_text("x")
    assert run("file.txt").stderr == "driftgate: error: file.txt is not a directory\n"
    (tmp_path / "empty").mkdir()
    empty = run("empty")
    assert empty.exit_code == 2
    assert empty.stderr == (
        "driftgate: error: empty has none of agents.yaml, templates.yaml, watch-sets.yaml, "
        "dashboards.yaml, waivers.yaml, watch-sets/*.yaml, .driftguard/agents.yaml\n"
    )


def test_a_path_that_cannot_be_read_is_a_problem_at_its_path(repo: Path) -> None:
    """As in a git source: a directory, a symbolic link (even to a valid file) or a FIFO where
    a file belongs is a problem at its path (exit 2: it cannot be read), never followed,
    skipped or waited on."""
    directory = repo / ".driftgate"
    target = directory / "agents.yaml"
    kept = target.read_bytes()
    target.unlink()
    target.mkdir()
    result = run()
    assert result.exit_code == 2
    assert result.stdout == (
        ".driftgate/agents.yaml:1:1: cannot read: it is a directory, not a file (commit the "
        "file itself under this name)\n"
    )
    assert result.stderr == (
        "driftgate: error: cannot read 1 file in .driftgate (1 problem in all, above)\n"
    )
    target.rmdir()
    (repo / "elsewhere.yaml").write_bytes(kept)
    target.symlink_to(repo / "elsewhere.yaml")  # a valid file, which git would not follow
    linked = run()
    assert linked.exit_code == 2
    assert linked.stdout.startswith(
        ".driftgate/agents.yaml:1:1: cannot read: it is a symbolic link; "
    ), linked.stdout
    target.unlink()
    target.symlink_to(repo / "nowhere.yaml")  # broken
    assert run().stdout == linked.stdout
    target.unlink()
    os.mkfifo(target)  # nobody ever writes: a blocking open would hang the command
    fifo = run()
    assert fifo.exit_code == 2
    assert fifo.stdout == (
        ".driftgate/agents.yaml:1:1: cannot read: it is not a regular file (a FIFO, socket or "
        "device); replace it with the file itself\n"
    )
    target.unlink()
    target.write_bytes(kept)
    assert run().exit_code == 0


def test_a_file_over_the_limit_is_a_problem_and_not_read_whole(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = repo / ".driftgate" / "templates.yaml"
    with target.open("ab") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: 1 MiB and one byte
    opened: list[str] = []
    real_open = os.open

    def recording_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        opened.append(os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", recording_open)
    result = run()
    assert result.exit_code == 2
    assert result.stdout == (
        ".driftgate/templates.yaml:1:1: the file has 1,048,577 bytes (1 MiB), more than the "
        "limit of 1 MiB per file (git_max_file_bytes); driftgate did not read it (split it, "
        "or raise the limit)\n"
    )
    assert not any(path.endswith("templates.yaml") for path in opened)  # only its size is read
    assert any(path.endswith("agents.yaml") for path in opened)


def test_profiles_are_checked_and_a_linked_profiles_directory_is_a_problem(repo: Path) -> None:
    profiles = repo / ".driftgate" / "profiles"
    profiles.mkdir()
    (profiles / "orders.yaml").write_text("id: orders\nversion: 0\n")
    broken = run()
    assert broken.exit_code == 1
    assert broken.stdout.startswith(".driftgate/profiles/orders.yaml:"), broken.stdout
    (profiles / "orders.yaml").unlink()
    (profiles / "orders.json").symlink_to(repo / "nowhere.json")
    assert run().stdout.startswith(
        ".driftgate/profiles/orders.json:1:1: cannot read: it is a symbolic link"
    )
    (profiles / "orders.json").unlink()
    profiles.rmdir()
    (repo / "shared").mkdir()
    profiles.symlink_to(repo / "shared")
    linked = run()
    assert linked.exit_code == 2
    assert linked.stdout.startswith(".driftgate/profiles:1:1: cannot read: it is a symbolic link")


def test_bad_format_is_a_usage_error(repo: Path) -> None:
    assert run("--format", "xml").exit_code == 2


def test_split_watch_set_files_are_checked_with_the_others(repo: Path) -> None:
    split = repo / ".driftgate" / "watch-sets"
    split.mkdir()
    shutil.copy(ROOT / "examples" / "watch-sets" / "partners.yaml", split / "partners.yaml")
    (split / "notes.txt").write_text("not read")
    result = run()
    assert result.exit_code == 0, result.output
    assert result.stdout == ".driftgate: valid: 3 agents, 2 templates, 3 watch sets, 4 watches\n"
    again = (split / "partners.yaml").read_text().replace("partners", "partners-eu")
    (split / "zz-eu.yml").write_text(again)
    result = run()
    assert result.exit_code == 1
    assert result.stdout == (
        ".driftgate/watch-sets/zz-eu.yml:13:15: duplicate watch 'partner-orders' "
        "(first at .driftgate/watch-sets/partners.yaml:13)\n"
    )
    (split / "zz-eu.yml").unlink()
    shutil.rmtree(split)
    split.symlink_to(repo)  # a link where the directory belongs is a problem, never followed
    result = run()
    assert result.exit_code == 2
    assert result.stdout.startswith(".driftgate/watch-sets:1:1: cannot read: it is a symbolic link")


def test_split_watch_set_files_alone_are_a_directory_to_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    split = tmp_path / ".driftgate" / "watch-sets"
    split.mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "watch-sets" / "partners.yaml", split / "partners.yaml")
    monkeypatch.chdir(tmp_path)
    result = run()
    assert result.exit_code == 0, result.output
    assert result.stdout == ".driftgate: valid: 0 agents, 0 templates, 1 watch set, 1 watch\n"


# Every file the command reads, in `.driftgate/` and in `.driftguard/` beside it (issue 40,
# point 2): a path that cannot be read is a problem there and exit 2, as a server stalls on it.
# Before, `.driftguard/agents.yaml` as a link or a directory was skipped and said `valid`.

READ_PATHS = [
    ".driftguard/agents.yaml",
    *(f".driftgate/{name}" for name in FILES),
    ".driftgate/watch-sets/partners.yaml",
    ".driftgate/profiles/order.yaml",
]
ORDER_PROFILE = "id: order\nversion: 1\nschema: {type: object}\n"


def _linked(path: Path) -> None:
    path.symlink_to(Path.cwd() / "elsewhere.yaml")  # a valid file, never followed


def _directory(path: Path) -> None:
    path.mkdir()
    (path / "a.yaml").write_text("version: 1\n")


def _submodule(path: Path) -> None:
    """A checked-out submodule (a gitlink in the commit): a directory with a `.git` file."""
    path.mkdir()
    (path / ".git").write_text("gitdir: ../../.git/modules/shared\n")
    (path / "agents.yaml").write_text("version: 1\nagents: []\n")


def _not_utf8(path: Path) -> None:
    path.write_bytes(b"version: 1\n# caf\xe9\n")


def _too_large(path: Path) -> None:
    with path.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)


UNREADABLE = {
    "symlink": (_linked, "it is a symbolic link"),
    "directory": (_directory, "it is a directory, not a file"),
    "gitlink": (_submodule, "it is a directory, not a file"),
    "fifo": (lambda path: os.mkfifo(path), "it is not a regular file"),
    "not-utf8": (_not_utf8, "the file is not UTF-8 text: save it as UTF-8"),
    "too-large": (_too_large, "more than the limit of 1 MiB per file"),
}


@pytest.mark.parametrize("where", READ_PATHS)
def test_every_file_read_in_either_directory_that_cannot_be_read_exits_2(
    repo: Path, where: str
) -> None:
    hosted = repo / ".driftguard"
    hosted.mkdir()
    shutil.copy(
        ROOT / "tests" / "gitsources" / "hosted" / "valid" / "plain-apis.yaml",
        hosted / "agents.yaml",
    )
    (repo / ".driftgate" / "watch-sets").mkdir()
    shutil.copy(
        ROOT / "examples" / "watch-sets" / "partners.yaml", repo / ".driftgate" / "watch-sets"
    )
    (repo / ".driftgate" / "profiles").mkdir()
    (repo / ".driftgate" / "profiles" / "order.yaml").write_text(ORDER_PROFILE)
    path = repo / where
    kept = path.read_bytes()
    (repo / "elsewhere.yaml").write_bytes(kept)
    assert run().exit_code == 0
    for kind, (make, needle) in UNREADABLE.items():
        path.unlink()
        make(path)
        result = run()
        assert result.exit_code == 2, (kind, result.output)
        assert f"{where}:" in result.stdout and needle in result.stdout, (kind, result.stdout)
        assert result.stderr.startswith("driftgate: error: cannot read 1 file in .driftgate")
        as_json = run("--format", "json")
        assert as_json.exit_code == 2
        problems = json.loads(as_json.stdout)["problems"]
        assert [p["file"] for p in problems] == [where], kind
        shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        path.write_bytes(kept)
    assert run().exit_code == 0


def test_a_linked_hosted_directory_exits_2(repo: Path) -> None:
    (repo / "shared").mkdir()
    shutil.copy(
        ROOT / "tests" / "gitsources" / "hosted" / "valid" / "plain-apis.yaml",
        repo / "shared" / "agents.yaml",
    )
    (repo / ".driftguard").symlink_to(repo / "shared")
    result = run()
    assert result.exit_code == 2
    assert result.stderr == (
        "driftgate: error: .driftguard is a symbolic link: commit the directory itself\n"
    )
