"""FactMapper: explicit topics, strict decoding, refusal of unknown or corrupt rows."""

from __future__ import annotations

import uuid

import pytest
from eventsourcing.persistence import StoredEvent

from maka_es.adapters.fact_rows import FactMapper, JsonTranscoder
from maka_es.errors import StoreCorruptionError
from maka_es.ledger.model.facts import (
    FACT_TYPES,
    RuntimeEventRecorded,
    run_stream_id,
    session_stream_id,
)


def _mapper() -> FactMapper:
    return FactMapper(transcoder=JsonTranscoder())


def test_topics_are_explicit_and_versioned() -> None:
    for topic, cls in FACT_TYPES.items():
        assert topic == cls.TOPIC
        assert topic.startswith("maka_es.")
        assert topic.endswith(".v1")
        assert cls.__module__ not in topic  # not a class path


def test_round_trip_through_stored_event() -> None:
    fact = RuntimeEventRecorded(
        originator_id=run_stream_id("r1"),
        originator_version=2,
        event_seq=1,
        event_id="e1",
        payload='{"id":"e1"}',
        committed_at=5.0,
    )
    stored = _mapper().to_stored_event(fact)
    assert stored.topic == "maka_es.run.runtime_event_recorded.v1"
    assert _mapper().to_domain_event(stored) == fact


def test_stream_ids_are_deterministic_and_distinct() -> None:
    assert run_stream_id("x") == run_stream_id("x")
    assert run_stream_id("x") != session_stream_id("x")
    assert run_stream_id("x").version == 5


@pytest.mark.parametrize(
    ("topic", "state"),
    [
        ("eventsourcing.domain:Aggregate.Created", b"{}"),
        ("maka_es.run.runtime_event_recorded.v1", b"{not json"),
        ("maka_es.run.runtime_event_recorded.v1", b'{"event_seq":1}'),
        ("maka_es.run.runtime_event_recorded.v1", b'{"event_seq":NaN}'),
    ],
)
def test_corrupt_rows_fail_closed(topic: str, state: bytes) -> None:
    stored = StoredEvent(originator_id=uuid.uuid4(), originator_version=1, topic=topic, state=state)
    with pytest.raises(StoreCorruptionError):
        _mapper().to_domain_event(stored)
