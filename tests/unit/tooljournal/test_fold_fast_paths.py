"""ADR 0034 (the resolver fold per event): a plain fold writes its state directly, keeps no
memo it could never read, builds decisions and refs without validating them again, and the
lanes and the args hash take their one-pass forms; every result is what the validated,
journalled path builds (the resolver, stateful and oracle suites are the wider net)."""

from __future__ import annotations

import dataclasses
import json.encoder
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from maka_es.testing.builders import Events, Spine
from maka_es.testing.strategies import runtime_event_dicts
from maka_es.tooljournal.model.resolver import ResolverState, ToolDecision
from maka_es.tooljournal.model.scanner import EventRef
from maka_es.wire import codec as canonical_plain
from maka_es.wire.codec import canonical_args_hash
from maka_es.wire.events import TOOL_BOUNDARY_PROTOCOL_V1 as T1
from maka_es.wire.events import RuntimeEvent, _given_exactly, _set_keys

EV = Events.decoded(Spine("session-1", "invocation-1", "run-1", "turn-1"), ts=1)
ARGS = {"command": "ls"}


def _ledger() -> list[RuntimeEvent]:
    """Every decision row the fold builds: completed, error, indeterminate, not dispatched,
    orphan response, duplicate call, a hash conflict, a bundle."""
    return [
        EV.user("run it", event_id="initial-1", marker=T1),
        EV.call("c1", "Bash", ARGS),
        EV.dispatch("c1", "Bash", ARGS),
        EV.bound_response("c1", "Bash"),
        EV.call("c2", "Bash", ARGS),
        EV.dispatch("c2", "Bash", ARGS),
        EV.bound_response("c2", "Bash", is_error=True),
        EV.call("c3", "Bash", ARGS),
        EV.dispatch("c3", "Bash", ARGS),
        EV.call("c4", "Bash", ARGS),
        EV.response("c5", "Bash"),
        EV.call("c6", "Bash", ARGS),
        EV.call("c6", "Bash", ARGS, event_id="call-c6-again"),
        EV.call("c7", "Bash", ARGS),
        EV.dispatch("c7", "Bash", ARGS, args_hash="sha256:" + "0" * 64),
        EV.call("c8", "Bash", ARGS),
        EV.dispatch("c8", "Bash", ARGS, recovery_mode="reconcile"),
        *_bundle(EV.completed_bundle("c8", "Bash")),
        EV.call("c9", "Bash", ARGS),
        EV.dispatch("c9", "Bash", ARGS, recovery_mode="reconcile"),
        *_bundle(EV.parked_bundle("c9")),
    ]


def _bundle(parts: dict[str, RuntimeEvent]) -> list[RuntimeEvent]:
    """A bundle's facts in commit order: reconcile, outcome (if any), decision."""
    return [parts[key] for key in ("reconcile", "outcome", "decision") if key in parts]


def test_decisions_are_exactly_what_validation_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    state = ResolverState()
    state.feed_all(_ledger())
    validated: list[Any] = []
    real = ToolDecision.__pydantic_validator__

    class Counting:
        def __getattr__(self, name: str) -> Any:
            validated.append(name)
            return getattr(real, name)

    monkeypatch.setattr(ToolDecision, "__pydantic_validator__", Counting())
    decisions = state.resolution().decisions
    assert validated == []  # no decision went through pydantic validation
    monkeypatch.undo()
    assert {d.status for d in decisions} >= {"completed", "indeterminate", "corruption"}
    assert {d.reason for d in decisions} >= {
        "recovery_bundle_completed",
        "reconcile_diverged",
        "orphan_response",
        "duplicate_call",
        "canonical_args_hash_conflict",
    }
    for decision in decisions:
        checked = ToolDecision.model_validate(decision.model_dump())
        assert decision.__getstate__() == checked.__getstate__()
        assert list(decision.__dict__) == list(checked.__dict__)
        assert decision == checked
        assert hash(decision) == hash(checked)
        assert decision.model_dump_json(by_alias=True) == checked.model_dump_json(by_alias=True)
        assert repr(decision) == repr(checked)
        with pytest.raises(ValidationError, match="frozen"):
            decision.status = "completed"  # type: ignore[misc]  # still frozen


def test_a_plain_fold_bypasses_the_journal_helpers_and_the_memo(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    journalled: list[str] = []
    for helper in ("_set", "_put", "_append"):
        real = getattr(ResolverState, helper)

        def spy(self: Any, *args: Any, _real: Any = real, _name: str = helper) -> None:
            journalled.append(_name)
            _real(self, *args)

        monkeypatch.setattr(ResolverState, helper, spy)
    state = ResolverState()
    state.feed_all(
        [
            EV.user("go", event_id="initial-1"),
            EV.user("hi", event_id="user-2"),
            EV.user("ho", event_id="user-3"),
        ]
    )
    # the count and positions of every event are written directly, and a spine already
    # known is not written again: only the invocation's first spine goes through a helper
    assert journalled == ["_put"]
    state.feed_all(_ledger()[1:4])
    assert state._lanes == {}
    assert state._args_hashes == {}
    # a prospective check still journals and remembers, so the write path hashes once
    call, dispatch = EV.call("c10", "Bash", ARGS), EV.dispatch("c10", "Bash", ARGS)
    before = len(journalled)
    assert state.issues_if_fed([call, dispatch]) == ()
    assert len(journalled) > before
    assert len(state._lanes) == 2
    assert len(state._args_hashes) == 1


@given(st.data())
@settings(max_examples=60)
def test_a_prospect_rolls_back_to_the_plain_folds_state(data: st.DataObject) -> None:
    """Fold a prefix directly, prospect the rest, roll back: the state equals the prefix's."""
    ledger = _ledger()
    cut = data.draw(st.integers(0, len(ledger)))
    state, reference = ResolverState(), ResolverState()
    state.feed_all(ledger[:cut])
    reference.feed_all(ledger[:cut])
    state.issues_if_fed(ledger[cut:])
    assert state.resolution() == reference.resolution()
    assert state._positions == reference._positions
    assert state._spines == reference._spines
    assert state.event_count == reference.event_count
    assert state.feed_all(ledger[cut:]) == reference.feed_all(ledger[cut:])
    assert state.resolution() == reference.resolution()


def test_a_ref_is_what_its_constructor_builds() -> None:
    names = tuple(field.name for field in dataclasses.fields(EventRef))
    assert names == ("id", "position", "identity", "refs", "is_error", "event")
    for position, event in enumerate(_ledger()):
        ref = EventRef.of(event, position)
        refs = event.refs
        response = event.function_response
        built = EventRef(
            event.id,
            position,
            event.identity,
            None if refs is None else (refs.operation_id, refs.tool_call_id),
            response is not None and response.is_error is True,
            event,
        )
        assert ref == built
        assert hash(ref) == hash(built)
        assert all(getattr(ref, name) == getattr(built, name) for name in names)
        assert ref.event is event
        with pytest.raises(dataclasses.FrozenInstanceError):
            ref.position = 0  # type: ignore[misc]


@given(runtime_event_dicts())
def test_lanes_compare_field_names_as_wire_keys(event: dict[str, Any]) -> None:
    decoded = RuntimeEvent.model_validate(event)
    key_sets = [
        frozenset({"stateDelta"}),
        frozenset({"toolDispatch"}),
        frozenset({"toolRecovery"}),
        frozenset({"operationId", "toolCallId"}),
        frozenset({"operationId", "toolCallId", "parentToolCallId", "parentOperationId"}),
        frozenset({"noSuchKey"}),
    ]
    for model in (decoded.actions, decoded.refs):
        if model is not None:
            for keys in key_sets:
                assert _given_exactly(model, keys) == (_set_keys(model) == keys)


def test_the_args_hash_reuses_one_c_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = canonical_args_hash("Bash", {"command": "ls", "n": [1, 2.5, None, True]})

    def refuse(*args: object) -> None:
        raise AssertionError("the C encoder was built again")

    monkeypatch.setattr(json.encoder, "c_make_encoder", refuse)
    assert canonical_args_hash("Bash", {"command": "ls", "n": [1, 2.5, None, True]}) == expected


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    )
)
def test_the_reused_c_encoder_writes_what_the_encoder_writes(value: object) -> None:
    if canonical_plain._is_plain(value, 0, False):
        assert canonical_plain._dumps(value) == canonical_plain._ENCODER.encode(value)
