"""Liveness with two hosts: one is SIGKILLed mid-turn, the other, sweeping, finishes its turn.

Why: a host among several must be able to sweep for dead hosts' runs from its own process,
without ending its own conversation, and must take a dead host's run only once its lease has
expired (ADR 0021 and its amendments, ADR 0035). Per seed, on one store (SQLite file or
PostgreSQL), tests/support/live_hosts.py runs two real processes: ``h1`` runs the three-tool
agent's session ``s1`` and blocks at a failpoint (inside a model call, between T1 and T2 of
the ``Write``, inside a continuation, or inside the email's window), heartbeating, while ``h2``
starts, runs its own session ``s2`` and sweeps with ``recover()``; then ``h1`` is SIGKILLed.
Every sweep of ``h2`` that ended before ``h1``'s lease expired must have written nothing to
``h1``'s runs (``left_live_owner``), and it must have seen them live both before and after the
kill. After the expiry ``h2`` takes the run over (epoch 2) and finishes ``s1``: both answers,
the file written and the email sent once, every model request with its prompt once and no
dangling call. When the email was inside its window, recovery leaves its run to the operator:
one ``maka-es attest`` (the truth from the outbox), and ``h2`` goes on. ``h2``'s own turns all
complete, its sweeps never end them, and no heartbeat of either host fails.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from maka_es.continuation.executor import AFTER_START_COMMITTED
from maka_es.ledger.model.ownership import RunOwner
from maka_es.tooljournal.runtime import AFTER_T1, BEFORE_T2
from tests.crash.test_live_agent import (
    EMAIL_LINE,
    check_requests,
    emails_in_window,
    finished,
    opened,
    store_summary,
)
from tests.support import live_agent, live_hosts
from tests.support.live_hosts import LEASE_MS
from tests.support.store_sql import fresh_store_for

FORK = multiprocessing.get_context("fork")
#: Where ``h1`` is killed: a name, a setup kill first (``None``: none), then ``h1``'s point.
#: The continuation cases first kill a setup host (also ``h1``) inside its second model call,
#: so that the restarted ``h1`` resumes the session as a continuation and is killed there.
CASES: tuple[tuple[str, tuple[str, int] | None, tuple[str, int]], ...] = (
    ("model_call", None, (live_agent.MODEL_CALL, 2)),
    ("write_after_t1", None, (AFTER_T1, 2)),
    ("continuation_start", (live_agent.MODEL_CALL, 2), (AFTER_START_COMMITTED, 1)),
    ("email_before_send", None, (live_agent.BEFORE_EMAIL, 1)),
    ("write_before_t2", None, (BEFORE_T2, 2)),
    ("continuation_model_call", (live_agent.MODEL_CALL, 2), (live_agent.MODEL_CALL, 1)),
    ("email_after_send", None, (live_agent.AFTER_EMAIL, 1)),
    ("model_call_second_turn", None, (live_agent.MODEL_CALL, 4)),
)
#: ``h1`` stays alive (blocked, heartbeating) at least this long after ``h2`` started.
HOLD_S = LEASE_MS / 2000
WAIT_S = 60.0
WRITE_KINDS = frozenset(
    {"owner_taken_over", "terminal_recovered", "tools_recovered", "start_only_ended"}
)


@dataclass
class Seed:
    seed: int
    case: str
    kills: int = 0
    attests: list[str] = field(default_factory=list)
    #: Sweeps that saw ``h1``'s run live while ``h1`` ran, then after its kill before its
    #: lease expired; how long after the expiry the takeover sweep ended (ms).
    seen_alive: int = 0
    seen_dead: int = 0
    takeover_lag_ms: float | None = None


def kill_first_host(
    root: Path, store: str, kill: tuple[str, int], then: Any = None
) -> tuple[float, float]:
    """Run ``h1`` until it blocks at ``kill``; ``then()`` (``h2``'s start and its first
    sweeps) while it is alive; SIGKILL it. Returns when it blocked and when it was killed
    (wall-clock milliseconds, the hosts' clock)."""
    read, write = os.pipe()

    def announce() -> None:
        os.write(write, b"INSIDE\n")

    host = FORK.Process(target=live_hosts.first_host, args=(root, store, kill, announce))
    host.start()
    os.close(write)
    try:
        ready, _, _ = select.select([read], [], [], WAIT_S)
        said = os.read(read, 64) if ready else b""
        assert said.startswith(b"INSIDE"), (kill, host.exitcode, said)
        inside = time.time() * 1000
        if then is not None:
            then()
        assert host.pid is not None
        os.kill(host.pid, signal.SIGKILL)
        killed = time.time() * 1000
    finally:
        os.close(read)
        if host.is_alive():
            host.kill()
        host.join(30)
    assert host.exitcode == -signal.SIGKILL
    return inside, killed


def lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def wait_until(what: Any, seconds: float = WAIT_S) -> bool:
    deadline = time.monotonic() + seconds
    while not what():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def first_runs_seen(root: Path) -> list[str]:
    """``s1`` runs the sweeps saw (any kind)."""
    sweeps = lines(root / live_hosts.SWEEPS)
    return [r[0] for s in sweeps for r in s.get("repairs", []) if r[1] == live_agent.SESSION]


def attest_if_parked(root: Path, store: str, state: Seed) -> None:
    """The operator's one attestation, when ``h2`` reports ``s1`` parked on an email that a
    kill left in its window (the truth: applied when its outbox line landed)."""
    parked = [
        line
        for line in lines(root / live_hosts.SWEEPS)
        if line.get("finished") == live_agent.SESSION and line["outcome"]["resume"] == "parked"
    ]
    if not parked or state.attests:
        return
    command = next(c for c in parked[-1]["outcome"]["commands"] if " attest " in f" {c} ")
    run_id, operation_id = command.split()[2:4]
    assert operation_id in emails_in_window(store), parked[-1]
    sent = (root / live_agent.OUTBOX).exists()
    decision = ["--applied", "--result", "sent"] if sent else ["--not-applied"]
    state.attests.append("applied" if sent else "not_applied")
    cli = Path(sys.executable).with_name("maka-es")
    argv = [str(cli), "--store", store, "attest", run_id, operation_id, *decision]
    env = os.environ | {"MAKA_HOST_ID": "operator"}
    out = subprocess.run(
        [*argv, "--actor", "live-test"], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0, (state.seed, out.stdout, out.stderr)


def s1_finished_by_second_host(root: Path, store: str, state: Seed) -> bool:
    attest_if_parked(root, store, state)
    done = [
        line
        for line in lines(root / live_hosts.SWEEPS)
        if line.get("finished") == live_agent.SESSION and line["outcome"]["resume"] != "parked"
    ]
    return bool(done) and finished(store)


def check_sweeps(
    root: Path, expires_at: float, inside: float, killed: float, state: Seed
) -> list[str]:
    """Before ``h1``'s lease expired no sweep wrote to its runs, and they were seen live both
    while ``h1`` ran and after its kill; a takeover ended at or after the expiry."""
    problems: list[str] = []
    sweeps = [s for s in lines(root / live_hosts.SWEEPS) if "t0" in s]
    mine = [(s, [r for r in s["repairs"] if r[1] == live_agent.SESSION]) for s in sweeps]
    for sweep, repairs in mine:
        kinds = {r[2] for r in repairs}
        if sweep["t1"] < expires_at and kinds - {"left_live_owner"}:
            problems.append(f"before expiry {expires_at}: {sweep}")
        if kinds & WRITE_KINDS and sweep["t1"] < expires_at:
            problems.append(f"wrote before expiry: {sweep}")
    live = [s for s, repairs in mine if any(r[2] == "left_live_owner" for r in repairs)]
    state.seen_alive = sum(1 for s in live if inside <= s["t0"] and s["t1"] < killed)
    state.seen_dead = sum(1 for s in live if killed <= s["t0"] and s["t1"] < expires_at)
    if not state.seen_alive:
        problems.append("no sweep saw h1's run while h1 was alive")
    if not state.seen_dead:
        problems.append("no sweep saw h1's run between its kill and its lease's expiry")
    taken = [s for s, repairs in mine if {r[2] for r in repairs} & live_hosts.TAKEN]
    if taken:
        state.takeover_lag_ms = taken[0]["t1"] - expires_at
    else:
        problems.append("no sweep took h1's run over or left it to the operator")
    return problems


def check_second_host(root: Path, store: str, port: int) -> list[str]:
    """``h2``'s own turns all completed with their answer, and no sweep ended one."""
    if not (root / live_hosts.SECOND_OUT).exists():
        return ["h2 wrote no report"]
    problems: list[str] = []
    report = json.loads((root / live_hosts.SECOND_OUT).read_text())
    problems += [f"h2 error: {e}" for e in report["errors"]]
    problems += [f"h2 heartbeat failed: {c}" for c in report["heartbeatErrors"]]
    turns = report["turns"]
    answer = live_agent.lookup_answer(port)
    if not turns or any(t[1:] != ["completed", answer] for t in turns):
        problems.append(f"h2 turns {turns}")
    with opened(store) as app:
        own = [(h.run_id, h.status) for h in app.list_runs(live_hosts.OTHER_SESSION)]
    if own != [(t[0], "completed") for t in turns]:
        problems.append(f"h2 runs {own} for turns {turns}")
    sweeps = [s for s in lines(root / live_hosts.SWEEPS) if "t0" in s]
    kinds = Counter(r[2] for s in sweeps for r in s["repairs"] if r[1] == live_hosts.OTHER_SESSION)
    if set(kinds) - {"left_own_live_run"} or not kinds:
        problems.append(f"h2's sweeps on its own runs: {dict(kinds)}")
    problems += check_requests(root, live_hosts.OTHER_REQUESTS, live_agent.LOOKUP)
    return problems


def check_first_session(root: Path, store: str, port: int, case: str) -> list[str]:
    """``s1`` finished once: both answers, side effects once, clean requests, and the run
    ``h1`` was killed in is ``h2``'s now (an email's run: the operator's attestation ended it)."""
    problems: list[str] = []
    summary = store_summary(store)
    answers = [answer for _, status, answer in summary if status == "completed"]
    if answers != [live_agent.TURNS[0][2], live_agent.TURNS[1][2]]:
        problems.append(f"answers {summary}")
    outbox = root / live_agent.OUTBOX
    if (outbox.read_text().splitlines() if outbox.exists() else []) != [EMAIL_LINE]:
        problems.append("outbox")
    writes = root / live_agent.WRITES
    if (writes.read_text().splitlines() if writes.exists() else []) != ["port.txt"]:
        problems.append("writes")
    if (root / "workspace" / "port.txt").read_text() != f"{port}\n":
        problems.append("port.txt")
    problems += check_requests(root)
    killed_in = first_runs_seen(root)[0]
    with opened(store) as app:
        owner = app.ledger.load_run(killed_in).owner
    expected = RunOwner("operator" if case.startswith("email") else live_hosts.SECOND, 2)
    if owner != expected:
        problems.append(f"run {killed_in} owned by {owner}, not {expected}")
    return problems


def one_seed(tmp: Path, seed: int, store_for: Any) -> tuple[Seed, list[str]]:
    root = tmp / f"seed-{seed}"
    (root / "workspace").mkdir(parents=True)
    port = random.Random(seed).randrange(1024, 65536)
    (root / "workspace" / "config.json").write_text(json.dumps({"port": port}))
    store = store_for(root)
    name, setup, kill = CASES[seed % len(CASES)]
    state = Seed(seed, name)
    if setup is not None:  # a previous h1 process, killed before h2 starts
        kill_first_host(root, store, setup)
        state.kills += 1
    second = FORK.Process(target=live_hosts.second_host, args=(root, store))

    def start_second() -> None:
        second.start()
        assert wait_until(lambda: len(first_runs_seen(root)) >= 2)  # h2 saw h1's run, live
        time.sleep(HOLD_S)

    try:
        inside, killed = kill_first_host(root, store, kill, start_second)
        state.kills += 1
        done = wait_until(lambda: s1_finished_by_second_host(root, store, state))
    finally:
        (root / live_hosts.STOP).touch()
        second.join(WAIT_S)
        if second.is_alive():
            second.kill()
            second.join(30)
    with opened(store) as app:
        lease = app.ledger.ownership.lease(live_hosts.FIRST) if app.ledger.ownership else None
    assert lease is not None
    problems = [] if done else [f"STUCK: s1 not finished by h2 {store_summary(store)}"]
    problems += check_sweeps(root, lease.expires_at, inside, killed, state)
    problems += check_first_session(root, store, port, name)
    problems += check_second_host(root, store, port)
    if second.exitcode != 0:
        problems.append(f"h2 exit {second.exitcode}")
    if (len(state.attests) == 1) != name.startswith("email"):
        problems.append(f"attests {state.attests}")
    return state, problems


def soak(tmp: Path, seeds: range, store_for: Any) -> None:
    started = time.monotonic()
    results = [one_seed(tmp, seed, store_for) for seed in seeds]
    failures = {s.seed: (s.case, p) for s, p in results if p}
    counts = {
        "seeds": len(results),
        "kills": sum(s.kills for s, _ in results),
        "finished_without_operator": sum(1 for s, p in results if not p and not s.attests),
        "finished_after_one_attest": sum(1 for s, p in results if not p and len(s.attests) == 1),
        "stuck": sum(1 for _, p in results if p and p[0].startswith("STUCK")),
        "failed_checks": len(failures),
        "cases": dict(Counter(s.case for s, _ in results)),
        "sweeps_saw_h1_alive": [s.seen_alive for s, _ in results],
        "sweeps_saw_h1_dead_unexpired": [s.seen_dead for s, _ in results],
        "takeover_ms_after_expiry": [s.takeover_lag_ms for s, _ in results],
        "seconds": round(time.monotonic() - started, 1),
    }
    print(f"\ntwo-host liveness {counts}")
    assert not failures, f"{counts}: {failures}"


def sqlite_store(root: Path) -> str:
    return str(root / "agent.sqlite")


def test_a_sweeping_host_finishes_a_killed_hosts_turn_after_its_lease_sqlite(
    tmp_path: Path,
) -> None:
    soak(tmp_path, range(5), sqlite_store)


def test_a_sweeping_host_finishes_a_killed_hosts_turn_after_its_lease_postgres(
    tmp_path: Path, pg_store_url: str
) -> None:
    soak(tmp_path, range(100, 105), fresh_store_for(pg_store_url))


@pytest.mark.slow
def test_a_sweeping_host_finishes_a_killed_hosts_turn_many_seeds_sqlite(tmp_path: Path) -> None:
    soak(tmp_path, range(1000, 1024), sqlite_store)


@pytest.mark.slow
def test_a_sweeping_host_finishes_a_killed_hosts_turn_many_seeds_postgres(
    tmp_path: Path, pg_store_url: str
) -> None:
    soak(tmp_path, range(2000, 2024), fresh_store_for(pg_store_url))
