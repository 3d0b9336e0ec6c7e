"""A RuntimeEvent read from verified stored bytes by the models' own schema, compiled without
the two generic Python validators every wire model runs (ADR 0045).

Why: a committed event's payload is the canonical JSON that passed every boundary check when it
was written, and a row whose payload still hashes to the ``payload_digest`` stored with it is
those very bytes (ADR 0025, ADR 0037). The trusted parse of ADR 0025 still ran, per model, the
Python before-validator that refuses an explicit ``null`` (which makes pydantic build a Python
dict of every object first) and the Python after-validator that shares ``fields_set`` and
interns the spine ids: about two thirds of reading such a row. Here the same core schema (every
type, literal, length, pattern, range and the models' own validators) runs from the bytes in
Rust; the two are replaced by a check and a pass that give the same result:

* a payload holding ``null`` anywhere is read by the full trusted parse (explicit nulls are
  refused there, as before; ``args: null`` is read there too);
* after the parse each model gets the shared ``fields_set`` of its shape and the event its
  interned spine ids, exactly what the after-validator does (ADR 0034);
* a payload with a 16-digit number keeps ``loads_js``'s JavaScript number semantics by taking
  the full trusted path, as before;
* anything this parse refuses takes the full trusted path, which refuses it with the same typed
  error or reads it as before.

Only for verified stored bytes: appends, imports and rows whose digest does not match never
come here and are validated exactly as before.
"""

from __future__ import annotations

import sys
import typing
from typing import Any, Final

from pydantic import BaseModel, ValidationError
from pydantic_core import SchemaError, SchemaValidator

from maka_es.wire.base import _FIELDS_SETS, _share_fields_set
from maka_es.wire.events import RuntimeEvent

__all__ = ["trusted_event"]

#: The validators of :class:`WireModel` that every wire model runs, which the trusted schema
#: leaves out (see the module docstring for what replaces each).
_GENERIC: Final = frozenset({"_refuse_explicit_null", "_strict_json_payloads"})


def _function_name(node: dict[str, Any]) -> str | None:
    function = node.get("function", {}).get("function")
    return getattr(function, "__name__", None)


def _without_generic(node: Any) -> Any:
    """A copy of a core schema without the generic validators' wrappers (a wrapper's ``ref``
    moves to what it wrapped, so references still resolve)."""
    if isinstance(node, list):
        return [_without_generic(item) for item in node]
    if not isinstance(node, dict):
        return node
    while node.get("type") in ("function-before", "function-after") and (
        _function_name(node) in _GENERIC
    ):
        inner = dict(node["schema"])
        if "ref" in node:
            inner["ref"] = node["ref"]
        node = inner
    return {key: _without_generic(value) for key, value in node.items()}


def _trusted_validator() -> SchemaValidator | None:
    """The trusted schema, or ``None`` (every verified row takes the full trusted parse) when
    this pydantic's schema does not hold the generic validators as this module expects."""
    stripped = _without_generic(RuntimeEvent.__pydantic_core_schema__)
    if repr(stripped).count("function-") == repr(RuntimeEvent.__pydantic_core_schema__).count(
        "function-"
    ):
        return None  # nothing was left out: not the schema this module was written for
    try:
        return SchemaValidator(stripped)
    except SchemaError:  # a schema this pydantic-core refuses: the full parse for all
        return None


_VALIDATOR: Final = _trusted_validator()

#: An integer literal of 16+ digits may lie beyond 2**53 (read as a double by ``loads_js``):
#: found as 16 zeros once every digit is a zero and every other byte an ``x`` (a C
#: translation and a substring search: a fifth of a regular expression's cost).
_DIGITS: Final = bytes(0x30 if 0x30 <= b <= 0x39 else 0x78 for b in range(256))
_SIXTEEN_DIGITS: Final = b"0" * 16

#: Per wire model, the fields that may hold a model (where the pass after the parse looks).
_MODEL_FIELDS: dict[type[BaseModel], tuple[str, ...]] = {}


def _model_fields(cls: type[BaseModel]) -> tuple[str, ...]:
    names = _MODEL_FIELDS.get(cls)
    if names is None:
        names = _MODEL_FIELDS[cls] = tuple(
            name for name, info in cls.model_fields.items() if _may_hold_model(info.annotation)
        )
    return names


def _may_hold_model(annotation: Any) -> bool:
    if isinstance(annotation, type):
        return issubclass(annotation, BaseModel)
    return any(_may_hold_model(arg) for arg in typing.get_args(annotation))


def _finish(model: BaseModel) -> None:
    """The shared ``fields_set`` of each nested model's shape, as its after-validator gives
    it (ADR 0034); the models that may hold a model are walked."""
    _share(model)
    names = _MODEL_FIELDS.get(type(model))
    if names is None:
        names = _model_fields(type(model))
    if names:
        values = model.__dict__
        for name in names:
            value = values[name]
            if isinstance(value, BaseModel):  # a field may also hold a JSON object
                _finish(value)


def _share(model: BaseModel) -> None:
    shared = _FIELDS_SETS.get(frozenset(model.__pydantic_fields_set__))
    if shared is None:
        _share_fields_set(model)  # a new shape (or an unusual one, kept as it is)
    else:
        _set_fields_set(model, shared)


_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_intern = sys.intern


def _finish_event(event: RuntimeEvent) -> None:
    """What the after-validator does to the event and its models (ADR 0034): the spine ids
    interned (``RuntimeEvent._compact``) and the shared ``fields_set`` of each one's shape.
    Content and refs hold no model; actions may (walked by :func:`_finish`)."""
    values = event.__dict__
    values["session_id"] = _intern(values["session_id"])
    values["invocation_id"] = _intern(values["invocation_id"])
    values["run_id"] = _intern(values["run_id"])
    values["turn_id"] = _intern(values["turn_id"])
    sets = _FIELDS_SETS
    for model in (event, values["content"], values["refs"]):
        if model is not None:
            shared = sets.get(frozenset(model.__pydantic_fields_set__))
            if shared is None:
                _share_fields_set(model)
            else:
                _set_fields_set(model, shared)
    if values["actions"] is not None:
        _finish(values["actions"])


def trusted_event(payload: str) -> RuntimeEvent | None:
    """The RuntimeEvent of verified canonical ``payload`` bytes, or ``None`` (the caller takes
    the full trusted parse)."""
    if _VALIDATOR is None or "null" in payload:
        return None
    try:
        raw = payload.encode()
    except UnicodeEncodeError:  # a lone surrogate: the full parse reads it
        return None
    if _SIXTEEN_DIGITS in raw.translate(_DIGITS):
        return None
    try:
        event = _VALIDATOR.validate_json(raw)
    except (ValidationError, ValueError):
        return None
    if type(event) is not RuntimeEvent:
        return None
    _finish_event(event)
    return event
