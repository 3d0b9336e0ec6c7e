"""The canonical-JSON fast path writes the exact encoder's bytes or declines (never differs).

Why: ``canonical_json`` answers from ``wire.canonical_plain`` for plain values; any difference
from the exact encoder would change stored bytes, args hashes and operation ids."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maka_es.errors import NonStrictJsonError
from maka_es.testing.builders import LedgerBuilder
from maka_es.wire.codec import (
    PLAIN_DEPTH,
    _exact_canonical,
    canonical_args_hash,
    canonical_json,
    plain_canonical,
)
from maka_es.wire.events import RuntimeEvent

_keys = st.one_of(
    st.text(max_size=6),
    st.sampled_from(["0", "7", "42", "01", "4294967295", "__proto__", "required", "enum", ""]),
    st.text(alphabet=st.sampled_from(["a", "\U0001f600", "\uffff", "\ue000", "Z"]), max_size=3),
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.sampled_from(["\ud800", "a\udc00b", "\u2028", "\x00\x1f\x7f", '"\\']),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_keys, inner, max_size=4)),
    max_leaves=25,
)


def _exact(value: Any, drop_proto: bool) -> tuple[str, str | None]:
    try:
        return "ok", _exact_canonical(value, drop_proto)
    except NonStrictJsonError as exc:
        return "refused", str(exc.detail)


@given(_values, st.booleans())
def test_fast_path_bytes_equal_the_exact_encoder_or_it_declines(value: Any, drop: bool) -> None:
    expected = _exact(value, drop)
    fast = plain_canonical(value, drop)
    if fast is not None:
        assert expected == ("ok", fast)
    try:
        public: tuple[str, str | None] = ("ok", canonical_json(value) if not drop else None)
    except NonStrictJsonError as exc:
        public = ("refused", str(exc.detail))
    if not drop:
        assert public == expected  # the public function never differs, fast path or not


def test_a_tool_steps_events_take_the_fast_path_with_the_exact_bytes() -> None:
    ledger = LedgerBuilder()
    ledger.user(marker=True)
    call = ledger.t1_call("c1", "Echo", {"text": "hi", "n": 1.5, "list": [1, None, True]})
    ledger.bound_response("c1", "Echo", {"kind": "text", "text": "h\u00e9llo \u2028"})
    for wire in ledger.events:
        event = RuntimeEvent.model_validate(wire)
        assert plain_canonical(event.to_wire(), False) == _exact_canonical(event, False)
        assert canonical_json(event) == _exact_canonical(event, False)
    args = call["content"]["args"]
    assert plain_canonical({"args": args, "toolName": "Echo"}, True)  # accepted, not declined


@pytest.mark.parametrize(
    ("value", "drop"),
    [
        ({"b": 1, "0": 2}, False),  # array-index keys go first in JavaScript
        ({"\U0001f600": 1, "\uffff": 2}, False),  # UTF-16 order differs from code points
        ({"__proto__": 1, "a": 2}, True),  # the args identity drops it
        ({"required": ["b", "a"]}, True),  # the args identity collates it
        ({"a": float("nan")}, False),
        ({"a": 2**60}, False),
        ({"a": "\ud800"}, False),
        ({"a": (1, 2)}, False),
        ({"a": 1.0}, False),  # JavaScript writes 1
        ({"a": 1e-7}, False),  # JavaScript writes 1e-7, Python 1e-07
    ],
)
def test_what_is_not_plain_is_declined(value: Any, drop: bool) -> None:
    assert plain_canonical(value, drop) is None


def test_deep_values_are_declined_and_still_encoded_exactly() -> None:
    deep: Any = 1
    for _ in range(PLAIN_DEPTH + 5):
        deep = [deep]
    assert plain_canonical(deep, False) is None
    assert canonical_json(deep) == "[" * (PLAIN_DEPTH + 5) + "1" + "]" * (PLAIN_DEPTH + 5)


def test_args_hash_is_unchanged_by_the_fast_path() -> None:
    """A pinned hash: the bytes hashed for ``{"args": {"text": "hi"}, "toolName": "Echo"}``."""
    import hashlib

    body = '{"args":{"text":"hi"},"toolName":"Echo"}'
    expected = "sha256:" + hashlib.sha256(body.encode()).hexdigest()
    assert canonical_args_hash("Echo", {"text": "hi"}) == expected
