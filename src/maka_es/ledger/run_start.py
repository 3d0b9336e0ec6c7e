"""A run created with its first events in ONE save (ADR 0036).

Why a command of its own: a turn's header and its user message must never exist apart; saved
by ``create_run`` and then ``append_events``, a crash between the two leaves a run with no
prompt, which a restarted host can neither continue nor tell from an empty run. This command
saves the run stream, the events, the invocation binding, the session's registration (and the
host's lease renewal, when due) in one transaction. It holds the write rules of both commands
it joins: the events are decided as a generic append on the new run (``decide_append``: a
reserved fact, a partial or foreign event is refused), the header as ``create_run`` (its
uniqueness, its invocation's), and a refusal writes nothing. An exact retry (the same header,
``clock_fields`` aside, and the same events) writes nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from maka_es.errors import RunAlreadyExistsError
from maka_es.ledger.facts import run_stream_id
from maka_es.ledger.ports import RunStore
from maka_es.ledger.run import Run, bind_invocation, is_exact_create_retry, project_run
from maka_es.ledger.service import AppendResult, Ledger, OnCommitted
from maka_es.wire.events import RuntimeEvent, as_runtime_event
from maka_es.wire.run_header import RunHeader

__all__ = ["RunStarts"]


class RunStarts:
    """``create_run_with_events`` on the ledger's store, with the ledger's ownership rules."""

    def __init__(self, store: RunStore, ledger: Ledger, on_committed: OnCommitted) -> None:
        self._store = store
        self._ledger = ledger
        self._on_committed = on_committed

    def create_run_with_events(
        self,
        header: RunHeader | Mapping[str, Any],
        events: Sequence[RuntimeEvent | Mapping[str, Any]],
        *,
        clock_fields: Collection[str] = (),
    ) -> AppendResult:
        """See the module docstring."""
        parsed = RunHeader.decode(header)
        decoded = [as_runtime_event(event) for event in events]
        ledger = self._ledger
        with self._store.command():
            session = self._store.load_session(parsed.session_id)
            now = self._store.now_ms()
            owner = ledger.new_owner()
            created = Run.create(parsed, now, owner)
            run = project_run(None, [created])
            assert run is not None  # a RunCreated fact always projects a Run
            decision = run.decide_append(decoded, committed_at=now)
            facts = [created, *decision.facts, bind_invocation(parsed)]
            facts += [session.register_run(parsed.run_id, now), *ledger.lease_renewal()]
            try:
                self._store.commit(facts, conflict=lambda: ledger.create_run_conflict(parsed))
            except RunAlreadyExistsError:
                first = self._store.first_fact(run_stream_id(parsed.run_id))
                if not is_exact_create_retry(first, parsed, clock_fields):
                    raise
                return ledger.append_events(parsed.run_id, decoded)
            ledger.hold(parsed.run_id, owner, facts)
        if decision.appended:
            self._on_committed(parsed.run_id, decision.appended)
        return AppendResult(len(decision.appended), decision.retried, len(decision.appended))
