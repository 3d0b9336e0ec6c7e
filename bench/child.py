"""``python -m bench.child KIND PARAMS_JSON``: one contender in a long-lived child process.

Why a child per contender: each one keeps its own interpreter, caches and connections for the
whole workload (as a host process does), no contender's garbage or imports land in another's
figures, and DBOS (a process-wide singleton) can run next to the others. The parent sends
``batch`` lines and reads one result line each: the batch's wall-clock samples and the
process CPU time it used per unit (``time.process_time``: what a step costs the CPU whatever
the machine's load, since a descheduled process accrues none). A result line starts with
``@@`` so whatever a library prints on stdout is ignored
(docs/adr/0027-benchmark-method.md, amendment of issue 23).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MARK = "@@"


def serve(kind: str, params: dict[str, Any]) -> None:
    from bench.contenders import build

    contender = build(kind, params)
    print(f"{MARK}ready", flush=True)
    try:
        for line in sys.stdin:
            if line.strip() != "batch":
                break
            cpu = time.process_time()
            samples = contender.batch()
            units = getattr(contender, "units", None) or len(samples)
            used = (time.process_time() - cpu) / units
            steps = getattr(contender, "cpu_steps", [])
            result = {"wall": samples, "cpu": used, "cpu_steps": steps}
            print(MARK + json.dumps(result), flush=True)
    finally:
        contender.close()


class Child:
    """The parent's handle on one contender's process. Starting does not wait for it, so
    the contenders of a workload start together; the first batch waits for its ``ready``."""

    def __init__(self, kind: str, **params: Any) -> None:
        self.kind = kind
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.child", kind, json.dumps(params)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        self.ready = False
        #: the process CPU seconds per unit of the last batch
        self.last_cpu = 0.0
        #: the CPU time of each step of the last batch, when the contender times steps
        self.last_cpu_steps: list[float] = []

    def _read(self) -> str:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(MARK):
                return line[len(MARK) :]
        code = self.proc.wait()
        raise RuntimeError(f"bench contender {self.kind!r} ended (exit {code}) without answering")

    def batch(self) -> list[float]:
        if not self.ready:
            self._read()
            self.ready = True
        assert self.proc.stdin is not None
        self.proc.stdin.write("batch\n")
        self.proc.stdin.flush()
        result = json.loads(self._read())
        self.last_cpu = float(result["cpu"])
        self.last_cpu_steps = [float(x) for x in result["cpu_steps"]]
        return [float(x) for x in result["wall"]]

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    serve(sys.argv[1], json.loads(sys.argv[2]))
