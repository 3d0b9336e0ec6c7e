"""What the Pydantic AI integration tests share: an application for a durable agent, a
scripted ``FunctionModel`` that keeps every request it received, and the checks on them.

Why a script keyed on the conversation: after a restart the model is asked again with the
replayed history, so its next answer must follow from what the conversation holds (how many
tool results), never from a counter in the crashed process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from maka_es import HostConfig, RuntimeApplication
from maka_es.integrations.pydantic_ai import DurableAgent

Step = Callable[[list[ModelMessage]], ModelResponse]


class Killed(BaseException):
    """Stands for SIGKILL: nothing after this point runs, no code of maka_es catches it."""


class SavesApp(RuntimeApplication):
    """An application that keeps every save, as the event ids it committed."""

    saves: list[list[str]]

    def on_events_committed(self, run_id: str, events: Sequence[Any]) -> None:
        self.__dict__.setdefault("saves", []).append([event.id for event in events])


def open_app(store: str, durable: DurableAgent[Any], workspace: Path, **kw: Any) -> SavesApp:
    """The host's application at every start: the agent's tools, the host config."""
    host = HostConfig(
        backend_kind="ai-sdk",
        llm_connection_slug="main",
        model_id="function",
        permission_mode="ask",
        cwd=str(workspace),
    )
    app = SavesApp.open(
        store, tools=durable.tools, host_config=host, safe_boundary_resume=True, **kw
    )
    assert isinstance(app, SavesApp)
    return app


def results_in(messages: Sequence[ModelMessage]) -> int:
    """How many tool results (returns and retry prompts) the conversation holds."""
    return sum(
        isinstance(part, ToolReturnPart | RetryPromptPart) and part.tool_call_id is not None
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
    )


class ScriptedModel:
    """A ``FunctionModel`` whose answer ``n`` is ``steps[n]`` where ``n`` is the number of
    tool results so far; every request it received is kept in :attr:`requests`."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self.steps = list(steps)
        self.requests: list[list[ModelMessage]] = []
        self.model = FunctionModel(self._answer)

    def _answer(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append(list(messages))
        return self.steps[min(results_in(messages), len(self.steps) - 1)](messages)


def prompts_of(messages: Sequence[ModelMessage]) -> list[str]:
    return [
        str(part.content)
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart)
    ]


def system_prompts_of(messages: Sequence[ModelMessage]) -> list[str]:
    return [
        part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, SystemPromptPart)
    ]


def dangling_calls(messages: Sequence[ModelMessage]) -> list[str]:
    """Call ids of the request that no later tool result answers (must be none)."""
    answered = {
        part.tool_call_id
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart | RetryPromptPart)
    }
    return [
        part.tool_call_id
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart) and part.tool_call_id not in answered
    ]


def assert_clean_requests(
    requests: Sequence[Sequence[ModelMessage]], prompts: Sequence[str]
) -> None:
    """Every request the model received: each prompt exactly once, in order, the system
    prompt once at the start, and no call without its result."""
    for messages in requests:
        assert prompts_of(messages) == list(prompts[: len(prompts_of(messages))])
        assert len(set(prompts_of(messages))) == len(prompts_of(messages))
        assert dangling_calls(messages) == []
        assert len(system_prompts_of(messages)) <= 1
