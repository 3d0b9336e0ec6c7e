"""One registry of every stable code maka_es emits: what it means and what a host should do.

Why: a host reacts to codes, not to message text, so each code needs one authoritative
explanation. The registry is typed (:class:`CodeEntry`), checked against the source by
``tests/unit/test_error_registry.py`` (every code raised, parked or diagnosed is registered, and
every registered code is emitted), and ``docs/exceptions.md``, the one page of codes, is
generated from it (``python -m maka_es.codes > docs/exceptions.md``, or ``make docs-codes``).
Each code's meaning is written once, in :mod:`maka_es.codes.catalogue`; where it fires (its
modules, checked against the source, and the place in the behaviour reference) is
:mod:`maka_es.codes.places`, merged into the entries here.
"""

from __future__ import annotations

from maka_es.codes.catalogue import (
    BASES,
    BUNDLE_CODES,
    CONTINUATION,
    DIAGNOSTICS,
    JSONL_LEDGER,
    PARK_REASONS,
    REPORT,
    RESOLVER_ISSUES,
    REVALIDATION,
    SHARED,
    STORE,
    STORE_FAULTS,
    TOOLS,
    WIRE,
    WORKSPACE_IDENTITY,
    WORKSPACE_PATHS,
)
from maka_es.codes.model import CODE_KINDS, CodeEntry, CodeKind, CodeRegistry
from maka_es.codes.places import place

__all__ = ["CODE_KINDS", "REGISTRY", "CodeEntry", "CodeKind", "CodeRegistry"]

#: Every registered code, in the order the generated page lists them.
REGISTRY = CodeRegistry(
    place(
        *BASES,
        *WIRE,
        *STORE,
        *STORE_FAULTS,
        *TOOLS,
        *RESOLVER_ISSUES,
        *SHARED,
        *BUNDLE_CODES,
        *JSONL_LEDGER,
        *WORKSPACE_IDENTITY,
        *WORKSPACE_PATHS,
        *CONTINUATION,
        *REPORT,
        *REVALIDATION,
        *PARK_REASONS,
        *DIAGNOSTICS,
    )
)
