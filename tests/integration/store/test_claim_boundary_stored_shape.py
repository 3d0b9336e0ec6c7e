"""The claim boundary is a typed model, stored exactly as before (issue 10, item "store the
claim boundary as a typed model").

Why through the real recorder of each store (a SQLite file, a PostgreSQL schema): the promise is
that stores written by earlier versions still load. So the rows here are the literal bytes
earlier versions wrote (compact, key-sorted JSON; the boundary a camelCase object), inserted with
the recorder itself, and read back through the application on a fresh connection; the bytes a
claim is stored as are read from the store's own event table.
"""

from __future__ import annotations

import json

import pytest
from eventsourcing.persistence import StoredEvent

from maka_es.app import RuntimeApplication
from maka_es.continuation.claims import ContinuationClaim, ContinuationTarget, SourceBoundary
from maka_es.errors import StoreCorruptionError
from maka_es.ledger.model.facts import claim_stream_id
from maka_es.testing.probes import commit_unchecked, store_snapshot
from tests.support.store_sql import event_states_with_topic

DIGEST_P = "sha256:" + "1" * 64
DIGEST_M = "sha256:" + "2" * 64
DIGEST_R = "sha256:" + "3" * 64
BOUNDARY = SourceBoundary("s1", "i1", "r1", "t1", 4, DIGEST_P, DIGEST_M, DIGEST_R)
TARGET = ContinuationTarget("i2", "r2", "t2")
TOPIC = "maka_es.claim.claimed.v1"


def stored_state(**boundary_changes: object) -> bytes:
    """A claim row's state as the previous version wrote it for BOUNDARY and TARGET."""
    boundary: dict[str, object] = {
        "sessionId": "s1",
        "invocationId": "i1",
        "runId": "r1",
        "turnId": "t1",
        "highWater": 4,
        "prefixDigest": DIGEST_P,
        "manifestDigest": DIGEST_M,
        "providerReplayDigest": DIGEST_R,
    }
    boundary.update(boundary_changes)
    state = {
        "claim_id": BOUNDARY.claim_id,
        "boundary": {k: v for k, v in boundary.items() if v is not None},
        "target": {"sessionId": "s1", "invocationId": "i2", "runId": "r2", "turnId": "t2"},
        "start_event_id": "r2-start",
        "claimed_at": 2000,
        "provider_projection_version": 1,
        "target_run_header": None,
    }
    return json.dumps(state, separators=(",", ":"), sort_keys=True).encode()


def insert_claim_row(store: str, state: bytes) -> None:
    app = RuntimeApplication.open(store)
    try:
        app._es.recorder.insert_events(
            [
                StoredEvent(
                    originator_id=claim_stream_id(BOUNDARY.claim_id),
                    originator_version=1,
                    topic=TOPIC,
                    state=state,
                )
            ]
        )
    finally:
        app.close()


def test_a_claim_row_in_the_previous_shape_loads_as_the_typed_boundary(store_url: str) -> None:
    insert_claim_row(store_url, stored_state())
    app = RuntimeApplication.open(store_url)
    try:
        claim = app.claims.get_claim(BOUNDARY.claim_id)
    finally:
        app.close()
    assert claim is not None
    assert isinstance(claim.boundary, SourceBoundary)
    assert claim.boundary == BOUNDARY
    assert claim.source_boundary.claim_id == claim.claim_id == BOUNDARY.claim_id
    assert (claim.boundary.run_id, claim.boundary.high_water) == ("r1", 4)


def test_a_claim_written_now_stores_the_same_bytes_as_before(store_url: str) -> None:
    app = RuntimeApplication.open(store_url)
    try:
        commit_unchecked(app, ContinuationClaim.create(BOUNDARY, TARGET, "r2-start", 2000))
    finally:
        app.close()
    assert event_states_with_topic(store_url, TOPIC) == [stored_state()]


@pytest.mark.parametrize(
    "changes",
    [{"highWater": "4"}, {"runId": None}, {"segments": []}],
    ids=["high_water_as_text", "missing_run_id", "unknown_key"],
)
def test_a_malformed_stored_boundary_is_a_typed_corruption_and_nothing_is_written(
    store_url: str, changes: dict[str, object]
) -> None:
    insert_claim_row(store_url, stored_state(**changes))
    app = RuntimeApplication.open(store_url)
    try:
        before = store_snapshot(app)
        with pytest.raises(StoreCorruptionError):
            app.claims.get_claim(BOUNDARY.claim_id)
        assert store_snapshot(app) == before
    finally:
        app.close()
