"""Child process that runs the example agent and can be killed inside its Write.

Run as ``python -m maka_es.testing.example_child EXAMPLE DATA_DIR [POINT]``, ``EXAMPLE`` the
agent's file (``maka_es/example_agent.py`` for the demo, or ``examples/two_tool_agent.py``,
which re-exports it). Why a wrapper and
not the example itself: the example is what a host would write, with nothing test-shaped in it.
This child adds two things around it, in its own process only:

* a probe: every real write of a workspace file appends one line to ``DATA_DIR/writes.log``
  (fsynced), so the parent can count writes across a SIGKILL and a restart;
* a kill point (``POINT``): the child prints ``INSIDE`` and blocks there until the parent sends
  SIGKILL. ``before_write`` is after T1, before the file is replaced; ``after_write`` right
  after the file was replaced; ``before_t2``, ``inside_t2`` (rows inserted, COMMIT not reached)
  and ``after_t2`` are the named failpoints of the tool journal and the store, armed only once
  the write has landed, so each of them is inside the Write's window
  (docs/adr/0006-failpoints-and-crash-harness.md).
"""

from __future__ import annotations

import os
import runpy
import sys
import time
from pathlib import Path
from typing import Any

from maka_es import failpoints
from maka_es.adapters import file_write
from maka_es.tooljournal.runtime import AFTER_T2, BEFORE_T2

WRITE_LOG = "writes.log"
#: Kill points after the write landed: the failpoint armed once the file was replaced.
AFTER_LANDED = {
    "before_t2": BEFORE_T2,
    "inside_t2": failpoints.INSIDE_SAVE_BEFORE_COMMIT,
    "after_t2": AFTER_T2,
}
POINTS = ("before_write", "after_write", *AFTER_LANDED)


def block(_: str = "") -> None:
    """Say where we are and wait for the parent's SIGKILL (never return)."""
    sys.stdout.write("INSIDE\n")
    sys.stdout.flush()
    while True:
        time.sleep(60)


def _log_write(root: Path, relative: str) -> None:
    fd = os.open(root / WRITE_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, f"{relative}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def instrument(root: Path, point: str | None) -> None:
    """Wrap the workspace write with the probe and, when ``point`` is given, the kill point."""
    original = file_write.write_workspace_file

    def write(workspace: Path, relative: str, data: bytes) -> None:
        if point == "before_write":
            block()
        _log_write(root, relative)
        original(workspace, relative, data)
        if point == "after_write":
            block()
        if point in AFTER_LANDED:
            failpoints.arm(AFTER_LANDED[point], block)

    setattr(file_write, "write_workspace_file", write)  # noqa: B010 - the tool reads it late


def main(argv: list[str]) -> Any:
    example, root = Path(argv[0]), Path(argv[1])
    point = argv[2] if len(argv) > 2 else None
    if point is not None and point not in POINTS:
        raise SystemExit(f"unknown kill point {point!r}; one of {POINTS}")
    instrument(root, point)
    sys.argv = [str(example), str(root)]
    return runpy.run_path(str(example), run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
