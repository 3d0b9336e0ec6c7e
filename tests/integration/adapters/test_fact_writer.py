"""ADR 0033: a command's facts reach the SQLite file through one ``BEGIN IMMEDIATE``, one
``executemany`` and one ``COMMIT``, with every guarantee of the generic eventsourcing path.

Real SQLite files throughout. The generic path (``Application.save``, the recorder's per-row
inserts) is what tests and older code still use for direct saves, so it is the reference the
writer's rows are compared with, byte for byte and rowid for rowid."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from maka_es import failpoints
from maka_es.adapters.fact_rows import SqliteFactWriter
from maka_es.adapters.sqlite import FailpointSQLiteApplicationRecorder
from maka_es.app import RuntimeApplication
from maka_es.errors import ConcurrentWriteError, StoreUnavailableError
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.tooljournal.runtime import Tool, ToolContext, ToolRuntime

Rows = list[tuple[Any, ...]]


class Echo(BaseModel):
    text: str


def _echo(args: Echo, context: ToolContext) -> dict[str, Any]:
    return {"kind": "text", "text": args.text}


class _Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> float:
        self.now += 1
        return self.now


def _open(path: Path | str) -> RuntimeApplication:
    return RuntimeApplication.open(str(path), clock=_Clock(), host_id="host-a")


def _rows(path: Path) -> Rows:
    with sqlite3.connect(path) as db:
        return db.execute(
            "SELECT rowid, originator_id, originator_version, topic, state "
            "FROM stored_events ORDER BY rowid"
        ).fetchall()


def _drive(app: RuntimeApplication) -> None:
    """One of each write a host makes: session, run, events (plain, non-plain, non-ASCII),
    two tool steps, a T1 with tool metadata and the end of the run (event and header)."""
    app.open_session("s1", "/workspace")
    app.ledger.create_run(run_header())
    ledger = LedgerBuilder()
    ledger.user("héllo ✓", marker=True)
    ledger.text("plain text")
    app.ledger.append_events("r1", ledger.events)
    runtime = ToolRuntime(app.tool_journal, [Tool("Echo", Echo, _echo)], monotonic=lambda: 0.0)
    runtime.execute("r1", ledger.call("c1", "Echo", {"text": "c1"}))
    not_plain = {"text": "c2", "n": 1.0, "big": 1e300, "ключ": "значение"}
    runtime.execute("r1", ledger.call("c2", "Echo", not_plain))
    app.tool_journal.commit_tool_prepared(
        "r1", ledger.call("c3", "Echo", {"text": "c3"}), metadata={"digest": "sha256:00"}
    )
    app.tool_journal.commit_tool_outcome("r1", ledger.bound_response("c3", "Echo", {"text": "c3"}))
    app.end_run("r1", ledger.terminal())


@pytest.fixture
def generic_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Rows:
    """The rows of :func:`_drive` written by eventsourcing's generic save path."""
    path = tmp_path / "generic.sqlite"
    app = _open(path)
    monkeypatch.setattr(app._store, "_write", app._store._save)
    try:
        _drive(app)
    finally:
        app.close()
    return _rows(path)


def test_rows_are_byte_identical_to_the_generic_path(tmp_path: Path, generic_rows: Rows) -> None:
    path = tmp_path / "writer.sqlite"
    app = _open(path)
    try:
        _drive(app)
    finally:
        app.close()
    assert _rows(path) == generic_rows
    assert len(generic_rows) > 10


def test_rows_written_by_either_path_read_back_the_same(tmp_path: Path, generic_rows: Rows) -> None:
    path = tmp_path / "writer.sqlite"
    with _open(path) as app:
        _drive(app)
    with _open(tmp_path / "generic.sqlite") as generic, _open(path) as written:
        assert written.ledger.read_run_payloads("r1") == generic.ledger.read_run_payloads("r1")
        assert written.tool_journal.tool_operations("r1") == generic.tool_journal.tool_operations(
            "r1"
        )
        assert written.get_run_header("r1") == generic.get_run_header("r1")
        notes = written._es.recorder.select_notifications(start=1, limit=1000)
        assert [(n.id, n.topic, bytes(n.state)) for n in notes] == [
            (row[0], row[3], row[4]) for row in generic_rows
        ]


class _CountingCursor(sqlite3.Cursor):
    """Counts what the writer sends to SQLite (``cursor_factory`` probe)."""

    log: ClassVar[list[str]] = []

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        self.log.append(sql.split()[0] + (" " + sql.split()[1] if " " in sql else ""))
        return super().execute(sql, *args)

    def executemany(self, sql: str, rows: Any) -> sqlite3.Cursor:  # type: ignore[override]
        rows = list(rows)
        self.log.append(f"executemany {sql.split()[0]} x{len(rows)}")
        return super().executemany(sql, rows)


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    log: list[str] = []
    monkeypatch.setattr(_CountingCursor, "log", log)
    monkeypatch.setattr(SqliteFactWriter, "cursor_factory", _CountingCursor)
    return log


@pytest.fixture
def app(tmp_path: Path) -> Iterator[RuntimeApplication]:
    application = _open(tmp_path / "runtime.sqlite")
    application.open_session("s1", "/workspace")
    application.ledger.create_run(run_header())
    yield application
    application.close()


def _ledger(app: RuntimeApplication) -> LedgerBuilder:
    ledger = LedgerBuilder()
    ledger.user(marker=True)
    app.ledger.append_events("r1", ledger.events)
    return ledger


def test_one_executemany_per_command(app: RuntimeApplication, statements: list[str]) -> None:
    ledger = _ledger(app)
    statements.clear()
    ToolRuntime(app.tool_journal, [Tool("Echo", Echo, _echo)]).execute(
        "r1", ledger.call("c1", "Echo", {"text": "c1"})
    )
    one_commit = ["BEGIN IMMEDIATE", "PRAGMA data_version;", "COMMIT"]
    t1 = ["BEGIN IMMEDIATE", "executemany INSERT x2", "PRAGMA data_version;", "COMMIT"]
    t2 = ["BEGIN IMMEDIATE", "executemany INSERT x1", "PRAGMA data_version;", "COMMIT"]
    assert statements == t1 + t2
    assert [s for s in statements if s not in one_commit] == [t1[1], t2[1]]


def _refused_and_unchanged(
    app: RuntimeApplication, path: Path, error: type[Exception], ledger: LedgerBuilder
) -> Exception:
    before = _rows(path)
    with pytest.raises(error) as info:
        app.ledger.append_events("r1", [ledger.text("refused")])
    assert _rows(path) == before
    return info.value


def test_a_failpoint_before_commit_leaves_nothing_written(
    app: RuntimeApplication, tmp_path: Path
) -> None:
    ledger = _ledger(app)

    def fail(name: str) -> None:
        raise RuntimeError(f"crash at {name}")

    failpoints.arm(failpoints.INSIDE_SAVE_BEFORE_COMMIT, fail)
    try:
        _refused_and_unchanged(app, tmp_path / "runtime.sqlite", RuntimeError, ledger)
    finally:
        failpoints.disarm()
    app.ledger.append_events("r1", [ledger.text("after the refusal")])  # the connection is clean
    assert app.ledger.run_high_water("r1") == 2


def test_a_concurrent_writer_is_refused_as_a_lost_race(
    app: RuntimeApplication, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second application commits to the run between this writer's load and its commit:
    the store's uniqueness refuses the stale version, classified ``concurrent_write``."""
    path = tmp_path / "runtime.sqlite"
    ledger = _ledger(app)
    other = _open(path)
    store = app._store
    load_run = store.load_run

    def load_then_lose_the_race(run_id: str) -> Any:
        run = load_run(run_id)
        monkeypatch.setattr(store, "load_run", load_run)  # only once
        other.ledger.append_events("r1", [ledger.text("the other writer")])
        return run

    monkeypatch.setattr(store, "load_run", load_then_lose_the_race)
    before = _rows(path)
    try:
        with pytest.raises(ConcurrentWriteError) as info:
            app.ledger.append_events("r1", [ledger.text("refused")])
        assert info.value.code == "concurrent_write"
        after = _rows(path)
        assert after[:-1] == before  # only the other writer's row was added
        assert b"the other writer" in after[-1][4]
        assert app.ledger.read_run_payloads("r1")[-1] == other.ledger.read_run_payloads("r1")[-1]
        app.ledger.append_events("r1", [ledger.text("after the lost race")])
    finally:
        other.close()
    assert app.ledger.run_high_water("r1") == 3  # the user turn, the other writer's, this one


def _reason(error: Exception) -> str:
    assert isinstance(error, StoreUnavailableError)
    return str(error.detail["reason"])


def test_a_deleted_store_file_is_refused(app: RuntimeApplication, tmp_path: Path) -> None:
    path = tmp_path / "runtime.sqlite"
    ledger = _ledger(app)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    with pytest.raises(StoreUnavailableError) as info:
        app.ledger.append_events("r1", [ledger.text("into an unlinked file")])
    assert _reason(info.value) == "store_file_deleted"
    assert not path.exists()


def test_a_replaced_store_file_is_refused(app: RuntimeApplication, tmp_path: Path) -> None:
    path = tmp_path / "runtime.sqlite"
    ledger = _ledger(app)
    replacement = tmp_path / "replacement.sqlite"
    with _open(replacement):
        pass
    replacement.replace(path)
    before = _rows(path)
    with pytest.raises(StoreUnavailableError) as info:
        app.ledger.append_events("r1", [ledger.text("into the wrong file")])
    assert _reason(info.value) == "store_file_replaced"
    assert _rows(path) == before


def test_a_locked_store_is_store_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "runtime.sqlite"
    with _open(path) as setup:
        setup.open_session("s1", "/workspace")
        setup.ledger.create_run(run_header())
    app = RuntimeApplication.open_sqlite(
        str(path), env={"SQLITE_LOCK_TIMEOUT": "1"}, host_id="host-a"
    )
    locker = sqlite3.connect(path, isolation_level=None)
    try:
        locker.execute("BEGIN IMMEDIATE")
        error = _refused_and_unchanged(app, path, StoreUnavailableError, LedgerBuilder())
        assert _reason(error) == "locked"
        locker.execute("ROLLBACK")
        app.ledger.append_events("r1", [LedgerBuilder().user(marker=True)])  # usable once released
    finally:
        locker.close()
        app.close()


def test_a_read_only_store_is_store_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "runtime.sqlite"
    with _open(path) as setup:
        setup.open_session("s1", "/workspace")
        setup.ledger.create_run(run_header())
    with RuntimeApplication.open_sqlite(str(path), read_only=True, host_id="host-a") as app:
        error = _refused_and_unchanged(app, path, StoreUnavailableError, LedgerBuilder())
        assert _reason(error) == "read_only"


def test_a_refused_checkout_is_typed_and_forgets_the_own_commits(
    app: RuntimeApplication,
) -> None:
    """The writer checks its connection out of the pool itself (issue 23): a checkout the
    closed pool refuses is ``store_unavailable`` (reason ``closed``), as it was through
    ``typed_store_faults``, and the own-commit watch proves nothing any more."""
    _ledger(app)
    es = app._store._app
    recorder = es.recorder
    assert isinstance(recorder, FailpointSQLiteApplicationRecorder)
    watch = recorder.own_commits
    assert watch._heads  # the append above was noted
    writer = SqliteFactWriter(recorder, es.mapper)
    recorder.datastore.pool.close()
    with pytest.raises(StoreUnavailableError) as info:
        writer.write([])
    assert _reason(info.value) == "closed"
    assert watch._heads == {}
    assert watch._connection is None


def test_concurrent_threads_of_one_application_all_commit(app: RuntimeApplication) -> None:
    """The writer takes the pool's one writer connection: threads of one process queue."""
    for n in range(4):
        app.ledger.create_run(run_header(Spine(run_id=f"t{n}", invocation_id=f"inv-t{n}")))
    errors: list[BaseException] = []

    def append(run_id: str) -> None:
        try:
            ledger = LedgerBuilder(Spine(run_id=run_id, invocation_id=f"inv-{run_id}"))
            ledger.user(marker=True)
            for n in range(10):
                ledger.text(f"{run_id} {n}")
            for event in ledger.events:
                app.ledger.append_events(run_id, [event])
        except BaseException as exc:  # collected, asserted below
            errors.append(exc)

    threads = [threading.Thread(target=append, args=(f"t{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [app.ledger.run_high_water(f"t{n}") for n in range(4)] == [11] * 4


@pytest.fixture
def generic_store_url(store_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A second store of the same kind as ``store_url``, for the generic path."""
    if not store_url.startswith("postgresql"):
        return str(tmp_path / "generic.sqlite")
    return str(request.getfixturevalue("pg_store_url_2"))


@pytest.fixture
def pg_store_url_2(pg_server_url: str) -> Iterator[str]:
    """Another fresh schema of the test server (the conftest fixture gives one per test)."""
    import uuid

    import psycopg

    schema = f"t_{uuid.uuid4().hex[:20]}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    joiner = "&" if "?" in pg_server_url else "?"
    yield f"{pg_server_url}{joiner}schema={schema}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _log(url: str) -> list[tuple[Any, ...]]:
    with _open(url) as app:
        notes = app._es.recorder.select_notifications(start=1, limit=1000)
        return [
            (n.id, str(n.originator_id), n.originator_version, n.topic, bytes(n.state))
            for n in notes
        ]


def test_every_store_writes_the_generic_paths_rows(
    store_url: str, generic_store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite and PostgreSQL, the notification log (ids, streams, versions, topics,
    bytes) after the writer equals the one after eventsourcing's ``Application.save``."""
    generic = _open(generic_store_url)
    monkeypatch.setattr(generic._store, "_write", generic._store._save)
    with generic:
        _drive(generic)
    with _open(store_url) as app:
        _drive(app)
    log = _log(store_url)
    assert log == _log(generic_store_url)
    assert len(log) > 10
