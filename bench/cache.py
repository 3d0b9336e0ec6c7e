"""Fixtures built once and kept under ``build/bench-cache/``, keyed by what wrote them.

Why a cache: the recovery store (10k runs, 1M events) and the 1M-event plan corpus take
minutes to write, and a bench run should spend its time measuring. Why the key is a digest of
the code and not the version string: ``maka_es.__version__`` stays ``0.1.0.dev0`` while the
library changes, and a store written by older code is not the store today's code would write
(docs/adr/0027-benchmark-method.md, "Fixtures").

The key of an entry is a digest of: its kind and parameters; the text of every ``*.py`` file of
the installed ``maka_es`` package (the whole library, since any module may change what is
stored: models, codec, mapper, recorder); the bench modules that drive the writing
(``WRITERS``, plus the kind's own builder); and the versions of Python, SQLite, eventsourcing
and pydantic. Any change to one of them names a different entry, so a stale fixture is never
reused; an older entry of the same kind and parameters is removed when the new one is stored.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import sys
import time
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import maka_es

BENCH = Path(__file__).resolve().parent
#: The bench modules whose code decides what a fixture holds (a kind may name more).
WRITERS = ("cache.py", "fixtures.py", "stores.py")
MANIFEST = "manifest.json"


def source_files(
    package: Path, bench: Path = BENCH, writers: tuple[str, ...] = WRITERS
) -> list[Path]:
    """The files whose text is hashed into a key, in a stable order."""
    library = sorted(package.rglob("*.py"))
    return [*library, *(bench / name for name in sorted(writers))]


def code_digest(
    package: Path | None = None, bench: Path = BENCH, writers: tuple[str, ...] = WRITERS
) -> str:
    """sha256 over the library's and the fixture writers' source text, with their paths."""
    root = package or Path(maka_es.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in source_files(root, bench, writers):
        name = path.relative_to(root) if path.is_relative_to(root) else Path("bench", path.name)
        digest.update(str(name).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def versions() -> dict[str, str]:
    """What else shapes a stored fixture besides the code: the runtime and its libraries."""
    return {
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "maka_es": maka_es.__version__,
        "eventsourcing": metadata.version("eventsourcing"),
        "pydantic": metadata.version("pydantic"),
    }


def _short(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]


def entry_name(kind: str, params: Mapping[str, Any], digest: str | None = None) -> str:
    """``<kind>-<parameters digest>-<code and versions digest>``: the fixture's folder name.

    The parameters have their own part so that entries of other sizes (the quick bench's
    small store beside the full one) are kept when a stale entry is replaced.
    """
    code = {"code": digest or code_digest(), "versions": versions()}
    return f"{kind}-{_short(dict(params))}-{_short(code)}"


def cached(
    cache: Path,
    kind: str,
    params: Mapping[str, Any],
    build: Callable[[Path], None],
    *,
    writers: tuple[str, ...] = WRITERS,
    digest: str | None = None,
) -> tuple[Path, float | None]:
    """The folder of the entry for ``(kind, params)``, built by ``build(folder)`` if missing.

    Returns the folder and the seconds building took (``None`` when it was already there).
    The folder appears only once complete (built under a temporary name, then renamed), so an
    interrupted build is never taken for a fixture.
    """
    name = entry_name(kind, params, digest or code_digest(writers=writers))
    folder = cache / name
    if (folder / MANIFEST).is_file():
        return folder, None
    cache.mkdir(parents=True, exist_ok=True)
    same_params = name.rsplit("-", 1)[0] + "-*"
    for left in cache.glob(f".partial-{same_params}"):  # an interrupted build's leftovers
        shutil.rmtree(left, ignore_errors=True)
    partial = cache / f".partial-{name}"
    partial.mkdir()
    began = time.perf_counter()
    build(partial)
    seconds = time.perf_counter() - began
    manifest = {"kind": kind, "params": dict(params), "build_s": round(seconds, 1)}
    (partial / MANIFEST).write_text(json.dumps({**manifest, "versions": versions()}, indent=1))
    for stale in cache.glob(same_params):
        shutil.rmtree(stale, ignore_errors=True)
    partial.rename(folder)
    return folder, seconds
