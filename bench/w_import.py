"""Workload (g): import time, each in a fresh interpreter, interleaved with the peers.

What a host imports to take one durable step: ``maka_es``; LangGraph's graph and SQLite saver;
``dbos``. A bare interpreter start (``pass``) is measured in the same run for reference.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Callable

from bench.core import Config, Figure, Stats, Target, interleave, ratios, timed

GROUP = "import time (issue 12)"
IMPORTS = {
    "python": "pass",
    "maka_es": "import maka_es",
    "langgraph": "import langgraph.graph, langgraph.checkpoint.sqlite",
    "dbos": "import dbos",
}


def _importer(code: str) -> Callable[[], float]:
    def run() -> float:
        return timed(lambda: subprocess.run([sys.executable, "-c", code], check=True))

    return run


def _profile() -> Callable[[], object]:
    """maka_es's own modules imported again in this process (its dependencies stay loaded:
    the profile shows what maka_es itself adds)."""
    for name in [m for m in sys.modules if m == "maka_es" or m.startswith("maka_es.")]:
        del sys.modules[name]
    return lambda: importlib.import_module("maka_es")


def run(cfg: Config) -> list[Figure]:
    s = interleave(
        {name: _importer(code) for name, code in IMPORTS.items()}, cfg.reps, cfg.budget_s / 2
    )
    base = f"bare interpreter {Stats.of(s['python']).median * 1e3:.0f} ms"
    return [
        Figure(
            GROUP,
            "`import maka_es` (fresh process)",
            Stats.of(s["maka_es"]).scaled(1e3),
            "ms",
            base,
        ),
        Figure(
            GROUP,
            "LangGraph import / maka_es import",
            ratios(s["langgraph"], s["maka_es"]),
            "x",
            f"LangGraph {Stats.of(s['langgraph']).median * 1e3:.0f} ms",
            Target(">=", 1.0),
            _profile,
        ),
        Figure(
            GROUP,
            "DBOS import / maka_es import",
            ratios(s["dbos"], s["maka_es"]),
            "x",
            f"DBOS {Stats.of(s['dbos']).median * 1e3:.0f} ms",
            Target(">=", 1.0),
            _profile,
        ),
    ]
