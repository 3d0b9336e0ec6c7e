"""HostLeases: this host's identity, its lease on the store, and the runs it holds (ADR 0021).

Why a service: several processes write to one store, and each must know which runs are its
own. The rules are pure (:mod:`maka_es.ledger.model.ownership`); this service applies them for one
host over the :class:`~maka_es.ledger.ports.RunStore` port: it records the host's heartbeats on
the host's stream, stamps new runs with their owner, takes over a run whose owner's lease
expired (one save at the run's next version: the store's uniqueness picks one winner), and
checks every write to a run against the epoch this process holds. Time is the store's clock
(the application's), never read here directly.

The epochs a process holds are process-local on purpose: they are the fencing token the
process presents, and the run's stored owner is what it is checked against. They are also how
recovery tells this process's live runs (held: left alone) from its previous incarnation's: a
restarted process of the same host id holds nothing and is the same host; it writes to its
previous incarnation's runs, and recovery ends them. Host ids are unique per live process: the
lease cannot tell two live processes of one id apart.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from maka_es.errors import ConcurrentWriteError, StoreUnavailableError
from maka_es.ledger.model.facts import EpochMs, HostLeaseRenewed, StoredFact, host_stream_id
from maka_es.ledger.model.ownership import (
    HostLease,
    OwnerVerdict,
    RunOwner,
    decide_renewal,
    decide_take_over,
    fencing_refusal,
    owner_verdict,
    project_host_lease,
)
from maka_es.ledger.model.run import Run
from maka_es.ledger.ports import RunStore

#: Default lease duration: a host that stops heartbeating is presumed dead after this long.
DEFAULT_LEASE_MS = 30_000

#: Default host id: one writing process per store; several processes each pass their own.
DEFAULT_HOST_ID = "local"

#: Heartbeat attempts when another process with the same host id renews at the same moment.
RENEWAL_ATTEMPTS = 3

#: The first pause before a heartbeat retries a locked store (doubled up to a quarter lease).
LOCKED_RETRY_PAUSE_S = 0.02

#: A heartbeat slower than ``lease_ms // SLOW_WRITE_FRACTION`` waited on a locked store.
SLOW_WRITE_FRACTION = 4


class HostLeases:
    """One host's lease and held runs on a :class:`RunStore` (see module docstring)."""

    def __init__(self, store: RunStore, host_id: str, lease_ms: int) -> None:
        if not host_id:
            raise ValueError("a host id must be a non-empty string")
        decide_renewal(None, host_id, now=0, lease_ms=lease_ms)  # validates lease_ms
        self._store = store
        self.host_id = host_id
        self.lease_ms = lease_ms
        self._held: dict[str, int] = {}
        self._recovering: set[str] = set()  # held only because recovery took them over
        self._expires_at: EpochMs | None = None  # of this process's newest renewal
        self._store_waited_at: EpochMs | None = None  # a heartbeat last waited on the store
        self._lock = threading.Lock()

    # -- the lease ------------------------------------------------------------------------------

    def lease(self, host_id: str | None = None) -> HostLease | None:
        """The newest lease of ``host_id`` (default: this host); ``None`` if it never had one."""
        return self._store.load(host_stream_id(host_id or self.host_id), project_host_lease)

    def heartbeat(self) -> HostLease:
        """Renew this host's lease until now + the lease duration (one save). Creating a run
        renews it when due; a host with live runs calls this more often than the lease
        duration (from its loop or a timer thread).

        A store locked by another writer (SQLite: a process paused inside its write
        transaction) is retried, with backoff, for up to one lease duration; the renewal lands
        as soon as the lock is free. Still locked then: ``store_unavailable`` (``locked``),
        and the host must take its lease as lapsed (its writes stay fenced by epoch). Any wait
        is remembered: this process then takes over no run for a lease duration (see
        :meth:`take_over`)."""
        started = self._store.now_ms()
        pause_s, slept_s = LOCKED_RETRY_PAUSE_S, 0.0
        while True:
            try:
                lease = self._renew()
            except StoreUnavailableError as exc:
                self._note_store_wait()
                if exc.detail.get("reason") != "locked" or (
                    max(self._store.now_ms() - started, slept_s * 1000) >= self.lease_ms
                ):
                    raise
                time.sleep(pause_s)
                slept_s += pause_s
                pause_s = min(pause_s * 2, self.lease_ms / 4000)
                continue
            if self._store.now_ms() - started > self.lease_ms // SLOW_WRITE_FRACTION:
                self._note_store_wait()
            return lease

    def _note_store_wait(self) -> None:
        with self._lock:
            self._store_waited_at = self._store.now_ms()

    def store_waited_recently(self) -> bool:
        """Whether a heartbeat of this process waited on (or failed in) the store less than a
        lease duration ago: another host's heartbeat may have been stuck behind the same
        lock, so its lapsed lease says nothing about whether it is alive."""
        with self._lock:
            waited_at = self._store_waited_at
        return waited_at is not None and self._store.now_ms() - waited_at < self.lease_ms

    def _renew(self) -> HostLease:
        """One renewal (a concurrent renewal of the same host id is retried)."""
        for attempt in range(RENEWAL_ATTEMPTS):
            with self._store.command():
                fact = decide_renewal(
                    self.lease(), self.host_id, now=self._store.now_ms(), lease_ms=self.lease_ms
                )
                try:
                    self._store.commit([fact], conflict=self._renewal_conflict)
                except ConcurrentWriteError:
                    if attempt + 1 == RENEWAL_ATTEMPTS:
                        raise
                    continue
                self.renewed([fact])
                return HostLease(fact.host_id, fact.expires_at, fact.originator_version)
        raise AssertionError("unreachable")  # pragma: no cover

    def due_renewal(self) -> list[StoredFact]:
        """The renewal to save with a run this host creates, when this process has not renewed
        yet or half the lease has run out (``[]`` otherwise): a new run is never owned by a
        host without a live lease, and the renewal lands in the creation's one save, so a
        refused creation writes nothing."""
        now = self._store.now_ms()
        with self._lock:
            expires_at = self._expires_at
        if expires_at is not None and expires_at - now > self.lease_ms // 2:
            return []
        return [decide_renewal(self.lease(), self.host_id, now=now, lease_ms=self.lease_ms)]

    def renewed(self, facts: Sequence[StoredFact]) -> None:
        """After a commit: remember the lease renewal among ``facts``, if any."""
        for fact in facts:
            if isinstance(fact, HostLeaseRenewed) and fact.host_id == self.host_id:
                with self._lock:
                    self._expires_at = fact.expires_at

    def _renewal_conflict(self) -> ConcurrentWriteError:
        return ConcurrentWriteError(
            f"host {self.host_id} renewed its lease concurrently", detail={"hostId": self.host_id}
        )

    # -- runs -----------------------------------------------------------------------------------

    def new_owner(self) -> RunOwner:
        """The owner of a run this host creates: this host at epoch 1."""
        return RunOwner(self.host_id, 1)

    def hold(self, run_id: str, epoch: int, *, for_recovery: bool = False) -> None:
        """Remember that this process created or took over ``run_id`` at ``epoch``;
        ``for_recovery``: only recovery took it over, to end it (no turn of this process runs
        it, so :meth:`verdict` says ``own``, not ``held``)."""
        with self._lock:
            self._held[run_id] = epoch
            if for_recovery:
                self._recovering.add(run_id)
            else:
                self._recovering.discard(run_id)

    def held_epoch(self, run_id: str) -> int | None:
        """The epoch this application holds for the run (``None``: it holds none); a write under an
        older one is fenced."""
        with self._lock:
            return self._held.get(run_id)

    def check_writer(self, run: Run) -> None:
        """Refuse (``run_owner_fenced``) a write of this process to ``run`` that it may not
        make (:func:`maka_es.ledger.model.ownership.fencing_refusal`); nothing is written."""
        refusal = fencing_refusal(
            run.run_id,
            run.owner,
            live=run.terminal_event is None,
            host_id=self.host_id,
            held_epoch=self.held_epoch(run.run_id),
        )
        if refusal is not None:
            raise refusal

    def verdict(self, run: Run) -> OwnerVerdict:
        """May this host's recovery end ``run`` now (:func:`owner_verdict`)?"""
        owner = run.owner
        other = owner is not None and owner.host_id != self.host_id
        lease = self.lease(owner.host_id) if owner is not None and other else None
        return owner_verdict(
            owner,
            lease,
            host_id=self.host_id,
            now=self._store.now_ms(),
            held_epoch=None
            if self._taken_for_recovery(run.run_id)
            else self.held_epoch(run.run_id),
        )

    def _taken_for_recovery(self, run_id: str) -> bool:
        with self._lock:
            return run_id in self._recovering

    def take_over(self, run_id: str) -> bool:
        """Take over ``run_id`` if its owner's lease has expired: the next epoch, one save at
        the run's next version, held by this process from then on. ``False`` when the run is
        not (or no longer) for this host to take: its owner is live, or another host took it
        over first (the store refused the second takeover; nothing was written).

        Also ``False`` while the store has just been blocked: a takeover first renews this
        host's own lease, and when that renewal (or one in the last lease duration) had to
        wait on a locked store, the owner's heartbeat was likely waiting behind the same lock:
        its lease lapsed because nobody could write, not because it died. The takeover is
        deferred to a sweep one lease duration after the store wrote freely again."""
        if self.store_waited_recently():
            return False
        try:
            self.heartbeat()
        except StoreUnavailableError:
            return False
        if self.store_waited_recently():
            return False
        with self._store.command():
            run = self._store.load_run(run_id)
            if run.owner is None or self.verdict(run) != "expired":
                return False
            fact = decide_take_over(
                run_id, run.owner, run.version, host_id=self.host_id, taken_at=self._store.now_ms()
            )
            facts = [fact, *self.due_renewal()]  # the new owner is live from this save on
            try:
                self._store.commit(facts, conflict=lambda: ConcurrentWriteError(run_id))
            except ConcurrentWriteError:
                return False
            self.hold(run_id, fact.epoch, for_recovery=True)
            self.renewed(facts)
            return True
