"""PostgreSQL as the store (ADR 0028): durability, typed faults, the unknown commit outcome,
and two application instances racing on one run. Real server, real connections."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

from maka_es import failpoints
from maka_es.adapters.event_store import postgres_env_from_url
from maka_es.app import RuntimeApplication
from maka_es.errors import (
    MakaError,
    RuntimeOffsetMismatchError,
    StoreOutcomeUnknownError,
    StoreUnavailableError,
)
from maka_es.testing.builders import LedgerBuilder, run_header
from maka_es.testing.probes import store_snapshot


@pytest.fixture
def pg_app(pg_store_url: str) -> Iterator[RuntimeApplication]:
    app = RuntimeApplication.open(pg_store_url)
    yield app
    app.close()


@pytest.fixture(autouse=True)
def _disarm() -> Iterator[None]:
    yield
    failpoints.disarm()


def _started(app: RuntimeApplication) -> LedgerBuilder:
    app.open_session("s1", "/workspace")
    app.ledger.create_run(run_header())
    ledger = LedgerBuilder()
    ledger.user()
    app.ledger.append_events("r1", ledger.events)
    return ledger


def test_synchronous_commit_is_on_for_the_applications_connection(
    pg_app: RuntimeApplication, pg_server_url: str
) -> None:
    with psycopg.connect(pg_server_url, autocommit=True) as admin:
        admin.execute("ALTER ROLE CURRENT_USER SET synchronous_commit = off")
    try:
        with RuntimeApplication.open(pg_app_url(pg_app)) as app:
            with app._es.recorder.datastore.get_connection() as conn:  # type: ignore[attr-defined]
                row = conn.execute("SHOW synchronous_commit").fetchone()
            assert row["synchronous_commit"] == "on"
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as admin:
            admin.execute("ALTER ROLE CURRENT_USER RESET synchronous_commit")


def pg_app_url(app: RuntimeApplication) -> str:
    env = app.env
    return (
        f"postgresql://{env['POSTGRES_USER']}:{env['POSTGRES_PASSWORD']}@{env['POSTGRES_HOST']}:"
        f"{env['POSTGRES_PORT']}/{env['POSTGRES_DBNAME']}?schema={env['POSTGRES_SCHEMA']}"
    )


def test_tables_are_named_after_the_application_name(pg_app: RuntimeApplication) -> None:
    schema = pg_app.env["POSTGRES_SCHEMA"]
    with pg_app._es.recorder.datastore.get_connection() as conn:  # type: ignore[attr-defined]
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (schema,),
        ).fetchall()
    assert "maka_es_events" in {row["table_name"] for row in rows}


def test_connection_refused_is_store_unavailable(pg_store_url: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = postgres_env_from_url(pg_store_url)
    env.update({"POSTGRES_PORT": str(port), "POSTGRES_CONNECT_TIMEOUT": "1"})
    with pytest.raises(StoreUnavailableError) as info:
        RuntimeApplication(env=env)
    assert info.value.code == "store_unavailable"
    assert info.value.detail["reason"] in {"unreachable", "connection_lost"}


@contextmanager
def _events_table_locked(app: RuntimeApplication, server_url: str) -> Iterator[None]:
    """Another session holds ACCESS EXCLUSIVE on the events table until the block ends."""
    schema = app.env["POSTGRES_SCHEMA"]
    locked, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        with psycopg.connect(server_url) as admin:
            admin.execute(f'LOCK TABLE "{schema}".maka_es_events IN ACCESS EXCLUSIVE MODE')
            locked.set()
            release.wait(30)

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert locked.wait(30)
        yield
    finally:
        release.set()
        holder.join()


def _terminate_where(server_url: str, condition: str) -> list[tuple[bool]]:
    with psycopg.connect(server_url, autocommit=True) as admin:
        return admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE datname = current_database() AND pid <> pg_backend_pid() AND {condition}"
        ).fetchall()


def test_server_going_away_mid_transaction_is_typed_and_nothing_is_lost(
    pg_app: RuntimeApplication, pg_server_url: str
) -> None:
    ledger = _started(pg_app)
    before = store_snapshot(pg_app)
    ledger.call()
    outcome: list[BaseException] = []

    def append() -> None:
        try:
            pg_app.ledger.append_events("r1", ledger.events[-1:])
        except BaseException as exc:
            outcome.append(exc)

    with _events_table_locked(pg_app, pg_server_url):
        writer = threading.Thread(target=append)
        writer.start()
        killed: list[tuple[bool]] = []
        for _ in range(300):  # the writer is inside its transaction, waiting for the lock
            killed = _terminate_where(pg_server_url, "wait_event_type = 'Lock'")
            if killed:
                break
            threading.Event().wait(0.05)
        writer.join(30)
    assert killed == [(True,)]
    assert len(outcome) == 1
    assert isinstance(outcome[0], StoreUnavailableError)
    assert not isinstance(outcome[0], StoreOutcomeUnknownError)
    assert outcome[0].detail["reason"] == "server_shutdown"
    assert store_snapshot(pg_app) == before  # the acknowledged run is intact, nothing more
    assert pg_app.ledger.append_events("r1", ledger.events[-1:]).appended == 1  # a fresh connection


def test_an_error_in_reply_to_commit_is_never_reported_as_a_plain_failure(
    pg_app: RuntimeApplication, pg_server_url: str
) -> None:
    ledger = _started(pg_app)
    before = store_snapshot(pg_app)

    def terminate(_: str) -> None:  # rows inserted, COMMIT about to be sent
        assert _terminate_where(pg_server_url, "state = 'idle in transaction'") == [(True,)]

    failpoints.arm(failpoints.INSIDE_SAVE_BEFORE_COMMIT, terminate)
    ledger.call()
    with pytest.raises(StoreOutcomeUnknownError):
        pg_app.ledger.append_events("r1", ledger.events[-1:])
    failpoints.disarm()
    assert store_snapshot(pg_app) == before  # here the server had rolled it back


def test_statement_timeout_is_store_unavailable(pg_store_url: str, pg_server_url: str) -> None:
    with RuntimeApplication.open(f"{pg_store_url}&statement_timeout_ms=200") as app:
        ledger = _started(app)
        before = store_snapshot(app)
        ledger.call()
        with _events_table_locked(app, pg_server_url), pytest.raises(StoreUnavailableError) as info:
            app.ledger.append_events("r1", ledger.events[-1:])
        assert info.value.detail["reason"] == "timeout"
        assert store_snapshot(app) == before


@contextmanager
def _drop_after_commit_proxy(port: int) -> Iterator[tuple[int, threading.Event]]:
    """A loopback TCP proxy to the server that forwards everything, and once the client
    sends a simple-query ``COMMIT`` while armed, forwards it and then cuts the client off
    without its answer: the server commits, the client cannot know it did."""
    armed = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    cut = threading.Event()

    def pump(src: socket.socket, dst: socket.socket, from_client: bool) -> None:
        try:
            while data := src.recv(65536):
                if not from_client and cut.is_set():
                    continue  # the answer to COMMIT never reaches the client
                committing = b"Q\x00\x00\x00\x0bCOMMIT\x00" in data
                if from_client and armed.is_set() and committing:
                    cut.set()
                    dst.sendall(data)
                    stop.wait(0.5)  # let the server finish the commit
                    src.shutdown(socket.SHUT_RDWR)
                    return
                dst.sendall(data)
        except OSError:
            return
        finally:
            for sock in (src, dst):
                sock.close()

    def accept() -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", port))
            threading.Thread(target=pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=pump, args=(server, client, False), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener.getsockname()[1], armed
    finally:
        stop.set()
        listener.close()


def test_a_connection_dropped_during_commit_is_outcome_unknown(pg_store_url: str) -> None:
    env = postgres_env_from_url(pg_store_url)
    with _drop_after_commit_proxy(int(env["POSTGRES_PORT"])) as (proxy_port, armed):
        env["POSTGRES_PORT"] = str(proxy_port)
        with RuntimeApplication(env=env) as app:
            ledger = _started(app)
            ledger.call()
            armed.set()
            with pytest.raises(StoreOutcomeUnknownError) as info:
                app.ledger.append_events("r1", ledger.events[-1:])
            assert info.value.code == "store_outcome_unknown"
            assert not isinstance(info.value, StoreUnavailableError)
    with RuntimeApplication.open(pg_store_url) as reader:
        # Here the server did commit: reporting a plain failure would have been a lie.
        assert reader.ledger.run_high_water("r1") == 2


def test_two_instances_at_the_same_expected_version_one_wins(pg_store_url: str) -> None:
    with RuntimeApplication.open(pg_store_url) as first:
        ledger = _started(first)
    apps = [RuntimeApplication.open(pg_store_url) for _ in range(2)]
    branches = [LedgerBuilder(events=list(ledger.events)) for _ in range(2)]
    for index, branch in enumerate(branches):
        branch.text(f"branch {index}", event_id=f"b{index}")
    barrier = threading.Barrier(2)
    outcomes: list[object] = [None, None]

    def append(index: int) -> None:
        barrier.wait()
        try:
            outcomes[index] = apps[index].ledger.append_events(
                "r1", branches[index].events[-1:], expected_high_water=1
            )
        except MakaError as exc:
            outcomes[index] = exc

    threads = [threading.Thread(target=append, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        errors = [o for o in outcomes if isinstance(o, MakaError)]
        assert len(errors) == 1, outcomes
        assert errors[0].code in {"concurrent_write", RuntimeOffsetMismatchError.default_code}
        winner = outcomes.index(next(o for o in outcomes if not isinstance(o, MakaError)))
        stored = [e.to_wire() for e in apps[0].read_run_events("r1")]
        assert stored == branches[winner].events  # nothing of the loser interleaved
    finally:
        for app in apps:
            app.close()
