"""Run ownership on one SQLite file shared by several hosts (ADR 0021): a run records its
owner, recovery leaves another host's live run alone, takes over and ends a run whose owner's
lease expired, and the fenced-off former owner's later writes are refused with
``run_owner_fenced`` and write nothing."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from maka_es.app import RuntimeApplication
from maka_es.errors import ConcurrentWriteError, RunOwnerFencedError, RunSealedError
from maka_es.ledger.model.ownership import RunOwner, decide_take_over
from maka_es.recovery.startup import recovered_terminal_id
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.probes import store_snapshot
from maka_es.tooljournal.runtime import Tool, ToolContext, ToolResult

LEASE_MS = 1_000
T0 = 1_700_000_000_000


class Clock:
    """A clock the test moves by hand (each host reads its own)."""

    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


Host = Callable[[str], tuple[RuntimeApplication, Clock]]


@pytest.fixture
def host(store_url: str) -> Iterator[Host]:
    apps: list[RuntimeApplication] = []

    def open_host(host_id: str) -> tuple[RuntimeApplication, Clock]:
        clock = Clock()
        app = RuntimeApplication.open(store_url, clock=clock, host_id=host_id, lease_ms=LEASE_MS)
        apps.append(app)
        return app, clock

    yield open_host
    for app in apps:
        app.close()


def _start_run(app: RuntimeApplication, run_id: str) -> LedgerBuilder:
    spine = Spine("s1", f"i-{run_id}", run_id, "t1")
    app.open_session("s1", "/workspace")
    app.ledger.create_run(run_header(spine))
    ledger = LedgerBuilder(spine, prefix=f"{run_id}-e")
    app.ledger.append_events(run_id, [ledger.user("hello")])
    return ledger


def test_a_run_records_its_creator_as_owner_and_the_creation_renews_its_lease(
    host: Host,
) -> None:
    w1, _ = host("w1")
    _start_run(w1, "r1")
    assert w1.ledger.load_run("r1").owner == RunOwner("w1", 1)
    lease = w1.ownership.lease()
    assert lease is not None
    assert lease.expires_at == T0 + LEASE_MS
    w1.heartbeat()
    renewed = w1.ownership.lease("w1")
    assert renewed is not None
    assert renewed.version == lease.version + 1


def test_recovery_leaves_another_hosts_live_run_alone_and_writes_nothing(host: Host) -> None:
    w1, _ = host("w1")
    ledger = _start_run(w1, "r1")
    w2, clock2 = host("w2")
    clock2.now = T0 + LEASE_MS - 1  # the lease is live until T0 + LEASE_MS, exclusive
    before = store_snapshot(w2).rows
    report = w2.recover()
    assert [(r.run_id, r.kind, r.detail) for r in report.repairs] == [
        ("r1", "left_live_owner", {"ownerHostId": "w1", "ownerEpoch": 1})
    ]
    assert not report.changed_anything
    assert store_snapshot(w2).rows == before
    # the owner carries on and ends its run itself
    w1.end_run("r1", ledger.terminal("completed", event_id="r1-end"))
    assert w1.get_run_header("r1").status == "completed"


def test_another_host_cannot_write_to_a_live_run_it_does_not_own(host: Host) -> None:
    w1, _ = host("w1")
    ledger = _start_run(w1, "r1")
    w2, _ = host("w2")
    before = store_snapshot(w2).rows
    with pytest.raises(RunOwnerFencedError) as refused:
        w2.ledger.append_events("r1", [ledger.text("not mine")])
    assert refused.value.code == "run_owner_fenced"
    assert refused.value.detail["reason"] == "owned_by_another_host"
    assert store_snapshot(w2).rows == before


def test_an_expired_owners_run_is_taken_over_ended_once_and_the_former_owner_is_fenced(
    host: Host,
) -> None:
    w1, _ = host("w1")
    ledger = _start_run(w1, "r1")
    w2, clock2 = host("w2")
    clock2.now = T0 + LEASE_MS  # w1 stopped heartbeating: its lease has expired
    report = w2.recover()
    assert [(r.run_id, r.kind) for r in report.repairs] == [
        ("r1", "owner_taken_over"),
        ("r1", "terminal_recovered"),
    ]
    assert report.repairs[0].detail == {"previousHostId": "w1", "epoch": 2}
    run = w2.ledger.load_run("r1")
    assert run.owner == RunOwner("w2", 2)
    assert [e.id for e in run.events if e.is_terminal] == [recovered_terminal_id("r1")]

    # w1 wakes up: every write it tries is refused, and nothing lands
    before = store_snapshot(w1).rows
    attempts: list[Callable[[], object]] = [
        lambda: w1.ledger.append_events("r1", [ledger.text("late")]),
        lambda: w1.tool_journal.commit_tool_prepared("r1", ledger.call("late-call")),
        lambda: w1.ledger.update_run_header("r1", {"status": "running"}),
        lambda: w1.end_run("r1", ledger.terminal("completed", event_id="r1-late-end")),
    ]
    for attempt in attempts:
        with pytest.raises(RunOwnerFencedError) as refused:
            attempt()
        assert refused.value.detail["reason"] == "taken_over"
        assert refused.value.detail["ownerHostId"] == "w2"
        assert refused.value.detail["heldEpoch"] == 1
    assert store_snapshot(w1).rows == before

    # a second recovery anywhere changes nothing: the run was recovered once
    w3, clock3 = host("w3")
    clock3.now = T0 + 10 * LEASE_MS
    assert not w3.recover().changed_anything


def test_two_hosts_taking_over_the_same_run_one_wins_on_the_stores_uniqueness(
    host: Host,
) -> None:
    w1, _ = host("w1")
    _start_run(w1, "r1")
    w2, clock2 = host("w2")
    w3, clock3 = host("w3")
    clock2.now = clock3.now = T0 + LEASE_MS
    stale = w3.ledger.load_run("r1")  # w3 decided on this version
    assert w2.ownership.take_over("r1")
    fact = decide_take_over("r1", RunOwner("w1", 1), stale.version, host_id="w3", taken_at=T0)
    before = store_snapshot(w3).rows
    with pytest.raises(ConcurrentWriteError):
        w3._store.commit([fact], conflict=lambda: ConcurrentWriteError("lost"))
    assert store_snapshot(w3).rows == before
    # and w3 now sees a live owner (w2 renewed its lease in the takeover's save)
    assert not w3.ownership.take_over("r1")
    assert w3.ledger.load_run("r1").owner == RunOwner("w2", 2)


def test_a_restarted_host_ends_its_previous_incarnations_runs_without_waiting(
    host: Host,
) -> None:
    old, _ = host("w1")
    ledger = _start_run(old, "r1")
    new, _ = host("w1")  # same host id, same instant: the lease is still live
    report = new.recover()
    assert [(r.run_id, r.kind) for r in report.repairs] == [("r1", "terminal_recovered")]
    with pytest.raises(RunSealedError):  # the run is over for the old incarnation
        old.ledger.append_events("r1", [ledger.text("late")])


def test_a_run_taken_over_from_this_hosts_incarnation_fences_it_by_epoch(host: Host) -> None:
    w1, _ = host("w1")
    ledger = _start_run(w1, "r1")
    w2, clock2 = host("w2")
    clock2.now = T0 + LEASE_MS
    assert w2.ownership.take_over("r1")  # taken over, not yet ended
    with pytest.raises(RunOwnerFencedError):
        w1.ledger.append_events("r1", [ledger.text("late")])
    text = ledger.text("the new owner writes")
    w2.ledger.append_events("r1", [text])
    assert w2.read_run_events("r1")[-1].id == text["id"]


def test_a_terminal_run_of_another_host_takes_a_writer_that_never_held_it(host: Host) -> None:
    """Sealing, header repair and tool settlement of an ended run are not live-run writes."""
    w1, _ = host("w1")
    ledger = _start_run(w1, "r1")
    w1.ledger.append_events(
        "r1", [ledger.terminal("failed", event_id="r1-end", failure_class="provider_error")]
    )
    w2, _ = host("w2")
    report = w2.recover()  # w1 is live: its lagging header is its own business
    assert [r.kind for r in report.repairs] == ["left_live_owner"]
    w2.ledger.update_run_header("r1", {"status": "failed", "failureClass": "provider_error"})
    assert w2.get_run_header("r1").status == "failed"


def test_the_host_id_and_lease_duration_are_settings() -> None:
    app = RuntimeApplication.in_memory(env={"MAKA_HOST_ID": "w7", "MAKA_HOST_LEASE_MS": "250"})
    try:
        assert (app.ownership.host_id, app.ownership.lease_ms) == ("w7", 250)
    finally:
        app.close()
    default = RuntimeApplication.in_memory()
    try:
        assert (default.ownership.host_id, default.ownership.lease_ms) == ("local", 30_000)
    finally:
        default.close()
    for lease_ms in (0, -5):
        with pytest.raises(ValueError, match="lease duration"):
            RuntimeApplication.in_memory(lease_ms=lease_ms)


def test_an_owner_stalled_between_its_terminal_event_and_header_is_fenced_not_raced(
    host: Host,
) -> None:
    """The header repair of an expired owner's run takes the run over first, so the owner's
    late header write is refused ``run_owner_fenced`` instead of losing a race."""
    w1, _ = host("w1")
    ledger = _start_run(w1, "r1")
    end = ledger.terminal("completed", event_id="r1-end")
    w1.ledger.append_events(
        "r1", [end]
    )  # end_run's first save; the process stalls before the header
    w2, clock2 = host("w2")
    clock2.now = T0 + LEASE_MS
    report = w2.recover()
    assert [(r.run_id, r.kind) for r in report.repairs] == [
        ("r1", "owner_taken_over"),
        ("r1", "header_repaired"),
    ]
    assert w2.get_run_header("r1").status == "completed"
    before = store_snapshot(w1).rows
    with pytest.raises(RunOwnerFencedError):
        w1.ledger.update_run_header("r1", {"status": "completed", "updatedAt": end["ts"]})
    assert store_snapshot(w1).rows == before
    # a run recovery does not write to is never taken over
    w3, clock3 = host("w3")
    clock3.now = T0 + 100 * LEASE_MS
    assert w3.recover().repairs == ()
    assert w3.ledger.load_run("r1").owner == RunOwner("w2", 2)


class Wait(BaseModel):
    text: str


class Gate:
    """A tool that runs until the test lets it finish: a tool step in flight in a thread."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def run(self, args: Wait, context: ToolContext) -> Any:
        self.entered.set()
        assert self.release.wait(30)
        return {"kind": "text", "text": args.text}


def test_a_live_host_sweeps_without_ending_its_own_runs(host: Host) -> None:
    """A live host calls ``recover()`` while one of its threads is inside a tool step (T1
    committed, the tool running): its own run is left alone and its next writes land; its
    previous incarnation's run (same host id, not held by this instance) is ended; another
    host's run under a live lease is left alone; an expired owner's run is taken over."""
    dead, _ = host("w3")
    _start_run(dead, "r3")  # w3's lease runs until T0 + LEASE_MS
    previous, _ = host("w1")  # this host's previous incarnation, gone
    _start_run(previous, "rp")
    live, clock2 = host("w2")
    clock2.now = T0 + 600
    _start_run(live, "r2")  # w2's lease runs until T0 + 1600
    w1, clock1 = host("w1")  # the live incarnation of w1
    clock1.now = T0 + 1200
    gate = Gate()
    w1.tool_runtime.tools["Wait"] = Tool("Wait", Wait, gate.run)
    ledger = _start_run(w1, "r1")
    results: list[ToolResult] = []
    call = ledger.call("c1", "Wait", {"text": "done"})
    step = threading.Thread(target=lambda: results.append(w1.tool_runtime.execute("r1", call)))
    step.start()
    try:
        assert gate.entered.wait(30)  # T1 is committed, the tool is running
        report = w1.recover()
    finally:
        gate.release.set()
        step.join(30)
    lines = sorted((r.run_id, r.kind, r.detail) for r in report.repairs)
    assert [(run_id, kind) for run_id, kind, _ in lines] == [
        ("r1", "left_own_live_run"),
        ("r2", "left_live_owner"),
        ("r3", "owner_taken_over"),
        ("r3", "terminal_recovered"),
        ("rp", "terminal_recovered"),
    ]
    assert lines[0][2] == {"ownerHostId": "w1", "ownerEpoch": 1}
    # the tool step finished (T2) and the owner goes on writing to its run, accepted
    assert [r.operation_id for r in results] == [
        w1.tool_journal.tool_operations("r1")[0].operation_id
    ]
    assert w1.tool_journal.tool_operations("r1")[0].state == "outcome_committed"
    w1.end_run("r1", ledger.terminal("completed", event_id="r1-end"))
    assert w1.get_run_header("r1").status == "completed"
    assert w1.ledger.load_run("r1").owner == RunOwner("w1", 1)
    assert live.ledger.load_run("r2").terminal_event is None
    assert w1.ledger.load_run("r3").owner == RunOwner("w1", 2)
    with pytest.raises(RunSealedError):  # the previous incarnation's run is over
        previous.ledger.append_events("rp", [LedgerBuilder(Spine("s1", "i-rp", "rp", "t1")).user()])


def test_a_run_taken_over_by_recovery_is_no_live_turn_of_the_taker(host: Host) -> None:
    """A run is taken over only by recovery, to end it: the taker holds the new epoch (its
    writes are not fenced) but runs no turn in it, so its next sweep ends the run (a run left
    awaiting the operator after a takeover is then recovered when the operator attests)."""
    w1, _ = host("w1")
    _start_run(w1, "r1")
    w2, clock2 = host("w2")
    clock2.now = T0 + LEASE_MS
    assert w2.ownership.take_over("r1")
    assert w2.ownership.held_epoch("r1") == 2
    report = w2.recover()
    assert [(r.run_id, r.kind) for r in report.repairs] == [("r1", "terminal_recovered")]
    assert w2.get_run_header("r1").status == "failed"
