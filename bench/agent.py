"""A scripted model for the agent-loop workload that timestamps every provider call.

Why timestamps at the provider: the interval between two provider calls is one agent-loop
step as a host pays it (record the model turn, T1, the tool, T2, build the next request from
the run's replay), measured without reaching into the loop. The model itself costs nothing
(a scripted answer), so the figure is the library's own.
"""

from __future__ import annotations

import time

from maka_es.providers.protocol import ProviderRequest, ProviderTurn


class TimedProvider:
    """``steps`` turns of one Echo call each, then a text answer; ``intervals()`` is the
    seconds between consecutive calls (one per tool step, in order), ``cpu_intervals()`` the
    same in thread CPU time."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.calls: list[float] = []
        self.cpu: list[float] = []

    def complete(self, request: ProviderRequest) -> ProviderTurn:
        self.calls.append(time.perf_counter())
        self.cpu.append(time.thread_time())
        n = len(self.calls)
        if n > self.steps:
            return ProviderTurn(({"kind": "text", "text": "done"},))
        call = {"kind": "function_call", "id": f"c{n}", "name": "Echo", "args": {"text": f"{n}"}}
        return ProviderTurn((call,))

    def intervals(self) -> list[float]:
        return [b - a for a, b in zip(self.calls, self.calls[1:], strict=False)]

    def cpu_intervals(self) -> list[float]:
        """The calling thread's CPU seconds of each step (the machine's load not in it)."""
        return [b - a for a, b in zip(self.cpu, self.cpu[1:], strict=False)]
