"""LangGraph: a StateGraph with an agent node and a tool node, checkpointed by ``SqliteSaver``
with ``durability="sync"`` (every superstep's checkpoint is committed before the next runs).
Two shapes: the agent with ``langgraph.prebuilt.ToolNode`` (messages, ``tools_condition``: how
LangGraph's own docs build a tool-using agent), and the minimal graph (two plain nodes over
a small dict state: the least a LangGraph host can checkpoint per tool step).

Why this shape is the like-for-like peer: the agent node's checkpoint holds the tool call (as
maka_es's T1 holds the call) and the tool node's holds the result (as T2 does), so a tool step
is two durable commits on both sides. The connection is set to ``synchronous=FULL`` like
maka_es's. Each batch is a fresh thread, so the message list never grows past one batch.
"""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from bench.core import timed


class AgentState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    steps: int


@tool
def echo(text: str) -> dict[str, Any]:
    """Echo the text back (the tool does nothing, as on the maka_es side)."""
    return {"kind": "text", "text": text}


def graph_for(saver: SqliteSaver, steps: int) -> Any:
    """agent -> tools -> agent ... until ``steps`` tool calls were made, then END."""

    def agent(state: AgentState) -> dict[str, Any]:
        n = state.get("steps", 0)
        if n >= steps:
            return {"messages": [AIMessage(content="done")]}
        call = {"name": "echo", "args": {"text": f"step {n + 1}"}, "id": f"c{n + 1}"}
        return {"messages": [AIMessage(content="", tool_calls=[call])], "steps": n + 1}

    builder = StateGraph(AgentState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([echo]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=saver)


class MinimalState(TypedDict):
    steps: int
    call: dict[str, Any]
    result: dict[str, Any]


def minimal_graph_for(saver: SqliteSaver, steps: int) -> Any:
    """call -> tool -> call ... with plain nodes: the call's checkpoint holds the call (as T1
    does), the tool's holds the result (as T2 does)."""

    def call(state: MinimalState) -> dict[str, Any]:
        n = state.get("steps", 0) + 1
        return {"steps": n, "call": {"name": "echo", "args": {"text": f"step {n}"}}}

    def run_tool(state: MinimalState) -> dict[str, Any]:
        return {"result": {"kind": "text", "text": state["call"]["args"]["text"]}}

    def more(state: MinimalState) -> str:
        return "call" if state["steps"] < steps else END

    builder = StateGraph(MinimalState)
    builder.add_node("call", call)
    builder.add_node("tool", run_tool)
    builder.add_edge(START, "call")
    builder.add_edge("call", "tool")
    builder.add_conditional_edges("tool", more, {"call": "call", END: END})
    return builder.compile(checkpointer=saver)


def open_saver(path: Path) -> tuple[sqlite3.Connection, SqliteSaver]:
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("PRAGMA synchronous=FULL")
    saver = SqliteSaver(conn)
    saver.setup()
    return conn, saver


class LangGraphPeer:
    """One saver and compiled graph; :meth:`steps` runs one batch on a fresh thread."""

    def __init__(self, path: Path, batch: int, *, minimal: bool = False) -> None:
        self.conn, self.saver = open_saver(path)
        self.batch = batch
        self.minimal = minimal
        self.graph = (minimal_graph_for if minimal else graph_for)(self.saver, batch)
        self.threads = itertools.count()

    def run_thread(self, thread_id: str) -> None:
        config = {"configurable": {"thread_id": thread_id}, "recursion_limit": 4 * self.batch + 8}
        start: dict[str, Any] = (
            {"steps": 0} if self.minimal else {"messages": [("user", "go")], "steps": 0}
        )
        self.graph.invoke(start, config, durability="sync")

    def steps(self) -> float:
        thread = f"t{next(self.threads)}"
        return timed(lambda: self.run_thread(thread)) / self.batch

    def close(self) -> None:
        self.conn.close()
