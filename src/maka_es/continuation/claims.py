"""Claim commands and reads: admitting a continuation, recording its start, claim repair.

Why a service: a claim is the store's uniqueness on a source boundary (ADR 0010). Claiming is
ONE save of several aggregates (the claim and its start record, the source's seal, the target
run with its start fact, the invocation binding and the session registration); repairing a
claim (ADR 0012) writes a deterministic start with its ``claim_repair`` record in one save.
These are commands with their own validation, not "save these facts": nothing outside this
module and the ledger's commands commits facts (ADR 0017).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from maka_es.continuation.claim import (
    ContinuationClaim,
    ContinuationTarget,
    SourceBoundary,
    continuation_header,
    continuation_start_event,
    project_claim,
    record_start_fact,
)
from maka_es.errors import ContinuationStartConflictError, ReservedFactError
from maka_es.ledger.facts import (
    ContinuationClaimed,
    StartKind,
    StoredFact,
    bind_invocation,
    claim_stream_id,
)
from maka_es.ledger.ports import RunStore
from maka_es.ledger.run import Run
from maka_es.ledger.service import Ledger, concurrent_write
from maka_es.wire.events import ContinuationStartV2, RuntimeEvent
from maka_es.wire.run_header import RunHeader


def _start_fact(start: RuntimeEvent) -> ContinuationStartV2:
    fact = start.actions.continuation_start if start.actions is not None else None
    if fact is None:
        raise ReservedFactError(
            f"event {start.id} is not a continuation-start fact", detail={"eventId": start.id}
        )
    return fact


class Claims:
    """Claims over the ledger's store (see module docstring)."""

    def __init__(self, ledger: Ledger, store: RunStore) -> None:
        self.ledger = ledger
        self._store = store

    # -- reads ----------------------------------------------------------------------------------

    def get_claim(self, claim_id: str) -> ContinuationClaim | None:
        return self._store.load(claim_stream_id(claim_id), project_claim)

    def claim_exists(self, claim_id: str) -> bool:
        return self._store.stream_exists(claim_stream_id(claim_id))

    def all_claims(self) -> list[ContinuationClaim]:
        """Every continuation claim (with its recorded start, if any), in claim order."""
        claims = []
        for fact in self._store.facts_with_topic(ContinuationClaimed.TOPIC):
            claim = self.get_claim(fact.claim_id) if isinstance(fact, ContinuationClaimed) else None
            if claim is not None:
                claims.append(claim)
        return claims

    # -- admission ------------------------------------------------------------------------------

    def admit(
        self,
        header: RunHeader,
        source: Run,
        boundary: SourceBoundary,
        target: ContinuationTarget,
        *,
        workspace_identity: str,
        conflict: Callable[[], Exception],
        provenance: Sequence[StoredFact] = (),
    ) -> RunHeader:
        """Claim ``boundary`` for ``target`` in ONE save (ADR 0010): the claim and its
        ``runtime_admission`` start record, the source's seal at the version that was just
        revalidated, the target run with its start fact as event 1 (header ``running``: the
        start is committed in the same save), the invocation binding and the session
        registration, and ``provenance`` (an operator fork's record, ADR 0022). A concurrent
        claimer loses on the store's uniqueness and ``conflict()`` says why. Returns the
        target's header."""
        claimed_at = self._store.now_ms()
        target_header = continuation_header(
            header, boundary, target, workspace_identity=workspace_identity, claimed_at=claimed_at
        )
        start = continuation_start_event(
            boundary, target, event_id=f"{target.run_id}-start", ts=claimed_at
        )
        owner = self.ledger.new_owner()
        facts = [
            ContinuationClaim.create(
                boundary, target, start.id, claimed_at, target_run_header=target_header
            ),
            record_start_fact(boundary.claim_id, start, "runtime_admission"),
            source.decide_seal(boundary.claim_id, sealed_at=claimed_at),
            *Run.create_continuation(
                target_header, start, created_at=claimed_at, admitted=True, owner=owner
            ),
            bind_invocation(target_header),
            self.ledger.session_registration(boundary.session_id, target.run_id, claimed_at),
            *provenance,
            *self.ledger.lease_renewal(),
        ]
        self._store.commit(facts, conflict=conflict)
        self.ledger.hold(target.run_id, owner, facts)
        return target_header

    # -- claim repair ---------------------------------------------------------------------------

    def continuation_start_record(
        self, claim_id: str, start: RuntimeEvent, *, start_kind: StartKind
    ) -> StoredFact:
        """The fact recording ``start`` as the start of claim ``claim_id``, committed by a
        ``start_kind`` writer. Save it in the SAME transaction as the start fact: the claim is
        the authority on which writer started its target, and planning refuses a start the
        claim does not record. ``ContinuationStartConflictError`` if the claim already recorded
        a start, or the start is not this claim's (claim id, target, ``provenance``)."""
        claim = self.get_claim(claim_id)
        if claim is None:
            raise ContinuationStartConflictError(
                f"claim {claim_id} does not exist", detail={"claimId": claim_id}
            )
        return claim.record_start(start, start_kind)

    def create_claimed_run(
        self, header: RunHeader, start: RuntimeEvent, *, start_kind: StartKind | None = None
    ) -> None:
        """Create a claimed continuation's target run with its start fact, and record the
        start's kind with the claim, in one save (claim repair). ``start_kind`` defaults to the
        kind the start itself declares (its ``provenance``)."""
        fact = _start_fact(start)
        owner = self.ledger.new_owner()
        with self._store.command():
            facts = [
                *Run.create_continuation(header, start, created_at=header.created_at, owner=owner),
                self.continuation_start_record(
                    fact.claim_id, start, start_kind=start_kind or fact.provenance
                ),
                bind_invocation(header),
                self.ledger.session_registration(
                    header.session_id, header.run_id, header.created_at
                ),
                *self.ledger.lease_renewal(),
            ]
            self._store.commit(facts, conflict=lambda: self.ledger.create_run_conflict(header))
            self.ledger.hold(header.run_id, owner, facts)

    def start_claimed_run(self, run_id: str, start: RuntimeEvent) -> None:
        """Commit the claim-repair start of a claimed target that was created but never
        started, and record its kind (``claim_repair``) with the claim, in one save; an exact
        retry writes nothing."""
        fact = _start_fact(start)
        with self._store.command():
            run = self._store.load_run(run_id)
            self.ledger.check_writer(run)
            decision = run.decide_claim_repair_start(start, committed_at=self._store.now_ms())
            if decision.facts:
                record = self.continuation_start_record(
                    fact.claim_id, start, start_kind="claim_repair"
                )
                self._store.commit(
                    [*decision.facts, record], conflict=lambda: concurrent_write(run_id)
                )
