"""Ready-made providers over the model SDKs' own clients (ADR 0036).

Why: a host should hand ``run_turn`` / ``resume`` its SDK client and a model name, never
convert formats itself. Each provider turns a :class:`ProviderRequest` into the API's create
parameters with the format adapters (``openai_chat``, ``openai_responses``,
``anthropic``), calls the client, and reads the answer back into a
:class:`ProviderTurn`:

* :class:`OpenAIChatProvider` / :class:`AsyncOpenAIChatProvider`: ``client.chat.completions
  .create`` (``openai.OpenAI()`` / ``openai.AsyncOpenAI()``, or any OpenAI-compatible server);
* :class:`OpenAIResponsesProvider` / :class:`AsyncOpenAIResponsesProvider`:
  ``client.responses.create``;
* :class:`AnthropicMessagesProvider` / :class:`AsyncAnthropicMessagesProvider`:
  ``client.messages.create`` (``anthropic.Anthropic()`` / ``anthropic.AsyncAnthropic()``).

The client is duck-typed: this module never imports an SDK, so the core imports without the
``providers`` extra. The tools offered are the request's (the agent loop fills them from the
application's catalogue) unless the provider was built with its own ``tools``; the system
prompt is the request's, else the provider's. The request's session ``history`` (ADR 0038)
goes first, before its replay context, in every format. ``options`` are passed to every
create call as given (``temperature``, ``max_tokens`` for chat, ``store=False`` for
responses, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from maka_es.providers.anthropic import (
    anthropic_messages_request,
    anthropic_messages_response,
)
from maka_es.providers.formats import ModelResponse, ToolSpec
from maka_es.providers.openai_chat import openai_chat_request, openai_chat_response
from maka_es.providers.openai_responses import (
    openai_responses_request,
    openai_responses_response,
)
from maka_es.providers.protocol import ProviderRequest, ProviderTurn
from maka_es.tooljournal.model.tools import Tool

__all__ = [
    "AnthropicMessagesProvider",
    "AsyncAnthropicMessagesProvider",
    "AsyncOpenAIChatProvider",
    "AsyncOpenAIResponsesProvider",
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
]


def _turn(step: ModelResponse) -> ProviderTurn:
    return ProviderTurn(step.outputs, step.stop_reason)


class _SdkProvider:
    """What every SDK provider holds (the client, the model, the defaults, the options) and
    how it builds its create parameters: its format's request adapter over ``request``'s
    history, replay, prompt and tools, then the options as given."""

    #: the format's request adapter (``openai_chat_request``, ...)
    request_format: Callable[..., dict[str, Any]]

    def __init__(
        self,
        client: Any,
        *,
        model: str,
        system_prompt: str | None = None,
        tools: Sequence[ToolSpec | Tool[Any]] | None = None,
        **options: Any,
    ) -> None:
        self.client = client
        self.model = model
        self.system_prompt = system_prompt
        self.tools = None if tools is None else tuple(tools)
        self.options = options

    def format_options(self) -> dict[str, Any]:
        """What the format's request adapter needs beyond the request (none by default)."""
        return {}

    def create_params(self, request: ProviderRequest) -> dict[str, Any]:
        """The API's create parameters of ``request`` (the whole input every call)."""
        params = type(self).request_format(
            request.replay_context,
            model=self.model,
            system_prompt=request.system_prompt or self.system_prompt,
            tools=request.tools if self.tools is None else self.tools,
            history=request.history,
            **self.format_options(),
        )
        return {**params, **self.options}


class _OpenAIChat(_SdkProvider):
    request_format = staticmethod(openai_chat_request)


class OpenAIChatProvider(_OpenAIChat):
    """A provider over ``openai.OpenAI()`` (Chat Completions)."""

    def complete(self, request: ProviderRequest) -> ProviderTurn:
        response = self.client.chat.completions.create(**self.create_params(request))
        return _turn(openai_chat_response(response))


class AsyncOpenAIChatProvider(_OpenAIChat):
    """A provider over ``openai.AsyncOpenAI()`` (Chat Completions); ``complete`` is awaited."""

    async def complete(self, request: ProviderRequest) -> ProviderTurn:
        response = await self.client.chat.completions.create(**self.create_params(request))
        return _turn(openai_chat_response(response))


class _OpenAIResponses(_SdkProvider):
    request_format = staticmethod(openai_responses_request)


class OpenAIResponsesProvider(_OpenAIResponses):
    """A provider over ``openai.OpenAI()`` (the Responses API)."""

    def complete(self, request: ProviderRequest) -> ProviderTurn:
        response = self.client.responses.create(**self.create_params(request))
        return _turn(openai_responses_response(response))


class AsyncOpenAIResponsesProvider(_OpenAIResponses):
    """A provider over ``openai.AsyncOpenAI()`` (the Responses API); ``complete`` is awaited."""

    async def complete(self, request: ProviderRequest) -> ProviderTurn:
        response = await self.client.responses.create(**self.create_params(request))
        return _turn(openai_responses_response(response))


class _AnthropicMessages(_SdkProvider):
    request_format = staticmethod(anthropic_messages_request)

    def __init__(self, client: Any, *, model: str, max_tokens: int = 4096, **kwargs: Any) -> None:
        super().__init__(client, model=model, **kwargs)
        self.max_tokens = max_tokens

    def format_options(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens}


class AnthropicMessagesProvider(_AnthropicMessages):
    """A provider over ``anthropic.Anthropic()`` (Messages; ``max_tokens`` default 4096)."""

    def complete(self, request: ProviderRequest) -> ProviderTurn:
        message = self.client.messages.create(**self.create_params(request))
        return _turn(anthropic_messages_response(message))


class AsyncAnthropicMessagesProvider(_AnthropicMessages):
    """A provider over ``anthropic.AsyncAnthropic()``; ``complete`` is awaited."""

    async def complete(self, request: ProviderRequest) -> ProviderTurn:
        message = await self.client.messages.create(**self.create_params(request))
        return _turn(anthropic_messages_response(message))
