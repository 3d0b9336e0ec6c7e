"""Is this boundary already continued? The planner's steps 5 and 6 (claims, existing runs).

Why a module of its own: the answer has two authorities and they must not be confused. A
durable claim (step 5) is checked against the plan that was just recomputed and then its target
is classified (docs/reference/continuation.md#existing-claims, read-only): only a fully
consistent claim, start and terminal is ``continuation_already_exists``; a target that started
and has no terminal is ``continuation_started_indeterminate`` (its provider may still be
running; startup recovery ends it once its owner is proven gone, ADR 0035, and the next plan
continues from it); a target whose terminal fact is durable while its header is not yet
terminal, and whose owner is live, is being ended right now (between ``end_run``'s two saves):
maka_es's transient ``continuation_end_in_progress``; anything else is
``continuation_claim_repair_required``. Without a claim (step 6), any run whose
``continuationSource`` names the same source run and high-water already continues it:
``continuation_already_exists``, whatever state it is in (an unclaimed continuation is not
something startup recovery can repair, so it must not be reported as repairable).

Store faults are not handled here: they propagate to the planner, which parks with
``continuation_authority_unavailable`` (a locked database is not a verdict about a claim).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from maka_es.continuation.claim import ContinuationClaim, continuation_start_event, source_boundary
from maka_es.continuation.composite_replay import CompositeReplay
from maka_es.continuation.gates import ContinuationPlan
from maka_es.errors import MakaError
from maka_es.ledger.ports import STORE_FAULTS
from maka_es.resume.models import Diagnostic
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import (
    MUTABLE_HEADER_FIELDS,
    ContinuationSourceV2,
    RunHeader,
    header_matches_terminal,
    run_status_for_terminal_event,
    terminal_abort_source,
    terminal_failure_class,
)

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
