"""Canonical JSON and the tool identities that must be byte-identical to the reference runtime.

Boundary digests live in ``continuation.boundary`` and provider replay items in
``continuation.replay``; both build on the canonical JSON defined here. The JavaScript text
of single scalars and the object-key order come from ``maka_es.wire.js_text`` and are
re-exported here, where callers have always found them.

Why this module exists: the reference (TypeScript) runtime persists *bytes* — stable JSON of
RuntimeEvents, SHA-256 identities of tool arguments, operation ids and boundary digests — and a
continuation claim written by one runtime must validate in the other. Every function here
therefore reproduces the exact byte format of the reference (``JSON.stringify`` of canonicalised
values, JavaScript number formatting, JavaScript property order) rather than what would be
idiomatic Python. It is pure: no clock, randomness, filesystem or database access.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any, Final, TypeAlias

from maka_es.errors import CodecInputError
from maka_es.wire.canonical_plain import plain_args_body, plain_canonical
from maka_es.wire.js_text import (
    StrictJsonError,
    has_lone_surrogate,
    js_key_order,
    js_number,
    js_sort_key,
    js_string,
    non_strict,
    scalar_text,
    string_text,
)

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_SAFE_INTEGER",
    "CodecInputError",
    "JsonValue",
    "canonical_args_hash",
    "as_wire",
    "canonical_json",
    "canonical_payload",
    "has_lone_surrogate",
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
