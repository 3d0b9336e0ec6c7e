"""Parent side of the SIGKILL crash harness (see ``crash_child``).

Why a real process and a real kill: an in-process "crash" (an exception) unwinds, closes
connections and runs ``finally`` blocks; only SIGKILL shows what a dead process leaves behind.
Synchronisation is by pipe (the child says READY/INSIDE once the point is reached), never by
sleeping.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class CrashOutcome:
    said: str
    returncode: int
    finally_marker_written: bool
    stderr: str


class CrashHarnessError(RuntimeError):
    """The child died or misbehaved before reaching the crash point."""


def crash_child(
    db: Path,
    steps: list[dict[str, Any]],
    *,
    arm_inside_save: bool = False,
    failpoint: tuple[str, int, int] | None = None,
    timeout: float = 60.0,
    store: str | None = None,
) -> CrashOutcome:
    """Run ``steps`` in a child, SIGKILL it at the crash point, report what happened.

    ``failpoint=(name, nth, step)`` arms the named failpoint just before step index ``step``
    and kills the child at its ``nth`` hit from there on. ``store`` is the store setting the
    child opens (a PostgreSQL URL, ADR 0028); by default the SQLite file ``db``, whose folder
    also holds the ``finally`` marker in both cases."""
    marker = db.with_name(db.name + ".finally")
    marker.unlink(missing_ok=True)
    scenario = {
        "db": str(db) if store is None else store,
        "marker": str(marker),
        "steps": steps,
        "arm_inside_save": arm_inside_save,
        "failpoint": None
        if failpoint is None
        else {"name": failpoint[0], "nth": failpoint[1], "step": failpoint[2]},
    }
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    child = subprocess.Popen(
        [sys.executable, "-m", "maka_es.testing.crash_child"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert child.stdin is not None
    assert child.stdout is not None
    assert child.stderr is not None
    try:
        child.stdin.write(json.dumps(scenario) + "\n")
        child.stdin.flush()
        said = child.stdout.readline().strip()
        if said not in {"READY", "INSIDE"}:
            child.kill()
            _, err = child.communicate(timeout=timeout)
            raise CrashHarnessError(f"child said {said!r} before the crash point: {err}")
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=timeout)
        err = child.stderr.read()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=timeout)
        child.stdin.close()
        child.stdout.close()
        child.stderr.close()
    return CrashOutcome(said, child.returncode, marker.exists(), err)
