"""Every exception the library defines lives in ``maka_es.errors``; old import paths still work.

Why: a host catching a refusal should find every class, and its stable code, in one module.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import maka_es
from maka_es import errors

SRC = Path(maka_es.__file__).parent
#: The test kit may raise ad-hoc codes for its own harness; the registry is about the library.
NOT_LIBRARY = ("testing", "codes")


def library_modules() -> Iterator[str]:
    for info in pkgutil.walk_packages([str(SRC)], prefix="maka_es."):
        if info.name.split(".")[1] not in NOT_LIBRARY:
            yield info.name


# -- item 1: every exception in errors.py ---------------------------------------------------------


def test_every_public_exception_class_of_the_library_is_defined_in_errors() -> None:
    outside = []
    for name in library_modules():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                and value.__module__ == name
                and not attr.startswith("_")
                and name != errors.__name__
            ):
                outside.append(f"{name}.{attr}")
    assert outside == []


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("maka_es.continuation.provider", "InvalidProviderOutputError"),
        ("maka_es.continuation.provider", "ProviderScriptExhaustedError"),
        ("maka_es.continuation.provider_export", "ProviderExportError"),
        ("maka_es.continuation.provider_export", "ExportReason"),
        ("maka_es.continuation.revalidation", "ContinuationRevalidationError"),
        ("maka_es.continuation.executor", "ContinuationRevalidationError"),
        ("maka_es.continuation.planner", "LineagePark"),
        ("maka_es.tooljournal.runtime", "OutcomeUnknownError"),
        ("maka_es.tooljournal.runtime", "ToolAlreadyDispatchedError"),
        ("maka_es.wire.codec", "CodecInputError"),
        ("maka_es.adapters.recovery_status_store", "RecoveryStatusConflictError"),
        ("maka_es.recovery.status", "RecoveryStatusConflictError"),
        ("maka_es.recovery.status", "RecoveryStatusUnsupportedError"),
    ],
)
def test_moved_exceptions_still_import_from_their_old_module(module: str, name: str) -> None:
    assert getattr(importlib.import_module(module), name) is getattr(errors, name)
