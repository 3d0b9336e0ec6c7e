"""The scanner's compact records of tool events and operations (ADR 0032).

Why a module of its own: the scan state is what a Run snapshot persists
(:mod:`maka_es.tooljournal.scan_snapshot`), so its records are small, immutable where they can
be, and hold what later steps read (ids, positions, spines, refs bindings, ``is_error``) rather
than RuntimeEvents; docs/reference/tool-journal.md#scanner describes the scan itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from maka_es.tooljournal.resolution import ResolverIssueCode
from maka_es.wire.events import RuntimeEvent

__all__ = ["EventRef", "ScannedOperation", "no_event_at", "same_execution"]


@dataclass(frozen=True, slots=True)
class EventRef:
    """What the scan reads later of one tool event, instead of the event itself.

    Why compact: the scan state must survive a snapshot of the Run (ADR 0032) without holding
    every RuntimeEvent. Later steps read only the id, the physical position, the execution
    spine, the ``refs`` binding and a response's ``is_error``; the full event is kept while it
    is in memory (``event``) and, when it is not (a state restored from a snapshot), the rare
    readers that need it (a recovery bundle's interpretation, a dispatch's args hash) get it
    by position from the scanner's ``event_at``.
    """

    id: str
    position: int
    identity: tuple[str, str, str, str]
    refs: tuple[str | None, str | None] | None
    is_error: bool = False
    event: RuntimeEvent | None = field(default=None, compare=False)

    @classmethod
    def of(cls, event: RuntimeEvent, position: int) -> EventRef:
        refs = event.refs
        response = event.function_response
        return cls(
            event.id,
            position,
            event.identity,
            None if refs is None else (refs.operation_id, refs.tool_call_id),
            response is not None and response.is_error is True,
            event,
        )

    def bound_to(self, operation_id: str | None, tool_call_id: str) -> bool:
        """The ref's ``refs`` name this operation id and provider call id."""
        refs = self.refs
        return refs is not None and refs[0] == operation_id and refs[1] == tool_call_id


@dataclass(slots=True, eq=False)
class ScannedOperation:
    """Scanner bookkeeping for one provider call key ``(invocationId, providerToolCallId)``.

    Mutable and private to the resolver: only the scanner touches it, always through the
    journal helpers. It holds :class:`EventRef` records, never bare events (ADR 0032).
    """

    tool_call_id: str
    tool_name: str | None
    operation_id: str | None = None
    call_event: EventRef | None = None
    dispatch_event: EventRef | None = None
    response_event: EventRef | None = None
    reconcile_events: list[EventRef] = field(default_factory=list)
    decision_events: list[EventRef] = field(default_factory=list)
    issue_codes: list[ResolverIssueCode] = field(default_factory=list)
    #: ``call_event`` was read from a row the store verified (ADR 0025): see ``_scan_dispatch``.
    call_verified: bool = False
    #: ``(invocationId, providerToolCallId)``: the key it is registered under.
    key: tuple[str, str] = ("", "")


def same_execution(first: EventRef | None, second: EventRef) -> bool:
    """Both events carry the same execution spine (session, invocation, run, turn)."""
    return first is not None and first.identity == second.identity


def no_event_at(position: int) -> RuntimeEvent:
    raise LookupError(f"no event at position {position}: this scan state has no event reader")
