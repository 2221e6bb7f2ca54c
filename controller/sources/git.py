"""Git sources: fetch a branch into a bare cache repository and read config files from it.

Each source gets one bare repository under the cache root, never a work tree. A fetch asks
the remote for its refs first (ls-remote) and downloads only when the branch head differs
from the cached one; the refspec is forced (`+`), so a rewritten history is fetched like any
other change. Files are read straight from the object database at a given revision, bounded:
only the names the caller wants, each file's size taken from its object header before its
content is read, a limit per file and per directory read; what cannot be read (too large, a
symbolic link, a submodule, a directory where a file belongs) is returned with the reason.

Credentials come from the caller's mapping (https: a token sent as basic auth; ssh: a key
file) through libgit2's credentials callback, which is asked at most twice per fetch: libgit2
asks again after every rejection and would otherwise loop. No credential is ever written to
the cache (remotes are anonymous), to a message or to a log line; URLs in messages have their
userinfo stripped, and a URL that carries a password is refused.

SSH host keys are checked by libgit2 against `~/.ssh/known_hosts` of the user running the
controller; an unknown or changed host key fails the fetch. pygit2 does not hand the host key
to Python, so `GitRemote.ssh_known_hosts` cannot point libgit2 at another file: a remote
that sets it is refused with a message saying so, rather than silently not checked.

Concurrency: fetches of one source are serialized by a per-cache lock inside the process.
Across processes libgit2 guards each ref update with a `<ref>.lock` file; a fetch that finds
one fails with a temporary `GitError("unreachable")` and is retried. Lock files older than
`STALE_LOCK_SECONDS` are left-overs of a crashed process and are removed before a fetch.
Reads need no lock: objects are immutable and packs appear atomically.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import SplitResult, unquote, urlsplit

import pygit2
from pygit2.enums import CredentialType, FileMode

from controller.errors import DriftgateError, PermanentError, TemporaryError
from controller.model.gitops import (
    MAX_FILE_BYTES,
    MAX_REVISION_BYTES,
    Unreadable,
    UnreadableKind,
)

logger = logging.getLogger("driftgate.git")

MAX_CREDENTIAL_ATTEMPTS = 2
"""Credentials handed to libgit2 per fetch; a third request means the remote rejected them."""

STALE_LOCK_SECONDS = 600
"""A ref lock is held for milliseconds; one older than this was left by a crashed process."""

DEFAULT_TOKEN_USER = "x-access-token"

REASONS = (
    "unreachable",
    "auth_failed",
    "branch_not_found",
    "not_a_repository",
    "invalid_url",
    "read_failed",
)

_HEX_SHA = re.compile(r"[0-9a-f]{40}")
_SCHEMES = ("file", "git", "https", "ssh")
_SCP_LIKE = re.compile(r"(?:(?P<user>[^@/:\s]+)@)?(?P<host>[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\]):")


@dataclass(frozen=True)
class GitRemote:
    """Where a source lives: a URL (or local path), a branch and the credentials to use."""

    url: str
    branch: str = "main"
    token_env: str | None = None
    ssh_key_file: str | None = None
    ssh_known_hosts: str | None = None


# Subdirectories of `.driftgate/` read one level deep (their files only): consumer profiles
# and split watch-set files.
SUBDIRECTORIES = ("profiles", "watch-sets")


class GitError(DriftgateError):
    """A git operation failed; `reason` is one of `REASONS` and stable for status conditions.

    Only "unreachable" is worth retrying soon: it is raised as `GitTemporaryError`; every
    other reason as `GitPermanentError`. Catch `GitError` to handle both.
    """

    code = "git_error"

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class GitTemporaryError(GitError, TemporaryError):
    """The remote or the cache could not be reached or locked right now."""


class GitPermanentError(GitError, PermanentError):
    """Retrying will not help until the configuration, the credentials or the remote change."""


@dataclass(frozen=True)
class FetchOutcome:
    revision: str
    fetched: bool


def set_network_timeouts(connect_seconds: float, read_seconds: float) -> None:
    """Bound libgit2's connects and socket reads; process-wide, so call it once at start-up."""
    pygit2.settings.server_connect_timeout = int(connect_seconds * 1000)
    pygit2.settings.server_timeout = int(read_seconds * 1000)


@dataclass(frozen=True)
class DirectoryFiles:
    """What `GitCache.read_directory` found: the content of each file read, by name, and why
    each path that should have been read was not (a problem at that path for the caller)."""

    files: dict[str, bytes]
    unreadable: dict[str, Unreadable]


class GitCache:
    """Bare cache repositories, one per source, under `root`; files read from them are bounded
    by `max_file_bytes` each and `max_revision_bytes` per directory read."""

    def __init__(
        self,
        root: Path,
        env: Mapping[str, str] | None = None,
        *,
        max_file_bytes: int = MAX_FILE_BYTES,
        max_revision_bytes: int = MAX_REVISION_BYTES,
    ) -> None:
        self.root = Path(root)
        self.env: Mapping[str, str] = env if env is not None else {}
        self.max_file_bytes = max_file_bytes
        self.max_revision_bytes = max_revision_bytes

    def path_for(self, name: str) -> Path:
        """The cache repository of source `name`: a readable slug plus a hash of the name."""
        return self.root / cache_dir_name(name)

    def fetch(self, name: str, remote: GitRemote) -> FetchOutcome:
        """Bring the cache of `name` up to the remote branch head and return that revision."""
        target = _parse_remote(remote)
        credentials = self._credentials(name, remote, target)
        path = self.path_for(name)
        with _lock_for(path):
            repo = _open_or_init(path)
            try:
                _remove_stale_locks(path, remote.branch)
                return _fetch_branch(repo, name, remote.branch, target, credentials)
            finally:
                repo.free()

    def read_directory(
        self,
        name: str,
        revision: str,
        directory: str = ".driftgate",
        *,
        wanted: Callable[[str], bool] | None = None,
    ) -> DirectoryFiles:
        """The files directly inside `directory` at `revision` that `wanted` accepts, by name,
        and those of its SUBDIRECTORIES as `profiles/<name>` and `watch-sets/<name>`; `wanted`
        None accepts every name but those of subdirectories. Names it refuses are not read.

        Each file's size comes from its object header before any content is read: a file over
        `max_file_bytes`, or one that would take the files read past `max_revision_bytes`, is
        not read. Those, an accepted name that is not a regular file (a symbolic link, a
        submodule, a directory) and a subdirectory name that is not a directory are listed in
        `unreadable` with the reason, never skipped in silence. A missing directory gives
        nothing; a revision that is not in the cache is `GitError("read_failed")`.
        """
        repo = self._open_existing(name, revision)
        try:
            tree = _directory_tree(repo, name, revision, directory)
            if tree is None:
                return DirectoryFiles({}, {})
            unreadable: dict[str, Unreadable] = {}
            blobs: list[tuple[str, pygit2.Object]] = []
            for prefix, level in _levels(tree, unreadable):
                for item in level:
                    path = prefix + (item.name or "")
                    if not item.name or (not prefix and item.name in SUBDIRECTORIES):
                        continue  # a subdirectory read as a level of its own, or reported
                    mode = item.filemode
                    if not (wanted(path) if wanted else mode != FileMode.TREE):
                        continue
                    if mode in (FileMode.BLOB, FileMode.BLOB_EXECUTABLE):
                        blobs.append((path, item))
                    else:
                        unreadable[path] = Unreadable(_kind_of(mode, want_file=True))
            files: dict[str, bytes] = {}
            total = 0
            for path, item in blobs:
                size = _blob_size(repo, item)
                if size > self.max_file_bytes:
                    unreadable[path] = Unreadable("too_large", size, self.max_file_bytes)
                elif total + size > self.max_revision_bytes:
                    unreadable[path] = Unreadable("over_total", limit=self.max_revision_bytes)
                else:
                    total += size
                    files[path] = _blob_data(repo, item)
            return DirectoryFiles(files, unreadable)
        except pygit2.GitError as exc:
            raise GitPermanentError(
                f"source {name}: cannot read {directory} at {revision[:12]}: {exc}", "read_failed"
            ) from None
        finally:
            repo.free()

    def read_file(
        self, name: str, revision: str, directory: str, file: str
    ) -> bytes | Unreadable | None:
        """One file that `read_directory` would read (`file` is a name directly inside
        `directory`, `profiles/<name>` or `watch-sets/<name>`): its content when it is a
        regular file within `max_file_bytes` (its size is read first), else why not; None
        when there is no such file at `revision`. Nothing outside `directory` is ever read."""
        parts = file.split("/")
        if any(part in ("", ".", "..") for part in parts) or not (
            len(parts) == 1 or (len(parts) == 2 and parts[0] in SUBDIRECTORIES)
        ):
            return None
        repo = self._open_existing(name, revision)
        try:
            tree = _directory_tree(repo, name, revision, directory)
            if tree is None:
                return None
            try:
                item = tree[file]
            except KeyError:
                return None
            if item.filemode not in (FileMode.BLOB, FileMode.BLOB_EXECUTABLE):
                return Unreadable(_kind_of(item.filemode, want_file=True))
            size = _blob_size(repo, item)
            if size > self.max_file_bytes:
                return Unreadable("too_large", size, self.max_file_bytes)
            return _blob_data(repo, item)
        except pygit2.GitError as exc:
            raise GitPermanentError(
                f"source {name}: cannot read {file} at {revision[:12]}: {exc}", "read_failed"
            ) from None
        finally:
            repo.free()

    def revision_exists(self, name: str, revision: str) -> bool:
        """True when `revision` is a commit in the cache of `name`."""
        if not _HEX_SHA.fullmatch(revision) or not (self.path_for(name) / "HEAD").is_file():
            return False
        try:
            repo = pygit2.Repository(str(self.path_for(name)))
        except pygit2.GitError:
            return False
        try:
            return _commit_at(repo, revision) is not None
        finally:
            repo.free()

    def _open_existing(self, name: str, revision: str) -> pygit2.Repository:
        if not _HEX_SHA.fullmatch(revision):
            raise GitPermanentError(
                f"source {name}: {revision!r} is not a full commit id (40 hex digits)",
                "read_failed",
            )
        path = self.path_for(name)
        if not (path / "HEAD").is_file():
            raise GitPermanentError(
                f"source {name}: nothing has been fetched yet, so {revision[:12]} is not cached",
                "read_failed",
            )
        try:
            return pygit2.Repository(str(path))
        except pygit2.GitError as exc:
            raise GitPermanentError(
                f"source {name}: the git cache at {path} is damaged ({exc}); delete it to rebuild",
                "read_failed",
            ) from None

    def _credentials(self, name: str, remote: GitRemote, target: _Target) -> _Credentials:
        if remote.token_env is not None and target.scheme != "https":
            raise GitPermanentError(
                f"source {name}: token_env is used with https:// URLs only, not {target.display}",
                "invalid_url",
            )
        if remote.ssh_key_file is not None and target.scheme != "ssh":
            raise GitPermanentError(
                f"source {name}: ssh_key_file is used with ssh URLs only, not {target.display}",
                "invalid_url",
            )
        if remote.ssh_known_hosts is not None:
            raise GitPermanentError(
                f"source {name}: ssh_known_hosts is not supported; host keys are checked "
                "against ~/.ssh/known_hosts of the user running the controller, add the host "
                "key there and remove ssh_known_hosts",
                "auth_failed",
            )
        token: str | None = None
        if remote.token_env is not None:
            token = self.env.get(remote.token_env) or None
            if token is None:
                raise GitPermanentError(
                    f"source {name}: the environment variable {remote.token_env} named by "
                    "token_env is not set or empty",
                    "auth_failed",
                )
        if remote.ssh_key_file is not None and not Path(remote.ssh_key_file).is_file():
            raise GitPermanentError(
                f"source {name}: ssh_key_file {remote.ssh_key_file} does not exist",
                "auth_failed",
            )
        return _Credentials(token=token, ssh_key_file=remote.ssh_key_file)


def cache_dir_name(name: str) -> str:
    """A directory name for source `name` that cannot escape the root or collide with another."""
    slug = re.sub(r"[^a-z0-9_.-]+", "-", name.lower()).strip(".-")[:48] or "source"
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{slug}-{digest}.git"


def redact_url(url: str) -> str:
    """`url` without its userinfo, for messages and logs."""
    if "://" in url:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        return parts._replace(netloc=host).geturl()
    match = _SCP_LIKE.match(url)
    if match and "/" not in url[: match.end()]:
        return url[match.start("host") :]
    return url


# Helpers.


@dataclass(frozen=True)
class _Target:
    scheme: str  # "local", "file", "git", "https" or "ssh"
    url: str  # what libgit2 is given
    display: str  # what messages show


@dataclass(frozen=True)
class _Credentials:
    token: str | None
    ssh_key_file: str | None


class _CredentialsRejected(Exception):
    pass


class _CredentialsMissing(Exception):
    def __init__(self, wanted: str) -> None:
        super().__init__(wanted)
        self.wanted = wanted


class _Callbacks(pygit2.RemoteCallbacks):
    """Hands out the configured credentials at most `MAX_CREDENTIAL_ATTEMPTS` times."""

    def __init__(self, credentials: _Credentials) -> None:
        super().__init__()
        self._credentials = credentials
        self.attempts = 0

    def credentials(
        self, url: str, username_from_url: str | None, allowed_types: CredentialType
    ) -> pygit2.UserPass | pygit2.Keypair | pygit2.Username:
        secrets = CredentialType.USERPASS_PLAINTEXT | CredentialType.SSH_KEY
        if allowed_types & CredentialType.USERNAME and not allowed_types & secrets:
            # ssh asks for the user name first when the URL has none; not an attempt.
            return pygit2.Username(username_from_url or "git")
        self.attempts += 1
        if self.attempts > MAX_CREDENTIAL_ATTEMPTS:
            raise _CredentialsRejected
        token, key_file = self._credentials.token, self._credentials.ssh_key_file
        if allowed_types & CredentialType.USERPASS_PLAINTEXT and token is not None:
            return pygit2.UserPass(username_from_url or DEFAULT_TOKEN_USER, token)
        if allowed_types & CredentialType.SSH_KEY and key_file is not None:
            public = key_file + ".pub"
            return pygit2.Keypair(
                username_from_url or "git",
                public if Path(public).is_file() else None,
                key_file,
                "",
            )
        wanted = "an ssh_key_file" if allowed_types & CredentialType.SSH_KEY else "a token_env"
        raise _CredentialsMissing(wanted)

    def certificate_check(self, certificate: None, valid: bool, host: bytes) -> bool:
        # pygit2's default accepts every ssh host key; libgit2's own verdict (TLS chain and
        # name, or ~/.ssh/known_hosts) is `valid`, and that is what decides.
        return valid


_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _lock_for(path: Path) -> threading.Lock:
    key = str(path.resolve())
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def _parse_remote(remote: GitRemote) -> _Target:
    url = remote.url
    if not url or any(ord(char) < 32 or ord(char) == 127 for char in url):
        raise GitPermanentError(f"{url!r} is not a git URL", "invalid_url")
    if not pygit2.reference_is_valid_name(f"refs/heads/{remote.branch}"):
        raise GitPermanentError(
            f"{remote.branch!r} is not a valid branch name ({redact_url(url)})",
            "branch_not_found",
        )
    if "://" in url:
        return _parse_scheme_url(url)
    match = _SCP_LIKE.match(url)
    if match and "/" not in url[: match.end()]:
        path = url[match.end() :]
        if not path or path.startswith("-") or any(char.isspace() for char in url):
            raise GitPermanentError(f"{redact_url(url)} is not a valid ssh URL", "invalid_url")
        return _Target("ssh", url, redact_url(url))
    local = Path(url).resolve()
    return _Target("local", str(local), str(local))


def _parse_scheme_url(url: str) -> _Target:
    display = redact_url(url)
    try:
        parts: SplitResult = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        raise GitPermanentError(f"{display} is not a valid URL", "invalid_url") from None
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise GitPermanentError(
            f"{display}: unsupported URL scheme {scheme!r}; use a local path, file://, git://, "
            "https://, ssh:// or user@host:path",
            "invalid_url",
        )
    if parts.password is not None:
        raise GitPermanentError(
            f"{display}: the URL carries a password; put the token in an environment variable "
            "and name it in token_env",
            "invalid_url",
        )
    if scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path:
            raise GitPermanentError(f"{display} is not a valid file:// URL", "invalid_url")
        return _Target("file", url, display)
    if not parts.hostname or not parts.path.strip("/") or any(c.isspace() for c in url):
        raise GitPermanentError(f"{display} names no host or no repository", "invalid_url")
    return _Target(scheme, url, display)


def _open_or_init(path: Path) -> pygit2.Repository:
    """Open the cache; create it first (in a temporary directory, renamed into place)."""
    if not (path / "HEAD").is_file():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".init-{path.name}-", dir=path.parent))
            try:
                pygit2.init_repository(str(staging), bare=True)
                staging.rename(path)
            except OSError:
                if not (path / "HEAD").is_file():  # not another process winning the race
                    raise
            finally:
                shutil.rmtree(staging, ignore_errors=True)
        except (OSError, pygit2.GitError) as exc:
            raise GitPermanentError(
                f"cannot create the git cache at {path}: {exc}", "read_failed"
            ) from None
    try:
        return pygit2.Repository(str(path))
    except pygit2.GitError as exc:
        raise GitPermanentError(
            f"the git cache at {path} is damaged ({exc}); delete it to rebuild", "read_failed"
        ) from None


def _remove_stale_locks(path: Path, branch: str) -> None:
    cutoff = time.time() - STALE_LOCK_SECONDS
    for lock in (path / f"refs/heads/{branch}.lock", path / "packed-refs.lock"):
        try:
            if lock.stat().st_mtime < cutoff:
                lock.unlink()
                logger.warning("removed a stale git lock file", extra={"fields": {"path": lock}})
        except FileNotFoundError:
            continue


def _fetch_branch(
    repo: pygit2.Repository, name: str, branch: str, target: _Target, credentials: _Credentials
) -> FetchOutcome:
    if target.scheme in ("local", "file"):
        local = Path(unquote(urlsplit(target.url).path) if target.scheme == "file" else target.url)
        if not local.exists():
            raise GitPermanentError(
                f"source {name}: {target.display} does not exist", "not_a_repository"
            )
    ref = f"refs/heads/{branch}"
    callbacks = _Callbacks(credentials)
    remote = repo.remotes.create_anonymous(target.url)
    try:
        heads = remote.list_heads(callbacks=callbacks)
        head = next((h for h in heads if h.name == ref), None)
        if head is None:
            raise GitPermanentError(
                f"source {name}: branch {branch} does not exist in {target.display}",
                "branch_not_found",
            )
        wanted = str(head.oid)
        cached = repo.references.get(ref)
        if cached is not None and str(cached.target) == wanted and _commit_at(repo, wanted):
            return FetchOutcome(revision=wanted, fetched=False)
        remote.fetch([f"+{ref}:{ref}"], callbacks=callbacks, message=f"driftgate fetch {name}")
        fetched = repo.references.get(ref)
        if fetched is None:  # the branch vanished between ls-remote and fetch
            raise GitTemporaryError(
                f"source {name}: branch {branch} disappeared from {target.display} during the "
                "fetch; will retry",
                "unreachable",
            )
        revision = str(fetched.target)
        logger.info(
            "fetched git source",
            extra={"fields": {"source": name, "url": target.display, "revision": revision}},
        )
        return FetchOutcome(revision=revision, fetched=True)
    except GitError:
        raise
    except _CredentialsRejected:
        raise GitPermanentError(
            f"source {name}: {target.display} rejected the credentials "
            f"({MAX_CREDENTIAL_ATTEMPTS} attempts)",
            "auth_failed",
        ) from None
    except _CredentialsMissing as exc:
        raise GitPermanentError(
            f"source {name}: {target.display} requires authentication; configure {exc.wanted}",
            "auth_failed",
        ) from None
    except pygit2.GitError as exc:
        raise _translate(exc, name, target, credentials) from None
    finally:
        del remote  # frees the remote and closes its connection now


def _translate(
    exc: pygit2.GitError, name: str, target: _Target, credentials: _Credentials
) -> GitError:
    detail = str(exc).replace(target.url, target.display)
    if credentials.token:
        detail = detail.replace(credentials.token, "***")
    lowered = detail.lower()
    where = f"source {name}: {target.display}"
    if "failed to lock" in lowered or "is locked" in lowered:
        return GitTemporaryError(
            f"source {name}: the git cache is locked by another fetch ({detail}); will retry",
            "unreachable",
        )
    if isinstance(exc, pygit2.CertificateError) or "certificate" in lowered or "hostkey" in lowered:
        return GitPermanentError(
            f"{where}: the server's identity could not be verified ({detail})", "auth_failed"
        )
    if isinstance(exc, pygit2.AuthError) or re.search(r"\b40[13]\b|authenticat", lowered):
        return GitPermanentError(f"{where}: authentication failed ({detail})", "auth_failed")
    not_found = (
        "could not find repository",
        "not a git repository",
        "repository not found",
        "not exported",
        "does not appear to be a git repository",
        "status code: 404",
    )
    if any(text in lowered for text in not_found):
        return GitPermanentError(f"{where} is not a git repository ({detail})", "not_a_repository")
    if "unsupported url protocol" in lowered:
        return GitPermanentError(f"{where}: unsupported URL ({detail})", "invalid_url")
    return GitTemporaryError(f"{where}: {detail}", "unreachable")


def _commit_at(repo: pygit2.Repository, revision: str) -> pygit2.Commit | None:
    try:
        found = repo.get(revision)
    except (ValueError, pygit2.GitError):
        return None
    return found if isinstance(found, pygit2.Commit) else None


def _directory_tree(
    repo: pygit2.Repository, name: str, revision: str, directory: str
) -> pygit2.Tree | None:
    """The tree of `directory` at `revision`; None when it is missing."""
    commit = _commit_at(repo, revision)
    if commit is None:
        raise GitPermanentError(
            f"source {name}: revision {revision} is not in the git cache; fetch it first",
            "read_failed",
        )
    tree = commit.tree
    parts = [part for part in directory.strip("/").split("/") if part not in ("", ".")]
    if not parts:
        return tree
    try:
        entry = tree["/".join(parts)]
    except KeyError:
        return None
    if entry.filemode != FileMode.TREE or not isinstance(entry, pygit2.Tree):
        what = {"symlink": "a symbolic link", "submodule": "a submodule"}.get(
            _kind_of(entry.filemode, want_file=False), "a file"
        )
        raise GitPermanentError(
            f"source {name}: {directory} at {revision[:12]} is {what}, not a directory",
            "read_failed",
        )
    return entry


def _levels(
    tree: pygit2.Tree, unreadable: dict[str, Unreadable]
) -> Iterator[tuple[str, pygit2.Tree]]:
    """The directory itself, then each of its SUBDIRECTORIES (consumer profiles, one file
    each, read as `profiles/<name>`; watch-set files as `watch-sets/<name>`); a subdirectory
    entry that is not a directory goes to `unreadable`."""
    yield "", tree
    for item in tree:
        if item.name in SUBDIRECTORIES:
            if item.filemode == FileMode.TREE and isinstance(item, pygit2.Tree):
                yield f"{item.name}/", item
            else:
                unreadable[item.name] = Unreadable(_kind_of(item.filemode, want_file=False))


def _kind_of(mode: int, *, want_file: bool) -> UnreadableKind:
    """Why a tree entry of `mode` is not what was wanted (a file, or a directory)."""
    if mode == FileMode.LINK:
        return "symlink"
    if mode == FileMode.COMMIT:
        return "submodule"
    return "directory" if want_file else "file"


def _blob_size(repo: pygit2.Repository, item: pygit2.Object) -> int:
    """The size of a blob from its object header: `Object.size` would inflate the whole blob
    (a 200 MiB blob takes a second and 200 MiB), the header takes microseconds, packed or
    loose, delta or not."""
    return int(repo.odb.read_header(item.id)[1])


def _blob_data(repo: pygit2.Repository, item: pygit2.Object) -> bytes:
    blob = repo[item.id]
    assert isinstance(blob, pygit2.Blob)
    return bytes(blob.data)
