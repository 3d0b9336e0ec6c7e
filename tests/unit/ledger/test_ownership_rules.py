"""The pure run-ownership rules of ADR 0021 (maka_es.ledger.model.ownership): leases, takeover
verdicts, epochs and fencing, with no store and no clock."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maka_es.errors import RunOwnerFencedError, StoreCorruptionError
from maka_es.ledger.model.facts import (
    HostLeaseRenewed,
    RunOwnerTaken,
    host_stream_id,
    run_stream_id,
)
from maka_es.ledger.model.ownership import (
    HostLease,
    RunOwner,
    decide_renewal,
    decide_take_over,
    fencing_refusal,
    owner_verdict,
    project_host_lease,
)

NOW = 1_700_000_000_000


def test_a_first_heartbeat_opens_the_host_stream_and_runs_for_the_lease_duration() -> None:
    fact = decide_renewal(None, "w1", now=NOW, lease_ms=500)
    assert (fact.originator_id, fact.originator_version) == (host_stream_id("w1"), 1)
    assert (fact.renewed_at, fact.expires_at) == (NOW, NOW + 500)


def test_a_renewal_is_the_next_version_of_the_host_stream() -> None:
    lease = HostLease("w1", NOW + 500, version=4)
    fact = decide_renewal(lease, "w1", now=NOW + 100, lease_ms=500)
    assert fact.originator_version == 5
    assert fact.expires_at == NOW + 600


@pytest.mark.parametrize("lease_ms", [0, -1, True, 1.5])
def test_a_lease_duration_must_be_positive_integer_milliseconds(lease_ms: object) -> None:
    with pytest.raises(ValueError, match="lease duration"):
        decide_renewal(None, "w1", now=NOW, lease_ms=lease_ms)  # type: ignore[arg-type]


def test_the_newest_renewal_is_the_lease() -> None:
    facts = [
        decide_renewal(None, "w1", now=NOW, lease_ms=100),
        HostLeaseRenewed(
            originator_id=host_stream_id("w1"),
            originator_version=2,
            host_id="w1",
            renewed_at=NOW + 50,
            expires_at=NOW + 150,
        ),
    ]
    assert project_host_lease(None, facts) == HostLease("w1", NOW + 150, 2)


def test_a_host_stream_holding_another_fact_is_corrupt() -> None:
    other = decide_take_over("r1", RunOwner("w1", 1), 3, host_id="w2", taken_at=NOW)
    with pytest.raises(StoreCorruptionError):
        project_host_lease(None, [other])


@given(
    expires_at=st.integers(min_value=0, max_value=10**13),
    now=st.integers(min_value=0, max_value=10**13),
)
def test_a_lease_is_live_strictly_before_it_expires(expires_at: int, now: int) -> None:
    lease = HostLease("w2", expires_at, 1)
    verdict = owner_verdict(RunOwner("w2", 1), lease, host_id="w1", now=now)
    assert verdict == ("live" if now < expires_at else "expired")


def test_verdicts_own_ownerless_and_never_leased() -> None:
    live = HostLease("w1", NOW + 1, 1)
    assert owner_verdict(None, None, host_id="w1", now=NOW) == "ownerless"
    assert owner_verdict(RunOwner("w1", 3), live, host_id="w1", now=NOW) == "own"
    # this host's previous incarnation: its own runs even when their lease expired
    assert owner_verdict(RunOwner("w1", 3), None, host_id="w1", now=NOW) == "own"
    # an owner that never recorded a lease cannot be live
    assert owner_verdict(RunOwner("w2", 1), None, host_id="w1", now=NOW) == "expired"


def test_a_run_this_process_holds_at_its_epoch_is_held_and_only_then() -> None:
    owner = RunOwner("w1", 3)
    assert owner_verdict(owner, None, host_id="w1", now=NOW, held_epoch=3) == "held"
    # held at an older epoch (taken over since by another process of w1): not this one's
    assert owner_verdict(owner, None, host_id="w1", now=NOW, held_epoch=2) == "own"
    # another host's run is judged by its lease, whatever this process once held
    assert owner_verdict(RunOwner("w2", 3), None, host_id="w1", now=NOW, held_epoch=3) == (
        "expired"
    )


def test_a_takeover_bumps_the_epoch_at_the_runs_next_version() -> None:
    fact = decide_take_over("r1", RunOwner("w1", 2), 7, host_id="w2", taken_at=NOW)
    assert (fact.originator_id, fact.originator_version) == (run_stream_id("r1"), 8)
    assert (fact.host_id, fact.epoch, fact.previous_host_id, fact.previous_epoch) == (
        "w2",
        3,
        "w1",
        2,
    )
    assert RunOwner("w1", 2).taken_over(fact) == RunOwner("w2", 3)


def test_a_takeover_that_does_not_follow_the_owner_is_corrupt() -> None:
    stale = RunOwnerTaken(
        originator_id=run_stream_id("r1"),
        originator_version=3,
        host_id="w3",
        epoch=2,
        previous_host_id="w1",
        previous_epoch=1,
        taken_at=NOW,
    )
    with pytest.raises(StoreCorruptionError):
        RunOwner("w2", 2).taken_over(stale)


def test_owner_json_round_trips_and_refuses_other_shapes() -> None:
    assert RunOwner.from_json(RunOwner("w1", 4).to_json()) == RunOwner("w1", 4)
    assert RunOwner.from_json(None) is None
    for bad in ({"hostId": "w1"}, {"hostId": 1, "epoch": 1}, {"hostId": "w1", "epoch": True}):
        with pytest.raises(StoreCorruptionError):
            RunOwner.from_json(bad)


def _refusal(
    owner: RunOwner | None, *, live: bool = True, host: str = "w1", held: int | None = None
) -> RunOwnerFencedError | None:
    return fencing_refusal("r1", owner, live=live, host_id=host, held_epoch=held)


def test_the_holder_at_the_current_epoch_and_anyone_on_an_ownerless_run_may_write() -> None:
    assert _refusal(RunOwner("w1", 1), held=1) is None
    assert _refusal(None, host="w9") is None
    assert _refusal(None, host="w9", held=2) is None


def test_a_taken_over_former_owner_is_fenced_even_after_the_run_ended() -> None:
    for live in (True, False):
        refusal = _refusal(RunOwner("w2", 2), live=live, held=1)
        assert refusal is not None
        assert refusal.code == "run_owner_fenced"
        assert refusal.detail == {
            "runId": "r1",
            "hostId": "w1",
            "heldEpoch": 1,
            "ownerHostId": "w2",
            "ownerEpoch": 2,
            "reason": "taken_over",
        }


def test_a_former_incarnation_of_the_same_host_is_fenced_by_the_epoch() -> None:
    refusal = _refusal(RunOwner("w1", 3), held=2)
    assert refusal is not None
    assert refusal.detail["reason"] == "taken_over"


def test_a_host_that_never_held_a_live_run_of_another_host_is_fenced() -> None:
    refusal = _refusal(RunOwner("w2", 1), host="w1")
    assert refusal is not None
    assert refusal.detail["reason"] == "owned_by_another_host"


def test_a_host_that_never_held_a_run_may_write_to_its_own_or_to_a_terminal_run() -> None:
    assert _refusal(RunOwner("w1", 5), host="w1") is None  # a restart of the same host
    assert _refusal(RunOwner("w2", 1), live=False, host="w1") is None  # seal, header repair


@given(
    owner_epoch=st.integers(min_value=1, max_value=50),
    held=st.integers(min_value=1, max_value=50),
    same_host=st.booleans(),
    live=st.booleans(),
)
def test_a_held_epoch_writes_only_while_it_is_the_runs_owner_epoch(
    owner_epoch: int, held: int, same_host: bool, live: bool
) -> None:
    owner = RunOwner("w1" if same_host else "w2", owner_epoch)
    refusal = _refusal(owner, live=live, held=held)
    assert (refusal is None) == (same_host and owner_epoch == held)
