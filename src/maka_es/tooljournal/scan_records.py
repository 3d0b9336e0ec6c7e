"""The scanner's compact records of tool events and operations (ADR 0032).

Why a module of its own: the scan state is what a Run snapshot persists
(:mod:`maka_es.tooljournal.scan_snapshot`), so its records are small, immutable where they can
be, and hold what later steps read (ids, positions, spines, refs bindings, ``is_error``) rather
than RuntimeEvents; docs/reference/tool-journal.md#scanner describes the scan itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from maka_es.tooljournal.resolution import ResolverIssueCode
from maka_es.wire.events import FunctionResponseContent, RuntimeEvent

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
        """The ref of ``event`` at ``position``, equal to ``EventRef(...)`` of the same values.

        Why not ``cls(...)``: the fold makes one ref per tool event, and a frozen dataclass's
        ``__init__`` sets each field through ``object.__setattr__``; writing the slots through
        their descriptors is about twice as fast and leaves the instance as frozen (ADR 0034).
        """
        refs = event.refs
        content = event.content
        ref = _new_ref(cls)
        _set_id(ref, event.id)
        _set_position(ref, position)
        _set_identity(ref, (event.session_id, event.invocation_id, event.run_id, event.turn_id))
        _set_refs(ref, None if refs is None else (refs.operation_id, refs.tool_call_id))
        _set_is_error(
            ref, isinstance(content, FunctionResponseContent) and content.is_error is True
        )
        _set_event(ref, event)
        return ref

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


_new_ref = object.__new__
_set_id, _set_position, _set_identity, _set_refs, _set_is_error, _set_event = (
    EventRef.__dict__[name].__set__
    for name in ("id", "position", "identity", "refs", "is_error", "event")
)


def same_execution(first: EventRef | None, second: EventRef) -> bool:
    """Both events carry the same execution spine (session, invocation, run, turn)."""
    return first is not None and first.identity == second.identity


def no_event_at(position: int) -> RuntimeEvent:
    raise LookupError(f"no event at position {position}: this scan state has no event reader")
