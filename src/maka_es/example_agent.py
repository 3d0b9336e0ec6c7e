"""A complete two-tool agent that survives ``kill -9`` anywhere: read a config, write a file.

Run it twice on the same folder after killing it mid-``Write``: the second start settles the
write from the file (docs/adr/0019-startup-recovery-reconciles-before-it-seals.md), never
writes it again, and continues the conversation to the model's answer. The turn runs on the
library's own agent loop, first turn and continuation alike (``run_turn`` / ``resume``,
docs/adr/0036-one-agent-loop-for-every-turn.md): the host code is ``main``, twelve lines.

    python examples/two_tool_agent.py DATA_DIR      # or: python -m maka_es.example_agent DATA_DIR

Why it ships in the package: ``maka-es demo`` runs this file in a child process, and it must
run from an installed wheel, not only from a source checkout (ADR 0040);
``examples/two_tool_agent.py`` re-exports it. It imports only the core: the model is a scripted
OpenAI Chat Completions client answering with the ``ChatCompletion`` JSON the API sends (the
provider reads the SDK object or its JSON alike), built offline; swap ``ScriptedChatClient()``
for ``openai.OpenAI()`` to use a real one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pydantic import BaseModel

from maka_es import HostConfig, OpenAIChatProvider, RuntimeApplication
from maka_es.adapters.file_write import file_write_tool, read_workspace_file
from maka_es.tooljournal.runtime import Tool, ToolContext

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
) -> dict[str, Any]:
    """The ``ChatCompletion`` JSON of step ``n``: ``openai.types.chat.ChatCompletion``
    validates it as it is (tests/test_extras.py)."""
    calls: list[dict[str, Any]] = []
    if call is not None:
        function = {"name": call[0], "arguments": json.dumps(call[1])}
        calls.append({"id": f"call_{n}", "type": "function", "function": function})
    message = {"role": "assistant", "content": content, "tool_calls": calls or None}
    finish = "tool_calls" if calls else "stop"
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
    }


class ScriptedChatClient:
    """Answers like ``openai.OpenAI().chat.completions.create``: its next step follows from the
    tool results the conversation already holds, so a restarted process picks up where it was.
    One scripted model turn asks for one tool. A Write that recovery settled as not applied
    (killed before it touched the file) is decided again: the model writes once more."""

    def __init__(self) -> None:
        self.chat = SimpleNamespace(completions=self)

    def create(self, *, messages: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        results = [m["content"] for m in messages if m["role"] == "tool"]
        step = len(results) + 1
        if not results:
            return _completion(step, None, ("ReadConfig", {"path": "config.json"}))
        if len(results) == 1 or results[-1].startswith("reconcile_not_applied"):
            port = json.loads(results[0])["port"]
            return _completion(step, None, ("Write", {"path": "port.txt", "content": f"{port}\n"}))
        return _completion(step, "Done: port.txt holds the configured port.", None)


#: The run-header fields constant for this host (the cwd is the workspace's).
HOST: dict[str, Any] = {
    "backend_kind": "ai-sdk",
    "llm_connection_slug": "main",
    "model_id": "scripted",
    "permission_mode": "ask",
}


# --- the host code: the store with its tools, then at every start recover, resume, prompt -----
def open_app(root: Path) -> RuntimeApplication:
    workspace = root / "workspace"
    tools = [read_config_tool(workspace), file_write_tool(workspace)]
    host, store = HostConfig(**HOST, cwd=str(workspace)), str(root / "agent.sqlite")
    return RuntimeApplication.open(store, tools=tools, host_config=host, safe_boundary_resume=True)


def main(root: Path) -> str:
    model = OpenAIChatProvider(ScriptedChatClient(), model="scripted")  # or openai.OpenAI()
    with open_app(root) as app:
        print("recovery:", [(r.run_id, r.kind) for r in app.recover().repairs], flush=True)
        app.open_session(SESSION)  # safe to repeat: cwd and workspace identity from the config
        resumed = app.resume(SESSION, model)  # a restart: continue the interrupted turn, or park
        print("plan:", resumed.disposition, list(resumed.reasons), *resumed.operator_commands)
        if resumed.run_id is None:  # a new session: its first turn, model -> tools -> answer
            return app.run_turn(SESSION, PROMPT, model, run_id=RUN).answer or ""
        return resumed.answer or "nothing to continue"


def start(argv: list[str]) -> None:
    """The command line: ``[DATA_DIR]`` (default ``agent-data``), its config written once."""
    data = Path(argv[0] if argv else "agent-data").resolve()
    (data / "workspace").mkdir(parents=True, exist_ok=True)
    if not (data / "workspace" / "config.json").exists():
        (data / "workspace" / "config.json").write_text('{"port": 4000}\n')
    print("answer:", main(data), flush=True)


if __name__ == "__main__":
    start(sys.argv[1:])
