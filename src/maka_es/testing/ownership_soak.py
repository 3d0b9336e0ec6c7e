"""Worker of the several-hosts-on-one-store soak (ADR 0021).

Why a worker function rather than a module run with ``python -m``: the soak starts and kills
dozens of processes on two cores, so it forks them from the test process (``fork`` context:
the imports are already done) and SIGKILLs them at random. Each worker is one host: it opens
its own :class:`RuntimeApplication` on the shared store (a SQLite file or a PostgreSQL URL,
ADR 0028) with its host id and lease,
recovers, then runs agent turns (user message, a tool call through T1 and T2, a model answer,
the terminal) until the stop file exists, renewing its lease before every turn and recovering
again every few turns. Everything it observes goes, one JSON line at a time, to its report
file: a line written before a SIGKILL is in the file.

Event ids are ``<runId>-e<n>`` for the writer that created the run, so the parent can tell
from the store alone which writes came from a run's first owner.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from maka_es.app import RuntimeApplication
from maka_es.errors import ConcurrentWriteError, MakaError
from maka_es.ledger.model.facts import RunOwnerTaken, RuntimeEventRecorded, run_stream_id
from maka_es.testing.builders import LedgerBuilder, Spine, run_header

#: Turns between two recoveries of a running worker.
RECOVER_EVERY = 4

#: Attempts to create a run when another host registered one in the session at that moment
#: (``concurrent_write``: nothing was written, the host retries).
CREATE_ATTEMPTS = 200


@dataclass(frozen=True)
class WorkerSpec:
    """One worker process: which host it is, on which store, reporting where."""

    db: str  # the store setting: a SQLite path or a PostgreSQL URL
    host_id: str
    lease_ms: int
    report: str
    stop: str
    session_id: str = "s1"


def first_owner_writes_after_takeover(
    app: RuntimeApplication, run_id: str, own: re.Pattern[str]
) -> tuple[list[str], int]:
    """The ids of events matching ``own`` (the run's first owner's) stored after the run's first
    takeover, read from the stored facts themselves, and the number of takeovers of the run.
    A fenced owner's write that landed is in the list; it must be empty."""
    stream = app._es.recorder.select_events(run_stream_id(run_id))
    facts = [app._es.mapper.to_domain_event(item) for item in stream]
    taken = [f.originator_version for f in facts if isinstance(f, RunOwnerTaken)]
    late = [
        str(json.loads(f.payload)["id"])
        for f in facts
        if taken and isinstance(f, RuntimeEventRecorded) and f.originator_version > taken[0]
    ]
    return [event_id for event_id in late if own.match(event_id)], len(taken)


def _say(out: TextIO, **line: Any) -> None:
    out.write(json.dumps(line) + "\n")
    out.flush()


def _recover(app: RuntimeApplication, out: TextIO) -> None:
    for repair in app.recover().repairs:
        _say(out, repair=repair.kind, runId=repair.run_id, detail=repair.detail)


def _turn(app: RuntimeApplication, spec: WorkerSpec, run_id: str) -> None:
    """One agent turn in a fresh run, ended ``completed`` by this host."""
    spine = Spine(spec.session_id, f"{run_id}-i", run_id, "t1")
    ledger = LedgerBuilder(spine, prefix=f"{run_id}-e")
    for attempt in range(CREATE_ATTEMPTS):  # the shared session is a hot stream
        try:
            app.ledger.create_run(run_header(spine))
            break
        except ConcurrentWriteError:
            if attempt + 1 == CREATE_ATTEMPTS:
                raise
            time.sleep(random.uniform(0, 0.01))  # back off: the others' saves go first
    app.ledger.append_events(run_id, [ledger.user("read the config")])
    call = ledger.call("c1", "Read", {"path": "config.json"})
    app.tool_journal.commit_tool_prepared(run_id, call)
    result = {"kind": "text", "text": "{}"}
    app.tool_journal.commit_tool_outcome(run_id, ledger.bound_response("c1", "Read", result))
    app.ledger.append_events(run_id, [ledger.text("the config is empty")])
    app.end_run(run_id, ledger.terminal("completed"))


def work(spec: WorkerSpec) -> None:
    """The worker's body (see module docstring); exits the process, never returns."""
    code = 0
    with Path(spec.report).open("a", encoding="utf-8") as out:
        try:
            app = RuntimeApplication.open(spec.db, host_id=spec.host_id, lease_ms=spec.lease_ms)
            app.heartbeat()
            app.open_session(spec.session_id, "/workspace")
            _say(out, started=spec.host_id, pid=os.getpid())
            _recover(app, out)
            turn = 0
            while not Path(spec.stop).exists():
                turn += 1
                run_id = f"{spec.host_id}-p{os.getpid()}-n{turn}"
                app.heartbeat()
                _say(out, creating=run_id)
                _turn(app, spec, run_id)
                _say(out, completed=run_id)
                if turn % RECOVER_EVERY == 0:
                    _recover(app, out)
            app.close()
        except MakaError as exc:
            _say(out, error=exc.code, message=str(exc), detail=exc.detail)
            code = 3
        except BaseException as exc:
            _say(out, error=type(exc).__name__, message=str(exc))
            code = 4
    os._exit(code)
