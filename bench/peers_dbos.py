"""DBOS: a workflow of steps on DBOS's SQLite system database.

Why one workflow of ``batch`` steps rather than one workflow per step: DBOS checkpoints each
step's output as the step finishes, so the per-step cost inside a workflow is its cheapest
honest figure (workflow start and end are spread over the batch). DBOS records one fact per
step (the output); maka_es records two (T1 before the tool, T2 after).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dbos import DBOS, DBOSConfig

from bench.core import timed


@DBOS.step()
def echo_step(text: str) -> dict[str, Any]:
    return {"kind": "text", "text": text}


@DBOS.workflow()
def echo_workflow(steps: int) -> int:
    for n in range(steps):
        echo_step(f"step {n + 1}")
    return steps


def launch(path: Path) -> None:
    """DBOS is a process-wide singleton: one system database at a time."""
    config: DBOSConfig = {
        "name": "maka-bench",
        "system_database_url": f"sqlite:///{path}",
        "log_level": "WARNING",
    }
    DBOS(config=config)
    DBOS.launch()


def destroy() -> None:
    DBOS.destroy(destroy_registry=False)


class DbosPeer:
    """DBOS launched on ``path``; :meth:`steps` runs one workflow of ``batch`` steps."""

    def __init__(self, path: Path, batch: int) -> None:
        launch(path)
        self.batch = batch

    def steps(self) -> float:
        return timed(lambda: echo_workflow(self.batch)) / self.batch

    def close(self) -> None:
        destroy()
