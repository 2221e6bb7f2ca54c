"""Real git repositories for tests: a builder that commits with pygit2 and a `git daemon`.

`isolated_git_config()` points libgit2's global, XDG and system config search paths at an
empty directory (pygit2's own tests do the same), so the machine's git config cannot change
what a test sees. Commits use an explicit signature with a clock that ticks once per commit.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pygit2
from pygit2.enums import ConfigLevel, FileMode

from tests.processes import started

_CONFIG_LEVELS = (ConfigLevel.GLOBAL, ConfigLevel.XDG, ConfigLevel.SYSTEM)


@contextmanager
def isolated_git_config(empty_dir: Path) -> Iterator[None]:
    """Make libgit2 read no global, XDG or system config while the block runs."""
    empty_dir.mkdir(parents=True, exist_ok=True)
    saved = {level: pygit2.settings.search_path[level] for level in _CONFIG_LEVELS}
    for level in _CONFIG_LEVELS:
        pygit2.settings.search_path[level] = str(empty_dir)
    try:
        yield
    finally:
        for level, value in saved.items():
            pygit2.settings.search_path[level] = value


class RepoBuilder:
    """A bare repository at `path` (the "remote" of a test) and commits made without a work tree."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.repo = pygit2.init_repository(str(path), bare=True, initial_head="main")
        self._clock = 1_700_000_000

    @property
    def url(self) -> str:
        """The repository as a file:// URL (`str(builder.path)` is the local-path form)."""
        return self.path.as_uri()

    def commit(
        self,
        files: Mapping[str, str | bytes | None],
        message: str = "change",
        branch: str = "main",
        *,
        modes: Mapping[str, FileMode] | None = None,
    ) -> str:
        """Commit `files` (path -> content; None deletes) on top of `branch`; return the sha.

        `modes` gives an entry another mode than a regular file: `FileMode.LINK` (the content
        is the link's target) or `FileMode.COMMIT` (a submodule; the content is its commit
        id). A branch that does not exist yet starts a new history with no parent.
        """
        ref = f"refs/heads/{branch}"
        current = self.repo.references.get(ref)
        parents: list[pygit2.Oid] = []
        contents: dict[str, tuple[pygit2.Oid, int]] = {}
        if current is not None:
            parent = self.repo[current.target]
            assert isinstance(parent, pygit2.Commit)
            parents = [parent.id]
            contents = dict(self._flatten(parent.tree, ""))
        for path, content in files.items():
            mode = (modes or {}).get(path, FileMode.BLOB)
            if content is None:
                contents.pop(path, None)
            elif mode == FileMode.COMMIT:
                contents[path] = (pygit2.Oid(hex=str(content)), mode)
            else:
                data = content.encode() if isinstance(content, str) else content
                contents[path] = (self.repo.create_blob(data), mode)
        tree = self._write_tree(contents)
        self._clock += 60
        signature = pygit2.Signature("driftgate tests", "tests@driftgate.invalid", self._clock, 0)
        oid = self.repo.create_commit(ref, signature, signature, message, tree, parents)
        return str(oid)

    def force_reset(self, sha: str, branch: str = "main") -> None:
        """Point `branch` at `sha` whatever it pointed at before (a force-push)."""
        self.repo.references.create(f"refs/heads/{branch}", pygit2.Oid(hex=sha), force=True)

    def delete_branch(self, branch: str) -> None:
        self.repo.references.delete(f"refs/heads/{branch}")

    def head(self, branch: str = "main") -> str:
        return str(self.repo.references[f"refs/heads/{branch}"].target)

    def _flatten(
        self, tree: pygit2.Tree, prefix: str
    ) -> Iterator[tuple[str, tuple[pygit2.Oid, int]]]:
        for entry in tree:
            path = f"{prefix}{entry.name}"
            if entry.filemode == FileMode.TREE:
                assert isinstance(entry, pygit2.Tree)
                yield from self._flatten(entry, path + "/")
            else:
                yield path, (entry.id, entry.filemode)

    def _write_tree(self, contents: Mapping[str, tuple[pygit2.Oid, int]]) -> pygit2.Oid:
        files: dict[str, tuple[pygit2.Oid, int]] = {}
        folders: dict[str, dict[str, tuple[pygit2.Oid, int]]] = {}
        for path, entry in contents.items():
            head, _, rest = path.partition("/")
            if rest:
                folders.setdefault(head, {})[rest] = entry
            else:
                files[head] = entry
        builder = self.repo.TreeBuilder()
        for name, (oid, mode) in files.items():
            builder.insert(name, oid, mode)
        for name, inner in folders.items():
            builder.insert(name, self._write_tree(inner), FileMode.TREE)
        return builder.write()


@contextmanager
def git_daemon(base_dir: Path) -> Iterator[int]:
    """Serve every repository under `base_dir` read-only over git:// on 127.0.0.1; yield the port.

    `git://127.0.0.1:<port>/<path relative to base_dir>` reaches a repository.
    """
    port = _free_port()
    home = base_dir.parent / f".git-daemon-home-{port}"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    command = [
        "git",
        "daemon",
        "--reuseaddr",
        "--export-all",
        f"--base-path={base_dir}",
        "--listen=127.0.0.1",
        f"--port={port}",
        str(base_dir),
    ]
    # In a session of its own: stopped with the upload-pack processes it forks per fetch.
    with started(
        command,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=5,
    ) as process:
        _wait_for_port(port, process)
        yield port


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"git daemon exited with status {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"git daemon did not listen on 127.0.0.1:{port} within {timeout}s")
