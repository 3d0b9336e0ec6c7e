"""The trusted decoder of verified stored bytes (ADR 0045): what it builds is exactly what
validation builds (values, defaults, ``fields_set``, interned ids, key order), it declines
whatever the full parse would read otherwise (nulls, 16-digit numbers, refusals), and nothing
from outside the store ever reaches it: a hostile or malformed event read without a matching
digest still gets the strict reader's typed error."""

from __future__ import annotations

import math
from typing import Any

import orjson
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from pydantic import BaseModel

from maka_es.errors import InvalidRuntimeEventError, MakaError
from maka_es.ledger.model.facts import (
    RuntimeEventRecorded,
    decode_recorded_event,
    payload_digest_of,
    read_recorded_event,
    run_stream_id,
)
from maka_es.testing.builders import Events
from maka_es.testing.strategies import json_values, runtime_event_dicts
from maka_es.wire.base import _SHARED_SET_IDS, TRUSTED_STORED
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEvent, trusted_event

KIT = Events.wire()


def _canonical(wire: dict[str, Any]) -> str | None:
    try:
        return canonical_json(RuntimeEvent.model_validate(wire))
    except MakaError:
        return None


def _same_model(fast: object, validated: object, where: str = "event") -> None:
    """The two trees are the same objects field by field, not only equal."""
    assert type(fast) is type(validated), where
    if isinstance(validated, BaseModel):
        assert isinstance(fast, BaseModel)
        assert list(fast.__dict__) == list(validated.__dict__), where
        assert fast.__pydantic_fields_set__ == validated.__pydantic_fields_set__, where
        assert id(fast.__pydantic_fields_set__) in _SHARED_SET_IDS, where
        assert fast.__pydantic_extra__ is validated.__pydantic_extra__ is None, where
        assert fast.__pydantic_private__ == validated.__pydantic_private__, where
        for name, value in validated.__dict__.items():
            _same_model(fast.__dict__[name], value, f"{where}.{name}")
    elif isinstance(validated, dict):
        assert isinstance(fast, dict)
        assert list(fast) == list(validated), where
        for key, value in validated.items():
            _same_model(fast[key], value, f"{where}.{key}")
    elif isinstance(validated, list):
        assert isinstance(fast, list), where
        assert len(fast) == len(validated), where
        for i, (a, b) in enumerate(zip(fast, validated, strict=True)):
            _same_model(a, b, f"{where}[{i}]")
    elif isinstance(validated, float) and math.isnan(validated):
        raise AssertionError(f"{where}: a NaN was validated")
    else:
        assert fast == validated, where


@given(runtime_event_dicts())
def test_the_trusted_decoder_builds_what_validation_builds(wire: dict[str, Any]) -> None:
    payload = _canonical(wire)
    assume(payload is not None)
    assert payload is not None
    fast = trusted_event(payload)
    validated = RuntimeEvent.model_validate_json(payload)  # the strict reader
    if fast is not None:
        _same_model(fast, validated)
        assert canonical_json(fast) == payload
        assert repr(fast) == repr(validated)
        for name in ("session_id", "invocation_id", "run_id", "turn_id"):
            assert getattr(fast, name) is getattr(validated, name)  # interned alike


@given(json_values, json_values)
def test_free_form_json_reads_back_as_validation_reads_it(args: Any, result: Any) -> None:
    for wire in (
        KIT.call("c1", "Echo", args, event_id="call1"),
        KIT.bound_response("c1", "Echo", result),
    ):
        payload = _canonical(wire)
        if payload is None:
            continue
        fast = trusted_event(payload)
        validated = RuntimeEvent.model_validate_json(payload)
        if fast is not None:
            _same_model(fast, validated)
            assert repr(fast) == repr(validated)


@pytest.mark.parametrize(
    "wire",
    [
        KIT.user("fix the port", event_id="u1", marker=True),
        KIT.text("done", event_id="m1"),
        KIT.call("c1", "Echo", {"text": "a", "n": [1, 2.5, True]}, event_id="call1"),
        KIT.bound_response("c1", "Echo", {"text": "a"}),
        KIT.response("c1", "Echo", {"ok": True}, event_id="r1"),
    ],
)
def test_the_plain_shapes_a_run_holds_take_the_fast_path(wire: dict[str, Any]) -> None:
    payload = _canonical(wire)
    assert payload is not None
    fast = trusted_event(payload)
    assert fast is not None
    _same_model(fast, RuntimeEvent.model_validate_json(payload))


def _with(payload: str, **changes: Any) -> str:
    data = orjson.loads(payload)
    data.update(changes)
    return orjson.dumps(data).decode()


_TEXT = canonical_json(RuntimeEvent.model_validate(KIT.text("hello", event_id="m1")))


_RARE_ACTIONS = [
    {"permissionRequest": {"kind": "ask", "requestId": "q1", "extra": [1, {"a": "b"}]}},
    {
        "permissionRequest": {
            "kind": "tool_permission",
            "requestId": "q2",
            "toolUseId": "c1",
            "toolName": "Echo",
            "category": "write",
            "reason": "asks",
            "args": {"x": 1},
            "rememberForTurnAllowed": False,
        }
    },
    {"permissionClosureAccepted": {"requestId": "q1", "reason": "timed_out"}},
    {"userQuestionRequest": {"requestId": "u1", "text": "why?"}},
    {"artifactDelta": {"a": 1, "b": 2.5, "c": "x", "d": True}, "stateDelta": {"k": [1]}},
]


@pytest.mark.parametrize("actions", _RARE_ACTIONS)
def test_rarer_actions_read_as_validation_reads_them(actions: dict[str, Any]) -> None:
    payload = _with(_TEXT, actions=actions)
    validated = RuntimeEvent.model_validate_json(payload)
    fast = trusted_event(payload)
    assert fast is not None
    _same_model(fast, validated)


@pytest.mark.parametrize(
    "payload",
    [
        _with(_TEXT, unknownKey=1),  # extra="forbid"
        _with(_TEXT, branch=None),  # an explicit null
        _TEXT.replace('"partial":false,', ""),  # a required key missing
        _with(_TEXT, ts=12345678901234567),  # 16+ digits: JavaScript number semantics
        _with(_TEXT, content=[1]),  # a model field that is not an object
        _with(_TEXT, content={"kind": "video", "text": "x"}),  # no such content kind
        _TEXT.replace('"hello"', '"\\ud800"'),  # a lone surrogate escape
        _TEXT[:-1],  # not JSON
        "[" + _TEXT + "]",  # not an object
    ],
)
def test_what_the_full_parse_reads_otherwise_or_refuses_is_declined(payload: str) -> None:
    assert trusted_event(payload) is None


def _recorded(payload: str, digest: str | None) -> RuntimeEventRecorded:
    return RuntimeEventRecorded(
        originator_id=run_stream_id("r1"),
        originator_version=2,
        event_seq=1,
        event_id="m1",
        payload=payload,
        committed_at=1,
        payload_digest=digest,
    )


#: Malformed or hostile event bytes, as an import or another writer might hand them over.
HOSTILE = [
    _with(_TEXT, unknownKey=1),
    _with(_TEXT, branch=None),
    _TEXT.replace('"partial":false,', ""),
    _with(_TEXT, content={"kind": "video", "text": "x"}),
    _with(_TEXT, ts="1000"),
    _with(_TEXT, partial=0),
    _TEXT.replace('"hello"', '"hello","text":"again"'),  # a duplicate key
    _TEXT.replace('"ts":', '"ts":NaN,"x":'),
    _TEXT.replace('"hello"', "1e400"),
    _TEXT.replace(
        '{"kind":"text","text":"hello"}',
        '{"kind":"function_call","id":"c","name":"n","args":{"a":1e999}}',
    ),
    _TEXT[:-1],
]


@pytest.mark.parametrize("payload", HOSTILE)
@pytest.mark.parametrize("digest", ["none", "another"])
def test_hostile_bytes_without_their_digest_get_the_strict_readers_typed_error(
    payload: str, digest: str
) -> None:
    """Only bytes that hash to the digest stored with them are trusted: anything else (an
    import's row, a rewritten row) is read by the strict reader and refused as before."""
    stored = None if digest == "none" else payload_digest_of(_TEXT)
    with pytest.raises(InvalidRuntimeEventError) as refused:
        decode_recorded_event(_recorded(payload, stored))
    with pytest.raises(InvalidRuntimeEventError) as strictly:
        RuntimeEvent.model_validate_json(payload)
    assert refused.value.code == strictly.value.code
    assert str(refused.value) == str(strictly.value)


def test_a_tampered_trusted_row_is_read_strictly() -> None:
    """A verified row's bytes changed after they were written (its digest kept): the digest no
    longer matches, so the row is not trusted and reads as the strict reader reads it."""
    tampered = _TEXT.replace('"hello"', '"goodbye"')
    event, verified = read_recorded_event(_recorded(tampered, payload_digest_of(_TEXT)))
    assert not verified
    assert event == RuntimeEvent.model_validate_json(tampered)
    fresh, verified = read_recorded_event(_recorded(_TEXT, payload_digest_of(_TEXT)))
    assert verified
    assert fresh == RuntimeEvent.model_validate_json(_TEXT)


@given(st.sampled_from(HOSTILE))
def test_a_forged_digest_over_hostile_bytes_reads_as_the_trusted_parse_read_it(
    payload: str,
) -> None:
    """A forged row whose digest matches is trusted, as before this decoder (ADR 0037); it is
    read exactly as pydantic's trusted parse reads it (a duplicate key: the last one), or
    refused with the same typed error."""
    fact = _recorded(payload, payload_digest_of(payload))
    try:
        before = RuntimeEvent.__pydantic_validator__.validate_json(payload, context=TRUSTED_STORED)
    except ValueError:
        before = None
    if before is None:
        assert trusted_event(payload) is None
        with pytest.raises(InvalidRuntimeEventError):
            decode_recorded_event(fact)
    else:
        _same_model(decode_recorded_event(fact), before)
