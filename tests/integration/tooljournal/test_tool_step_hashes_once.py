"""ADR 0026: one tool step through ``ToolRuntime`` reuses its call's canonical args hash (the
T1 decision's scanner result builds the dispatch fact, serves the prospective check and the
fold after the commit). Issue 22, part 4: what is pinned is the answer, not the count: the
step's ledger, operations, plans and next decisions equal the plain loader's
(``MAKA_ES_FAST_PATHS=n``), on the SQLite file and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from maka_es.testing.builders import LedgerBuilder
from maka_es.tooljournal.runtime import Tool, ToolContext, ToolRuntime
from tests.support.load_paths import Pair, assert_same_as_plain, fresh_store


class Echo(BaseModel):
    text: str


def _echo(args: Echo, context: ToolContext) -> dict[str, Any]:
    return {"kind": "text", "text": args.text}


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_one_tool_step_answers_as_the_plain_loader(
    kind: str, request: pytest.FixtureRequest
) -> None:
    with fresh_store(kind, request) as fast_store, fresh_store(kind, request) as plain_store:
        pair = Pair(fast_store, plain_store)
        try:
            call = LedgerBuilder().call("c1", "Echo", {"text": "hi"})
            for app in (pair.fast, pair.plain):
                ToolRuntime(app.tool_journal, [Tool("Echo", Echo, _echo)]).execute("r1", call)
                assert [op.state for op in app.tool_journal.tool_operations("r1")] == [
                    "outcome_committed"
                ]
            assert_same_as_plain(pair)
        finally:
            pair.close()
