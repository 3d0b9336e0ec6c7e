"""Which runs a recovering host may repair, when several hosts share one store
(docs/reference/continuation.md#run-ownership, ADR 0021).

Why before everything else in startup recovery: ending a run is a write, and a write to a run
another host owns under a live lease would end that host's live run. So recovery sorts its
candidates first: a run owned by another host whose lease is live is left alone
(``left_live_owner``); one whose owner's lease expired is taken over (``owner_taken_over``: one
save at the run's next version, the store picks one winner between two recovering hosts)
before recovery writes anything to it (a recovered terminal, or a lagging header made to follow
its terminal event: the former owner's late header write is then fenced, not raced), unless
this host's own heartbeat just waited on a locked store: the owner's lease may have lapsed
only because nobody could write, so the takeover waits for a later sweep (``left_live_owner``
with ``deferred: store_was_locked``); this
host's own runs of its previous incarnation and ownerless runs are kept as they are. A run
this application instance holds (created or took over, at the run's current epoch) is its own
live run, whichever thread is running it: it is left alone (``left_own_live_run``), so a live
host may call ``recover()`` periodically to sweep for dead hosts' runs. A run recovery would
not write to is never taken over.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from maka_es.ledger.run import Run
from maka_es.ledger.service import Ledger
from maka_es.wire.run_header import header_matches_terminal

OwnershipKind = Literal["left_live_owner", "left_own_live_run", "owner_taken_over"]


@dataclass
class OwnerSorting:
    """Runs recovery may repair (``kept``) and the repair lines of the ownership step."""

    kept: list[str] = field(default_factory=list)
    repairs: list[tuple[str, OwnershipKind, dict[str, Any]]] = field(default_factory=list)


def header_lags(run: Run) -> bool:
    """Whether recovery would repair the run's header from its terminal event, or give a
    terminal header its missing terminal event (docs/reference/continuation.md#ledger-repair)."""
    terminal = run.terminal_event
    if terminal is None:
        return run.header.is_terminal
    return not header_matches_terminal(run.header, terminal)


def sort_by_owner(
    ledger: Ledger, run_ids: list[str], would_end: Callable[[str], bool]
) -> OwnerSorting:
    """Sort ``run_ids`` by owner (see module docstring); ``would_end``: whether recovery
    would append a terminal to the run. Only runs recovery writes to are taken over."""
    ownership = ledger.ownership
    sorting = OwnerSorting()
    if ownership is None:
        sorting.kept.extend(run_ids)
        return sorting
    for run_id in run_ids:
        run = ledger.load_run(run_id)
        verdict = ownership.verdict(run)
        if verdict == "held":
            owner = run.owner
            assert owner is not None
            detail = {"ownerHostId": owner.host_id, "ownerEpoch": owner.epoch}
            sorting.repairs.append((run_id, "left_own_live_run", detail))
            continue
        if verdict == "expired" and (header_lags(run) or would_end(run_id)):
            previous = run.owner
            if ownership.take_over(run_id):
                owner = ledger.load_run(run_id).owner
                assert previous is not None
                assert owner is not None
                detail = {"previousHostId": previous.host_id, "epoch": owner.epoch}
                sorting.repairs.append((run_id, "owner_taken_over", detail))
                sorting.kept.append(run_id)
                continue
            run = ledger.load_run(run_id)  # another host took it over first, or deferred
        elif verdict != "live":
            sorting.kept.append(run_id)
            continue
        owner = run.owner
        assert owner is not None
        left: dict[str, Any] = {"ownerHostId": owner.host_id, "ownerEpoch": owner.epoch}
        if verdict == "expired" and ownership.store_waited_recently():
            left["deferred"] = "store_was_locked"
        sorting.repairs.append((run_id, "left_live_owner", left))
    return sorting
