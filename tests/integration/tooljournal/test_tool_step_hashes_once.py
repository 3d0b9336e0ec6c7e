"""ADR 0026: one tool step through ``ToolRuntime`` on a real SQLite store computes its call's
canonical args hash once: the T1 decision's scanner result builds the dispatch fact, serves
the prospective check and the fold after the commit."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from maka_es.app import RuntimeApplication
from maka_es.testing.builders import LedgerBuilder, run_header
from maka_es.tooljournal import bundle
from maka_es.tooljournal.runtime import Tool, ToolContext, ToolRuntime
from maka_es.wire import codec


class Echo(BaseModel):
    text: str


def _echo(args: Echo, context: ToolContext) -> dict[str, Any]:
    return {"kind": "text", "text": args.text}


def test_one_tool_step_hashes_its_args_once(
    sqlite_app: RuntimeApplication, monkeypatch: pytest.MonkeyPatch
) -> None:
    sqlite_app.open_session("s1", "/workspace")
    sqlite_app.ledger.create_run(run_header())
    ledger = LedgerBuilder()
    ledger.user(marker=True)
    sqlite_app.ledger.append_events("r1", ledger.events)
    seen: list[str] = []

    def counting(tool_name: str, args: object) -> str:
        seen.append(tool_name)
        return codec.canonical_args_hash(tool_name, args)

    monkeypatch.setattr(bundle, "canonical_args_hash", counting)
    monkeypatch.setattr("maka_es.wire.facts.canonical_args_hash", counting)
    ToolRuntime(sqlite_app.tool_journal, [Tool("Echo", Echo, _echo)]).execute(
        "r1", ledger.call("c1", "Echo", {"text": "hi"})
    )
    assert [op.state for op in sqlite_app.tool_journal.tool_operations("r1")] == [
        "outcome_committed"
    ]
    assert seen == ["Echo"]
