"""Workspace identity marker ``.maka-workspace.json``
(docs/reference/continuation.md#workspace-identity).

Why a marker file instead of ``device:inode:path``: a continuation must run in *the same
workspace* it was planned for, but paths move and inodes change when a workspace is copied,
re-cloned or unpacked from an archive. A random UUID stored inside the workspace travels with
it (``mv``, ``tar`` round trips) and two different directories never share one by accident.
The identity string is ``workspace:v1:<workspaceId>``.

Rules this module enforces:

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
* Inside a Git work tree the marker must never show up as untracked, so the rule
  ``.maka-workspace.json`` is appended (once, under an exclusive ``flock``) to the repository's
  *local* ``info/exclude`` - of the common git dir for linked worktrees and submodules - and
  this happens *before* a new marker is published. The Git side lives in
  ``maka_es.adapters.git_exclude``: a ``.git`` file that is not a valid ``gitdir:`` link is
  fatal there (``workspace_io_failed``, nothing published), and so is a symlinked ``.git``,
  ``info`` or ``exclude`` or a hard-linked ``exclude`` (nothing is written through them).
* Every other OS failure is ``workspace_io_failed``.

POSIX only (``O_NOFOLLOW``, ``flock``, hard links), like the JSONL ledger.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from maka_es.adapters.bounded_read import SYMLINK_ERRNOS, read_stable_bounded
from maka_es.adapters.confined_fs import write_all
from maka_es.adapters.git_exclude import (
    MAX_GIT_EXCLUDE_BYTES,
    ensure_excluded,
    find_git_exclude_file,
)
from maka_es.errors import (
    InvalidWorkspaceError,
    InvalidWorkspaceMarkerError,
    WorkspaceIdentityChangedError,
    WorkspaceIdentityError,
    WorkspaceIoFailedError,
    WorkspaceNotFoundError,
)
from maka_es.wire.base import loads_js

__all__ = [
    "MAX_GIT_EXCLUDE_BYTES",
    "MAX_WORKSPACE_MARKER_BYTES",
    "WORKSPACE_IDENTITY_PREFIX",
    "WORKSPACE_MARKER_FILE",
    "WORKSPACE_MARKER_SCHEMA_VERSION",
    "WorkspaceIdentity",
    "find_git_exclude_file",
    "resolve_workspace_identity",
    "serialize_workspace_marker",
    "workspace_identity_of",
]

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
