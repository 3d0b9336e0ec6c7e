"""A host with one ``Lookup`` tool that can be made to die inside its T1-T2 window, for the
``run_turn`` and session-history tests on both stores (ADR 0036, ADR 0038)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from maka_es import HostConfig, RuntimeApplication
from maka_es.tooljournal.runtime import Tool, ToolContext
from tests.support.send_tool import Killed


class Lookup(BaseModel):
    """Look a key up."""

    key: str


class Crash:
    """Which call of the tool 'dies' (raises ``Killed``, no T2), and what ran."""

    def __init__(self) -> None:
        self.dies_on: str | None = None
        self.ran: list[str] = []

    def run(self, args: Lookup, context: ToolContext) -> dict[str, Any]:
        self.ran.append(args.key)
        if args.key == self.dies_on:
            raise Killed
        return {"kind": "text", "text": f"{args.key}=1"}


def open_app(store: str, cwd: Path, crash: Crash, mode: str = "replay_safe") -> RuntimeApplication:
    """The host: its config, the ``Lookup`` tool in ``mode``, safe-boundary resume on."""
    host = HostConfig(
        backend_kind="ai-sdk",
        llm_connection_slug="main",
        model_id="m",
        permission_mode="ask",
        cwd=str(cwd),
    )
    tool = Tool("Lookup", Lookup, crash.run, recovery_mode=mode)  # type: ignore[arg-type]
    return RuntimeApplication.open(store, tools=[tool], host_config=host, safe_boundary_resume=True)
