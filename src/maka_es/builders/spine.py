"""The identity every event of one run carries, and the names the store derives from it.

Why a value object: an event's four identity keys must agree with its run header and with every
other event of the run (docs/reference/wire.md#envelope). Spelling them once, in a ``Spine``,
is what keeps a hand-built ledger on one execution.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from maka_es.wire.codec import operation_id_for
from maka_es.wire.facts import envelope

#: The facts the store names after their operation: ``<operationId>_<kind>``
#: (docs/reference/wire.md#example-dispatch, docs/reference/tool-journal.md#bundle-example).
FactKind = Literal["dispatch", "response", "reconcile", "decision"]


@dataclass(frozen=True)
class Spine:
    """Session, invocation, run and turn of one run (defaults ``s1 / i1 / r1 / t1``)."""

    session_id: str = "s1"
    invocation_id: str = "i1"
    run_id: str = "r1"
    turn_id: str = "t1"

    @property
    def identity(self) -> dict[str, str]:
        """The four identity keys as they appear on the wire (camelCase)."""
        return {
            "sessionId": self.session_id,
            "invocationId": self.invocation_id,
            "runId": self.run_id,
            "turnId": self.turn_id,
        }

    def envelope(self, event_id: str, ts: float, role: str, author: str) -> dict[str, Any]:
        """The required keys of a non-partial RuntimeEvent on this spine."""
        return envelope(self.identity, event_id, ts, role, author)

    def operation_id(self, call_id: str) -> str:
        """The operation id T1 gives provider call ``call_id`` of this invocation
        (docs/reference/wire.md#operation-id)."""
        return operation_id_for(self.invocation_id, call_id)

    def fact_id(self, call_id: str, kind: FactKind) -> str:
        """The event id the store gives the ``kind`` fact of ``call_id``'s operation."""
        return f"{self.operation_id(call_id)}_{kind}"
