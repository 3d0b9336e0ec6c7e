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


class CommandLineUsageError(MakaError):
    """The ``maka-es`` command line asks for something that cannot be done as asked: an
    unsupported store URL, a provider that cannot be loaded, an unknown suite (exit 2, ADR 0029).
    ``detail["action"]`` says what to do instead. Nothing was opened or written."""

    default_code = "usage"

    def __init__(self, message: str, action: str = "see maka-es --help") -> None:
        super().__init__(message, detail={"action": action})
