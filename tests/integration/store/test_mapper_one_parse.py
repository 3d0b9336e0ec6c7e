"""A ``RuntimeEventRecorded`` row is validated by pydantic straight from its bytes (one parse
instead of ``json.loads`` then validation; issue 12): it reads exactly what the generic path
reads, and every row the one-parse path would read otherwise goes the generic way."""

from __future__ import annotations

import json
import uuid

import pytest
from eventsourcing.persistence import StoredEvent
from hypothesis import given
from hypothesis import strategies as st

from maka_es.adapters.fact_rows import FactMapper, JsonTranscoder
from maka_es.errors import StoreCorruptionError
from maka_es.ledger.model.facts import RuntimeEventRecorded, run_stream_id

TOPIC = RuntimeEventRecorded.TOPIC
STREAM = run_stream_id("r1")


def _mapper() -> FactMapper:
    return FactMapper(transcoder=JsonTranscoder())


def _generic(state: bytes, version: int = 3) -> RuntimeEventRecorded:
    """What the generic path reads: strict ``json.loads``, then the model."""
    data = json.loads(state.decode("utf-8"))
    return RuntimeEventRecorded.model_validate(
        {**data, "originator_id": STREAM, "originator_version": version}
    )


def _row(state: bytes, version: int = 3) -> StoredEvent:
    return StoredEvent(originator_id=STREAM, originator_version=version, topic=TOPIC, state=state)


@given(
    event_seq=st.integers(min_value=1, max_value=2**62),
    event_id=st.text(),
    payload=st.text(),
    committed_at=st.integers(min_value=-(2**62), max_value=2**62)
    | st.floats(allow_nan=False, allow_infinity=False),
    digest=st.none() | st.text(),
)
def test_a_written_row_reads_back_as_the_generic_path_reads_it(
    event_seq: int, event_id: str, payload: str, committed_at: float, digest: str | None
) -> None:
    fact = RuntimeEventRecorded(
        originator_id=STREAM,
        originator_version=3,
        event_seq=event_seq,
        event_id=event_id,
        payload=payload,
        committed_at=committed_at,
        payload_digest=digest,
    )
    try:
        stored = FactMapper(transcoder=JsonTranscoder()).to_stored_event(fact)
    except ValueError:
        return  # not strict JSON (a lone surrogate): refused at write, nothing to read
    read = _mapper().to_domain_event(stored)
    assert read == fact == _generic(stored.state)
    assert _mapper()._recorded_in_one_parse(stored) == fact  # the one-parse path took it
    assert type(read.committed_at) is type(fact.committed_at)


@pytest.mark.parametrize(
    "state",
    [
        # a stored key named like the stream identity: the row's columns win, as before
        b'{"committed_at":1,"event_id":"e","event_seq":1,"originator_version":9,"payload":"{}"}',
        # a lone surrogate escape (never written by the strict transcoder): read as before
        b'{"committed_at":1,"event_id":"\\ud800","event_seq":1,"payload":"{}"}',
        # whitespace the transcoder never writes
        b' {"committed_at": 1, "event_id": "e", "event_seq": 1, "payload": "{}"} ',
        b'{"committed_at":1e400,"event_id":"e","event_seq":1,"payload":"{}"}',
    ],
)
def test_unusual_rows_read_as_the_generic_path_reads_them(state: bytes) -> None:
    assert _mapper().to_domain_event(_row(state)) == _generic(state)


@pytest.mark.parametrize(
    "state",
    [
        b'{"committed_at":NaN,"event_id":"e","event_seq":1,"payload":"{}"}',
        b'{"committed_at":-Infinity,"event_id":"e","event_seq":1,"payload":"{}"}',
        b'{"committed_at":1,"event_id":"e","event_seq":0,"payload":"{}"}',
        b'{"committed_at":1,"event_id":"e","event_seq":1,"payload":"{}","extra":1}',
        b'{"committed_at":1,"event_id":"e","event_seq":1,"payload":"{}"} {"x":1}',
        b"{}",
        b'{"committed_at":1,"event_id":"\xff","event_seq":1,"payload":"{}"}',
    ],
)
def test_rows_the_generic_path_refuses_are_still_refused(state: bytes) -> None:
    with pytest.raises(StoreCorruptionError):
        _mapper().to_domain_event(_row(state))


def test_a_row_whose_stream_id_is_not_a_uuid_object_still_reads() -> None:
    state = b'{"committed_at":1,"event_id":"e","event_seq":1,"payload":"{}"}'
    stored = StoredEvent(
        originator_id=str(STREAM),
        originator_version=3,
        topic=TOPIC,
        state=state,
    )
    assert _mapper().to_domain_event(stored).originator_id == uuid.UUID(str(STREAM))
