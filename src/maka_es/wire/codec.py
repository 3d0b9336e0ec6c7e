"""Canonical JSON and the tool identities that must be byte-identical to the reference runtime.

Boundary digests live in ``boundary`` and provider replay items in ``replay_items``; both build
on the canonical JSON defined here.

Why this module exists: the reference (TypeScript) runtime persists *bytes* — stable JSON of
RuntimeEvents, SHA-256 identities of tool arguments, operation ids and boundary digests — and a
continuation claim written by one runtime must validate in the other. Every function here
therefore reproduces the exact byte format of the reference (``JSON.stringify`` of canonicalised
values, JavaScript number formatting, JavaScript property order) rather than what would be
idiomatic Python. It is pure: no clock, randomness, filesystem or database access.
"""

from __future__ import annotations

import hashlib
import json.encoder
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeAlias

from maka_es.errors import CodecInputError, NonStrictJsonError

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_SAFE_INTEGER",
    "CodecInputError",
    "JsonValue",
    "canonical_args_hash",
    "as_wire",
    "canonical_json",
    "is_sha256_digest",
    "js_number",
    "js_sort_key",
    "js_string",
    "operation_id_for",
    "sha256_digest",
]

JsonValue: TypeAlias = bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None
"""A strict JSON value as Python holds it (what ``json.loads`` returns)."""

MAX_SAFE_INTEGER: Final = 2**53 - 1
"""``Number.MAX_SAFE_INTEGER``. Integers up to ``2**53`` are exact doubles and are accepted."""

MAX_JSON_DEPTH: Final = 512
"""Deepest container nesting accepted (a top-level list/dict is depth 1)."""

_EXACT_INT_LIMIT: Final = 2**53
_ARRAY_INDEX_LIMIT: Final = 2**32 - 1  # ECMAScript "array index": 0 <= n < 2**32 - 1
_ARRAY_INDEX_RE: Final = re.compile(r"0|[1-9][0-9]{0,9}")
_SURROGATE_RE: Final = re.compile("[\ud800-\udfff]")
_SHA256_DIGEST_RE: Final = re.compile(r"sha256:[0-9a-f]{64}")
_ASTRAL_MIN: Final = "\U00010000"
_MAX_UNWRAPS: Final = 4  # ``to_wire()`` returning another ``to_wire`` object, at most this deep

# CPython's C ``encode_basestring`` escapes exactly what ``JSON.stringify`` escapes for
# well-formed strings: ``"``, ``\\``, ``\b\f\n\r\t`` and other C0 controls as lowercase
# ``\u00xx``; everything else (DEL, U+2028, non-ASCII) is emitted raw.
_encode_basestring: Callable[[str], str] = json.encoder.encode_basestring


# --------------------------------------------------------------------------------------------
# Canonical (stable) JSON
# --------------------------------------------------------------------------------------------


class _StrictJsonError(Exception):
    """Internal refusal; converted to :class:`NonStrictJsonError` once the path is known."""

    def __init__(self, reason: str, segments: Sequence[str] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.segments = list(segments)


def _pointer(segments: Sequence[str]) -> str:
    return "".join("/" + s.replace("~", "~0").replace("/", "~1") for s in segments)


def _non_strict(reason: str, segments: Sequence[str]) -> NonStrictJsonError:
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
        raise _non_strict("not a number", [])
    try:
        text = _scalar_text(value)
    except _StrictJsonError as failure:
        raise _non_strict(failure.reason, []) from None
    assert text is not None
    return text


def _float_text(x: float) -> str:
    if math.isnan(x) or math.isinf(x):
        raise _StrictJsonError("NaN and Infinity are not JSON")
    if x == 0.0:
        return "0"  # JSON.stringify(-0) === "0"
    if x.is_integer() and -_EXACT_INT_LIMIT <= x <= _EXACT_INT_LIMIT:
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
    raise _StrictJsonError("integer is not exactly representable as a JavaScript number")


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


def _js_key_order(keys: list[str]) -> list[str]:
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


def _string_text(s: str) -> str:
    if has_lone_surrogate(s):
        raise _StrictJsonError("string contains a lone surrogate")
    return _encode_basestring(s)


def js_string(s: str) -> str:
    """``JSON.stringify(s)`` for a well-formed string (lone surrogates are refused)."""
    try:
        return _string_text(s)
    except _StrictJsonError as failure:
        raise _non_strict(failure.reason, failure.segments) from None


def _unwrap(value: object) -> object:
    to_wire = getattr(value, "to_wire", None)
    return to_wire() if callable(to_wire) else value


class _Frame:
    """One open container of the iterative encoder (no Python recursion, so the depth limit,
    not the interpreter's recursion limit, decides what is accepted)."""

    __slots__ = ("collate", "container", "index", "keys", "marks", "start")

    def __init__(
        self,
        container: Any,  # dict when ``keys`` is set, else list
        keys: list[str] | None,
        collate: bool,
        start: int,
    ) -> None:
        self.container = container
        self.keys = keys
        self.collate = collate
        self.index = -1  # index of the child currently being encoded
        self.marks: list[int] = []
        self.start = start

    def segment(self) -> str:
        if self.keys is not None:
            return self.keys[self.index]
        return str(self.index)


def _path(stack: list[_Frame]) -> list[str]:
    return [frame.segment() for frame in stack if frame.index >= 0]


def _scalar_text(value: object) -> str | None:
    """Text of a JSON scalar, or None when ``value`` is not a scalar. May raise
    ``_StrictJsonError`` without a path (the caller adds it)."""
    if type(value) is str:
        return _string_text(value)
    if value is None:
        return "null"
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        if -_EXACT_INT_LIMIT <= value <= _EXACT_INT_LIMIT:
            return str(value)
        return _large_int_text(value)
    if type(value) is float:
        return _float_text(value)
    # Subclasses of the JSON scalar types (StrEnum, IntEnum, ...) encode as their base value.
    if isinstance(value, str):
        return _string_text(str.__str__(value))
    if isinstance(value, int):
        return _scalar_text(int(value))
    if isinstance(value, float):
        return _float_text(float(value))
    return None


def _object_keys(obj: dict[Any, Any], stack: list[_Frame]) -> list[str]:
    keys: list[str] = []
    for key in obj:
        if type(key) is str:
            keys.append(key)
        elif isinstance(key, str):
            keys.append(str.__str__(key))
        else:
            raise _StrictJsonError(f"object key {key!r} is not a string", [*_path(stack), str(key)])
    if len(set(keys)) != len(keys):  # only possible with colliding str subclasses
        raise _StrictJsonError("duplicate object keys", _path(stack))
    return _js_key_order(keys)


def _canonical(root: object, drop_proto: bool) -> str:
    """Iterative encoder behind :func:`canonical_json` and the args identity.

    ``drop_proto`` switches on the frozen ``t1_after_preflight_v1`` args-identity quirks:
    ``__proto__`` keys vanish and arrays held under a ``required``/``enum`` key are collated.
    """
    out: list[str] = []
    stack: list[_Frame] = []
    value: object = root
    parent_key: str | None = None
    unwraps = 0
    while True:
        # ---- encode ``value`` (a scalar is written; a container opens a frame) ----
        try:
            text = _scalar_text(value)
        except _StrictJsonError as failure:
            raise _non_strict(failure.reason, _path(stack)) from None
        if text is not None:
            out.append(text)
        elif isinstance(value, (dict, list)):
            if len(stack) >= MAX_JSON_DEPTH:
                raise _non_strict(f"nesting deeper than {MAX_JSON_DEPTH}", _path(stack))
            if isinstance(value, dict):
                try:
                    keys = _object_keys(value, stack)
                except _StrictJsonError as failure:
                    raise _non_strict(failure.reason, failure.segments) from None
                if drop_proto and "__proto__" in keys:
                    keys.remove("__proto__")
                stack.append(_Frame(value, keys, False, len(out)))
                out.append("{")
            else:
                collate = drop_proto and parent_key in ("required", "enum")
                stack.append(_Frame(value, None, collate, len(out)))
                if not collate:
                    out.append("[")
        else:
            unwrapped = _unwrap(value)
            unwraps += 1
            if unwrapped is value or unwraps > _MAX_UNWRAPS:
                reason = f"unsupported type {type(value).__name__}"
                raise _non_strict(reason, _path(stack))
            value = unwrapped
            continue
        unwraps = 0
        # ---- advance to the next child, closing finished containers ----
        while stack:
            frame = stack[-1]
            frame.index += 1
            index = frame.index
            if frame.keys is not None:
                if index < len(frame.keys):
                    key = frame.keys[index]
                    try:
                        key_text = _string_text(key)
                    except _StrictJsonError as failure:
                        raise _non_strict(failure.reason, _path(stack)) from None
                    out.append(key_text + ":" if index == 0 else "," + key_text + ":")
                    value = frame.container[key]
                    parent_key = key
                    break
                out.append("}")
            else:
                if index < len(frame.container):
                    if frame.collate:
                        frame.marks.append(len(out))
                    elif index:
                        out.append(",")
                    value = frame.container[index]
                    parent_key = None
                    break
                if frame.collate:
                    _close_collated(out, frame)
                else:
                    out.append("]")
            stack.pop()
        else:
            return "".join(out)


def _close_collated(out: list[str], frame: _Frame) -> None:
    bounds = [*frame.marks, len(out)]
    texts = ["".join(out[bounds[i] : bounds[i + 1]]) for i in range(len(frame.marks))]
    del out[frame.start :]
    texts.sort(key=_collation_key)  # list.sort is stable, like V8's Array.prototype.sort
    out.append("[" + ",".join(texts) + "]")


_collator: Any = None


def _collation_key(text: str) -> tuple[int, ...]:
    """Sort key emulating ``String.prototype.localeCompare`` (ICU root collation).

    pyuca implements the Unicode Collation Algorithm with the DUCET table, which agrees with
    ICU's root collation on the characters that appear in JSON text of schema keywords
    (``"a" < "A" < "b" < "B"``; punctuation < digits < letters).
    """
    global _collator
    if _collator is None:
        import pyuca  # deferred: building the collation table costs ~0.1 s

        _collator = pyuca.Collator()
    key: tuple[int, ...] = _collator.sort_key(text)
    return key


def canonical_json(value: object) -> str:
    """Stable JSON text of ``value``, byte-identical to the reference ``stableJsonStringify``.

    Object keys in JavaScript property order of a UTF-16-sorted object (array-index keys
    first, numerically), no whitespace, non-ASCII raw, ``JSON.stringify`` escaping and
    JavaScript number formatting. Objects exposing a callable ``to_wire()`` are encoded through
    it. Anything that is not strict JSON — NaN/±Infinity, ints beyond ``±2**53`` that
    JavaScript would print differently (``2**60``), non-string keys, tuples, sets, bytes, other
    objects, lone surrogates, nesting deeper than :data:`MAX_JSON_DEPTH` — raises
    :class:`NonStrictJsonError` with a JSON-pointer ``path`` in ``detail``. The input is never
    mutated.
    """
    return _canonical(value, False)


# --------------------------------------------------------------------------------------------
# Hashes and identities
# --------------------------------------------------------------------------------------------


def sha256_digest(data: bytes) -> str:
    """``"sha256:" + lowercase hex`` — the digest rendering used throughout the wire format."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def is_sha256_digest(s: object) -> bool:
    """True iff ``s`` is exactly ``sha256:`` followed by 64 lowercase hex digits."""
    return isinstance(s, str) and _SHA256_DIGEST_RE.fullmatch(s) is not None


def canonical_args_hash(tool_name: str, args: object) -> str:
    """Frozen ``t1_after_preflight_v1`` identity of a tool name + provider arguments.

    Why the quirks: released writers hashed ``{"args": args, "toolName": name}`` after a
    canonicalisation that silently lost ``__proto__`` keys and collated arrays held under a
    ``required`` or ``enum`` key by ``localeCompare`` of their JSON text. Dispatch facts already
    on disk carry those bytes, so they are reproduced exactly; changing them would need a new
    protocol version. ``args`` must be strict JSON (validated first, without the quirks).
    """
    if not isinstance(tool_name, str) or not tool_name:
        raise CodecInputError(
            "tool argument identity requires a non-empty tool name", code="tool_identity_invalid"
        )
    _canonical(args, False)  # strict-JSON validation (``__proto__`` counts here)
    body = _canonical({"args": args, "toolName": tool_name}, True)
    return sha256_digest(body.encode("utf-8"))


def operation_id_for(invocation_id: str, provider_tool_call_id: str) -> str:
    """Deterministic tool operation id: ``toolop_`` + 32 hex of SHA-256 of
    ``JSON.stringify([invocationId, providerToolCallId])``.

    Deterministic so that a retried dispatch of the same provider call after a crash lands on
    the same operation (and the same ``<op>_dispatch``/``<op>_response`` event ids).
    """
    if not invocation_id or not provider_tool_call_id:
        raise CodecInputError(
            "tool operation identity requires invocationId and providerToolCallId",
            code="tool_identity_invalid",
        )
    text = "[" + js_string(invocation_id) + "," + js_string(provider_tool_call_id) + "]"
    return "toolop_" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def as_wire(value: object) -> object:
    to_wire = getattr(value, "to_wire", None)
    if callable(to_wire) and not isinstance(value, Mapping):
        return to_wire()
    return value
