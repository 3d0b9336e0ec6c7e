"""Host processes for the paused-writer test (tests/crash/test_paused_writer_leases.py).

Why a module: the test forks them (imports done once), and each plays one host on the same
SQLite file: a writer that stops itself with SIGSTOP inside its write transaction (the lock
held), and an owner that keeps a run and heartbeats, saying what each heartbeat did.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import TextIO

from maka_es import failpoints
from maka_es.app import RuntimeApplication
from maka_es.errors import MakaError
from maka_es.testing.builders import LedgerBuilder, Spine, run_header

#: Every host waits at most this long (seconds) for SQLite's write lock in one attempt.
LOCK_TIMEOUT_ENV = {"SQLITE_LOCK_TIMEOUT": "1"}
OWNER_RUN = "rb"


def paused_writer(db: str, lease_ms: int) -> None:
    """Host ``wa``: a heartbeat whose transaction stops the process before COMMIT."""
    app = RuntimeApplication.open(db, env=LOCK_TIMEOUT_ENV, host_id="wa", lease_ms=lease_ms)
    failpoints.arm(
        failpoints.INSIDE_SAVE_BEFORE_COMMIT, lambda _: os.kill(os.getpid(), signal.SIGSTOP)
    )
    app.heartbeat()
    app.close()


def owner(db: str, lease_ms: int, report: str, stop: str) -> None:
    """Host ``wb``: creates its run, heartbeats every ``lease_ms / 5`` until ``stop`` exists,
    then appends to its run; every outcome is one JSON line in ``report``."""
    app = RuntimeApplication.open(db, env=LOCK_TIMEOUT_ENV, host_id="wb", lease_ms=lease_ms)
    spine = Spine("s1", "i-rb", OWNER_RUN, "t1")
    app.open_session("s1", "/workspace")
    app.ledger.create_run(run_header(spine))
    ledger = LedgerBuilder(spine, prefix="rb-e")
    app.ledger.append_events(OWNER_RUN, [ledger.user("hello")])
    with Path(report).open("a", encoding="utf-8") as out:
        _say(out, step="created")
        while not Path(stop).exists():
            started = time.monotonic()
            try:
                app.heartbeat()
                _say(out, step="heartbeat", ok=True, seconds=time.monotonic() - started)
            except MakaError as exc:
                _say(out, step="heartbeat", ok=False, code=exc.code, detail=exc.detail)
            time.sleep(lease_ms / 5000)
        try:
            app.ledger.append_events(OWNER_RUN, [ledger.text("still mine")])
            _say(out, step="append", ok=True)
        except MakaError as exc:
            _say(out, step="append", ok=False, code=exc.code)
    app.close()


def _say(out: TextIO, **line: object) -> None:
    out.write(json.dumps(line, default=str) + "\n")
    out.flush()
