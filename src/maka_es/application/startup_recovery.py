"""Startup recovery (spec §4.8): make every interrupted run terminal, and say what was done.

Call it when a host starts, before new turns run: at that moment no run of this store is live
in this host. What it may repair, and what it must leave alone:

* a run whose terminal RuntimeEvent is durable but whose header lags: the header is repaired
  from the event (no new event);
* a run with no terminal event: first (optionally) the ToolRuntime settles what its tools can
  prove, then a recovered ``failed`` terminal (``app_restarted``, ``recoveryReason`` from the
  last activity) is appended, then the header; the operations that stayed indeterminate keep
  the run's history ``blocked`` for Phase 0;
* a claimed continuation whose target was never started (claim only, or created without a
  start): a deterministic ``claim_repair`` start and a failed terminal
  ``continuation_abandoned_before_provider_dispatch``, then the header; the provider is never
  called by recovery;
* a continuation that *was* started by runtime admission and has no terminal: left alone. The
  old provider may still be alive in another process, and nothing proves otherwise; planning
  keeps parking with ``continuation_started_indeterminate``.

Every repair uses deterministic ids, so a recovery interrupted by another crash converges when
it runs again, and running it twice changes nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from maka_es.application.continuation_planner import is_continuation_start
from maka_es.domain.claim import (
    ContinuationClaim,
    ContinuationTarget,
    SourceBoundary,
    continuation_header,
    continuation_start_event,
)
from maka_es.domain.events import RuntimeEvent
from maka_es.domain.run_header import (
    RunHeader,
    header_matches_terminal,
    terminal_event,
    terminal_header_patch,
)
from maka_es.errors import MakaError

if TYPE_CHECKING:  # the tool runtime depends on the application module; only its type is needed
    from maka_es.application.tools import ToolRuntime

ABANDONED = "continuation_abandoned_before_provider_dispatch"

RepairKind = Literal[
    "header_repaired",
    "terminal_recovered",
    "claim_repaired",
    "left_live_start",
    "left_ambiguous",
]


@dataclass(frozen=True)
class Repair:
    run_id: str
    kind: RepairKind
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StartupRecoveryReport:
    repairs: tuple[Repair, ...]

    @property
    def changed_anything(self) -> bool:
        return any(r.kind not in {"left_live_start", "left_ambiguous"} for r in self.repairs)


def repair_id(kind: str, claim_id: str) -> str:
    """Spec §4.8 deterministic ids: ``continuation-repair-<kind>-<32 hex>``."""
    digest = hashlib.sha256(f"maka.continuation-repair.{kind}.v1\0{claim_id}".encode()).hexdigest()
    return f"continuation-repair-{kind}-{digest[:32]}"


def recovery_reason(events: list[RuntimeEvent]) -> tuple[str, str | None]:
    """Why a run without a terminal fact stopped, classified from its last activity."""
    if not events:
        return "non_terminal_run_recovered", None
    last = events[-1]
    if last.function_call is not None:
        return "tool_interrupted", "function_call"
    if last.actions is not None and last.actions.tool_dispatch is not None:
        return "tool_interrupted", "tool_started"
    if last.actions is not None and last.actions.permission_request is not None:
        return "stale_user_wait", "permission_request"
    if last.content is not None and last.role == "model":
        return "model_stream_completed_without_runtime_terminal", last.content.kind
    if last.role == "user":
        return "run_interrupted", "user_message"
    return "non_terminal_run_recovered", last.content.kind if last.content is not None else None


class StartupRecovery:
    """Runs the repairs over every run the application knows (see module docstring)."""

    def __init__(self, app: Any, tool_runtime: ToolRuntime | None = None) -> None:
        self.app = app
        self.tool_runtime = tool_runtime

    def run(
        self, run_ids: list[str] | None = None, claim_ids: list[str] | None = None
    ) -> StartupRecoveryReport:
        """Repair ``run_ids`` and the claims ``claim_ids`` (default: every run and claim)."""
        repairs: list[Repair] = []
        repairs.extend(self._repair_claims(claim_ids))
        for run_id in run_ids if run_ids is not None else self.app.all_run_ids():
            repair = self._repair_run(run_id)
            if repair is not None:
                repairs.append(repair)
        return StartupRecoveryReport(tuple(repairs))

    # -- claims -----------------------------------------------------------------------------------

    def _repair_claims(self, claim_ids: list[str] | None) -> list[Repair]:
        repairs: list[Repair] = []
        if claim_ids is None:
            claims = list(self.app.all_claims())
        else:
            claims = [c for c in (self.app.get_claim(i) for i in claim_ids) if c is not None]
        for claim in claims:
            target_run_id = claim.target_run_id
            if self.app.run_exists(target_run_id):
                events = self.app.read_run_events(target_run_id)
                if events:
                    continue  # started (live or repaired): handled as a run
            repairs.append(self._repair_unstarted_claim(claim))
        return repairs

    def _repair_unstarted_claim(self, claim: ContinuationClaim) -> Repair:
        app = self.app
        boundary = SourceBoundary(
            session_id=str(claim.boundary["sessionId"]),
            invocation_id=str(claim.boundary["invocationId"]),
            run_id=str(claim.boundary["runId"]),
            turn_id=str(claim.boundary["turnId"]),
            high_water=int(str(claim.boundary["highWater"])),
            prefix_digest=str(claim.boundary["prefixDigest"]),
            manifest_digest=str(claim.boundary["manifestDigest"]),
            provider_replay_digest=str(claim.boundary["providerReplayDigest"]),
        )
        target = ContinuationTarget(
            str(claim.target["invocationId"]), claim.target_run_id, str(claim.target["turnId"])
        )
        start = continuation_start_event(
            boundary,
            target,
            event_id=repair_id("start", claim.claim_id),
            ts=claim.claimed_at,
            provenance="claim_repair",
        )
        source: RunHeader = app.get_run_header(boundary.run_id)
        header = continuation_header(
            source,
            boundary,
            target,
            workspace_identity=source.workspace_identity or "",
            claimed_at=claim.claimed_at,
        )
        app.create_claimed_run(header, start)
        app.end_run(
            target.run_id,
            terminal_event(
                header.spine,
                event_id=repair_id("terminal", claim.claim_id),
                ts=max(start.ts + 1, claim.claimed_at + 1),
                status="failed",
                failure_class=ABANDONED,
                state_delta={"recovered": True, "recoveryReason": ABANDONED},
            ),
        )
        return Repair(target.run_id, "claim_repaired", {"claimId": claim.claim_id})

    # -- runs -------------------------------------------------------------------------------------

    def _repair_run(self, run_id: str) -> Repair | None:
        app = self.app
        header: RunHeader = app.get_run_header(run_id)
        if header.is_terminal:
            return None
        events: list[RuntimeEvent] = app.read_run_events(run_id)
        terminals = [e for e in events if e.is_terminal]
        if len(terminals) > 1:
            return Repair(run_id, "left_ambiguous", {"terminalEvents": len(terminals)})
        if terminals:
            return self._repair_header(header, terminals[0])
        if header.continuation_source is not None and events and is_continuation_start(events[0]):
            start = events[0].actions.continuation_start if events[0].actions else None
            if start is None or start.provenance == "runtime_admission":
                return Repair(run_id, "left_live_start")
        if self.tool_runtime is not None:
            # what the tools cannot settle stays indeterminate; the terminal follows anyway
            with contextlib.suppress(MakaError):
                self.tool_runtime.recover(run_id)
            events = app.read_run_events(run_id)
        reason, last_type = recovery_reason(events)
        delta: dict[str, Any] = {"recovered": True, "recoveryReason": reason}
        if last_type is not None:
            delta["lastEventType"] = last_type
        app.end_run(
            run_id,
            terminal_event(
                header.spine,
                event_id=f"{run_id}-recovered-terminal",
                ts=app.now_ms(),
                status="failed",
                failure_class="app_restarted",
                state_delta=delta,
            ),
        )
        return Repair(run_id, "terminal_recovered", {"recoveryReason": reason})

    def _repair_header(self, header: RunHeader, terminal: RuntimeEvent) -> Repair:
        """The header follows the durable terminal fact; nothing new is written to the ledger."""
        patch = terminal_header_patch(header, terminal)
        if patch is None or not header_matches_terminal(
            RunHeader.model_validate({**header.to_wire(), **patch}), terminal
        ):
            return Repair(header.run_id, "left_ambiguous", {"terminalEventId": terminal.id})
        self.app.update_run_header(header.run_id, patch)
        return Repair(header.run_id, "header_repaired", {"status": patch["status"]})
