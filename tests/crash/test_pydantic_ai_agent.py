"""examples/pydantic_ai_agent.py SIGKILLed inside and around its tools, then restarted
(issue 24, part 1; ADR 0041).

Why: the example is what a Pydantic AI host copies; it must keep its promise under a real
``kill -9``. The child (``tests.crash.pydantic_ai_child``, each one a process forked from a
server that imported Pydantic AI once) runs the unchanged example, driven by a scripted
``FunctionModel`` (offline, deterministic), and is killed at a kill point of one tool call
(the seeds walk every point at every call): inside the save of the model answer that asks
for it, after its T1, after the tool ran (before T2), inside T2's transaction, or after T2.
Then it is restarted until the conversation ends; a run parked on the mail
(``never_auto_retry``: it may or may not have left) is settled by ONE ``maka-es attest`` of
what the outbox shows. Checked: the final
answer, the file written once, the mail sent once, and no request the model received holds a
dangling call or a duplicated prompt.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import shlex
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessagesTypeAdapter

from maka_es.app import RuntimeApplication
from tests.crash.pydantic_ai_child import POINTS, child_entry
from tests.integrations.pai_support import assert_clean_requests

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "Copy the port from config.txt into port.txt, then email ops that it is done."
#: Children fork from a server that imported the child module (Pydantic AI, the example) once.
FORKS = multiprocessing.get_context("forkserver")
FORKS.set_forkserver_preload(["tests.crash.pydantic_ai_child"])
#: The ``maka-es`` command of this interpreter's environment.
MAKA_ES = [sys.executable, "-c", "from maka_es.console import main; main()"]


def spawn(root: Path, *args: str) -> tuple[BaseProcess, Connection]:
    """A child process running the example (forked from the preloaded forkserver)."""
    receive, send = FORKS.Pipe(duplex=False)
    child = FORKS.Process(target=child_entry, args=([str(root), *args], send))
    child.start()
    send.close()
    return child, receive


def said(child: BaseProcess, pipe: Connection) -> tuple[str, str]:
    """What the child said first: ``INSIDE`` (it waits at its kill point) or its end."""
    assert pipe.poll(90), "the child said nothing"
    try:
        message: tuple[str, str] = pipe.recv()
    except EOFError:
        child.join(30)
        raise AssertionError(f"the child died silently ({child.exitcode})") from None
    return message


def kill_at(root: Path, point: str, nth: int) -> bool:
    """Run the example until ``point`` of its ``nth`` tool call and SIGKILL it there; False
    when the child finished before reaching it."""
    child, pipe = spawn(root, point, str(nth))
    try:
        kind, text = said(child, pipe)
        if kind != "INSIDE":
            child.join(60)
            assert (kind, child.exitcode) == ("done", 0), text
            return False
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        child.join(30)
        assert child.exitcode == -signal.SIGKILL
        return True
    finally:
        if child.is_alive():
            child.kill()
            child.join(30)
        pipe.close()


def restart(root: Path) -> str:
    child, pipe = spawn(root)
    try:
        kind, text = said(child, pipe)
        child.join(60)
    finally:
        pipe.close()
    assert (kind, child.exitcode) == ("done", 0), text
    return text.strip()


def attest(root: Path, parked: str) -> None:
    """One operator attestation of the mail, from what the outbox shows."""
    command = next(c for c in parked.split(" | ") if c.startswith("maka-es attest"))
    run_id, operation_id = shlex.split(command)[2:4]
    sent = (root / "workspace" / "outbox.txt").exists()
    decision = ["--applied", "--result", "sent"] if sent else ["--not-applied"]
    store = str(root / "agent.sqlite")
    out = subprocess.run(
        [*MAKA_ES, "--store", store, "attest", run_id, operation_id, *decision, "--actor", "ops"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr


def finish(root: Path) -> tuple[str, int]:
    """Restart until the conversation ends; how many attestations it took."""
    attestations = 0
    for _ in range(3):
        out = restart(root)
        if not out.startswith("parked: "):
            return out, attestations
        attest(root, out)
        attestations += 1
    raise AssertionError(f"still parked after {attestations} attestations: {out}")


def check_session(root: Path) -> None:
    """The session's last turn completed with the answer; every run's calls answered."""
    with RuntimeApplication.open_sqlite(str(root / "agent.sqlite"), read_only=True) as app:
        runs = app.list_runs("s1")
        assert runs[-1].status == "completed"
        prompts = [
            e.content.text
            for run in runs
            for e in app.read_run_events(run.run_id)
            if e.role == "user" and e.content is not None and e.content.kind == "text"
        ]
        assert prompts == [PROMPT]  # one turn, its prompt recorded once


def crash_and_restart(tmp: Path, seed: int) -> None:
    # seeds 0-14 are every kill point at every call (read, write, mail); the port is seeded
    point, nth = POINTS[seed % len(POINTS)], (seed // len(POINTS)) % 3 + 1
    port = random.Random(seed).randrange(1024, 65536)
    root = tmp / f"seed-{seed}"
    (root / "workspace").mkdir(parents=True)
    (root / "workspace" / "config.txt").write_text(f"{port}\n")
    where = (seed, point, nth)

    killed = kill_at(root, point, nth)
    assert killed, where  # every seeded point lies on the turn's path
    out, attestations = finish(root)
    assert out == f"answer: Done: port.txt holds {port} and ops was told.", (where, out)
    # the mail parks only when killed between its T1 and T2
    mail_window = nth == 3 and point in ("after_t1", "before_t2", "inside_t2")
    assert attestations == (1 if mail_window else 0), (where, attestations)
    assert (root / "workspace" / "port.txt").read_text() == f"{port}\n", where
    assert (root / "writes.log").read_text() == "port.txt\n", where  # written once
    outbox = (root / "workspace" / "outbox.txt").read_text()
    assert outbox == f"ops: port.txt holds {port}\n", where  # sent once
    requests = [
        ModelMessagesTypeAdapter.validate_json(line)
        for line in (root / "requests.jsonl").read_bytes().splitlines()
    ]
    assert_clean_requests(requests, [PROMPT])
    check_session(root)


def _seeds(tmp_path: Path, seeds: range) -> None:
    with ThreadPoolExecutor(max_workers=3) as pool:
        list(pool.map(lambda seed: crash_and_restart(tmp_path, seed), seeds))


def test_pydantic_ai_example_killed_around_its_tools_finishes_with_each_effect_once(
    tmp_path: Path,
) -> None:
    _seeds(tmp_path, range(20))


@pytest.mark.slow
def test_pydantic_ai_example_survives_many_kill_points(tmp_path: Path) -> None:
    _seeds(tmp_path, range(20, 100))
