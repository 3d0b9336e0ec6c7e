"""SIGKILL inside startup recovery's claim repair, between the repair start and the repair
terminal (docs/reference/continuation.md#claim-repair; ADR 0012: every repair converges).

The parent leaves what a two-step claimer leaves when it dies (a claim, the source sealed,
maybe the target run ``created``, no start). A real child runs startup recovery and is
SIGKILLed right after the ``claim_repair`` start is committed. A fresh application then runs
recovery again: it must write the same deterministic
``continuation_abandoned_before_provider_dispatch`` terminal, with the same id, so the store
ends exactly as an uninterrupted repair leaves it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.continuation.claims import ContinuationTarget
from maka_es.failpoints import AFTER_CLAIM_REPAIR_START
from maka_es.recovery.startup import repair_id
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.crash import crash_child
from maka_es.testing.crash_child import open_app
from maka_es.testing.probes import leave_unstarted_claim, store_snapshot

pytestmark = pytest.mark.crash

WORKSPACE = "workspace:v1:6f1c2a4e-8b7d-4c3e-9a1f-0e2d3c4b5a69"
ABANDONED = "continuation_abandoned_before_provider_dispatch"
APP: dict[str, Any] = {
    "op": "app",
    "env": {"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
    "id_prefix": "child-",
    "observation": {
        "workspaceIdentity": WORKSPACE,
        "workspacePath": "/workspace",
        "backgroundOperationsSettled": True,
        "availableToolNames": ["Bash"],
    },
}
TARGET = ContinuationTarget("ti", "tr", "tt")
CLAIMED_AT = 5000


def _open(db: Path) -> RuntimeApplication:
    return open_app(str(db), {**APP, "id_prefix": "parent-"})


def _leave_unstarted_claim(db: Path, *, create_target: bool) -> str:
    """A failed source and a claim on it whose target never started; returns the claim id."""
    with _open(db) as app:
        app.open_session("s1", "/workspace")
        app.ledger.create_run(run_header(Spine(), workspaceIdentity=WORKSPACE))
        ledger = LedgerBuilder(Spine(), prefix="r1-")
        ledger.user()
        ledger.terminal("failed")
        app.ledger.append_events("r1", ledger.events)
        app.ledger.update_run_header("r1", {"status": "failed", "failureClass": "provider_error"})
        claim = leave_unstarted_claim(
            app, "s1", "r1", TARGET, claimed_at=CLAIMED_AT, create_target=create_target
        )
        return claim.claim_id


@pytest.mark.parametrize("create_target", [False, True], ids=["claim_only", "target_created"])
def test_kill_between_repair_start_and_terminal_converges(
    tmp_path: Path, create_target: bool
) -> None:
    db = tmp_path / "runtime.sqlite"
    claim_id = _leave_unstarted_claim(db, create_target=create_target)
    outcome = crash_child(
        db, [APP, {"op": "startup_recover"}], failpoint=(AFTER_CLAIM_REPAIR_START, 1, 1)
    )
    assert outcome.said == "INSIDE", outcome.stderr
    assert outcome.returncode == -9
    assert not outcome.finally_marker_written

    with _open(db) as app:
        [start] = app.read_run_events("tr")  # the repair start survived, nothing else
        assert start.id == repair_id("start", claim_id)
        assert app.get_run_header("tr").status == "created"

        report = app.recover()

        assert [(r.run_id, r.kind) for r in report.repairs] == [("tr", "claim_repaired")]
        events = app.read_run_events("tr")
        assert [e.id for e in events] == [
            repair_id("start", claim_id),
            repair_id("terminal", claim_id),
        ]
        terminal = events[-1]
        assert terminal.ts == CLAIMED_AT + 1
        assert terminal.actions is not None
        assert terminal.actions.state_delta == {
            "recovered": True,
            "recoveryReason": ABANDONED,
            "failureClass": ABANDONED,
        }
        header = app.get_run_header("tr")
        assert (header.status, header.failure_class) == ("failed", ABANDONED)
        assert app.plan_continuation("s1", "r1").rejection_reasons == (
            "continuation_already_exists",
        )
        after = store_snapshot(app).rows
        assert app.recover().repairs == ()
        assert store_snapshot(app).rows == after
        repaired_payloads = app.ledger.read_run_payloads("tr")
        repaired_header = header.to_wire()

    control = tmp_path / "control.sqlite"
    _leave_unstarted_claim(control, create_target=create_target)
    with _open(control) as app:
        app.recover()  # uninterrupted
        assert app.ledger.read_run_payloads("tr") == repaired_payloads
        assert app.get_run_header("tr").to_wire() == repaired_header


def test_another_hosts_interrupted_repair_is_taken_over_then_finished(tmp_path: Path) -> None:
    """host-a dies inside its claim repair; once its lease expired, host-b takes the repaired
    target over before it writes the terminal (not fenced ``run_owner_fenced``; ADR 0035)."""
    db = tmp_path / "runtime.sqlite"
    claim_id = _leave_unstarted_claim(db, create_target=False)
    host_a = {**APP, "env": {**APP["env"], "MAKA_HOST_ID": "host-a"}}
    outcome = crash_child(
        db, [host_a, {"op": "startup_recover"}], failpoint=(AFTER_CLAIM_REPAIR_START, 1, 1)
    )
    assert (outcome.said, outcome.returncode) == ("INSIDE", -9), outcome.stderr

    later = {"clock": lambda: 100_000.0, "env": {**APP["env"], "MAKA_HOST_ID": "host-b"}}
    with RuntimeApplication.open(str(db), **later) as app:
        assert app._store.load_run("tr").owner is not None
        report = app.recover()
        assert [(r.run_id, r.kind) for r in report.repairs] == [
            ("tr", "owner_taken_over"),
            ("tr", "claim_repaired"),
        ]
        assert report.repairs[0].detail == {"previousHostId": "host-a", "epoch": 2}
        assert [e.id for e in app.read_run_events("tr")] == [
            repair_id("start", claim_id),
            repair_id("terminal", claim_id),
        ]
        assert app.get_run_header("tr").status == "failed"
        assert app.recover().repairs == ()
