"""File access where others may be: confined writes below a root, bounded reads of files the
runtime does not own, and the check of an output path an operator names.

**Confined file access**: below a root, one component at a time, never through a symbolic
link. The ``Write`` tool and the JSONL ledger write files whose names come from data (a tool
argument, a session or run id). Checking a path string (``resolve()``) and opening it again
later is a check-then-use race, and a plain ``open`` follows symlinks: a link planted in the
workspace or the ledger tree would redirect a write to any file the process may write. Here
instead:

* every directory below the root is opened relative to its parent's descriptor with
  ``O_NOFOLLOW | O_DIRECTORY``, so a symlink anywhere below the root is refused, not followed,
  and once a directory is open, swapping a symlink into its place no longer changes where the
  write lands (the descriptor keeps naming the directory that was checked);
* files are opened with ``O_NOFOLLOW | O_NONBLOCK`` and must be regular files (a FIFO would
  block a reader forever, a device is nobody's ledger);
* a file opened for writing in place (an append) must have exactly one name: a hard link
  planted below the root makes a file elsewhere, maybe outside the root, the same inode, and
  writing "into" it would change that file too. Whole-file writes never write through a name:
  the rename below gives the name a new inode and leaves the other names' bytes as they were;
* a whole-file write goes to a temporary file created with ``O_EXCL | O_NOFOLLOW`` under a
  random name, is fsynced, renamed over the target through the directory descriptor, and the
  directory is fsynced: the file is always either the old or the new content.

The root itself is followed: where it lives is the caller's choice (a symlinked workspace is
fine). The confined operations know no error codes: callers turn a :class:`Violation` into
their own typed refusal.

**Bounded reads**: consistent reads of small regular files that someone else may be changing.
The workspace marker, Git's pointer files and Git's exclude file live in directories the
runtime does not own. A hostile or runaway file must never be slurped whole, a FIFO or device
must never block a reader, and a file swapped or rewritten while being read must be refused
instead of trusted. Every bounded reader takes ``invalid``, which turns a short reason into the
caller's own typed refusal, so each caller keeps its error code
(docs/reference/continuation.md#workspace-identity).

**Output paths**: where an operator asks for output (a run report, an exported JSONL ledger),
usable or refused. ``report -o`` and ``export -o`` write what the operator names, and a path
that cannot take it (its parent missing or a file, a directory where a file belongs or the
reverse, a directory this process may not write) must be the same typed refusal,
``report_output_invalid`` with ``detail.path`` and ``detail.reason``, raised before the store is
read and before anything is created, instead of an ``OSError`` from halfway through the write.

POSIX only (``O_NOFOLLOW``, ``dir_fd``), like the rest of the infrastructure.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from maka_es.errors import ReportOutputError

__all__ = [
    "Refuse",
    "Violation",
    "child_directories",
    "entry_kind",
    "ensure_replaceable",
    "fsync_directory",
    "open_directory",
    "open_file",
    "open_subdirectory",
    "read_all",
    "read_file",
    "replace_file",
    "temp_token",
    "write_all",
    "SYMLINK_ERRNOS",
    "Invalid",
    "read_bounded",
    "read_stable_bounded",
    "OutputKind",
    "refuse_unusable_output",
]


# === confined file access below a root ============================================================

ViolationKind = Literal["symlink", "not_directory", "not_regular_file", "temp_exists", "hardlink"]
EntryKind = Literal["absent", "symlink", "directory", "regular", "other"]


@dataclass(frozen=True)
class Violation:
    """Why a path below the root was refused; ``path`` is relative to the root."""

    kind: ViolationKind
    path: str

    @property
    def problem(self) -> str:
        """What is wrong with ``path``, as the end of a sentence that names it."""
        return _PROBLEMS[self.kind]


_PROBLEMS: dict[ViolationKind, str] = {
    "symlink": "is a symbolic link; refusing to follow it",
    "not_directory": "is not a directory",
    "not_regular_file": "is not a regular file",
    "temp_exists": "already exists (a temporary file name must be fresh)",
    "hardlink": (
        "has other hard links (another name, maybe outside the root, is the same file); "
        "refusing to write through it"
    ),
}


#: Turns a violation into the caller's typed refusal (raised by the helpers below).
Refuse = Callable[[Violation], Exception]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
#: ``open(O_NOFOLLOW)`` on a symlink fails with ELOOP (Linux, macOS) or EMLINK (FreeBSD).
_SYMLINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK})
_MAX_NAME_BYTES = 255


def temp_token() -> str:
    """Random part of a temporary file name: nobody can plant anything at a name they cannot
    predict (and ``O_EXCL`` refuses it if they try)."""
    return secrets.token_hex(16)


def _below(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel else name


def entry_kind(dir_fd: int, name: str) -> EntryKind:
    """What ``name`` in ``dir_fd`` is, without following it."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return "absent"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "directory"
    return "regular" if stat.S_ISREG(mode) else "other"


def _violation(dir_fd: int, name: str, rel: str, otherwise: ViolationKind) -> Violation:
    kind: ViolationKind = "symlink" if entry_kind(dir_fd, name) == "symlink" else otherwise
    return Violation(kind, rel)


# --- directories ------------------------------------------------------------------------------


def fsync_directory(dir_fd: int) -> None:
    os.fsync(dir_fd)


def open_subdirectory(parent: int, name: str, rel: str, refuse: Refuse) -> int:
    """Open the directory ``name`` in ``parent`` without following it (``FileNotFoundError``
    when it is absent); a symlink or a non-directory there is refused."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        # Linux answers ENOTDIR for O_DIRECTORY|O_NOFOLLOW on a symlink; lstat tells which.
        if exc.errno == errno.ENOTDIR or exc.errno in _SYMLINK_ERRNOS:
            raise refuse(_violation(parent, name, rel, "not_directory")) from None
        raise


def _child_directory(parent: int, name: str, rel: str, refuse: Refuse, create: bool) -> int | None:
    try:
        return open_subdirectory(parent, name, rel, refuse)
    except FileNotFoundError:
        if not create:
            return None
    try:
        os.mkdir(name, 0o777, dir_fd=parent)
    except FileExistsError:
        pass  # a concurrent creator won: open what is there, still without following it
    else:
        fsync_directory(parent)  # the new entry survives a power loss with what goes into it
    return open_subdirectory(parent, name, rel, refuse)


def _walk(root: Path, parts: Sequence[str], refuse: Refuse, create: bool) -> int | None:
    if create:
        root.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        if create:
            raise
        return None
    for index, name in enumerate(parts):
        parent = fd
        try:
            child = _child_directory(parent, name, "/".join(parts[: index + 1]), refuse, create)
        finally:
            os.close(parent)
        if child is None:
            return None
        fd = child
    return fd


@contextmanager
def open_directory(
    root: Path, parts: Sequence[str], refuse: Refuse, *, create: bool
) -> Iterator[int | None]:
    """Descriptor of ``root/parts...`` walked without following links below ``root``.

    With ``create`` missing directories are made (the root with its parents, the rest one by
    one, each parent fsynced); without it, a missing directory yields ``None``. A symlink or a
    non-directory on the way is refused through ``refuse``.
    """
    fd = _walk(root, parts, refuse, create)
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def child_directories(
    dir_fd: int, rel: str, refuse: Refuse, accept: Callable[[str], bool]
) -> list[str]:
    """Names of the sub-directories of ``dir_fd`` that ``accept`` takes (unsorted).

    An accepted name that is a symlink is refused rather than skipped: a listing that silently
    left it out would under-report what is there, and following it would leave the root.
    Entries ``accept`` rejects, and plain files, are not ours and are ignored.
    """
    names: list[str] = []
    with os.scandir(dir_fd) as entries:
        for entry in entries:
            if not accept(entry.name):
                continue
            if entry.is_symlink():
                raise refuse(Violation("symlink", _below(rel, entry.name)))
            if entry.is_dir(follow_symlinks=False):
                names.append(entry.name)
    return names


# --- files ------------------------------------------------------------------------------------


def open_file(dir_fd: int, name: str, flags: int, rel: str, refuse: Refuse) -> int | None:
    """Open the regular file ``name`` in ``dir_fd`` without following it; ``None`` if it is
    absent (and ``flags`` has no ``O_CREAT``). Symlinks and non-regular files are refused, and
    so is a file opened for writing that has more than one hard link (see module doc)."""
    try:
        fd = os.open(name, flags | _FILE_FLAGS, 0o644, dir_fd=dir_fd)
    except FileNotFoundError:
        if flags & os.O_CREAT:  # the directory itself is gone: not "absent", an error
            raise
        return None
    except OSError as exc:
        if exc.errno in _SYMLINK_ERRNOS:
            raise refuse(Violation("symlink", rel)) from None
        if exc.errno in (errno.EISDIR, errno.ENXIO):  # a directory; a FIFO or socket
            raise refuse(Violation("not_regular_file", rel)) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise refuse(Violation("not_regular_file", rel))
        if flags & os.O_ACCMODE != os.O_RDONLY and info.st_nlink > 1:
            raise refuse(Violation("hardlink", rel))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    """One ``write`` in the normal case; loops only if the kernel reports a short write."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def read_file(dir_fd: int, name: str, rel: str, refuse: Refuse) -> bytes | None:
    """The bytes of the regular file ``name`` in ``dir_fd``; ``None`` when it is absent."""
    fd = open_file(dir_fd, name, os.O_RDONLY, rel, refuse)
    if fd is None:
        return None
    try:
        return read_all(fd)
    finally:
        os.close(fd)


def ensure_replaceable(dir_fd: int, name: str, rel: str, refuse: Refuse) -> None:
    """Refuse unless ``name`` is absent or a regular file: a write never replaces a symlink
    (the caller asked for a file, the link says it lives elsewhere) or a special file."""
    kind = entry_kind(dir_fd, name)
    if kind == "symlink":
        raise refuse(Violation("symlink", rel))
    if kind not in ("absent", "regular"):
        raise refuse(Violation("not_regular_file", rel))


def _temp_name(name: str) -> str:
    candidate = f".{name}.{temp_token()}.tmp"
    if len(os.fsencode(candidate)) <= _MAX_NAME_BYTES:
        return candidate
    return f".maka.{temp_token()}.tmp"  # a long target name must not make the write fail


def replace_file(dir_fd: int, name: str, data: bytes, rel: str, refuse: Refuse) -> None:
    """Replace ``name`` in ``dir_fd`` with ``data`` atomically and durably (see module doc).

    The temporary file is removed on every failure path; an existing name at the random temp
    name (only possible if planted) is refused, never opened.
    """
    ensure_replaceable(dir_fd, name, rel, refuse)
    temp = _temp_name(name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(temp, flags, 0o644, dir_fd=dir_fd)
    except FileExistsError:
        where = _below(rel.rpartition("/")[0], temp)
        raise refuse(_violation(dir_fd, temp, where, "temp_exists")) from None
    try:
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    fsync_directory(dir_fd)


# === bounded reads of files someone else may be changing ==========================================

#: ``open(O_NOFOLLOW)`` on a symlink fails with ELOOP (Linux, macOS) or EMLINK (FreeBSD).
SYMLINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK})

#: Turns a short reason ("not a regular file", ...) into the caller's typed refusal.
Invalid = Callable[[str], Exception]


def read_bounded(fd: int, max_bytes: int, invalid: Invalid) -> bytes:
    """At most ``max_bytes`` of a regular file, refusing anything else or anything larger."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise invalid("not a regular file")
    if info.st_size > max_bytes:
        raise invalid(f"larger than {max_bytes} bytes")
    chunks: list[bytes] = []
    total = 0
    while total <= max_bytes:
        chunk = os.pread(fd, max_bytes + 1 - total, total)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > max_bytes:
        raise invalid(f"larger than {max_bytes} bytes")
    return b"".join(chunks)


def read_stable_bounded(fd: int, path: str, max_bytes: int, invalid: Invalid) -> bytes:
    """One consistent snapshot of the regular file at ``path`` opened as ``fd``.

    The open file must still be the one named by ``path`` (same device/inode, checked with
    ``lstat``) and must not change while being read; otherwise the read is refused instead of
    trusting a file that was swapped or is being written.
    """
    before = _same_file_stat(fd, path, invalid)
    data = read_bounded(fd, max_bytes, invalid)
    after = _same_file_stat(fd, path, invalid)
    if (
        before.st_size != after.st_size
        or before.st_mtime_ns != after.st_mtime_ns
        or len(data) != before.st_size
    ):
        raise invalid("changed while being read")
    return data


def _same_file_stat(fd: int, path: str, invalid: Invalid) -> os.stat_result:
    handle = os.fstat(fd)
    try:
        named = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise invalid("removed while being read") from None
    if (
        not stat.S_ISREG(handle.st_mode)
        or not stat.S_ISREG(named.st_mode)
        or (handle.st_dev, handle.st_ino) != (named.st_dev, named.st_ino)
    ):
        raise invalid("not a regular file")
    return handle


# === output paths an operator names ===============================================================

#: What the output is: one file (a report) or a directory tree (a JSONL ledger root).
OutputKind = Literal["file", "directory"]


def _problem(target: Path, kind: OutputKind) -> str | None:
    """Why nothing of ``kind`` can be written at ``target`` (``None``: it can be tried)."""
    if target.exists():
        if kind == "file" and target.is_dir():
            return "is_a_directory"
        if kind == "directory" and not target.is_dir():
            return "not_a_directory"
        where = target if kind == "directory" else target.parent
    else:
        where = target.parent
        if not where.exists():
            return "parent_missing"
        if not where.is_dir():
            return "parent_not_a_directory"
    if not os.access(where, os.W_OK | os.X_OK):  # also false for root on an immutable directory
        return "not_writable"
    return None


def refuse_unusable_output(target: Path, *, kind: OutputKind, what: str) -> None:
    """Raise ``report_output_invalid`` when ``what`` (``"a report"``, ``"a ledger"``) cannot be
    written at ``target``. A ``directory`` may exist (it is written into) or be created in an
    existing, writable parent; a ``file`` replaces a file or is created in such a parent."""
    problem = _problem(target, kind)
    if problem is not None:
        raise ReportOutputError(
            f"cannot write {what} to {str(target)!r}: {problem.replace('_', ' ')}",
            detail={"path": str(target), "reason": problem},
        )
