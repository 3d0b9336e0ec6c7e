"""``RuntimeEventRecorded.decided`` against the validated constructor (ADR 0046).

Why: a tool step builds three ``RuntimeEventRecorded`` facts from values the command computed
itself, and running the validator over them was one of the seven validations of a step
(issue 23, target 3). The direct build must give the same fact as ``RuntimeEventRecorded(...)``
(fields, equality, what ``state()`` stores, ``fields_set``, the private slots, a copy) for
every value validation keeps as it is, and anything else must be validated exactly as before:
refused the same way, or converted the same way.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from maka_es.ledger.model.facts import RuntimeEventRecorded, payload_digest_of

STREAM = uuid.UUID("8740460c-d54d-41c8-8600-4f6bcb074281")


def both(**values: Any) -> tuple[RuntimeEventRecorded, RuntimeEventRecorded]:
    return RuntimeEventRecorded.decided(**values), RuntimeEventRecorded(**values)


def same(decided: RuntimeEventRecorded, validated: RuntimeEventRecorded) -> None:
    assert decided == validated
    assert decided.__dict__ == validated.__dict__
    assert [type(v) for v in decided.__dict__.values()] == [
        type(v) for v in validated.__dict__.values()
    ]
    assert decided.state() == validated.state()
    assert decided.model_fields_set == validated.model_fields_set
    assert decided.__pydantic_private__ == validated.__pydantic_private__
    assert decided.__pydantic_extra__ == validated.__pydantic_extra__
    assert decided.decided_event is None
    assert decided.model_copy(update={"event_id": "other"}).event_id == "other"
    assert decided.event_id == validated.event_id  # the copy left the original alone
    with pytest.raises(ValidationError):
        decided.event_id = "mutated"  # type: ignore[misc]  # frozen, like a validated fact


@given(
    version=st.integers(1, 2**40),
    seq=st.integers(1, 2**40),
    event_id=st.text(max_size=20),
    payload=st.text(max_size=60),
    committed_at=st.one_of(st.integers(0, 2**50), st.floats(allow_nan=False)),
)
def test_a_decided_fact_is_the_validated_fact(
    version: int, seq: int, event_id: str, payload: str, committed_at: float
) -> None:
    decided, validated = both(
        originator_id=STREAM,
        originator_version=version,
        event_seq=seq,
        event_id=event_id,
        payload=payload,
        committed_at=committed_at,
        payload_digest=payload_digest_of(payload),
    )
    same(decided, validated)


@pytest.mark.parametrize(
    "change",
    [
        {"originator_version": 0},
        {"event_seq": 0},
        {"event_seq": -3},
        {"event_id": 7},
        {"payload": None},
        {"committed_at": "soon"},
        {"originator_id": "not-a-uuid"},
    ],
)
def test_a_value_validation_refuses_is_refused_the_same_way(change: dict[str, Any]) -> None:
    values: dict[str, Any] = {
        "originator_id": STREAM,
        "originator_version": 1,
        "event_seq": 1,
        "event_id": "e1",
        "payload": "{}",
        "committed_at": 1000,
        "payload_digest": payload_digest_of("{}"),
        **change,
    }
    with pytest.raises(ValidationError) as decided:
        RuntimeEventRecorded.decided(**values)
    with pytest.raises(ValidationError) as validated:
        RuntimeEventRecorded(**values)
    assert decided.value.errors() == validated.value.errors()


@pytest.mark.parametrize(
    "change",
    [
        {"originator_id": str(STREAM)},
        {"originator_version": True},
        {"event_seq": 2.0},
        {"committed_at": True},
        {"committed_at": "1000"},
        {"payload": b"{}"},
    ],
)
def test_a_value_validation_converts_is_converted_the_same_way(change: dict[str, Any]) -> None:
    values: dict[str, Any] = {
        "originator_id": STREAM,
        "originator_version": 1,
        "event_seq": 1,
        "event_id": "e1",
        "payload": "{}",
        "committed_at": 1000,
        "payload_digest": payload_digest_of("{}"),
        **change,
    }
    same(RuntimeEventRecorded.decided(**values), RuntimeEventRecorded(**values))
