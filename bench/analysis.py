"""What would fix each missed target: written by the engineers who profiled it, not generated.

Why a table of prose next to a generator: the profile says where the self time goes; what to
change, and what was already changed, is a judgement made reading those profiles during the
performance work (ADR 0025, ADR 0026, ADR 0027). The report prints the generated frames and
this note side by side, so a reader can check one against the other. A group with no note here
says so rather than inventing one.
"""

from __future__ import annotations

FIXES: dict[str, str] = {
    "1. no stalls (warm tool step on a long run)": (
        "As profiled for issue 23 (before its round-2 work): every ~1,000 events the snapshot is "
        "dumped inside the command (`SnapshotTable.write` -> `dump_run`, ~21 MB per write at 100k"
        " events), a 1.5-1.7 s stall; the median stays flat while p99, max and the mean grow. The"
        " fix the issue asks for is a snapshot written off the command path or incrementally, so "
        "no command pays O(history)."
    ),
    "2. restart on a long run": (
        "As profiled for issue 23: after a live run the snapshot lags up to 1,000 events, and the"
        " first tool event in that gap unpacks the whole operation list "
        "(`tooljournal/scan_snapshot.py:_PendingOperations.__call__`, 66%); an exact retry of an "
        "event older than the snapshot reads the run's whole history to compare its committed "
        "bytes. Reading only that event's fact (a version search on the stream) and a "
        "pending-operation index that does not unpack every operation are the fixes. Done: a "
        "versioned, verified snapshot of the Run's fold (ADR 0032): a restart reads one snapshot "
        "row, checks its format, its digest and the ledger's first and covered facts, and folds "
        "only the tail; the scan state keeps compact event records, a new event's id is checked "
        "against a CRC-32 index without building the id map, the operations and the journal are "
        "parts read (and verified) on first use, and the event list is read from the ledger only "
        "when asked for. Left: an exact retry of an event older than the snapshot compares its "
        "committed bytes, and today reads the run's whole history to find them (the 'exact retry'"
        " row); reading only that event's fact (a version search on the stream) is the fix."
    ),
    "3. tool step": (
        "As profiled for issue 23: CPU per step 1.3-1.5 ms even on the in-memory store, pydantic "
        "validation running 7 times per step. Same path as the on-disk step, without the fsync. "
        "The dedicated writer (ADR 0033) removed eventsourcing's save machinery; what remains is "
        "the decisions (canonical JSON, the resolver's prospective scan, a second pydantic "
        "validation of the dispatch and response events built from already-validated values), the"
        " fold of the committed facts, and two pool checkouts per commit (the write and the "
        "`data_version` proof). The 0.4 ms target needs those events built without the second "
        "validation and one writer connection that also answers the proof. On disk: Done: "
        "canonical JSON of plain values through CPython's C encoder, a writer folds its own "
        "commits from memory while SQLite's `data_version` proves no other writer (no read-back "
        "query), the args hash once per step (ADR 0026); a dedicated writer commits each "
        "command's facts with one `BEGIN IMMEDIATE`, one `executemany` and `COMMIT`, keeping the "
        "typed faults, failpoint and file-identity check, and run stream ids are memoised (ADR "
        "0033): the commit fell from ~36% to ~24% of a step. Left: the decisions (~45%: canonical"
        " JSON and its plain-value check, the resolver's prospective scan, pydantic validation of"
        " the dispatch and bound-response events the runtime builds itself), the own-facts fold "
        "(~17%, of which the pool checkout for the `data_version` proof ~5%), and the writer's "
        "own pool checkout and three statements around the insert."
    ),
    "4. agent loop step": (
        "As profiled for issue 23: each loop step re-reads every event of the run and re-projects"
        " the provider replay, so a step grows with the run and a turn is quadratic in its steps."
        " Keeping the replay projection incremental (append the step's new events to the request "
        "built for the previous step) makes a step flat."
    ),
    "5. plan scaling": (
        "The profile below covers parse + plan. The plan no longer deep-copies arguments or "
        "indexes every event, lanes of ordinary events are answered directly and the args hash is"
        " one pass (ADR 0034); what remains is the resolver's per-event step (dict writes through"
        " the undo journal, the lane memo, a pydantic-validated `ToolDecision` per operation) and"
        " pydantic parsing for JSON text, which stays strict as it must. 300k events/s would need"
        " the resolver step in compiled code or a much thinner per-event path. Issue 23 measured "
        "orjson at 4-7 us and msgspec with a typed schema at 3-4 us per event against the "
        "library's 47-87 us, and the cyclic GC as the cause of superlinear growth at 100k "
        "(9.4-9.9x per 10x with it off): a trusted-row decoder and fewer GC-tracked objects per "
        "event are the fixes."
    ),
    "5. cold plan_resume": (
        "`plan_resume` plans over the Run's own resolver fold (ADR 0025) and parsed events are "
        "leaner: one field-name set per event shape and interned spine ids (ADR 0034), ~2 KiB per"
        " event instead of ~3.4 KiB. What is left is that a plan returns every event "
        "(`runtimeEvents`, `replayRuntimeEvents`), so a cold plan parses the whole run: "
        "pydantic's own validation per payload is now the floor of that path, and the events "
        "dominate memory. Issue 23: 78% of a cold 100k plan re-validates every stored event."
    ),
    "6. startup recovery": (
        "The catch-up is linear (each touched run loaded once per batch; ADR 0012), a run loads "
        "from its verified snapshot plus the tail (ADR 0032), and a status verdict the resolution"
        " already decides reads no event (ADR 0012). What remains for one long run is reading its"
        " new notifications (eventsourcing's `select_notifications`), unpacking the snapshot's "
        "operations when the first tail fact arrives, and building the resolver's decisions per "
        "catch-up. Issue 23: 89% of a cold recovery of 1,000 runs / 100k events is full refolds "
        "in `recovery/status.py:_recompute`."
    ),
    "7. tool step on PostgreSQL": (
        "No PostgreSQL-specific work was done yet: each step still reads its own commits back "
        "(there is no `data_version` proof on PostgreSQL; a per-stream version check in the same "
        "round trip as the insert would give one) and pays psycopg-pool checkout per command."
    ),
    "import time (issue 12)": (
        "`import maka_es` builds every pydantic model of every capability (the top frame is "
        "`compile`, pydantic generating validators, then dataclass creation). Importing the "
        "provider formats, the report and the CLI lazily, and deferring model building "
        "(pydantic's `defer_build`) for models a host may never use, would cut it."
    ),
}


def fix_for(group: str) -> str:
    """The engineers' note for ``group``, or a plain statement that there is none."""
    return FIXES.get(group, "No analysis was written for this target yet.")
