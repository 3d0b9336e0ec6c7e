"""Run snapshots on the real stores (ADR 0032): a reopened run is restored from its snapshot
and folds only the facts after it; a snapshot that is corrupt, of another format, no longer
backed by the ledger, or from another store file is ignored, and every answer equals a full
replay of the ledger (which then writes a fresh snapshot)."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from maka_es.adapters import run_snapshots
from maka_es.adapters.run_loader import FAST_PATHS_ENV
from maka_es.adapters.run_snapshots import TABLE, RunSnapshots
from maka_es.app import RuntimeApplication
from maka_es.errors import StoreCorruptionError
from maka_es.ledger.model.run_snapshot import SNAPSHOT_FORMAT, dump_run
from maka_es.testing.builders import Events, Spine, run_header
from tests.conftest import FixedClock

EVERY = 20  # facts between snapshots in these tests (the library's default is larger)


@pytest.fixture(autouse=True)
def _small_snapshot_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("maka_es.adapters.run_snapshots.SNAPSHOT_EVERY", EVERY)


def _write_run(store: str, steps: int = 15, text: str = "done") -> None:
    """A user turn, ``steps`` finished tool steps each followed by a model text, then a T1
    without its T2 (an interrupted call)."""
    app = RuntimeApplication.open(store, clock=FixedClock())
    app.open_session("s1", "/workspace")
    app.ledger.create_run(run_header(Spine()))
    kit = Events.wire()
    app.ledger.append_events("r1", [kit.user("fix the port", event_id="u1", marker=True)])
    for i in range(steps):
        app.tool_journal.commit_tool_prepared(
            "r1", kit.call(f"c{i}", "Echo", {"n": i}, event_id=f"call{i}")
        )
        app.tool_journal.commit_tool_outcome("r1", kit.bound_response(f"c{i}", "Echo", {"n": i}))
        app.ledger.append_events("r1", [kit.text(f"{text} with c{i}", event_id=f"m{i}")])
    app.tool_journal.commit_tool_prepared("r1", kit.call("cz", "Echo", {"n": -1}, event_id="callz"))
    app.close()


def _snapshots(app: RuntimeApplication) -> RunSnapshots:
    snapshots = app._store.snapshots
    assert snapshots is not None
    return snapshots


def _answers(app: RuntimeApplication) -> tuple[Any, ...]:
    run = app.ledger.load_run("r1")
    return (
        run.version,
        run.high_water,
        run.header.to_wire(),
        run.owner,
        run.terminal_event,
        run.resolution(),
        run.tool_operations,
        app.plan_resume("r1"),
        app.read_run_events("r1"),
        app.ledger.read_run_payloads("r1"),
    )


def _full_replay(store: str) -> tuple[Any, ...]:
    # the reference: the plain loader (every fact folded, no snapshot read, ADR 0037)
    app = RuntimeApplication.open(store, clock=FixedClock(), env={FAST_PATHS_ENV: "n"})
    try:
        return _answers(app)
    finally:
        app.close()


def _reopened(store: str) -> tuple[tuple[Any, ...], int, int]:
    """The answers of a fresh application, the facts its first load folded, the version."""
    app = RuntimeApplication.open(store, clock=FixedClock())
    try:
        run = app.ledger.load_run("r1")
        folded = _snapshots(app).facts_folded_cold
        return _answers(app), folded, run.version
    finally:
        app.close()


@pytest.fixture
def store(store_url: str) -> str:
    _write_run(store_url)
    return store_url


def _sql(store: str, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run ``statement`` on the store behind the application ({t}: the snapshot table,
    {e}: the stored events table, {p}: a placeholder)."""
    if store.startswith("postgresql"):
        url = urlsplit(store)
        schema = parse_qs(url.query)["schema"][0]
        plain = url._replace(query="").geturl()
        with psycopg.connect(plain, autocommit=True) as conn:
            ((events,),) = conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s"
                " AND table_name LIKE '%%events'",
                (schema,),
            ).fetchall()
            text = statement.format(t=f"{schema}.{TABLE}", e=f"{schema}.{events}", p="%s")
            cursor = conn.execute(text.encode(), params)
            return list(cursor.fetchall()) if cursor.description else []
    text = statement.format(t=TABLE, e="stored_events", p="?")
    with sqlite3.connect(store) as conn:
        return conn.execute(text, params).fetchall()


def _row(store: str) -> tuple[Any, ...]:
    (row,) = _sql(store, "SELECT version, format, digest, body FROM {t}")
    return tuple(row)


def test_a_reopened_run_folds_only_the_facts_after_its_snapshot(store: str) -> None:
    version, fmt, _, _ = _row(store)
    answers, folded, total = _reopened(store)
    assert fmt == SNAPSHOT_FORMAT
    assert 0 < total - version <= EVERY + 3  # the last command's facts at most
    assert folded == total - version  # the tail, nothing before it
    assert answers == _full_replay(store)


def test_a_snapshot_with_a_changed_byte_is_ignored(store: str) -> None:
    _, _, digest, body = _row(store)
    changed = bytes(body).replace(b'"header"', b'"heaDer"')
    _sql(store, "UPDATE {t} SET body = {p}", (changed,))
    answers, folded, total = _reopened(store)
    assert folded == total  # a full replay
    assert answers == _full_replay(store)
    assert _row(store)[2] != digest  # and a fresh snapshot replaced it


def test_a_snapshot_of_another_format_is_ignored(store: str) -> None:
    _sql(store, "UPDATE {t} SET format = {p}", (SNAPSHOT_FORMAT - 1,))
    answers, folded, total = _reopened(store)
    assert folded == total
    assert answers == _full_replay(store)
    assert _row(store)[1] == SNAPSHOT_FORMAT


def test_a_snapshot_whose_covered_fact_changed_is_ignored(store: str) -> None:
    version = _row(store)[0]
    ((state,),) = _sql(store, "SELECT state FROM {e} WHERE originator_version = {p}", (version,))
    changed = re.sub(rb'"committed_at":(\d+)', rb'"committed_at":1\1', bytes(state))
    assert changed != bytes(state)
    _sql(store, "UPDATE {e} SET state = {p} WHERE originator_version = {p}", (changed, version))
    answers, folded, total = _reopened(store)
    assert folded == total
    assert answers == _full_replay(store)


def test_a_snapshot_whose_ledger_lost_its_covered_fact_is_ignored(store: str) -> None:
    version = _row(store)[0]
    _sql(store, "UPDATE {t} SET version = {p}", (version + 1000,))
    answers, folded, total = _reopened(store)
    assert folded == total
    assert answers == _full_replay(store)


def test_a_snapshot_carried_into_another_store_file_is_ignored(tmp_path: Path) -> None:
    first, second = str(tmp_path / "a.sqlite"), str(tmp_path / "b.sqlite")
    _write_run(first, text="first")
    _write_run(second, text="second")
    shutil.copy(first, tmp_path / "a-copy.sqlite")
    (row,) = _sql(first, "SELECT * FROM {t}")
    _sql(second, "DELETE FROM {t}")
    _sql(second, "INSERT INTO {t} VALUES (?, ?, ?, ?, ?, ?, ?)", tuple(row))
    answers, folded, total = _reopened(second)
    assert folded == total
    assert answers == _full_replay(second)
    assert all("first" not in p for p in answers[-1])


def test_a_failing_snapshot_write_fails_no_command(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tries: list[object] = []

    def refuse(*args: object) -> None:
        tries.append(args)
        raise sqlite3.OperationalError("disk I/O error (injected)")

    monkeypatch.setattr("maka_es.adapters.run_snapshots.SnapshotTable._upsert", refuse)
    _write_run(store_url)  # every command succeeds
    answers, folded, total = _reopened(store_url)
    assert folded == total  # no snapshot was stored
    assert 0 < len(tries) <= total // EVERY + 1  # a failed write is retried after EVERY facts
    assert answers == _full_replay(store_url)
    assert len(answers[-1]) == 1 + 15 * 4 + 2


def test_history_that_no_longer_matches_the_snapshot_is_a_typed_error(store: str) -> None:
    version = _row(store)[0]
    rows = _sql(store, "SELECT originator_id, state FROM {e} WHERE originator_version = 2")
    ((stream, state),) = [row for row in rows if b'"event_id":"u1"' in bytes(row[1])]
    changed = bytes(state).replace(b'"event_id":"u1"', b'"event_id":"u9"')
    changed = changed.replace(b'\\"id\\":\\"u1\\"', b'\\"id\\":\\"u9\\"')
    assert version > 2
    _sql(
        store,
        "UPDATE {e} SET state = {p} WHERE originator_version = 2 AND originator_id = {p}",
        (changed, stream),
    )
    app = RuntimeApplication.open(store, clock=FixedClock())
    try:
        run = app.ledger.load_run("r1")  # the snapshot is still verified: not this fact
        assert not run.events_in_memory
        with pytest.raises(StoreCorruptionError):
            app.read_run_events("r1")
    finally:
        app.close()
    assert _full_replay(store)[-2][0].id == "u9"  # a full replay reads the ledger's bytes


def test_a_read_only_open_never_builds_a_snapshot_it_cannot_write(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only open (CLI read commands, planning) of a run with no snapshot folds it whole
    and answers as a full replay, without dumping the run for a write the store refuses."""
    with monkeypatch.context() as during_write:
        during_write.setattr(
            "maka_es.adapters.run_snapshots.SnapshotTable._upsert",
            lambda *args: (_ for _ in ()).throw(sqlite3.OperationalError("refused (injected)")),
        )
        _write_run(store_url)  # no snapshot is stored
    dumps: list[object] = []
    real_dump = dump_run

    def spy(run: Any) -> Any:
        dumps.append(run)
        return real_dump(run)

    monkeypatch.setattr(run_snapshots, "dump_run", spy)
    with RuntimeApplication.open(store_url, read_only=True, clock=FixedClock()) as reader:
        assert _snapshots(reader).table.read_only
        answers = _answers(reader)
    assert dumps == []
    assert answers == _full_replay(store_url)
