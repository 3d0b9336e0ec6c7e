"""The fast path of canonical JSON: plain values, encoded by CPython's C encoder, or declined.

Why: canonical JSON is on every write (the stored bytes of each event, exact-retry checks, the
args hash of every dispatch), and the exact encoder of ``maka_es.wire.codec`` is iterative
Python that keeps a JSON-pointer path so it can name what it refuses. Almost every value a tool
step writes is *plain*: ASCII keys that are not array indexes, well-formed strings, safe
integers, non-integral floats in plain notation, shallow nesting. For those, CPython's C encoder
of the key-sorted value writes the very bytes of docs/reference/wire.md#canonical-json.

It never decides anything on its own: whatever is not plain (a ``to_wire`` object below the
root, a subclass of a scalar type, a non-ASCII, array-index or ``__proto__`` key, a collated
``required``/``enum`` array, a lone surrogate, an integral or exponent-notation float, an
unsafe integer, deep nesting) makes :func:`plain_canonical` return ``None``, and the caller runs
the exact encoder, which produces the bytes or the typed refusal with its path. That the two
agree on everything accepted here is property-tested (tests/unit/wire/test_canonical_plain.py).
Pure.
"""

from __future__ import annotations

import json
import json.encoder
import math
from collections.abc import Callable, Sequence
from typing import Final

from maka_es.wire.js_text import EXACT_INT_LIMIT, has_lone_surrogate

__all__ = ["PLAIN_DEPTH", "plain_args_body", "plain_canonical"]

#: Deeper values take the exact encoder (so a cycle is declined, never followed).
PLAIN_DEPTH: Final = 64

_DIGITS: Final = frozenset("0123456789")
_COLLATED: Final = ("required", "enum")

_ENCODER = json.JSONEncoder(
    ensure_ascii=False,  # C ``encode_basestring``: JSON.stringify's escaping (js_text.py)
    allow_nan=False,
    check_circular=False,  # _is_plain bounds the depth first
    sort_keys=True,  # ASCII keys: code-point order is UTF-16 order
    separators=(",", ":"),
)
#: The C encoder ``_ENCODER.encode`` builds on every call, built once (ADR 0034): the same
#: arguments ``JSONEncoder.iterencode`` passes, so the same text.
_C_MAKE_ENCODER: Callable[..., Callable[[object, int], Sequence[str]]] | None = getattr(
    json.encoder, "c_make_encoder", None
)
_C_ENCODE = (
    None
    if _C_MAKE_ENCODER is None
    else _C_MAKE_ENCODER(
        None,  # no markers: check_circular=False
        _ENCODER.default,
        json.encoder.encode_basestring,  # ensure_ascii=False
        None,  # indent
        ":",
        ",",
        True,  # sort_keys
        False,  # skipkeys
        False,  # allow_nan
    )
)


def _dumps(value: object) -> str:
    """``_ENCODER.encode(value)``, without building the C encoder again."""
    if _C_ENCODE is None or isinstance(value, str):
        text: str = _ENCODER.encode(value)
        return text
    return "".join(_C_ENCODE(value, 0))


def plain_canonical(value: object, drop_proto: bool) -> str | None:
    """The canonical text of a plain ``value``; ``None`` for anything else.

    ``drop_proto`` is the args-identity mode of the exact encoder: its quirks (``__proto__``
    keys vanish, ``required``/``enum`` arrays are collated) are declined here, not reproduced.
    """
    if not _is_plain(value, 0, drop_proto):
        return None
    text: str = _dumps(value)
    return text


def plain_args_body(tool_name: str, args: object) -> str | None:
    """The args-identity text ``{"args":…,"toolName":…}`` of plain ``args``; ``None`` else.

    Why: ``canonical_args_hash`` validated ``args`` (one encoding) and then encoded the body
    (a second one). Plain under the identity's rules at the body's depth implies strict JSON,
    and the C encoder writes a dict as its sorted members' texts, so one encoding of ``args``
    is the whole body, byte for byte (ADR 0034).
    """
    if not (_is_plain(tool_name, 0, True) and _is_plain(args, 1, True)):
        return None
    return '{"args":' + _dumps(args) + ',"toolName":' + _dumps(tool_name) + "}"


def _is_plain(value: object, depth: int, drop_proto: bool) -> bool:
    if isinstance(value, str):
        return type(value) is str and (value.isascii() or not has_lone_surrogate(value))
    if type(value) is dict:
        return depth < PLAIN_DEPTH and all(
            _is_plain_key(key, item, drop_proto) and _is_plain(item, depth + 1, drop_proto)
            for key, item in value.items()
        )
    if type(value) is list:
        return depth < PLAIN_DEPTH and all(_is_plain(i, depth + 1, drop_proto) for i in value)
    if type(value) is int:
        return -EXACT_INT_LIMIT <= value <= EXACT_INT_LIMIT
    if type(value) is float:
        # JavaScript prints integral doubles without ".0" and switches to exponent notation at
        # other magnitudes than Python: only finite, non-integral floats in plain notation.
        return math.isfinite(value) and not value.is_integer() and "e" not in repr(value)
    return value is None or type(value) is bool


def _is_plain_key(key: object, item: object, drop_proto: bool) -> bool:
    """Non-ASCII keys may sort differently in UTF-16 and digit-led keys may be array indexes,
    which JavaScript lists first: both are the exact encoder's business, as are the args
    identity's quirks."""
    if type(key) is not str or not key.isascii() or (key and key[0] in _DIGITS):
        return False
    return not drop_proto or not (key == "__proto__" or (key in _COLLATED and type(item) is list))
