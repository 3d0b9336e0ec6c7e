"""A Run restored from its snapshot plus the facts after it is the Run a full fold builds
(ADR 0032): property over random ledgers, tool facts, duplicates, bundles and corruptions
included, split at every kind of point."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maka_es.ledger.model.facts import (
    RunSealed,
    RuntimeEventRecorded,
    StoredFact,
    read_recorded_event,
)
from maka_es.ledger.model.run import Run, project_run
from maka_es.ledger.model.run_snapshot import SNAPSHOT_FORMAT, PartReader, dump_run, restore_run
from maka_es.testing.builders import Events, Spine
from maka_es.testing.strategies import runtime_event_dicts
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEvent
from tests.support.tool_ledgers import ARGS, settled_and_bundled
from tests.unit.ledger.support import SPINE, new_run


def parts_reader(parts: dict[str, bytes]) -> PartReader:
    """Reads stored parts by digest, as the adapter does once it has verified them."""
    return lambda kind, digests: [parts[digest] for digest in digests]


EV = Events.decoded(Spine(SPINE.session_id, SPINE.invocation_id, SPINE.run_id, "turn-1"), ts=1)


def _pool() -> list[RuntimeEvent]:
    """Tool facts of every kind: a settled call, a completed bundle, a parked one, orphans,
    an unsettled dispatch, a spine conflict and a terminal."""
    return [
        *settled_and_bundled(EV),
        EV.call("call-3", "Bash", ARGS, event_id="c3", with_refs=True),
        EV.dispatch("call-3", "Bash", {"other": 1}, event_id="d3", operation_id="op-3"),
        EV.response("call-9", "Bash", "boom", event_id="r9", with_refs=True),
        EV.terminal(status="failed", error_code=None),
    ]


POOL = _pool()


def _facts(run: Run, events: list[RuntimeEvent], seal_at: int | None) -> list[StoredFact]:
    facts: list[StoredFact] = []
    version = 1
    for seq, event in enumerate(events, start=1):
        if seal_at == seq:
            version += 1
            facts.append(
                RunSealed(
                    originator_id=run.id, originator_version=version, claim_id="k", sealed_at=1
                )
            )
        version += 1
        payload = canonical_json(event)
        facts.append(
            RuntimeEventRecorded(
                originator_id=run.id,
                originator_version=version,
                event_seq=seq,
                event_id=event.id,
                payload=payload,
                committed_at=1,
            )
        )
    return facts


def _observed(run: Run) -> tuple[Any, ...]:
    return (
        run.version,
        run.header.to_wire(),
        run.high_water,
        run.sealed_by,
        run.terminal_event,
        run.tool_operations,
        run.attestations,
        run.resolution(),
        run.resolver.recovery_bundle_interpretations(),
    )


events_strategy = st.one_of(
    st.permutations(POOL),
    st.lists(
        st.one_of(
            st.sampled_from(POOL),
            st.sampled_from(POOL),
            runtime_event_dicts(spine=EV.spine).map(RuntimeEvent.model_validate),
        ),
        max_size=24,
    ),
)


def _check(
    events: list[RuntimeEvent], split: int, seal: int, following: list[RuntimeEvent]
) -> None:
    base, created = new_run()
    log = [*created, *_facts(base, events, seal or None)]
    cut = min(split, len(log) - 1) + 1
    head = project_run(None, log[:cut])
    assert head is not None
    snapshot = dump_run(head)
    assert json.loads(snapshot.body.split(b"\n")[0])["format"] == SNAPSHOT_FORMAT
    restored = restore_run(snapshot.body, head.id, parts_reader(snapshot.parts))
    head_rows = [
        (read_recorded_event(f)[0], f.payload)
        for f in log[:cut]
        if isinstance(f, RuntimeEventRecorded)
    ]
    restored.attach_history(lambda count: head_rows[:count])
    assert restored.events_in_memory == (not head_rows)
    folded = project_run(restored, log[cut:])
    full = project_run(None, log)
    assert folded is not None
    assert full is not None
    assert _observed(folded) == _observed(full)
    # the next write is judged alike (the prospective check and the exact-retry bytes)
    assert folded.resolver.issues_if_fed(following) == full.resolver.issues_if_fed(following)
    assert [folded.committed_payload(e.id) for e in following] == [
        full.committed_payload(e.id) for e in following
    ]
    # and, read from the ledger on first use, the events are the full fold's
    assert folded.events == full.events
    assert [folded.payload_at(s) for s in range(1, folded.high_water + 1)] == [
        full.payload_at(s) for s in range(1, full.high_water + 1)
    ]
    assert _observed(folded) == _observed(full)


def test_the_pool_in_order_split_at_every_fact() -> None:
    for split in range(len(POOL) + 2):
        for tail in ([POOL[6]], [POOL[8]], [POOL[2]], [POOL[3]], [POOL[10]]):
            _check(POOL, split, 0, tail)
        _check(POOL[:6], split, 3, [POOL[6], POOL[7], POOL[8]])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=events_strategy, split=st.integers(0, 30), seal=st.integers(0, 30), data=st.data())
def test_snapshot_plus_tail_equals_the_full_fold(
    events: list[RuntimeEvent], split: int, seal: int, data: st.DataObject
) -> None:
    following = data.draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=3))
    _check(events, split, seal, following)
