"""Continuation claims: a source boundary is continued at most once, enforced by the store.

Why an aggregate of its own: "two resumers must not both win" cannot be an in-process lock
(the reference's guard is per process). The claim's stream id is derived from the source
boundary itself (session, source run, high-water, prefix digest), so two processes (or two
machines on one PostgreSQL database) that try to claim the same boundary both try to write
version 1 of the *same* stream; the store's ``(originator_id, originator_version)`` uniqueness
lets exactly one of them commit (ADR 0010).

Three parts, in reading order:

* The claim aggregate (:class:`ContinuationClaim`) and the facts the claim's transaction
  carries: the target Run's header (``continuationSource`` V2) and its event 1, the V2
  continuation-start fact, and the record of which writer committed that start (the claim is
  the authority on the start's kind).
* The :class:`Claims` service: admitting a continuation is ONE save of several aggregates (the
  claim and its start record, the source's seal, the target run with its start fact, the
  invocation binding and the session registration); repairing a claim (ADR 0012) writes a
  deterministic start with its ``claim_repair`` record in one save. These are commands with
  their own validation, not "save these facts": nothing outside this module and the ledger's
  commands commits facts (ADR 0017).
* Is this boundary already continued? The planner's steps 5 and 6. The answer has two
  authorities and they must not be confused. A durable claim (step 5) is checked against the
  plan that was just recomputed and then its target is classified
  (docs/reference/continuation.md#existing-claims, read-only): only a fully consistent claim,
  start and terminal is ``continuation_already_exists``; a target that started and has no
  terminal is ``continuation_started_indeterminate`` (its provider may still be running;
  startup recovery ends it once its owner is proven gone, ADR 0035, and the next plan
  continues from it); a target whose terminal fact is durable while its header is not yet
  terminal, and whose owner is live, is being ended right now (between ``end_run``'s two
  saves): maka_es's transient ``continuation_end_in_progress``; anything else is
  ``continuation_claim_repair_required``. Without a claim (step 6), any run whose
  ``continuationSource`` names the same source run and high-water already continues it:
  ``continuation_already_exists``, whatever state it is in (an unclaimed continuation is not
  something startup recovery can repair, so it must not be reported as repairable). Store
  faults are not handled there: they propagate to the planner, which parks with
  ``continuation_authority_unavailable`` (a locked database is not a verdict about a claim).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from maka_es.continuation.model.boundary import PROVIDER_REPLAY_PROJECTION_VERSION
from maka_es.continuation.model.plan import ContinuationPlan
from maka_es.continuation.model.replay import CompositeReplay, source_boundary
from maka_es.errors import (
    ContinuationStartConflictError,
    MakaError,
    ReservedFactError,
    StoreCorruptionError,
)
from maka_es.ledger.model.facts import (
    ContinuationClaimed,
    ContinuationStartRecorded,
    SourceBoundary,
    StartKind,
    StoredFact,
    bind_invocation,
    claim_id_for,
    claim_stream_id,
)
from maka_es.ledger.model.run import Run
from maka_es.ledger.ports import STORE_FAULTS, RunStore
from maka_es.ledger.service import Ledger, concurrent_write
from maka_es.resume.models import Diagnostic
from maka_es.wire.events import ContinuationStartV2, RuntimeEvent
from maka_es.wire.facts import continuation_start_fact
from maka_es.wire.run_header import (
    MUTABLE_HEADER_FIELDS,
    ContinuationSourceV2,
    RunHeader,
    header_matches_terminal,
    run_status_for_terminal_event,
    terminal_abort_source,
    terminal_failure_class,
)

__all__ = [
    "ENDING",
    "REPAIR",
    "Claims",
    "ContinuationClaim",
    "ContinuationTarget",
    "RunReader",
    "SourceBoundary",
    "claim_id_for",
    "classify_claim",
    "continuation_header",
    "continuation_start_event",
    "continuations_of",
    "durable_claim",
    "is_continuation_start",
    "park",
    "project_claim",
    "record_start_fact",
    "source_boundary",
    "unclaimed_continuation",
]


# --------------------------------------------------------------------------------------------
# The claim aggregate
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ContinuationTarget:
    """The fresh identity of the continuation run."""

    invocation_id: str
    run_id: str
    turn_id: str

    def spine(self, session_id: str) -> dict[str, str]:
        """The target's wire spine: a continuation stays in its source's session."""
        return {
            "sessionId": session_id,
            "invocationId": self.invocation_id,
            "runId": self.run_id,
            "turnId": self.turn_id,
        }


def continuation_header(
    source: RunHeader,
    boundary: SourceBoundary,
    target: ContinuationTarget,
    *,
    workspace_identity: str,
    claimed_at: float,
) -> RunHeader:
    """The target Run's header at claim time (docs/reference/continuation.md#target-header):
    status ``created``, parent ids, the V2 ``continuationSource``, execution settings copied from
    the source."""
    wire: dict[str, Any] = {
        "runId": target.run_id,
        "sessionId": boundary.session_id,
        "turnId": target.turn_id,
        "invocationId": target.invocation_id,
        "status": "created",
        "backendKind": source.backend_kind,
        "llmConnectionSlug": source.llm_connection_slug,
        "modelId": source.model_id,
        "cwd": source.cwd,
        "permissionMode": source.permission_mode,
        "createdAt": claimed_at,
        "updatedAt": claimed_at,
        "parentRunId": boundary.run_id,
        "parentTurnId": boundary.turn_id,
        "workspaceIdentity": workspace_identity,
        "continuationSource": {
            "protocol": "continuation_source_v2",
            "claimId": boundary.claim_id,
            "boundaryDigest": boundary.manifest_digest,
            "sourceInvocationId": boundary.invocation_id,
            "sourceRunId": boundary.run_id,
            "sourceTurnId": boundary.turn_id,
            "sourceRuntimeEventHighWater": boundary.high_water,
            "sourcePrefixDigest": boundary.prefix_digest,
            "replayManifestDigest": boundary.manifest_digest,
        },
    }
    return RunHeader.model_validate(wire)


def continuation_start_event(
    boundary: SourceBoundary,
    target: ContinuationTarget,
    *,
    event_id: str,
    ts: float,
    provenance: StartKind = "runtime_admission",
    tool_boundary_marker: bool = True,
) -> RuntimeEvent:
    """Event 1 of the continuation run for a claimed boundary: the V2 start fact
    (continuation.md#start-fact), spelled by :func:`maka_es.wire.facts.continuation_start_fact`.
    """
    return continuation_start_fact(
        target.spine(boundary.session_id),
        event_id=event_id,
        ts=ts,
        provenance=provenance,
        claim_id=boundary.claim_id,
        boundary_digest=boundary.manifest_digest,
        source_spine={
            "sessionId": boundary.session_id,
            "invocationId": boundary.invocation_id,
            "runId": boundary.run_id,
            "turnId": boundary.turn_id,
        },
        source_high_water=boundary.high_water,
        source_prefix_digest=boundary.prefix_digest,
        provider_replay_digest=boundary.provider_replay_digest,
        tool_boundary_marker=tool_boundary_marker,
    )


class ContinuationClaim:
    """A committed claim (read side): version 1 claims the boundary; version 2, when present,
    records the start fact that began the target and which writer committed it."""

    __slots__ = (
        "boundary",
        "claim_id",
        "claimed_at",
        "id",
        "planned_start_event_id",
        "provider_projection_version",
        "recorded_start",
        "target",
        "target_header_wire",
        "version",
    )

    def __init__(self, fact: ContinuationClaimed) -> None:
        self.id = fact.originator_id
        self.version = fact.originator_version
        self.claim_id = fact.claim_id
        self.boundary = fact.boundary
        self.target = dict(fact.target)
        self.planned_start_event_id = fact.start_event_id
        self.claimed_at = fact.claimed_at
        self.provider_projection_version = fact.provider_projection_version
        self.target_header_wire = fact.target_run_header
        self.recorded_start: ContinuationStartRecorded | None = None

    def apply_start(self, fact: ContinuationStartRecorded) -> None:
        if self.recorded_start is not None or fact.claim_id != self.claim_id:
            raise StoreCorruptionError(f"claim {self.claim_id}: unexpected start record")
        self.recorded_start = fact
        self.version = fact.originator_version

    @property
    def target_run_id(self) -> str:
        return str(self.target["runId"])

    @property
    def source_boundary(self) -> SourceBoundary:
        """The boundary this claim recorded (the typed stored model)."""
        return self.boundary

    @property
    def target_identity(self) -> ContinuationTarget:
        return ContinuationTarget(
            str(self.target["invocationId"]), self.target_run_id, str(self.target["turnId"])
        )

    @property
    def target_run_header(self) -> RunHeader | None:
        """The target's header as claimed (``None`` for claims written before it was kept)."""
        if self.target_header_wire is None:
            return None
        return RunHeader.model_validate(self.target_header_wire)

    @property
    def start_kind(self) -> StartKind | None:
        """Who committed the target's start (``None``: no start recorded with the claim)."""
        return None if self.recorded_start is None else self.recorded_start.start_kind

    @property
    def start_event_id(self) -> str:
        """The id the target's first event must have: the recorded start's, else the one the
        claimer planned."""
        if self.recorded_start is not None:
            return self.recorded_start.start_event_id
        return self.planned_start_event_id

    def expected_start(self) -> tuple[str, StartKind]:
        """``(event id, start kind)`` the target's first event must match.

        A claim with no start record was written either before start kinds were recorded
        (then its start, if any, is the executor's runtime admission, committed in the claim's
        own transaction under the id the claim names) or by a claimer that never started the
        target (then the target has no start and needs repair anyway).
        """
        if self.recorded_start is not None:
            return self.recorded_start.start_event_id, self.recorded_start.start_kind
        return self.planned_start_event_id, "runtime_admission"

    def record_start(self, start: RuntimeEvent, start_kind: StartKind) -> ContinuationStartRecorded:
        """The fact recording ``start`` as this claim's start, committed by a ``start_kind``
        writer; save it in the same transaction as the start. Refused (typed, nothing decided)
        when a start is already recorded or the start is not this claim's target start."""
        if self.recorded_start is not None:
            raise ContinuationStartConflictError(
                f"claim {self.claim_id} already recorded start "
                f"{self.recorded_start.start_event_id}",
                detail={"claimId": self.claim_id, "eventId": start.id},
            )
        target = self.target_identity
        if (start.session_id, start.invocation_id, start.run_id, start.turn_id) != (
            str(self.target["sessionId"]),
            target.invocation_id,
            target.run_id,
            target.turn_id,
        ):
            raise ContinuationStartConflictError(
                f"event {start.id} is not on the target of claim {self.claim_id}",
                detail={"claimId": self.claim_id, "eventId": start.id},
            )
        return record_start_fact(self.claim_id, start, start_kind, version=self.version + 1)

    @staticmethod
    def create(
        boundary: SourceBoundary,
        target: ContinuationTarget,
        start_event_id: str,
        claimed_at: float,
        *,
        target_run_header: RunHeader | None = None,
    ) -> ContinuationClaimed:
        return ContinuationClaimed(
            originator_id=claim_stream_id(boundary.claim_id),
            originator_version=1,
            claim_id=boundary.claim_id,
            boundary=boundary,
            target=target.spine(boundary.session_id),
            start_event_id=start_event_id,
            claimed_at=claimed_at,
            provider_projection_version=PROVIDER_REPLAY_PROJECTION_VERSION,
            target_run_header=None if target_run_header is None else target_run_header.to_wire(),
        )


def record_start_fact(
    claim_id: str, start: RuntimeEvent, start_kind: StartKind, *, version: int = 2
) -> ContinuationStartRecorded:
    """Record ``start`` as the start of claim ``claim_id``, committed by a ``start_kind``
    writer (``runtime_admission``: the executor, in the claim's own save; ``claim_repair``:
    startup recovery). The start must be a V2 start of this claim whose ``provenance`` mirror
    says the same kind."""
    fact = start.actions.continuation_start if start.actions is not None else None
    if fact is None or fact.claim_id != claim_id or fact.provenance != start_kind:
        raise ContinuationStartConflictError(
            f"event {start.id} is not a {start_kind} start of claim {claim_id}",
            detail={"claimId": claim_id, "eventId": start.id, "startKind": start_kind},
        )
    return ContinuationStartRecorded(
        originator_id=claim_stream_id(claim_id),
        originator_version=version,
        claim_id=claim_id,
        start_event_id=start.id,
        start_kind=start_kind,
    )


def project_claim(
    claim: ContinuationClaim | None, facts: Iterable[Any]
) -> ContinuationClaim | None:
    for fact in facts:
        if claim is None and isinstance(fact, ContinuationClaimed):
            claim = ContinuationClaim(fact)
        elif claim is not None and isinstance(fact, ContinuationStartRecorded):
            claim.apply_start(fact)
        else:
            raise StoreCorruptionError(f"unexpected fact {type(fact).__name__} in a claim stream")
    return claim


# --------------------------------------------------------------------------------------------
# The Claims service: admission, start records, claim repair
# --------------------------------------------------------------------------------------------


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
        """The claim with this id, folded from its stream (``None`` when there is none)."""
        return self._store.load(claim_stream_id(claim_id), project_claim)

    def claim_exists(self, claim_id: str) -> bool:
        """Whether a continuation claim with this id is in the store."""
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
        if source.sealed_by is not None:
            # a resumer's claim landed since this process revalidated (a load in between
            # advanced the cached source): a lost race, refused as one, nothing written
            raise conflict()
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


# --------------------------------------------------------------------------------------------
# Is this boundary already continued? (planner steps 5 and 6)
# --------------------------------------------------------------------------------------------

REPAIR = "continuation_claim_repair_required"
#: maka_es's transient park: the target's live owner is between ``end_run``'s two saves.
ENDING = "continuation_end_in_progress"


def park(code: str, message: str, detail: Mapping[str, Any] | None = None) -> ContinuationPlan:
    """A single-reason park plan (the shape of every pre-planner refusal)."""
    return ContinuationPlan(
        disposition="park",
        rejection_reasons=(code,),
        diagnostics=(
            Diagnostic(code=code, message=message, detail=dict(detail) if detail else None),
        ),
    )


class RunReader:
    """What the planner reads from the store (a subset of RuntimeApplication)."""

    def __init__(
        self,
        header: Callable[[str], RunHeader],
        events: Callable[[str], list[RuntimeEvent]],
        runs_of_session: Callable[[str], list[RunHeader]],
        claim: Callable[[str], ContinuationClaim | None] = lambda claim_id: None,
        end_pending: Callable[[str], bool] = lambda run_id: False,
    ) -> None:
        self.header = header
        self.events = events
        self.runs_of_session = runs_of_session
        self.claim = claim
        #: Whether the run's owner may still be between ``end_run``'s two saves (it is live).
        self.end_pending = end_pending


def continuations_of(
    runs: Iterable[RunHeader], source_run_id: str, high_water: int
) -> list[RunHeader]:
    """Runs whose ``continuationSource`` names exactly this boundary (source run, high-water)."""
    return [
        run
        for run in runs
        if run.continuation_source is not None
        and run.continuation_source.source_run_id == source_run_id
        and run.continuation_source.source_runtime_event_high_water == high_water
    ]


def is_continuation_start(event: RuntimeEvent) -> bool:
    """The first event of a continuation run: a V2 start fact, or the Original P1 form
    (``stateDelta.continuationStart`` with the source refs)."""
    actions = event.actions
    if actions is None:
        return False
    if actions.continuation_start is not None:
        return True
    delta = actions.state_delta or {}
    return delta.get("continuationStart") is True


# -- step 5: a durable claim ------------------------------------------------------------------


def durable_claim(reader: RunReader, replay: CompositeReplay) -> ContinuationPlan | None:
    """Planner step 5 (docs/reference/continuation.md#planner-steps). ``None``: nothing claims
    this boundary. A claim that disagrees with the recomputed plan (boundary, provider
    projection version, provider-replay digest) needs repair whatever its target looks like; a
    consistent one is classified (docs/reference/continuation.md#existing-claims)."""
    boundary = source_boundary(replay)
    claim_id = boundary.claim_id
    try:
        claim = reader.claim(claim_id)
    except STORE_FAULTS:
        raise
    except MakaError as exc:  # an undecodable claim is no authority either
        return park(
            "continuation_authority_unavailable",
            f"claim {claim_id} cannot be read: {exc.code}",
            {"claimId": claim_id},
        )
    if claim is None:
        return None
    detail = {"continuationRunId": claim.target_run_id, "claimId": claim_id}
    if (
        claim.boundary != boundary
        or claim.provider_projection_version != replay.provider_projection_version
    ):
        return park(
            REPAIR,
            f"claim {claim_id} was made for another boundary or provider replay than the one "
            "recomputed now",
            detail,
        )
    return classify_claim(reader, claim)


def classify_claim(reader: RunReader, claim: ContinuationClaim) -> ContinuationPlan:
    """The state of a claim's target, read-only (docs/reference/continuation.md#existing-claims).
    Always a park."""
    target_id = claim.target_run_id
    detail = {"continuationRunId": target_id, "claimId": claim.claim_id}
    try:
        header = reader.header(target_id)
        events = reader.events(target_id)
    except STORE_FAULTS:
        raise
    except MakaError as exc:
        return park(REPAIR, f"claimed target {target_id} cannot be read: {exc.code}", detail)
    problem = _header_problem(header, claim) or _start_problem(events, claim)
    if problem is None:
        problem, state = _terminal_state(header, events)
        if state == "started":
            return park(
                "continuation_started_indeterminate",
                f"continuation {target_id} started and has no terminal fact; its provider may "
                "still be running (startup recovery ends it once its owner is gone)",
                detail,
            )
        if state == "ended":
            return park(
                "continuation_already_exists",
                f"run {target_id} already continues this boundary",
                {"continuationRunId": target_id},
            )
        if state == "header_pending" and reader.end_pending(target_id):
            return park(
                ENDING,
                f"continuation {target_id} is being ended by its live owner: its terminal fact "
                "is durable, its header not yet; plan again",
                detail,
            )
    return park(REPAIR, f"claimed continuation {target_id}: {problem}", detail)


def _immutable(header: RunHeader) -> dict[str, Any]:
    return {k: v for k, v in header.to_wire().items() if k not in MUTABLE_HEADER_FIELDS}


def _header_problem(header: RunHeader, claim: ContinuationClaim) -> str | None:
    source, boundary, target = header.continuation_source, claim.boundary, claim.target
    if not isinstance(source, ContinuationSourceV2):
        return "its header has no V2 continuation source"
    if (
        source.claim_id,
        source.boundary_digest,
        source.source_invocation_id,
        source.source_run_id,
        source.source_turn_id,
        source.source_runtime_event_high_water,
        source.source_prefix_digest,
    ) != (
        claim.claim_id,
        boundary.manifest_digest,
        boundary.invocation_id,
        boundary.run_id,
        boundary.turn_id,
        boundary.high_water,
        boundary.prefix_digest,
    ):
        return "its header's continuation source is not the claimed boundary"
    if (header.session_id, header.invocation_id, header.run_id, header.turn_id) != (
        target["sessionId"],
        target["invocationId"],
        target["runId"],
        target["turnId"],
    ):
        return "its header identity is not the claimed target"
    claimed = claim.target_run_header
    if claimed is not None and _immutable(header) != _immutable(claimed):
        return "its header's admission fields differ from the claimed header"
    return None


def _start_problem(events: Sequence[RuntimeEvent], claim: ContinuationClaim) -> str | None:
    """The first event must be the start the claim names, exactly as the claim implies it, by
    the writer the claim recorded (``provenance`` is only a mirror of that kind)."""
    if not events:
        return "it has no start fact"
    first = events[0]
    event_id, kind = claim.expected_start()
    if first.id != event_id:
        return f"its first event {first.id} is not the claimed start {event_id}"
    if first.ts < claim.claimed_at:
        return "its start is older than its claim"

    def implied(tool_boundary_marker: bool) -> dict[str, Any]:
        return continuation_start_event(
            claim.source_boundary,
            claim.target_identity,
            event_id=event_id,
            ts=first.ts,
            provenance=kind,
            tool_boundary_marker=tool_boundary_marker,
        ).to_wire()

    accepted = [implied(True)]
    if kind == "runtime_admission":  # the protocol marker is optional for an admission start
        accepted.append(implied(False))
    if first.to_wire() not in accepted:
        return f"its start fact is not the {kind} start the claim implies"
    return None


def _valid_terminal_fact(event: RuntimeEvent) -> bool:
    status = run_status_for_terminal_event(event)
    if status == "failed":
        return terminal_failure_class(event) is not None
    if status == "cancelled":
        return terminal_abort_source(event) is not None
    return status == "completed"


def _terminal_state(header: RunHeader, events: Sequence[RuntimeEvent]) -> tuple[str, str]:
    """``(problem, state)``: state ``started`` (no terminal), ``ended`` (consistent terminal),
    ``header_pending`` (one valid terminal at the tail, the header not terminal yet: what
    ``end_run``'s first save leaves until its second) or ``repair``, with the problem."""
    terminals = [index for index, event in enumerate(events) if event.is_terminal]
    if not terminals:
        return "", "started"
    if len(terminals) > 1 or terminals[0] != len(events) - 1:
        return "immutable events follow its terminal fact", "repair"
    terminal = events[-1]
    if not _valid_terminal_fact(terminal):
        return "its terminal event carries no valid terminal fact", "repair"
    if not header.is_terminal:
        return "its terminal fact is durable but its header is not terminal", "header_pending"
    if not header_matches_terminal(header, terminal):
        return "its header does not match its terminal fact", "repair"
    return "", "ended"


# -- step 6: an unclaimed continuation ---------------------------------------------------------


def unclaimed_continuation(
    reader: RunReader, session_id: str, source_run_id: str, high_water: int
) -> ContinuationPlan | None:
    """Planner step 6 (docs/reference/continuation.md#planner-steps): a run (with no claim)
    already names this boundary as its source."""
    for run in continuations_of(reader.runs_of_session(session_id), source_run_id, high_water):
        return park(
            "continuation_already_exists",
            f"run {run.run_id} already continues {source_run_id} at high-water {high_water}",
            {"continuationRunId": run.run_id},
        )
    return None
