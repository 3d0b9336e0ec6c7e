"""Errors of the wire format and the codec."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from maka_es.errors.base import MakaError

# --- wire / codec -------------------------------------------------------------------------


class InvalidRuntimeEventError(MakaError, ValueError):
    """A RuntimeEvent (or one of its parts) does not have the exact wire shape.

    ``field`` names the offending location as a dotted camelCase path (``content.args``).
    """

    default_code = "invalid_runtime_event"

    def __init__(self, message: str, *, field: str, detail: Mapping[str, Any] | None = None):
        super().__init__(message, detail={"field": field, **(detail or {})})
        self.field = field


class InvalidRunHeaderError(MakaError, ValueError):
    """An AgentRun header does not have the exact wire shape."""

    default_code = "invalid_run_header"

    def __init__(self, message: str, *, field: str, detail: Mapping[str, Any] | None = None):
        super().__init__(message, detail={"field": field, **(detail or {})})
        self.field = field


class InvalidHostConfigError(MakaError, ValueError):
    """A :class:`~maka_es.HostConfig` cannot be built from the values given.

    ``detail["errors"]`` lists ``{"field", "type"}`` per bad field (pydantic's error type, e.g.
    ``literal_error``, ``string_type``, ``missing``, ``extra_forbidden``); the values are never
    echoed, since a host config may be built from secrets in its environment. A ``ValueError``,
    as pydantic's ``ValidationError`` it replaces, so ``except ValueError`` still catches it.
    """

    default_code = "invalid_host_config"


class NonStrictJsonError(MakaError, ValueError):
    """A value is not strict JSON (NaN, Infinity, non-string key, unsupported type, ...)."""

    default_code = "non_strict_json"


class StrictJsonError(Exception):
    """Internal to the codec: becomes :class:`NonStrictJsonError` once the path is known."""

    def __init__(self, reason: str, segments: Sequence[str] = ()) -> None:
        super().__init__(reason)
        self.reason, self.segments = reason, list(segments)


class CodecInputError(MakaError, ValueError):
    """Input to a digest or identity function is structurally invalid (not a JSON problem); the
    ``code`` says which (``prefix_invalid``, ``boundary_invalid``, ... in ``maka_es.codes``)."""

    default_code = "codec_input_invalid"
