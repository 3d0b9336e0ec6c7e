"""What ``ToolRuntime`` needs from the ledger: the journal commands and two reads.

Why a Protocol: the runtime drives a tool between two transactions (T1 before the tool, T2
after it; ADR 0007) but must not depend on the application object that wires the store, nor on
the ledger package above it. ``RuntimeApplication.tool_journal`` satisfies this port, so a
host writes ``ToolRuntime(app.tool_journal, tools)``; the tests may pass any object with these
methods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from maka_es.tooljournal.model.operation import ToolOperationState
from maka_es.wire.events import RuntimeEvent


class ToolCommitResult(Protocol):
    """T1/T2/bundle outcome: ``created=False`` is an exact retry (the tool must not run)."""

    @property
    def operation_id(self) -> str: ...

    @property
    def created(self) -> bool: ...


class ToolJournalStore(Protocol):
    """The journal commands and reads ``ToolRuntime`` uses (see module docstring)."""

    def now_ms(self) -> int: ...

    def commit_tool_prepared(
        self,
        run_id: str,
        call: RuntimeEvent | Mapping[str, Any],
        *,
        recovery_mode: str = ...,
        metadata: Mapping[str, Any] | None = ...,
    ) -> ToolCommitResult: ...

    def commit_tool_outcome(
        self, run_id: str, response: RuntimeEvent | Mapping[str, Any]
    ) -> ToolCommitResult: ...

    def commit_tool_recovery_bundle(
        self,
        run_id: str,
        operation_id: str,
        *,
        reconcile: RuntimeEvent | Mapping[str, Any],
        decision: RuntimeEvent | Mapping[str, Any],
        outcome: RuntimeEvent | Mapping[str, Any] | None = ...,
    ) -> ToolCommitResult: ...

    def append_events(
        self,
        run_id: str,
        events: Iterable[RuntimeEvent | Mapping[str, Any]],
        *,
        expected_high_water: int | None = ...,
    ) -> object: ...

    def tool_operations(self, run_id: str) -> Sequence[ToolOperationState]: ...

    def read_run_events(self, run_id: str) -> list[RuntimeEvent]: ...
