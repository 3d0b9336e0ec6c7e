"""Child process that runs examples/pydantic_ai_agent.py and can be SIGKILLed around its tools.

Run as ``python -m tests.crash.pydantic_ai_child DATA_DIR [POINT NTH]`` from the repository
root, or as :func:`child_entry` in a process of a ``forkserver`` that imported this module
(and so Pydantic AI) once: each child is still a process of its own, killed with SIGKILL, but
does not spend a second of CPU importing the framework again. Why a wrapper and not the
example itself: the example is what a host writes, with nothing test-shaped in it. Around it,
in its own process only, this child adds:

* the model's log: every request the scripted model receives is appended to
  ``DATA_DIR/requests.jsonl`` (Pydantic AI's own message JSON), so the parent can check, across
  kills and restarts, that no request held a dangling call or a duplicated prompt;
* a write probe: every write of the workspace's ``port.txt`` appends a line to
  ``DATA_DIR/writes.log`` (fsynced);
* a kill point: at the ``NTH`` tool call, ``POINT`` is one of ``inside_response`` (inside the
  save of the model answer that asks for the call), ``after_t1`` (T1 committed, the tool not
  run), ``before_t2`` (the tool ran, T2 not written), ``inside_t2`` (T2's rows inserted, COMMIT
  not reached) or ``after_t2``; there the child says ``INSIDE`` (on its pipe, or its stdout)
  and waits for the SIGKILL.
"""

from __future__ import annotations

import os
import pathlib
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from maka_es import failpoints
from maka_es.tooljournal.runtime import AFTER_T1, AFTER_T2, BEFORE_T2

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
POINTS = ("inside_response", "after_t1", "before_t2", "inside_t2", "after_t2")
TOOL_POINTS = {"after_t1": AFTER_T1, "before_t2": BEFORE_T2, "after_t2": AFTER_T2}
_report: list[Connection] = []  # the pipe to the parent, in a forked child


def block(_: str = "") -> None:
    """Say where we are and wait for the parent's SIGKILL (never return)."""
    if _report:
        _report[0].send(("INSIDE", ""))
    else:
        sys.stdout.write("INSIDE\n")
        sys.stdout.flush()
    while True:
        time.sleep(60)


def _append(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def probe_writes(root: Path) -> None:
    """Log every write of ``port.txt`` (the example's write tool calls ``write_text``)."""
    original = pathlib.Path.write_text

    def write_text(self: Path, data: str, *args: Any, **kwargs: Any) -> int:
        if self.name == "port.txt":
            _append(root / "writes.log", b"port.txt\n")
        return original(self, data, *args, **kwargs)

    setattr(pathlib.Path, "write_text", write_text)  # noqa: B010 - the child's own probe


def on_nth(point: str, nth: int) -> None:
    """Arm the kill point at the ``nth`` hit of its tool failpoint."""
    hits = {"n": 0}
    name = BEFORE_T2 if point == "inside_t2" else TOOL_POINTS[point]

    def action(_: str) -> None:
        hits["n"] += 1
        if hits["n"] != nth:
            return
        if point == "inside_t2":  # the next save is this call's T2
            failpoints.arm(failpoints.INSIDE_SAVE_BEFORE_COMMIT, block)
        else:
            block()

    failpoints.arm(name, action)


def logging_model(root: Path, point: str | None, nth: int) -> FunctionModel:
    """The example's scripted model, each request logged; ``inside_response`` arms the store's
    in-transaction failpoint when the model's ``nth`` tool call is about to be recorded."""
    from pydantic_ai_agent import scripted_answer

    calls = {"n": 0}

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        _append(root / "requests.jsonl", ModelMessagesTypeAdapter.dump_json(messages) + b"\n")
        response = scripted_answer(messages, info)
        if point == "inside_response" and response.tool_calls:
            calls["n"] += 1
            if calls["n"] == nth:
                failpoints.arm(failpoints.INSIDE_SAVE_BEFORE_COMMIT, block)
        return response

    return FunctionModel(answer, model_name="scripted")


def run(argv: list[str]) -> str:
    """The example under the probes, to its printed answer (or its park)."""
    root = Path(argv[0]).resolve()
    point = argv[1] if len(argv) > 1 else None
    nth = int(argv[2]) if len(argv) > 2 else 1
    if point is not None and point not in POINTS:
        raise SystemExit(f"unknown kill point {point!r}; one of {POINTS}")
    probe_writes(root)
    if point in TOOL_POINTS or point == "inside_t2":
        on_nth(point, nth)
    model = logging_model(root, point, nth)
    from pydantic_ai_agent import main as example_main

    return example_main(root, model)


def child_entry(argv: list[str], report: Connection) -> None:
    """A forked child: run, then send ``("done", output)`` (or ``("error", text)``)."""
    _report.append(report)
    try:
        output = run(argv)
    except BaseException as exc:
        report.send(("error", f"{type(exc).__name__}: {exc}"))
        raise
    report.send(("done", output))


sys.path.insert(0, str(EXAMPLES))
import pydantic_ai_agent  # noqa: E402, F401 - a forkserver imports the example once, here

if __name__ == "__main__":
    print(run(sys.argv[1:]), flush=True)
