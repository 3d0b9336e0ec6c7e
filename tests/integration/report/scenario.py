"""A real store with the three lineage shapes a report must show, on a real SQLite file.

``r1`` crashed inside a ``never_auto_retry`` Send (T1 committed, no T2), was sealed failed by
startup recovery, and so holds an indeterminate operation; an operator forked it before that
call; the fork ran (calling Send again, T1 then T2) and completed; the fork was then continued.
Its first user message is hostile markup: the report must show it as text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.continuation.host import HostObservation, StaticHostInspector
from maka_es.providers.protocol import ProviderTurn, ScriptedProvider
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from tests.support.old_recovery import seal_like_old_recovery
from tests.support.send_tool import Killed, send_tool

NOW = 1_700_000_000_000
LATER = NOW + 60_000
IDENTITY = "workspace:v1:3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"
HOSTILE = (
    "</pre></details><script>window.__pwned = 1</script>"
    '<img src=x onerror="window.__pwned = 2"> "quoted" & done'
)
#: What the fork's Send (to ops) returns.
SENT_TO_OPS = {"kind": "text", "text": "sent to ops"}
SPINE = Spine(run_id="r1", invocation_id="i-r1", turn_id="t-r1")
OBSERVATION = HostObservation(
    workspace_identity=IDENTITY,
    background_operations_settled=True,
    available_tool_names=("Send",),
)


def _ids() -> Any:
    counter = iter(range(1, 1000))
    return lambda: f"id-{next(counter)}"


def open_app(db: Path, clock_ms: int = LATER, **kwargs: Any) -> RuntimeApplication:
    """The application as a reader (and the continuing host) opens it: fixed clock and ids,
    the safe-boundary flag on, a static host inspector: so two readers see the same plans."""
    return RuntimeApplication.open_sqlite(
        str(db),
        clock=lambda: clock_ms,
        id_factory=_ids(),
        env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
        host_inspector=StaticHostInspector(OBSERVATION),
        **kwargs,
    )


@dataclass(frozen=True)
class Store:
    db: Path
    crashed_run_id: str
    indeterminate_operation_id: str
    fork_run_id: str
    continuation_run_id: str


def _crash(db: Path) -> str:
    with open_app(db, NOW, tools=[send_tool(dies=True)]) as app:
        app.open_session("s1", "/workspace", IDENTITY)
        app.ledger.create_run(run_header(SPINE, workspaceIdentity=IDENTITY))
        ledger = LedgerBuilder(SPINE)
        ledger.user(HOSTILE, marker=True)
        ledger.text("sending the report to ops")
        app.ledger.append_events("r1", ledger.events)
        with pytest.raises(Killed):
            app.tool_runtime.execute("r1", ledger.call("c1", "Send", {"to": "ops"}))
    with open_app(db, NOW + 1) as app:
        # sealed as recovery did before ADR 0019's amendment (a store an older version
        # recovered): its way on is the fork below
        seal_like_old_recovery(app, "r1")
        assert app.get_run_header("r1").status == "failed"
    return SPINE.operation_id("c1")


def build_store(db: Path) -> Store:
    """Crash, recover, fork, run the fork (one tool call), continue the fork."""
    operation = _crash(db)
    with open_app(db, tools=[send_tool(dies=False, result=SENT_TO_OPS)]) as app:
        fork = app.fork_run("r1", before_operation=operation, actor="alice", note="not sent?")
        call = {"kind": "function_call", "id": "c2", "name": "Send", "args": {"to": "ops"}}
        provider = ScriptedProvider(
            [
                ProviderTurn(outputs=({"kind": "text", "text": "sending once more"}, call)),
                ProviderTurn(outputs=({"kind": "text", "text": "sent, done"},)),
            ]
        )
        assert app.execute_fork(fork.fork_run_id, provider).status == "completed"
        plan = app.plan_continuation("s1", fork.fork_run_id)
        assert plan.continuation is not None, plan.rejection_reasons
        follow = ScriptedProvider([ProviderTurn(outputs=({"kind": "text", "text": "all good"},))])
        outcome = app.execute_continuation(plan, follow)
        assert outcome.status == "completed"
        continuation_run_id = plan.continuation.run_id
    return Store(db, "r1", operation, fork.fork_run_id, continuation_run_id)
