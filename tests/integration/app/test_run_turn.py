"""``run_turn`` and ``resume`` on both real stores (ADR 0036).

Why: a host's whole turn now runs in the library, on the agent loop continuations run on. These
tests hold it to what a host relies on: the turn ends with its answer, one model turn with two
calls is ONE assistant message followed by both results (first turn and continuation alike),
the prompt is sent once and never again after a crash, a crash inside a ``replay_safe`` tool
continues after recovery, a ``never_auto_retry`` one parks with the operator commands that get
it out (an attestation, recovery having left the run unsealed, or a fork), and ``run_turn``
refuses, writing nothing, while the session's newest run is unfinished.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maka_es import HostConfig, RuntimeApplication, failpoints
from maka_es.errors import TurnRefusedError
from maka_es.providers.protocol import ProviderRequest, ProviderTurn, ScriptedProvider
from maka_es.testing.probes import store_snapshot
from maka_es.tooljournal.runtime import AFTER_T2
from maka_es.wire.events import TOOL_BOUNDARY_PROTOCOL_V1
from tests.support.lookup_host import Crash, open_app
from tests.support.send_tool import Killed

PROMPT = "look both up"


def call(call_id: str, key: str) -> dict[str, Any]:
    return {"kind": "function_call", "id": call_id, "name": "Lookup", "args": {"key": key}}


def two_calls_then(text: str) -> ScriptedProvider:
    turns = [
        ProviderTurn((call("c1", "a"), call("c2", "b"))),
        ProviderTurn(({"kind": "text", "text": text},)),
    ]
    return ScriptedProvider(turns)


def roles(request: ProviderRequest) -> list[tuple[str, int]]:
    """Each message's role and how many tool calls it carries."""
    return [(m["role"], len(m.get("tool_calls") or ())) for m in request.openai_messages()]


def users(request: ProviderRequest) -> list[Any]:
    return [m["content"] for m in request.openai_messages() if m["role"] == "user"]


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return workspace


def test_run_turn_runs_the_whole_turn_and_records_one_assistant_message(
    store_url: str, cwd: Path
) -> None:
    crash = Crash()
    provider = two_calls_then("both are 1")
    with open_app(store_url, cwd, crash) as app:
        app.open_session("s1")
        result = app.run_turn("s1", PROMPT, provider, run_id="r1")
        assert (result.run_id, result.status, result.answer) == ("r1", "completed", "both are 1")
        assert (result.steps, result.tool_calls, result.error_class) == (2, 2, None)
        assert crash.ran == ["a", "b"]
        header = app.get_run_header("r1")
        assert (header.status, header.model_id, header.cwd) == ("completed", "m", str(cwd))
        first = app.read_run_events("r1")[0]
        assert (first.role, first.content.text) == ("user", PROMPT)  # type: ignore[union-attr]
        assert first.protocol_marker == TOOL_BOUNDARY_PROTOCOL_V1
        assert app.plan_resume("r1").disposition == "safe_replay"
    # the second call: the prompt once, ONE assistant message with both calls, both results
    assert roles(provider.requests[1]) == [("user", 0), ("assistant", 2), ("tool", 0), ("tool", 0)]
    assert users(provider.requests[0]) == users(provider.requests[1]) == [PROMPT]
    assert [t.name for t in provider.requests[0].tools] == ["Lookup"]


def test_a_crash_inside_a_replay_safe_tool_of_a_first_turn_continues(
    store_url: str, cwd: Path
) -> None:
    crash = Crash()
    crash.dies_on = "b"
    with open_app(store_url, cwd, crash) as app:
        app.open_session("s1")
        with pytest.raises(Killed):
            app.run_turn("s1", PROMPT, two_calls_then("unused"), run_id="r1")
    crash.dies_on = None
    provider = ScriptedProvider([ProviderTurn(({"kind": "text", "text": "both are 1"},))])
    with open_app(store_url, cwd, crash) as app:  # the restart
        kinds = {repair.kind for repair in app.recover().repairs}
        assert "tools_recovered" in kinds  # the replay_safe call ran again with its operation id
        app.open_session("s1")
        with pytest.raises(TurnRefusedError) as refused:
            app.run_turn("s1", "another prompt", provider)
        assert refused.value.code == "turn_session_unfinished"
        assert refused.value.detail["runId"] == "r1"
        resumed = app.resume("s1", provider)
        assert (resumed.status, resumed.run_id, resumed.disposition) == (
            "continued",
            "r1",
            "continue",
        )
        assert resumed.outcome is not None
        assert resumed.outcome.status == "completed"
        assert resumed.answer == "both are 1"
        assert [h.run_id for h in app.list_runs("s1")] == ["r1", resumed.outcome.target_run_id]
        again = app.resume("s1", provider)
        assert (again.status, again.plan) == ("nothing_to_resume", None)
    assert crash.ran == ["a", "b", "b"]  # b: died once, re-run once by recovery
    # the continuation's request: the prompt once, one assistant message, both results
    assert roles(provider.requests[0]) == [("user", 0), ("assistant", 2), ("tool", 0), ("tool", 0)]
    assert users(provider.requests[0]) == [PROMPT]


def test_a_crash_inside_a_never_auto_retry_tool_parks_with_the_operator_commands(
    store_url: str, cwd: Path
) -> None:
    crash = Crash()
    crash.dies_on = "b"
    with open_app(store_url, cwd, crash, "never_auto_retry") as app:
        app.open_session("s1")
        with pytest.raises(Killed):
            app.run_turn("s1", PROMPT, two_calls_then("unused"), run_id="r1")
    crash.dies_on = None
    provider = ScriptedProvider([ProviderTurn(({"kind": "text", "text": "b was not sent"},))])
    with open_app(store_url, cwd, crash, "never_auto_retry") as app:
        app.recover()
        app.open_session("s1")
        parked = app.resume("s1", provider)
        assert (parked.status, parked.run_id, parked.disposition) == ("parked", "r1", "park")
        assert parked.reasons
        assert parked.outcome is None
        assert provider.requests == []
        (op,) = [
            o.operation_id for o in app.tool_journal.tool_operations("r1") if o.tool_call_id == "c2"
        ]
        # recovery left the run unsealed (left_awaiting_operator): attest it, or fork before it
        assert parked.operator_commands == (
            f"maka-es attest r1 {op} --applied --result RESULT --actor WHO",
            f"maka-es attest r1 {op} --not-applied --actor WHO",
            f"maka-es fork r1 --before {op} --actor WHO",
        )
        high_water = app.ledger.run_high_water("r1")
        with pytest.raises(TurnRefusedError):
            app.run_turn("s1", "another prompt", provider)
        assert [h.run_id for h in app.list_runs("s1")] == ["r1"]  # nothing written
        assert app.ledger.run_high_water("r1") == high_water
        # the operator's way out, then resume runs the fork and a new prompt runs
        fork = app.fork_run("r1", before_operation=op, actor="ops")
        resumed = app.resume("s1", provider)
        assert (resumed.status, resumed.answer) == ("continued", "b was not sent")
        assert resumed.outcome is not None
        assert resumed.outcome.target_run_id == fork.fork_run_id
        after = ScriptedProvider([ProviderTurn(({"kind": "text", "text": "hello"},))])
        assert app.run_turn("s1", "next", after).answer == "hello"
    assert users(provider.requests[0]) == [PROMPT]
    assert crash.ran == ["a", "b"]  # never run again


def test_a_never_auto_retry_park_is_left_by_the_offered_attestation(
    store_url: str, cwd: Path
) -> None:
    """The park's attest command works: recovery left the run unsealed, the attestation
    finishes its recovery, and resume continues the run with the attested answer."""
    crash = Crash()
    crash.dies_on = "b"
    with open_app(store_url, cwd, crash, "never_auto_retry") as app:
        app.open_session("s1")
        with pytest.raises(Killed):
            app.run_turn("s1", PROMPT, two_calls_then("unused"), run_id="r1")
    crash.dies_on = None
    provider = ScriptedProvider([ProviderTurn(({"kind": "text", "text": "b was not sent"},))])
    with open_app(store_url, cwd, crash, "never_auto_retry") as app:
        assert {r.kind for r in app.recover().repairs} == {"left_awaiting_operator"}
        app.open_session("s1")
        parked = app.resume("s1", provider)
        (op,) = [
            o.operation_id for o in app.tool_journal.tool_operations("r1") if o.tool_call_id == "c2"
        ]
        assert f"maka-es attest r1 {op} --not-applied --actor WHO" in parked.operator_commands
        attested = app.attest_operation("r1", op, applied=False, actor="ops")
        assert [r.kind for r in attested.recovery] == ["terminal_recovered"]
        resumed = app.resume("s1", provider)
        assert (resumed.status, resumed.run_id, resumed.answer) == (
            "continued",
            "r1",
            "b was not sent",
        )
    assert len(provider.requests) == 1
    assert users(provider.requests[0]) == [PROMPT]
    assert crash.ran == ["a", "b"]  # never run again


def test_a_run_left_unreconciled_parks_with_attest_and_fork(store_url: str, cwd: Path) -> None:
    """Restarted without its idempotent tool: recovery leaves the run unsealed; the operator
    may attest (the run is not ended), the attestation finishes its recovery and resume
    continues."""
    crash = Crash()
    crash.dies_on = "b"
    with open_app(store_url, cwd, crash, "idempotent") as app:
        app.open_session("s1")
        with pytest.raises(Killed):
            app.run_turn("s1", PROMPT, two_calls_then("unused"), run_id="r1")
    host = HostConfig(
        backend_kind="ai-sdk",
        llm_connection_slug="main",
        model_id="m",
        permission_mode="ask",
        cwd=str(cwd),
    )
    provider = ScriptedProvider([ProviderTurn(({"kind": "text", "text": "b was sent"},))])
    with RuntimeApplication.open(store_url, host_config=host, safe_boundary_resume=True) as app:
        assert {r.kind for r in app.recover().repairs} == {"left_unreconciled"}
        app.open_session("s1")
        parked = app.resume("s1", provider)
        assert (parked.status, parked.run_id) == ("parked", "r1")
        (op,) = [
            o.operation_id for o in app.tool_journal.tool_operations("r1") if o.tool_call_id == "c2"
        ]
        assert parked.operator_commands == (
            f"maka-es attest r1 {op} --applied --result RESULT --actor WHO",
            f"maka-es attest r1 {op} --not-applied --actor WHO",
            f"maka-es fork r1 --before {op} --actor WHO",
        )
        attested = app.attest_operation("r1", op, applied=True, result="sent", actor="ops")
        assert [r.kind for r in attested.recovery] == ["terminal_recovered"]
    with open_app(store_url, cwd, crash, "idempotent") as app:  # the tool is back
        app.recover()
        app.open_session("s1")
        resumed = app.resume("s1", provider)
        assert (resumed.status, resumed.answer) == ("continued", "b was sent")
    assert crash.ran == ["a", "b"]


def test_run_turn_is_refused_while_the_newest_run_is_live(store_url: str, cwd: Path) -> None:
    with open_app(store_url, cwd, Crash()) as app:
        app.open_session("s1")
        app.start_run("s1", run_id="live")
        provider = ScriptedProvider([])
        before = store_snapshot(app)
        with pytest.raises(TurnRefusedError) as refused:
            app.run_turn("s1", PROMPT, provider, run_id="r2")
        assert refused.value.detail == {"sessionId": "s1", "runId": "live", "status": "running"}
        assert store_snapshot(app).rows == before.rows  # every row unchanged
        assert not app.run_exists("r2")
        assert provider.requests == []


def test_run_turn_ends_failed_on_a_provider_error_and_resume_retries_it(
    store_url: str, cwd: Path
) -> None:
    provider = ScriptedProvider(
        [RuntimeError("model down"), ProviderTurn(({"kind": "text", "text": "up again"},))]
    )
    with open_app(store_url, cwd, Crash()) as app:
        app.open_session("s1")
        failed = app.run_turn("s1", PROMPT, provider, run_id="r1")
        assert (failed.status, failed.error_class, failed.answer) == (
            "failed",
            "RuntimeError",
            None,
        )
        assert app.get_run_header("r1").status == "failed"
        resumed = app.resume("s1", provider)
        assert (resumed.status, resumed.answer) == ("continued", "up again")
    assert users(provider.requests[1]) == [PROMPT]  # the retry sends the prompt once


def test_a_crash_between_two_calls_of_one_response_parks_with_a_fork_command(
    store_url: str, cwd: Path
) -> None:
    """The first call answered (T2 committed), the process gone before the second crossed
    T1: nothing is undecided, the plan parks ``provider_replay_non_suffix_gap``, and
    ``resume`` names the one way out, a fork before the response's first operation; the fork
    then finishes the turn with each call run once more by the model's new decision."""
    crash = Crash()
    with open_app(store_url, cwd, crash, "never_auto_retry") as app:
        app.open_session("s1")

        def dies(_: str) -> None:
            raise Killed

        failpoints.arm(AFTER_T2, dies)
        try:
            with pytest.raises(Killed):
                app.run_turn("s1", PROMPT, two_calls_then("unused"), run_id="r1")
        finally:
            failpoints.disarm(AFTER_T2)
    assert crash.ran == ["a"]
    with open_app(store_url, cwd, crash, "never_auto_retry") as app:
        app.recover()
        app.open_session("s1")
        parked = app.resume("s1", ScriptedProvider([]))
        assert parked.status == "parked"
        assert "provider_replay_non_suffix_gap" in parked.reasons
        (first,) = [
            o.operation_id for o in app.tool_journal.tool_operations("r1") if o.tool_call_id == "c1"
        ]
        assert parked.operator_commands == (f"maka-es fork r1 --before {first} --actor WHO",)
        before = store_snapshot(app).rows
        assert app.resume("s1", ScriptedProvider([])).operator_commands == parked.operator_commands
        assert store_snapshot(app).rows == before  # naming the way out writes nothing


def test_a_one_call_turn_commits_its_call_with_the_dispatch(store_url: str, cwd: Path) -> None:
    """ADR 0047: a model turn that is one call alone is recorded by its T1, so a step is two
    commits, and the process dying in any commit of the turn never leaves that call durable
    without its dispatch (or the tool run without both): each crash point is tried in turn."""
    crash = Crash()
    for point in range(1, 5):

        def dies(_: str, *, at: int = point, hits: list[int] = []) -> None:  # noqa: B006
            hits.append(1)  # one list per crash point: the default is bound per definition
            if len(hits) == at:
                raise Killed

        with open_app(store_url, cwd, crash) as app:
            app.open_session(f"s{point}")
            provider = ScriptedProvider(
                [
                    ProviderTurn((call(f"c{point}", "a"),)),
                    ProviderTurn(({"kind": "text", "text": "1"},)),
                ]
            )
            ran = len(crash.ran)
            failpoints.arm(failpoints.INSIDE_SAVE_BEFORE_COMMIT, dies)
            try:
                with pytest.raises(Killed):
                    app.run_turn(f"s{point}", PROMPT, provider, run_id=f"r{point}")
            finally:
                failpoints.disarm(failpoints.INSIDE_SAVE_BEFORE_COMMIT)
        with open_app(store_url, cwd, crash) as app:
            events = app.read_run_events(f"r{point}") if app.run_exists(f"r{point}") else []
            called = [e for e in events if e.function_call is not None]
            dispatched = [e for e in events if e.actions is not None and e.actions.tool_dispatch]
            assert len(called) == len(dispatched) <= 1
            assert len(crash.ran) - ran == len(dispatched)  # the tool ran iff T1 committed
