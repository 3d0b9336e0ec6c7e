"""Evidence for "nothing outside the root was touched" when hostile symlinks are planted.

Why: a refusal of a planted symlink is only worth something if the file the link points to kept
its bytes *and* its modification time, nothing new appeared next to it, and no link below the
root was created, replaced or removed. :class:`Outside` is a directory outside the root under
test with a sentinel file whose mtimes are pinned to a fixed past instant, so even a rewrite
with identical bytes within one clock tick would show; :func:`symlinks_under` lists the links
below a root without following any.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

#: A fixed instant (2001-09-09) for every mtime in an :class:`Outside` tree.
PINNED_NS = 1_000_000_000 * 1_000_000_000

Entry = tuple[str, bytes, int]  # (kind, bytes of a file or target of a link, mtime ns)


@dataclass(frozen=True)
class Outside:
    """A directory that nothing under test may change; ``sentinel`` is a file in it."""

    path: Path
    sentinel: Path

    def snapshot(self) -> dict[str, Entry]:
        """Every entry below :attr:`path` (itself included), without following links."""
        entries: dict[str, Entry] = {}
        for directory, dirnames, filenames in os.walk(self.path, followlinks=False):
            for name in [".", *dirnames, *filenames]:
                full = Path(directory) / name
                info = full.lstat()
                key = str(full.relative_to(self.path))
                if stat.S_ISLNK(info.st_mode):
                    entries[key] = ("link", os.fsencode(os.readlink(full)), info.st_mtime_ns)
                elif stat.S_ISDIR(info.st_mode):
                    entries[key] = ("dir", b"", info.st_mtime_ns)
                else:
                    entries[key] = ("file", full.read_bytes(), info.st_mtime_ns)
        return entries

    def pin(self) -> None:
        """Set every mtime below :attr:`path` to :data:`PINNED_NS`."""
        for directory, dirnames, filenames in os.walk(self.path, followlinks=False):
            for name in [*dirnames, *filenames]:
                os.utime(Path(directory) / name, ns=(PINNED_NS, PINNED_NS), follow_symlinks=False)
        os.utime(self.path, ns=(PINNED_NS, PINNED_NS))


def make_outside(path: Path, content: bytes = b"sentinel: must never change\n") -> Outside:
    """Create ``path`` (outside every root under test) with a pinned sentinel file in it."""
    path.mkdir(parents=True)
    sentinel = path / "sentinel.txt"
    sentinel.write_bytes(content)
    outside = Outside(path, sentinel)
    outside.pin()
    return outside


def symlinks_under(root: Path) -> dict[str, str]:
    """``relative path -> link target`` of every symlink below ``root`` (none followed)."""
    links: dict[str, str] = {}
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        for name in [*dirnames, *filenames]:
            full = Path(directory) / name
            if full.is_symlink():
                links[str(full.relative_to(root))] = os.readlink(full)
    return links
