"""The workspace of a local agent host: its identity marker ``.maka-workspace.json``, kept out of
``git status``, and the ``LocalHostInspector`` that reports it with the host's background work
and tools (docs/reference/continuation.md#workspace-identity).

Why a marker file instead of ``device:inode:path``: a continuation must run in *the same
workspace* it was planned for, but paths move and inodes change when a workspace is copied,
re-cloned or unpacked from an archive. A random UUID stored inside the workspace travels with
it (``mv``, ``tar`` round trips) and two different directories never share one by accident.
The identity string is ``workspace:v1:<workspaceId>``.

Rules the marker follows:

* The cwd is canonicalised with ``realpath``; it must exist (``workspace_not_found``) and be a
  directory (``invalid_workspace``).
* An existing marker is authoritative: it is read, never repaired, replaced or re-bound to the
  path or inode. It must be one regular file (no symlink, no directory, no FIFO) of at most
  4096 bytes holding exactly ``{"schemaVersion": 1, "workspaceId": <uuid>}`` where the UUID is
  canonical lowercase, version 1-8, RFC 4122 variant. Anything else is
  ``invalid_workspace_marker``. As in the reference, surrounding JSON whitespace (including the
  trailing newline the writer emits) is optional on read.
* A missing marker is created with exactly ``{"schemaVersion":1,"workspaceId":"<uuid>"}\\n``
  by a *create-only* publish: the bytes go to a private temp file which is fsynced and then
  hard-linked to the final name. ``link`` never replaces an existing name, so when several
  resolvers race, exactly one marker wins and every loser reads and returns it. The workspace
  directory's device and inode are re-checked around the publish
  (``workspace_identity_changed`` if it was swapped underneath us).
* Inside a Git work tree the marker must never show up as untracked, not even for an instant,
  so the rule ``.maka-workspace.json`` is appended (once, under an exclusive ``flock``) to the
  repository's *local* ``info/exclude`` - of the common git dir for linked worktrees and
  submodules - and this happens *before* a new marker is published. A ``.git`` file that is not
  a valid ``gitdir:`` link is fatal (``workspace_io_failed``, nothing published), and so is a
  symlinked ``.git``, ``info`` or ``exclude`` or a hard-linked ``exclude`` (nothing is written
  through them).
* Every other OS failure is ``workspace_io_failed``.

The Git layout is discovered with plain file handling (no ``git`` executable needed), following
Git's own discovery: a ``.git`` directory that is not a repository is skipped, a ``.git`` file
that is not a valid ``gitdir:`` link is fatal. Confinement (ADR 0013): the exclude file is
reached with ``confined_fs``, one directory at a time, never through a symbolic link: a
symlinked ``.git`` is refused (Git would follow it; a writer must not), as are a symlinked
``info`` or ``exclude`` and an ``exclude`` with another hard link, before a byte is written.
Only a path Git itself was told, the ``gitdir:`` of a ``.git`` file and a ``commondir``, is
followed, like the root of every confined write.

Why an inspector here: the continuation planner depends on the :class:`HostInspector`
protocol (docs/reference/continuation.md#host-facts); :class:`LocalHostInspector` reads the
facts from the file system (the marker, created on first use) and from this process's own
registries, at every inspection, and raises a typed ``WorkspaceIdentityError`` instead of
guessing a path-based identity.

POSIX only (``O_NOFOLLOW``, ``flock``, hard links), like the JSONL ledger.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from maka_es.adapters.confined_fs import (
    SYMLINK_ERRNOS,
    Violation,
    fsync_directory,
    open_directory,
    open_file,
    open_subdirectory,
    read_bounded,
    read_stable_bounded,
    write_all,
)
from maka_es.continuation.host import BackgroundOperationRegistry, CheckpointReader, HostObservation
from maka_es.errors import (
    InvalidWorkspaceError,
    InvalidWorkspaceMarkerError,
    WorkspaceIdentityChangedError,
    WorkspaceIdentityError,
    WorkspaceIoFailedError,
    WorkspaceNotFoundError,
)
from maka_es.tooljournal.runtime import ToolRuntime
from maka_es.wire.base import loads_js

__all__ = [
    "MAX_GIT_EXCLUDE_BYTES",
    "ensure_excluded",
    "find_git_exclude_file",
    "MAX_WORKSPACE_MARKER_BYTES",
    "WORKSPACE_IDENTITY_PREFIX",
    "WORKSPACE_MARKER_FILE",
    "WORKSPACE_MARKER_SCHEMA_VERSION",
    "WorkspaceIdentity",
    "resolve_workspace_identity",
    "serialize_workspace_marker",
    "workspace_identity_of",
    "LocalHostInspector",
]


# === keeping a file out of git status: the local exclude file =====================================

#: The exclude file is bounded so a hostile or runaway file is never slurped or grown further.
MAX_GIT_EXCLUDE_BYTES = 1024 * 1024
#: ``.git`` files and ``commondir`` files hold one path; anything larger is not Git's.
_MAX_GIT_POINTER_BYTES = 64 * 1024

#: Turns a confined-path violation into ``workspace_io_failed``.
_Refuse = Callable[[Violation], WorkspaceIdentityError]


@dataclass(frozen=True)
class _CommonDir:
    """A repository's common git dir as ``base`` (followed: the work tree's parent directory,
    or a path a ``gitdir:``/``commondir`` pointer names) and ``parts`` below it, each opened
    without following a symlink (``(".git",)`` for a plain ``.git`` directory)."""

    base: str
    parts: tuple[str, ...]

    def exclude_path(self) -> str:
        return os.path.join(self.base, *self.parts, "info", "exclude")


def find_git_exclude_file(path: str | Path) -> str | None:
    """The ``info/exclude`` path of the Git repository whose work tree contains ``path``
    (already canonical), or ``None`` outside any work tree.

    Exposed so hosts and tests can check the rule without shelling out to ``git``.
    """
    common = _enclosing_git_common_dir(os.fspath(path))
    return None if common is None else common.exclude_path()


def ensure_excluded(workspace: str, rule: bytes) -> None:
    """Make sure ``rule`` is a line of the local exclude file of the repository around
    ``workspace``; nothing to do outside a Git work tree."""
    common = _enclosing_git_common_dir(workspace)
    if common is not None:
        _add_exclude_rule(common, rule)


def _malformed_git(path: str, reason: str) -> WorkspaceIoFailedError:
    return WorkspaceIoFailedError(
        f"Malformed Git repository at {path}: {reason}", detail={"path": path}
    )


def _enclosing_git_common_dir(start: str) -> _CommonDir | None:
    """Walk up from ``start`` like Git's discovery; the common git dir of the first repository
    found, or ``None`` when ``start`` is not inside a work tree."""
    current = start
    while True:
        common = _common_dir_for_entry(os.path.join(current, ".git"))
        if common is not None:
            return common
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _common_dir_for_entry(entry: str) -> _CommonDir | None:
    try:
        info = os.lstat(entry)
    except (FileNotFoundError, NotADirectoryError):
        return None  # absent: Git keeps walking up
    if stat.S_ISLNK(info.st_mode):
        # Git follows a symlinked ``.git``; a writer must not: it could name any directory.
        raise _malformed_git(entry, "a symbolic link; refusing to follow it")
    if stat.S_ISDIR(info.st_mode):
        # A ``.git`` directory that is not a repository is skipped by Git, and so by us.
        common = _common_dir_if_repository(entry)
        if common is None or common != os.path.realpath(entry):
            return None if common is None else _CommonDir(common, ())
        return _CommonDir(os.path.dirname(entry), (os.path.basename(entry),))
    if stat.S_ISREG(info.st_mode):
        # A ``.git`` file is a promise of a repository elsewhere: Git dies if it is broken, and
        # we refuse too rather than guess which exclude file applies.
        git_dir = _read_git_pointer(entry, prefix=b"gitdir: ", base=os.path.dirname(entry))
        common = _common_dir_if_repository(git_dir)
        if common is None:
            raise _malformed_git(entry, f"gitdir {git_dir} is not a Git repository")
        return _CommonDir(common, ())
    return None


def _common_dir_if_repository(git_dir: str) -> str | None:
    """Git's ``is_git_directory``: ``HEAD`` in the git dir, ``objects/`` and ``refs/`` in its
    common dir (``commondir`` file, used by linked worktrees)."""
    git_dir = os.path.realpath(git_dir)
    if not os.path.isdir(git_dir) or not os.path.lexists(os.path.join(git_dir, "HEAD")):
        return None
    common = git_dir
    commondir_file = os.path.join(git_dir, "commondir")
    if os.path.lexists(commondir_file):
        common = os.path.realpath(_read_git_pointer(commondir_file, prefix=b"", base=git_dir))
    if not (
        os.path.isdir(os.path.join(common, "objects"))
        and os.path.isdir(os.path.join(common, "refs"))
    ):
        return None
    return common


def _read_git_pointer(path: str, *, prefix: bytes, base: str) -> str:
    """Read a one-path Git pointer file (``.git`` file or ``commondir``) like Git does: strip
    trailing CR/LF only; a relative path is relative to ``base``."""

    def invalid(reason: str) -> WorkspaceIdentityError:
        return _malformed_git(path, reason)

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        data = read_bounded(fd, _MAX_GIT_POINTER_BYTES, invalid)
    finally:
        os.close(fd)
    data = data.rstrip(b"\r\n")
    if not data.startswith(prefix):
        raise invalid(f"expected {prefix.decode() or 'a path'}")
    raw = data[len(prefix) :]
    if not raw or b"\x00" in raw:
        raise invalid("no path")
    try:
        target = raw.decode("utf-8")
    except UnicodeDecodeError:
        target = os.fsdecode(raw)
    return target if os.path.isabs(target) else os.path.join(base, target)


def _open_info(common: _CommonDir, refuse: _Refuse) -> int:
    """Descriptor of ``<common>/info`` (created when missing), walked without following a
    symlink; the repository vanishing underneath is ``workspace_io_failed`` too."""
    with open_directory(Path(common.base), common.parts, refuse, create=False) as git_dir:
        if git_dir is None:
            raise _malformed_git(os.path.join(common.base, *common.parts), "it disappeared")
        rel = "/".join((*common.parts, "info"))
        try:
            return open_subdirectory(git_dir, "info", rel, refuse)
        except FileNotFoundError:
            pass
        try:
            os.mkdir("info", 0o755, dir_fd=git_dir)
        except FileExistsError:
            pass  # a concurrent resolver made it: open what is there, still without following
        else:
            fsync_directory(git_dir)
        return open_subdirectory(git_dir, "info", rel, refuse)


def _add_exclude_rule(common: _CommonDir, rule: bytes) -> bool:
    """Append ``rule`` to the exclude file unless a line already equals it; ``True`` if
    appended. Serialised with ``flock`` so concurrent resolvers add it exactly once."""
    exclude = common.exclude_path()

    def invalid(reason: str) -> WorkspaceIdentityError:
        return WorkspaceIoFailedError(
            f"Git exclude must be one bounded regular file: {exclude} ({reason})",
            detail={"path": exclude},
        )

    def refuse(violation: Violation) -> WorkspaceIdentityError:
        return invalid(f"{violation.path} {violation.problem}")

    info = _open_info(common, refuse)
    try:
        rel = "/".join((*common.parts, "info", "exclude"))
        fd = open_file(info, "exclude", os.O_RDWR | os.O_CREAT | os.O_APPEND, rel, refuse)
    finally:
        os.close(info)
    assert fd is not None  # O_CREAT: never absent
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        data = read_stable_bounded(fd, exclude, MAX_GIT_EXCLUDE_BYTES, invalid)
        if any(line.rstrip(b"\r") == rule for line in data.split(b"\n")):
            return False
        separator = b"" if not data or data.endswith(b"\n") else b"\n"
        addition = separator + rule + b"\n"
        if len(data) + len(addition) > MAX_GIT_EXCLUDE_BYTES:
            raise invalid("the rule would exceed the size bound")
        write_all(fd, addition)
        os.fsync(fd)
        return True
    finally:
        os.close(fd)  # releases the flock


# === the workspace identity marker ================================================================

WORKSPACE_MARKER_FILE = ".maka-workspace.json"
WORKSPACE_MARKER_SCHEMA_VERSION = 1
WORKSPACE_IDENTITY_PREFIX = "workspace:v1:"
MAX_WORKSPACE_MARKER_BYTES = 4096

_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
_MARKER_KEYS = frozenset({"schemaVersion", "workspaceId"})
_EXCLUDE_RULE = WORKSPACE_MARKER_FILE.encode("ascii")


@dataclass(frozen=True)
class WorkspaceIdentity:
    """The resolved identity of one workspace directory.

    ``path`` is the realpath the marker was read from; it is diagnostic only (a moved workspace
    keeps its ``identity``). ``created`` is true only for the resolver whose marker was
    published, so exactly one of several racing resolvers reports it.
    """

    identity: str
    workspace_id: str
    path: str
    created: bool


@dataclass(frozen=True)
class _Snapshot:
    path: str
    device: int
    inode: int


def workspace_identity_of(cwd: str) -> str:
    """The identity string of ``cwd``'s marker (created once): the application's default
    ``WorkspaceResolver`` port when it has a host config
    (docs/reference/continuation.md#workspace-identity)."""
    return resolve_workspace_identity(cwd).identity


def resolve_workspace_identity(
    cwd: str | Path,
    *,
    uuid_factory: Callable[[], uuid.UUID] = uuid.uuid4,
) -> WorkspaceIdentity:
    """Read (or create once) the workspace marker of ``cwd`` and return its identity.

    Raises a :class:`~maka_es.errors.WorkspaceIdentityError` subclass with a stable code;
    when it raises, no marker was published by this call. ``uuid_factory`` supplies the id of
    a *new* marker only (tests inject it); an existing marker always wins.
    """
    requested = os.fspath(cwd)
    try:
        snapshot = _snapshot(requested)
        existing = _read_marker(snapshot.path)
        if existing is not None:
            ensure_excluded(snapshot.path, _EXCLUDE_RULE)
            return _identity(snapshot.path, existing, created=False)
        return _create_marker(snapshot, uuid_factory)
    except WorkspaceIdentityError:
        raise
    except OSError as exc:
        raise WorkspaceIoFailedError(
            f"Unable to resolve workspace identity of {requested}: {exc.strerror or exc}",
            detail={
                "path": requested,
                "errno": errno.errorcode.get(exc.errno or 0),
                "filename": exc.filename if isinstance(exc.filename, str) else None,
            },
        ) from exc


def serialize_workspace_marker(workspace_id: str) -> bytes:
    """The exact marker bytes for ``workspace_id`` (which must already be canonical)."""
    if not _UUID_RE.fullmatch(workspace_id):
        raise InvalidWorkspaceMarkerError(
            "Workspace marker candidate has an invalid workspaceId",
            detail={"workspaceId": workspace_id},
        )
    text = f'{{"schemaVersion":{WORKSPACE_MARKER_SCHEMA_VERSION},"workspaceId":"{workspace_id}"}}\n'
    return text.encode("ascii")


# --- resolution steps ------------------------------------------------------------------------


def _identity(path: str, workspace_id: str, *, created: bool) -> WorkspaceIdentity:
    return WorkspaceIdentity(
        identity=f"{WORKSPACE_IDENTITY_PREFIX}{workspace_id}",
        workspace_id=workspace_id,
        path=path,
        created=created,
    )


def _snapshot(requested: str) -> _Snapshot:
    if "\x00" in requested:
        raise InvalidWorkspaceError(
            "Workspace path contains a NUL byte", detail={"path": requested}
        )
    absolute = os.path.abspath(requested)
    try:
        canonical = os.path.realpath(absolute, strict=True)
        info = os.stat(canonical)
    except (FileNotFoundError, NotADirectoryError):
        raise WorkspaceNotFoundError(
            f"Workspace does not exist: {absolute}", detail={"path": absolute}
        ) from None
    except (UnicodeError, ValueError):
        raise InvalidWorkspaceError(
            f"Workspace path is not representable: {absolute!r}", detail={"path": absolute}
        ) from None
    if not stat.S_ISDIR(info.st_mode):
        raise InvalidWorkspaceError(
            f"Workspace is not a directory: {canonical}", detail={"path": canonical}
        )
    return _Snapshot(path=canonical, device=info.st_dev, inode=info.st_ino)


def _assert_snapshot(snapshot: _Snapshot) -> None:
    """The directory we resolved is still the one at its path (not replaced or removed)."""
    try:
        current = os.stat(snapshot.path)
    except (FileNotFoundError, NotADirectoryError):
        current = None
    if (
        current is None
        or not stat.S_ISDIR(current.st_mode)
        or current.st_dev != snapshot.device
        or current.st_ino != snapshot.inode
    ):
        raise WorkspaceIdentityChangedError(
            f"Workspace changed while its marker was being published: {snapshot.path}",
            detail={"path": snapshot.path},
        )


def _create_marker(snapshot: _Snapshot, uuid_factory: Callable[[], uuid.UUID]) -> WorkspaceIdentity:
    candidate = uuid_factory()
    workspace_id = str(candidate) if isinstance(candidate, uuid.UUID) else repr(candidate)
    contents = serialize_workspace_marker(workspace_id)
    # Ignore first: a marker must never be visible to ``git status``, even for an instant, and
    # a Git layout we cannot handle must block the publish instead of dirtying the work tree.
    ensure_excluded(snapshot.path, _EXCLUDE_RULE)
    published = _publish_create_only(snapshot, contents)
    _assert_snapshot(snapshot)
    final = _read_marker(snapshot.path)
    if final is None:
        raise WorkspaceIoFailedError(
            f"Workspace marker disappeared right after publication: {snapshot.path}",
            detail={"path": snapshot.path},
        )
    return _identity(snapshot.path, final, created=published and final == workspace_id)


def _publish_create_only(snapshot: _Snapshot, contents: bytes) -> bool:
    """Publish ``contents`` as the marker unless one exists; ``True`` if ours was published.

    The temp file lives in the workspace (``link`` cannot cross filesystems) and is removed on
    every path; after a successful link the marker has the temp file's fsynced bytes, so no
    reader ever sees a partial marker.
    """
    root = snapshot.path
    marker = os.path.join(root, WORKSPACE_MARKER_FILE)
    temp = os.path.join(root, f"{WORKSPACE_MARKER_FILE}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        try:
            write_all(fd, contents)
            os.fsync(fd)
        finally:
            os.close(fd)
        _assert_snapshot(snapshot)
        try:
            os.link(temp, marker)
        except FileExistsError:
            return False
        # Drop the temp name before the directory fsync so one fsync makes both durable.
        os.unlink(temp)
        _fsync_directory(root)
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)


def _read_marker(root: str) -> str | None:
    """The ``workspaceId`` of the marker in ``root``, or ``None`` when there is no marker."""
    path = os.path.join(root, WORKSPACE_MARKER_FILE)

    def invalid(reason: str) -> WorkspaceIdentityError:
        return InvalidWorkspaceMarkerError(
            f"Invalid workspace marker at {path}: {reason}", detail={"path": path}
        )

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in SYMLINK_ERRNOS:
            raise invalid("must not be a symbolic link") from None
        if exc.errno in (errno.ENOTDIR, errno.ENXIO):
            raise invalid("must be a regular file") from None
        raise
    try:
        data = read_stable_bounded(fd, path, MAX_WORKSPACE_MARKER_BYTES, invalid)
    finally:
        os.close(fd)
    return _parse_marker(data, invalid)


def _parse_marker(data: bytes, invalid: Callable[[str], WorkspaceIdentityError]) -> str:
    try:
        value = loads_js(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise invalid("not strict UTF-8 JSON") from None
    if not isinstance(value, dict) or set(value) != _MARKER_KEYS:
        raise invalid("must be an object with exactly schemaVersion and workspaceId")
    version = value["schemaVersion"]
    if type(version) is not int or version != WORKSPACE_MARKER_SCHEMA_VERSION:
        raise invalid("schemaVersion must be the integer 1")
    workspace_id = value["workspaceId"]
    if not isinstance(workspace_id, str) or not _UUID_RE.fullmatch(workspace_id):
        raise invalid("workspaceId must be a canonical lowercase RFC 4122 UUID (version 1-8)")
    return workspace_id


def _fsync_directory(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# === the local host inspector =====================================================================


class LocalHostInspector:
    """Host facts from this process's authoritative state, read at every :meth:`inspect`.

    * identity and path from the workspace marker (created on first use,
      docs/reference/continuation.md#workspace-identity);
    * background settlement from ``background`` (no registry: nothing runs in background);
    * the tool catalog from ``tool_names`` - a callable is called on every inspection (live
      catalog); a plain iterable is snapshotted once at construction;
    * the optional checkpoint fact from ``checkpoint(session_id)``.
    """

    def __init__(
        self,
        tool_names: Callable[[], Iterable[str]] | Iterable[str],
        background: BackgroundOperationRegistry | None = None,
        checkpoint: CheckpointReader | None = None,
        uuid_factory: Callable[[], uuid.UUID] = uuid.uuid4,
    ) -> None:
        if isinstance(tool_names, str):
            raise TypeError("tool_names must be tool names or a callable, not one string")
        if callable(tool_names):
            self._tool_names: Callable[[], Iterable[str]] = tool_names
        else:
            fixed = tuple(tool_names)
            self._tool_names = lambda: fixed
        self._background = background
        self._checkpoint = checkpoint
        self._uuid_factory = uuid_factory

    @classmethod
    def from_tool_runtime(
        cls,
        runtime: ToolRuntime,
        background: BackgroundOperationRegistry | None = None,
        checkpoint: CheckpointReader | None = None,
        uuid_factory: Callable[[], uuid.UUID] = uuid.uuid4,
    ) -> LocalHostInspector:
        """Inspector whose catalog is the runtime's registered tools at inspection time."""
        return cls(
            lambda: tuple(runtime.tools),
            background=background,
            checkpoint=checkpoint,
            uuid_factory=uuid_factory,
        )

    def inspect(self, session_id: str, cwd: str | Path) -> HostObservation:
        """Current facts for ``session_id`` running in ``cwd``.

        Raises the marker's typed ``WorkspaceIdentityError`` when the workspace identity cannot
        be established; a host never substitutes a path-based identity.
        """
        workspace = resolve_workspace_identity(cwd, uuid_factory=self._uuid_factory)
        settled = True if self._background is None else self._background.settled_for(session_id)
        checkpoint = None if self._checkpoint is None else self._checkpoint(session_id)
        names = self._tool_names()
        if isinstance(names, str):
            raise TypeError("tool_names must yield tool names, not one string")
        return HostObservation(
            workspace_identity=workspace.identity,
            workspace_path=workspace.path,
            background_operations_settled=settled,
            available_tool_names=tuple(names),
            workspace_checkpoint=checkpoint,
        )
