"""ADR 0026: the scanner computes a call's args hash and an event's lane once per instance,
so a decision's prospective check and the fold after its commit share them; the memo never
changes a decision (the hash is still compared with each dispatch's own)."""

from __future__ import annotations

from typing import Any

import pytest

from maka_es.testing.builders import Events, Spine
from maka_es.tooljournal.model import bundle
from maka_es.tooljournal.model.resolver import ResolverState
from maka_es.wire import events as lanes
from maka_es.wire.events import TOOL_BOUNDARY_PROTOCOL_V1 as T1

EV = Events.decoded(Spine("session-1", "invocation-1", "run-1", "turn-1"), ts=1)
ARGS = {"command": "ls"}


@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Tool names whose args hash the scanner computed."""
    seen: list[str] = []
    original = bundle.hash_or_none

    def counting(tool_name: str, args: object) -> str | None:
        seen.append(tool_name)
        return original(tool_name, args)

    monkeypatch.setattr("maka_es.tooljournal.model.scanner.hash_or_none", counting)
    return seen


def test_a_prospect_and_the_fold_hash_the_same_call_once(hashes: list[str]) -> None:
    state = ResolverState()
    state.feed(EV.user("run it", event_id="initial-1", marker=T1))
    call = EV.call("call-1", "Bash", ARGS)
    dispatch = EV.dispatch("call-1", "Bash", ARGS)
    assert state.issues_if_fed([call, dispatch]) == ()
    assert state.feed_all([call, dispatch]) == ()
    assert hashes == ["Bash"]


def test_a_dispatch_with_another_hash_is_still_a_conflict(hashes: list[str]) -> None:
    state = ResolverState()
    state.feed(EV.user("run it", event_id="initial-1", marker=T1))
    call = EV.call("call-1", "Bash", ARGS)
    good = EV.dispatch("call-1", "Bash", ARGS)
    assert state.issues_if_fed([call, good]) == ()  # the call's hash is now remembered
    bad = EV.dispatch("call-1", "Bash", ARGS, args_hash="sha256:" + "0" * 64)
    issues = state.feed_all([call, bad])
    assert [issue.code for issue in issues] == ["canonical_args_hash_conflict"]
    assert hashes == ["Bash"]


def test_equal_but_distinct_calls_are_each_hashed(hashes: list[str]) -> None:
    """The memo is by instance: another call object is hashed from its own args."""
    state = ResolverState()
    first = EV.call("call-1", "Bash", ARGS).function_call
    second = EV.call("call-1", "Bash", {"command": "rm"}).function_call
    assert first is not None
    assert second is not None
    assert state.args_hash_of(first) != state.args_hash_of(second)
    assert hashes == ["Bash", "Bash"]


def test_the_lane_is_classified_once_per_event(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    original = lanes.classify_lane

    def counting(event: Any) -> Any:
        seen.append(event.id)
        return original(event)

    monkeypatch.setattr("maka_es.tooljournal.model.scanner.classify_lane", counting)
    state = ResolverState()
    call = EV.call("call-1", "Bash", ARGS)
    state.issues_if_fed([call])
    state.feed(call)
    assert seen == [call.id]
