"""``session_history`` over hand-built committed runs: which turns count, in which order, once.

Why unit tests beside the store tests (tests/integration/app/test_session_history.py): the
rules of ADR 0038 that a host's own turns rarely produce are pinned here on exact events: a
cancelled, failed or unfinished turn and a subagent's run do not count, a continued turn
counts once (its continuation's replay, never its source again), the bound keeps the newest
turns, an older turn reusing a newer one's call id ends the history, a lineage that cannot be
read is a typed refusal, and the same events give the same history.
"""

from __future__ import annotations

from typing import Any

import pytest

from maka_es.continuation.lineage import checked_history_turns, session_history
from maka_es.errors import InvalidPlanRequestError, SessionHistoryError
from maka_es.providers.export import to_openai_chat_messages
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader


class Session:
    """Runs of session ``s1`` in creation order, their headers and committed events."""

    def __init__(self) -> None:
        self.headers: list[RunHeader] = []
        self.events: dict[str, list[RuntimeEvent]] = {}
        self.reads: list[str] = []

    def turn(
        self,
        n: int,
        prompt: str,
        answer: str | None,
        *,
        status: str = "completed",
        call: str | None = None,
        **header: Any,
    ) -> LedgerBuilder:
        """Run ``r<n>``: the prompt, an optional answered call, the answer, its terminal."""
        ledger = LedgerBuilder(Spine("s1", f"i{n}", f"r{n}", f"t{n}"), prefix=f"r{n}-")
        ledger.user(prompt, marker=True)
        if call is not None:
            ledger.call(call, "Lookup", {"key": call})
            ledger.response(call, "Lookup", {"kind": "text", "text": f"{call}=1"})
        if answer is not None:
            ledger.text(answer)
        if status != "running":
            ledger.terminal("aborted" if status == "cancelled" else status)
        self.add(ledger, status=status, **header)
        return ledger

    def add(self, ledger: LedgerBuilder, **header: Any) -> None:
        self.headers.append(RunHeader.model_validate(run_header(ledger.spine, **header)))
        self.events[ledger.spine.run_id] = ledger.decoded()

    def events_of(self, run_id: str) -> list[RuntimeEvent]:
        self.reads.append(run_id)
        return self.events[run_id]


def chat(events: tuple[RuntimeEvent, ...]) -> list[tuple[str, Any]]:
    """The history as chat messages: (role, content or the calls' ids)."""
    return [
        (m["role"], m["content"] or [c["id"] for c in m["tool_calls"]])
        for m in to_openai_chat_messages(events)
    ]


def test_only_completed_session_inline_turns_count_in_creation_order() -> None:
    session = Session()
    session.turn(1, "one", "answer one", call="c1")
    session.turn(2, "withdrawn", "half", status="cancelled")
    session.turn(3, "broken", None, status="failed")
    session.turn(4, "helper", "sub answer", parentRunId="r1", agentId="sub")
    session.turn(5, "two", "answer two")
    history = session_history(session.headers, session.events_of)
    assert chat(history) == [
        ("user", "one"),
        ("assistant", ["c1"]),
        ("tool", "c1=1"),
        ("assistant", "answer one"),
        ("user", "two"),
        ("assistant", "answer two"),
    ]
    # only model-visible events: no terminal fact travels in the history
    assert all(event.role in ("user", "model", "tool") for event in history)
    assert "r4" not in session.reads
    assert "r2" not in session.reads


def test_a_turn_sees_only_the_turns_before_its_lineage() -> None:
    session = Session()
    session.turn(1, "one", "answer one")
    session.turn(2, "two", "answer two")
    session.turn(3, "three", "answer three")
    assert chat(session_history(session.headers, session.events_of, turn_of="r2")) == [
        ("user", "one"),
        ("assistant", "answer one"),
    ]
    assert session_history(session.headers, session.events_of, turn_of="r1") == ()


def test_a_continued_turn_counts_once_as_its_continuation_saw_it() -> None:
    """r2 failed after its call's result; r3 (a V1 continuation of it) answered: the history
    of a later turn holds r2's prompt and exchange once, then r3's answer."""
    session = Session()
    session.turn(1, "one", "answer one")
    source = session.turn(2, "two", None, status="failed", call="c2")
    edge = {
        "sourceInvocationId": "i2",
        "sourceRunId": "r2",
        "sourceTurnId": "t2",
        "sourceRuntimeEventHighWater": len(source.events) - 1,  # before its terminal
    }
    continuation = LedgerBuilder(Spine("s1", "i3", "r3", "t3"), prefix="r3-")
    continuation.event()  # the run's first event: no model item
    continuation.text("answer two")
    continuation.terminal("completed")
    session.add(
        continuation,
        status="completed",
        continuationSource=edge,
        parentRunId="r2",
        parentTurnId="t2",
    )
    expected = [
        ("user", "one"),
        ("assistant", "answer one"),
        ("user", "two"),
        ("assistant", ["c2"]),
        ("tool", "c2=1"),
        ("assistant", "answer two"),
    ]
    assert chat(session_history(session.headers, session.events_of)) == expected
    # the continuation itself, and its source, are shown what r2 was shown: turn 1
    for turn_of in ("r2", "r3"):
        assert chat(session_history(session.headers, session.events_of, turn_of=turn_of)) == [
            ("user", "one"),
            ("assistant", "answer one"),
        ]


def test_the_bound_keeps_the_newest_turns_and_zero_keeps_none() -> None:
    session = Session()
    for n in (1, 2, 3):
        session.turn(n, f"p{n}", f"a{n}")
    newest = session_history(session.headers, session.events_of, max_turns=2)
    assert [m for m in chat(newest) if m[0] == "user"] == [("user", "p2"), ("user", "p3")]
    assert session_history(session.headers, session.events_of, max_turns=0) == ()
    assert "r1" not in session.reads
    assert checked_history_turns(None) is None
    assert checked_history_turns(0) == 0
    for bad in (-1, True, 1.0, "2"):
        with pytest.raises(InvalidPlanRequestError) as refused:
            checked_history_turns(bad)
        assert refused.value.code == "invalid_plan_request"


def test_an_older_turn_reusing_a_newer_call_id_ends_the_history() -> None:
    """The exporters refuse a repeated call id, so the history stops before it."""
    session = Session()
    session.turn(1, "one", "a1", call="c1")
    session.turn(2, "two", "a2", call="c1")
    history = session_history(session.headers, session.events_of)
    assert [m for m in chat(history) if m[0] == "user"] == [("user", "two")]
    reserved = session_history(session.headers, session.events_of, reserved_call_ids={"c1"})
    assert reserved == ()


def test_an_unreadable_lineage_or_a_foreign_run_is_a_typed_refusal() -> None:
    session = Session()
    session.turn(1, "one", "a1")
    orphan = LedgerBuilder(Spine("s1", "i2", "r2", "t2"), prefix="r2-")
    orphan.event()
    orphan.text("from nowhere")
    edge = {
        "sourceInvocationId": "i9",
        "sourceRunId": "r9",
        "sourceTurnId": "t9",
        "sourceRuntimeEventHighWater": 1,
    }
    session.add(orphan, status="completed", continuationSource=edge, parentRunId="r9")
    with pytest.raises(SessionHistoryError) as refused:
        session_history(session.headers, session.events_of)
    assert refused.value.code == "session_history_unreplayable"
    assert refused.value.detail == {"runId": "r2", "reason": "runtime_lineage_missing"}
    with pytest.raises(SessionHistoryError) as foreign:
        session_history(session.headers, session.events_of, turn_of="r7")
    assert foreign.value.detail == {"runId": "r7", "reason": "run_not_in_session"}


def test_a_subagent_turn_has_no_session_history() -> None:
    session = Session()
    session.turn(1, "one", "a1")
    session.turn(2, "helper", None, status="failed", parentRunId="r1", agentId="sub")
    assert session_history(session.headers, session.events_of, turn_of="r2") == ()


def test_the_same_events_give_the_same_history() -> None:
    session = Session()
    session.turn(1, "one", "a1", call="c1")
    session.turn(2, "two", "a2")
    first = session_history(session.headers, session.events_of)
    copied = {
        run_id: [RuntimeEvent.model_validate(e.to_wire()) for e in events]
        for run_id, events in session.events.items()
    }
    again = session_history(
        [RunHeader.model_validate(h.to_wire()) for h in session.headers], copied.__getitem__
    )
    assert [e.to_wire() for e in again] == [e.to_wire() for e in first]
    assert len(first) == 6
