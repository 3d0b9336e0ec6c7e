"""Deterministic builders of RuntimeEvents and run headers, for hosts and tests alike.

Why: a hand-typed event is easy to get subtly wrong (a missing ``refs`` key, a role that puts
it in another lane), and a test built on a wrong event tests something else. These builders
write exactly the shapes of docs/reference/wire.md#examples, with the ids the store gives its
own facts, and never read a clock or a random source.

* :class:`Spine` - the identity of one run's events (defaults ``s1 / i1 / r1 / t1``).
* :class:`Events` - every builder on one spine and ``ts``: ``Events.wire(...)`` hands back wire
  dicts, ``Events.decoded(...)`` validated ``RuntimeEvent`` models.
* the module functions (:func:`user`, :func:`call`, :func:`bound_response`, ...) - one-off
  wire dicts on the default spine at ``ts`` 1000.
* :class:`LedgerBuilder` - one run's ledger appended in order, numbered ``<prefix><n>``.
* :func:`run_header` - a valid AgentRun header with defaults.
"""

from __future__ import annotations

from maka_es.builders.events import (
    Events,
    bound_response,
    call,
    completed_bundle,
    completed_decision,
    continuation_start,
    dispatch,
    event,
    parked_bundle,
    parked_decision,
    permission_decision,
    permission_request,
    reconcile,
    refusal,
    response,
    state_delta_continuation_start,
    terminal,
    text,
    thinking,
    user,
)
from maka_es.builders.header import run_header
from maka_es.builders.kit import SAMPLE_DIGEST
from maka_es.builders.ledger import LedgerBuilder, event_ids
from maka_es.builders.spine import FactKind, Spine

__all__ = [
    "SAMPLE_DIGEST",
    "Events",
    "FactKind",
    "LedgerBuilder",
    "Spine",
    "bound_response",
    "call",
    "completed_bundle",
    "completed_decision",
    "continuation_start",
    "dispatch",
    "event",
    "event_ids",
    "state_delta_continuation_start",
    "parked_bundle",
    "parked_decision",
    "permission_decision",
    "permission_request",
    "reconcile",
    "refusal",
    "response",
    "run_header",
    "terminal",
    "text",
    "thinking",
    "user",
]
