"""What a host registers and gets back from ``ToolRuntime``: tools, reconcilers and results.

Why apart from the runtime: a host writing a tool (its input model, implementation, recovery
mode and reconciler) needs these types and the digest helper, not the T1/T2 machinery that
runs them; and the runtime module stays about running. ``maka_es.tooljournal.runtime``
re-exports every name here, so ``from maka_es.tooljournal.runtime import Tool, ToolRuntime``
keeps working. Recovery modes and bundles: docs/reference/tool-journal.md, ADR 0007.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel

from maka_es.wire.codec import sha256_digest
from maka_es.wire.events import ToolRecoveryMode
from maka_es.wire.facts import Observation

__all__ = [
    "OUTCOME_UNKNOWN_CODE",
    "RECONCILED_NOT_APPLIED_CODE",
    "Observation",
    "PermissionPolicy",
    "ReconcileObservation",
    "Reconciler",
    "RecoveryAction",
    "ToolRecoveryOutcome",
    "Tool",
    "ToolContext",
    "ToolResult",
    "args_wire",
    "error_result",
    "outcome_unknown_result",
    "reconciled_not_applied_result",
    "state_digest",
]

ArgsT = TypeVar("ArgsT", bound=BaseModel)
ArgsContraT = TypeVar("ArgsContraT", bound=BaseModel, contravariant=True)


@dataclass(frozen=True)
class ToolContext:
    """What an implementation gets besides its arguments."""

    run_id: str
    tool_call_id: str
    #: The durable operation id: use it as the idempotency key of any external request.
    operation_id: str
    #: What the tool's reconciler recorded at T1 (e.g. expected/prior digests).
    metadata: Mapping[str, Any]


@dataclass(frozen=True)
class ReconcileObservation:
    """What a reconciler saw: the observation, a digest identifying the observed state, and for
    ``matches_expected_state`` the outcome to synthesize (instead of re-running the tool)."""

    observation: Observation
    digest: str
    result: Any = None


class Reconciler(Protocol[ArgsContraT]):
    """Observes external state for a ``reconcile`` tool."""

    def prepare(self, args: ArgsContraT) -> Mapping[str, Any]:
        """Facts recorded at T1, before the side effect (e.g. prior and expected digests)."""
        ...

    def observe(self, args: ArgsContraT, metadata: Mapping[str, Any]) -> ReconcileObservation:
        """Compare the current external state with what T1 recorded."""
        ...


@dataclass(frozen=True)
class Tool(Generic[ArgsT]):
    """A named tool: input model, implementation, recovery mode (and reconciler)."""

    name: str
    input_model: type[ArgsT]
    run: Callable[[ArgsT, ToolContext], Any]
    recovery_mode: ToolRecoveryMode = "never_auto_retry"
    reconciler: Reconciler[ArgsT] | None = None

    def __post_init__(self) -> None:
        if self.recovery_mode == "reconcile" and self.reconciler is None:
            raise ValueError(f"tool {self.name}: recovery_mode 'reconcile' needs a reconciler")


PermissionPolicy = Callable[[str, Mapping[str, Any]], bool]


@dataclass(frozen=True)
class ToolResult:
    """The committed outcome of one call (returned only after it is durable)."""

    tool_call_id: str
    operation_id: str | None
    result: Any
    is_error: bool
    response_event_id: str
    dispatched: bool


@dataclass(frozen=True)
class RecoveryAction:
    """What recovery did with one interrupted operation, and why (a stable reason code)."""

    operation_id: str
    tool_name: str
    action: Literal["completed", "not_applied", "parked", "reexecuted", "left_indeterminate"]
    reason: str


@dataclass(frozen=True)
class ToolRecoveryOutcome:
    """The actions of ``ToolRuntime.recover(run_id)``, one per interrupted operation."""

    actions: tuple[RecoveryAction, ...] = field(default_factory=tuple)


def error_result(code: str, message: str) -> dict[str, Any]:
    """The text result of a refused or failed call: ``"<code>: <message>"``."""
    return {"kind": "text", "text": f"{code}: {message}"}


OUTCOME_UNKNOWN_CODE = "outcome_unknown"


def outcome_unknown_result(message: str) -> dict[str, Any]:
    """The structured non-retryable failure (docs/reference/tool-journal.md#t2)."""
    return {
        "kind": "text",
        "text": f"{OUTCOME_UNKNOWN_CODE}: {message}",
        "uncertainOutcome": {"code": OUTCOME_UNKNOWN_CODE, "retrySafe": False},
    }


#: The code the model reads when a reconciler proved an interrupted call left the world as it was.
RECONCILED_NOT_APPLIED_CODE = "reconcile_not_applied"


def reconciled_not_applied_result(tool_name: str) -> dict[str, Any]:
    """The error result recovery commits as T2 when the reconciler observed the prior state:
    the call did not take effect, so the model decides again (ADR 0019, amendment)."""
    return {
        "kind": "text",
        "text": f"{RECONCILED_NOT_APPLIED_CODE}: the process stopped before this {tool_name} "
        "call took effect; recovery found the state unchanged, so nothing was applied",
    }


def args_wire(args: BaseModel) -> dict[str, Any]:
    """A validated arguments model as JSON (what the permission policy sees)."""
    return args.model_dump(mode="json", by_alias=True)


def state_digest(data: bytes | None) -> str:
    """Digest of an external state; ``None`` (absent) has its own, distinct digest."""
    if data is None:
        return sha256_digest(b"maka_es.state.absent")
    return sha256_digest(b"maka_es.state.bytes\0" + data)
