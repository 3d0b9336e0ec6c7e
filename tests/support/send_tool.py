"""A ``never_auto_retry`` Send tool whose process can "die" after T1: the uncertain call that
operator attestation, operator forks, the CLI and the report are all about (ADR 0022).

Why one module: the recovery, CLI and report tests build the same interrupted run; one tool
definition keeps them talking about the same call.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from maka_es.tooljournal.runtime import Tool, ToolContext

__all__ = ["RESULT", "Killed", "Send", "send_tool"]

#: What a Send that did run returns.
RESULT: dict[str, Any] = {"kind": "text", "text": "sent 1 message"}


class Killed(BaseException):
    """Stands for the process dying inside the tool: no T2 is written."""


class Send(BaseModel):
    to: str


def send_tool(dies: bool, *, result: dict[str, Any] | None = None) -> Tool[Send]:
    """The Send tool: raises :class:`Killed` when ``dies``, else returns ``result``
    (:data:`RESULT` by default)."""

    def run(args: Send, context: ToolContext) -> dict[str, Any]:
        if dies:
            raise Killed
        return RESULT if result is None else result

    return Tool("Send", Send, run, recovery_mode="never_auto_retry")
