"""The fact rows of a reload decoded by orjson and checked field by field (ADR 0045): a row
reads exactly as pydantic's one-parse path and the generic path read it (values, types,
``fields_set``, private attributes), and every row of another shape (a value pydantic's lax
mode would coerce, a stored key named like the stream identity, a ``null``) is declined and
read, or refused with the same ``StoreCorruptionError``, as before."""

from __future__ import annotations

import json
import uuid

import pytest
from eventsourcing.persistence import StoredEvent
from hypothesis import given
from hypothesis import strategies as st

from maka_es.adapters.fact_rows import FactMapper, JsonTranscoder, recorded_from_row
from maka_es.adapters.run_loader import PlainFactMapper
from maka_es.errors import StoreCorruptionError
from maka_es.ledger.model.facts import RuntimeEventRecorded, run_stream_id

TOPIC = RuntimeEventRecorded.TOPIC
STREAM = run_stream_id("r1")


def _pydantic(state: bytes, version: int = 3) -> RuntimeEventRecorded:
    """What pydantic's one-parse path reads (the stream identity spliced in last)."""
    identity = f',"originator_id":"{STREAM}","originator_version":{version}}}'
    return RuntimeEventRecorded.model_validate_json(state[:-1] + identity.encode())


def _same(fast: RuntimeEventRecorded, validated: RuntimeEventRecorded) -> None:
    assert fast == validated
    assert list(fast.__dict__) == list(validated.__dict__)
    for name, value in validated.__dict__.items():
        assert type(fast.__dict__[name]) is type(value), name
    assert fast.__pydantic_fields_set__ == validated.__pydantic_fields_set__
    assert fast.__pydantic_private__ == validated.__pydantic_private__
    assert fast.__pydantic_private__ is not validated.__pydantic_private__
    assert fast.__pydantic_extra__ is validated.__pydantic_extra__


@given(
    event_seq=st.integers(min_value=1, max_value=2**62),
    event_id=st.text(),
    payload=st.text(),
    committed_at=st.integers(min_value=-(2**62), max_value=2**62)
    | st.floats(allow_nan=False, allow_infinity=False),
    digest=st.none() | st.text(),
    version=st.integers(min_value=1, max_value=2**40),
)
def test_a_written_row_reads_as_pydantic_reads_it(
    event_seq: int,
    event_id: str,
    payload: str,
    committed_at: float,
    digest: str | None,
    version: int,
) -> None:
    fact = RuntimeEventRecorded(
        originator_id=STREAM,
        originator_version=version,
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
    fast = recorded_from_row(STREAM, version, bytes(stored.state))
    if fast is None:  # only a lone-surrogate escape orjson refuses may decline here
        assert "\\ud" in bytes(stored.state).decode().lower()
        return
    _same(fast, _pydantic(bytes(stored.state), version))
    assert fast == fact
    fast.read_strictly()  # each fact owns its private attributes
    assert not (recorded_from_row(STREAM, version, bytes(stored.state)) or fact)._strict


#: Rows whose shape the checks do not take: each is read (or refused) by pydantic.
OTHER_SHAPES = [
    b'{"committed_at":1,"event_id":"e","event_seq":"3","payload":"{}"}',  # lax: "3" -> 3
    b'{"committed_at":1,"event_id":"e","event_seq":3.0,"payload":"{}"}',  # lax: 3.0 -> 3
    b'{"committed_at":1,"event_id":"e","event_seq":true,"payload":"{}"}',
    b'{"committed_at":"1","event_id":"e","event_seq":1,"payload":"{}"}',
    b'{"committed_at":true,"event_id":"e","event_seq":1,"payload":"{}"}',
    b'{"committed_at":1,"event_id":1,"event_seq":1,"payload":"{}"}',
    b'{"committed_at":1,"event_id":"e","event_seq":1,"payload":{}}',
    b'{"committed_at":1,"event_id":"e","event_seq":1,"payload":"{}","payload_digest":null}',
    b'{"committed_at":1,"event_id":"e","event_seq":1,"payload":"{}","payload_digest":7}',
    b'{"committed_at":1,"event_id":"e","event_seq":0,"payload":"{}"}',
    b'{"committed_at":1,"event_id":"e","event_seq":1,"payload":"{}","extra":1}',
    b'{"committed_at":1,"event_id":"e","event_seq":1,"originator_version":9,"payload":"{}"}',
    b'{"committed_at":1e400,"event_id":"e","event_seq":1,"payload":"{}"}',
    b'{"committed_at":NaN,"event_id":"e","event_seq":1,"payload":"{}"}',
    b'{"committed_at":1,"event_id":"\\ud800","event_seq":1,"payload":"{}"}',
    b'{"committed_at":1,"event_id":"\xff","event_seq":1,"payload":"{}"}',
    b'{"committed_at":1,"event_id":"e","event_seq":1}',
    b'[{"committed_at":1,"event_id":"e","event_seq":1,"payload":"{}"}]',
    b"{}",
]


@pytest.mark.parametrize("state", OTHER_SHAPES)
def test_rows_of_other_shapes_are_declined_and_read_as_before(state: bytes) -> None:
    assert recorded_from_row(STREAM, 3, state) is None
    row = StoredEvent(originator_id=STREAM, originator_version=3, topic=TOPIC, state=state)
    plain = PlainFactMapper(transcoder=JsonTranscoder())
    refused: StoreCorruptionError | None = None
    try:
        expected = plain.to_domain_event(row)
    except StoreCorruptionError as exc:
        refused = exc
    if refused is not None:
        with pytest.raises(StoreCorruptionError) as again:
            FactMapper(transcoder=JsonTranscoder()).to_domain_event(row)
        assert again.value.code == refused.code
        return
    read = FactMapper(transcoder=JsonTranscoder()).to_domain_event(row)
    assert read.__dict__ == expected.__dict__  # the plain mapper also marks it strict


@pytest.mark.parametrize(
    ("stream", "version"),
    [("not-a-uuid", 3), (STREAM, 0), (STREAM, "3"), (STREAM, True)],
)
def test_a_row_with_an_unusual_identity_is_declined(stream: object, version: object) -> None:
    state = json.dumps(
        {"committed_at": 1, "event_id": "e", "event_seq": 1, "payload": "{}"}
    ).encode()
    assert recorded_from_row(stream, version, state) is None


def test_a_stream_id_given_as_text_reads_as_its_uuid() -> None:
    state = b'{"committed_at":1,"event_id":"e","event_seq":1,"payload":"{}"}'
    fast = recorded_from_row(str(STREAM), 3, state)
    assert fast is not None
    assert fast.originator_id == uuid.UUID(str(STREAM))
    _same(fast, _pydantic(state))


def test_a_duplicate_key_reads_as_every_path_reads_it() -> None:
    """The strict transcoder never writes one; json.loads, pydantic and orjson all keep the
    last value, so the row reads alike on every path."""
    state = b'{"committed_at":1,"event_id":"e","event_seq":1,"payload":"{}","event_id":"f"}'
    fast = recorded_from_row(STREAM, 3, state)
    assert fast is not None
    assert fast.event_id == "f"
    _same(fast, _pydantic(state))
    row = StoredEvent(originator_id=STREAM, originator_version=3, topic=TOPIC, state=state)
    assert PlainFactMapper(transcoder=JsonTranscoder()).to_domain_event(row).__dict__ == (
        fast.__dict__
    )


@pytest.mark.parametrize("state", [b"[1]", b'"text"', b"7", b"null"])
def test_a_row_that_is_not_an_object_is_store_corruption(state: bytes) -> None:
    """Regression: the generic path spread the decoded row into a dict, so a row holding an
    array or a scalar raised a bare TypeError instead of the typed error."""
    row = StoredEvent(originator_id=STREAM, originator_version=3, topic=TOPIC, state=state)
    for mapper in (FactMapper, PlainFactMapper):
        with pytest.raises(StoreCorruptionError):
            mapper(transcoder=JsonTranscoder()).to_domain_event(row)
