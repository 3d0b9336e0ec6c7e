"""Liveness: the three-tool agent, SIGKILLed at random points and restarted, always finishes.

Why: crash safety is worth little if a killed agent cannot get back to its answer. Each seed
runs tests/support/live_agent.py (read a file, ``Write``, a ``never_auto_retry`` email) in a
forked child through ``run_turn`` / ``resume`` (ADR 0036) and SIGKILLs it at one to four
random points: failpoints inside model calls, around and inside T1 and T2, between turns,
inside continuations and recovery, or after a random delay. Each restart calls ``recover()``,
``resume()``, then ``run_turn`` for a turn the session has not had. Every seed must end with
both answers, with no operator action unless the email was inside its T1-T2 window when
killed; then after exactly one operator decision for that email operation and one more
restart (an email resent after "not applied" and killed inside ITS window needs its own). The
decision is the truth: ``maka-es attest --applied`` when its outbox line landed; when it did
not, the seed's operator chooses (by the seed's rng) ``maka-es attest --not-applied`` or
``maka-es fork --execute``, a process of its own that is SIGKILLed too, at random points of
the fork (its claim, its take, its model calls, its resent email's window, its terminal); a
fork killed before its claim landed is retried with the same command. Side effects happen
once, and every request the model got answers each tool call and holds its prompt once
(docs/adr/0022-operator-actions-attest-and-fork.md).
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from maka_es import failpoints
from maka_es.app import RuntimeApplication
from maka_es.continuation.executor import AFTER_CLAIM_COMMITTED, AFTER_START_COMMITTED
from maka_es.continuation.turns import AFTER_TURN_STARTED, answer_of
from maka_es.errors import (
    SessionNotFoundError,
    StorePathError,
    StoreSchemaMissingError,
)
from maka_es.recovery.operator_actions import AFTER_FORK_COMMITTED, AFTER_FORK_TAKEN
from maka_es.tooljournal.model.resolver import resolve_tool_operations
from maka_es.tooljournal.runtime import AFTER_T1, AFTER_T2, BEFORE_T2
from maka_es.wire.run_header import RunHeader
from tests.support import live_agent
from tests.support.store_sql import fresh_store_for

#: Kill points: a failpoint and the highest hit count to draw (``delay`` is milliseconds).
POINTS: tuple[tuple[str, int], ...] = (
    (live_agent.MODEL_CALL, 5),
    (AFTER_T1, 3),
    (BEFORE_T2, 3),
    (AFTER_T2, 3),
    (failpoints.INSIDE_SAVE_BEFORE_COMMIT, 12),
    (AFTER_TURN_STARTED, 2),
    (AFTER_CLAIM_COMMITTED, 2),
    (AFTER_START_COMMITTED, 2),
    (failpoints.AFTER_TERMINAL_EVENT, 3),
    (failpoints.AFTER_TERMINAL_HEADER, 3),
    (failpoints.AFTER_CLAIM_REPAIR_START, 1),
    ("delay", 150),
)
#: The email's window, before and after its line landed: the operator attests the truth.
EMAIL_NOT_SENT, EMAIL_SENT = (live_agent.BEFORE_EMAIL, 1), (live_agent.AFTER_EMAIL, 1)
#: Kill points inside ``maka-es fork --execute``: its saves (the source ended, its claim, its
#: take, T1, T2, the terminal), after its claim and its take, its model calls, its resent email.
FORK_POINTS: tuple[tuple[str, int], ...] = (
    (failpoints.INSIDE_SAVE_BEFORE_COMMIT, 6),
    (AFTER_FORK_COMMITTED, 1),
    (AFTER_FORK_TAKEN, 1),
    (live_agent.MODEL_CALL, 2),
    (AFTER_T1, 1),
    (live_agent.BEFORE_EMAIL, 1),
    (live_agent.AFTER_EMAIL, 1),
    (AFTER_T2, 1),
    (failpoints.AFTER_TERMINAL_EVENT, 1),
)
#: A fork is killed with this chance, at most this many times per seed.
FORK_KILL_CHANCE, MAX_FORK_KILLS = 0.7, 2
MAX_RESTARTS = 5
CHILD_TIMEOUT = 60.0
EMAIL_LINE = "ops: port.txt written"
CLI = Path(sys.executable).with_name("maka-es")
#: What ``maka-es fork --execute`` imports its provider and tools from (the repository root).
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Seed:
    """One seed's plan and what happened to it."""

    seed: int
    plan: list[tuple[str, int]]
    kills: int = 0
    killed_at: list[str] = field(default_factory=list)
    #: (operation, ``applied`` / ``not_applied``) per attestation, in order.
    attests: list[tuple[str, str]] = field(default_factory=list)
    parks: list[dict[str, Any]] = field(default_factory=list)
    #: The email operations a kill left inside their T1-T2 window.
    window_ops: set[str] = field(default_factory=set)
    log: list[str] = field(default_factory=list)
    #: The operations the operator forked before, in order, and the fork commands run
    #: (a fork killed before its claim landed is run again), and how many were killed.
    forks: list[str] = field(default_factory=list)
    fork_runs: int = 0
    fork_kills: int = 0
    #: Restarts whose store could not be opened (``store_unavailable`` at startup, before any
    #: command): the host's supervisor starts it again, as it would after a kill.
    unavailable_starts: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(f"operator-{self.seed}")  # the operator's choices and kills


def plan_for(seed: int) -> list[tuple[str, int]]:
    """One to four kills; every fourth seed starts its plan inside the email's window,
    alternating before and after its side effect (so both attestations are exercised)."""
    rng = random.Random(seed)
    plan = [(name, rng.randint(1, top)) for name, top in rng.choices(POINTS, k=rng.randint(1, 4))]
    if seed % 4 == 0:  # first, so the other kills land in the restarts around the attestation
        plan.insert(0, EMAIL_NOT_SENT if seed % 8 == 0 else EMAIL_SENT)
    return plan


def _child(root: Path, store: str, kill: tuple[str, int] | None, pipe: int) -> None:
    """The forked child: the host's start, blocking at the armed failpoint (never returns)."""
    code = 0
    try:
        live_agent.instrument_writes(root)
        if kill is not None and kill[0] != "delay":

            def announce() -> None:
                os.write(pipe, b"INSIDE\n")

            live_agent.arm_kill(kill, announce)
        live_agent.main(root, store)
    except BaseException:  # the parent reads it from the file
        (root / "child-error.txt").write_text(traceback.format_exc())
        code = 1
    finally:
        os._exit(code)


def run_child(root: Path, store: str, kill: tuple[str, int] | None) -> str:
    """``killed`` (SIGKILLed at its point or delay), ``finished``, ``failed``, or ``hung``
    (no end within ``CHILD_TIMEOUT``: killed, and the seed fails)."""
    (root / live_agent.OUTCOME).unlink(missing_ok=True)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        _child(root, store, kill, write)
    os.close(write)
    delay = kill[1] / 1000 if kill is not None and kill[0] == "delay" else None
    delayed = delay is not None
    try:
        ready, _, _ = select.select([read], [], [], CHILD_TIMEOUT if delay is None else delay)
        said = os.read(read, 64) if ready else b""
        if said.startswith(b"INSIDE") or not ready:
            os.kill(pid, signal.SIGKILL)
    finally:
        os.close(read)
    _, status = os.waitpid(pid, 0)
    if not ready and not delayed:
        return "hung"
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return "killed"
    return "finished" if os.WEXITSTATUS(status) == 0 else "failed"


def session_runs(app: RuntimeApplication) -> list[RunHeader]:
    """The session's runs; none while the kill came before its session (or, on SQLite, the
    store's tables: the restarted child's open creates them) was saved."""
    try:
        return list(app.list_runs(live_agent.SESSION))
    except (SessionNotFoundError, StoreSchemaMissingError):
        return []


def opened(store: str) -> RuntimeApplication:
    """The store, read-only (a SQLite file the child was killed before creating is created,
    as the restarted child's open does)."""
    try:
        return RuntimeApplication.open(store, read_only=True)
    except StorePathError:
        RuntimeApplication.open(store).close()
        return RuntimeApplication.open(store, read_only=True)


def emails_in_window(store: str) -> set[str]:
    """The email operations whose T1 the store holds without their T2 (what only an
    operator can settle)."""
    found: set[str] = set()
    with opened(store) as app:
        for header in session_runs(app):
            decisions = resolve_tool_operations(app.read_run_events(header.run_id)).decisions
            found |= {
                decision.operation_id
                for decision in decisions
                if decision.tool_name == "SendEmail"
                and decision.operation_id is not None
                and decision.dispatch_runtime_event_id is not None
                and decision.response_runtime_event_id is None
            }
    return found


def store_summary(store: str) -> list[tuple[str, str, str | None]]:
    """Each run of the session: id, status, answer (what a failing seed reports)."""
    with opened(store) as app:
        return [
            (h.run_id, h.status, answer_of(app.read_run_events(h.run_id)))
            for h in session_runs(app)
        ]


def finished(store: str) -> bool:
    summary = store_summary(store)
    answers = [answer for _, status, answer in summary if status == "completed"]
    return bool(summary) and summary[-1][1] == "completed" and answers[-1] == live_agent.TURNS[1][2]


def attest(root: Path, store: str, run_id: str, operation_id: str, state: Seed) -> None:
    """One operator attestation through the CLI: the truth the outbox shows (an email
    attested not applied is the only one sent before it, so its line is this one's)."""
    sent = (root / live_agent.OUTBOX).exists()
    decision = ["--applied", "--result", "sent"] if sent else ["--not-applied"]
    state.attests.append((operation_id, "applied" if sent else "not_applied"))
    cli = Path(sys.executable).with_name("maka-es")
    argv = [str(cli), "--store", store, "attest", run_id, operation_id, *decision]
    out = subprocess.run(
        [*argv, "--actor", "live-test"], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, (state.seed, out.stdout, out.stderr)


def operator_choice(state: Seed) -> str:
    """For an email that was not sent: ``fork`` or ``not_applied``, by the seed's rng; the
    seeds planned inside the email's window before its side effect alternate their first
    choice (so both are exercised in every tier)."""
    first = not state.forks and all(decision != "not_applied" for _, decision in state.attests)
    if first and state.seed % 8 == 0:
        return "fork" if state.seed % 16 == 0 else "not_applied"
    return "fork" if state.rng.random() < 0.5 else "not_applied"


def run_cli(root: Path, argv: list[str], kill: tuple[str, int] | None) -> tuple[str, str]:
    """``maka-es`` as its own process, SIGKILLed when it reaches ``kill`` (its provider factory
    arms it, see ``live_agent.cli_provider``): ``killed``, ``finished``, ``failed`` or
    ``hung``, and what it printed."""
    read, write = os.pipe()
    path = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(REPO)) if p)
    env = os.environ | {live_agent.ROOT_ENV: str(root), "PYTHONPATH": path}
    if kill is not None:
        env |= {live_agent.KILL_ENV: f"{kill[0]}:{kill[1]}", live_agent.KILL_FD_ENV: str(write)}
    out = root / "cli-out.txt"
    with out.open("w") as sink:
        child = subprocess.Popen(argv, env=env, pass_fds=(write,), stdout=sink, stderr=sink)
    os.close(write)
    try:
        ready, _, _ = select.select([read], [], [], CHILD_TIMEOUT)
        said = os.read(read, 64) if ready else b""
        if said.startswith(b"INSIDE") or not ready:
            child.kill()
    finally:
        os.close(read)
    code = child.wait(60)
    result = "hung" if not ready else "killed" if code == -signal.SIGKILL else "finished"
    return ("failed" if result == "finished" and code != 0 else result), out.read_text()


def fork(root: Path, store: str, run_id: str, operation_id: str, state: Seed) -> str | None:
    """One operator fork through the CLI, run at once (``--execute``), maybe killed inside;
    ``None`` unless it failed or hung."""
    kill = None
    if state.fork_kills < MAX_FORK_KILLS and state.rng.random() < FORK_KILL_CHANCE:
        name, top = state.rng.choice(FORK_POINTS)
        kill = (name, state.rng.randint(1, top))
    state.fork_runs += 1
    factories = ["--provider", "tests.support.live_agent:cli_provider"]
    factories += ["--tools", "tests.support.live_agent:cli_tools"]
    argv = [str(CLI), "--store", store, "fork", run_id, "--before", operation_id]
    result, printed = run_cli(root, [*argv, "--actor", "live-test", "--execute", *factories], kill)
    state.log.append(f"fork {operation_id} at {kill}: {result}")
    if result == "killed":
        assert kill is not None
        state.kills += 1
        state.fork_kills += 1
        state.killed_at.append(f"fork:{kill[0]}")
        state.window_ops |= emails_in_window(store)
        return None
    return None if result == "finished" else f"fork {result}: {printed}"


def parked_operation(commands: list[str]) -> tuple[str, str] | None:
    """The run and operation a park's operator commands name (``attest RUN OP`` while the
    run awaits the operator, ``fork RUN --before OP`` once it ended); ``None``: neither."""
    words = commands[0].split() if commands else []
    if words[1:2] == ["attest"]:
        return words[2], words[3]
    return (words[2], words[4]) if words[1:2] == ["fork"] else None


def operator(root: Path, store: str, outcome: dict[str, Any], state: Seed) -> str | None:
    """The operator's one decision for a parked email (its fork retried when it was killed
    before its claim landed); ``None`` when made, else why the seed is stuck."""
    state.parks.append(outcome)
    named = parked_operation(outcome["commands"])
    if named is None:
        return f"parked {outcome} with no operation to decide"
    run_id, operation_id = named
    if operation_id in state.forks:
        return fork(root, store, run_id, operation_id, state)
    if operation_id not in state.window_ops - {op for op, _ in state.attests}:
        return f"parked {outcome} (email operations killed in window {state.window_ops})"
    if not (root / live_agent.OUTBOX).exists() and operator_choice(state) == "fork":
        state.forks.append(operation_id)
        return fork(root, store, run_id, operation_id, state)
    attest(root, store, run_id, operation_id, state)
    return None


def check_requests(
    root: Path, name: str = live_agent.REQUESTS, prefix: str | None = None
) -> list[str]:
    """Every request (in ``name``): each assistant tool call answered before anything else,
    each turn's prompt once and in turn order (the earlier turns come first, as the session
    history, ADR 0038; a turn's prompt is never repeated): the agent's turns, or prompts that
    start with ``prefix`` when given."""
    problems: list[str] = []
    prompts = [prompt for _, prompt, _ in live_agent.TURNS]

    def in_order(users: list[Any]) -> bool:
        if prefix is None:
            return users == prompts[: len(users)]
        return len(set(users)) == len(users) and all(str(u).startswith(prefix) for u in users)

    for n, line in enumerate((root / name).read_text().splitlines()):
        messages = json.loads(line)
        users = [m["content"] for m in messages if m["role"] == "user"]
        if not users or not in_order(users):
            problems.append(f"request {n}: user messages {users}")
        open_calls: list[str] = []
        for m in messages:
            if m["role"] == "tool":
                if m.get("tool_call_id") not in open_calls:
                    problems.append(f"request {n}: result without its call {m}")
                else:
                    open_calls.remove(m["tool_call_id"])
                continue
            if open_calls:
                problems.append(f"request {n}: calls {open_calls} unanswered before {m['role']}")
                open_calls = []
            if m["role"] == "assistant":
                open_calls = [c["id"] for c in m.get("tool_calls") or []]
        if open_calls:
            problems.append(f"request {n}: dangling calls {open_calls}")
    return problems


def side_effect_problems(root: Path, port: int, state: Seed) -> list[str]:
    problems: list[str] = []
    outbox = root / live_agent.OUTBOX
    lines = outbox.read_text().splitlines() if outbox.exists() else []
    if lines != [EMAIL_LINE]:
        problems.append(f"outbox {lines}")
    writes = root / live_agent.WRITES
    landed = writes.read_text().splitlines() if writes.exists() else []
    delayed = any(name == "delay" for name, _ in state.plan)  # a kill between write and probe
    if landed != ["port.txt"] and not (delayed and landed == []):
        problems.append(f"writes {landed}")
    target = root / "workspace" / "port.txt"
    if not target.exists() or target.read_text() != f"{port}\n":
        problems.append("port.txt missing or wrong")
    return problems


#: How many restarts of a seed may find the store unavailable at startup (a loaded machine's
#: PostgreSQL connect timeout); counted and printed, never hidden.
MAX_UNAVAILABLE_STARTS = 2


def unavailable_at_start(error: str) -> bool:
    """The child's traceback shows the store refused its start with ``store_unavailable``
    while opening the application, before it ran any command: nothing was written."""
    return "[store_unavailable]" in error and "in open_app" in error and "run_turn" not in error


def drive(root: Path, store: str, state: Seed) -> str | None:
    """Kill, restart, attest when parked; ``None`` when finished, else why the seed is stuck."""
    pending, restarts = list(state.plan), 0
    while restarts <= MAX_RESTARTS:
        kill = pending.pop(0) if pending else None
        result = run_child(root, store, kill)
        state.log.append(f"{kill}: {result}")
        if result == "killed":
            state.kills += 1
            state.killed_at.append(str(kill[0]) if kill is not None else "?")
            state.window_ops |= emails_in_window(store)
            continue
        if result == "hung":
            return f"child hung at {kill}"
        if result == "failed":
            error = (root / "child-error.txt").read_text()
            if unavailable_at_start(error) and state.unavailable_starts < MAX_UNAVAILABLE_STARTS:
                state.unavailable_starts += 1
                continue
            return "child failed: " + error
        outcome = json.loads((root / live_agent.OUTCOME).read_text())
        if outcome["resume"] == "parked":
            stuck = operator(root, store, outcome, state)
            if stuck is not None:
                return stuck
            continue
        if finished(store):
            return None
        restarts += 1
    return f"no answer after {MAX_RESTARTS} restarts"


def one_seed(tmp: Path, seed: int, store_for: Any) -> tuple[Seed, list[str]]:
    root = tmp / f"seed-{seed}"
    (root / "workspace").mkdir(parents=True)
    port = random.Random(seed).randrange(1024, 65536)
    (root / "workspace" / "config.json").write_text(json.dumps({"port": port}))
    store = store_for(root)
    state = Seed(seed, plan_for(seed))
    stuck = drive(root, store, state)
    if stuck is not None:
        return state, [f"STUCK {stuck}", f"runs {store_summary(store)}", *state.log]
    problems = side_effect_problems(root, port, state) + check_requests(root)
    if len(state.attests) + state.fork_runs != len(state.parks):
        problems.append(f"parked {state.parks}")
    if problems:
        problems += [f"runs {store_summary(store)}", *state.log]
    return state, problems


def soak(tmp: Path, seeds: range, store_for: Any) -> None:
    results = [one_seed(tmp, seed, store_for) for seed in seeds]
    failures = {s.seed: (s.plan, p) for s, p in results if p}
    stuck = sum(1 for _, p in results if p and p[0].startswith("STUCK"))
    attested = Counter(decision for s, _ in results for _, decision in s.attests)
    ok = [s for s, p in results if not p]
    counts: dict[str, object] = {
        "seeds": len(results),
        "kills": sum(s.kills for s, _ in results),
        "finished_without_operator": sum(1 for s in ok if not s.attests and not s.forks),
        "finished_after_one_attest": sum(1 for s in ok if len(s.attests) == 1 and not s.forks),
        # a resent email (after "not applied") killed in ITS window too: one attest per window
        "finished_after_two_attests": sum(1 for s in ok if len(s.attests) > 1 and not s.forks),
        "finished_after_one_fork": sum(1 for s in ok if len(s.forks) == 1 and not s.attests),
        # a fork's resent email killed in ITS window: one more decision for that email
        "finished_after_a_fork_and_more": sum(
            1 for s in ok if s.forks and len(s.forks) + len(s.attests) > 1
        ),
        "attested": dict(attested),
        "forked": sum(len(s.forks) for s, _ in results),
        "fork_retries": sum(s.fork_runs - len(s.forks) for s, _ in results),
        "kills_in_forks": sum(s.fork_kills for s, _ in results),
        "restarts_after_store_unavailable": sum(s.unavailable_starts for s, _ in results),
        "stuck": stuck,
        "failed_checks": len(failures),
    }
    where = Counter(point for s, _ in results for point in s.killed_at)
    print(f"\nliveness {counts}\nkills by point {dict(where)}")
    assert not failures, f"{counts}: {failures}"
    assert attested.keys() >= {"applied", "not_applied"}, counts  # both attestations exercised
    assert counts["finished_after_one_fork"], counts  # and the fork, run to its answer
    assert counts["kills_in_forks"], counts  # and killed inside


def sqlite_store(root: Path) -> str:
    return str(root / "agent.sqlite")


def test_killed_agent_always_reaches_its_answer_sqlite(tmp_path: Path) -> None:
    soak(tmp_path, range(50), sqlite_store)


@pytest.mark.slow
def test_killed_agent_always_reaches_its_answer_sqlite_many_seeds(tmp_path: Path) -> None:
    soak(tmp_path, range(1000, 1300), sqlite_store)


def test_killed_agent_always_reaches_its_answer_postgres(tmp_path: Path, pg_store_url: str) -> None:
    soak(tmp_path, range(2000, 2020), fresh_store_for(pg_store_url))
