"""The parse's fast paths against the reference (issue 23 target 5, ADR 0037 amendment 2026-12-02).

Why: ``loads_js`` reuses one decoder instead of building one per call, and a model parsed by
``model_validate_json`` from text that holds no surrogate skips the strict-JSON walk of its
payloads. Untrusted input must stay refused exactly as before: the same value or the same
error (type, code, field, message) as ``json.loads`` with the same hooks and as validating the
parsed dict with the walk, whatever the text, lone surrogates (escaped or literal) included.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maka_es.errors import MakaError
from maka_es.testing.builders import Spine
from maka_es.testing.strategies import runtime_event_dicts
from maka_es.wire import base
from maka_es.wire.base import loads_js, plain_json_text
from maka_es.wire.events import RuntimeEvent

POISON = ["\ud800", "\udfff", "a\udc00b", "\ud83d\ude00", "é", "ok", "\\ud800"]


def _reference_loads(text: str | bytes) -> Any:
    return json.loads(
        text,
        parse_constant=base._refuse_constant,
        parse_float=base._finite_float,
        parse_int=base._js_int,
        object_pairs_hook=base._unique_dict,
    )


def _outcome(parse: Any, text: Any) -> tuple[str, Any]:
    try:
        return "ok", parse(text)
    except (ValueError, TypeError) as exc:
        return type(exc).__name__, str(exc)


DOCUMENTS = st.one_of(
    st.text(max_size=30),
    st.sampled_from(
        ['{"a":1,"a":2}', "[NaN]", "1e400", "9" * 400, '"\\ud800"', "\ufeff{}", "{} x", '{"a":'],
    ),
)


@given(DOCUMENTS, st.sampled_from(["str", "utf-8", "utf-16", "bytearray"]))
@settings(max_examples=300)
def test_loads_js_is_json_loads_with_the_same_hooks(text: str, form: str) -> None:
    document: Any = text
    if form != "str":
        document = text.encode("utf-8" if form == "bytearray" else form, "surrogatepass")
        document = bytearray(document) if form == "bytearray" else document
    assert _outcome(loads_js, document) == _outcome(_reference_loads, document)


def test_loads_js_refuses_what_is_not_a_document() -> None:
    assert _outcome(loads_js, 12) == _outcome(_reference_loads, 12)


def _poisoned(value: Any, poison: str, where: int) -> tuple[Any, int]:
    """``value`` with its ``where``-th string (key or value, depth first) set to ``poison``."""
    if isinstance(value, str):
        return (poison if where == 0 else value), where - 1
    if isinstance(value, list):
        out = []
        for item in value:
            item, where = _poisoned(item, poison, where)
            out.append(item)
        return out, where
    if isinstance(value, dict):
        result: dict[str, Any] = {}
        for key, item in value.items():
            new_key = poison if where == 0 and poison not in result else key
            where -= 1
            result[new_key], where = _poisoned(item, poison, where)
        return result, where
    return value, where


def _validated(parse: Any, text: Any) -> tuple[str, Any]:
    try:
        event = parse(text)
    except MakaError as exc:
        return type(exc).__name__, (exc.code, str(exc), getattr(exc, "field", None))
    return "ok", (event, event.to_wire())


def _with_the_walk(text: str | bytes) -> RuntimeEvent:
    return RuntimeEvent.model_validate(loads_js(text))


#: Free-form JSON keys of the shapes ``runtime_event_dicts`` draws (the walk's targets).
PAYLOADS = ("args", "result", "providerOutput", "providerOptions", "details", "hint")


def _poison_payloads(event: dict[str, Any], poison: str, where: int, wrap: int) -> Any:
    """``event`` with a string of a payload (key or value) set to ``poison``; ``wrap`` also
    puts it next to the payload (as a key, as an item) so that every shape can carry it."""
    content = event.get("content")
    if not isinstance(content, dict):
        return _poisoned(event, poison, where)[0]  # a shape with no content: anywhere
    changed = dict(content)
    for key in [k for k in content if k in PAYLOADS]:
        value, where = _poisoned(content[key], poison, where)
        changed[key] = [value, poison] if wrap == 1 else {poison: value} if wrap == 2 else value
    return {**event, "content": changed}


@given(
    runtime_event_dicts(),
    st.sampled_from(POISON),
    st.integers(0, 12),
    st.integers(0, 2),
    st.booleans(),
    st.booleans(),
)
@settings(max_examples=400)
def test_a_parse_is_refused_or_built_exactly_as_with_the_walk(
    event: dict[str, Any], poison: str, where: int, wrap: int, ascii_only: bool, as_bytes: bool
) -> None:
    text: Any = json.dumps(_poison_payloads(event, poison, where, wrap), ensure_ascii=ascii_only)
    if as_bytes:
        text = text.encode("utf-8", "surrogatepass")
    fast = _validated(RuntimeEvent.model_validate_json, text)
    assert fast == _validated(_with_the_walk, text)


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ('{"a": "b"}', True),
        ('{"a": "\\u00e9"}', True),
        ('{"a": "\\ud800"}', False),
        ('{"a": "\\uDFFF"}', False),
        ('{"a": "\\\\ud800"}', False),  # an escaped backslash: a false alarm, only the walk
        ('{"a": "\ud800"}', False),
        ('{"\\udc00": 1}', False),
    ],
)
def test_plain_text_is_text_with_no_surrogate(text: str, plain: bool) -> None:
    assert plain_json_text(text) is plain


def test_a_lone_surrogate_in_a_payload_is_still_refused() -> None:
    event = Spine("s", "i", "r", "t").envelope("e1", 1, "model", "agent")
    event["content"] = {"kind": "function_call", "id": "c1", "name": "B", "args": {"k": "\ud800"}}
    for ascii_only in (True, False):
        with pytest.raises(MakaError, match="lone surrogate") as caught:
            RuntimeEvent.model_validate_json(json.dumps(event, ensure_ascii=ascii_only))
        assert caught.value.code == "invalid_runtime_event"
