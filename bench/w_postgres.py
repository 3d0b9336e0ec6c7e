"""Target 7: the tool step on PostgreSQL, only when ``MAKA_ES_BENCH_PG`` names a database
(``postgresql://user:password@host:port/dbname``).

maka_es runs on eventsourcing's PostgreSQL environment (``PERSISTENCE_MODULE`` and the
``POSTGRES_*`` keys); the raw floor is psycopg committing the same rows in the same number of
transactions. Both are long-lived child processes, interleaved in rounds (bench/rounds.py).
Without the variable, or when the store cannot be opened, the workload is skipped with the
reason printed (the table then has no PostgreSQL rows).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from urllib.parse import urlparse

from bench.child import Child
from bench.contenders import save_commits
from bench.core import Config, Figure, Stats, Target
from bench.rounds import costs, run_rounds, within
from bench.w_tool_step import step_rows

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


def run(cfg: Config) -> list[Figure]:
    url = os.environ.get(URL_VAR)
    if not url:
        print(f"postgres: skipped ({URL_VAR} is not set)")
        return []
    try:
        import psycopg

        psycopg.connect(url).close()
    except Exception as exc:  # the reason is the report: any failure to open skips the rows
        print(f"postgres: skipped (the store could not be opened: {type(exc).__name__}: {exc})")
        return []
    folder = Path(cfg.workdir) / "pg-probe"
    rows = folder / "rows.json"
    folder.mkdir(parents=True, exist_ok=True)
    save_commits(rows, step_rows(folder))
    tag = f"{os.getpid()}-{time.time_ns()}"
    children = {
        "maka_es": Child("maka_pg", url=url, batch=cfg.step_batch, tag=tag),
        "floor": Child("psycopg_floor", url=url, batch=cfg.step_batch, rows=str(rows)),
    }
    try:
        for child in children.values():
            child.batch()  # warm
        rounds = run_rounds(
            {k: c.batch for k, c in children.items()}, cfg.reps, budget_s=cfg.budget_s / 2
        )
    finally:
        for child in children.values():
            child.close()
    return [
        Figure(
            GROUP,
            "maka_es per step (PostgreSQL)",
            Stats.of(costs(rounds, "maka_es")).scaled(1e3),
            "ms",
            "same rounds",
        ),
        Figure(
            GROUP,
            "maka_es / raw psycopg floor (same commits, same bytes)",
            Stats.of(within(rounds, "maka_es", "floor")),
            "x",
            f"floor {Stats.of(costs(rounds, 'floor')).median * 1e3:.3f} ms",
            Target("<=", 1.5),
        ),
    ]
