"""A provider response through the real store and tool journal, then back out as a request.

An SDK ``ChatCompletion`` with text and two parallel calls becomes RuntimeEvents that the
ledger accepts on a real SQLite file: the step is appended whole (all calls recorded), then
each call runs through ``ToolRuntime`` (T1, the tool, T2), landing on the operation id its
event names. The stored
run then exports to requests for all three formats that the SDKs' request types accept, with
each call answered by the tool's text.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from maka_es.app import RuntimeApplication
from maka_es.providers.anthropic import anthropic_messages_request
from maka_es.providers.openai_chat import openai_chat_request, openai_chat_response
from maka_es.providers.openai_responses import openai_responses_request
from maka_es.testing.builders import LedgerBuilder, run_header
from maka_es.tooljournal.runtime import Tool, ToolContext, ToolRuntime
from tests.unit.continuation.provider_sdk import (
    ANTHROPIC_REQUEST,
    OPENAI_CHAT_REQUEST,
    OPENAI_RESPONSES_REQUEST,
    chat_completion,
    sdk_validated,
)

SPINE = {"sessionId": "s1", "invocationId": "i1", "runId": "r1", "turnId": "t1"}


class ReadArgs(BaseModel):
    path: str


def read(args: ReadArgs, context: ToolContext) -> dict[str, Any]:
    return {"kind": "text", "text": f"contents of {args.path}"}


def test_a_chat_completion_runs_through_the_journal_and_exports_to_every_format(
    store_app: RuntimeApplication,
) -> None:
    store_app.open_session("s1", "/workspace")
    store_app.ledger.create_run(run_header())
    ledger = LedgerBuilder()
    ledger.user(marker=True)
    store_app.ledger.append_events("r1", ledger.events)

    completion = chat_completion(
        "Reading both.",
        [("call_a", "Read", '{"path":"a.json"}'), ("call_b", "Read", '{"path":"b.json"}')],
    )
    events = openai_chat_response(completion).to_events(SPINE, ts=2000)
    call_events = [e for e in events if e.function_call is not None]
    store_app.ledger.append_events("r1", events)  # the whole step first: all calls are recorded
    runtime = ToolRuntime(store_app.tool_journal, [Tool("Read", ReadArgs, read)])
    results = [runtime.execute("r1", call) for call in call_events]

    assert [r.operation_id for r in results] == [
        c.refs.operation_id for c in call_events if c.refs is not None
    ]
    stored = store_app.read_run_events("r1")
    assert [e.id for e in stored if e.function_call] == [c.id for c in call_events]
    assert [op.state for op in store_app.tool_journal.tool_operations("r1")] == [
        "outcome_committed"
    ] * 2

    chat = openai_chat_request(stored, model="gpt-test")
    assert sdk_validated(OPENAI_CHAT_REQUEST, chat) == chat
    assert chat["messages"][2:] == [
        {"role": "tool", "tool_call_id": "call_a", "content": "contents of a.json"},
        {"role": "tool", "tool_call_id": "call_b", "content": "contents of b.json"},
    ]
    responses = openai_responses_request(stored, model="gpt-test")
    assert sdk_validated(OPENAI_RESPONSES_REQUEST, responses) == responses
    assert [i["output"] for i in responses["input"] if i["type"] == "function_call_output"] == [
        "contents of a.json",
        "contents of b.json",
    ]
    anthropic = anthropic_messages_request(stored, model="claude-test", max_tokens=64)
    assert sdk_validated(ANTHROPIC_REQUEST, anthropic) == anthropic
    assert [b["content"] for b in anthropic["messages"][2]["content"]] == [
        "contents of a.json",
        "contents of b.json",
    ]
