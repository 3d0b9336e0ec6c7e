"""Target 4: an agent-loop step (``run_turn``) flat in the run's length, and its overhead over
a plain tool step at most one commit.

Each round, one long-lived child runs a whole turn of ``agent_steps`` tool calls with a
scripted model (bench/agent.py times each provider call), so its run grows from one event
to about ``1 + 3 * agent_steps``; the steps taken while the run held about 50 events and
about 500 events are compared within the round. In the same round two more children take
plain tool steps (``ToolRuntime.execute``) on a fresh run and raw sqlite3 floor steps (two
commits of the same bytes): the overhead of a loop step over a tool step is stated in units
of one floor commit. On disk, each round labelled by its fsync regime (bench/rounds.py);
the flatness target is checked on the loop thread's CPU time, the wall-clock rows beside it.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from bench.child import Child
from bench.contenders import AgentTurns
from bench.core import Config, Figure, Stats, Target
from bench.rounds import Round, by_regime, probes, regime_label, run_rounds
from bench.w_tool_step import start

GROUP = "4. agent loop step"
#: The run lengths compared, and the window (events either side) whose steps are averaged.
SHORT, LONG, WINDOW = 50, 500, 15


def window(samples: Sequence[float], events: int) -> list[float]:
    """The steps taken while the run held ``events`` +- ``WINDOW`` events (step ``k`` starts
    on ``1 + 3k`` events: the user message, then call, dispatch and response per step)."""
    return [s for k, s in enumerate(samples) if abs(1 + 3 * k - events) <= WINDOW]


def steps_for(events: int = LONG) -> int:
    """A turn long enough to pass ``events`` by a whole window."""
    return (events + WINDOW) // 3 + 2


def _loop(r: Round, events: int) -> float:
    return statistics.fmean(window(r.samples["agent"], events))


def _profile(cfg: Config) -> Callable[[], Callable[[], object]]:
    def prepare() -> Callable[[], object]:
        folder = cfg.workdir / "agent-profile"
        folder.mkdir(parents=True, exist_ok=True)
        return AgentTurns(str(folder / "agent.sqlite"), steps_for()).batch

    return prepare


def cpu_flatness(rounds: Sequence[Round], cfg: Config) -> Figure:
    """The flatness target in the loop thread's CPU time, over every round: the disk's
    fsync regime and the machine's load are not in it."""
    ratio = [
        statistics.fmean(window(r.cpu_steps["agent"], LONG))
        / statistics.fmean(window(r.cpu_steps["agent"], SHORT))
        for r in rounds
    ]
    short = statistics.median(statistics.fmean(window(r.cpu_steps["agent"], SHORT)) for r in rounds)
    return Figure(
        GROUP,
        f"run_turn step CPU time, ~{LONG}-event / ~{SHORT}-event run, all rounds",
        Stats.of(ratio),
        "x",
        f"~{SHORT}-event run: {short * 1e3:.2f} ms CPU per step",
        Target("<=", 1.2),
        _profile(cfg),
    )


def rows_for(rounds: Sequence[Round], where: str, cfg: Config) -> list[Figure]:
    short = [_loop(r, SHORT) for r in rounds]
    long = [_loop(r, LONG) for r in rounds]
    commit = [r.cost("floor") / 2 for r in rounds]
    over = [(_loop(r, SHORT) - r.cost("maka_es")) / c for r, c in zip(rounds, commit, strict=True)]
    profile = _profile(cfg)
    return [
        Figure(
            GROUP,
            f"run_turn step, ~{SHORT}-event run, {where}",
            Stats.of(short).scaled(1e3),
            "ms",
            "same rounds",
        ),
        Figure(
            GROUP,
            f"run_turn step, ~{LONG}-event run, {where}",
            Stats.of(long).scaled(1e3),
            "ms",
            "same rounds",
        ),
        Figure(
            GROUP,
            f"run_turn step, ~{LONG}-event / ~{SHORT}-event run, {where}",
            Stats.of([a / b for a, b in zip(long, short, strict=True)]),
            "x",
            "the same turn, same round (wall clock; the target is on CPU time above)",
        ),
        Figure(
            GROUP,
            f"run_turn step over a plain tool step, in floor commits, {where}",
            Stats.of(over),
            "commits",
            f"one floor commit {statistics.median(commit) * 1e3:.3f} ms; tool step "
            f"{statistics.median(r.cost('maka_es') for r in rounds) * 1e3:.3f} ms",
            Target("<=", 1.0),
            profile,
        ),
    ]


def run(cfg: Config) -> list[Figure]:
    folder = cfg.workdir / "agent"
    children = start(folder, cfg.step_batch, ["maka_es", "floor"])
    agent = Child("agent", path=str(folder / "agent.sqlite"), steps=steps_for())
    children["agent"] = agent
    try:
        for child in children.values():
            child.batch()  # warm
        rounds = run_rounds(
            {name: child.batch for name, child in children.items()},
            cfg.reps,
            budget_s=cfg.budget_s / 2,
            probe=folder,
            cpu_steps={"agent": lambda: agent.last_cpu_steps},
        )
    finally:
        for child in children.values():
            child.close()
    figures = [cpu_flatness(rounds, cfg)]
    for regime, group in by_regime(rounds).items():
        where = f"disk, {regime_label(probes(group), regime)}, {len(group)} of {len(rounds)} rounds"
        figures += rows_for(group, where, cfg)
    return figures
