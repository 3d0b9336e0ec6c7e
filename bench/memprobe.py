"""``python -m bench.memprobe PATH RUN_ID``: cold ``plan_resume`` in a fresh process, printing
``seconds peak_bytes``.

The time is taken on a first fresh application; the peak is the Python heap's (tracemalloc)
during ``plan_resume`` on a second fresh application, so tracing never slows the timed call.
Why a child process: nothing the bench already loaded or cached is in it.
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from pathlib import Path

from bench.stores import open_app


def main(path: str, run_id: str) -> None:
    app = open_app(Path(path))
    start = time.perf_counter()
    app.plan_resume(run_id)
    elapsed = time.perf_counter() - start
    app.close()
    again = open_app(Path(path))
    tracemalloc.start()
    again.plan_resume(run_id)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    again.close()
    print(f"{elapsed} {peak}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
