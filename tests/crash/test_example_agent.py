"""The example agent (examples/two_tool_agent.py), SIGKILLed inside its Write and restarted.

Why: the example is what a host copies; it must keep its promise under a real ``kill -9``. The
child (``maka_es.testing.example_child``) runs the unchanged example with a write probe and a
kill point after the write landed (after the file replace, before/inside/after T2). The restart
must settle the write from the file without writing again (same inode, same content, one probe
line) and finish the conversation: every call answered by exactly one result, the model's
final answer present (docs/adr/0019-startup-recovery-reconciles-before-it-seals.md).
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from maka_es.app import RuntimeApplication
from maka_es.testing.example_child import AFTER_LANDED, WRITE_LOG
from maka_es.wire.events import FunctionCallContent, FunctionResponseContent, TextContent

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "two_tool_agent.py"
LANDED_POINTS = ("after_write", *AFTER_LANDED)
ANSWER = "Done: port.txt holds the configured port."


def _start(root: Path, point: str | None) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "maka_es.testing.example_child", str(EXAMPLE), str(root)]
    return subprocess.Popen(
        argv + ([point] if point else []), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def kill_inside(root: Path, point: str) -> None:
    """Run the example until ``point``, then SIGKILL it there."""
    child = _start(root, point)
    assert child.stdout is not None
    try:
        lines = iter(child.stdout.readline, "")
        said = next((line.strip() for line in lines if line.strip() == "INSIDE"), None)
        assert said == "INSIDE", child.stderr.read() if child.stderr else ""
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
        child.stdout.close()
        if child.stderr is not None:
            child.stderr.close()


def restart(root: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "maka_es.testing.example_child", str(EXAMPLE), str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def conversation(root: Path) -> tuple[Counter[str], Counter[str], list[str]]:
    """Call ids, result ids and model texts of every run of the example's session."""
    calls: Counter[str] = Counter()
    results: Counter[str] = Counter()
    texts: list[str] = []
    with RuntimeApplication.open_sqlite(str(root / "agent.sqlite"), read_only=True) as app:
        for header in app.list_runs("s1"):
            for event in app.read_run_events(header.run_id):
                content = event.content
                if isinstance(content, FunctionCallContent):
                    calls[content.id] += 1
                elif isinstance(content, FunctionResponseContent):
                    results[content.id] += 1
                elif isinstance(content, TextContent) and event.role == "model":
                    texts.append(content.text)
    return calls, results, texts


def crash_and_restart(tmp: Path, seed: int) -> None:
    rng = random.Random(seed)
    point, port = rng.choice(LANDED_POINTS), rng.randrange(1024, 65536)
    root = tmp / f"seed-{seed}"
    (root / "workspace").mkdir(parents=True)
    (root / "workspace" / "config.json").write_text(json.dumps({"port": port}))
    target = root / "workspace" / "port.txt"

    kill_inside(root, point)
    landed = target.stat()
    assert target.read_text() == f"{port}\n", (seed, point)

    out = restart(root)
    assert f"answer: {ANSWER}" in out, (seed, point, out)
    # T2 not committed: recovery settles the write from the file (after T2: nothing to settle)
    assert ("tools_recovered" in out) == (point != "after_t2"), (seed, point, out)
    assert target.stat().st_ino == landed.st_ino, (seed, point)  # never replaced again
    assert target.read_text() == f"{port}\n"
    assert (root / WRITE_LOG).read_text().splitlines() == ["port.txt"], (seed, point)
    calls, results, texts = conversation(root)
    assert calls == Counter({"call_1": 1, "call_2": 1}), (seed, calls)
    assert results == calls, (seed, point, results)
    assert texts[-1] == ANSWER, (seed, texts)
    assert texts.count(ANSWER) == 1, (seed, texts)


def _seeds(tmp_path: Path, seeds: range) -> None:
    with ThreadPoolExecutor(max_workers=3) as pool:
        list(pool.map(lambda seed: crash_and_restart(tmp_path, seed), seeds))


def test_example_agent_killed_inside_its_write_finishes_with_one_write(tmp_path: Path) -> None:
    _seeds(tmp_path, range(20))


@pytest.mark.slow
def test_example_agent_survives_many_kill_points(tmp_path: Path) -> None:
    _seeds(tmp_path, range(20, 120))


def test_example_agent_killed_before_its_write_decides_again_and_writes_once(
    tmp_path: Path,
) -> None:
    """Killed after T1 but before the file changed: the reconciler proves the prior state, so
    recovery settles the Write as not applied (ADR 0019, amendment of 2026-12-01), never
    re-running it by itself; the continuation's model reads that, writes again, and the file
    is written exactly once, with every call answered once."""
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "config.json").write_text('{"port": 4000}')
    kill_inside(tmp_path, "before_write")
    assert not (tmp_path / "workspace" / "port.txt").exists()
    assert not (tmp_path / WRITE_LOG).exists()
    out = restart(tmp_path)
    assert "tools_recovered" in out, out
    assert "plan: continue" in out, out
    assert f"answer: {ANSWER}" in out, out
    assert (tmp_path / "workspace" / "port.txt").read_text() == "4000\n"
    assert (tmp_path / WRITE_LOG).read_text().splitlines() == ["port.txt"]
    calls, results, _ = conversation(tmp_path)
    assert calls == Counter({"call_1": 1, "call_2": 1, "call_3": 1})
    assert results == calls  # the first Write answered "not applied", the second "wrote"
