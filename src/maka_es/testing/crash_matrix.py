"""The crash matrix behind ``maka-es crash-matrix``: every failpoint, SIGKILLed, checked.

Run as ``python -m maka_es.testing.crash_matrix [--store URL] WORKDIR SEEDS SUITE...``; it prints
one JSON line
``{"total": n}`` and then one line per case (``suite``, ``case``, ``seed``, ``expected``,
``observed``, ``ok``). Why a child module of the test kit and not CLI code: the library never
imports its test kit (import-linter), so the CLI spawns this module, exactly as ``make demo``
spawns the example child, and renders its lines (ADR 0029). Each case is a real child process
killed with SIGKILL on a fresh store, then a fresh application decides. The store is a fresh
SQLite file under WORKDIR, or, with ``--store postgresql://...``, a fresh schema on that server,
dropped afterwards (ADR 0028):

* ``phase0``: the failpoints P0-P11 (docs/reference/phase0.md#failpoints), observed as the
  resume plan's disposition and reasons;
* ``tooljournal``: inside / after T1, T2 and both recovery bundles, observed as the journal
  states and the plan's disposition (ADR 0007);
* ``continuation``: the executor's failpoints and a kill inside the claim transaction, observed
  as the next continuation plan's reasons (docs/reference/continuation.md#continuation-failpoints).

Each seed repeats every case on fresh files; the Phase 0 cases also take their ids from it.
"""

from __future__ import annotations

import contextlib
import json
import sys
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from maka_es.app import RuntimeApplication
from maka_es.continuation import executor
from maka_es.failpoints import INSIDE_SAVE_BEFORE_COMMIT
from maka_es.resume.failpoint_catalog import RUNTIME_RESUME_FAILPOINTS, harness_ledger
from maka_es.testing.builders import Events, LedgerBuilder, Spine, run_header
from maka_es.testing.crash import crash_child
from maka_es.testing.crash_child import open_app

SUITES = ("phase0", "tooljournal", "continuation")
#: A case: its name, the expected observation, and how to produce the observed one.
Case = tuple[str, str, Any, Callable[[Path, "str | None"], Any]]

PHASE0_REQUIRED: dict[str, dict[str, Any]] = {
    "before_function_call": {"disposition": "safe_replay", "reasons": []},
    "after_function_call": {"disposition": "blocked", "reasons": ["dangling_tool_state"]},
    "after_function_response": {"disposition": "safe_replay", "reasons": []},
    "after_terminal_event": {"disposition": "safe_replay", "reasons": []},
}


def _reopen(db: Path, store: str | None) -> RuntimeApplication:
    """A fresh application on the case's store: read-only on SQLite, the schema on PostgreSQL."""
    if store is None:
        return RuntimeApplication.open_sqlite(str(db), read_only=True)
    return RuntimeApplication.open(store)


def _plan_of(db: Path, store: str | None, run_id: str) -> dict[str, Any]:
    with _reopen(db, store) as app:
        plan = app.plan_resume(run_id)
    return {"disposition": plan.disposition, "reasons": list(plan.rejection_reasons)}


def _phase0_cases(seed: int) -> Iterator[Case]:
    spine = Spine(f"session-{seed}", f"invocation-run-{seed}", f"run-{seed}", f"turn-run-{seed}")
    for failpoint in RUNTIME_RESUME_FAILPOINTS:
        ledger = [
            e.to_wire()
            for e in harness_ledger(failpoint.committed_prefix, spine.session_id, spine.run_id)
        ]
        steps: list[dict[str, Any]] = [
            {"op": "open_session", "session_id": spine.session_id, "cwd": "/workspace"},
            {"op": "create_run", "header": run_header(spine)},
            {"op": "append", "run_id": spine.run_id, "events": ledger},
        ]

        def observe(db: Path, store: str | None, steps: list[dict[str, Any]] = steps) -> Any:
            _killed(db, store, steps)
            return _plan_of(db, store, spine.run_id)

        expected = PHASE0_REQUIRED[failpoint.committed_prefix]
        yield "phase0", failpoint.id, expected, observe


def _killed(db: Path, store: str | None, steps: list[dict[str, Any]], **options: Any) -> None:
    outcome = crash_child(db, steps, store=store, **options)
    if outcome.returncode != -9:
        raise RuntimeError(f"the child was not killed: {outcome.returncode} {outcome.stderr}")


def _tool_cases() -> Iterator[Case]:
    spine, ev = Spine(), Events.wire()
    run = spine.run_id
    setup: list[dict[str, Any]] = [
        {"op": "open_session", "session_id": spine.session_id, "cwd": "/workspace"},
        {"op": "create_run", "header": run_header(spine)},
        {"op": "append", "run_id": run, "events": [ev.user(marker=True)]},
    ]
    t1: dict[str, Any] = {
        "op": "t1",
        "run_id": run,
        "call": ev.call("c1", "Write", {"path": "notes.txt", "content": "after"}),
        "recovery_mode": "reconcile",
        "metadata": {"expectedDigest": "sha256:" + "b" * 64},
    }
    t2: dict[str, Any] = {
        "op": "t2",
        "run_id": run,
        "response": ev.bound_response("c1", "Write", "ok"),
    }
    op = spine.operation_id("c1")
    completed: dict[str, Any] = {"op": "bundle", "run_id": run, "operation_id": op}
    completed |= ev.completed_bundle("c1", "Write", "ok")
    parked: dict[str, Any] = {"op": "bundle", "run_id": run, "operation_id": op}
    parked |= ev.parked_bundle("c1", "diverged")
    table: tuple[tuple[str, list[dict[str, Any]], bool, list[str], str], ...] = (
        ("inside_t1", [t1], True, [], "safe_replay"),
        ("after_t1", [t1], False, ["prepared"], "blocked"),
        ("inside_t2", [t1, t2], True, ["prepared"], "blocked"),
        ("after_t2", [t1, t2], False, ["outcome_committed"], "safe_replay"),
        ("inside_completed_bundle", [t1, completed], True, ["prepared"], "blocked"),
        ("after_completed_bundle", [t1, completed], False, ["recovery_completed"], "safe_replay"),
        ("inside_parked_bundle", [t1, parked], True, ["prepared"], "blocked"),
        ("after_parked_bundle", [t1, parked], False, ["recovery_parked"], "blocked"),
    )
    for name, steps, inside, states, disposition in table:

        def observe(
            db: Path, store: str | None, steps: list[dict[str, Any]] = steps, inside: bool = inside
        ) -> Any:
            _killed(db, store, [*setup, *steps], arm_inside_save=inside)
            with _reopen(db, store) as app:
                journal = [operation.state for operation in app.tool_journal.tool_operations(run)]
                plan = app.plan_resume(run)
            return {"journal": journal, "disposition": plan.disposition}

        yield "tooljournal", name, {"journal": states, "disposition": disposition}, observe


CONTINUATION_APP: dict[str, Any] = {
    "op": "app",
    "env": {"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
    "id_prefix": "child-",
    "observation": {
        "workspaceIdentity": "workspace:v1:6f1c2a4e-8b7d-4c3e-9a1f-0e2d3c4b5a69",
        "workspacePath": "/workspace",
        "backgroundOperationsSettled": True,
        "availableToolNames": ["Bash"],
    },
}


def _continuation_steps(calls: Path) -> list[dict[str, Any]]:
    spine = Spine("s1", "i1", "r1", "t1")
    ledger = LedgerBuilder(spine, prefix="r1-")
    ledger.user("fix the port")
    ledger.call("c1", "Bash", {"command": "ls"})
    ledger.response("c1", "Bash")
    ledger.terminal("failed")
    identity = CONTINUATION_APP["observation"]["workspaceIdentity"]
    patch = {"status": "failed", "updatedAt": 1001, "failureClass": "provider_error"}
    return [
        CONTINUATION_APP,
        {"op": "open_session", "session_id": "s1", "cwd": "/workspace"},
        {"op": "create_run", "header": run_header(spine, workspaceIdentity=identity)},
        {"op": "append", "run_id": "r1", "events": ledger.events},
        {"op": "update_header", "run_id": "r1", "patch": patch},
        {"op": "continue", "session_id": "s1", "calls_file": str(calls)},
    ]


def _continuation_cases() -> Iterator[Case]:
    live = {"disposition": "park", "reasons": ["continuation_started_indeterminate"]}
    table = (
        ("after_claim_committed", executor.AFTER_CLAIM_COMMITTED, live),
        ("after_run_created", executor.AFTER_RUN_CREATED, live),
        ("after_start_committed", executor.AFTER_START_COMMITTED, live),
        (
            "after_terminal_event",
            executor.AFTER_TERMINAL_EVENT,
            {"disposition": "park", "reasons": ["continuation_claim_repair_required"]},
        ),
        (
            "after_terminal_header",
            executor.AFTER_TERMINAL_HEADER,
            {"disposition": "park", "reasons": ["continuation_already_exists"]},
        ),
        (
            "inside_claim_save",
            INSIDE_SAVE_BEFORE_COMMIT,
            {"disposition": "continue", "reasons": []},
        ),
    )
    for name, failpoint, expected in table:

        def observe(db: Path, store: str | None, failpoint: str = failpoint) -> Any:
            steps = _continuation_steps(db.with_suffix(".calls"))
            _killed(db, store, steps, failpoint=(failpoint, 1, len(steps) - 1))
            parent = {**CONTINUATION_APP, "id_prefix": "parent-"}
            with open_app(store or str(db), parent) as app:
                plan = app.plan_continuation("s1")
            return {"disposition": plan.disposition, "reasons": list(plan.rejection_reasons)}

        yield "continuation", name, expected, observe


def cases(suites: tuple[str, ...], seeds: int) -> list[tuple[int, Case]]:
    found: list[tuple[int, Case]] = []
    for seed in range(seeds):
        if "phase0" in suites:
            found += [(seed, case) for case in _phase0_cases(seed)]
        if "tooljournal" in suites:
            found += [(seed, case) for case in _tool_cases()]
        if "continuation" in suites:
            found += [(seed, case) for case in _continuation_cases()]
    return found


def _run_one(workdir: Path, seed: int, case: Case, base_store: str | None) -> dict[str, Any]:
    suite, name, expected, observe = case
    db = workdir / f"{suite}-{name}-{seed}" / "runtime.sqlite"
    db.parent.mkdir(parents=True)
    try:
        with _fresh_store(base_store, f"{suite}_{name}_{seed}") as store:
            observed = observe(db, store)
    except Exception as exc:  # a harness failure is a mismatch, reported with its cause
        observed = {"error": f"{type(exc).__name__}: {exc}"}
    result = {"suite": suite, "case": name, "seed": seed, "expected": expected}
    return result | {"observed": observed, "ok": observed == expected}


@contextlib.contextmanager
def _fresh_store(base_store: str | None, label: str) -> Iterator[str | None]:
    """``None`` (the case's own SQLite file), or a fresh schema on the PostgreSQL server of
    ``base_store``, dropped afterwards so the operator's own tables are never touched."""
    if base_store is None:
        yield None
        return
    import psycopg  # the postgres extra; imported only when a PostgreSQL store is chosen

    schema = f"crash_matrix_{label}_{uuid.uuid4().hex[:8]}".lower()
    server = _server_url(base_store)
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield f"{server}{'&' if '?' in server else '?'}schema={schema}"
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _server_url(store: str) -> str:
    """``store`` without maka_es's own query settings (``schema`` and the like), which the
    driver would not accept."""
    parts = urlsplit(store)
    return urlunsplit(parts._replace(query=""))


def main(argv: list[str]) -> int:
    base_store: str | None = None
    if argv[:1] == ["--store"]:
        base_store, argv = argv[1], argv[2:]
    workdir, seeds, suites = Path(argv[0]), int(argv[1]), tuple(argv[2:]) or SUITES
    unknown = sorted(set(suites) - set(SUITES))
    if unknown:
        raise SystemExit(f"unknown suite(s) {unknown}; choose from {SUITES}")
    todo = cases(suites, seeds)
    print(json.dumps({"total": len(todo)}), flush=True)
    with ThreadPoolExecutor(max_workers=2) as pool:
        for result in pool.map(lambda item: _run_one(workdir, item[0], item[1], base_store), todo):
            print(json.dumps(result, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
