"""Several hosts opening one PostgreSQL store at the same moment (ADR 0028).

Each opening creates the schema if missing; PostgreSQL's DDL is not safe concurrently
(``CREATE OR REPLACE FUNCTION`` -> "tuple concurrently updated", a racing ``CREATE TYPE`` or
``CREATE TABLE`` -> a catalogue unique violation), so the recorder serialises it under an
advisory lock. Threads here hold their own connection pools: the DDL really runs concurrently
on the server.
"""

from __future__ import annotations

import threading

import pytest

from maka_es.app import RuntimeApplication
from maka_es.testing.builders import Spine, run_header

HOSTS = 8


@pytest.mark.parametrize("schema_exists", [False, True], ids=["fresh", "existing"])
def test_hosts_opening_at_once_all_succeed(pg_store_url: str, schema_exists: bool) -> None:
    if schema_exists:
        RuntimeApplication.open(pg_store_url).close()
    barrier = threading.Barrier(HOSTS)
    failures: list[BaseException] = []
    opened: list[RuntimeApplication] = []
    lock = threading.Lock()

    def host() -> None:
        barrier.wait()
        try:
            app = RuntimeApplication.open(pg_store_url)
        except BaseException as exc:  # reported below, with its type
            with lock:
                failures.append(exc)
        else:
            with lock:
                opened.append(app)

    threads = [threading.Thread(target=host) for _ in range(HOSTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    try:
        assert failures == []
        assert len(opened) == HOSTS
        # the schema is whole: one host writes, another reads it
        spine = Spine()
        opened[0].open_session(spine.session_id, "/workspace")
        opened[0].ledger.create_run(run_header(spine))
        assert opened[-1].ledger.all_run_ids() == [spine.run_id]
    finally:
        for app in opened:
            app.close()
