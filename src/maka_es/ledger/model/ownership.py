"""Run ownership: host leases, owner epochs and fencing, as pure rules (ADR 0021).

Why pure: who may write to a run, and which runs a recovering host may end, must be decided
the same way by every process and every store. The facts are stored like any other (a host's
lease renewals on its own stream, a run's owner in its ``RunCreated`` and ``RunOwnerTaken``
facts), the store's uniqueness on ``(originator_id, originator_version)`` arbitrates between two
hosts taking over the same run, and "now" is passed in by the caller (the application's clock):
nothing here reads a clock or keeps a lock.

The rules:

* a run is owned by ``(host id, epoch)``; epoch 1 at creation, ``+1`` at each takeover;
* a host's lease is its newest renewal; it is live while ``now < expires_at``;
* a recovering host leaves alone a run its own process holds at the run's epoch (its own live
  run); it may end a run it owns itself but does not hold (its previous incarnation: a host id
  is stable across restarts, and unique per live process), an ownerless run (written before
  ownership), or a run whose owner's lease has expired or was never recorded, after taking it
  over; a run of another host with a live lease is left alone;
* a writer that held the run at an epoch the run no longer has, or that never held a live run
  owned by another host, is fenced: ``run_owner_fenced``, nothing written.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from maka_es.errors import RunOwnerFencedError, StoreCorruptionError
from maka_es.ledger.model.facts import (
    EpochMs,
    HostLeaseRenewed,
    RunOwnerTaken,
    host_stream_id,
    run_stream_id,
)

__all__ = [
    "HostLease",
    "OwnerVerdict",
    "RunOwner",
    "decide_renewal",
    "decide_take_over",
    "fencing_refusal",
    "owner_verdict",
    "project_host_lease",
]

#: What a recovering host may do with a run: ``held`` (this process's own live run: leave it
#: alone), ``own`` (this host's previous incarnation's, ended without takeover),
#: ``ownerless`` (older than ownership), ``expired`` (take it over, then end it), ``live``
#: (another host's live run: leave it alone).
OwnerVerdict = Literal["held", "own", "ownerless", "expired", "live"]


@dataclass(frozen=True, slots=True)
class RunOwner:
    """The host that owns a run, at the run's owner epoch."""

    host_id: str
    epoch: int

    def to_json(self) -> dict[str, Any]:
        """The stored shape in ``RunCreated.owner``."""
        return {"hostId": self.host_id, "epoch": self.epoch}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> RunOwner | None:
        if data is None:
            return None
        host_id, epoch = data.get("hostId"), data.get("epoch")
        if not isinstance(host_id, str) or isinstance(epoch, bool) or not isinstance(epoch, int):
            raise StoreCorruptionError(f"run owner {data!r} is not {{hostId, epoch}}")
        return cls(host_id, epoch)

    def taken_over(self, fact: RunOwnerTaken) -> RunOwner:
        """The owner after ``fact``; a takeover that does not follow this owner is corrupt."""
        if (fact.previous_host_id, fact.previous_epoch) != (self.host_id, self.epoch) or (
            fact.epoch != self.epoch + 1
        ):
            raise StoreCorruptionError(
                f"takeover to epoch {fact.epoch} does not follow owner {self.host_id} "
                f"at epoch {self.epoch}"
            )
        return RunOwner(fact.host_id, fact.epoch)


@dataclass(frozen=True, slots=True)
class HostLease:
    """A host's newest lease renewal (``version``: its stream's version)."""

    host_id: str
    expires_at: EpochMs
    version: int

    def is_live(self, now: EpochMs) -> bool:
        return now < self.expires_at


def project_host_lease(lease: HostLease | None, facts: Iterable[Any]) -> HostLease | None:
    """eventsourcing projector of a host's stream: the newest renewal is the lease."""
    for fact in facts:
        if not isinstance(fact, HostLeaseRenewed):
            raise StoreCorruptionError(f"unexpected fact {type(fact).__name__} in host stream")
        lease = HostLease(fact.host_id, fact.expires_at, fact.originator_version)
    return lease


def decide_renewal(
    lease: HostLease | None, host_id: str, *, now: EpochMs, lease_ms: int
) -> HostLeaseRenewed:
    """A heartbeat's fact: the lease runs until ``now + lease_ms``, at the stream's next
    version (two heartbeats of one host id at once: one wins, the other is a conflict)."""
    if isinstance(lease_ms, bool) or not isinstance(lease_ms, int) or lease_ms <= 0:
        raise ValueError(f"the lease duration must be positive milliseconds, not {lease_ms!r}")
    return HostLeaseRenewed(
        originator_id=host_stream_id(host_id),
        originator_version=1 if lease is None else lease.version + 1,
        host_id=host_id,
        renewed_at=now,
        expires_at=now + lease_ms,
    )


def owner_verdict(
    owner: RunOwner | None,
    lease: HostLease | None,
    *,
    host_id: str,
    now: EpochMs,
    held_epoch: int | None = None,
) -> OwnerVerdict:
    """May host ``host_id`` end this run at ``now`` (see :data:`OwnerVerdict`)? ``lease`` is
    the owner's lease (``None``: the owner never recorded one, so it cannot be live);
    ``held_epoch``: the epoch at which the asking process holds the run (``None``: it never
    did)."""
    if owner is None:
        return "ownerless"
    if owner.host_id == host_id:
        return "held" if held_epoch == owner.epoch else "own"
    if lease is not None and lease.is_live(now):
        return "live"
    return "expired"


def decide_take_over(
    run_id: str, owner: RunOwner, run_version: int, *, host_id: str, taken_at: EpochMs
) -> RunOwnerTaken:
    """The takeover fact of a run whose owner's lease expired: the next epoch, at the run's
    next version (docs/reference/ledger.md#write-rules: one save, the store arbitrates)."""
    return RunOwnerTaken(
        originator_id=run_stream_id(run_id),
        originator_version=run_version + 1,
        host_id=host_id,
        epoch=owner.epoch + 1,
        previous_host_id=owner.host_id,
        previous_epoch=owner.epoch,
        taken_at=taken_at,
    )


def fencing_refusal(
    run_id: str,
    owner: RunOwner | None,
    *,
    live: bool,
    host_id: str,
    held_epoch: int | None,
) -> RunOwnerFencedError | None:
    """Why host ``host_id`` may not write to the run now (``None``: it may).

    ``held_epoch`` is the epoch at which this process created or took over the run (``None``:
    it never did); ``live``: the run has no terminal event. An ownerless run takes anyone's
    writes; a terminal run takes the writes of a host that never held it (sealing it for a
    continuation, repairing its header, settling its tools)."""
    if owner is None:
        return None
    if held_epoch is not None:
        if (owner.host_id, owner.epoch) == (host_id, held_epoch):
            return None
        reason = "taken_over"
    elif owner.host_id == host_id or not live:
        return None
    else:
        reason = "owned_by_another_host"
    return RunOwnerFencedError(
        f"run {run_id} is owned by host {owner.host_id} at epoch {owner.epoch}; "
        f"host {host_id} ({reason}) may not write to it",
        detail={
            "runId": run_id,
            "hostId": host_id,
            "heldEpoch": held_epoch,
            "ownerHostId": owner.host_id,
            "ownerEpoch": owner.epoch,
            "reason": reason,
        },
    )
