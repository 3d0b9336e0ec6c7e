"""The contenders a long-lived child process runs (``bench/child.py``), one batch per request.

Each contender is built once in its child (its application, connection, saver or DBOS launch
stays open, as a host's would) and answers ``batch()`` with its samples in seconds: one per
step where a step can be timed alone (maka_es, the floors), else the batch's time over its
steps (LangGraph, DBOS run a batch as one graph invocation or one workflow). The peers are
imported only by their own constructors, so the harness loads without them.
"""

from __future__ import annotations

import base64
import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from bench.floor import RawFloor, Row


class Contender(Protocol):
    """``batch()`` returns wall-clock samples; a contender whose batch is one sample for
    many steps says how many in ``units`` (the child divides the batch's CPU time by it)."""

    def batch(self) -> list[float]: ...

    def close(self) -> None: ...


def save_commits(path: Path, commits: list[list[Row]]) -> None:
    """The rows of one tool step's commits, as JSON a child can read back (bytes in base64)."""
    data = [[[o, v, t, base64.b64encode(s).decode()] for o, v, t, s in rows] for rows in commits]
    path.write_text(json.dumps(data))


def load_commits(path: Path) -> list[list[Row]]:
    data = json.loads(path.read_text())
    return [[(o, int(v), t, base64.b64decode(s)) for o, v, t, s in rows] for rows in data]


def per_step(
    count: int, step: Callable[[int], object], cpu: list[float] | None = None
) -> list[float]:
    """Wall seconds of each of ``count`` calls of ``step(n)``; with ``cpu``, the calling
    thread's CPU seconds of each call are appended to it (``time.thread_time``)."""
    out: list[float] = []
    for n in range(count):
        begun = time.thread_time()
        start = time.perf_counter()
        step(n)
        out.append(time.perf_counter() - start)
        if cpu is not None:
            cpu.append(time.thread_time() - begun)
    return out


class MakaSteps:
    """maka_es tool steps through ``ToolRuntime.execute`` (T1 -> tool -> T2), the way a host
    writes them. ``run_id`` None: a fresh run per batch, with ``prefill`` untimed steps first
    (a short run of about ``3 * prefill`` events); else steps continue that existing run from
    step ``first`` (a long run of a fixture). ``cpu_steps`` holds the last batch's CPU time
    of each step (the calling thread's: a snapshot written off the command path is not in it,
    one written inside the command is)."""

    def __init__(
        self,
        path: str,
        batch: int,
        run_id: str | None = None,
        first: int = 1,
        prefill: int = 0,
    ) -> None:
        from bench.stores import open_app

        self.app = open_app(Path(path))
        self.batch_size, self.run_id, self.next, self.prefill = (
            batch,
            run_id,
            first,
            prefill,
        )
        self.runs = itertools.count()

    def batch(self) -> list[float]:
        from bench.stores import spine, start_run, tool_call, tool_steps

        if self.run_id is None:
            run = start_run(self.app, f"run-{next(self.runs)}")
            tool_steps(self.app, run, 1, self.prefill)
            first = self.prefill + 1
        else:
            run, first = spine(self.run_id), self.next
            self.next += self.batch_size
        runtime = self.app.tool_runtime
        self.cpu_steps: list[float] = []
        return per_step(
            self.batch_size,
            lambda n: runtime.execute(run.run_id, tool_call(run, first + n)),
            self.cpu_steps,
        )

    def close(self) -> None:
        self.app.close()


class Floor:
    """The raw sqlite3 floor: the probed rows committed again, same bytes, same commits."""

    def __init__(self, path: str, batch: int, rows: str) -> None:
        self.floor = RawFloor(Path(path))
        self.commits = load_commits(Path(rows))
        self.batch_size = batch

    def batch(self) -> list[float]:
        return per_step(self.batch_size, lambda n: self.floor.step(self.commits))

    def close(self) -> None:
        self.floor.close()


class Journal:
    """The minimal Python journal of the same durability (bench/journal.py)."""

    def __init__(self, path: str, batch: int) -> None:
        from bench.journal import MinimalJournal

        self.journal = MinimalJournal(Path(path))
        self.batch_size = batch
        self.runs = itertools.count()

    def batch(self) -> list[float]:
        from bench.stores import spine, tool_call

        run = spine(f"run-{next(self.runs)}")
        return per_step(
            self.batch_size,
            lambda n: self.journal.execute(run.run_id, tool_call(run, n + 1)),
        )

    def close(self) -> None:
        self.journal.close()


class LangGraph:
    """LangGraph on ``SqliteSaver``: the agent with a ``ToolNode``, or the minimal graph."""

    def __init__(self, path: str, batch: int, minimal: bool = False) -> None:
        from bench.peers_langgraph import LangGraphPeer

        self.peer = LangGraphPeer(Path(path), batch, minimal=minimal)
        self.units = batch

    def batch(self) -> list[float]:
        return [self.peer.steps()]

    def close(self) -> None:
        self.peer.close()


class Dbos:
    """DBOS: one workflow of ``batch`` steps on its SQLite system database."""

    def __init__(self, path: str, batch: int) -> None:
        from bench.peers_dbos import DbosPeer

        self.peer = DbosPeer(Path(path), batch)
        self.units = batch

    def batch(self) -> list[float]:
        return [self.peer.steps()]

    def close(self) -> None:
        self.peer.close()


class AgentTurns:
    """``run_turn`` with a scripted model asking ``steps`` tool calls then answering: each
    sample is one agent-loop step (provider call to provider call: record the model turn, T1,
    tool, T2, build the next request), in order, so sample ``k`` runs on ``1 + 3k`` events."""

    def __init__(self, path: str, steps: int) -> None:
        from bench.stores import SESSION, open_app
        from maka_es import HostConfig

        host = HostConfig(
            backend_kind="fake",
            llm_connection_slug="bench",
            model_id="m",
            permission_mode="ask",
        )
        self.app = open_app(Path(path), host_config=host)
        self.steps = steps
        self.turns = itertools.count()
        workspace = Path(path).parent / "workspace"
        workspace.mkdir(exist_ok=True)
        self.app.open_session(SESSION, str(workspace))

    def batch(self) -> list[float]:
        from bench.agent import TimedProvider
        from bench.stores import SESSION

        provider = TimedProvider(self.steps)
        turn = next(self.turns)
        result = self.app.run_turn(
            SESSION,
            "go",
            provider,
            run_id=f"turn-{turn}",
            step_limit=self.steps + 2,
            history_turns=0,
        )
        if result.status != "completed" or result.tool_calls != self.steps:
            raise RuntimeError(f"the bench turn did not run its tool steps: {result}")
        self.cpu_steps = provider.cpu_intervals()
        return provider.intervals()

    def close(self) -> None:
        self.app.close()


class Reopen:
    """The first command of a fresh application on a fresh copy of a stored run: a new tool
    step (``event`` None) or the exact retry of ``event``, an event the run already holds.
    Each batch copies the store again, so no batch finds a snapshot an earlier one wrote."""

    def __init__(
        self,
        source: str,
        scratch: str,
        run_id: str,
        event: dict[str, Any] | None = None,
    ) -> None:
        self.source, self.scratch = Path(source), Path(scratch)
        self.run_id, self.event = run_id, event
        self.count = itertools.count(10**7)

    def batch(self) -> list[float]:
        import shutil

        from bench.stores import open_app, spine, tool_call

        shutil.rmtree(self.scratch, ignore_errors=True)
        self.scratch.mkdir(parents=True)
        for item in self.source.parent.glob(f"{self.source.name}*"):
            shutil.copy(item, self.scratch / item.name)
        app = open_app(self.scratch / self.source.name)
        try:
            if self.event is None:
                call = tool_call(spine(self.run_id), next(self.count))
                return per_step(1, lambda n: app.tool_runtime.execute(self.run_id, call))
            event = self.event
            return per_step(1, lambda n: app.ledger.append_event(self.run_id, event))
        finally:
            app.close()

    def close(self) -> None:
        import shutil

        shutil.rmtree(self.scratch, ignore_errors=True)


class MakaPostgres(MakaSteps):
    """maka_es tool steps on PostgreSQL (eventsourcing's environment keys from ``url``)."""

    def __init__(self, url: str, batch: int, tag: str) -> None:
        from bench.stores import ECHO
        from bench.w_postgres import postgres_env
        from maka_es import RuntimeApplication

        self.app = RuntimeApplication(env=postgres_env(url), tools=[ECHO])
        self.batch_size, self.run_id, self.next, self.prefill = batch, None, 1, 0
        self.runs = itertools.count()
        self.tag = tag

    def batch(self) -> list[float]:
        from bench.stores import start_run, tool_call

        run = start_run(self.app, f"pg-{self.tag}-{next(self.runs)}")
        runtime = self.app.tool_runtime
        return per_step(
            self.batch_size,
            lambda n: runtime.execute(run.run_id, tool_call(run, n + 1)),
        )


class PsycopgFloor:
    """Raw psycopg committing the probed rows, same bytes, in the same transactions."""

    def __init__(self, url: str, batch: int, rows: str) -> None:
        import psycopg

        self.conn = psycopg.connect(url, autocommit=True)
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS bench_floor (id BIGSERIAL PRIMARY KEY, "
            "originator_id TEXT, topic TEXT, state BYTEA)"
        )
        self.commits = load_commits(Path(rows))
        self.batch_size = batch

    def _step(self) -> None:
        for rows in self.commits:
            with self.conn.transaction(), self.conn.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO bench_floor (originator_id, topic, state) VALUES (%s, %s, %s)",
                    [(o, t, state) for o, _, t, state in rows],
                )

    def batch(self) -> list[float]:
        return per_step(self.batch_size, lambda n: self._step())

    def close(self) -> None:
        self.conn.close()


KINDS: dict[str, Callable[..., Contender]] = {
    "maka_pg": MakaPostgres,
    "psycopg_floor": PsycopgFloor,
    "reopen": Reopen,
    "maka": MakaSteps,
    "floor": Floor,
    "journal": Journal,
    "langgraph": LangGraph,
    "dbos": Dbos,
    "agent": AgentTurns,
}


def build(kind: str, params: dict[str, Any]) -> Contender:
    return KINDS[kind](**params)
