"""A host paused inside its write transaction on a shared SQLite file (SIGSTOP: the write lock
held, nobody else can write) does not make another host's live run look dead (ADR 0021,
amended 2026-12-01).

Three real hosts on one file: ``wa`` stops itself before COMMIT, ``wb`` owns a run and keeps
heartbeating, ``wc`` (this process) heartbeats from a timer thread and sweeps with
``recover()``. For a lease duration nobody can write, so ``wb``'s stored lease lapses; still
``wb``'s heartbeats wait the lock out instead of failing, ``wc`` takes nothing over (its own
heartbeat waited on the same lock, so the lapse says nothing about ``wb``), and once ``wa`` is
killed ``wb`` writes to its run as before. When ``wb`` then really stops, ``wc`` takes its run
over after the lease: failover still works.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from maka_es.app import RuntimeApplication
from maka_es.errors import MakaError
from maka_es.ledger.model.ownership import RunOwner
from tests.support.lease_hosts import LOCK_TIMEOUT_ENV, OWNER_RUN, owner, paused_writer

LEASE_MS = 2_000
FORK = multiprocessing.get_context("fork")


def _lines(report: Path) -> list[dict[str, Any]]:
    if not report.exists():
        return []
    return [json.loads(line) for line in report.read_text(encoding="utf-8").splitlines()]


def _wait_for(what: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _stopped(pid: int) -> bool:
    """Whether the process is stopped by a signal (Linux ``/proc``: state ``T``)."""
    stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    return stat.rsplit(")", 1)[1].split()[0] == "T"


class Sweeper:
    """Host ``wc``: a heartbeat thread (every ``lease_ms / 5``) and a sweep thread."""

    def __init__(self, app: RuntimeApplication) -> None:
        self.app = app
        self.done = threading.Event()
        self.heartbeat_errors: list[str] = []
        self.sweep_errors: list[str] = []
        self.lines: list[tuple[str, str, dict[str, Any]]] = []
        self.threads = [threading.Thread(target=self._beat), threading.Thread(target=self._sweep)]

    def __enter__(self) -> Sweeper:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.done.set()
        for thread in self.threads:
            thread.join(30)

    def _beat(self) -> None:
        while not self.done.wait(LEASE_MS / 5000):
            try:
                self.app.heartbeat()
            except MakaError as exc:
                self.heartbeat_errors.append(exc.code)

    def _sweep(self) -> None:
        while not self.done.wait(0.1):
            try:
                report = self.app.recover()
            except MakaError as exc:  # a read-model write may time out behind the lock
                self.sweep_errors.append(exc.code)
                continue
            self.lines += [(r.run_id, r.kind, r.detail) for r in report.repairs]


def test_a_writer_paused_in_its_transaction_does_not_get_a_live_hosts_run_taken_over(
    tmp_path: Path,
) -> None:
    db, report, stop = str(tmp_path / "store.sqlite"), tmp_path / "wb.jsonl", tmp_path / "stop"
    RuntimeApplication.open(db).close()  # the schema, before three processes race for it
    wb = FORK.Process(target=owner, args=(db, LEASE_MS, str(report), str(stop)))
    wb.start()
    wa: Any = None
    try:
        _wait_for(lambda: any(line["step"] == "heartbeat" for line in _lines(report)), 30)
        app = RuntimeApplication.open(db, env=LOCK_TIMEOUT_ENV, host_id="wc", lease_ms=LEASE_MS)
        with app, Sweeper(app) as wc:
            _wait_for(lambda: any(kind == "left_live_owner" for _, kind, _ in wc.lines), 30)
            wa = FORK.Process(target=paused_writer, args=(db, LEASE_MS))
            wa.start()
            assert wa.pid is not None
            _wait_for(lambda: _stopped(wa.pid), 30)
            time.sleep(LEASE_MS / 1000)  # nobody can write for a whole lease
            os.kill(wa.pid, signal.SIGKILL)
            wa.join(30)
            time.sleep(2 * LEASE_MS / 1000)  # the sweeps go on after the lock is free
            blocked = _lines(report)
            swept = list(wc.lines)
            # nothing was taken over: wb's run is still wb's, at its first epoch
            assert [line for line in swept if line[1] == "owner_taken_over"] == []
            assert app_owner(db) == RunOwner("wb", 1)
            stop.touch()
            wb.join(30)
            assert wb.exitcode == 0
            # failover still works: wb is gone now, and wc takes its run over
            _wait_for(
                lambda: (OWNER_RUN, "owner_taken_over") in {line[:2] for line in wc.lines}, 30
            )
        beats = [line for line in blocked if line["step"] == "heartbeat"]
        assert [line for line in beats if not line["ok"]] == []
        # the paused writer really held the lock: some heartbeat waited for most of a lease
        assert max(line["seconds"] for line in beats) > LEASE_MS / 2000
        assert _lines(report)[-1] == {"step": "append", "ok": True}
        taken = [i for i, line in enumerate(wc.lines) if line[1] == "owner_taken_over"]
        assert [wc.lines[i][0] for i in taken] == [OWNER_RUN]
        assert wc.heartbeat_errors == []
        owned = app_owner(db)
        assert owned == RunOwner("wc", 2)
    finally:
        for process in (wa, wb):
            if process is not None and process.is_alive():
                process.kill()
                process.join(30)


def app_owner(db: str) -> RunOwner | None:
    with RuntimeApplication.open(db, read_only=True) as reader:
        return reader.ledger.load_run(OWNER_RUN).owner
