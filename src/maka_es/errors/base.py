"""The base of every maka_es error: a refusal with a stable ``code`` (``maka_es.errors``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar


class MakaError(Exception):
    """Base class: a refusal with a stable ``code``."""

    default_code: ClassVar[str] = "maka_error"

    def __init__(
        self, message: str, *, code: str | None = None, detail: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code: str = code or self.default_code
        self.detail: dict[str, Any] = dict(detail or {})

    def __str__(self) -> str:
        return f"[{self.code}] {self.args[0]}"
