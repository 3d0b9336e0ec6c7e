"""Store faults are the library's typed errors at every public entry point, on real SQLite files.

* ``recover()`` under a held write lock, on a full disk and on a read-only file:
  ``store_unavailable`` (not ``sqlite3.OperationalError``), nothing written, and the same call
  succeeds once the fault is gone;
* every public method of ``RuntimeApplication`` on a file without the maka_es tables (a foreign
  file opened read-only, and a live store whose tables were dropped): ``store_schema_missing``
  (a ``StoreUnavailableError``), the foreign file untouched;
* ``open_sqlite`` where no store can be: ``store_path_unusable`` naming the path.

How the faults are made, honestly and without privileges beyond the test's own files:

* lock: a second connection holds ``BEGIN IMMEDIATE`` (SQLite's write lock) on the same file;
* full disk: ``PRAGMA max_page_count`` on the read model's connection, capped at the current
  size. SQLite's pager then fails the write with ``SQLITE_FULL`` ("database or disk is full"),
  the same error code and rollback path as a filesystem without space;
* read-only file: ``chmod 0444`` for an ordinary user; root ignores file modes, so there the
  file is made immutable with ``chattr +i`` (skipped where the filesystem cannot do that).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from maka_es.adapters.recovery_status import SqliteRecoveryStatusBackend
from maka_es.app import HostConfig, RuntimeApplication
from maka_es.continuation.host import HostObservation
from maka_es.continuation.model.plan import ContinuationPlan
from maka_es.errors import (
    StorePathError,
    StoreSchemaMissingError,
    StoreUnavailableError,
)
from maka_es.providers.protocol import ProviderTurn, ScriptedProvider
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.probes import store_snapshot
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader
from tests.support.host_surface import host_public_names, plumbing_names

WORKSPACE = "workspace:v1:6f1c2a4e-8b7d-4c3e-9a1f-0e2d3c4b5a69"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _interrupted_run(app: RuntimeApplication, spine: Spine) -> None:
    """A run that died after its call: startup recovery has work to do."""
    app.ledger.create_run(run_header(spine))
    ledger = LedgerBuilder(spine, prefix=f"{spine.run_id}-")
    ledger.user()
    ledger.call()
    app.ledger.append_events(spine.run_id, ledger.events)


def _seed_interrupted(db: Path, runs: int = 1, *, id_padding: int = 0) -> None:
    with RuntimeApplication.open_sqlite(str(db)) as app:
        app.open_session("s1", "/workspace")
        for n in range(1, runs + 1):
            run_id = f"r{n}" + "-" * id_padding
            _interrupted_run(app, Spine(run_id=run_id, invocation_id=f"i{n}"))


# --- recover() ------------------------------------------------------------------------------


@contextmanager
def _write_lock_held(db: Path) -> Iterator[None]:
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        yield
        holder.execute("ROLLBACK")
    finally:
        holder.close()


def _assert_store_unavailable(error: StoreUnavailableError, reason: str, sqlite_error: str) -> None:
    assert type(error) is StoreUnavailableError
    assert error.code == "store_unavailable"
    assert error.detail["reason"] == reason
    assert error.detail["sqliteError"] == sqlite_error


def test_recover_under_a_held_lock_creating_the_read_model(db_path: Path) -> None:
    _seed_interrupted(db_path)
    app = RuntimeApplication.open_sqlite(str(db_path), env={"SQLITE_LOCK_TIMEOUT": "1"})
    with app:
        before = store_snapshot(app)
        with _write_lock_held(db_path), pytest.raises(StoreUnavailableError) as info:
            app.recover()
        _assert_store_unavailable(info.value, "locked", "SQLITE_BUSY")
        assert store_snapshot(app) == before
        assert app.recover().changed_anything  # the fault was transient
        assert app.get_run_header("r1").status == "failed"


def test_recover_under_a_held_lock_catching_up_the_read_model(db_path: Path) -> None:
    _seed_interrupted(db_path)
    app = RuntimeApplication.open_sqlite(str(db_path), env={"SQLITE_LOCK_TIMEOUT": "1"})
    with app:
        app.recovery_status.catch_up()
        position = app.recovery_status.store.position()
        app.ledger.append_event("r1", LedgerBuilder(prefix="late-").text())  # the model lags
        before = store_snapshot(app)
        with _write_lock_held(db_path), pytest.raises(StoreUnavailableError) as info:
            app.recover()
        _assert_store_unavailable(info.value, "locked", "SQLITE_BUSY")
        assert store_snapshot(app) == before
        assert app.recovery_status.store.position() == position
        assert app.recover().changed_anything


def test_recover_on_a_full_disk(db_path: Path) -> None:
    # Eight runs with 1 kB ids: their read-model rows need pages the file does not have yet.
    _seed_interrupted(db_path, runs=8, id_padding=1000)
    with RuntimeApplication.open_sqlite(str(db_path)) as app:
        store = app.recovery_status.store
        assert isinstance(store.backend, SqliteRecoveryStatusBackend)
        connection = store.backend._conn
        (pages,) = connection.execute("PRAGMA page_count").fetchone()
        connection.execute(f"PRAGMA max_page_count={pages}")
        before = store_snapshot(app)

        with pytest.raises(StoreUnavailableError) as info:
            app.recover()

        _assert_store_unavailable(info.value, "full", "SQLITE_FULL")
        assert store_snapshot(app) == before
        assert store.position() == 0  # the batch was rolled back whole
        assert store.all() == []
        connection.execute(f"PRAGMA max_page_count={pages * 100}")
        assert len(app.recover().repairs) == 8
        assert store.position() == app._es.recorder.max_notification_id()


@contextmanager
def _os_read_only(path: Path) -> Iterator[None]:
    """Make ``path`` read-only for this process, the way the OS enforces it."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o444)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    chattr = shutil.which("chattr")
    made = chattr and subprocess.run([chattr, "+i", str(path)], capture_output=True, check=False)
    if not made or made.returncode != 0:
        pytest.skip("root ignores file modes and this filesystem cannot make a file immutable")
    assert chattr is not None
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(path)], check=True)


def test_recover_on_a_read_only_file(db_path: Path) -> None:
    _seed_interrupted(db_path)
    digest = _digest(db_path)
    with _os_read_only(db_path), RuntimeApplication.open_sqlite(str(db_path)) as app:
        assert app.plan_resume("r1").disposition == "blocked"  # reading works
        with pytest.raises(StoreUnavailableError) as info:
            app.recover()
        _assert_store_unavailable(info.value, "read_only", "SQLITE_READONLY")
    assert _digest(db_path) == digest
    with RuntimeApplication.open_sqlite(str(db_path)) as app:
        assert app.recover().changed_anything


# --- every public entry point on a store without the maka_es schema -------------------------


@dataclass(frozen=True)
class Template:
    """A healthy store (a failed source run, continued once) and the inputs every entry point
    needs to get as far as the store: an approved plan, a claimed target's header and start."""

    db: Path
    plan: ContinuationPlan
    target_header: RunHeader
    target_start: RuntimeEvent


class _Inspector:
    def inspect(self, session_id: str, cwd: str) -> HostObservation:
        return HostObservation(
            workspace_identity=WORKSPACE,
            workspace_path="/workspace",
            background_operations_settled=True,
            available_tool_names=("Bash",),
        )


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    db = tmp_path_factory.mktemp("template") / "template.sqlite"
    counter = itertools.count(1)
    with RuntimeApplication.open_sqlite(
        str(db),
        env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
        id_factory=lambda: f"new-{next(counter)}",
        host_inspector=_Inspector(),
    ) as app:
        app.open_session("s1", "/workspace")
        app.ledger.create_run(run_header(workspaceIdentity=WORKSPACE))
        ledger = LedgerBuilder()
        ledger.user()
        ledger.call("c1", "Bash", {"command": "ls"})
        ledger.response("c1", "Bash")
        ledger.terminal("failed")
        app.ledger.append_events("r1", ledger.events)
        app.ledger.update_run_header("r1", {"status": "failed", "failureClass": "provider_error"})
        plan = app.plan_continuation("s1")
        assert plan.continuation is not None
        turn = ProviderTurn(outputs=({"kind": "text", "text": "resumed"},))
        outcome = app.execute_continuation(plan, ScriptedProvider([turn]))
        target = outcome.target_run_id
        ended = app.get_run_header(target).to_wire()
        live = {key: value for key, value in ended.items() if key != "completedAt"}
        header = RunHeader.model_validate({**live, "status": "running"})
        return Template(db, plan, header, app.read_run_events(target)[0])


Call = Callable[[RuntimeApplication, Template], object]
_LEDGER = LedgerBuilder(prefix="x-")
_EVENT = _LEDGER.text()
_CALL = _LEDGER.call("c9")
_RESPONSE = _LEDGER.response("c9")

#: Every public method of RuntimeApplication and every plumbing entry of its service attributes
#: (``service.method``, tests/support/host_surface.py) that reaches the store, with valid
#: arguments.
HOST_CONFIG = HostConfig(
    backend_kind="fake", llm_connection_slug="c", model_id="m", permission_mode="ask"
)

ENTRY_POINTS: dict[str, Call] = {
    "open_session": lambda app, t: app.open_session("s9", "/workspace"),
    "get_session": lambda app, t: app.get_session("s1"),
    "list_sessions": lambda app, t: app.list_sessions(),
    "start_run": lambda app, t: app.start_run(
        "s1", run_id="r9", invocation_id="i9", turn_id="t9", config=HOST_CONFIG
    ),
    "ledger.create_run": lambda app, t: app.ledger.create_run(
        run_header(Spine(run_id="r9", invocation_id="i9"))
    ),
    "ledger.import_run": lambda app, t: app.ledger.import_run(
        run_header(Spine(run_id="r8", invocation_id="i8")), []
    ),
    "get_run_header": lambda app, t: app.get_run_header("r1"),
    "list_runs": lambda app, t: app.list_runs("s1"),
    "ledger.append_events": lambda app, t: app.ledger.append_events("r1", [_EVENT]),
    "ledger.append_event": lambda app, t: app.ledger.append_event("r1", _EVENT),
    "ledger.update_run_header": lambda app, t: app.ledger.update_run_header(
        "r1", {"updatedAt": 5.0}
    ),
    "tool_journal.commit_tool_prepared": lambda app, t: app.tool_journal.commit_tool_prepared(
        "r1", _CALL
    ),
    "tool_journal.commit_tool_outcome": lambda app, t: app.tool_journal.commit_tool_outcome(
        "r1", _RESPONSE
    ),
    "tool_journal.commit_tool_recovery_bundle": lambda app, t: (
        app.tool_journal.commit_tool_recovery_bundle("r1", "op", reconcile=_EVENT, decision=_EVENT)
    ),
    "tool_journal.tool_operations": lambda app, t: app.tool_journal.tool_operations("r1"),
    "tool_journal.attestations": lambda app, t: app.tool_journal.attestations("r1"),
    "tool_journal.resolve_run": lambda app, t: app.tool_journal.resolve_run("r1"),
    "end_run": lambda app, t: app.end_run("r1", _LEDGER.terminal("failed")),
    "read_run_events": lambda app, t: app.read_run_events("r1"),
    "ledger.run_high_water": lambda app, t: app.ledger.run_high_water("r1"),
    "ledger.read_run_payloads": lambda app, t: app.ledger.read_run_payloads("r1"),
    "plan_resume": lambda app, t: app.plan_resume("r1"),
    "end_start_only_run": lambda app, t: app.end_start_only_run(t.target_header.run_id),
    "run_turn": lambda app, t: app.run_turn("s1", "hello", ScriptedProvider([]), run_id="r9"),
    "resume": lambda app, t: app.resume("s1", ScriptedProvider([])),
    "run_starts.create_run_with_events": lambda app, t: app.run_starts.create_run_with_events(
        t.target_header, [t.target_start]
    ),
    "attest_operation": lambda app, t: app.attest_operation(
        "r1", "toolop_" + "0" * 32, applied=False, actor="op"
    ),
    "fork_run": lambda app, t: app.fork_run(
        "r1", before_operation="toolop_" + "0" * 32, actor="op"
    ),
    "execute_fork": lambda app, t: app.execute_fork("r1", ScriptedProvider([])),
    "plan_continuation": lambda app, t: app.plan_continuation("s1"),
    "execute_continuation": lambda app, t: app.execute_continuation(t.plan, ScriptedProvider([])),
    "claims.claim_exists": lambda app, t: app.claims.claim_exists("claim"),
    "claims.get_claim": lambda app, t: app.claims.get_claim("claim"),
    "run_exists": lambda app, t: app.run_exists("r1"),
    "ledger.all_run_ids": lambda app, t: app.ledger.all_run_ids(),
    "ledger.list_all_runs": lambda app, t: app.ledger.list_all_runs(),
    "claims.all_claims": lambda app, t: app.claims.all_claims(),
    "claims.create_claimed_run": lambda app, t: app.claims.create_claimed_run(
        t.target_header, t.target_start
    ),
    "claims.start_claimed_run": lambda app, t: app.claims.start_claimed_run("r1", t.target_start),
    "claims.continuation_start_record": lambda app, t: app.claims.continuation_start_record(
        "claim", t.target_start, start_kind="claim_repair"
    ),
    "recovery_status": lambda app, t: app.recovery_status.all(),
    "recovery_status_projector": lambda app, t: app.recovery_status_projector().catch_up(),
    "recover": lambda app, t: app.recover(),
    "heartbeat": lambda app, t: app.heartbeat(),
    "ownership.lease": lambda app, t: app.ownership.lease("w2"),
}

#: Public names that never touch the store, and why.
NO_STORE_ACCESS: dict[str, str] = {
    "env": "the store settings (read once at construction)",
    "open_sqlite": "constructor: see test_open_sqlite_* below",
    "in_memory": "constructor of the in-memory store (no file)",
    "open": "constructor: a SQLite path is open_sqlite; PostgreSQL: test_postgres_store",
    "on_events_committed": "host hook, a no-op by default",
    "safe_boundary_resume_enabled": "reads the environment only",
    "now_ms": "reads the injected clock only",
    "close": "releases connections",
}


def test_the_entry_point_table_names_every_public_method() -> None:
    public = host_public_names() | plumbing_names()
    assert public == set(ENTRY_POINTS) | set(NO_STORE_ACCESS)
    assert not set(ENTRY_POINTS) & set(NO_STORE_ACCESS)


def _typed_refusal(name: str, app: RuntimeApplication, template: Template) -> None:
    """The entry point refuses with ``store_schema_missing``. Planning may instead park (a
    parked plan is also a typed, honest answer); it must never leak a raw store error."""
    call = ENTRY_POINTS[name]
    if name == "plan_continuation":
        try:
            plan = call(app, template)
        except StoreSchemaMissingError:
            return
        assert isinstance(plan, ContinuationPlan)
        assert plan.continuation is None
        return
    with pytest.raises(StoreSchemaMissingError) as info:
        call(app, template)
    assert isinstance(info.value, StoreUnavailableError)
    assert info.value.code == "store_schema_missing"
    assert "no such table" in str(info.value)


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_entry_point_on_a_foreign_file_opened_read_only(
    name: str, template: Template, tmp_path: Path
) -> None:
    foreign = tmp_path / "notes.sqlite"
    with closing(sqlite3.connect(foreign)) as connection:
        connection.execute("CREATE TABLE notes (body TEXT)")
        connection.commit()
    digest = _digest(foreign)
    with RuntimeApplication.open_sqlite(str(foreign), read_only=True) as app:
        _typed_refusal(name, app, template)
    assert _digest(foreign) == digest
    assert sorted(os.listdir(tmp_path)) == ["notes.sqlite"]


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_entry_point_on_a_live_store_whose_tables_were_dropped(
    name: str, template: Template, tmp_path: Path
) -> None:
    db = tmp_path / "live.sqlite"
    shutil.copy(template.db, db)
    with RuntimeApplication.open_sqlite(str(db)) as app:
        assert app.get_run_header("r1").status == "failed"  # live, with a warm cache
        with closing(sqlite3.connect(db)) as connection:
            connection.execute("DROP TABLE stored_events")
            connection.commit()
        _typed_refusal(name, app, template)


# --- open_sqlite where no store can be -----------------------------------------------------


@pytest.mark.parametrize(
    ("where", "read_only", "reason"),
    [
        ("missing-dir/store.sqlite", False, "directory_missing"),
        ("missing-dir/store.sqlite", True, "directory_missing"),
        ("missing.sqlite", True, "file_missing"),
        ("a-directory", False, "is_a_directory"),
    ],
)
def test_open_sqlite_where_no_store_can_be_names_the_path(
    tmp_path: Path, where: str, read_only: bool, reason: str
) -> None:
    (tmp_path / "a-directory").mkdir()
    path = tmp_path / where
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(StorePathError) as info:
        RuntimeApplication.open_sqlite(str(path), read_only=read_only)
    error = info.value
    assert isinstance(error, StoreUnavailableError)
    assert error.code == "store_path_unusable"
    assert (error.detail["path"], error.detail["reason"]) == (str(path), reason)
    assert repr(str(path)) in str(error)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing created


@pytest.mark.parametrize("setting", ["", "   "])
@pytest.mark.parametrize("read_only", [False, True])
def test_an_empty_store_setting_is_a_typed_refusal_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str, read_only: bool
) -> None:
    """``open("")`` (an unset variable spliced into a setting) is ``store_path_unusable``, not
    eventsourcing's bare ``OSError`` about a missing environment key."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StorePathError) as info:
        RuntimeApplication.open(setting, read_only=read_only)
    assert info.value.code == "store_path_unusable"
    assert info.value.detail == {"path": setting, "reason": "path_empty"}
    assert list(tmp_path.iterdir()) == []


def test_recovery_status_store_where_no_store_can_be_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "missing-dir" / "store.sqlite"
    with pytest.raises(StorePathError) as info:
        SqliteRecoveryStatusBackend(str(path))
    assert info.value.detail["reason"] == "directory_missing"
