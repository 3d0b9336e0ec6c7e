"""A dispatch and call both read from rows the store verified (ADR 0025) skip re-hashing the
call's arguments; anything else is hashed exactly as before, and the write-time judgement of
a new dispatch (a prospective feed) always hashes, even against a verified call."""

from __future__ import annotations

from typing import Any

import pytest

from maka_es.testing.builders import Events, Spine
from maka_es.tooljournal.model import scanner
from maka_es.tooljournal.model.bundle import hash_or_none
from maka_es.tooljournal.model.resolver import ResolverState, resolve_tool_operations
from maka_es.wire.events import RuntimeEvent

SPINE = Spine("session-1", "invocation-1", "run-1", "turn-1")
EV = Events.decoded(SPINE, ts=1)
WRONG_HASH = "sha256:" + "0" * 64


def _call() -> RuntimeEvent:
    return EV.call("call-1", event_id="function-call-1", with_refs=True)


def _dispatch(**kw: Any) -> RuntimeEvent:
    return EV.dispatch("call-1", event_id="dispatch-1", operation_id="operation-1", **kw)


@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Tool names whose arguments the scanner hashed."""
    hashed: list[str] = []

    def counting(tool_name: str, args: object) -> str | None:
        hashed.append(tool_name)
        return hash_or_none(tool_name, args)

    monkeypatch.setattr(scanner, "hash_or_none", counting)
    return hashed


def test_a_verified_pair_is_not_rehashed(hashes: list[str]) -> None:
    state = ResolverState()
    state.feed(_call(), verified=True)
    state.feed(_dispatch(), verified=True)
    assert hashes == []
    assert state.resolution() == resolve_tool_operations([_call(), _dispatch()])


@pytest.mark.parametrize(("call_verified", "dispatch_verified"), [(True, False), (False, True)])
def test_an_unverified_side_is_hashed_and_a_wrong_hash_is_caught(
    hashes: list[str], call_verified: bool, dispatch_verified: bool
) -> None:
    state = ResolverState()
    state.feed(_call(), verified=call_verified)
    issues = state.feed(_dispatch(args_hash=WRONG_HASH), verified=dispatch_verified)
    assert [issue.code for issue in issues] == ["canonical_args_hash_conflict"]
    assert hashes == ["Bash"]


def test_a_prospective_dispatch_is_hashed_against_a_verified_call(hashes: list[str]) -> None:
    """The write-time check is unchanged: events being judged are never verified."""
    state = ResolverState()
    state.feed(_call(), verified=True)
    issues = state.issues_if_fed([_dispatch(args_hash=WRONG_HASH)])
    assert [issue.code for issue in issues] == ["canonical_args_hash_conflict"]
    assert hashes == ["Bash"]
    assert not state.has_issues  # rolled back
    assert state.issues_if_fed([_dispatch()]) == ()
