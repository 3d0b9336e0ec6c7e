"""Workload (h): the tool step on PostgreSQL, only when ``MAKA_ES_BENCH_PG`` names a database
(``postgresql://user:password@host:port/dbname``).

maka_es runs on eventsourcing's PostgreSQL environment (``PERSISTENCE_MODULE`` and the
``POSTGRES_*`` keys); the raw floor is psycopg committing the same rows in the same number of
transactions. Without the variable, or when the store cannot be opened, the workload is
skipped with the reason printed (the table then has no PostgreSQL rows).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from bench.core import Config, Figure, Stats, Target, interleave, ratios, timed
from bench.floor import Row
from bench.stores import ECHO, start_run, tool_steps
from bench.w_tool_step import step_rows
from maka_es import RuntimeApplication

GROUP = "7. tool step on PostgreSQL"
URL_VAR = "MAKA_ES_BENCH_PG"


def postgres_env(url: str) -> dict[str, str]:
    parts = urlparse(url)
    return {
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "POSTGRES_DBNAME": parts.path.lstrip("/"),
        "POSTGRES_HOST": parts.hostname or "localhost",
        "POSTGRES_PORT": str(parts.port or 5432),
        "POSTGRES_USER": parts.username or "",
        "POSTGRES_PASSWORD": parts.password or "",
    }


def _maka(app: RuntimeApplication, batch: int) -> Callable[[], float]:
    count = [0]

    def run() -> float:
        count[0] += 1
        step_run = start_run(app, f"pg-{os.getpid()}-{count[0]}")
        return timed(lambda: tool_steps(app, step_run, 1, batch)) / batch

    return run


def _floor(conn: Any, commits: list[list[Row]], batch: int) -> Callable[[], float]:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS bench_floor (id BIGSERIAL PRIMARY KEY, "
        "originator_id TEXT, topic TEXT, state BYTEA)"
    )
    conn.commit()

    def step() -> None:
        for rows in commits:
            with conn.transaction():
                for originator, _, topic, state in rows:
                    conn.execute(
                        "INSERT INTO bench_floor (originator_id, topic, state) VALUES (%s, %s, %s)",
                        (originator, topic, state),
                    )

    def steps() -> None:
        for _ in range(batch):
            step()

    return lambda: timed(steps) / batch


def run(cfg: Config) -> list[Figure]:
    url = os.environ.get(URL_VAR)
    if not url:
        print(f"postgres: skipped ({URL_VAR} is not set)")
        return []
    try:
        import psycopg

        app = RuntimeApplication(env=postgres_env(url), tools=[ECHO])
        conn = psycopg.connect(url, autocommit=True)
    except Exception as exc:  # the reason is the report: any failure to open skips the rows
        print(f"postgres: skipped (the store could not be opened: {type(exc).__name__}: {exc})")
        return []
    commits = step_rows(Path(cfg.workdir) / "pg-probe")
    s = interleave(
        {"maka_es": _maka(app, cfg.step_batch), "floor": _floor(conn, commits, cfg.step_batch)},
        cfg.reps,
    )
    app.close()
    conn.close()
    return [
        Figure(
            GROUP,
            "maka_es per step (PostgreSQL)",
            Stats.of(s["maka_es"]).scaled(1e3),
            "ms",
            "same run",
        ),
        Figure(
            GROUP,
            "maka_es / raw psycopg floor (same commits, same bytes)",
            ratios(s["maka_es"], s["floor"]),
            "x",
            f"floor {Stats.of(s['floor']).median * 1e3:.3f} ms",
            Target("<=", 1.5),
        ),
    ]
