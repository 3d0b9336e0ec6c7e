"""The operator's way out of a parked session through the real ``maka-es`` (issue 21 §3;
docs/cli.md#repair; ADR 0029): run a fork (``fork --execute``), end a start-only run whose
process is gone (``end-run``), resume the session (``resume``). Each idempotent with one
winner, also between two racing processes; on the real SQLite file and PostgreSQL."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from maka_es.app import RuntimeApplication
from maka_es.testing.probes import store_snapshot
from tests.cli.host_parts import LOG_ENV
from tests.cli.stores import MAKA_ES, Ran, build_store, cli, rows

ROOT = Path(__file__).resolve().parents[2]
PROVIDER = "tests.cli.host_parts:provider"
SLOW = "tests.cli.host_parts:slow_provider"
TOOLS = "tests.cli.host_parts:tools"


@pytest.fixture(params=["sqlite", "postgres"])
def stored(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """A store holding ``r1`` with an indeterminate Send after recovery, and its op id."""
    url = request.getfixturevalue("pg_store_url") if request.param == "postgres" else None
    db, operation = build_store(tmp_path, dies=True, store=url)
    store = url or str(db)
    assert cli("recover", store=store).code == 0
    return store, operation


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    path = os.environ.get("PYTHONPATH") or str(ROOT / "src")
    return {"PYTHONPATH": f"{path}:{ROOT}", LOG_ENV: str(tmp / "calls.log"), **extra}


def _calls(tmp: Path) -> list[str]:
    log = tmp / "calls.log"
    return log.read_text().split() if log.exists() else []


def _code(ran: Ran) -> str:
    return ran.err.split("[", 1)[1].split("]", 1)[0]


def test_fork_execute_runs_the_fork_once_and_a_repeat_is_fork_not_pending(
    stored: tuple[str, str], tmp_path: Path
) -> None:
    store, operation = stored
    fork = ("fork", "r1", "--before", operation, "--actor", "alice", "--execute", "--json")
    args = (*fork, "--provider", PROVIDER, "--tools", TOOLS)
    first = cli(*args, store=store, env=_env(tmp_path))
    assert first.code == 0, first.err
    done = first.json()
    assert done["created"] is True
    assert done["outcome"]["status"] == "completed"
    fork_run = done["forkRunId"]
    assert _calls(tmp_path) == [fork_run]
    show = cli("show", fork_run, "--json", store=store).json()
    assert show["header"]["status"] == "completed"

    before = _rows(store)
    again = cli(*args, store=store, env=_env(tmp_path))
    assert again.code == 1
    assert _code(again) == "fork_not_pending"
    assert _calls(tmp_path) == [fork_run]  # the provider was not asked again
    assert cli("show", fork_run, "--json", store=store).json() == show
    assert _rows(store) == before  # the refusal wrote nothing


def _rows(store: str) -> object:
    """Every stored row of ``store``, read by a read-only application."""
    with RuntimeApplication.open(store, read_only=True) as app:
        return store_snapshot(app).rows


def _race(store: str, tmp: Path, *args: str) -> list[Ran]:
    argv = [str(MAKA_ES), "--store", store, *args]
    env = {**os.environ, **_env(tmp)}
    procs = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for _ in range(2)
    ]
    done = [p.communicate(timeout=300) for p in procs]
    return [Ran(p.returncode, out, err) for p, (out, err) in zip(procs, done, strict=True)]


def test_two_processes_executing_one_fork_call_the_provider_once(
    stored: tuple[str, str], tmp_path: Path
) -> None:
    store, operation = stored
    made = cli("fork", "r1", "--before", operation, "--actor", "alice", "--json", store=store)
    assert made.code == 0, made.err
    fork_run = made.json()["forkRunId"]
    racers = _race(
        store,
        tmp_path,
        "fork",
        "r1",
        "--before",
        operation,
        "--actor",
        "alice",
        "--execute",
        "--provider",
        SLOW,
        "--json",
    )
    codes = sorted(r.code for r in racers)
    assert codes == [0, 1], [r.err for r in racers]
    loser = next(r for r in racers if r.code == 1)
    assert _code(loser) == "fork_not_pending"
    assert _calls(tmp_path) == [fork_run]
    events = cli("show", fork_run, "--json", store=store).json()["events"]
    assert len(events) == 3  # start, the one answer, the terminal


def _abandoned_fork(store: str, operation: str) -> str:
    """A fork made by a process whose lease expired at once: its start only, owner gone."""
    made = cli(
        "fork",
        "r1",
        "--before",
        operation,
        "--actor",
        "alice",
        "--json",
        store=store,
        env={"MAKA_HOST_LEASE_MS": "1"},
    )
    assert made.code == 0, made.err
    return str(made.json()["forkRunId"])


def test_end_run_ends_a_start_only_fork_once_then_resume_continues_the_session(
    stored: tuple[str, str], tmp_path: Path
) -> None:
    store, operation = stored
    fork_run = _abandoned_fork(store, operation)
    parked = cli("plan", "r1", store=store)
    assert parked.code == 3
    ended = cli("end-run", fork_run, "--json", store=store)
    assert ended.code == 0, ended.err
    assert ended.json() == {
        "runId": fork_run,
        "claimId": ended.json()["claimId"],
        "recoveryReason": "run_interrupted",
        "takenOverFrom": None,
        "ended": True,
    }
    again = cli("end-run", fork_run, "--json", store=store)
    assert (again.code, _code(again)) == (1, "run_already_ended")

    resumed = cli("resume", "s1", "--provider", PROVIDER, "--json", store=store, env=_env(tmp_path))
    assert resumed.code == 0, resumed.err
    document = resumed.json()
    assert document["plan"]["continuation"]["sourceRunId"] == fork_run
    assert document["outcome"]["status"] == "completed"
    assert document["outcome"]["outputs"] == 1
    repeat = cli("resume", "s1", "--provider", PROVIDER, "--json", store=store, env=_env(tmp_path))
    assert repeat.code == 3
    assert "continuation_already_exists" in repeat.json()["plan"]["rejectionReasons"]
    assert len(_calls(tmp_path)) == 1


def test_end_run_refuses_a_live_owner_and_a_run_that_is_no_bare_start_writing_nothing(
    tmp_path: Path,
) -> None:
    db, operation = build_store(tmp_path, dies=True)
    assert cli("recover", store=db).code == 0
    made = cli("fork", "r1", "--before", operation, "--actor", "alice", "--json", store=db)
    fork_run = made.json()["forkRunId"]  # its process renewed a 30 s lease just now
    before = rows(db)
    live = cli("end-run", fork_run, store=db)
    assert (live.code, _code(live)) == (1, "run_owner_live")
    plain = cli("end-run", "r1", store=db)
    assert (plain.code, _code(plain)) == (1, "run_already_ended")
    missing = cli("end-run", "nope", store=db)
    assert missing.code == 1
    assert rows(db) == before


def test_two_processes_ending_one_run_end_it_once(tmp_path: Path) -> None:
    db, operation = build_store(tmp_path, dies=True)
    assert cli("recover", store=db).code == 0
    fork_run = _abandoned_fork(str(db), operation)
    racers = _race(str(db), tmp_path, "end-run", fork_run, "--json")
    assert sorted(r.code for r in racers) == [0, 1], [r.err for r in racers]
    loser = next(r for r in racers if r.code == 1)
    assert _code(loser) == "run_already_ended"
    events = cli("show", fork_run, "--json", store=db).json()["events"]
    assert [e["eventId"] for e in events][-1] == f"{fork_run}-recovered-terminal"
    assert len(events) == 2


def test_a_provider_factory_that_returns_no_provider_is_a_usage_error(tmp_path: Path) -> None:
    db, operation = build_store(tmp_path, dies=True)
    before = rows(db)
    bad = cli(
        "fork",
        "r1",
        "--before",
        operation,
        "--actor",
        "a",
        "--execute",
        "--provider",
        "tests.cli.host_parts:not_a_provider",
        store=db,
        env=_env(tmp_path),
    )
    assert (bad.code, _code(bad)) == (2, "usage")
    assert rows(db) == before  # refused before the store was opened: no fork
