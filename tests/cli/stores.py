"""Real SQLite stores for the CLI tests, built through the public API (a local builder: the
shapes of tests/integration/recovery/test_operator_*.py, with a real workspace marker so the
continuation gates can pass), and the helper that runs the installed console script."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maka_es.adapters.workspace import resolve_workspace_identity
from maka_es.app import RuntimeApplication
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from tests.support.send_tool import Killed, send_tool

#: The console script ``make install`` put next to this interpreter ([project.scripts]).
MAKA_ES = Path(sys.executable).with_name("maka-es")
SPINE = Spine(run_id="r1", invocation_id="i-r1", turn_id="t-r1")


def build_store(root: Path, *, dies: bool, store: str | None = None) -> tuple[Path, str]:
    """A session ``s1`` in ``root/workspace`` (marker created) with run ``r1``: a Send call
    that died after T1 (``dies``, the run left live) or completed; the store (a SQLite file
    under ``root``, unless ``store`` names another, e.g. a PostgreSQL URL) and the op id."""
    workspace = root / "workspace"
    workspace.mkdir(parents=True)
    identity = resolve_workspace_identity(workspace).identity
    db = root / "runtime.sqlite"
    with RuntimeApplication.open(store or str(db), tools=[send_tool(dies)]) as app:
        app.open_session("s1", str(workspace), identity)
        app.ledger.create_run(run_header(SPINE, workspaceIdentity=identity, cwd=str(workspace)))
        ledger = LedgerBuilder(SPINE)
        ledger.user(marker=True)
        app.ledger.append_events("r1", ledger.events)
        with contextlib.suppress(Killed):  # dies: the process "died" after T1
            app.tool_runtime.execute("r1", ledger.call("c1", "Send", {"to": "ops"}))
    return db, SPINE.operation_id("c1")


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def cli(
    *args: str,
    store: Path | str | None = None,
    timeout: float = 300,
    env: dict[str, str] | None = None,
) -> Ran:
    """Run ``maka-es [--store STORE] ARGS`` in a subprocess (``env``: added to os.environ)."""
    argv = [str(MAKA_ES), *(["--store", str(store)] if store is not None else []), *args]
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=None if env is None else {**os.environ, **env},
    )
    return Ran(done.returncode, done.stdout, done.stderr)


def rows(db: Path) -> list[tuple[Any, ...]]:
    """Every stored row, read with sqlite3 directly (the evidence that nothing changed)."""
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT * FROM stored_events ORDER BY rowid").fetchall()
