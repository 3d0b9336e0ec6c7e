"""The two hosts of tests/crash/test_live_agent_two_hosts.py, each a process of its own.

Why a module: the test forks them (imports done once). Both are the three-tool agent of
``live_agent`` on one store, with their own host id and a short lease. Host ``h1`` runs the
session ``s1`` as a host does at every start, heartbeating from a timer thread, until the test
SIGKILLs it at its armed failpoint. Host ``h2`` is alive the whole time. Its main thread runs
its own conversation (session ``s2``, slow model calls: a turn is still running while it
sweeps), and a sweep thread calls ``recover()`` every ``SWEEP_S``. Each sweep is one JSON line
(its start and end by the host's clock, ``h1``'s lease expiry as stored, every repair with its
run's session). A session another host's run was taken over in, or whose run awaits the
operator, is then finished by ``h2`` (``live_agent.finish_session``); a park is written too and
retried after the next sweep (the test attests meanwhile).
"""

from __future__ import annotations

import json
import os
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from maka_es import OpenAIChatProvider, RuntimeApplication
from maka_es.errors import MakaError
from tests.support import live_agent

LEASE_MS = 1_500
FIRST, SECOND = "h1", "h2"
OTHER_SESSION = "s2"
SWEEP_S = 0.15
#: ``h2``'s model answers after this many seconds (its turns overlap its sweeps).
SLOW_MODEL_S = 0.25
SWEEPS, OTHER_REQUESTS, SECOND_OUT, STOP = "sweeps.jsonl", "requests-s2.jsonl", "h2.json", "stop"
#: Repairs that mean the run was another host's and is now ended or ready to be ended here.
TAKEN = frozenset({"owner_taken_over", "left_awaiting_operator"})


@contextmanager
def heartbeating(app: RuntimeApplication) -> Iterator[list[str]]:
    """A timer thread renewing the host's lease every fifth of it (ADR 0021); yields the
    codes of failed heartbeats."""
    done, errors = threading.Event(), []

    def beat() -> None:
        while not done.wait(LEASE_MS / 5000):
            try:
                app.heartbeat()
            except MakaError as exc:
                errors.append(exc.code)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield errors
    finally:
        done.set()
        thread.join(30)


def first_host(root: Path, store: str, kill: tuple[str, int], announce: Callable[[], None]) -> None:
    """Host ``h1``: recover, resume and run ``s1``'s turns, blocked for good at ``kill``."""
    live_agent.instrument_writes(root)
    live_agent.arm_kill(kill, announce)
    model = OpenAIChatProvider(live_agent.ScriptedClient(root), model="scripted")
    app = live_agent.open_app(root, store, host_id=FIRST, lease_ms=LEASE_MS)
    with app, heartbeating(app):
        app.recover()
        app.open_session(live_agent.SESSION)
        live_agent.finish_session(app, model)


def second_host(root: Path, store: str) -> None:
    """Host ``h2``: sweeps from a thread while it runs ``s2`` turns until ``STOP`` exists;
    writes its turns and errors to ``SECOND_OUT``."""
    live_agent.instrument_writes(root)
    report: dict[str, Any] = {"turns": [], "errors": []}
    with live_agent.open_app(root, store, host_id=SECOND, lease_ms=LEASE_MS) as app:
        app.recover()
        app.open_session(OTHER_SESSION)
        with heartbeating(app) as beats, Sweeper(root, app) as sweeper:
            try:
                _own_conversation(root, app, report)
            except BaseException:  # the test reads it from the report
                report["errors"].append(traceback.format_exc())
        report["errors"] += sweeper.errors
        report["heartbeatErrors"] = beats
    (root / SECOND_OUT).write_text(json.dumps(report))


def _own_conversation(root: Path, app: RuntimeApplication, report: dict[str, Any]) -> None:
    slow = live_agent.ScriptedClient(root, OTHER_REQUESTS, delay=SLOW_MODEL_S)
    model = OpenAIChatProvider(slow, model="scripted")
    n = 0
    while not (root / STOP).exists():
        n += 1
        turn = app.run_turn(
            OTHER_SESSION, f"{live_agent.LOOKUP} (turn {n})?", model, run_id=f"o{n}"
        )
        report["turns"].append([turn.run_id, turn.status, turn.answer])


class Sweeper:
    """``h2``'s sweep thread (see module docstring)."""

    def __init__(self, root: Path, app: RuntimeApplication) -> None:
        self.root = root
        self.app = app
        self.model = OpenAIChatProvider(live_agent.ScriptedClient(root), model="scripted")
        self.done = threading.Event()
        self.errors: list[str] = []
        self.pending: set[str] = set()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sweeper:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.done.set()
        self.thread.join(60)

    def _run(self) -> None:
        with (self.root / SWEEPS).open("a", encoding="utf-8") as out:
            while not self.done.wait(SWEEP_S):
                try:
                    self._sweep(out)
                    for session in sorted(self.pending):
                        self._finish(out, session)
                except BaseException:
                    self.errors.append(traceback.format_exc())

    def _sweep(self, out: TextIO) -> None:
        lease = self.app.ledger.ownership.lease(FIRST) if self.app.ledger.ownership else None
        started = self.app.now_ms()
        report = self.app.recover()
        ended = self.app.now_ms()
        repairs: list[list[Any]] = [
            [r.run_id, self.app.get_run_header(r.run_id).session_id, r.kind, r.detail]
            for r in report.repairs
        ]
        self.pending |= {s for _, s, kind, _ in repairs if kind in TAKEN and s != OTHER_SESSION}
        line = {"t0": started, "t1": ended, "h1ExpiresAt": lease and lease.expires_at}
        _say(out, **line, repairs=repairs)

    def _finish(self, out: TextIO, session: str) -> None:
        outcome = live_agent.finish_session(self.app, self.model, session)
        _say(out, finished=session, outcome=outcome, at=self.app.now_ms())
        if outcome["resume"] != "parked":
            self.pending.discard(session)


def _say(out: TextIO, **line: object) -> None:
    out.write(json.dumps(line, default=str) + "\n")
    out.flush()
    os.fsync(out.fileno())
