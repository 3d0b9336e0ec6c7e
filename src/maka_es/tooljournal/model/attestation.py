"""An operator's attestation of an indeterminate tool operation's outcome (ADR 0022).

Why a human decision needs a model of its own: recovery never settles an unknown outcome by
itself (docs/reference/tool-journal.md#recovery-modes), so a ``never_auto_retry`` call whose
process died after T1 stays ``indeterminate`` until someone who can look at the world says what
happened. The reference's vocabulary has no "operator" fact, and its recovery bundle only
settles ``reconcile`` dispatches with a state observation (docs/reference/tool-journal.md#bundles,
check ``recovery_mode_unsupported``). What it *does* accept for any dispatch is a T2 response
bound to the operation (docs/reference/tool-journal.md#t2): the resolver reads it as
``completed`` / ``matching_response``. So an attestation is written as exactly that response,
and its provenance (actor, note, time, applied or not) as a stored fact next to it that the
reference never reads. This module builds both halves; it is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from maka_es.errors import CodecInputError
from maka_es.tooljournal.model.operation import ToolOperationState
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.facts import response_wire

__all__ = [
    "NOT_APPLIED_CODE",
    "OperatorAttestation",
    "attested_response",
    "not_applied_result",
    "validate_attestation_input",
]

#: The code the model reads in the error result of an operation attested as not applied.
NOT_APPLIED_CODE: Final = "operator_attested_not_applied"

#: Longest actor name accepted: an identity (a login, a service account), never prose.
_MAX_ACTOR = 200


@dataclass(frozen=True, slots=True)
class OperatorAttestation:
    """What an operator attested about one operation, and who, when and why.

    ``result`` is what the model sees when ``applied``; it is ``None`` when not applied (the
    model then sees :func:`not_applied_result`). ``attested_at`` is the application clock's
    reading (integer ms), never the caller's."""

    operation_id: str
    applied: bool
    result: Any
    actor: str
    note: str
    attested_at: int
    response_event_id: str

    def same_decision(self, other: OperatorAttestation) -> bool:
        """Equal in everything but time: a repeat of the same decision is an exact retry."""
        return (
            self.operation_id == other.operation_id
            and self.applied == other.applied
            and canonical_json(self.result) == canonical_json(other.result)
            and self.actor == other.actor
            and self.note == other.note
        )

    def to_detail(self) -> dict[str, Any]:
        """Provenance for plans and outcomes (identities and codes; the note is the operator's)."""
        return {
            "operationId": self.operation_id,
            "applied": self.applied,
            "actor": self.actor,
            "note": self.note,
            "attestedAt": self.attested_at,
            "responseEventId": self.response_event_id,
        }


def validate_attestation_input(actor: str, note: str, applied: bool, result: Any) -> None:
    """Refuse an attestation that could not be a human's recorded decision: no actor, an actor
    that is not an identity, a result given for "not applied" or missing for "applied", or a
    result that is not strict JSON."""
    if not isinstance(actor, str) or not actor.strip() or len(actor) > _MAX_ACTOR:
        raise CodecInputError(
            "actor must be a non-empty identity",
            code="operator_action_invalid",
            detail={"field": "actor"},
        )
    if any(ch.isspace() or ch in "\"'{}" for ch in actor):
        raise CodecInputError(
            "actor must be an identity, not prose",
            code="operator_action_invalid",
            detail={"field": "actor"},
        )
    if not isinstance(note, str):
        raise CodecInputError(
            "note must be a string", code="operator_action_invalid", detail={"field": "note"}
        )
    if not isinstance(applied, bool):
        raise CodecInputError(
            "applied must be true or false",
            code="operator_action_invalid",
            detail={"field": "applied"},
        )
    if applied and result is None:
        raise CodecInputError(
            "an operation attested as applied needs the result the model should see",
            code="operator_action_invalid",
            detail={"field": "result"},
        )
    if not applied and result is not None:
        raise CodecInputError(
            "an operation attested as not applied has no result",
            code="operator_action_invalid",
            detail={"field": "result"},
        )
    canonical_json(result)


def not_applied_result(tool_name: str) -> dict[str, str]:
    """The model-visible error result of a call an operator attested did not take effect."""
    return {
        "kind": "text",
        "text": f"{NOT_APPLIED_CODE}: an operator attested that this {tool_name} call did "
        "not take effect",
    }


def attested_response(
    call: RuntimeEvent, operation: ToolOperationState, attestation: OperatorAttestation
) -> Mapping[str, Any]:
    """The T2 response that carries the attested outcome: id ``<op>_response`` and refs
    ``{operationId, toolCallId}`` as a tool's own T2 (docs/reference/tool-journal.md#ids), the
    call's spine, the attestation's time; ``isError`` only for "not applied"."""
    result = attestation.result if attestation.applied else not_applied_result(operation.tool_name)
    return response_wire(
        call.spine,
        event_id=attestation.response_event_id,
        ts=attestation.attested_at,
        call_id=operation.tool_call_id,
        tool_name=operation.tool_name,
        result=result,
        is_error=None if attestation.applied else True,
        refs={"operationId": operation.operation_id, "toolCallId": operation.tool_call_id},
    )
