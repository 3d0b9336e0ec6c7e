"""Canonical JSON and the tool identities that must be byte-identical to the reference runtime.

Boundary digests live in ``continuation.boundary`` and provider replay items in
``continuation.replay``; both build on the canonical JSON defined here. The JavaScript text
of single scalars and the object-key order come first in this module, then the plain fast path,
then the exact encoder (one module for canonical JSON, issue 22, part 1).

Why this module exists: the reference (TypeScript) runtime persists *bytes* — stable JSON of
RuntimeEvents, SHA-256 identities of tool arguments, operation ids and boundary digests — and a
continuation claim written by one runtime must validate in the other. Every function here
therefore reproduces the exact byte format of the reference (``JSON.stringify`` of canonicalised
values, JavaScript number formatting, JavaScript property order) rather than what would be
idiomatic Python. It is pure: no clock, randomness, filesystem or database access.
"""

from __future__ import annotations

import hashlib
import json
import json.encoder
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeAlias

from maka_es.errors import CodecInputError, NonStrictJsonError
from maka_es.errors import StrictJsonError as StrictJsonError

__all__ = [
    "CodecInputError",
    "EXACT_INT_LIMIT",
    "JsonValue",
    "MAX_JSON_DEPTH",
    "MAX_SAFE_INTEGER",
    "PLAIN_DEPTH",
    "StrictJsonError",
    "as_wire",
    "canonical_args_hash",
    "canonical_json",
    "canonical_payload",
    "has_lone_surrogate",
    "is_sha256_digest",
    "js_key_order",
    "js_number",
    "js_sort_key",
    "js_string",
    "non_strict",
    "operation_id_for",
    "plain_args_body",
    "plain_canonical",
    "scalar_text",
    "sha256_digest",
    "string_text",
]


# ----------------------------------------------------------------------------------------------
# JavaScript's text for JSON scalars and its object-key order, reproduced byte for byte.
#
# Why a module of its own: every byte the reference (TypeScript) runtime persists or hashes goes
# through ``JSON.stringify``, so numbers, strings and key order must come out exactly as
# JavaScript writes them (``1`` not ``1.0``, ``1e+21``, UTF-16 key order with array-index keys
# first). These rules are the leaves of the canonical encoder in ``maka_es.wire.codec`` and are
# also used on their own (``js_sort_key`` orders ids wherever the reference sorts strings). See
# docs/reference/wire.md#canonical-json. Pure: no clock, randomness, filesystem or database.
#
# A refusal inside the encoder is the internal :class:`StrictJsonError` (it does not know its
# position yet); :func:`non_strict` turns it into the public
# :class:`~maka_es.errors.NonStrictJsonError` once the JSON-pointer path is known.

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


# ----------------------------------------------------------------------------------------------
# The fast path of canonical JSON: plain values, encoded by CPython's C encoder, or declined.
#
# Why: canonical JSON is on every write (the stored bytes of each event, exact-retry checks, the
# args hash of every dispatch), and the exact encoder of ``maka_es.wire.codec`` is iterative
# Python that keeps a JSON-pointer path so it can name what it refuses. Almost every value a tool
# step writes is *plain*: ASCII keys that are not array indexes, well-formed strings, safe
# integers, non-integral floats in plain notation, shallow nesting. For those, CPython's C encoder
# of the key-sorted value writes the very bytes of docs/reference/wire.md#canonical-json.
#
# It never decides anything on its own: whatever is not plain (a ``to_wire`` object below the
# root, a subclass of a scalar type, a non-ASCII, array-index or ``__proto__`` key, a collated
# ``required``/``enum`` array, a lone surrogate, an integral or exponent-notation float, an
# unsafe integer, deep nesting) makes :func:`plain_canonical` return ``None``, and the caller runs
# the exact encoder, which produces the bytes or the typed refusal with its path. That the two
# agree on everything accepted here is property-tested (tests/unit/wire/test_canonical_plain.py).
# Pure.

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
    """Whether the C encoder writes ``value`` exactly (the rules: ``plain_canonical``).

    Plain loops dispatching on the exact type, with an ASCII string (most keys' values)
    accepted in the loop itself, not ``all()`` over generators: it runs over every value of
    every event a command writes (issue 23, target 3)."""
    if type(value) is dict:
        if depth >= PLAIN_DEPTH:
            return False
        for key, item in value.items():
            # the key rules, inline (a call per key was a third of this check): non-ASCII keys
            # may sort differently in UTF-16 and digit-led keys may be array indexes, which
            # JavaScript lists first; the args identity's quirks are the exact encoder's.
            if type(key) is not str or not key.isascii() or (key and key[0] in _DIGITS):
                return False
            if drop_proto and (key == "__proto__" or (key in _COLLATED and type(item) is list)):
                return False
            if type(item) is str:
                if item.isascii() or not has_lone_surrogate(item):
                    continue
                return False
            if item is None or item is True or item is False:
                continue
            if not _is_plain(item, depth + 1, drop_proto):
                return False
        return True
    if type(value) is str:
        return value.isascii() or not has_lone_surrogate(value)
    if type(value) is list:
        if depth >= PLAIN_DEPTH:
            return False
        for item in value:
            if not (type(item) is str and item.isascii()) and not _is_plain(
                item, depth + 1, drop_proto
            ):
                return False
        return True
    if type(value) is int:
        return -EXACT_INT_LIMIT <= value <= EXACT_INT_LIMIT
    if type(value) is float:
        # JavaScript prints integral doubles without ".0" and switches to exponent notation at
        # other magnitudes than Python: only finite, non-integral floats in plain notation.
        return math.isfinite(value) and not value.is_integer() and "e" not in repr(value)
    return value is None or type(value) is bool


JsonValue: TypeAlias = bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None
"""A strict JSON value as Python holds it (what ``json.loads`` returns)."""

MAX_SAFE_INTEGER: Final = 2**53 - 1
"""``Number.MAX_SAFE_INTEGER``. Integers up to ``2**53`` are exact doubles and are accepted."""

MAX_JSON_DEPTH: Final = 512
"""Deepest container nesting accepted (a top-level list/dict is depth 1)."""

_SHA256_DIGEST_RE: Final = re.compile(r"sha256:[0-9a-f]{64}")
_MAX_UNWRAPS: Final = 4  # ``to_wire()`` returning another ``to_wire`` object, at most this deep


# --------------------------------------------------------------------------------------------
# Canonical (stable) JSON
# --------------------------------------------------------------------------------------------


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


def _object_keys(obj: dict[Any, Any], stack: list[_Frame]) -> list[str]:
    keys: list[str] = []
    for key in obj:
        if type(key) is str:
            keys.append(key)
        elif isinstance(key, str):
            keys.append(str.__str__(key))
        else:
            raise StrictJsonError(f"object key {key!r} is not a string", [*_path(stack), str(key)])
    if len(set(keys)) != len(keys):  # only possible with colliding str subclasses
        raise StrictJsonError("duplicate object keys", _path(stack))
    return js_key_order(keys)


class _Encoder:
    """One run of the iterative encoder behind :func:`canonical_json` and the args identity.

    ``out`` collects the text pieces and ``stack`` the open containers. ``drop_proto`` switches
    on the frozen ``t1_after_preflight_v1`` args-identity quirks: ``__proto__`` keys vanish and
    arrays held under a ``required``/``enum`` key are collated (docs/reference/wire.md#args-hash).
    """

    __slots__ = ("drop_proto", "out", "stack")

    def __init__(self, drop_proto: bool) -> None:
        self.drop_proto = drop_proto
        self.out: list[str] = []
        self.stack: list[_Frame] = []

    def write(self, value: object, parent_key: str | None) -> None:
        """Write a scalar's text or open a frame for a container. An object with ``to_wire()``
        is encoded through it, at most ``_MAX_UNWRAPS`` deep; anything else is refused."""
        unwraps = 0
        while True:
            try:
                text = scalar_text(value)
            except StrictJsonError as failure:
                raise non_strict(failure.reason, _path(self.stack)) from None
            if text is not None:
                self.out.append(text)
                return
            if isinstance(value, (dict, list)):
                self._open(value, parent_key)
                return
            unwrapped = _unwrap(value)
            unwraps += 1
            if unwrapped is value or unwraps > _MAX_UNWRAPS:
                reason = f"unsupported type {type(value).__name__}"
                raise non_strict(reason, _path(self.stack))
            value = unwrapped

    def _open(self, value: dict[Any, Any] | list[Any], parent_key: str | None) -> None:
        if len(self.stack) >= MAX_JSON_DEPTH:
            raise non_strict(f"nesting deeper than {MAX_JSON_DEPTH}", _path(self.stack))
        if isinstance(value, dict):
            try:
                keys = _object_keys(value, self.stack)
            except StrictJsonError as failure:
                raise non_strict(failure.reason, failure.segments) from None
            if self.drop_proto and "__proto__" in keys:
                keys.remove("__proto__")
            self.stack.append(_Frame(value, keys, False, len(self.out)))
            self.out.append("{")
        else:
            collate = self.drop_proto and parent_key in ("required", "enum")
            self.stack.append(_Frame(value, None, collate, len(self.out)))
            if not collate:
                self.out.append("[")

    def next_child(self) -> tuple[object, str | None] | None:
        """The next value to encode and the key it sits under, closing every container that
        is finished on the way; ``None`` once the root value is complete."""
        stack = self.stack
        while stack:
            frame = stack[-1]
            frame.index += 1
            child = (
                self._next_member(frame, frame.keys)
                if frame.keys is not None
                else self._next_item(frame)
            )
            if child is not None:
                return child
            stack.pop()
        return None

    def _next_member(self, frame: _Frame, keys: list[str]) -> tuple[object, str | None] | None:
        index = frame.index
        if index < len(keys):
            key = keys[index]
            try:
                key_text = string_text(key)
            except StrictJsonError as failure:
                raise non_strict(failure.reason, _path(self.stack)) from None
            self.out.append(key_text + ":" if index == 0 else "," + key_text + ":")
            return frame.container[key], key
        self.out.append("}")
        return None

    def _next_item(self, frame: _Frame) -> tuple[object, str | None] | None:
        index = frame.index
        if index < len(frame.container):
            if frame.collate:
                frame.marks.append(len(self.out))
            elif index:
                self.out.append(",")
            return frame.container[index], None
        if frame.collate:
            _close_collated(self.out, frame)
        else:
            self.out.append("]")
        return None


def _canonical(root: object, drop_proto: bool) -> str:
    """Encode ``root``: the plain fast path when it accepts the value, else the exact encoder
    (write one value, move to the next, until the root is closed)."""
    plain = root
    if root is not None and not isinstance(root, (str, int, float, dict, list)):
        plain = _unwrap(root)  # what the exact encoder does first with a ``to_wire`` root
    text = plain_canonical(plain, drop_proto)
    return text if text is not None else _exact_canonical(root, drop_proto)


def canonical_payload(value: object) -> tuple[str, bool]:
    """``canonical_json(value)`` and whether the plain fast path wrote it: then reading the
    text back gives exactly ``value``'s wire data again (ADR 0026)."""
    wire = _unwrap(value) if value is not None and not isinstance(value, (dict, list)) else value
    text = plain_canonical(wire, False)
    return (text, True) if text is not None else (canonical_json(value), False)


def _exact_canonical(root: object, drop_proto: bool) -> str:
    """The exact encoder: every value, every refusal with its JSON-pointer path."""
    encoder = _Encoder(drop_proto)
    write, next_child = encoder.write, encoder.next_child
    child: tuple[object, str | None] | None = (root, None)
    while child is not None:
        write(*child)
        child = next_child()
    return "".join(encoder.out)


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
    body = plain_args_body(tool_name, args)
    if body is None:
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
