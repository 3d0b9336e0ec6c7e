"""Host safety facts for a safe-boundary continuation (docs/reference/continuation.md#host-facts).

Why a separate inspector: the continuation planner is pure and decides from facts; whether the
workspace is still *the same workspace*, whether shells / child runs / background capabilities
are still running, and which tools exist right now are facts only the host process knows. A
host must not offer continuation until it can produce them from authoritative local state, so
the inspector reads them *at inspection time* (no caching) and raises instead of guessing: a
typed :class:`~maka_es.errors.WorkspaceIdentityError` from the workspace marker means the
caller parks (``safety_observation_unavailable`` / ``workspace_identity_missing``).

* :class:`HostObservation` - the exact fact shape (camelCase keys, ``null`` when absent).
* :class:`HostInspector` - the protocol planners depend on.
* :class:`BackgroundOperationRegistry` - where a host records operations that outlive a turn.
* ``maka_es.adapters.workspace.LocalHostInspector`` - facts from this process: workspace
  marker, registry, tools.
* :class:`StaticHostInspector` - for hosts (and tests) that already hold the facts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Protocol, runtime_checkable

from pydantic import Field, StrictBool, StrictStr, field_validator

# One checkpoint fact shape for host and planner: an observation's checkpoint can be handed
# to ``ContinuationInputs`` as is.
from maka_es.continuation.model.plan import WorkspaceCheckpoint
from maka_es.wire.codec import js_sort_key
from maka_es.wire.events import ValueModel

__all__ = [
    "BackgroundOperationRegistry",
    "CheckpointReader",
    "HostInspector",
    "HostObservation",
    "PendingOperation",
    "StaticHostInspector",
    "WorkspaceCheckpoint",
]


class HostObservation(ValueModel):
    """What the host observed about the session's environment, right now.

    ``available_tool_names`` is always de-duplicated and sorted (JavaScript order), whatever the
    caller passed, so two observations of the same catalog are equal.
    """

    workspace_identity: Annotated[StrictStr, Field(min_length=1)]
    workspace_path: StrictStr | None = None
    background_operations_settled: StrictBool
    available_tool_names: tuple[StrictStr, ...]
    workspace_checkpoint: WorkspaceCheckpoint | None = None

    @field_validator("available_tool_names", mode="after")
    @classmethod
    def _dedup_sorted(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted(set(names), key=js_sort_key))


@runtime_checkable
class HostInspector(Protocol):
    """Produces the current host facts for a session whose cwd is ``cwd``."""

    def inspect(self, session_id: str, cwd: str) -> HostObservation: ...


#: Reads the optional checkpoint fact of a session (``None``: no checkpoint).
CheckpointReader = Callable[[str], WorkspaceCheckpoint | None]


@dataclass(frozen=True)
class PendingOperation:
    """One registered operation that has not finished.

    ``kind`` is free text chosen by the host (``"shell"``, ``"child_run"``, ``"background"``
    ...). ``session_id`` ``None`` means host-wide: it blocks every session's continuation.
    """

    kind: str
    op_id: str
    session_id: str | None = None


class BackgroundOperationRegistry:
    """Thread-safe record of shells, child runs and background capabilities still running.

    Why: a continuation started while such an operation is alive could race it (a shell still
    writing files, a child run still appending). Hosts ``start`` an operation before launching
    it and ``finish`` it when it is gone (or wrap it in :meth:`track`); the inspector reports
    ``backgroundOperationsSettled`` from here. Registration is explicit so a crash loses
    nothing unsafe: after a restart nothing is running and the registry is empty.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, PendingOperation] = {}

    def start(self, kind: str, op_id: str, *, session_id: str | None = None) -> PendingOperation:
        """Register a running operation. A second ``start`` with a live ``op_id`` is a host bug
        (finishing one would silently settle the other) and raises ``ValueError``."""
        operation = PendingOperation(kind=kind, op_id=op_id, session_id=session_id)
        with self._lock:
            if op_id in self._pending:
                raise ValueError(f"background operation {op_id!r} is already registered")
            self._pending[op_id] = operation
        return operation

    def finish(self, op_id: str) -> bool:
        """Unregister ``op_id``; ``False`` if it was not pending (finishing twice is harmless)."""
        with self._lock:
            return self._pending.pop(op_id, None) is not None

    @contextmanager
    def track(
        self, kind: str, op_id: str, *, session_id: str | None = None
    ) -> Iterator[PendingOperation]:
        """Keep ``op_id`` pending for the duration of the ``with`` block, even if it raises."""
        operation = self.start(kind, op_id, session_id=session_id)
        try:
            yield operation
        finally:
            self.finish(op_id)

    def pending(self, session_id: str | None = None) -> tuple[PendingOperation, ...]:
        """Pending operations in registration order: all of them, or those relevant to
        ``session_id`` (its own plus host-wide ones)."""
        with self._lock:
            operations = tuple(self._pending.values())
        if session_id is None:
            return operations
        return tuple(op for op in operations if op.session_id in (None, session_id))

    @property
    def settled(self) -> bool:
        """No operation at all is pending."""
        return not self.pending()

    def settled_for(self, session_id: str) -> bool:
        """No operation that concerns ``session_id`` (own or host-wide) is pending."""
        return not self.pending(session_id)


class StaticHostInspector:
    """Returns one fixed observation for every session: for hosts that compute their facts
    elsewhere, and for planner tests."""

    def __init__(self, observation: HostObservation) -> None:
        self.observation = observation

    def inspect(self, session_id: str, cwd: str) -> HostObservation:
        return self.observation
