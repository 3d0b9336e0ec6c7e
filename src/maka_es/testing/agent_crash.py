"""Parent side of the agent crash harness: kill a host's own agent with SIGKILL at a failpoint.

Why a second harness: ``maka_es.testing.crash`` replays the kit's own scripted steps; a host
wants to kill *its* agent (its tools, its loop) at the tool journal's or the store's named
points, then restart it and check what recovery did. The child is
``maka_es.testing.agent_child``; synchronisation is by its stdout line, never by sleeping
(docs/adr/0006-failpoints-and-crash-harness.md, docs/testing.md).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass

from maka_es.testing.agent_child import FINISHED, INSIDE
from maka_es.testing.crash import CrashHarnessError


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
        command = [sys.executable, "-m", "maka_es.testing.agent_child", target, point, str(nth)]
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
