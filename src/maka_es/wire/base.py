"""Shared base for every model that mirrors the Maka runtime's JSON exactly.

Why a base class: the reference runtime decodes with *exact* key sets, camelCase keys and no
``null`` for absent optionals. Every wire model here therefore forbids extra keys, is frozen,
uses camelCase aliases with snake_case attributes, refuses an explicit ``null`` for an optional
key (absent and null are different facts on the wire), and turns pydantic's ``ValidationError``
into the project's typed error naming the offending field. ``to_wire()`` emits exactly the keys
that were given, so decode -> encode is lossless.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from maka_es.errors import MakaError
from maka_es.wire.codec import has_lone_surrogate

MAX_SAFE_INTEGER = 2**53 - 1

#: Validation context of a stored event whose bytes match the digest written with them: they
#: passed the strict-JSON checks at the boundary, so the after-validator is not run again
#: (ADR 0025). Compared by identity; no caller-supplied context can be mistaken for it.
TRUSTED_STORED: Any = {"maka_es": "trusted-stored-event"}


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"non-strict JSON constant {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"non-strict JSON number {text} (not a finite double)")
    return value


def _js_int(text: str) -> int | float:
    value = int(text)
    if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return value
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"non-strict JSON number {text[:20]}... (not a finite double)") from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate object key {key!r}")
        result[key] = value
    return result


def _unique_dict(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``_unique_keys`` at C speed for the common case: one ``dict`` call, and only an object
    that lost a key to a duplicate goes through ``_unique_keys`` (which names it)."""
    result = dict(pairs)
    return result if len(result) == len(pairs) else _unique_keys(pairs)


def loads_js(text: str | bytes | bytearray) -> Any:
    """Parse strict JSON with the reference runtime's number semantics.

    Why: the reference runtime is JavaScript, where every number is a double. A float such as
    ``6.677151143147895e16`` is written as ``66771511431478950``; reading that back as a Python
    int would change the value and make the ledger fail its own re-encoding, so integers beyond
    the safe range become doubles. Refused: ``NaN``/``Infinity``, numbers that overflow a double
    (``1e400``) and duplicate object keys (the canonical writer never produces them).

    Each object is built by one C ``dict`` call; only one that lost a key to a duplicate goes
    through ``_unique_keys``, which refuses it with the same message (ADR 0034).
    """
    return _JS_DECODER.decode(json_text(text))


def json_text(text: str | bytes | bytearray) -> str:
    """The document as ``json.loads`` reads it: bytes decoded in their detected encoding
    (surrogates passed through), a leading BOM refused, anything else a ``TypeError``."""
    if isinstance(text, str):
        if text.startswith("\ufeff"):
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        return text
    if not isinstance(text, bytes | bytearray):
        raise TypeError(
            f"the JSON object must be str, bytes or bytearray, not {text.__class__.__name__}"
        )
    return text.decode(json.detect_encoding(text), "surrogatepass")


#: One decoder for every document: ``json.loads`` with hooks builds a new one per call, which
#: was a tenth of a parse (issue 23). Decoding keeps no state between documents.
_JS_DECODER = json.JSONDecoder(
    parse_constant=_refuse_constant,
    parse_float=_finite_float,
    parse_int=_js_int,
    object_pairs_hook=_unique_dict,
)

#: Validation context of a model parsed by ``loads_js`` from text with no surrogate code point
#: and no surrogate escape: every number is finite and every key a string (``loads_js``
#: refuses the rest) and no string can hold a lone surrogate, so the strict-JSON walk of its
#: payloads cannot fail and is skipped (ADR 0037, amended 2026-12-02). Compared by identity.
PLAIN_JSON_TEXT: Any = {"maka_es": "plain-json-text"}
#: A surrogate code point, or a backslash-u escape of one (a false alarm only costs the walk).
_SURROGATE_RISK = re.compile(r"[\ud800-\udfff]|\\u[dD][89a-fA-F]")


def plain_json_text(text: str) -> bool:
    """Whether no string parsed from ``text`` can hold a surrogate (see ``PLAIN_JSON_TEXT``)."""
    return _SURROGATE_RISK.search(text) is None


#: The shared ``fields_set`` of each shape seen (``_share_fields_set``), and their ids; bounded,
#: so hostile input with ever new shapes cannot grow them without limit. Never evicted, so an
#: id stays that of its set.
_FIELDS_SETS: dict[frozenset[str], set[str]] = {}
_SHARED_SET_IDS: set[int] = set()
_FIELDS_SETS_MAX = 4096


def _share_fields_set(model: BaseModel) -> None:
    """Hold one ``fields_set`` per shape instead of one per instance (ADR 0034).

    Why: the set pydantic builds per instance was about half of a parsed event's memory, and a
    run holds every event. Wire models are frozen, so nothing adds to the set in place
    (``model_copy`` copies it before it updates it).
    """
    own = model.__pydantic_fields_set__
    key = frozenset(own)
    shared = _FIELDS_SETS.get(key)
    if shared is None:
        if len(_FIELDS_SETS) >= _FIELDS_SETS_MAX:
            return  # an unusual shape keeps its own set
        shared = _FIELDS_SETS[key] = set(own)
        _SHARED_SET_IDS.add(id(shared))
    object.__setattr__(model, "__pydantic_fields_set__", shared)


def _segment(key: str) -> str:
    """A path segment that can be printed (lone surrogates escaped)."""
    return ascii(key)[1:-1] if has_lone_surrogate(key) else key


def ensure_strict_json(value: Any, path: str) -> None:
    """Refuse free-form JSON that is not strict JSON: non-finite numbers, non-string object
    keys, and lone surrogates in object keys or string values.

    Why here, at validation: pydantic's ``JsonValue`` admits all of them, and its JSON
    serialisation rewrites a lone-surrogate *key* to U+FFFD before any later strict check, so
    ``{"\ud800": 1, "\udc00": 2}`` would collapse into one key and silently lose a value.
    Raises ``ValueError`` naming the dotted path (the model turns it into its typed error).
    """
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if has_lone_surrogate(item):
                raise ValueError(f"{where}: string contains a lone surrogate")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ValueError(f"{where}: non-finite number is not strict JSON")
        elif isinstance(item, dict):
            for key, sub in item.items():
                if not isinstance(key, str):
                    raise ValueError(f"{where}: non-string object key")
                if has_lone_surrogate(key):
                    raise ValueError(f"{where}: object key {key!a} contains a lone surrogate")
                stack.append((sub, f"{where}.{_segment(key)}"))
        elif isinstance(item, list):
            stack.extend((sub, f"{where}[{i}]") for i, sub in enumerate(item))


def _field_path(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif item in {"text", "thinking", "function_call", "function_response", "error"} and parts:
            # pydantic inserts the discriminator tag into the location; it is not a wire key.
            continue
        elif item.startswith(("function-after[", "function-before[", "function-wrap[")):
            continue
        else:
            parts.append(("." if parts else "") + item)
    return "".join(parts).replace(".[", "[") or "<root>"


class WireModel(BaseModel):
    """Frozen, exact-shape, camelCase model; see module docstring."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        strict=False,
        revalidate_instances="never",
    )

    #: camelCase keys whose value may legitimately be JSON ``null`` (``args``, ``result``, ...).
    nullable_keys: ClassVar[frozenset[str]] = frozenset()
    #: error type raised by :meth:`decode`; subclasses pick their domain error.
    error_class: ClassVar[type[MakaError]] = MakaError
    #: camelCase names of free-form JSON fields that must be strict JSON.
    json_payload_keys: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="before")
    @classmethod
    def _refuse_explicit_null(cls, data: Any) -> Any:
        if isinstance(data, dict) and None in data.values():
            for key, value in data.items():
                if value is None and key not in cls.nullable_keys:
                    field = cls.model_fields.get(key)
                    if field is None:
                        # unknown key: let extra="forbid" report it
                        alias_hit = any(f.alias == key for f in cls.model_fields.values())
                        if not alias_hit:
                            continue
                    raise PydanticCustomError(
                        "null_not_allowed", "{key} must be absent rather than null", {"key": key}
                    )
        return data

    #: ``(wire key, attribute)`` of each ``json_payload_keys`` entry, resolved once per class.
    _payload_attrs: ClassVar[tuple[tuple[str, str], ...]] = ()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Resolve the payload keys' attributes when the class is built, not per instance
        (the after-validator runs for every event parsed, ADR 0034)."""
        super().__pydantic_init_subclass__(**kwargs)
        by_alias = {f.alias: n for n, f in cls.model_fields.items()}
        cls._payload_attrs = tuple((key, by_alias[key]) for key in cls.json_payload_keys)

    @model_validator(mode="after")
    def _strict_json_payloads(self, info: ValidationInfo) -> Self:
        """Refuse non-strict free-form JSON, then keep the instance compact (ADR 0034).

        An instance whose ``fields_set`` is already a shared one passed this validator when it
        was built (pydantic runs after-validators again on instances passed as field values,
        e.g. every event of a ``ResumePlan``); nothing of it has changed since: it is frozen.
        """
        if id(self.__pydantic_fields_set__) in _SHARED_SET_IDS:
            return self
        if info.context is not TRUSTED_STORED and info.context is not PLAIN_JSON_TEXT:
            self._check_strict_json()  # else canonical bytes whose digest matched, or text
            # that holds no surrogate, which loads_js parsed (nothing the walk could refuse)
        self._compact()
        _share_fields_set(self)
        return self

    def _check_strict_json(self) -> None:
        for key, attr in self._payload_attrs:
            value = getattr(self, attr)
            if value is not None or key in self.nullable_keys:
                try:
                    ensure_strict_json(value, key)
                except ValueError as exc:  # name the field, like a missing or null key
                    raise PydanticCustomError(
                        "non_strict_json", "{message}", {"key": key, "message": str(exc)}
                    ) from None

    def _compact(self) -> None:
        """A subclass's hook to share repeated values of a validated instance (equal values)."""

    @classmethod
    def model_validate(
        cls,
        obj: Any,
        *,
        strict: bool | None = None,
        from_attributes: bool | None = None,
        context: Any | None = None,
        **kwargs: Any,
    ) -> Self:
        """Validate wire data, raising the model's typed error that names the field."""
        try:
            return super().model_validate(
                obj, strict=strict, from_attributes=from_attributes, context=context, **kwargs
            )
        except ValidationError as exc:
            raise cls._typed_error(exc) from None

    @classmethod
    def model_validate_json(
        cls,
        json_data: str | bytes | bytearray,
        *,
        strict: bool | None = None,
        context: Any | None = None,
        **kwargs: Any,
    ) -> Self:
        """Validate a JSON document (strict JSON, JavaScript number semantics)."""
        try:
            text = json_text(json_data)
            data = _JS_DECODER.decode(text)
        except ValueError as exc:
            error_class: Any = cls.error_class
            try:
                raise error_class(
                    f"{cls.__name__}: not strict JSON: {exc}", field="<root>"
                ) from None
            except TypeError:
                raise error_class(f"{cls.__name__}: not strict JSON: {exc}") from None
        if context is None and plain_json_text(text):
            context = PLAIN_JSON_TEXT
        return cls.model_validate(data, strict=strict, context=context, **kwargs)

    @classmethod
    def decode(cls, data: Any) -> Self:
        """Accept an instance as is, or validate wire data (typed error on failure)."""
        if isinstance(data, cls):
            return data
        return cls.model_validate(data)

    @classmethod
    def _typed_error(cls, exc: ValidationError) -> MakaError:
        first = exc.errors(include_url=False)[0]
        loc = tuple(first.get("loc", ()))
        ctx = first.get("ctx") or {}
        if first.get("type") in {"null_not_allowed", "non_strict_json"}:
            loc = (*loc, str(ctx["key"]))
        field = _field_path(loc)
        message = f"{cls.__name__}.{field}: {first.get('msg', 'invalid')}"
        error_class: Any = cls.error_class
        try:
            return error_class(message, field=field, detail={"errors": exc.error_count()})  # type: ignore[no-any-return]
        except TypeError:
            return error_class(message, detail={"field": field})  # type: ignore[no-any-return]

    def to_wire(self) -> dict[str, Any]:
        """The exact wire dict (camelCase keys, only keys that were set)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)
