"""The OpenAI Agents SDK's two-tool agent (read a file, write a file) plus an email tool, made
crash-safe with maka_es in the lines marked ``# maka_es`` (docs/integrations/openai-agents.md).

    python examples/openai_agents_agent.py DATA_DIR

Without maka_es the last line of :func:`main` would be
``return str(Runner.run_sync(agent, PROMPT, run_config=config).final_output)``; the ten lines
marked ``# maka_es`` replace it. With it, a ``kill -9`` anywhere leaves a turn
that the next start continues from its last committed step: the read runs again (it only
reads), a write that landed is settled from the file without writing again, and an email
that may have gone out is never sent again by itself: the run parks until an operator says
whether it went (``maka-es attest``), then finishes.

The model is scripted offline (the SDK's own ``agents.testing.ScriptedModel``); its next step
follows from the conversation it is sent, so a restarted process picks up where it was. A real
host passes ``model="gpt-4.1"`` (or its own ``Model``) instead.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from agents import Agent, Model, RunConfig, function_tool
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from maka_es.adapters.file_write import FileWriteReconciler  # maka_es
from maka_es.integrations.openai_agents import DurableRunner  # maka_es

PROMPT = "Copy the port from config.json into port.txt, then email ops that it is done."
ANSWER = "Done: port.txt holds the port and ops has been told."
OUTBOX = "outbox.txt"


def build_agent(workspace: Path, model: Model) -> Agent[Any]:
    """The agent, as the SDK's examples write one: plain function tools."""

    @function_tool
    def read_file(path: str) -> str:
        """Read a text file of the workspace."""
        return (workspace / path).read_text()

    @function_tool
    def write_file(path: str, content: str) -> str:
        """Write a text file of the workspace (replacing it)."""
        (workspace / path).write_text(content)
        return f"wrote {len(content.encode())} bytes to {path}"

    @function_tool
    def send_email(to: str, body: str) -> str:
        """Send an email (here: appended to the outbox)."""
        with (workspace.parent / OUTBOX).open("a") as outbox:
            outbox.write(json.dumps({"to": to, "body": body}) + "\n")
        return "sent"

    return Agent(
        name="porter",
        instructions="Do what is asked with the tools, then answer in one sentence.",
        model=model,
        tools=[read_file, write_file, send_email],
    )


def _results(call: ModelCall) -> dict[str, str]:
    items = [item for item in call.input if isinstance(item, dict)]
    return {
        str(i["call_id"]): str(i["output"]) for i in items if i["type"] == "function_call_output"
    }


def next_step(call: ModelCall) -> list[Any]:
    """The scripted model: read, write, email, answer; a step whose result says it did not
    happen (settled "not applied") is asked for again under a new call id."""
    results = _results(call)
    writes = [v for k, v in results.items() if k.startswith("call_write")]
    sends = [v for k, v in results.items() if k.startswith("call_send")]
    if "call_read" not in results:
        return [function_call("read_file", {"path": "config.json"}, call_id="call_read")]
    if not writes or not writes[-1].startswith("wrote"):
        port = json.loads(results["call_read"])["port"]
        args = {"path": "port.txt", "content": f"{port}\n"}
        return [function_call("write_file", args, call_id=f"call_write_{len(writes) + 1}")]
    if not sends or sends[-1] != "sent":
        args = {"to": "ops", "body": "port.txt is written"}
        return [function_call("send_email", args, call_id=f"call_send_{len(sends) + 1}")]
    return [assistant_message(ANSWER)]


def scripted_model() -> ScriptedModel:
    return ScriptedModel([ModelStep.respond(next_step) for _ in range(12)])


def main(root: Path, model: Model | None = None) -> str:
    workspace = root / "workspace"
    agent = build_agent(workspace, model or scripted_model())
    config = RunConfig(tracing_disabled=True)  # offline: no trace export
    with DurableRunner.open(root / "agent.sqlite", agent, session_id="s1", cwd=workspace,  # maka_es
                            recovery_modes={"read_file": "replay_safe"},  # maka_es
                            reconcilers={"write_file": FileWriteReconciler(workspace)},  # maka_es
                            run_config=config) as runner:  # maka_es  # fmt: skip
        resumed = runner.resume_sync("s1")  # maka_es: continue an interrupted turn, or park
        if resumed.status == "parked":  # maka_es
            return "parked: " + " | ".join(resumed.operator_commands)  # maka_es
        done = resumed if resumed.result else runner.run_sync("s1", PROMPT)  # maka_es
        return str(done.final_output)


if __name__ == "__main__":
    data = Path(sys.argv[1]).resolve()
    (data / "workspace").mkdir(parents=True, exist_ok=True)
    config = data / "workspace" / "config.json"
    if not config.exists():
        config.write_text('{"port": 4000}\n')
    print(main(data))
