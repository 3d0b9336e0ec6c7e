"""Field types and the base model shared by every part of a RuntimeEvent.

Why a module of its own: the envelope (``maka_es.wire.events``) and the action payloads
(``maka_es.wire.actions``) validate the same kinds of values (non-empty ids, ``sha256:``
digests, JavaScript-safe integers) and fail with the same typed error; defining them once keeps
the two halves of the model from drifting apart. See docs/reference/wire.md#envelope.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field, JsonValue, StrictFloat, StrictInt, StrictStr

from maka_es.errors import InvalidRuntimeEventError, MakaError
from maka_es.wire.base import WireModel

__all__ = [
    "JsonNumber",
    "JsonObject",
    "NonEmptyStr",
    "RuntimeWireModel",
    "SafeNonNegativeInt",
    "SafePositiveInt",
    "Sha256Digest",
]

NonEmptyStr = Annotated[StrictStr, Field(min_length=1)]
Sha256Digest = Annotated[StrictStr, Field(pattern=r"^sha256:[0-9a-f]{64}$")]
SafeNonNegativeInt = Annotated[int, Field(ge=0, le=2**53 - 1, strict=True)]
SafePositiveInt = Annotated[int, Field(gt=0, le=2**53 - 1, strict=True)]
JsonObject = dict[str, JsonValue]
JsonNumber = StrictInt | StrictFloat


class RuntimeWireModel(WireModel):
    """Wire model whose validation failures are ``InvalidRuntimeEventError``."""

    error_class: ClassVar[type[MakaError]] = InvalidRuntimeEventError
