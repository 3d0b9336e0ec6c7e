"""Phase 1 on the one application a host already has (docs/reference/continuation.md#plan):
``safe_boundary_resume=True`` and a host config give it the feature flag, the workspace
identity and a ``LocalHostInspector`` over its own tool catalogue; no second application."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from maka_es import HostConfig
from maka_es.adapters.workspace import LocalHostInspector
from maka_es.app import RuntimeApplication
from maka_es.providers.protocol import ProviderTurn, ScriptedProvider
from maka_es.testing.builders import LedgerBuilder, Spine
from maka_es.tooljournal.runtime import Tool, ToolContext


class Command(BaseModel):
    command: str


def _bash(args: Command, context: ToolContext) -> Any:
    return {"kind": "text", "text": "ok"}


def open_host(db: str, workspace: Path, **kwargs: Any) -> RuntimeApplication:
    config = HostConfig(
        backend_kind="ai-sdk",
        llm_connection_slug="main",
        model_id="m",
        permission_mode="ask",
        cwd=str(workspace),
    )
    return RuntimeApplication.open(
        db, tools=[Tool("Bash", Command, _bash)], host_config=config, **kwargs
    )


def failed_turn(app: RuntimeApplication) -> None:
    header = app.start_run("s1", run_id="r1", invocation_id="i1", turn_id="t1")
    spine = Spine(session_id="s1", invocation_id="i1", run_id="r1", turn_id="t1")
    ledger = LedgerBuilder(spine, prefix="r1-")
    ledger.user("fix the port")
    ledger.call("c1", "Bash", {"command": "ls"})
    ledger.response("c1", "Bash")
    ledger.terminal("failed")
    app.ledger.append_events(header.run_id, ledger.events)
    app.ledger.update_run_header("r1", {"status": "failed", "failureClass": "provider_error"})


def test_one_app_plans_and_executes_a_continuation(store_url: str, tmp_path: Path) -> None:
    app = open_host(store_url, tmp_path, safe_boundary_resume=True)
    assert isinstance(app.host_inspector, LocalHostInspector)
    app.open_session("s1")
    failed_turn(app)

    plan = app.plan_continuation("s1")
    assert (plan.disposition, plan.rejection_reasons) == ("continue", ())
    provider = ScriptedProvider([ProviderTurn(outputs=({"kind": "text", "text": "done"},))])
    outcome = app.execute_continuation(plan, provider)

    assert outcome.status == "completed"
    assert app.get_run_header(outcome.target_run_id).status == "completed"
    assert app.plan_continuation("s1", "r1").rejection_reasons == ("continuation_already_exists",)
    app.close()


def test_the_flag_on_the_app_wins_over_the_environment(store_url: str, tmp_path: Path) -> None:
    app = open_host(
        store_url,
        tmp_path,
        env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
        safe_boundary_resume=False,
    )
    app.open_session("s1")
    failed_turn(app)
    assert app.plan_continuation("s1").rejection_reasons == ("resume_feature_disabled",)
    app.close()
    unset = open_host(store_url, tmp_path)
    assert unset.plan_continuation("s1").rejection_reasons == ("resume_feature_disabled",)
    unset.close()
    enabled = open_host(store_url, tmp_path, safe_boundary_resume=True)
    assert enabled.plan_continuation("s1").disposition == "continue"
    enabled.close()
