"""Parsed events share what they repeat, and nothing a reader sees changes (ADR 0034).

Why: a run holds every parsed event; the shared ``fields_set``, the interned spine ids, the
C-built JSON objects and the one-pass args hash must keep every value, byte and refusal."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maka_es.errors import InvalidRuntimeEventError, NonStrictJsonError
from maka_es.testing.builders import Events, Spine
from maka_es.wire import codec
from maka_es.wire.base import (
    TRUSTED_STORED,
    _finite_float,
    _js_int,
    _refuse_constant,
    _unique_keys,
    loads_js,
)
from maka_es.wire.codec import _exact_canonical, canonical_args_hash, canonical_json, sha256_digest
from maka_es.wire.events import FunctionCallContent, RuntimeEvent

_RUN = Spine(session_id="s-lean", invocation_id="inv-lean", run_id="run-lean", turn_id="t-lean")


def _texts() -> list[str]:
    kit = Events.wire(_RUN, ts=1000)
    return [json.dumps(kit.text(f"note {n}", event_id=f"e{n}")) for n in range(3)]


def _reference_loads(text: str) -> Any:
    """``loads_js`` as it was: every object through the Python duplicate-key hook."""
    return json.loads(
        text,
        parse_constant=_refuse_constant,
        parse_float=_finite_float,
        parse_int=_js_int,
        object_pairs_hook=_unique_keys,
    )


def test_same_shape_events_share_one_fields_set_and_keep_their_bytes() -> None:
    texts = _texts()
    events = [RuntimeEvent.model_validate_json(text) for text in texts]
    assert events[0].__pydantic_fields_set__ is events[1].__pydantic_fields_set__
    assert events[0].content is not None
    assert events[1].content is not None
    assert events[0].content.__pydantic_fields_set__ is events[1].content.__pydantic_fields_set__
    for text, event in zip(texts, events, strict=True):
        assert event.to_wire() == json.loads(text)
        assert canonical_json(event) == canonical_json(json.loads(text))
        assert event == RuntimeEvent.model_validate(json.loads(text))


def test_spine_ids_are_one_object_per_value_on_both_read_paths() -> None:
    texts = _texts()
    strict = [RuntimeEvent.model_validate_json(text) for text in texts]
    trusted = [
        RuntimeEvent.__pydantic_validator__.validate_json(text, context=TRUSTED_STORED)
        for text in texts
    ]
    for name in ("session_id", "invocation_id", "run_id", "turn_id"):
        values = {id(getattr(event, name)) for event in strict + trusted}
        assert len(values) == 1, name
    assert strict == trusted


def test_model_copy_update_leaves_the_shared_set_of_its_siblings_alone() -> None:
    first, second = (RuntimeEvent.model_validate_json(text) for text in _texts()[:2])
    before = set(second.model_fields_set)
    copied = first.model_copy(update={"status": "completed"})
    assert "status" in copied.model_fields_set
    assert second.model_fields_set == before == first.model_fields_set
    assert "status" not in second.to_wire()
    assert copied.to_wire()["status"] == "completed"


def test_an_unvalidated_instance_passed_as_a_field_is_still_checked() -> None:
    forged = FunctionCallContent.model_construct(
        kind="function_call", id="c1", name="Echo", args={"x": float("nan")}
    )
    wire = Events.wire(_RUN, ts=1000).text(event_id="e-forged")
    wire["content"] = forged
    with pytest.raises(InvalidRuntimeEventError, match="not strict JSON"):
        RuntimeEvent.model_validate(wire)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a":1,"a":2}', "duplicate object key 'a'"),
        ('{"x":{"b":[{"k":1,"k":1}]}}', "duplicate object key 'k'"),
        ('{"a":NaN}', "non-strict JSON constant NaN"),
        ('{"a":1e400}', "not a finite double"),
    ],
)
def test_loads_js_refuses_what_it_refused_with_the_same_message(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        loads_js(text)
    with pytest.raises(ValueError, match=message):
        _reference_loads(text)


def test_a_duplicate_key_in_an_event_is_still_refused() -> None:
    text = _texts()[0].replace('"partial": false', '"partial": false, "partial": true')
    with pytest.raises(InvalidRuntimeEventError, match="duplicate object key 'partial'"):
        RuntimeEvent.model_validate_json(text)


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=20,
)


def _outcome(load: Any, text: str) -> tuple[str, Any]:
    try:
        return "ok", load(text)
    except ValueError as exc:
        return "refused", str(exc)


@given(_values, st.integers(min_value=0, max_value=3))
def test_loads_js_reads_exactly_what_the_hooked_decoder_reads(value: Any, dup: int) -> None:
    text = json.dumps(value)
    if dup and text.startswith("{") and text != "{}":
        key = json.dumps(next(iter(value)))
        text = "{" + key + ":" + str(dup) + "," + text[1:]  # the same key once more
    assert repr(_outcome(loads_js, text)) == repr(_outcome(_reference_loads, text))


def _exact_args_hash(name: str, args: Any) -> tuple[str, str | None]:
    try:
        _exact_canonical(args, False)
        body = _exact_canonical({"args": args, "toolName": name}, True)
    except NonStrictJsonError as exc:
        return "refused", str(exc.detail)
    return "ok", sha256_digest(body.encode("utf-8"))


_keys = st.one_of(st.text(max_size=4), st.sampled_from(["__proto__", "required", "enum", "0"]))
_args = st.recursive(
    st.one_of(_scalars, st.floats(), st.sampled_from(["\ud800", "x\u2028"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_keys, inner, max_size=3)),
    max_leaves=15,
)


@given(st.sampled_from(["Echo", "Bash", "n\u00e9", "\ud800x"]), _args)
def test_one_pass_args_hash_equals_the_exact_encoder(name: str, args: Any) -> None:
    try:
        got: tuple[str, str | None] = ("ok", canonical_args_hash(name, args))
    except NonStrictJsonError as exc:
        got = ("refused", str(exc.detail))
    assert got == _exact_args_hash(name, args)


def test_plain_args_are_hashed_without_the_generic_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    generic = codec._canonical

    def spy(value: object, drop_proto: bool) -> str:
        calls.append(value)
        return generic(value, drop_proto)

    monkeypatch.setattr(codec, "_canonical", spy)
    plain = canonical_args_hash("Echo", {"text": "step 1", "n": [1, 2.5, None]})
    assert calls == []
    quirky = canonical_args_hash("Echo", {"required": ["b", "a"]})  # collated: exact encoder
    assert len(calls) == 2
    assert plain != quirky
