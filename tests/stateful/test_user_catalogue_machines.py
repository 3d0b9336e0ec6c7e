"""The state machines drive a host's own tools (``for_tools``), not only the kit's (ADR 0031)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from pydantic import BaseModel

from maka_es.testing.machines import (
    ContinuationEligibilityMachine,
    ToolRecoveryMachine,
    ToolUnderTest,
)
from maka_es.tooljournal.model.tools import Tool, ToolContext


class Ping(BaseModel):
    n: int


CALLS: list[tuple[str, int]] = []


def catalogue(workdir: Path) -> list[ToolUnderTest]:
    def run(args: Ping, context: ToolContext) -> dict[str, Any]:
        CALLS.append(("Ping", args.n))
        return {"kind": "text", "text": f"pong {args.n}"}

    ping = Tool("Ping", Ping, run)
    return [ToolUnderTest(ping, st.fixed_dictionaries({"n": st.integers(0, 3)}))]


def test_the_tool_machine_runs_the_hosts_own_tool() -> None:
    CALLS.clear()
    machine = ToolRecoveryMachine.for_tools(catalogue)
    machine.TestCase.settings = settings(max_examples=8, stateful_step_count=6, deadline=None)
    machine.TestCase().runTest()
    assert CALLS, "the host's tool was never called"
    assert {name for name, _ in CALLS} == {"Ping"}
    assert ToolRecoveryMachine.catalogue.__name__ == "default_catalogue"  # defaults untouched


def test_an_empty_catalogue_is_refused() -> None:
    machine = ToolRecoveryMachine.for_tools(lambda workdir: [])
    with pytest.raises(ValueError, match="empty"):
        machine()


def test_the_continuation_machine_offers_the_hosts_tool_names() -> None:
    machine = ContinuationEligibilityMachine.for_tools(("Label", "Search"))
    assert machine.tool_names == ("Label", "Search")
    instance = machine()
    try:
        assert instance.inspector.observation.available_tool_names == ("Label", "Search")
    finally:
        instance.teardown()
    with pytest.raises(ValueError, match="Gone"):
        ContinuationEligibilityMachine.for_tools(("Gone",))
