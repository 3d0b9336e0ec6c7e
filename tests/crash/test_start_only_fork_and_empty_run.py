"""Two runs a SIGKILL used to leave parked for good, and the way on recovery now gives them
(ADR 0035), on both stores (``store_url``: SQLite file, PostgreSQL schema; ADR 0028):

* an operator's fork killed during its first model call holds only its start: the restarted
  host (same host id) ends it and the session continues from the fork's boundary; under the
  reference's rule it is left alone;
* a run killed between its creation and the append of its first user message holds nothing:
  recovery ends it, the plan says there is nothing to continue, and the host's next turn runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maka_es import HostConfig
from maka_es.app import RuntimeApplication
from maka_es.failpoints import INSIDE_SAVE_BEFORE_COMMIT
from maka_es.providers.protocol import ProviderRequest, ProviderTurn
from maka_es.recovery.startup import Repair
from maka_es.testing.builders import Events, LedgerBuilder, Spine, run_header
from maka_es.testing.crash import crash_child
from maka_es.testing.crash_child import open_app
from maka_es.testing.probes import store_snapshot
from tests.support.send_tool import Killed, send_tool

pytestmark = pytest.mark.crash

WORKSPACE = "workspace:v1:6f1c2a4e-8b7d-4c3e-9a1f-0e2d3c4b5a69"
SPINE = Spine("s1", "i1", "r1", "t1")
APP: dict[str, Any] = {
    "op": "app",
    "env": {"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
    "id_prefix": "child-",
    "observation": {
        "workspaceIdentity": WORKSPACE,
        "workspacePath": "/workspace",
        "backgroundOperationsSettled": True,
        "availableToolNames": ["Send"],
    },
}
#: ids drawn by ``fork_run``: invocation, run, turn
FORK_RUN = "child-2"
#: the source was written before the child's clock (1 000 ms): the fork is the newer run
SOURCE_CLOCK_MS = 500
CONFIG = HostConfig(
    backend_kind="fake", llm_connection_slug="fake", model_id="fake", permission_mode="ask"
)


class _Model:
    """The restarted host's model: records the history it is sent, answers one text."""

    def __init__(self) -> None:
        self.sent: list[list[dict[str, Any]]] = []

    def complete(self, request: ProviderRequest) -> ProviderTurn:
        self.sent.append(request.openai_messages())
        return ProviderTurn(outputs=({"kind": "text", "text": "done"},))


def _fresh(store: str) -> RuntimeApplication:
    """The restarted host: same host id (``local``), its own fresh ids."""
    return open_app(store, {**APP, "id_prefix": "parent-"})


def _blocked_source(store: str) -> str:
    """A run whose ``never_auto_retry`` Send died after T1, ended by recovery; its op id."""
    clock: dict[str, Any] = {"clock": lambda: SOURCE_CLOCK_MS}
    with RuntimeApplication.open(store, tools=[send_tool(dies=True)], **clock) as app:
        app.open_session("s1", "/workspace", WORKSPACE)
        header = run_header(SPINE, workspaceIdentity=WORKSPACE, createdAt=500, updatedAt=500)
        app.ledger.create_run(header)
        ledger = LedgerBuilder(SPINE)
        ledger.user("send the report")
        app.ledger.append_events("r1", ledger.events)
        with pytest.raises(Killed):
            app.tool_runtime.execute("r1", ledger.call("c1", "Send", {"to": "ops"}))
    with RuntimeApplication.open(store, **clock) as app:
        app.recover()
        assert app.plan_resume("r1").disposition == "blocked"
    return SPINE.operation_id("c1")


def _kill_fork_in_its_model_call(tmp_path: Path, store: str) -> Path:
    """A child forks ``r1`` before its uncertain call and is SIGKILLed while the fork's
    provider answers its first call; the provider-calls file."""
    operation = _blocked_source(store)
    calls = tmp_path / "provider-calls.txt"
    steps = [
        APP,
        {"op": "fork", "run_id": "r1", "before_operation": operation, "actor": "alice"},
        {
            "op": "execute_fork",
            "fork_run_id": FORK_RUN,
            "calls_file": str(calls),
            "hang_in_provider": True,
        },
    ]
    outcome = crash_child(tmp_path / "runtime.sqlite", steps, store=store)
    assert outcome.said == "INSIDE", outcome.stderr
    assert outcome.returncode == -9
    assert not outcome.finally_marker_written
    assert [line.split()[1] for line in calls.read_text().splitlines()] == [FORK_RUN]
    return calls


def test_a_fork_killed_in_its_first_model_call_is_ended_and_continued(
    tmp_path: Path, store_url: str
) -> None:
    _kill_fork_in_its_model_call(tmp_path, store_url)

    with _fresh(store_url) as app:
        [start] = app.read_run_events(FORK_RUN)
        assert start.actions is not None
        assert start.actions.continuation_start is not None
        claim_id = start.actions.continuation_start.claim_id
        assert app.run_forks.provenance(claim_id) is not None  # an operator fork
        report = app.recover()
        detail = {"recoveryReason": "run_interrupted", "lastEventType": "run_started"}
        assert report.repairs == (
            Repair(FORK_RUN, "start_only_ended", {**detail, "claimId": claim_id}),
        )
        assert app.get_run_header(FORK_RUN).status == "failed"
        assert [e.id for e in app.read_run_events(FORK_RUN)][1:] == [
            f"{FORK_RUN}-recovered-terminal"
        ]

        plan = app.plan_continuation("s1")
        assert plan.disposition == "continue", plan.rejection_reasons
        assert plan.continuation is not None
        assert plan.continuation.source_run_id == FORK_RUN
        model = _Model()
        assert app.execute_continuation(plan, model).status == "completed"
        # the kept prefix only: the user message once, never the abandoned call
        assert model.sent == [[{"role": "user", "content": "send the report"}]]
        assert app.plan_continuation("s1").rejection_reasons == ("continuation_already_exists",)


def test_a_killed_fork_is_left_alone_under_the_reference_rule(
    tmp_path: Path, store_url: str
) -> None:
    _kill_fork_in_its_model_call(tmp_path, store_url)

    with _fresh(store_url) as app:
        before = store_snapshot(app).rows
        report = app.recover(end_start_only_continuations=False)
        assert [(r.run_id, r.kind) for r in report.repairs] == [(FORK_RUN, "left_live_start")]
        assert store_snapshot(app).rows == before
        assert app.get_run_header(FORK_RUN).status == "running"


def test_a_run_killed_before_its_first_user_message_is_ended_and_the_next_turn_runs(
    tmp_path: Path, store_url: str
) -> None:
    user = Events.wire(SPINE, ts=1000).user("fix the port", event_id="u1", marker=True)
    steps = [
        APP,
        {"op": "open_session", "session_id": "s1", "cwd": "/workspace"},
        {"op": "create_run", "header": run_header(SPINE, workspaceIdentity=WORKSPACE)},
        {"op": "append", "run_id": "r1", "events": [user]},
    ]
    # killed inside the append's transaction: the run exists and holds nothing
    outcome = crash_child(
        tmp_path / "runtime.sqlite",
        steps,
        failpoint=(INSIDE_SAVE_BEFORE_COMMIT, 1, 3),
        store=store_url,
    )
    assert (outcome.said, outcome.returncode) == ("INSIDE", -9), outcome.stderr

    with _fresh(store_url) as app:
        assert app.read_run_events("r1") == []
        report = app.recover()
        assert report.repairs == (
            Repair("r1", "terminal_recovered", {"recoveryReason": "run_interrupted"}),
        )
        assert [e.id for e in app.read_run_events("r1")] == ["r1-recovered-terminal"]
        plan = app.plan_continuation("s1")
        assert plan.rejection_reasons == ("resume_candidate_missing",)
        assert [d.detail for d in plan.diagnostics] == [{"sourceRunId": "r1"}]

        # the host's next turn starts fresh and runs to its end
        spine = Spine("s1", "i2", "r2", "t2")
        app.start_run("s1", run_id="r2", invocation_id="i2", turn_id="t2", config=CONFIG)
        turn = LedgerBuilder(spine, prefix="r2-")
        turn.user("fix the port")
        turn.text("fixed")
        app.ledger.append_events("r2", turn.events)
        app.end_run("r2", turn.terminal("completed"))
        assert app.get_run_header("r2").status == "completed"
        assert app.recover().repairs == ()
        assert app.plan_continuation("s1").rejection_reasons == ("resume_candidate_missing",)
