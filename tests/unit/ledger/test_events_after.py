"""``Run.events_after``: the events after the first ``count``, as the full list gives them,
without reading what a snapshot left out unless it is asked for (ADR 0046).

Why: the agent loop reads only its run's new events before each model turn; on a Run
restored from a snapshot (ADR 0032) that read must not pull the whole history back from the
ledger, and a read that reaches into the left-out part must give exactly those events."""

from __future__ import annotations

from typing import Any

from maka_es.ledger.model.facts import RuntimeEventRecorded, StoredFact, read_recorded_event
from maka_es.ledger.model.run import Run, project_run
from maka_es.ledger.model.run_snapshot import dump_run, restore_run
from maka_es.testing.builders import Events, Spine
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEvent
from tests.unit.ledger.support import SPINE, new_run

EV = Events.decoded(Spine(SPINE.session_id, SPINE.invocation_id, SPINE.run_id, "turn-1"), ts=1)
EVENTS = [EV.text(f"t{n}", event_id=f"e{n}") for n in range(8)]


def _facts(run: Run, events: list[RuntimeEvent]) -> list[StoredFact]:
    return [
        RuntimeEventRecorded(
            originator_id=run.id,
            originator_version=seq + 1,
            event_seq=seq,
            event_id=event.id,
            payload=canonical_json(event),
            committed_at=1,
        )
        for seq, event in enumerate(events, start=1)
    ]


def test_events_after_is_the_tail_of_the_full_list_and_reads_history_only_when_asked() -> None:
    base, created = new_run()
    log = [*created, *_facts(base, EVENTS)]
    for cut in range(1, len(log) + 1):
        head = project_run(None, log[:cut])
        assert head is not None
        recorded = [f for f in log[:cut] if isinstance(f, RuntimeEventRecorded)]
        rows = [(read_recorded_event(f)[0], f.payload) for f in recorded]
        reads: list[int] = []

        def history(
            count: int, rows: list[tuple[RuntimeEvent, str]] = rows, reads: list[int] = reads
        ) -> list[Any]:
            reads.append(count)
            return rows[:count]

        snapshot = dump_run(head)
        parts = snapshot.parts
        reader = lambda kind, digests, parts=parts: [parts[d] for d in digests]  # noqa: E731
        restored = project_run(restore_run(snapshot.body, head.id, reader), log[cut:])
        assert restored is not None
        restored.attach_history(history)
        left_out = len(rows)
        for count in range(len(EVENTS) + 2):
            tail = restored.events_after(count)
            assert [e.id for e in tail] == [e.id for e in EVENTS[count:]]
            assert tail == EVENTS[count:]
            if count >= left_out:
                assert reads == []  # nothing the snapshot left out was read
            else:
                assert reads == [left_out]  # read once, exactly the ids it recorded
                break  # the history is now held; the rest is the plain list
