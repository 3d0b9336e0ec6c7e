"""Real threads on the real stores: an owner appending while another thread of its process
reads the same run, and another host taking the run over (ADR 0021, ADR 0026).

Each trial: host ``a`` creates a run and appends to it in a loop from one thread while a second
thread of ``a`` reads the run without pause; host ``b`` (its own application, its clock past
``a``'s lease: the lease expired, no SIGSTOP needed) takes the run over and ends it. ``a``'s
appends after the takeover must be refused, and none of them may be stored after ``b``'s
takeover. A short sleep after ``a``'s owner check widens the window in which a read could
advance the state ``a`` decided on (without it the race is rare, not absent).

The high-water test: every ``AppendResult.high_water`` is the ``event_seq`` the append stored,
while readers read the run.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from maka_es.app import RuntimeApplication
from maka_es.errors import ConcurrentWriteError, MakaError
from maka_es.ledger.model.facts import RuntimeEventRecorded, run_stream_id
from maka_es.ledger.model.run import Run
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.ownership_soak import first_owner_writes_after_takeover

LEASE_MS = 1_000
T0 = 1_700_000_000_000
#: ``a``'s appends per trial at most (a trial ends at the first refusal; ``a`` may also finish
#: them all before ``b``'s takeover, which loses to ``a``'s appends until then, lands).
APPENDS = 30


@dataclass
class Reader:
    """A thread reading one run of ``app`` until stopped; what it raised, if anything."""

    app: RuntimeApplication
    run_id: str
    stop: threading.Event = field(default_factory=threading.Event)
    errors: list[BaseException] = field(default_factory=list)
    reads: int = 0

    def __post_init__(self) -> None:
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop.is_set():
            try:
                self.app.read_run_events(self.run_id)
                self.app.ledger.run_high_water(self.run_id)
                self.app.get_run_header(self.run_id)
                self.reads += 1
            except BaseException as exc:  # pragma: no cover - asserted by the caller
                self.errors.append(exc)
                return

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()
        assert self.errors == []


@pytest.fixture
def hosts(store_url: str) -> Iterator[tuple[RuntimeApplication, RuntimeApplication]]:
    a = RuntimeApplication.open(store_url, clock=lambda: T0, host_id="a", lease_ms=LEASE_MS)
    b = RuntimeApplication.open(
        store_url, clock=lambda: T0 + LEASE_MS, host_id="b", lease_ms=LEASE_MS
    )
    a.open_session("s1", "/workspace")
    yield a, b
    a.close()
    b.close()


def _delay_after_owner_check(monkeypatch: pytest.MonkeyPatch, app: RuntimeApplication) -> None:
    ownership = app.ownership
    original = type(ownership).check_writer

    def check_then_pause(run: Run) -> None:
        original(ownership, run)
        time.sleep(0.001)

    monkeypatch.setattr(ownership, "check_writer", check_then_pause)


def _appender(
    app: RuntimeApplication, ledger: LedgerBuilder, refusals: list[str]
) -> Callable[[], None]:
    def loop() -> None:
        for n in range(APPENDS):
            try:
                app.ledger.append_events(ledger.spine.run_id, [ledger.text(f"step {n}")])
            except MakaError as exc:
                refusals.append(exc.code)
                return
            time.sleep(0.002)  # an agent's turn between two appends: b's takeover can land

    return loop


def _take_over(b: RuntimeApplication, run_id: str) -> None:
    """``b`` takes the run over; a try that lost to one of ``a``'s appends (same version, the
    store kept ``a``'s) is made again, as a recovering host would."""
    for _ in range(1_000):
        if b.ownership.take_over(run_id):
            return
    raise AssertionError(f"host b never took {run_id} over")


def _end(b: RuntimeApplication, run_id: str, terminal: dict[str, object]) -> None:
    """``b`` ends the run; a try that lost to a write of ``a`` that landed (the defect this
    soak looks for) is made again, so the check below reports which write it was."""
    for _ in range(100):
        try:
            b.end_run(run_id, terminal)
            return
        except ConcurrentWriteError:
            continue
    raise AssertionError(f"host b never ended {run_id}")


def _trial(
    a: RuntimeApplication, b: RuntimeApplication, run_id: str, rng: random.Random
) -> tuple[int, bool]:
    """One takeover race; returns how many reads ``a``'s reader made meanwhile, and whether
    ``a`` was still appending when ``b`` took the run over (``a`` was refused)."""
    spine = Spine("s1", f"i-{run_id}", run_id, "t1")
    a.ledger.create_run(run_header(spine))
    ledger_a = LedgerBuilder(spine, prefix=f"{run_id}-a")
    a.ledger.append_events(run_id, [ledger_a.user("go")])
    b.get_run_header(run_id)  # b has read the run before (its takeover loads it warm)
    reader = Reader(a, run_id)
    refusals: list[str] = []
    appender = threading.Thread(target=_appender(a, ledger_a, refusals), daemon=True)
    appender.start()
    time.sleep(rng.uniform(0.0, 0.004))
    _take_over(b, run_id)
    time.sleep(rng.uniform(0.0, 0.002))  # recovery does other work before the terminal
    _end(b, run_id, LedgerBuilder(spine, prefix=f"{run_id}-b").terminal("completed"))
    appender.join(timeout=60)
    assert not appender.is_alive()
    reader.close()
    assert refusals[:1] in ([], ["concurrent_write"], ["run_owner_fenced"]), refusals
    late, takeovers = first_owner_writes_after_takeover(a, run_id, re.compile(rf"{run_id}-a\d+$"))
    assert takeovers == 1
    assert late == [], (run_id, late)  # 0 fenced writes stored
    events = b.read_run_events(run_id)
    assert events[-1].is_terminal
    assert events[-1].id.startswith(f"{run_id}-b")
    return reader.reads, bool(refusals)


def _soak(
    hosts: tuple[RuntimeApplication, RuntimeApplication],
    monkeypatch: pytest.MonkeyPatch,
    trials: int,
    seed: int,
) -> None:
    a, b = hosts
    _delay_after_owner_check(monkeypatch, a)
    rng = random.Random(seed)
    outcomes = [_trial(a, b, f"r{n}", rng) for n in range(trials)]
    assert sum(reads for reads, _ in outcomes) > trials  # the reader ran alongside the appends
    assert sum(raced for _, raced in outcomes) > trials // 4  # and b took over a live writer


def test_owner_reader_and_takeover_200_trials_no_fenced_write_stored(
    hosts: tuple[RuntimeApplication, RuntimeApplication], monkeypatch: pytest.MonkeyPatch
) -> None:
    _soak(hosts, monkeypatch, trials=200, seed=20)


@pytest.mark.slow
def test_owner_reader_and_takeover_soak_longer(
    hosts: tuple[RuntimeApplication, RuntimeApplication], monkeypatch: pytest.MonkeyPatch
) -> None:
    _soak(hosts, monkeypatch, trials=1_000, seed=21)


def test_every_append_result_high_water_is_the_seq_it_stored_under_concurrent_reads(
    hosts: tuple[RuntimeApplication, RuntimeApplication],
) -> None:
    a, _ = hosts
    spine = Spine("s1", "i-hw", "hw", "t1")
    a.ledger.create_run(run_header(spine))
    ledger = LedgerBuilder(spine, prefix="hw-")
    readers = [Reader(a, "hw") for _ in range(2)]
    reported: dict[str, int] = {}
    for n in range(200):
        event = ledger.text(f"step {n}")
        reported[event["id"]] = a.ledger.append_events("hw", [event]).high_water
    for reader in readers:
        reader.close()
    stored = {
        fact.event_id: fact.event_seq
        for fact in (
            a._es.mapper.to_domain_event(item)
            for item in a._es.recorder.select_events(run_stream_id("hw"))
        )
        if isinstance(fact, RuntimeEventRecorded)
    }
    assert reported == stored
    assert sum(reader.reads for reader in readers) > 0
