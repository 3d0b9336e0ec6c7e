"""Side-effect probe tools for crash tests: they count every execution in a log file.

Why: "the tool did not run twice" must be observed outside the process that might have run
it. Each probe appends one line per execution to ``<root>/executions.log`` (fsynced), so after
any number of crashes and recoveries the log tells exactly how often the side effect ran.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from maka_es import failpoints
from maka_es.adapters.file_write import FileWriteArgs, file_write_tool
from maka_es.tooljournal.runtime import Tool, ToolContext

#: Hit by the probes right after their side effect, before returning to the runtime.
AFTER_SIDE_EFFECT = "probe.after_side_effect"
EXECUTION_LOG = "executions.log"


def _append_durably(path: Path, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def executions(root: Path) -> list[str]:
    """Operation ids of every probe execution so far, in order."""
    log = root / EXECUTION_LOG
    return log.read_text().splitlines() if log.exists() else []


class AppendLineArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    line: str


def append_line_tool(
    root: Path, *, name: str = "AppendLine", mode: Any = "never_auto_retry"
) -> Tool[AppendLineArgs]:
    """Appends ``line`` to ``<root>/side-effect.txt`` (a non-idempotent side effect)."""

    def run(args: AppendLineArgs, context: ToolContext) -> dict[str, Any]:
        _append_durably(root / EXECUTION_LOG, context.operation_id + "\n")
        _append_durably(root / "side-effect.txt", args.line + "\n")
        failpoints.hit(AFTER_SIDE_EFFECT)
        return {"kind": "text", "text": "appended"}

    return Tool(name=name, input_model=AppendLineArgs, run=run, recovery_mode=mode)


def logged_file_write_tool(root: Path) -> Tool[FileWriteArgs]:
    """The shipped ``Write`` tool (with its reconciler), logging each execution."""
    inner = file_write_tool(root / "workspace")

    def run(args: FileWriteArgs, context: ToolContext) -> Any:
        _append_durably(root / EXECUTION_LOG, context.operation_id + "\n")
        result = inner.run(args, context)
        failpoints.hit(AFTER_SIDE_EFFECT)
        return result

    return Tool(
        name=inner.name,
        input_model=FileWriteArgs,
        run=run,
        recovery_mode="reconcile",
        reconciler=inner.reconciler,
    )


def probe_tools(root: Path) -> list[Tool[Any]]:
    """The tools the crash child registers (all logging into ``root``)."""
    return [append_line_tool(root), logged_file_write_tool(root)]
