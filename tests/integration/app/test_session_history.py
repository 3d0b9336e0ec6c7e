"""A turn sees the session's conversation so far, before and after a crash (ADR 0038).

Why, on both real stores: a chat agent on ``run_turn`` forgot every earlier turn, because a
turn's request held only its own run. Now every request of a turn starts with the session
history: the earlier completed turns, once each and in order. The tests hold that to what a
host relies on: turn 2 holds turn 1's prompt and answer exactly once; a turn 2 killed in a
tool and continued, or forked after a park, is shown the identical prefix; turn 3 after a
resumed turn 2 holds turn 2 once (its continuation's replay, never the failed source again);
``history_turns`` bounds it and ``0`` switches it off; the same committed events give the same
history after a reopen.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from maka_es.aio import AsyncRuntimeApplication
from maka_es.continuation.lineage import session_history
from maka_es.errors import InvalidPlanRequestError, SessionHistoryError
from maka_es.providers.protocol import ProviderRequest, ProviderTurn, ScriptedProvider
from maka_es.testing.probes import store_snapshot
from tests.support.lookup_host import Crash, open_app
from tests.support.send_tool import Killed

P1, P2, P3 = "what is a?", "and b?", "thanks, and now?"
A1, A2, A3 = "a is 1", "b is 1", "all done"


def looks_up(call_id: str, key: str, answer: str) -> ScriptedProvider:
    """One call, then the answer."""
    call = {"kind": "function_call", "id": call_id, "name": "Lookup", "args": {"key": key}}
    return ScriptedProvider(
        [ProviderTurn((call,)), ProviderTurn(({"kind": "text", "text": answer},))]
    )


def answers(text: str) -> ScriptedProvider:
    return ScriptedProvider([ProviderTurn(({"kind": "text", "text": text},))])


def chat(request: ProviderRequest) -> list[tuple[str, Any]]:
    """The request as chat messages: (role, content or the calls' ids)."""
    return [
        (m["role"], m["content"] or [c["id"] for c in m["tool_calls"]])
        for m in request.openai_messages()
    ]


def wire(events: tuple[Any, ...]) -> list[dict[str, Any]]:
    return [event.to_wire() for event in events]


TURN_1 = [("user", P1), ("assistant", ["c1"]), ("tool", "a=1"), ("assistant", A1)]
TURN_2 = [("user", P2), ("assistant", ["c2"]), ("tool", "b=1"), ("assistant", A2)]


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return workspace


def test_turn_two_holds_turn_one_once_and_in_order(store_url: str, cwd: Path) -> None:
    second = looks_up("c2", "b", A2)
    with open_app(store_url, cwd, Crash()) as app:
        app.open_session("s1")
        assert app.run_turn("s1", P1, looks_up("c1", "a", A1), run_id="r1").answer == A1
        assert app.run_turn("s1", P2, second, run_id="r2").answer == A2
        third = answers(A3)
        assert app.run_turn("s1", P3, third, run_id="r3").answer == A3
    first_step, second_step = second.requests
    assert chat(first_step) == [*TURN_1, ("user", P2)]
    assert chat(second_step) == [*TURN_1, *TURN_2[:3]]
    assert wire(first_step.history) == wire(second_step.history)  # every step, one prefix
    assert [e.run_id for e in first_step.history] == ["r1"] * 4
    assert [e.run_id for e in first_step.replay_context] == ["r2"]  # the replay: its own run
    assert chat(third.requests[0]) == [*TURN_1, *TURN_2, ("user", P3)]


def test_a_crashed_turn_resumed_is_shown_the_identical_history(store_url: str, cwd: Path) -> None:
    crash = Crash()
    crashed = looks_up("c2", "b", "unused")
    with open_app(store_url, cwd, crash) as app:
        app.open_session("s1")
        app.run_turn("s1", P1, looks_up("c1", "a", A1), run_id="r1")
        crash.dies_on = "b"
        with pytest.raises(Killed):
            app.run_turn("s1", P2, crashed, run_id="r2")
    crash.dies_on = None
    resumed = answers(A2)
    after = answers(A3)
    with open_app(store_url, cwd, crash) as app:  # the restart
        app.recover()
        app.open_session("s1")
        result = app.resume("s1", resumed)
        assert (result.status, result.answer) == ("continued", A2)
        assert result.outcome is not None
        continuation = result.outcome.target_run_id
        assert app.run_turn("s1", P3, after, run_id="r3").answer == A3
        runs = app.list_runs("s1")
        recomputed = session_history(runs, app.read_run_events, turn_of=continuation)
    (original,) = crashed.requests
    (continued,) = resumed.requests
    assert wire(continued.history) == wire(original.history) == wire(recomputed)
    assert chat(original) == [*TURN_1, ("user", P2)]
    assert chat(continued) == [*TURN_1, *TURN_2[:3]]
    # turn 3: the resumed turn once, as its continuation saw it (no failed-source duplicate)
    assert [r.run_id for r in runs] == ["r1", "r2", continuation, "r3"]
    assert chat(after.requests[0]) == [*TURN_1, *TURN_2, ("user", P3)]


def test_a_fork_is_shown_the_history_of_the_turn_it_forks(store_url: str, cwd: Path) -> None:
    crash = Crash()
    crashed = looks_up("c2", "b", "unused")
    with open_app(store_url, cwd, crash, "never_auto_retry") as app:
        app.open_session("s1")
        app.run_turn("s1", P1, looks_up("c1", "a", A1), run_id="r1")
        crash.dies_on = "b"
        with pytest.raises(Killed):
            app.run_turn("s1", P2, crashed, run_id="r2")
    crash.dies_on = None
    forked = answers("b was not looked up")
    after = answers(A3)
    with open_app(store_url, cwd, crash, "never_auto_retry") as app:
        app.recover()
        app.open_session("s1")
        assert app.resume("s1", forked).status == "parked"
        (op,) = [
            o.operation_id for o in app.tool_journal.tool_operations("r2") if o.tool_call_id == "c2"
        ]
        app.fork_run("r2", before_operation=op, actor="ops")
        assert app.resume("s1", forked).answer == "b was not looked up"
        app.run_turn("s1", P3, after, run_id="r3")
    (original,) = crashed.requests
    (fork,) = forked.requests
    assert wire(fork.history) == wire(original.history)
    assert chat(fork) == [*TURN_1, ("user", P2)]
    # the abandoned call is not in turn 3's history: the fork's conversation is
    assert chat(after.requests[0]) == [
        *TURN_1,
        ("user", P2),
        ("assistant", "b was not looked up"),
        ("user", P3),
    ]


def test_history_turns_bounds_the_history_and_zero_switches_it_off(
    store_url: str, cwd: Path
) -> None:
    crash = Crash()
    off = looks_up("c2", "b", "unused")
    bounded = answers(A3)
    with open_app(store_url, cwd, crash) as app:
        app.open_session("s1")
        app.run_turn("s1", P1, looks_up("c1", "a", A1), run_id="r1")
        before = store_snapshot(app)
        for bad in (-1, True, "all"):
            with pytest.raises(InvalidPlanRequestError):
                app.run_turn("s1", P2, off, history_turns=bad)  # type: ignore[arg-type]
            with pytest.raises(InvalidPlanRequestError):
                app.resume("s1", off, history_turns=bad)  # type: ignore[arg-type]
        assert store_snapshot(app).rows == before.rows  # refused, nothing written
        crash.dies_on = "b"
        with pytest.raises(Killed):
            app.run_turn("s1", P2, off, run_id="r2", history_turns=0)
    crash.dies_on = None
    resumed = answers(A2)
    with open_app(store_url, cwd, crash) as app:
        app.recover()
        app.open_session("s1")
        assert app.resume("s1", resumed, history_turns=0).answer == A2
        app.run_turn("s1", P3, bounded, run_id="r3", history_turns=1)
    assert off.requests[0].history == ()
    assert chat(off.requests[0]) == [("user", P2)]
    assert resumed.requests[0].history == ()
    assert chat(resumed.requests[0]) == TURN_2[:3]
    assert chat(bounded.requests[0]) == [*TURN_2, ("user", P3)]  # the newest turn only


def test_the_same_committed_events_give_the_same_history(store_url: str, cwd: Path) -> None:
    second = answers(A2)
    with open_app(store_url, cwd, Crash()) as app:
        app.open_session("s1")
        app.run_turn("s1", P1, looks_up("c1", "a", A1), run_id="r1")
        app.run_turn("s1", P2, second, run_id="r2")
    with open_app(store_url, cwd, Crash()) as app:  # a fresh process's view of the store
        runs = app.list_runs("s1")
        histories = [session_history(runs, app.read_run_events, turn_of="r2") for _ in (1, 2)]
        everything = session_history(runs, app.read_run_events)
    assert wire(histories[0]) == wire(histories[1]) == wire(second.requests[0].history)
    assert [e.run_id for e in everything] == ["r1"] * 4 + ["r2"] * 2


def test_a_call_id_the_history_already_used_is_refused_before_its_tool_runs(
    store_url: str, cwd: Path
) -> None:
    """The exporters pair calls and results by bare id: a turn 2 call reusing turn 1's id
    would make every later request unexportable, so it is refused like one the replay used
    (``provider_output_invalid``, before T1); with the history off it is a new id again."""
    with open_app(store_url, cwd, Crash()) as app:
        app.open_session("s1")
        app.run_turn("s1", P1, looks_up("c1", "a", A1), run_id="r1")
        reused = app.run_turn("s1", P2, looks_up("c1", "b", A2), run_id="r2")
        assert (reused.status, reused.error_class) == ("failed", "provider_output_invalid")
        assert reused.failure_message is not None
        assert "reuses tool call id 'c1'" in reused.failure_message
        assert not app.tool_journal.tool_operations("r2")  # never dispatched
        again = app.resume("s1", answers(A2), history_turns=0)
        assert again.status == "continued"
        alone = app.run_turn("s1", P3, looks_up("c1", "c", A3), run_id="r3", history_turns=0)
        assert alone.status == "completed"


def test_an_unreplayable_earlier_turn_refuses_the_next_turn_and_writes_nothing(
    store_url: str, cwd: Path
) -> None:
    """An earlier turn whose lineage no longer replays (here an imported continuation whose
    source run is missing) cannot be shown to the model as it was: ``run_turn`` and ``resume``
    refuse ``session_history_unreplayable`` naming the run, before any write; with the history
    off the turn runs."""
    with open_app(store_url, cwd, Crash()) as app:
        app.open_session("s1")
        app.run_turn("s1", P1, looks_up("c1", "a", A1), run_id="r1")
        first = app.read_run_events("r1")
        edge = {
            "sourceInvocationId": "i9",
            "sourceRunId": "r9",
            "sourceTurnId": "t9",
            "sourceRuntimeEventHighWater": 1,
        }
        header = {
            **app.ledger.get_run_header("r1").to_wire(),
            "invocationId": "i-orphan",
            "runId": "r-orphan",
            "turnId": "t-orphan",
            "parentRunId": "r9",
            "continuationSource": edge,
        }
        spine = {"sessionId": "s1", "invocationId": "i-orphan", "runId": "r-orphan"}
        orphan = [
            {**first[0].to_wire(), **spine, "turnId": "t-orphan", "id": "o-1"},
            {**first[-1].to_wire(), **spine, "turnId": "t-orphan", "id": "o-2"},
        ]
        app.ledger.import_run(header, orphan)
        before = store_snapshot(app)
        with pytest.raises(SessionHistoryError) as refused:
            app.run_turn("s1", P2, answers(A2), run_id="r2")
        assert refused.value.code == "session_history_unreplayable"
        assert refused.value.detail == {"runId": "r-orphan", "reason": "runtime_lineage_missing"}
        assert store_snapshot(app).rows == before.rows  # refused, nothing written
        assert not app.ledger.run_exists("r2")
        alone = app.run_turn("s1", P2, answers(A2), run_id="r2", history_turns=0)
        assert alone.status == "completed"


class AsyncAnswers:
    """An async provider: one text answer per call, every request kept."""

    def __init__(self) -> None:
        self.requests: list[ProviderRequest] = []

    async def complete(self, request: ProviderRequest) -> ProviderTurn:
        self.requests.append(request)
        await asyncio.sleep(0)
        return ProviderTurn(({"kind": "text", "text": f"answer {len(self.requests)}"},))


def test_the_asyncio_facade_passes_the_setting_through(store_url: str, cwd: Path) -> None:
    provider = AsyncAnswers()

    async def main() -> None:
        app = open_app(store_url, cwd, Crash())
        async with AsyncRuntimeApplication(app) as aio:
            await aio.open_session("s1")
            await aio.run_turn("s1", P1, provider, run_id="r1")
            await aio.run_turn("s1", P2, provider, run_id="r2")
            await aio.run_turn("s1", P3, provider, run_id="r3", history_turns=0)

    asyncio.run(main())
    first, second, third = provider.requests
    assert chat(first) == [("user", P1)]
    assert chat(second) == [("user", P1), ("assistant", "answer 1"), ("user", P2)]
    assert third.history == ()
    assert chat(third) == [("user", P3)]
