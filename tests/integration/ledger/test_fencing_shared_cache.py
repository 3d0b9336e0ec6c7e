"""A read in the owner's process cannot carry a fenced write past the store (ADR 0021, 0026).

The owner's command loads the run, checks the owner, decides and saves. If another thread of
the same process reads the run between the check and the save, and the read advances the
aggregate the command decided on over another host's takeover, the command would stamp its
facts at the versions after the takeover and the store would accept them. These tests put that
read exactly there (a hook after the owner check, or after the sealing check), with host B on
its own application taking the run over in between, on both stores: the owner's write is
refused ``concurrent_write`` and nothing of it is stored.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.errors import ConcurrentWriteError, RunOwnerFencedError
from maka_es.ledger.model import run as run_module
from maka_es.ledger.model.ownership import RunOwner
from maka_es.ledger.model.run import Run
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.probes import store_snapshot

LEASE_MS = 1_000
T0 = 1_700_000_000_000


class Clock:
    """A clock the test sets by hand (each host reads its own)."""

    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def hosts(store_url: str) -> Iterator[tuple[RuntimeApplication, RuntimeApplication]]:
    """Host ``a`` (the owner) and host ``b``, whose clock is past ``a``'s lease."""
    a = RuntimeApplication.open(store_url, clock=Clock(), host_id="a", lease_ms=LEASE_MS)
    b = RuntimeApplication.open(
        store_url, clock=Clock(T0 + LEASE_MS), host_id="b", lease_ms=LEASE_MS
    )
    yield a, b
    a.close()
    b.close()


def _start(a: RuntimeApplication) -> LedgerBuilder:
    spine = Spine("s1", "i-r1", "r1", "t1")
    a.open_session("s1", "/workspace")
    a.ledger.create_run(run_header(spine))
    ledger = LedgerBuilder(spine, prefix="r1-a")
    a.ledger.append_events("r1", [ledger.user("hello")])
    return ledger


def _read_in_another_thread(app: RuntimeApplication) -> None:
    """What a reader thread of the owner's process does: read the run (every read kind)."""
    errors: list[BaseException] = []

    def read() -> None:
        try:
            app.read_run_events("r1")
            app.get_run_header("r1")
            app.ledger.run_high_water("r1")
            app.tool_journal.tool_operations("r1")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    reader.join(timeout=30)
    assert not reader.is_alive()
    assert errors == []


def _once(action: Callable[[], None]) -> Callable[[], None]:
    done: list[bool] = []

    def run() -> None:
        if not done:
            done.append(True)
            action()

    return run


def _after_owner_check(
    monkeypatch: pytest.MonkeyPatch, a: RuntimeApplication, interfere: Callable[[], None]
) -> None:
    """Run ``interfere`` once, right after ``a``'s owner check passed (every command's)."""
    ownership = a.ownership
    original = type(ownership).check_writer
    once = _once(interfere)

    def check_then_interfere(run: Run) -> None:
        original(ownership, run)
        once()

    monkeypatch.setattr(ownership, "check_writer", check_then_interfere)


def _b_takes_over_and_writes(a: RuntimeApplication, b: RuntimeApplication) -> Callable[[], None]:
    ledger_b = LedgerBuilder(Spine("s1", "i-r1", "r1", "t1"), prefix="r1-b")

    def interfere() -> None:
        assert b.ownership.take_over("r1")
        b.ledger.append_events("r1", [ledger_b.text("host b carries on")])
        _read_in_another_thread(a)

    return interfere


def _a_events(app: RuntimeApplication) -> list[str]:
    return [e.id for e in app.read_run_events("r1") if e.id.startswith("r1-a")]


Command = Callable[[RuntimeApplication, LedgerBuilder], Any]

COMMANDS: dict[str, Command] = {
    "append": lambda a, led: a.ledger.append_events("r1", [led.text("a's late write")]),
    "t1": lambda a, led: a.tool_journal.commit_tool_prepared(
        "r1", led.call("c1", "Read", {"path": "x"})
    ),
    "header": lambda a, led: a.ledger.update_run_header("r1", {"updatedAt": T0 + 5}),
    "end_run": lambda a, led: a.end_run("r1", led.terminal("completed")),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_read_after_the_owner_check_cannot_let_a_fenced_command_write(
    hosts: tuple[RuntimeApplication, RuntimeApplication],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    a, b = hosts
    ledger = _start(a)
    before_a = _a_events(a)
    _after_owner_check(monkeypatch, a, _b_takes_over_and_writes(a, b))
    with pytest.raises(ConcurrentWriteError) as refused:
        COMMANDS[command](a, ledger)
    assert refused.value.code == "concurrent_write"
    after_b = store_snapshot(b).rows
    # the refused command stored nothing: the store is what b left, a's events are as before
    assert _a_events(b) == before_a
    assert b.ledger.load_run("r1").owner == RunOwner("b", 2)
    # a's next try reads the takeover and is fenced; still nothing written
    monkeypatch.undo()
    with pytest.raises(RunOwnerFencedError) as fenced:
        COMMANDS[command](a, ledger)
    assert fenced.value.code == "run_owner_fenced"
    assert store_snapshot(b).rows == after_b


def test_a_read_after_the_sealing_check_cannot_append_past_another_hosts_terminal(
    hosts: tuple[RuntimeApplication, RuntimeApplication], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The observed failure: b recovers the run (takeover and recovered terminal) after a's
    append passed every check, a reader of a's process reads the run, and a's event must not be
    stored after b's terminal."""
    a, b = hosts
    ledger = _start(a)
    original = run_module._check_writable

    def recover_with_b() -> None:
        report = b.recover()
        assert [r.kind for r in report.repairs if r.run_id == "r1"][:1] == ["owner_taken_over"]
        _read_in_another_thread(a)

    once = _once(recover_with_b)

    def checked_then_interfere(run: Run, event: Any, terminal_seen: bool) -> None:
        original(run, event, terminal_seen)
        once()

    monkeypatch.setattr(run_module, "_check_writable", checked_then_interfere)
    with pytest.raises(ConcurrentWriteError):
        a.ledger.append_events("r1", [ledger.text("a's late write")])
    events = b.read_run_events("r1")
    assert events[-1].is_terminal
    assert [e.id for e in events if e.id.startswith("r1-a")] == ["r1-a1"]
    assert b.plan_resume("r1").source_runtime_event_high_water == len(events)
