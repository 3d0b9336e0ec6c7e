"""JavaScript's text for JSON scalars and its object-key order, reproduced byte for byte.

Why a module of its own: every byte the reference (TypeScript) runtime persists or hashes goes
through ``JSON.stringify``, so numbers, strings and key order must come out exactly as
JavaScript writes them (``1`` not ``1.0``, ``1e+21``, UTF-16 key order with array-index keys
first). These rules are the leaves of the canonical encoder in ``maka_es.wire.codec`` and are
also used on their own (``js_sort_key`` orders ids wherever the reference sorts strings). See
docs/reference/wire.md#canonical-json. Pure: no clock, randomness, filesystem or database.

A refusal inside the encoder is the internal :class:`StrictJsonError` (it does not know its
position yet); :func:`non_strict` turns it into the public
:class:`~maka_es.errors.NonStrictJsonError` once the JSON-pointer path is known.
"""

from __future__ import annotations

import json.encoder
import math
import re
from collections.abc import Callable, Sequence
from typing import Final

from maka_es.errors import NonStrictJsonError
from maka_es.errors import StrictJsonError as StrictJsonError

__all__ = [
    "EXACT_INT_LIMIT",
    "StrictJsonError",
    "has_lone_surrogate",
    "js_key_order",
    "js_number",
    "js_sort_key",
    "js_string",
    "non_strict",
    "scalar_text",
    "string_text",
]

#: Every integer up to this magnitude is an exact double and is printed as-is.
EXACT_INT_LIMIT: Final = 2**53
_ARRAY_INDEX_LIMIT: Final = 2**32 - 1  # ECMAScript "array index": 0 <= n < 2**32 - 1
_ARRAY_INDEX_RE: Final = re.compile(r"0|[1-9][0-9]{0,9}")
_SURROGATE_RE: Final = re.compile("[\ud800-\udfff]")
_ASTRAL_MIN: Final = "\U00010000"

# CPython's C ``encode_basestring`` escapes exactly what ``JSON.stringify`` escapes for
# well-formed strings: ``"``, ``\\``, ``\b\f\n\r\t`` and other C0 controls as lowercase
# ``\u00xx``; everything else (DEL, U+2028, non-ASCII) is emitted raw.
_encode_basestring: Callable[[str], str] = json.encoder.encode_basestring


def _pointer(segments: Sequence[str]) -> str:
    return "".join("/" + s.replace("~", "~0").replace("/", "~1") for s in segments)


def non_strict(reason: str, segments: Sequence[str]) -> NonStrictJsonError:
    """The public refusal for ``reason`` at the JSON-pointer built from ``segments``."""
    path = _pointer(segments)
    where = path if path else "(root)"
    return NonStrictJsonError(f"not strict JSON at {where}: {reason}", detail={"path": path})


def js_number(value: int | float) -> str:
    """Format a number exactly as ``Number.prototype.toString`` / ``JSON.stringify`` would.

    Why: stored event bytes and every digest over them embed numbers in JavaScript's format
    (``1`` not ``1.0``, ``1e+21``, ``1.5e-7``, ``-0`` → ``0``). Python's ``repr`` already yields
    the shortest round-trip digits; only the notation has to be re-laid out per ECMA-262
    Number::toString. Raises :class:`NonStrictJsonError` for non-finite floats and for ints
    beyond ``±2**53`` whose digits JavaScript would not print back unchanged.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise non_strict("not a number", [])
    try:
        text = scalar_text(value)
    except StrictJsonError as failure:
        raise non_strict(failure.reason, []) from None
    assert text is not None
    return text


def _float_text(x: float) -> str:
    if math.isnan(x) or math.isinf(x):
        raise StrictJsonError("NaN and Infinity are not JSON")
    if x == 0.0:
        return "0"  # JSON.stringify(-0) === "0"
    if x.is_integer() and -EXACT_INT_LIMIT <= x <= EXACT_INT_LIMIT:
        # Every integer up to 2**53 is an exact double whose exact decimal is also its shortest
        # round-trip representation.
        return str(int(x))
    return _js_layout(repr(x))


def _large_int_text(value: int) -> str:
    """An int beyond ``±2**53`` is accepted only when JavaScript would print it back with the
    same digits (e.g. ``9007199254740994``, or ``json.loads`` of our own ``1e20``-style output);
    anything else (``2**60`` prints as ``1152921504606847000``) would silently change value."""
    try:
        as_float = float(value)
    except OverflowError:
        as_float = math.inf
    if not math.isinf(as_float):
        text = _js_layout(repr(as_float))
        if text == str(value):
            return text
    raise StrictJsonError("integer is not exactly representable as a JavaScript number")


def _js_layout(text: str) -> str:
    """Re-lay out Python's shortest ``repr`` digits with ECMA-262 Number::toString rules."""
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    digits = (int_part + frac_part).lstrip("0")
    stripped = digits.rstrip("0")
    # value = stripped * 10**(exponent - len(frac_part) + trailing_zeros)
    k = len(stripped)
    n = exponent - len(frac_part) + (len(digits) - k) + k  # position of the decimal point
    if k <= n <= 21:
        body = stripped + "0" * (n - k)
    elif 0 < n <= 21:
        body = stripped[:n] + "." + stripped[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + stripped
    else:
        e = n - 1
        exp_str = ("e+" if e >= 0 else "e-") + str(abs(e))
        body = stripped + exp_str if k == 1 else stripped[0] + "." + stripped[1:] + exp_str
    return sign + body


def _is_array_index(key: str) -> bool:
    return _ARRAY_INDEX_RE.fullmatch(key) is not None and int(key) < _ARRAY_INDEX_LIMIT


def js_sort_key(text: str) -> bytes:
    """Sort key of JavaScript's default string order (``Array.prototype.sort``: UTF-16 code
    units). Every place that must order strings like the reference runtime uses it."""
    return text.encode("utf-16-be", "surrogatepass")


def js_key_order(keys: list[str]) -> list[str]:
    """Order object keys the way ``JSON.stringify`` emits a key-sorted object.

    The reference sorts keys with the JavaScript default sort (UTF-16 code units) and then
    re-inserts them into an object; ECMAScript property order always lists *array-index* keys
    (``"0"``, ``"7"``, ``"42"``, ...) first in ascending numeric order, then the remaining keys
    in insertion (= UTF-16 sorted) order. Code-point order equals UTF-16 order unless a key
    contains an astral-plane character, so the cheap ``str`` sort is used when possible.
    """
    index_keys = [k for k in keys if k and k[0] in "0123456789" and _is_array_index(k)]
    if index_keys:
        index_set = set(index_keys)
        rest = [k for k in keys if k not in index_set]
        index_keys.sort(key=int)
    else:
        rest = keys
    if any(k and max(k) >= _ASTRAL_MIN for k in rest):
        rest = sorted(rest, key=js_sort_key)
    else:
        rest = sorted(rest)
    return index_keys + rest if index_keys else rest


def has_lone_surrogate(s: str) -> bool:
    """Whether ``s`` holds a surrogate code point: text no UTF-8 writer can encode (and that
    pydantic's JSON serialisation silently rewrites to U+FFFD in object keys)."""
    return not s.isascii() and _SURROGATE_RE.search(s) is not None


def string_text(s: str) -> str:
    """``JSON.stringify(s)``; a lone surrogate is an internal :class:`StrictJsonError`."""
    if has_lone_surrogate(s):
        raise StrictJsonError("string contains a lone surrogate")
    return _encode_basestring(s)


def js_string(s: str) -> str:
    """``JSON.stringify(s)`` for a well-formed string (lone surrogates are refused)."""
    try:
        return string_text(s)
    except StrictJsonError as failure:
        raise non_strict(failure.reason, failure.segments) from None


def scalar_text(value: object) -> str | None:
    """Text of a JSON scalar, or None when ``value`` is not a scalar. May raise
    ``StrictJsonError`` without a path (the caller adds it)."""
    if type(value) is str:
        return string_text(value)
    if value is None:
        return "null"
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        if -EXACT_INT_LIMIT <= value <= EXACT_INT_LIMIT:
            return str(value)
        return _large_int_text(value)
    if type(value) is float:
        return _float_text(value)
    # Subclasses of the JSON scalar types (StrEnum, IntEnum, ...) encode as their base value.
    if isinstance(value, str):
        return string_text(str.__str__(value))
    if isinstance(value, int):
        return scalar_text(int(value))
    if isinstance(value, float):
        return _float_text(float(value))
    return None
