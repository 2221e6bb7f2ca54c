"""The git cache against real repositories: by path, file://, git daemon, and loopback https."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pygit2
import pytest
from pygit2.enums import FileMode

from controller.errors import PermanentError, TemporaryError
from controller.gitsources.load import is_read
from controller.model.gitops import Unreadable, UnreadableKind
from controller.sources import git as git_source
from controller.sources.git import (
    STALE_LOCK_SECONDS,
    DirectoryFiles,
    GitCache,
    GitError,
    GitRemote,
    cache_dir_name,
    redact_url,
)
from tests.gitrepos import RepoBuilder, git_daemon, isolated_git_config
from tests.servers import Loopback, QuietHandler
from tests.tls import self_signed_certificate

TOKEN = "ghp_s3cr3t-token-value-0123456789"
AGENTS = "agents:\n  - name: billing-bot\n"
TEMPLATES = "templates: []\n"


@pytest.fixture(autouse=True)
def _no_machine_git_config(tmp_path: Path) -> Iterator[None]:
    with isolated_git_config(tmp_path / "empty-git-config"):
        yield


@pytest.fixture
def origin(tmp_path: Path) -> RepoBuilder:
    builder = RepoBuilder(tmp_path / "remotes" / "config.git")
    builder.commit(
        {
            ".driftgate/agents.yaml": AGENTS,
            ".driftgate/templates.yaml": TEMPLATES,
            ".driftgate/nested/ignored.yaml": "x: 1\n",
            "README.md": "# config\n",
        },
        message="initial",
    )
    return builder


@pytest.fixture
def cache(tmp_path: Path) -> GitCache:
    return GitCache(tmp_path / "data" / "git", env={"GIT_TOKEN": TOKEN})


def reason_of(info: pytest.ExceptionInfo[GitError]) -> str:
    return info.value.reason


def test_fetch_by_path_reads_the_config_directory(cache: GitCache, origin: RepoBuilder) -> None:
    outcome = cache.fetch("team-a", GitRemote(url=str(origin.path)))
    assert outcome.fetched and outcome.revision == origin.head()
    read = cache.read_directory("team-a", outcome.revision)
    assert read.unreadable == {}
    assert read.files == {"agents.yaml": AGENTS.encode(), "templates.yaml": TEMPLATES.encode()}
    assert cache.revision_exists("team-a", outcome.revision)
    assert cache.path_for("team-a").parent == cache.root
    assert not (cache.path_for("team-a") / "config").read_text().count("url")  # anonymous


def test_second_fetch_without_new_commits_downloads_nothing(
    cache: GitCache, origin: RepoBuilder
) -> None:
    first = cache.fetch("team-a", GitRemote(url=origin.url))
    again = cache.fetch("team-a", GitRemote(url=origin.url))
    assert first.fetched and not again.fetched
    assert again.revision == first.revision == origin.head()


def test_new_commit_and_force_push_are_fetched(cache: GitCache, origin: RepoBuilder) -> None:
    remote = GitRemote(url=origin.url)
    first = cache.fetch("team-a", remote).revision

    second = origin.commit(
        {".driftgate/agents.yaml": "agents: []\n", ".driftgate/templates.yaml": None}
    )
    outcome = cache.fetch("team-a", remote)
    assert outcome.fetched and outcome.revision == second
    assert cache.read_directory("team-a", second).files == {"agents.yaml": b"agents: []\n"}

    rewritten = origin.commit({".driftgate/watch-sets.yaml": "watchSets: []\n"}, branch="rewrite")
    origin.force_reset(rewritten)
    outcome = cache.fetch("team-a", remote)
    assert outcome.fetched and outcome.revision == rewritten
    assert cache.read_directory("team-a", rewritten).files == {
        "watch-sets.yaml": b"watchSets: []\n"
    }
    # Earlier revisions stay readable: a status can still point at them.
    assert cache.read_directory("team-a", first).files["agents.yaml"] == AGENTS.encode()


def test_other_branch_and_missing_branch(cache: GitCache, origin: RepoBuilder) -> None:
    staging = origin.commit({".driftgate/agents.yaml": "agents: []\n"}, branch="staging")
    assert cache.fetch("team-a", GitRemote(url=origin.url, branch="staging")).revision == staging
    with pytest.raises(GitError) as info:
        cache.fetch("team-a", GitRemote(url=origin.url, branch="nope"))
    assert reason_of(info) == "branch_not_found" and isinstance(info.value, PermanentError)
    assert "nope" in info.value.message
    with pytest.raises(GitError) as invalid:
        cache.fetch("team-a", GitRemote(url=origin.url, branch="bad..name"))
    assert reason_of(invalid) == "branch_not_found"


def test_missing_directory_file_in_its_place_and_unknown_revision(
    cache: GitCache, origin: RepoBuilder
) -> None:
    revision = cache.fetch("team-a", GitRemote(url=origin.url)).revision
    assert cache.read_directory("team-a", revision, "config") == DirectoryFiles({}, {})
    assert cache.read_directory("team-a", revision, ".driftgate/nested").files == {
        "ignored.yaml": b"x: 1\n"
    }
    assert set(cache.read_directory("team-a", revision, "").files) == {"README.md"}
    with pytest.raises(GitError) as file_instead:
        cache.read_directory("team-a", revision, "README.md")
    assert reason_of(file_instead) == "read_failed"

    unknown = "0123456789abcdef0123456789abcdef01234567"
    for name, rev in (("team-a", unknown), ("team-a", "HEAD"), ("never-fetched", revision)):
        with pytest.raises(GitError) as info:
            cache.read_directory(name, rev)
        assert reason_of(info) == "read_failed"
        assert not cache.revision_exists(name, rev)
    blob = str(origin.repo.create_blob(b"not a commit"))
    assert not cache.revision_exists("team-a", blob)


def test_not_a_repository(cache: GitCache, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for url in (str(empty), empty.as_uri(), str(tmp_path / "missing")):
        with pytest.raises(GitError) as info:
            cache.fetch("team-a", GitRemote(url=url))
        assert reason_of(info) == "not_a_repository", info.value.message
        assert isinstance(info.value, PermanentError)


def test_empty_remote_has_no_branch(cache: GitCache, tmp_path: Path) -> None:
    RepoBuilder(tmp_path / "bare.git")
    with pytest.raises(GitError) as info:
        cache.fetch("team-a", GitRemote(url=str(tmp_path / "bare.git")))
    assert reason_of(info) == "branch_not_found"


@pytest.mark.parametrize(
    "url",
    [
        "",
        "ftp://127.0.0.1/config.git",
        "http://127.0.0.1:1/config.git",
        "https://127.0.0.1:1/",
        "https://127.0.0.1:bad/config.git",
        "file://elsewhere/config.git",
        "git@host:-oProxyCommand=x",
        "https://127.0.0.1:1/config.git\nHost: evil",
    ],
)
def test_invalid_urls(cache: GitCache, url: str) -> None:
    with pytest.raises(GitError) as info:
        cache.fetch("team-a", GitRemote(url=url))
    assert reason_of(info) == "invalid_url"


def test_password_in_url_is_refused_and_never_shown(cache: GitCache) -> None:
    url = f"https://someone:{TOKEN}@127.0.0.1:1/config.git"
    with pytest.raises(GitError) as info:
        cache.fetch("team-a", GitRemote(url=url))
    assert reason_of(info) == "invalid_url"
    assert TOKEN not in str(info.value) and "someone" not in str(info.value)
    assert "token_env" in str(info.value)


def test_redact_url() -> None:
    assert redact_url(f"https://u:{TOKEN}@example.com/a.git") == "https://example.com/a.git"
    assert redact_url("ssh://git@example.com:22/a.git") == "ssh://example.com:22/a.git"
    assert redact_url("git@example.com:org/a.git") == "example.com:org/a.git"
    assert redact_url("/srv/git/a.git") == "/srv/git/a.git"


def test_credentials_must_match_the_url_form(cache: GitCache, origin: RepoBuilder) -> None:
    cases = [
        (GitRemote(url=origin.url, token_env="GIT_TOKEN"), "invalid_url"),
        (GitRemote(url=origin.url, ssh_key_file="/nonexistent/key"), "invalid_url"),
        (
            GitRemote(url="ssh://git@127.0.0.1:1/a.git", ssh_key_file="/nonexistent/key"),
            "auth_failed",
        ),
        (GitRemote(url="git@127.0.0.1:a.git", ssh_known_hosts="/etc/ssh/known"), "auth_failed"),
    ]
    for remote, reason in cases:
        with pytest.raises(GitError) as info:
            cache.fetch("team-a", remote)
        assert reason_of(info) == reason, info.value.message


def test_missing_token_variable_is_a_clear_error(cache: GitCache) -> None:
    remote = GitRemote(url="https://127.0.0.1:1/config.git", token_env="MISSING_TOKEN")
    with pytest.raises(GitError) as info:
        cache.fetch("team-a", remote)
    assert reason_of(info) == "auth_failed"
    assert "MISSING_TOKEN" in info.value.message and "not set" in info.value.message


def test_unreachable_https_is_temporary_and_hides_the_token(cache: GitCache) -> None:
    remote = GitRemote(url="https://127.0.0.1:1/config.git", token_env="GIT_TOKEN")
    with pytest.raises(GitError) as info:
        cache.fetch("team-a", remote)
    assert reason_of(info) == "unreachable" and isinstance(info.value, TemporaryError)
    assert TOKEN not in str(info.value) and "127.0.0.1" in str(info.value)


def test_fetch_over_git_daemon(cache: GitCache, origin: RepoBuilder) -> None:
    with git_daemon(origin.path.parent) as port:
        remote = GitRemote(url=f"git://127.0.0.1:{port}/config.git")
        outcome = cache.fetch("team-a", remote)
        assert outcome.fetched and outcome.revision == origin.head()
        assert "agents.yaml" in cache.read_directory("team-a", outcome.revision).files
        assert not cache.fetch("team-a", remote).fetched
        newer = origin.commit({".driftgate/agents.yaml": "agents: []\n"})
        assert cache.fetch("team-a", remote) == type(outcome)(revision=newer, fetched=True)
        with pytest.raises(GitError) as info:
            cache.fetch("team-b", GitRemote(url=f"git://127.0.0.1:{port}/missing.git"))
        assert reason_of(info) == "not_a_repository", info.value.message


def test_concurrent_fetches_of_one_source(cache: GitCache, origin: RepoBuilder) -> None:
    remote = GitRemote(url=origin.url)
    barrier = threading.Barrier(4)
    results: list[object] = []

    def fetch() -> None:
        barrier.wait()
        try:
            results.append(cache.fetch("team-a", remote))
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            results.append(exc)

    threads = [threading.Thread(target=fetch) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    revisions = {getattr(result, "revision", result) for result in results}
    assert revisions == {origin.head()}
    assert sum(getattr(result, "fetched", False) for result in results) == 1


def test_lock_held_by_another_process_is_temporary(cache: GitCache, origin: RepoBuilder) -> None:
    remote = GitRemote(url=origin.url)
    cache.fetch("team-a", remote)
    newer = origin.commit({".driftgate/agents.yaml": "agents: []\n"})
    lock = cache.path_for("team-a") / "refs" / "heads" / "main.lock"
    lock.write_text("")  # what a concurrent fetch in another process holds

    with pytest.raises(GitError) as info:
        cache.fetch("team-a", remote)
    assert reason_of(info) == "unreachable" and isinstance(info.value, TemporaryError)
    assert "locked" in info.value.message

    old = time.time() - STALE_LOCK_SECONDS - 60
    os.utime(lock, (old, old))  # a crashed process left it behind
    assert cache.fetch("team-a", remote).revision == newer
    assert not lock.exists()


def test_cache_directory_names_stay_inside_the_root(tmp_path: Path) -> None:
    cache = GitCache(tmp_path / "git")
    names = ["team-a", "Team-A", "../../etc", ".", "..", "a/b", "a_b", "", "x" * 300, "ü"]
    dirs = [cache_dir_name(name) for name in names]
    assert len(set(dirs)) == len(names)
    for directory in dirs:
        assert "/" not in directory and not directory.startswith(".")
        assert len(directory) < 80
        assert cache.path_for("x").parent == cache.root
    assert cache_dir_name("team-a").startswith("team-a-")


# The retry cap: a loopback https server that rejects every credential.


@dataclass
class RejectingServer:
    url: str
    requests: list[str | None] = field(default_factory=list)


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One throwaway self-signed certificate for 127.0.0.1, trusted by libgit2.

    libgit2 keeps one trust store per process and can only add to it, hence one certificate
    per session (a second one with the same subject would be looked up in its place).
    """
    cert_file, key_file = self_signed_certificate(tmp_path_factory.mktemp("tls"))
    pygit2.settings.set_ssl_cert_locations(str(cert_file), None)
    return cert_file, key_file


@contextmanager
def rejecting_https_server(tls_files: tuple[Path, Path]) -> Iterator[RejectingServer]:
    """Answers 401 + `WWW-Authenticate: Basic` to everything, over TLS."""
    seen: list[str | None] = []

    class Handler(QuietHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            seen.append(self.headers.get("Authorization"))
            headers = {"WWW-Authenticate": 'Basic realm="git"'}
            self.answer(401, b"authentication required\n", "text/plain", headers)

    server = Loopback(Handler, tls=tls_files).start()
    try:
        yield RejectingServer(server.url("/org/config.git"), seen)
    finally:
        server.stop()


def test_rejected_credentials_stop_after_two_attempts(
    cache: GitCache, tls_files: tuple[Path, Path]
) -> None:
    with rejecting_https_server(tls_files) as server:
        started = time.monotonic()
        with pytest.raises(GitError) as info:
            cache.fetch("team-a", GitRemote(url=server.url, token_env="GIT_TOKEN"))
        elapsed = time.monotonic() - started
    assert reason_of(info) == "auth_failed", info.value.message
    assert "rejected" in info.value.message and TOKEN not in str(info.value)
    with_credentials = [header for header in server.requests if header]
    assert 1 <= len(with_credentials) <= 2
    assert all(header.startswith("Basic ") for header in with_credentials)
    assert elapsed < 60  # ended, not asking again for ever (a loaded machine took seconds)


def test_https_without_token_asks_for_one(cache: GitCache, tls_files: tuple[Path, Path]) -> None:
    with rejecting_https_server(tls_files) as server:
        with pytest.raises(GitError) as info:
            cache.fetch("team-a", GitRemote(url=server.url))
    assert reason_of(info) == "auth_failed"
    assert "token_env" in info.value.message


# Bounded reads: sizes come from object headers; what cannot be read is said, never skipped.

SUBMODULE = "0123456789abcdef0123456789abcdef01234567"


def test_read_directory_reports_what_it_cannot_read_and_reads_only_wanted_names(
    tmp_path: Path, origin: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    revision = origin.commit(
        {
            ".driftgate/agents.yaml": "../shared/agents.yaml",
            ".driftgate/watch-sets.yaml": SUBMODULE,
            ".driftgate/dashboards.yaml/inner.yaml": "x: 1\n",
            ".driftgate/templates.yaml": "t" * 1025,  # one byte over the limit below
            ".driftgate/profiles/orders.json": "{}",
            ".driftgate/profiles/old.yaml": "../../old.yaml",
            ".driftgate/notes.bin": "n" * 5000,  # not a file the loader reads: never read
            ".driftgate/README.md": "../README.md",  # nor this link
        },
        modes={
            ".driftgate/agents.yaml": FileMode.LINK,
            ".driftgate/watch-sets.yaml": FileMode.COMMIT,
            ".driftgate/profiles/old.yaml": FileMode.LINK,
            ".driftgate/README.md": FileMode.LINK,
        },
    )
    cache = GitCache(tmp_path / "bounded", max_file_bytes=1024)
    cache.fetch("team-a", GitRemote(url=origin.url))
    read_ids: list[str] = []
    real_data = git_source._blob_data

    def recording_data(repo: pygit2.Repository, item: pygit2.Object) -> bytes:
        read_ids.append(str(item.id))
        return real_data(repo, item)

    monkeypatch.setattr(git_source, "_blob_data", recording_data)
    read = cache.read_directory("team-a", revision, wanted=is_read)
    assert read.files == {"profiles/orders.json": b"{}"}
    assert read.unreadable == {
        "agents.yaml": Unreadable("symlink"),
        "watch-sets.yaml": Unreadable("submodule"),
        "dashboards.yaml": Unreadable("directory"),
        "templates.yaml": Unreadable("too_large", 1025, 1024),
        "profiles/old.yaml": Unreadable("symlink"),
    }
    tree = origin.repo.revparse_single(revision).peel(pygit2.Tree)
    assert read_ids == [str(tree[".driftgate/profiles/orders.json"].id)]  # nothing else inflated


@pytest.mark.parametrize(
    ("mode", "content", "kind"),
    [
        (FileMode.LINK, "../shared-profiles", "symlink"),
        (FileMode.COMMIT, SUBMODULE, "submodule"),
        (FileMode.BLOB, "not a directory", "file"),
    ],
)
def test_a_profiles_entry_that_is_not_a_directory_is_unreadable(
    cache: GitCache, origin: RepoBuilder, mode: FileMode, content: str, kind: UnreadableKind
) -> None:
    revision = origin.commit({".driftgate/profiles": content}, modes={".driftgate/profiles": mode})
    cache.fetch("team-a", GitRemote(url=origin.url))
    read = cache.read_directory("team-a", revision, wanted=is_read)
    assert read.unreadable == {"profiles": Unreadable(kind)}
    assert set(read.files) == {"agents.yaml", "templates.yaml"}


def test_files_past_the_revision_total_are_not_read(tmp_path: Path, origin: RepoBuilder) -> None:
    revision = origin.commit(
        {".driftgate/profiles/a.json": "a" * 600, ".driftgate/profiles/b.json": "b" * 600}
    )
    cache = GitCache(tmp_path / "bounded", max_file_bytes=1024, max_revision_bytes=1024)
    cache.fetch("team-a", GitRemote(url=origin.url))
    read = cache.read_directory("team-a", revision, wanted=is_read)
    # agents.yaml and templates.yaml (36 bytes) and profiles/a.json fit; b.json would not.
    assert set(read.files) == {"agents.yaml", "templates.yaml", "profiles/a.json"}
    assert read.unreadable == {"profiles/b.json": Unreadable("over_total", limit=1024)}


def test_a_linked_or_submodule_directory_is_a_read_failure_that_says_so(
    cache: GitCache, origin: RepoBuilder
) -> None:
    revision = origin.commit(
        {"linked": "config", "module": SUBMODULE},
        modes={"linked": FileMode.LINK, "module": FileMode.COMMIT},
    )
    cache.fetch("team-a", GitRemote(url=origin.url))
    for directory, what in (("linked", "a symbolic link"), ("module", "a submodule")):
        with pytest.raises(GitError) as info:
            cache.read_directory("team-a", revision, directory)
        assert reason_of(info) == "read_failed"
        assert f"{directory} at {revision[:12]} is {what}, not a directory" in info.value.message


def test_read_file_reads_one_file_of_the_directory_within_the_limit(
    tmp_path: Path, origin: RepoBuilder
) -> None:
    revision = origin.commit(
        {
            ".driftgate/watch-sets.yaml": "w" * 2000,
            ".driftgate/dashboards.yaml": "../x",
            ".driftgate/profiles/orders.json": "{}",
        },
        modes={".driftgate/dashboards.yaml": FileMode.LINK},
    )
    cache = GitCache(tmp_path / "bounded", max_file_bytes=1024)
    cache.fetch("team-a", GitRemote(url=origin.url))

    def read(file: str) -> bytes | Unreadable | None:
        return cache.read_file("team-a", revision, ".driftgate", file)

    assert read("agents.yaml") == AGENTS.encode()
    assert read("profiles/orders.json") == b"{}"
    assert read("watch-sets.yaml") == Unreadable("too_large", 2000, 1024)
    assert read("dashboards.yaml") == Unreadable("symlink")
    assert read("profiles") == Unreadable("directory")
    # Nothing outside the directory, and nothing that is not there.
    for outside in ("../README.md", "nested/ignored.yaml", "./agents.yaml", "", "missing.yaml"):
        assert read(outside) is None, outside
