"""Phase 0 SIGKILL harness (docs/reference/phase0.md#crash-harness): for each failpoint P0-P11 a
real child process commits the failpoint's prefix through RuntimeApplication on a SQLite file, says
READY after the append returned, and is SIGKILLed. A fresh application then reads the same prefix,
plans twice (equal), gets the required decision, and the store is unchanged by planning. Every
case runs on both stores (``store_url``: SQLite file, PostgreSQL schema; ADR 0028)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.resume.failpoint_catalog import RUNTIME_RESUME_FAILPOINTS, Failpoint, harness_ledger
from maka_es.testing.builders import Spine, run_header
from maka_es.testing.crash import crash_child
from maka_es.testing.probes import store_snapshot

pytestmark = pytest.mark.crash

SPINE = Spine(
    session_id="session-1", invocation_id="invocation-run-1", run_id="run-1", turn_id="turn-run-1"
)

#: Required outcomes (docs/reference/phase0.md#required-decisions): disposition, operation statuses,
#: reasons, replay ids.
REQUIRED: dict[str, tuple[str, list[str], list[str], list[str]]] = {
    "before_function_call": ("safe_replay", [], [], ["user"]),
    "after_function_call": ("blocked", ["indeterminate"], ["dangling_tool_state"], ["user"]),
    "after_function_response": (
        "safe_replay",
        ["succeeded"],
        [],
        ["user", "call", "response"],
    ),
    "after_terminal_event": (
        "safe_replay",
        ["succeeded"],
        [],
        ["user", "call", "response", "terminal"],
    ),
}


def _setup_steps() -> list[dict[str, Any]]:
    return [
        {"op": "open_session", "session_id": SPINE.session_id, "cwd": "/workspace"},
        {"op": "create_run", "header": run_header(SPINE)},
    ]


def _ledger(prefix: str) -> list[dict[str, Any]]:
    return [event.to_wire() for event in harness_ledger(prefix, SPINE.session_id, SPINE.run_id)]


def _cases() -> list[Any]:
    """Every failpoint on both stores. Failpoints sharing a committed prefix are the same
    scenario for the store, so on PostgreSQL the first of each prefix runs in ``make test`` and
    the others under ``slow`` (``make test-deep``), to keep ``make test`` short on two cores."""
    cases: list[Any] = []
    seen: set[str] = set()
    for failpoint in RUNTIME_RESUME_FAILPOINTS:
        cases.append(pytest.param("sqlite", failpoint, id=f"sqlite-{failpoint.id}"))
        repeat = failpoint.committed_prefix in seen
        seen.add(failpoint.committed_prefix)
        marks = [pytest.mark.slow] if repeat else []
        cases.append(
            pytest.param("postgres", failpoint, id=f"postgres-{failpoint.id}", marks=marks)
        )
    return cases


@pytest.mark.parametrize(("store_url", "failpoint"), _cases(), indirect=["store_url"])
def test_sigkill_at_failpoint_leaves_the_committed_prefix(
    tmp_path: Path, store_url: str, failpoint: Failpoint
) -> None:
    db = tmp_path / "runtime.sqlite"
    ledger = _ledger(failpoint.committed_prefix)
    steps = [*_setup_steps(), {"op": "append", "run_id": SPINE.run_id, "events": ledger}]

    outcome = crash_child(db, steps, store=store_url)

    assert outcome.said == "READY", outcome.stderr
    assert outcome.returncode == -9  # SIGKILL
    assert not outcome.finally_marker_written
    with RuntimeApplication.open(store_url) as app:
        events = app.read_run_events(SPINE.run_id)
        assert [e.to_wire() for e in events] == ledger
        before = store_snapshot(app)
        first = app.plan_resume(SPINE.run_id)
        second = app.plan_resume(SPINE.run_id)
        assert first == second
        assert first.model_dump(mode="json", by_alias=True) == second.model_dump(
            mode="json", by_alias=True
        )
        disposition, statuses, reasons, replay = REQUIRED[failpoint.committed_prefix]
        assert first.disposition == disposition
        assert [op.status for op in first.operations] == statuses
        assert list(first.rejection_reasons) == reasons
        assert [e.id for e in first.replay_runtime_events] == replay
        assert first.source_runtime_event_high_water == len(ledger)
        assert first.requires_verification == (statuses == ["indeterminate"])
        assert [e.to_wire() for e in app.read_run_events(SPINE.run_id)] == ledger
        assert store_snapshot(app) == before
    # read-only opening is SQLite's (mode=ro); on PostgreSQL the snapshot check above guards it
    read_only = {"read_only": True} if store_url == str(db) else {}
    with RuntimeApplication.open(store_url, **read_only) as reader:
        assert reader.plan_resume(SPINE.run_id) == first


@pytest.mark.parametrize("prefix", ["after_function_call", "after_terminal_event"])
def test_sigkill_inside_the_transaction_leaves_nothing_of_it(
    tmp_path: Path, store_url: str, prefix: str
) -> None:
    """Rows inserted, COMMIT not reached, process killed: none of that save survives."""
    db = tmp_path / "runtime.sqlite"
    ledger = _ledger(prefix)
    steps = [
        *_setup_steps(),
        {"op": "append", "run_id": SPINE.run_id, "events": ledger[:-1]},
        {"op": "append", "run_id": SPINE.run_id, "events": ledger[-1:]},
    ]

    outcome = crash_child(db, steps, arm_inside_save=True, store=store_url)

    assert outcome.said == "INSIDE", outcome.stderr
    assert outcome.returncode == -9
    assert not outcome.finally_marker_written
    with RuntimeApplication.open(store_url) as app:
        assert [e.to_wire() for e in app.read_run_events(SPINE.run_id)] == ledger[:-1]
        # and the store is writable and consistent afterwards: the same append now commits
        app.ledger.append_events(SPINE.run_id, ledger[-1:])
        assert [e.to_wire() for e in app.read_run_events(SPINE.run_id)] == ledger
