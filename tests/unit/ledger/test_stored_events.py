"""Reading committed events back (ADR 0025): a row whose bytes match the digest written with
them takes the trusted path and decodes to exactly what the strict reader returns; a row
without a digest, or whose bytes changed, is read strictly, exactly as before."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from maka_es.errors import InvalidRuntimeEventError, MakaError
from maka_es.ledger.model.facts import (
    RuntimeEventRecorded,
    decode_recorded_event,
    payload_digest_of,
    run_stream_id,
)
from maka_es.testing.builders import Events
from maka_es.testing.strategies import runtime_event_dicts
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEvent, TextContent

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


def _fact(payload: str, digest: str | None) -> RuntimeEventRecorded:
    return RuntimeEventRecorded(
        originator_id=run_stream_id("r1"),
        originator_version=2,
        event_seq=1,
        event_id="e1",
        payload=payload,
        committed_at=1,
        payload_digest=digest,
    )


def _committed(wire: dict[str, Any]) -> str | None:
    """The canonical payload the boundary would commit, or ``None`` if it refuses the event."""
    try:
        return canonical_json(RuntimeEvent.model_validate(wire))
    except MakaError:
        return None


def _same(trusted: RuntimeEvent, strict: RuntimeEvent) -> None:
    # repr tells 1 from 1.0, which == does not
    assert trusted == strict
    assert repr(trusted) == repr(strict)
    assert canonical_json(trusted) == canonical_json(strict)


@given(runtime_event_dicts())
def test_trusted_decode_equals_the_strict_reader(wire: dict[str, Any]) -> None:
    payload = _committed(wire)
    assume(payload is not None)
    assert payload is not None
    trusted = decode_recorded_event(_fact(payload, payload_digest_of(payload)))
    _same(trusted, RuntimeEvent.model_validate_json(payload))


@given(JSON_VALUES, st.integers(min_value=0, max_value=2**53 - 1))
def test_trusted_decode_keeps_javascript_number_semantics(args: Any, ts: int) -> None:
    wire = Events.wire().at(ts).call("c1", "Echo", args, event_id="e1")
    payload = _committed(wire)
    assume(payload is not None)
    assert payload is not None
    trusted = decode_recorded_event(_fact(payload, payload_digest_of(payload)))
    _same(trusted, RuntimeEvent.model_validate_json(payload))


def test_an_integer_beyond_two_to_the_53_reads_back_as_a_double() -> None:
    payload = canonical_json(Events.decoded().call("c1", "Echo", {"n": 6.677151143147895e16}))
    assert "66771511431478950" in payload
    event = decode_recorded_event(_fact(payload, payload_digest_of(payload)))
    assert event.function_call is not None
    assert event.function_call.args == {"n": 6.677151143147895e16}
    assert isinstance(event.function_call.args["n"], float)


def _valid_payload() -> str:
    return canonical_json(Events.decoded().text("hello", event_id="e1"))


def test_valid_bytes_that_are_not_the_written_ones_are_read_strictly_as_before() -> None:
    written = _valid_payload()
    changed = written.replace("hello", "hellO")
    assert _committed(json.loads(changed)) == changed  # still a perfectly valid event
    event = decode_recorded_event(_fact(changed, payload_digest_of(written)))
    _same(event, RuntimeEvent.model_validate_json(changed))
    assert isinstance(event.content, TextContent)
    assert event.content.text == "hellO"  # the bytes, never the digest, are the authority


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda p: p[:-1],  # truncated
        lambda p: p.replace('"partial":false', '"partial":"no"'),  # wrong type
        lambda p: p.replace('"role":"model"', '"role":"robot"'),  # unknown role
        lambda p: p.replace('"ts":1000', '"ts":NaN'),  # not strict JSON
        lambda p: p.replace('"ts":1000', '"ts":1000,"ts":1001'),  # duplicate key
    ],
)
def test_invalid_bytes_raise_the_strict_readers_typed_error(corrupt: Any) -> None:
    written = _valid_payload()
    corrupted = corrupt(written)
    assert corrupted != written
    with pytest.raises(InvalidRuntimeEventError):
        RuntimeEvent.model_validate_json(corrupted)  # what a reload raised before ADR 0025
    for digest in (payload_digest_of(written), None):
        with pytest.raises(InvalidRuntimeEventError):
            decode_recorded_event(_fact(corrupted, digest))


def test_non_strict_json_in_a_payload_field_is_still_refused_when_the_bytes_changed() -> None:
    written = canonical_json(Events.decoded().call("c1", "Echo", {"k": "v"}, event_id="e1"))
    corrupted = written.replace('{"k":"v"}', '{"\\ud800":"v"}')
    assert corrupted != written
    with pytest.raises(InvalidRuntimeEventError, match="lone surrogate"):
        decode_recorded_event(_fact(corrupted, payload_digest_of(written)))


def test_a_row_without_a_digest_is_read_strictly_and_keeps_its_stored_shape() -> None:
    payload = _valid_payload()
    fact = _fact(payload, None)
    assert "payload_digest" not in fact.state()  # rows written before ADR 0025 keep their bytes
    assert decode_recorded_event(fact) == RuntimeEvent.model_validate_json(payload)
    assert (
        _fact(payload, payload_digest_of(payload)).state()["payload_digest"].startswith("sha256:")
    )
