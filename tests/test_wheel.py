"""The built wheel, installed in a fresh venv: the core alone, then with the ``cli`` extra.

Why a real wheel and a real venv (ADR 0040): the suite's venv is an editable install with every
extra, so it cannot show that the core imports without typer, rich and jinja2, nor that
``maka-es demo`` finds its example agent when no source tree is there. Here the wheel is built
from a copy of ``pyproject.toml``, ``README.md`` and ``src/`` (the checkout is not touched),
installed by pip into a new venv (dependencies from the configured index, PyPI, pinned to the
versions of the suite's own venv), and run from a directory outside the checkout with no
``PYTHONPATH``. It prints what it ran, so the output can be read with ``pytest -s``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI_EXTRA = ("typer", "rich", "jinja2")
CORE_PROBE = """
import importlib.util, json, sys
import maka_es
from maka_es import RuntimeApplication
app = RuntimeApplication.open(sys.argv[1])
app.open_session("s1", "/workspace")
repairs = app.recover().repairs
app.close()
print(json.dumps({
    "file": maka_es.__file__,
    "version": maka_es.__version__,
    "repairs": list(repairs),
    "missing": [m for m in ("typer", "rich", "jinja2") if importlib.util.find_spec(m) is None],
}))
"""


def _run(argv: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """``argv`` with neither this checkout on ``PYTHONPATH`` nor the suite's venv active."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    print("$", " ".join(argv))
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _build_wheel(work: Path) -> Path:
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "src", source / "src", ignore=ignore)
    dist = work / "dist"
    done = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(source)],
        work,
    )
    assert done.returncode == 0, done.stderr
    [wheel] = dist.glob("maka_es-*.whl")
    return wheel


def _pins(work: Path) -> Path:
    """The suite's own versions as pip constraints, so the fresh venv runs what it tested."""
    frozen = _run([sys.executable, "-m", "pip", "freeze", "--exclude-editable"], work)
    assert frozen.returncode == 0, frozen.stderr
    lines = [
        line
        for line in frozen.stdout.splitlines()
        if "==" in line and " @ " not in line and not line.lower().startswith("maka")
    ]
    pins = work / "constraints.txt"
    pins.write_text("\n".join(lines) + "\n")
    return pins


def _pip_install(venv: Path, requirement: str, pins: Path, work: Path) -> None:
    """pip of the suite's interpreter, installing into ``venv`` (no pip inside it needed)."""
    python = venv / "bin" / "python"
    argv = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "-c", str(pins)]
    done = _run([*argv, requirement], work)
    assert done.returncode == 0, done.stderr


def _core_only(venv: Path, wheel: Path, pins: Path, work: Path) -> None:
    """The core alone: it imports and runs, the extras' modules are absent, the script says
    which extra to install."""
    _pip_install(venv, str(wheel), pins, work)
    done = _run([str(venv / "bin" / "python"), "-c", CORE_PROBE, str(work / "core.sqlite")], work)
    assert done.returncode == 0, done.stderr
    print(done.stdout, end="")
    probe = json.loads(done.stdout)
    assert Path(probe["file"]).is_relative_to(venv)  # the wheel's copy, not this checkout's
    assert probe["missing"] == list(CLI_EXTRA)
    assert probe["repairs"] == []
    script = _run([str(venv / "bin" / "maka-es"), "runs"], work)
    print(script.stderr, end="")
    assert script.returncode == 1
    assert script.stderr.splitlines() == [
        "error [extra_missing]: the maka-es command line (maka_es.cli) needs the cli extra "
        "(typer is not installed). what to do: pip install 'maka_es[cli]'"
    ]


def _demo(venv: Path, work: Path) -> str:
    outside = work / "elsewhere"
    outside.mkdir()
    assert not outside.is_relative_to(ROOT)
    done = _run([str(venv / "bin" / "maka-es"), "demo", "--workspace", "demo"], outside)
    print(done.stdout, end="")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (outside / "demo" / "workspace" / "port.txt").read_text() == "4000\n"
    return done.stdout


def test_the_wheel_runs_with_the_core_alone_and_the_demo_with_the_cli_extra(
    tmp_path: Path,
) -> None:
    wheel = _build_wheel(tmp_path)
    pins = _pins(tmp_path)
    venv = tmp_path / "venv"
    created = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path)
    assert created.returncode == 0, created.stderr
    _core_only(venv, wheel, pins, tmp_path)
    _pip_install(venv, f"{wheel}[cli]", pins, tmp_path)
    out = _demo(venv, tmp_path)
    assert "inside its Write with SIGKILL (returncode -9)" in out
    assert '"disposition": "blocked", "rejectionReasons": ["dangling_tool_state"]' in out
    assert "('r1', 'tools_recovered'), ('r1', 'terminal_recovered')" in out
    assert "child: answer: Done: port.txt holds the configured port." in out
    assert "writes: 1; same inode: True" in out
    assert "every call paired with exactly one result: True ['call_1', 'call_2']" in out
    assert "planning the same boundary again: park ['continuation_already_exists']" in out
