"""Bounded, consistent reads of small regular files that someone else may be changing.

Why: the workspace marker, Git's pointer files and Git's exclude file live in directories the
runtime does not own. A hostile or runaway file must never be slurped whole, a FIFO or device
must never block a reader, and a file swapped or rewritten while being read must be refused
instead of trusted. Every reader here takes ``invalid``, which turns a short reason into the
caller's own typed refusal, so each caller keeps its error code
(docs/reference/continuation.md#workspace-identity). POSIX only.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable

__all__ = ["SYMLINK_ERRNOS", "Invalid", "read_bounded", "read_stable_bounded"]

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
