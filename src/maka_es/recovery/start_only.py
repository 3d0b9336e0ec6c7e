"""The start-only rule of startup recovery: when a continuation that committed nothing but its
start may be ended (ADR 0035; docs/reference/continuation.md#ledger-repair).

Why a rule of its own: such a run (a continuation or an operator's fork killed before or
during its first model call) has no fact that says whether its provider is still running.
The reference therefore leaves it alone for good. maka_es records who owns a run (ADR 0021):
once recovery's ownership step has run, a run that is this host's own is the run of a previous
process of this host, or one just taken over from a host whose lease expired (whose late writes
are fenced). Its owner is gone, so recovery ends it. A run without a recorded owner has no
such proof and keeps the reference's rule, as does every run when the host asks for it
(``end_start_only_continuations=False``). A claim-repair start is recovery's own write and is
always finished (docs/reference/continuation.md#claim-repair).
"""

from __future__ import annotations

from collections.abc import Sequence

from maka_es.continuation.claims import is_continuation_start
from maka_es.ledger.host_leases import HostLeases
from maka_es.ledger.run import Run
from maka_es.wire.actions import ContinuationStartV2
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

__all__ = ["is_bare_continuation_start", "may_end_bare_start", "owner_is_gone", "start_fact"]


def is_bare_continuation_start(header: RunHeader, events: Sequence[RuntimeEvent]) -> bool:
    """A continuation run that holds its start fact and nothing else: no provider turn of its
    agent loop was committed (docs/reference/continuation.md#ledger-repair). Only such a run
    is left to the start-only rule; one that went further is recovered like any interrupted
    run (ADR 0020)."""
    return (
        header.continuation_source is not None
        and len(events) == 1
        and is_continuation_start(events[0])
    )


def start_fact(run: Run) -> ContinuationStartV2 | None:
    """The V2 start fact of a bare start (``None``: the Original P1 form)."""
    actions = run.events[0].actions
    return actions.continuation_start if actions is not None else None


def may_end_bare_start(run: Run, *, end_start_only_continuations: bool) -> bool:
    """Whether recovery ends this bare start once its owner is gone: a claim-repair start
    always; a runtime-admission one under the start-only rule, when an owner is recorded."""
    start = start_fact(run)
    if start is not None and start.provenance == "claim_repair":
        return True
    return end_start_only_continuations and run.owner is not None


def owner_is_gone(ownership: HostLeases | None, run: Run) -> bool:
    """Whether ``run``'s owner is proven gone, asked after the ownership step (which leaves
    other hosts' live runs and the runs this instance is running alone, and takes over expired
    ones): the run is this host's previous incarnation's, or this recovery just took it over
    from an expired owner (both ``own``: a run recovery took over is no live turn)."""
    return ownership is not None and ownership.verdict(run) == "own"
