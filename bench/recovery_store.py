"""The recovery workload's big store: ``runs`` runs of ``events_per_run`` events, 1% interrupted.

Why it is built this way (docs/adr/0027-benchmark-method.md, "Fixtures"):

* every run goes through ``RuntimeApplication.import_run`` (one save per run carrying all its
  events, through the same gates as live writes) and the interrupted ones through
  ``commit_tool_prepared``, so the store is a real one: no row is written around the library;
* runs are grouped into sessions of ``RUNS_PER_SESSION`` (a host has many sessions; a
  session per group also lets writers in several processes never contend on one session);
* the groups are written by a pool of child processes into the one SQLite file (each
  import's validation and decision is CPU; SQLite serialises the saves themselves); a write
  that lost a race on the shared host lease is retried, as the library asks;
* the result is kept in the bench cache (``bench/cache.py``), keyed by the shape and the code.

The layout is fixed by the shape alone (run ``r<n>`` is in session ``s<n // 100>``; the last
run of every hundred is interrupted), never by the number of workers.
"""

from __future__ import annotations

import multiprocessing
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from itertools import repeat
from pathlib import Path

from bench.fixtures import import_run
from bench.stores import open_app
from maka_es.errors import ConcurrentWriteError

RUNS_PER_SESSION = 100
STORE = "maka.sqlite"


@dataclass(frozen=True)
class Shape:
    """What the store holds; its fields are the cache key's parameters."""

    runs: int
    events_per_run: int

    def params(self) -> dict[str, int]:
        return {**asdict(self), "runs_per_session": RUNS_PER_SESSION}

    def interrupted(self, n: int) -> bool:
        """1% of the runs (the last of each hundred; the first one when there are fewer)."""
        return n % 100 == 99 or (self.runs < 100 and n == 0)

    def interrupted_count(self) -> int:
        return sum(1 for n in range(self.runs) if self.interrupted(n))

    def groups(self) -> Iterator[range]:
        """The run numbers of each session, in order."""
        for first in range(0, self.runs, RUNS_PER_SESSION):
            yield range(first, min(first + RUNS_PER_SESSION, self.runs))


def write_group(path: str, shape: Shape, numbers: range) -> int:
    """One session's runs, written by this process's own application (a pool task)."""
    app = open_app(Path(path))
    try:
        session = f"s{numbers.start // RUNS_PER_SESSION}"
        for n in numbers:
            broken = shape.interrupted(n)
            retrying(
                lambda n=n, broken=broken: import_run(  # type: ignore[misc]
                    app,
                    f"r{n}",
                    shape.events_per_run,
                    interrupted=broken,
                    terminal=not broken,
                    session=session,
                )
            )
    finally:
        app.close()
    return len(numbers)


def retrying(write: Callable[[], None], attempts: int = 5) -> None:
    """``write`` again when it lost a race (``ConcurrentWriteError``: nothing was saved).

    The writers share this host's lease stream (one host id, as the processes of one host
    do), so two renewals that fall due together conflict; the library's answer is "retry".
    A retried import is idempotent: a run already saved gains no event.
    """
    for attempt in range(attempts):
        try:
            write()
            return
        except ConcurrentWriteError:
            if attempt == attempts - 1:
                raise


def build(folder: Path, shape: Shape, *, scratch: Path, workers: int) -> None:
    """The store written under ``scratch`` (tmpfs: no fsync wait), then moved into ``folder``.

    The parent creates the store first, so the children only ever open an existing one.
    """
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    path = scratch / STORE
    open_app(path).close()
    context = multiprocessing.get_context("spawn")  # children start clean: no inherited handle
    with ProcessPoolExecutor(max_workers=max(1, workers), mp_context=context) as pool:
        done = sum(pool.map(write_group, repeat(str(path)), repeat(shape), shape.groups()))
    if done != shape.runs:
        raise RuntimeError(f"recovery store: {done} runs written, {shape.runs} asked")
    folder.mkdir(parents=True, exist_ok=True)
    for item in scratch.iterdir():
        shutil.move(str(item), folder / item.name)
    shutil.rmtree(scratch, ignore_errors=True)
