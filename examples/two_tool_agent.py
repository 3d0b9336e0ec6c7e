"""A complete two-tool agent that survives ``kill -9`` anywhere: read a config, write a file.

Run it twice on the same folder after killing it mid-``Write``: the second start settles the
write from the file (docs/adr/0019-startup-recovery-reconciles-before-it-seals.md), never
writes it again, and continues the conversation to the model's answer.

    python examples/two_tool_agent.py DATA_DIR

The model is a scripted OpenAI Chat Completions model (real ``openai.types.chat.ChatCompletion``
objects, built offline); swap ``ScriptedChatModel`` for ``openai.OpenAI()`` to use a real one.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from openai.types.chat import ChatCompletion
from pydantic import BaseModel

from maka_es import RuntimeApplication
from maka_es.adapters.file_write import file_write_tool, read_workspace_file
from maka_es.adapters.local_host import LocalHostInspector
from maka_es.adapters.workspace_marker import resolve_workspace_identity
from maka_es.builders import Events, Spine, run_header
from maka_es.continuation.provider import ProviderRequest, ProviderTurn
from maka_es.continuation.provider_openai_chat import openai_chat_request, openai_chat_response
from maka_es.tooljournal.runtime import Tool, ToolContext
from maka_es.wire.events import TextContent

SESSION, RUN, PROMPT = "s1", "r1", "write the port from config.json into port.txt"


class ReadArgs(BaseModel):
    path: str


def read_config_tool(workspace: Path) -> Tool[ReadArgs]:
    """``ReadConfig``: reads a workspace file; safe to run again after a crash."""

    def run(args: ReadArgs, context: ToolContext) -> dict[str, Any]:
        data = read_workspace_file(workspace, args.path) or b""
        return {"kind": "text", "text": data.decode("utf-8")}

    return Tool("ReadConfig", ReadArgs, run, recovery_mode="replay_safe")


def _completion(
    n: int, content: str | None, call: tuple[str, dict[str, Any]] | None
) -> ChatCompletion:
    calls: list[dict[str, Any]] = []
    if call is not None:
        function = {"name": call[0], "arguments": json.dumps(call[1])}
        calls.append({"id": f"call_{n}", "type": "function", "function": function})
    message = {"role": "assistant", "content": content, "tool_calls": calls or None}
    finish = "tool_calls" if calls else "stop"
    return ChatCompletion.model_validate(
        {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": 0,
            "model": "scripted",
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
        }
    )


class ScriptedChatModel:
    """Answers like ``client.chat.completions.create``: its next step follows from the tool
    results the conversation already holds, so a restarted process picks up where it was. A
    Write that recovery settled as not applied (killed before it touched the file) is decided
    again: the model writes once more."""

    def create(self, *, messages: list[dict[str, Any]], **_: Any) -> ChatCompletion:
        results = [m["content"] for m in messages if m["role"] == "tool"]
        step = len(results) + 1
        if not results:
            return _completion(step, None, ("ReadConfig", {"path": "config.json"}))
        if len(results) == 1 or results[-1].startswith("reconcile_not_applied"):
            port = json.loads(results[0])["port"]
            return _completion(step, None, ("Write", {"path": "port.txt", "content": f"{port}\n"}))
        return _completion(step, "Done: port.txt holds the configured port.", None)

    def complete(self, request: ProviderRequest) -> ProviderTurn:
        """The same model as a continuation ``Provider`` (the library's agent loop drives it)."""
        step = openai_chat_response(self.create(messages=request.openai_messages()))
        return ProviderTurn(step.outputs, step.stop_reason)


def open_app(root: Path) -> tuple[RuntimeApplication, Path]:
    """The store with the host's tool catalogue (given at every start)."""
    workspace = root / "workspace"
    tools: list[Tool[Any]] = [read_config_tool(workspace), file_write_tool(workspace)]
    app = RuntimeApplication.open_sqlite(
        str(root / "agent.sqlite"),
        tools=tools,
        env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
        host_inspector=LocalHostInspector(tool_names=[t.name for t in tools]),
    )
    return app, workspace


def now() -> int:
    """Milliseconds since the epoch: the events' ``ts``."""
    return int(time.time() * 1000)


def answer(app: RuntimeApplication, run_id: str) -> str:
    """The model's last text of the run: its answer."""
    texts = [e.content for e in app.read_run_events(run_id) if e.role == "model"]
    return next(str(c.text) for c in reversed(texts) if isinstance(c, TextContent))


# --- the host loop: the order is the safe one --------------------------------------------
def main(root: Path) -> str:
    app, workspace = open_app(root)
    model = ScriptedChatModel()
    with app:
        print("recovery:", [(r.run_id, r.kind) for r in app.recover().repairs], flush=True)
        app.open_session(SESSION, cwd=str(workspace))  # safe to repeat
        if app.run_exists(RUN):  # a restart: continue the run
            plan = app.plan_continuation(SESSION)
            print("plan:", plan.disposition, list(plan.rejection_reasons), flush=True)
            if plan.continuation is None:
                return "nothing to continue"
            run = app.execute_continuation(plan, model).target_run_id  # model -> T1 -> tool -> T2
            return answer(app, run)
        spine = Spine(session_id=SESSION, invocation_id="i1", run_id=RUN, turn_id="t1")
        identity = resolve_workspace_identity(workspace).identity
        app.create_run(run_header(spine, cwd=str(workspace), workspaceIdentity=identity))
        app.append_event(RUN, Events.wire(spine, ts=now()).user("u1", PROMPT, marker=True))
        while True:  # model -> T1 -> tool -> T2 -> model
            request = openai_chat_request(app.read_run_events(RUN), model="scripted")
            step = openai_chat_response(model.create(**request))
            events = step.to_events(spine.identity, ts=now())
            app.append_events(RUN, [e for e in events if e.function_call is None])
            if not step.tool_calls:
                app.end_run(RUN, Events.wire(spine, ts=now()).terminal("end", "completed"))
                return answer(app, RUN)
            for call in (e for e in events if e.function_call is not None):
                app.tool_runtime.execute(RUN, call)


if __name__ == "__main__":
    data = Path(sys.argv[1] if len(sys.argv) > 1 else "agent-data").resolve()
    (data / "workspace").mkdir(parents=True, exist_ok=True)
    if not (data / "workspace" / "config.json").exists():
        (data / "workspace" / "config.json").write_text('{"port": 4000}\n')
    print("answer:", main(data), flush=True)
