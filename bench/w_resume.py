"""Workload (b): time to a usable resume decision after a restart, on a 100-step run.

maka_es: reopen the store and ``plan_resume``. LangGraph: reopen the saver, compile the graph,
``get_state`` (the next node to run). DBOS: launch on the system database (its recovery pass)
and list the workflow's recorded steps. Each reopen is timed from nothing open.
"""

from __future__ import annotations

from pathlib import Path

from dbos import DBOS

from bench import peers_dbos
from bench.core import Config, Figure, Stats, interleave, ratios, timed
from bench.peers_langgraph import LangGraphPeer, graph_for, open_saver
from bench.stores import open_app, start_run, tool_steps

GROUP = "resume decision after a restart (100-step run)"


def build(folder: Path, steps: int) -> dict[str, object]:
    folder.mkdir(parents=True, exist_ok=True)
    maka_path, lg_path, dbos_path = (
        folder / n for n in ("maka.sqlite", "lg.sqlite", "dbos.sqlite")
    )
    app = open_app(maka_path)
    tool_steps(app, start_run(app, "r100"), 1, steps)
    app.close()
    peer = LangGraphPeer(lg_path, steps)
    peer.run_thread("r100")
    peer.close()
    peers_dbos.launch(dbos_path)
    handle = DBOS.start_workflow(peers_dbos.echo_workflow, steps)
    handle.get_result()
    workflow_id = handle.get_workflow_id()
    peers_dbos.destroy()
    return {"maka": maka_path, "lg": lg_path, "dbos": dbos_path, "wf": workflow_id}


def maka_decision(path: Path) -> None:
    app = open_app(path)
    try:
        plan = app.plan_resume("r100")
        assert plan.disposition, "a resume decision"
    finally:
        app.close()


def langgraph_decision(path: Path, steps: int) -> None:
    conn, saver = open_saver(path)
    try:
        state = graph_for(saver, steps).get_state({"configurable": {"thread_id": "r100"}})
        assert state.values["steps"] == steps
    finally:
        conn.close()


def dbos_decision(path: Path, workflow_id: str) -> float:
    def decide() -> None:
        peers_dbos.launch(path)
        DBOS.list_workflow_steps(workflow_id)

    elapsed = timed(decide)
    peers_dbos.destroy()
    return elapsed


def run(cfg: Config) -> list[Figure]:
    f = build(cfg.workdir / "resume", cfg.resume_steps)
    maka_path, lg_path, dbos_path = Path(str(f["maka"])), Path(str(f["lg"])), Path(str(f["dbos"]))
    s = interleave(
        {
            "maka_es": lambda: timed(lambda: maka_decision(maka_path)),
            "langgraph": lambda: timed(lambda: langgraph_decision(lg_path, cfg.resume_steps)),
            "dbos": lambda: dbos_decision(dbos_path, str(f["wf"])),
        },
        cfg.reps,
        cfg.budget_s / 2,
    )
    return [
        Figure(
            GROUP,
            "maka_es: reopen + plan_resume",
            Stats.of(s["maka_es"]).scaled(1e3),
            "ms",
            "same run",
        ),
        Figure(
            GROUP,
            "LangGraph (reopen saver + get_state) / maka_es",
            ratios(s["langgraph"], s["maka_es"]),
            "x",
            f"LangGraph {Stats.of(s['langgraph']).median * 1e3:.1f} ms",
        ),
        Figure(
            GROUP,
            "DBOS (launch + list_workflow_steps) / maka_es",
            ratios(s["dbos"], s["maka_es"]),
            "x",
            f"DBOS {Stats.of(s['dbos']).median * 1e3:.1f} ms",
        ),
    ]
