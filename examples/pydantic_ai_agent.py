"""Pydantic AI's own two-tool agent (read a file, write a file), plus ``send_email``, a tool
that must never run twice, made crash-safe by maka_es (docs/integrations/pydantic-ai.md).

The agent, its tools and its prompt are plain Pydantic AI. maka_es adds 10 lines, marked
``# maka_es`` (the ``DurableAgent`` call spans three), and changes one (``# changed``, which
was ``answer = agent.run_sync(PROMPT).output``): each model answer is recorded, each tool
call journaled (T1 before the tool, T2 after), and a restart after ``kill -9`` continues the
interrupted turn from what was committed: the write is settled from the file, the read re-run,
and a mail that may or may not have left parks the run until an operator says what happened
(``maka-es attest``). The model is scripted offline (``scripted_model``); a real host passes
its own, e.g. ``OpenAIChatModel("gpt-4.1")``.

    python examples/pydantic_ai_agent.py DATA_DIR   # DATA_DIR/workspace/config.txt holds a port
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from maka_es.integrations.pydantic_ai import DurableAgent, ToolPolicy  # maka_es

PROMPT = "Copy the port from config.txt into port.txt, then email ops that it is done."
SESSION = "s1"


def build_agent(workspace: Path, model: Model) -> Agent[None, str]:
    """The agent as Pydantic AI's docs would write it."""
    agent = Agent(model, system_prompt="You are a careful ops agent.")

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a text file of the workspace."""
        return (workspace / path).read_text()

    @agent.tool_plain
    def write_file(path: str, content: str) -> str:
        """Write a text file of the workspace."""
        (workspace / path).write_text(content)
        return f"wrote {path}"

    @agent.tool_plain
    def send_email(to: str, body: str) -> str:
        """Send an email (here: a line in the outbox)."""
        with (workspace / "outbox.txt").open("a") as outbox:
            outbox.write(f"{to}: {body}\n")
        return "sent"

    return agent


def scripted_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The offline model: its next step follows from the tool results the conversation holds
    (read, write, mail, answer), so a restarted process picks up where it was."""
    done: dict[str, list[ToolReturnPart]] = {}
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    done.setdefault(part.tool_name, []).append(part)

    def ok(tool: str) -> ToolReturnPart | None:
        return next((p for p in done.get(tool, []) if p.outcome == "success"), None)

    def call(tool: str, **args: str) -> ModelResponse:
        call_id = f"call_{tool}_{len(done.get(tool, [])) + 1}"
        return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id=call_id)])

    read = ok("read_file")
    if read is None:
        return call("read_file", path="config.txt")
    port = str(read.content).strip()
    if ok("write_file") is None:
        return call("write_file", path="port.txt", content=f"{port}\n")
    if ok("send_email") is None:
        return call("send_email", to="ops", body=f"port.txt holds {port}")
    return ModelResponse(parts=[TextPart(f"Done: port.txt holds {port} and ops was told.")])


async def scripted_stream(
    messages: list[ModelMessage], info: AgentInfo
) -> AsyncIterator[str | DeltaToolCalls]:
    """The same answers, streamed (``run_stream``, ``iter``)."""
    for index, part in enumerate(scripted_answer(messages, info).parts):
        if isinstance(part, TextPart):
            yield part.content
        elif isinstance(part, ToolCallPart):
            args, call_id = part.args_as_json_str(), part.tool_call_id
            yield {index: DeltaToolCall(part.tool_name, args, tool_call_id=call_id)}


def scripted_model() -> FunctionModel:
    return FunctionModel(scripted_answer, stream_function=scripted_stream, model_name="scripted")


def main(root: Path, model: Model | None = None) -> str:
    workspace = root / "workspace"
    agent = build_agent(workspace, model or scripted_model())
    durable = DurableAgent(  # maka_es: send_email stays never_auto_retry (the default)
        agent, tools={"read_file": "replay_safe", "write_file": ToolPolicy.file_write(workspace)}
    )  # maka_es
    with durable.open(str(root / "agent.sqlite"), cwd=workspace) as app:  # maka_es
        app.recover()  # maka_es: settle what a crash left, before anything else
        app.open_session(SESSION)  # maka_es
        resumed = durable.resume_sync(app, SESSION)  # maka_es: an interrupted turn goes on
        if resumed.status == "parked":  # maka_es: the mail may or may not have left
            return "parked: " + " | ".join(resumed.resume.operator_commands)  # maka_es
        answer = resumed.output or durable.run_sync(app, SESSION, PROMPT).output  # changed
        return f"answer: {answer}"


if __name__ == "__main__":
    print(main(Path(sys.argv[1]).resolve()))
