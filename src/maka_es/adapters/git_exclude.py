"""Keep a file out of ``git status``: find the repository's local exclude file and add a rule.

Why: the workspace marker (``maka_es.adapters.workspace_marker``) is written into the user's
work tree and must never show up as untracked, not even for an instant. So its rule is appended
(once, under an exclusive ``flock``) to the repository's *local* ``info/exclude`` - of the
common git dir for linked worktrees and submodules - before the marker is published.

The Git layout is discovered with plain file handling (no ``git`` executable needed), following
Git's own discovery: a ``.git`` directory that is not a repository is skipped, a ``.git`` file
that is not a valid ``gitdir:`` link is fatal. Every refusal is ``workspace_io_failed``
(docs/reference/continuation.md#workspace-identity). POSIX only (``O_NOFOLLOW``, ``flock``).

Confinement (ADR 0013): the exclude file is reached with ``confined_fs``, one directory at a
time, never through a symbolic link: a symlinked ``.git`` is refused (Git would follow it; a
writer must not), as are a symlinked ``info`` or ``exclude`` and an ``exclude`` with another
hard link, before a byte is written. Only a path Git itself was told, the ``gitdir:`` of a
``.git`` file and a ``commondir``, is followed, like the root of every confined write.
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from maka_es.adapters.bounded_read import read_bounded, read_stable_bounded
from maka_es.adapters.confined_fs import (
    Violation,
    fsync_directory,
    open_directory,
    open_file,
    open_subdirectory,
    write_all,
)
from maka_es.errors import WorkspaceIdentityError, WorkspaceIoFailedError

__all__ = ["MAX_GIT_EXCLUDE_BYTES", "ensure_excluded", "find_git_exclude_file"]

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
