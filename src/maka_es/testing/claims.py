"""Claims another writer left unstarted: the states startup recovery's claim repair exists for.

Why a helper: maka_es's own executor writes the claim, the target run and its start in ONE
save, so it never leaves a claim without a started target. A two-step claimer (the reference
runtime, an importer, an older build) can: it commits the claim, maybe creates the target run
``created``, and dies before the start. Tests (in-process and the SIGKILL harness's parent)
build exactly that state here, through the real revalidation and the real facts.
"""

from __future__ import annotations

from maka_es.app import RuntimeApplication
from maka_es.continuation.claims import ContinuationClaim, ContinuationTarget, continuation_header
from maka_es.continuation.executor import ContinuationExecutor
from maka_es.errors import MakaError
from maka_es.testing.raw_facts import commit_unchecked


def leave_unstarted_claim(
    app: RuntimeApplication,
    session_id: str,
    source_run_id: str,
    target: ContinuationTarget,
    *,
    claimed_at: int,
    create_target: bool,
) -> ContinuationClaim:
    """Commit a claim on the source's current boundary (and the source's seal); with
    ``create_target`` also the target run, header ``created``, without any event."""
    plan = app.plan_continuation(session_id, source_run_id)
    if plan.continuation is None:
        raise MakaError(f"the source does not continue: {list(plan.rejection_reasons)}")
    session = app.get_session(session_id)
    executor = ContinuationExecutor(app.claims, app.host_inspector, app.telemetry, app.tool_runtime)
    source_header, source, boundary, observation = executor.revalidate(
        plan.continuation, session_id, session.cwd
    )
    commit_unchecked(
        app,
        ContinuationClaim.create(boundary, target, f"{target.run_id}-start", claimed_at),
        source.decide_seal(boundary.claim_id, sealed_at=claimed_at),
    )
    if create_target:
        header = continuation_header(
            source_header,
            boundary,
            target,
            workspace_identity=observation.workspace_identity,
            claimed_at=claimed_at,
        )
        app.create_run(header)
    claim = app.get_claim(boundary.claim_id)
    assert claim is not None
    return claim
