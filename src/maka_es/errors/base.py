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


class MissingExtraError(MakaError):
    """A part of maka_es that lives in an extra was imported without it: ``maka_es.cli`` and
    ``maka_es.report`` need ``maka_es[cli]`` (typer, rich, jinja2; ADR 0040). The message names
    the ``pip install`` line; ``detail`` holds ``extra`` and the missing ``module``. Nothing was
    opened or written: the core (``maka_es``, ``RuntimeApplication``) works without it."""

    default_code = "extra_missing"

    def __init__(self, extra: str, module: str, part: str) -> None:
        super().__init__(
            f"{part} needs the {extra} extra ({module} is not installed): "
            f"pip install 'maka_es[{extra}]'",
            detail={"extra": extra, "module": module, "part": part},
        )
