"""What would fix each missed target: written by the engineers who profiled it, not generated.

Why a table of prose next to a generator: the profile says where the self time goes; what to
change, and what was already changed, is a judgement made reading those profiles during the
performance work (ADR 0025, ADR 0026, ADR 0027). The report prints the generated frames and
this note side by side, so a reader can check one against the other. A group with no note here
says so rather than inventing one.
"""

from __future__ import annotations

FIXES: dict[str, str] = {
    "1. tool step on disk": (
        "Done: canonical JSON of plain values through CPython's C encoder, a writer folds its own "
        "commits from memory while SQLite's `data_version` proves no other writer (no read-back "
        "query), the args hash once per step (ADR 0026); a dedicated writer commits each "
        "command's facts with one `BEGIN IMMEDIATE`, one `executemany` and `COMMIT`, keeping the "
        "typed faults, failpoint and file-identity check, and run stream ids are memoised (ADR "
        "0033): the commit fell from ~36% to ~24% of a step. Left: the decisions (~45%: "
        "canonical JSON and its plain-value check, the resolver's prospective scan, pydantic "
        "validation of the dispatch and bound-response events the runtime builds itself), the "
        "own-facts fold (~17%, of which the pool checkout for the `data_version` proof ~5%), and "
        "the writer's own pool checkout and three statements around the insert."
    ),
    "2. CPU per tool step (tmpfs)": (
        "Same path as the on-disk step, without the fsync. The dedicated writer (ADR 0033) "
        "removed eventsourcing's save machinery; what remains is the decisions (canonical JSON, "
        "the resolver's prospective scan, a second pydantic validation of the dispatch and "
        "response events built from already-validated values), the fold of the committed facts, "
        "and two pool checkouts per commit (the write and the `data_version` proof). The 0.4 ms "
        "target needs those events built without the second validation and one writer "
        "connection that also answers the proof."
    ),
    "1. tool step on PostgreSQL": (
        "No PostgreSQL-specific work was done yet: each step still reads its own commits back "
        "(there is no `data_version` proof on PostgreSQL; a per-stream version check in the same "
        "round trip as the insert would give one) and pays psycopg-pool checkout per command."
    ),
    "3. first command after a restart, and warm appends": (
        "Reload cost per event was cut (digest-verified rows parsed once, no args re-hash, lanes "
        "from set fields; ADR 0025), but the first command still folds the whole run. The fix is "
        "a versioned, verified snapshot of the Run state, so a restart folds only the tail (the "
        "per-load `uuid5` of the stream id, ~13% here, is a smaller fix): it "
        "first needs the resolver's scan state to be compact and serialisable (today it holds "
        "the event objects) and the event list to be read lazily."
    ),
    "4. plan_resume from the store, cold": (
        "`plan_resume` now plans over the Run's own resolver fold (one scan, not two; ADR 0025). "
        "What is left is the cold reload itself (pydantic parsing each payload, ~35%) and memory: "
        "every event is kept with its payload string. Keeping digests instead of payloads, and "
        "the snapshot above, are the fixes."
    ),
    "4. plan scaling": (
        "The profile below covers parse + plan. Parsing (`model_validate` and the strict-JSON "
        "after-validator) is about a quarter of it: reading stored rows skips the latter when "
        "their digest matches (ADR 0025), but events given as JSON text are parsed strictly, "
        "as they must be. The plan alone is the resolver's per-event step and the operations "
        "projection's `deepcopy` of events; 300k events/s needs a plan that references the "
        "events it was given instead of copying them, and a leaner resolver step."
    ),
    "6. import time": (
        "`import maka_es` builds every pydantic model of every capability (the top frame is "
        "`compile`, pydantic generating validators, then dataclass creation). Importing the "
        "provider formats, the report and the CLI lazily, and deferring model building "
        "(pydantic's `defer_build`) for models a host may never use, would cut it."
    ),
    "5. startup recovery": (
        "The catch-up is linear now (each touched run loaded once per batch, no rebuilt plan: "
        "ADR 0012); what remains for one long run is the single cold Run load (about 90% of the "
        "time), which the snapshot above removes."
    ),
}


def fix_for(group: str) -> str:
    """The engineers' note for ``group``, or a plain statement that there is none."""
    return FIXES.get(group, "No analysis was written for this target yet.")
