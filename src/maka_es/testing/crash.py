"""The SIGKILL crash harness, parent side: the kit's scripted steps and a host's own agent.

:func:`crash_child` runs the kit's scripted steps in a child process (``crash_child``).

Why a real process and a real kill: an in-process "crash" (an exception) unwinds, closes
connections and runs ``finally`` blocks; only SIGKILL shows what a dead process leaves behind.
Synchronisation is by pipe (the child says READY/INSIDE once the point is reached), never by
sleeping.

:class:`AgentCrashHarness` kills a host's own agent with SIGKILL at a failpoint.

Why a second harness: :func:`crash_child` replays the kit's own scripted steps; a host
wants to kill *its* agent (its tools, its loop) at the tool journal's or the store's named
points, then restart it and check what recovery did. The child is this module itself
(``python -m maka_es.testing.crash TARGET POINT NTH [ARG ...]``, :func:`agent_child`):
``TARGET`` is ``package.module:function`` or ``path/to/file.py:function``, called with the
string ``ARG``s; when ``POINT`` is not ``-`` that failpoint is armed and at its ``NTH`` hit the
child prints :data:`INSIDE` and blocks until the SIGKILL; a function that returns prints
:data:`FINISHED` and its ``repr``. Synchronisation is by that stdout line, never by sleeping
(docs/adr/0006-failpoints-and-crash-harness.md, docs/testing.md).
"""

from __future__ import annotations

import importlib
import json
import os
import runpy
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maka_es import failpoints

#: The child's line at the kill point (prefixed so a host's own output cannot be mistaken for it).
INSIDE = "@@maka-es INSIDE"
#: The child's line when the function returned without reaching the kill point.
FINISHED = "@@maka-es FINISHED"


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


@dataclass(frozen=True)
class AgentCrashOutcome:
    """What one child run did: killed at the point, or finished (``result`` is its ``repr``)."""

    killed: bool
    returncode: int
    output: tuple[str, ...]
    result: str | None
    stderr: str


class AgentCrashHarness:
    """Runs ``module:function`` (or ``file.py:function``) in a child process.

    ``kill_at(target, point, *args)`` SIGKILLs the child at the ``nth`` hit of the failpoint
    ``point``; ``run(target, *args)`` runs it to the end (the restart, typically). The child
    gets this process's ``sys.path``, so it imports what the test imports.
    """

    def __init__(self, timeout: float = 60.0) -> None:
        self.timeout = timeout

    def kill_at(self, target: str, point: str, *args: str, nth: int = 1) -> AgentCrashOutcome:
        outcome = self._spawn(target, point, nth, args)
        if not outcome.killed:
            raise CrashHarnessError(
                f"{target} finished without reaching {point!r} (hit {nth}): {outcome.stderr}"
            )
        return outcome

    def run(self, target: str, *args: str) -> AgentCrashOutcome:
        outcome = self._spawn(target, "-", 1, args)
        if outcome.returncode != 0:
            raise CrashHarnessError(
                f"{target} failed (exit {outcome.returncode}): {outcome.stderr}"
            )
        return outcome

    def _spawn(self, target: str, point: str, nth: int, args: tuple[str, ...]) -> AgentCrashOutcome:
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": os.pathsep.join(entry for entry in sys.path if entry),
        }
        command = [sys.executable, "-m", "maka_es.testing.crash", target, point, str(nth)]
        child = subprocess.Popen(
            [*command, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        assert child.stdout is not None
        output: list[str] = []
        killed, result = False, None
        try:
            for line in child.stdout:
                line = line.rstrip("\n")
                if line == INSIDE:
                    child.send_signal(signal.SIGKILL)
                    killed = True
                    break
                if line.startswith(FINISHED):
                    result = line[len(FINISHED) :].strip()
                    break
                output.append(line)
            _, stderr = child.communicate(timeout=self.timeout)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=self.timeout)
        return AgentCrashOutcome(killed, child.returncode, tuple(output), result, stderr)


# === the child side of AgentCrashHarness ===================================================


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def resolve_target(target: str) -> Callable[..., Any]:
    """The function ``target`` names (``module:function`` or ``file.py:function``)."""
    where, _, name = target.rpartition(":")
    if not where or not name:
        raise SystemExit(f"target {target!r} is not 'module:function' or 'file.py:function'")
    if where.endswith(".py"):
        namespace = runpy.run_path(where, run_name="maka_es_crash_child")
        function = namespace.get(name)
    else:
        function = getattr(importlib.import_module(where), name, None)
    if not callable(function):
        raise SystemExit(f"target {target!r}: no function {name!r}")
    return function  # type: ignore[no-any-return]


def arm(point: str, nth: int) -> None:
    """Say INSIDE and block (until SIGKILL) at the ``nth`` hit of ``point``."""
    hits = 0

    def action(_: str) -> None:
        nonlocal hits
        hits += 1
        if hits == nth:
            _say(INSIDE)
            sys.stdin.buffer.read()  # the parent never writes: only the kill ends this

    failpoints.arm(point, action)


def agent_child(argv: list[str]) -> None:
    """The child side (``python -m maka_es.testing.crash TARGET POINT NTH [ARG ...]``): call
    ``TARGET`` with the ``ARG``s, killed at the ``NTH`` hit of ``POINT`` (``-``: never)."""
    target, point, nth, *args = argv
    function = resolve_target(target)
    if point != "-":
        arm(point, int(nth))
    result = function(*args)
    _say(f"{FINISHED} {result!r}")


if __name__ == "__main__":
    agent_child(sys.argv[1:])
