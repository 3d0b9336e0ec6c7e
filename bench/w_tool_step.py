"""Target 3: one tool step, T1 -> tool -> T2, against both floors, LangGraph and DBOS.

Every contender is a long-lived child process (bench/child.py) running ``step_batch`` steps
per round on a fresh run (thread, workflow), so per-step state stays comparable; the rounds
interleave the contenders and every ratio is taken inside a round (bench/rounds.py). On
tmpfs (``/dev/shm``), where the fsync is nearly free, the figure is the CPU cost, against the
minimal Python journal of the same durability (bench/journal.py), in process CPU time
(the children report it with each batch) as well as wall clock. On disk each round is
labelled by the fsync regime probed around its batches, and rows are given per regime: the
"fast disk" target is checked on the fast-fsync rounds only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.child import Child
from bench.contenders import save_commits
from bench.core import Config, Figure, Stats, Target
from bench.floor import Row
from bench.rounds import (
    Round,
    by_regime,
    costs,
    cpu_costs,
    cpu_within,
    probes,
    regime_label,
    run_rounds,
    within,
)
from bench.stores import ECHO, max_rowid, open_app, rows_after, start_run, tool_steps
from maka_es.tooljournal.runtime import Tool, ToolContext

GROUP = "3. tool step"
#: name -> (child kind, extra parameters, label)
CONTENDERS: dict[str, tuple[str, dict[str, Any], str]] = {
    "maka_es": ("maka", {}, "maka_es"),
    "floor": ("floor", {}, "raw sqlite3 floor (2 fsynced commits, same bytes)"),
    "journal": ("journal", {}, "minimal Python journal (same rows, same 2 commits)"),
    "langgraph": ("langgraph", {}, "LangGraph agent with ToolNode (SqliteSaver, sync)"),
    "langgraph_min": (
        "langgraph",
        {"minimal": True},
        "minimal LangGraph graph (SqliteSaver)",
    ),
    "dbos": ("dbos", {}, "DBOS (SQLite system db)"),
}


def step_rows(folder: Path) -> list[list[Row]]:
    """The rows one warm tool step commits, split into its T1 and T2 transactions."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "probe.sqlite"
    seen: list[int] = []

    def probe(args: Any, context: ToolContext) -> dict[str, Any]:
        seen.append(max_rowid(path))  # T1 is durable while the tool runs
        return {"kind": "text", "text": args.text}

    app = open_app(path)
    app.tool_runtime.tools["Echo"] = Tool("Echo", ECHO.input_model, probe)
    run = start_run(app, "probe")
    tool_steps(app, run, 1, 2)  # warm: the second step is the one measured
    before = max_rowid(path)
    tool_steps(app, run, 3, 1)
    app.close()
    rows = rows_after(path, before)
    split = seen[-1] - before
    return [rows[:split], rows[split:]]


def start(folder: Path, batch: int, names: Sequence[str]) -> dict[str, Child]:
    """One child per contender, each on its own file in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = folder / "rows.json"
    save_commits(rows, step_rows(folder))
    children: dict[str, Child] = {}
    try:
        for name in names:
            kind, extra, _ = CONTENDERS[name]
            params: dict[str, Any] = {
                "path": str(folder / f"{name}.sqlite"),
                "batch": batch,
            }
            if kind == "floor":
                params["rows"] = str(rows)
            children[name] = Child(kind, **{**params, **extra})
    except BaseException:
        for child in children.values():
            child.close()
        raise
    return children


def measure(folder: Path, cfg: Config, reps: int, disk: bool) -> list[Round]:
    """Rounds of every contender in ``folder`` (fsync-probed when ``disk``)."""
    children = start(folder, cfg.step_batch, list(CONTENDERS))
    try:
        for child in children.values():
            child.batch()  # warm: imports, caches, first run
        batches = {name: child.batch for name, child in children.items()}
        cpu = {name: (lambda c=child: c.last_cpu) for name, child in children.items()}
        return run_rounds(
            batches, reps, budget_s=cfg.budget_s / 2, probe=folder if disk else None, cpu=cpu
        )
    finally:
        for child in children.values():
            child.close()


def _profile(folder: Path, cfg: Config) -> Callable[[], Callable[[], object]]:
    def prepare() -> Callable[[], object]:
        from bench.contenders import MakaSteps

        folder.mkdir(parents=True, exist_ok=True)
        steps = MakaSteps(str(folder / "profile.sqlite"), cfg.step_batch * 5)
        return steps.batch

    return prepare


def _ratio(
    rounds: Sequence[Round], peer: str, target: Target | None, where: str, profile: Any
) -> Figure:
    """A peer's cost over maka_es's (or maka_es's over a floor's), per round."""
    num, den = (peer, "maka_es") if peer.startswith(("langgraph", "dbos")) else ("maka_es", peer)
    label = CONTENDERS[peer][2]
    text = f"{label} / maka_es" if num == peer else f"maka_es / {label}"
    base = f"{label.split(' (')[0]} {Stats.of(costs(rounds, peer)).median * 1e3:.3f} ms"
    return Figure(
        GROUP,
        f"{text}, {where}",
        Stats.of(within(rounds, num, den)),
        "x",
        base,
        target,
        profile,
    )


def rows_for(
    rounds: Sequence[Round], where: str, cpu: bool, fast: bool, profile: Any
) -> list[Figure]:
    """The rows of one medium (tmpfs) or one fsync regime (disk). On tmpfs the CPU target is
    checked on process CPU time (a descheduled child accrues none, so the machine's load
    does not enter it); wall-clock rows stand beside it."""
    gate = cpu or fast  # the ratios to the peers are targets on tmpfs and on a fast disk
    maka = Stats.of(costs(rounds, "maka_es")).scaled(1e3)
    figures = [
        Figure(GROUP, f"maka_es per step (wall clock), {where}", maka, "ms", "same rounds"),
        _ratio(rounds, "journal", None, where, profile),
        _ratio(rounds, "floor", Target("<=", 1.6) if fast else None, where, profile),
        _ratio(rounds, "langgraph", Target(">=", 4.0) if gate else None, where, profile),
        _ratio(rounds, "langgraph_min", None, where, profile),
        _ratio(rounds, "dbos", Target(">=", 4.0) if gate else None, where, profile),
    ]
    if cpu:
        figures[1:1] = cpu_rows(rounds, where, profile)
    return figures


def cpu_rows(rounds: Sequence[Round], where: str, profile: Any) -> list[Figure]:
    """Process CPU time per step: maka_es against the minimal journal (target 3), and the
    peers' CPU over maka_es's (theirs includes their own background threads)."""
    journal = Stats.of(cpu_costs(rounds, "journal")).median * 1e3
    return [
        Figure(
            GROUP,
            f"maka_es CPU per step (process time), {where}",
            Stats.of(cpu_costs(rounds, "maka_es")).scaled(1e3),
            "ms",
            f"minimal Python journal {journal:.3f} ms CPU",
            Target("<=", 0.4),
            profile,
        ),
        Figure(
            GROUP,
            f"maka_es / minimal Python journal, CPU time, {where}",
            Stats.of(cpu_within(rounds, "maka_es", "journal")),
            "x",
            f"minimal Python journal {journal:.3f} ms CPU",
            Target("<=", 1.6),
            profile,
        ),
        *(
            Figure(
                GROUP,
                f"{CONTENDERS[peer][2]} / maka_es, CPU time, {where}",
                Stats.of(cpu_within(rounds, peer, "maka_es")),
                "x",
                f"{Stats.of(cpu_costs(rounds, peer)).median * 1e3:.3f} ms CPU",
            )
            for peer in ("langgraph", "dbos")
        ),
    ]


def run(cfg: Config) -> list[Figure]:
    figures: list[Figure] = []
    if cfg.tmpfs is not None:
        cpu = cfg.tmpfs / "step-cpu"
        rounds = measure(cpu, cfg, cfg.reps, disk=False)
        figures += rows_for(rounds, "tmpfs (CPU)", True, False, _profile(cpu, cfg))
    disk = cfg.workdir / "step-disk"
    rounds = measure(disk, cfg, cfg.reps * 2, disk=True)
    for regime, group in by_regime(rounds).items():
        where = f"disk, {regime_label(probes(group), regime)}, {len(group)} of {len(rounds)} rounds"
        figures += rows_for(group, where, False, regime == "fast", _profile(disk, cfg))
    return figures
