"""Golden equivalence of the tool journal (docs/reference/tool-journal.md#bundles, reference
recovery-authority-equivalence):
online projection = reopen = rebuild-from-events = RecoveryResolver.

Hypothesis generates random *valid* command sequences (T1 in several recovery modes, with and
without metadata; a call committed during a permission wait and claimed by T1 later; T2 success
and error; completed and parked recovery bundles; pre-T1 synthetic call/response pairs; ordinary
text; exact retries of earlier commands; an optional terminal) and runs them through the real
application on each real store: a new SQLite file in a temporary directory per example, or
the test's PostgreSQL schema emptied per example (fewer examples there). After every
command, and again from a freshly opened application at the end, the journal state of every
operation must agree four ways:

* ``app.tool_journal.tool_operations(run)`` (the online fold kept by the cached Run aggregate),
* the same after reopening the file with a new application,
* ``ToolJournal.rebuild(events, metadata)`` from the committed events,
* ``expected_journal_state(decision)`` of the RecoveryResolver's decision for the operation,

and all of them must equal the state the test's own model expects.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from maka_es.app import RuntimeApplication
from maka_es.ledger.service import ToolCommit
from maka_es.testing.builders import Events, Spine, run_header
from maka_es.testing.probes import store_snapshot
from maka_es.tooljournal.model.operation import (
    JournalState,
    ToolJournal,
    ToolOperationState,
    expected_journal_state,
)
from maka_es.tooljournal.model.resolver import resolve_tool_operations
from maka_es.wire.events import TOOL_BOUNDARY_PROTOCOL_V1 as T1_PROTOCOL
from tests.support.store_sql import fresh_store_for, hypothesis_settings_for

SPINE = Spine()
RUN = SPINE.run_id
EV = Events.wire()
#: parked observation -> the only reason code a parked decision may carry for it
PARKED_REASON = {
    "matches_prior_state": "reconcile_matches_prior_state",
    "diverged": "reconcile_diverged",
    "unreadable": "reconcile_unreadable",
}


def open_run(app: RuntimeApplication, *, marker: str | None = T1_PROTOCOL) -> None:
    """Session s1, run r1 and its first (user) event, declaring the T1 protocol by default."""
    app.open_session(SPINE.session_id, "/workspace")
    app.ledger.create_run(run_header(SPINE))
    app.ledger.append_event(RUN, EV.user(marker=marker))


MODES = ("never_auto_retry", "reconcile", "idempotent", "replay_safe")
KINDS = (
    "text",
    "t1",
    "pending_call",
    "claim",
    "t2",
    "completed_bundle",
    "parked_bundle",
    "pre_t1",
    "retry",
)

#: one abstract step: (kind, choice, flag). ``choice`` picks a mode / an operation / an
#: observation / an earlier command modulo what is eligible, ``flag`` toggles metadata, an error
#: outcome or batching. ``claim`` / ``t2`` / ``retry`` with nothing eligible are skipped; a
#: bundle step with no prepared ``reconcile`` operation first prepares one (T1).
STEPS = st.lists(
    st.tuples(st.sampled_from(KINDS), st.integers(0, 11), st.booleans()),
    min_size=1,
    max_size=16,
)


@dataclass
class Model:
    """What the test expects: journal state and metadata of every operation that crossed T1."""

    states: dict[str, JournalState] = field(default_factory=dict)
    modes: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)
    pending_calls: list[str] = field(default_factory=list)
    tool_commands: list[Callable[[], ToolCommit]] = field(default_factory=list)
    appends: list[list[dict[str, Any]]] = field(default_factory=list)
    counter: int = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def prepared(self, *, reconcile_only: bool = False) -> list[str]:
        return [
            call_id
            for call_id, state in self.states.items()
            if state == "prepared" and (not reconcile_only or self.modes[call_id] == "reconcile")
        ]


def _tool(app: RuntimeApplication, model: Model, command: Callable[[], ToolCommit]) -> None:
    assert command().created is True
    model.tool_commands.append(command)


def _append(app: RuntimeApplication, model: Model, events: list[dict[str, Any]]) -> None:
    result = app.ledger.append_events(RUN, events)
    assert (result.appended, result.retried) == (len(events), 0)
    model.appends.append(events)


def _t1(app: RuntimeApplication, model: Model, call_id: str, mode: str, with_meta: bool) -> None:
    call = EV.call(call_id, "Write", {"path": f"{call_id}.txt", "content": call_id})
    metadata = {"expectedDigest": f"sha256:{call_id}", "mode": mode} if with_meta else None
    _tool(
        app,
        model,
        lambda: app.tool_journal.commit_tool_prepared(
            RUN, call, recovery_mode=mode, metadata=metadata
        ),
    )
    model.states[call_id] = "prepared"
    model.modes[call_id] = mode
    if metadata is not None:
        model.metadata[SPINE.operation_id(call_id)] = metadata


def _reconcile_operation(app: RuntimeApplication, model: Model, choice: int, flag: bool) -> str:
    """A prepared ``reconcile``-mode operation to recover: an existing one, else a new T1."""
    candidates = model.prepared(reconcile_only=True)
    if candidates:
        return candidates[choice % len(candidates)]
    call_id = model.fresh("c")
    _t1(app, model, call_id, "reconcile", flag)
    return call_id


def _run_step(app: RuntimeApplication, model: Model, kind: str, choice: int, flag: bool) -> None:
    if kind == "text":
        _append(app, model, [EV.text(event_id=model.fresh("text-"))])
    elif kind == "t1":
        _t1(app, model, model.fresh("c"), MODES[choice % len(MODES)], flag)
    elif kind == "pending_call":
        call_id = model.fresh("c")
        _append(app, model, [EV.call(call_id, "Write", {"path": f"{call_id}.txt"})])
        model.pending_calls.append(call_id)
    elif kind == "claim" and model.pending_calls:
        call_id = model.pending_calls.pop(choice % len(model.pending_calls))
        call = EV.call(call_id, "Write", {"path": f"{call_id}.txt"})
        mode = MODES[choice % len(MODES)]
        _tool(
            app, model, lambda: app.tool_journal.commit_tool_prepared(RUN, call, recovery_mode=mode)
        )
        model.states[call_id] = "prepared"
        model.modes[call_id] = mode
    elif kind == "t2" and model.prepared():
        candidates = model.prepared()
        call_id = candidates[choice % len(candidates)]
        response = EV.bound_response(
            call_id, "Write", "failed" if flag else "ok", is_error=flag or None
        )
        _tool(app, model, lambda: app.tool_journal.commit_tool_outcome(RUN, response))
        model.states[call_id] = "outcome_committed"
    elif kind == "completed_bundle":
        call_id = _reconcile_operation(app, model, choice, flag)
        parts = EV.completed_bundle(call_id, "Write", "ok")
        _tool(
            app,
            model,
            lambda: app.tool_journal.commit_tool_recovery_bundle(
                RUN, SPINE.operation_id(call_id), **parts
            ),
        )
        model.states[call_id] = "recovery_completed"
    elif kind == "parked_bundle":
        call_id = _reconcile_operation(app, model, choice, flag)
        observations = sorted(PARKED_REASON)
        parts = EV.parked_bundle(call_id, observations[choice % len(observations)])
        _tool(
            app,
            model,
            lambda: app.tool_journal.commit_tool_recovery_bundle(
                RUN, SPINE.operation_id(call_id), **parts
            ),
        )
        model.states[call_id] = "recovery_parked"
    elif kind == "pre_t1":
        # a pre-T1 refusal: call + synthetic error response, in one batch or in two appends
        call_id = model.fresh("c")
        pair = [
            EV.call(call_id, "Bash", {"command": call_id}),
            EV.refusal(call_id, "Bash"),
        ]
        if flag:
            _append(app, model, pair)
        else:
            _append(app, model, pair[:1])
            _append(app, model, pair[1:])
    elif kind == "retry" and (model.tool_commands or model.appends):
        _retry(app, model, choice, flag)


def _retry(app: RuntimeApplication, model: Model, choice: int, prefer_tool: bool) -> None:
    """Re-run an earlier command exactly: ``created=False`` / all retried, nothing written."""
    before = store_snapshot(app)
    if model.tool_commands and (prefer_tool or not model.appends):
        commit = model.tool_commands[choice % len(model.tool_commands)]()
        assert commit.created is False
    else:
        events = model.appends[choice % len(model.appends)]
        result = app.ledger.append_events(RUN, events)
        assert (result.appended, result.retried) == (0, len(events))
    assert store_snapshot(app) == before


def _by_operation(operations: tuple[ToolOperationState, ...]) -> dict[str, ToolOperationState]:
    return {operation.operation_id: operation for operation in operations}


def _check_equivalence(app: RuntimeApplication, model: Model) -> None:
    online = app.tool_journal.tool_operations(RUN)
    events = app.read_run_events(RUN)
    rebuilt = ToolJournal.rebuild(events, model.metadata).operations
    assert rebuilt == online

    resolution = app.tool_journal.resolve_run(RUN)
    assert resolution == resolve_tool_operations(events)
    assert resolution.issues == ()
    assert resolution.has_corruption is False
    from_resolver = {
        decision.operation_id: expected_journal_state(decision)
        for decision in resolution.decisions
        if expected_journal_state(decision) is not None
    }
    for decision in resolution.decisions:
        if decision.dispatch_runtime_event_id is None:
            assert decision.operation_id is None  # never crossed T1: no journal operation
    journal = {op.operation_id: op.state for op in online}
    assert journal == from_resolver
    assert journal == {
        SPINE.operation_id(call_id): state for call_id, state in model.states.items()
    }
    for operation in online:
        assert dict(operation.metadata) == model.metadata.get(operation.operation_id, {})


def test_online_reopen_rebuild_and_resolver_agree(store_url: str) -> None:
    """For random valid command sequences, every operation's journal state is the same online,
    after reopening, rebuilt from the events, and as implied by the resolver decision, and
    equals the modelled state; metadata round-trips; exact retries write nothing."""
    fresh_store = fresh_store_for(store_url)

    @settings(hypothesis_settings_for(store_url))
    @given(steps=STEPS, marker=st.booleans(), end_with_terminal=st.booleans())
    def agree(steps: list[tuple[str, int, bool]], marker: bool, end_with_terminal: bool) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            _one_sequence(fresh_store(Path(tmp)), steps, marker, end_with_terminal)

    agree()


def _one_sequence(
    store: str, steps: list[tuple[str, int, bool]], marker: bool, end_with_terminal: bool
) -> None:
    model = Model()
    with RuntimeApplication.open(store, clock=lambda: 1_000.0) as app:
        open_run(app, marker=T1_PROTOCOL if marker else None)
        for kind, choice, flag in steps:
            _run_step(app, model, kind, choice, flag)
            _check_equivalence(app, model)
        if end_with_terminal:
            app.ledger.append_event(RUN, EV.terminal(status="failed"))
            _check_equivalence(app, model)
        online = app.tool_journal.tool_operations(RUN)
        resolution = app.tool_journal.resolve_run(RUN)
        snapshot = store_snapshot(app)

    with RuntimeApplication.open(store) as reopened:
        assert reopened.tool_journal.tool_operations(RUN) == online
        assert reopened.tool_journal.resolve_run(RUN) == resolution
        _check_equivalence(reopened, model)
        assert _by_operation(reopened.tool_journal.tool_operations(RUN)).keys() == {
            SPINE.operation_id(call_id) for call_id in model.states
        }
        assert store_snapshot(reopened).rows == snapshot.rows
