"""The fast loader and the plain loader side by side, on generated ledgers (ADR 0037).

Why shared: the equivalence tests of the fast paths (own writes, verified snapshot plus tail,
trusted reload) all ask the same question: on the same stored bytes, and for the same next
command, does the application with its fast paths on answer and decide exactly as the plain
loader (``MAKA_ES_FAST_PATHS=n``) does? This module builds the stores, the generated steps, the
answers seen through the public surface, and the outcome of each next command.
"""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import strategies as st

from maka_es.adapters.run_loader import FAST_PATHS_ENV
from maka_es.app import RuntimeApplication
from maka_es.errors import MakaError
from maka_es.ledger.model.facts import run_stream_id
from maka_es.testing.builders import Events, Spine, run_header

__all__ = [
    "PLAIN",
    "Pair",
    "NEXT_STEPS",
    "answers",
    "assert_same_as_plain",
    "apply",
    "fresh_store",
    "open_app",
    "stored_rows",
    "steps",
]

#: The application environment of the plain loader: every fast path off.
PLAIN = {FAST_PATHS_ENV: "n"}
RUN = "r1"
SESSION = "s1"
NOW = 1_700_000_000_000.0

#: A generated step: what the host does next (``reopen``: both sides restart cold).
Step = tuple[Any, ...]

_numbers = st.sampled_from([0, 1, 1.0, 0.5, -3, 2**53 + 2])  # 1.0 and 2**53+2 are not plain
_step = st.one_of(
    st.tuples(st.just("user"), st.integers(0, 3)),
    st.tuples(st.just("text"), st.integers(0, 5)),
    st.tuples(st.just("call"), st.integers(0, 3), _numbers),
    st.tuples(st.just("outcome"), st.integers(0, 3), _numbers),
    st.tuples(st.just("end"), st.sampled_from(["failed", "cancelled", "completed"])),
    st.tuples(st.just("reopen")),
)
#: A ledger as the steps that build it (duplicates, unknown calls and writes after the end
#: are drawn too: their refusals are next decisions to compare).
steps = st.lists(_step, min_size=1, max_size=24)


@contextmanager
def fresh_store(kind: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """An empty store of ``kind``: a new SQLite file, or a new PostgreSQL schema."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as root:
            yield str(Path(root) / "ledger.sqlite")
        return
    server: str = request.getfixturevalue("pg_server_url")
    schema = f"lp_{uuid.uuid4().hex[:20]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    joiner = "&" if "?" in server else "?"
    try:
        yield f"{server}{joiner}schema={schema}"
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _ids() -> Callable[[], str]:
    counter = iter(range(1, 1 << 62))
    return lambda: f"id{next(counter):06d}"


def open_app(store: str, *, fast: bool) -> RuntimeApplication:
    """An application on ``store`` with a constant clock and its own counted ids."""
    return RuntimeApplication.open(
        store, clock=lambda: NOW, id_factory=_ids(), env=None if fast else PLAIN
    )


@dataclass
class Pair:
    """The two sides: the fast loader on one store, the plain loader on its twin."""

    fast_store: str
    plain_store: str
    fast: RuntimeApplication = field(init=False)
    plain: RuntimeApplication = field(init=False)

    def __post_init__(self) -> None:
        self.fast = open_app(self.fast_store, fast=True)
        self.plain = open_app(self.plain_store, fast=False)
        for app in (self.fast, self.plain):
            app.open_session(SESSION, "/workspace")
            app.ledger.create_run(run_header(Spine()))
            app.ledger.append_events(
                RUN, [Events.wire().user("go", event_id="u-first", marker=True)]
            )

    def reopen(self) -> None:
        self.close()
        self.fast = open_app(self.fast_store, fast=True)
        self.plain = open_app(self.plain_store, fast=False)

    def close(self) -> None:
        self.fast.close()
        self.plain.close()


def apply(app: RuntimeApplication, step: Step) -> object:
    """Run ``step`` on ``app``: what it returned, or the refusal's class, code and detail."""
    kit = Events.wire()
    kind = step[0]
    try:
        if kind == "user":
            return app.ledger.append_events(
                RUN, [kit.user(f"ask {step[1]}", event_id=f"u{step[1]}")]
            )
        if kind == "text":
            return app.ledger.append_events(
                RUN, [kit.text(f"say {step[1]}", event_id=f"m{step[1]}")]
            )
        if kind == "call":
            call = kit.call(f"c{step[1]}", "Echo", {"n": step[2]}, event_id=f"e{step[1]}")
            return app.tool_journal.commit_tool_prepared(RUN, call)
        if kind == "outcome":
            outcome = kit.bound_response(f"c{step[1]}", "Echo", {"n": step[2]})
            return app.tool_journal.commit_tool_outcome(RUN, outcome)
        assert kind == "end"
        return app.end_run(RUN, kit.terminal(step[1], event_id="t-end"))
    except MakaError as exc:
        return type(exc).__name__, exc.code, exc.detail


def answers(app: RuntimeApplication) -> tuple[Any, ...]:
    """What a host sees of the run: the events (as JSON text that tells 1 from 1.0), the
    stored payloads, the header, the tool operations and the resolver's decisions, the
    Phase 0 plan and the continuation plan."""
    return (
        [json.dumps(e.to_wire(), sort_keys=True) for e in app.read_run_events(RUN)],
        app.ledger.read_run_payloads(RUN),
        app.get_run_header(RUN),
        app.tool_journal.tool_operations(RUN),
        app.tool_journal.resolve_run(RUN),
        app.plan_resume(RUN),
        app.plan_continuation(SESSION, RUN),
    )


def stored_rows(app: RuntimeApplication) -> list[tuple[int, str, bytes]]:
    """The run stream's stored rows (version, topic, bytes), as the recorder holds them."""
    stored = app._es.recorder.select_events(run_stream_id(RUN))
    return [(s.originator_version, s.topic, bytes(s.state)) for s in stored]


#: Next commands every converted check compares: a new call, a duplicate call id, an outcome
#: of no call, a model text and a failed end (each accepted or refused, on both sides alike).
NEXT_STEPS: tuple[Step, ...] = (
    ("call", 2, 0.5),
    ("call", 2, 1),
    ("outcome", 3, 0),
    ("text", 9),
    ("end", "failed"),
)


def assert_same_as_plain(pair: Pair, next_steps: tuple[Step, ...] = NEXT_STEPS) -> None:
    """The fast side answers as the plain side, and as the plain loader reading the fast
    side's own bytes; then both take ``next_steps`` and decide each one alike."""
    warm = answers(pair.fast)
    assert warm == answers(pair.plain)
    assert stored_rows(pair.fast) == stored_rows(pair.plain)
    reader = open_app(pair.fast_store, fast=False)
    try:
        assert answers(reader) == warm
    finally:
        reader.close()
    for step in next_steps:
        assert apply(pair.fast, step) == apply(pair.plain, step), step
    assert answers(pair.fast) == answers(pair.plain)
