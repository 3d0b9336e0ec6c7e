"""Hypothesis state machine over a real RuntimeApplication: the Phase 0 invariants.

Why shipped: a host that subclasses ``RuntimeApplication`` (or wires its own store) should run
the same invariants against *its* application. Subclass :class:`ResumeLedgerMachine` and
override :meth:`make_app` (and optionally :meth:`header`) to point it at your store.

The machine appends generated events to one run: legal tool lifecycles (calls, T1 dispatch
facts, responses, error responses, parallel calls, permission facts, terminal) and injected
corruption (orphan and duplicate responses, duplicate ids, partial tool events, foreign
identities, late protocol markers, forged dispatch facts), with T1/T2 going through the store's
tool-journal commands, and occasionally closes and
reopens the application. Each attempted append is either committed (and mirrored in the model)
or refused with a typed error and the store left byte-for-byte unchanged. After every step:

* planning twice gives equal plans, and resolving twice equal resolutions;
* planning leaves the store unchanged;
* the plan from the store equals the plan from the model's events held in memory;
* the replay subset never holds an unpaired call or response, nor a partial or hidden event;
* a prefix whose last tool call has no committed response is never ``safe_replay``;
* once an operation is succeeded/failed in a corruption-free prefix, every longer
  corruption-free prefix keeps it so.
"""

from __future__ import annotations

import copy
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from maka_es.app import RuntimeApplication
from maka_es.errors import MakaError
from maka_es.resume.plan import build_resume_plan
from maka_es.testing.builders import Spine, run_header
from maka_es.testing.store_probe import FreshStore, sqlite_store_in, store_snapshot
from maka_es.tooljournal.resolver import resolve_tool_operations
from maka_es.wire.codec import canonical_args_hash, operation_id_for
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.facts import dispatch_fact as build_dispatch_event

TOOL_NAMES = ("Bash", "Write", "Read")
_ARGS = st.fixed_dictionaries(
    {"path": st.sampled_from(["a.txt", "b.txt", "é.txt"]), "n": st.integers(0, 3)}
)


class ResumeLedgerMachine(RuleBasedStateMachine):
    """Drives one run of a real application; see the module docstring."""

    spine = Spine()
    #: Where each example's store lives (``on_store`` changes it); default a SQLite file.
    fresh_store: ClassVar[FreshStore] = staticmethod(sqlite_store_in)

    @classmethod
    def on_store(cls, fresh_store: FreshStore) -> type[ResumeLedgerMachine]:
        """A machine class whose examples each run on ``fresh_store(workdir)`` (an empty store,
        e.g. a PostgreSQL schema whose tables were cleared; ADR 0028)."""
        return type(f"{cls.__name__}OnStore", (cls,), {"fresh_store": staticmethod(fresh_store)})

    def __init__(self) -> None:
        super().__init__()
        self.workdir = Path(tempfile.mkdtemp(prefix="maka-es-stateful-"))
        self.store = type(self).fresh_store(self.workdir)
        self.app = self.make_app(self.workdir)
        self.app.open_session(self.spine.session_id, "/workspace")
        self.app.ledger.create_run(self.header())
        self.committed: list[dict[str, Any]] = []
        self.counter = 0
        self.calls: list[tuple[str, str, Any]] = []  # (call id, tool name, args) committed
        self.responded: set[str] = set()
        self.dispatched: set[str] = set()
        self.settled: dict[str, str] = {}

    # -- extension points -----------------------------------------------------------------------

    def make_app(self, workdir: Path) -> RuntimeApplication:
        """The application under test: on ``self.store`` (default a SQLite file in ``workdir``)."""
        return RuntimeApplication.open(self.store)

    def header(self) -> dict[str, Any]:
        return run_header(self.spine)

    def teardown(self) -> None:
        self.app.close()
        shutil.rmtree(self.workdir, ignore_errors=True)

    # -- helpers --------------------------------------------------------------------------------

    def _id(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}-{self.counter}"

    def _envelope(self, role: str, author: str, stem: str = "e") -> dict[str, Any]:
        return self.spine.envelope(self._id(stem), 1000 + self.counter, role, author)

    def _try_append(self, event: dict[str, Any]) -> bool:
        """Append through the store; on refusal the store must be unchanged."""
        before = store_snapshot(self.app)
        try:
            self.app.ledger.append_event(self.spine.run_id, event)
        except MakaError:
            assert store_snapshot(self.app) == before, "a refused append changed the store"
            return False
        if all(existing["id"] != event["id"] for existing in self.committed):
            self.committed.append(copy.deepcopy(event))
        return True

    # -- legal facts ----------------------------------------------------------------------------

    @rule(marker=st.booleans(), text=st.sampled_from(["go", "fix it", "é"]))
    def user_text(self, marker: bool, text: str) -> None:
        event = self._envelope("user", "user")
        event["content"] = {"kind": "text", "text": text}
        if marker and not self.committed:
            event["actions"] = {"runtimeProtocol": {"toolBoundary": "t1_after_preflight_v1"}}
        self._try_append(event)

    @rule(kind=st.sampled_from(["text", "thinking"]))
    def model_output(self, kind: str) -> None:
        event = self._envelope("model", "agent")
        event["content"] = {"kind": kind, "text": "thinking aloud"}
        self._try_append(event)

    @rule(name=st.sampled_from(TOOL_NAMES), args=_ARGS)
    def tool_call(self, name: str, args: dict[str, Any]) -> None:
        call_id = self._id("call")
        event = self._envelope("model", "agent")
        event["content"] = {"kind": "function_call", "id": call_id, "name": name, "args": args}
        if self._try_append(event):
            self.calls.append((call_id, name, args))

    def _try_command(self, command: Callable[[], object], events: list[dict[str, Any]]) -> bool:
        """Run a store command; on success mirror ``events`` (new ids only) in the model."""
        before = store_snapshot(self.app)
        try:
            command()
        except MakaError:
            assert store_snapshot(self.app) == before, "a refused command changed the store"
            return False
        known = {event["id"] for event in self.committed}
        self.committed.extend(copy.deepcopy(e) for e in events if e["id"] not in known)
        return True

    def _call_event(self, call_id: str, name: str, args: Any) -> dict[str, Any]:
        for event in self.committed:
            content = event.get("content") or {}
            if content.get("kind") == "function_call" and content.get("id") == call_id:
                return event
        raise AssertionError(f"call {call_id} is not in the model")

    @precondition(lambda self: bool(self.calls))
    @rule(data=st.data(), mode=st.sampled_from(["never_auto_retry", "reconcile", "idempotent"]))
    def prepare_committed_call(self, data: st.DataObject, mode: str) -> None:
        """T1 for a call that is already committed (e.g. after a permission wait)."""
        call_id, name, args = data.draw(st.sampled_from(self.calls))
        call = self._call_event(call_id, name, args)
        self._t1(call, mode)

    @rule(name=st.sampled_from(TOOL_NAMES), args=_ARGS)
    def call_with_t1(self, name: str, args: dict[str, Any]) -> None:
        """T1 for a new call: call + dispatch in one transaction."""
        call_id = self._id("call")
        call = self._envelope("model", "agent")
        call["content"] = {"kind": "function_call", "id": call_id, "name": name, "args": args}
        if self._t1(call, "never_auto_retry"):
            self.calls.append((call_id, name, args))

    def _t1(self, call: dict[str, Any], mode: str) -> bool:
        operation = operation_id_for(self.spine.invocation_id, call["content"]["id"])
        decoded = RuntimeEvent.model_validate(call)
        dispatch = build_dispatch_event(decoded, operation, mode).to_wire()
        done = self._try_command(
            lambda: self.app.tool_journal.commit_tool_prepared(
                self.spine.run_id, call, recovery_mode=mode
            ),
            [call, dispatch],
        )
        if done:
            self.dispatched.add(call["content"]["id"])
        return done

    @precondition(lambda self: bool(self.calls))
    @rule(data=st.data())
    def forged_dispatch(self, data: st.DataObject) -> None:
        """A dispatch through the generic path (with a tampered hash): always refused."""
        call_id, name, _ = data.draw(st.sampled_from(self.calls))
        operation = operation_id_for(self.spine.invocation_id, call_id)
        event = self.spine.envelope(
            f"{operation}_dispatch", 1000 + self.counter, "system", "system"
        )
        event["actions"] = {
            "toolDispatch": {
                "protocol": "t1_after_preflight_v1",
                "operationId": operation,
                "providerToolCallId": call_id,
                "toolName": name,
                "canonicalArgsHash": canonical_args_hash(name, {"tampered": True}),
                "recoveryMode": "never_auto_retry",
            }
        }
        event["refs"] = {"operationId": operation, "toolCallId": call_id}
        assert not self._try_append(event)

    @precondition(lambda self: bool(self.calls))
    @rule(data=st.data(), is_error=st.booleans())
    def response(self, data: st.DataObject, is_error: bool) -> None:
        call_id, name, _ = data.draw(st.sampled_from(self.calls))
        event = self._envelope("tool", "tool")
        event["content"] = {
            "kind": "function_response",
            "id": call_id,
            "name": name,
            "result": {"kind": "text", "text": "error" if is_error else "ok"},
            "isError": is_error,
        }
        if call_id in self.dispatched:
            event["refs"] = {
                "operationId": operation_id_for(self.spine.invocation_id, call_id),
                "toolCallId": call_id,
            }
            done = self._try_command(
                lambda: self.app.tool_journal.commit_tool_outcome(self.spine.run_id, event), [event]
            )
        else:
            done = self._try_append(event)
        if done:
            self.responded.add(call_id)

    @rule(decide=st.booleans())
    def permission(self, decide: bool) -> None:
        request_id = self._id("perm")
        event = self._envelope("system", "system")
        event["actions"] = {
            "permissionRequest": {
                "kind": "tool_permission",
                "requestId": request_id,
                "toolUseId": "call-x",
                "toolName": "Write",
                "category": "file_write",
                "reason": "file_write",
                "args": {"path": "a.txt"},
                "rememberForTurnAllowed": True,
            }
        }
        self._try_append(event)
        if decide:
            decision = self._envelope("system", "system")
            decision["actions"] = {
                "permissionDecision": {"requestId": request_id, "decision": "allow"}
            }
            self._try_append(decision)

    @rule(status=st.sampled_from(["completed", "failed", "aborted", "cancelled"]))
    def terminal(self, status: str) -> None:
        event = self._envelope("system", "system")
        event["status"] = status
        event["actions"] = {"endInvocation": True}
        self._try_append(event)

    # -- injected corruption --------------------------------------------------------------------

    @rule()
    def orphan_response(self) -> None:
        event = self._envelope("tool", "tool")
        event["content"] = {
            "kind": "function_response",
            "id": self._id("ghost"),
            "name": "Bash",
            "result": None,
        }
        self._try_append(event)

    @precondition(lambda self: bool(self.committed))
    @rule(data=st.data())
    def duplicate_id_other_content(self, data: st.DataObject) -> None:
        original = data.draw(st.sampled_from(self.committed))
        clone = copy.deepcopy(original)
        clone["ts"] = clone["ts"] + 0.5
        self._try_append(clone)

    @precondition(lambda self: bool(self.committed))
    @rule(data=st.data())
    def exact_retry(self, data: st.DataObject) -> None:
        self._try_append(copy.deepcopy(data.draw(st.sampled_from(self.committed))))

    @rule(kind=st.sampled_from(["call", "text"]))
    def partial_event(self, kind: str) -> None:
        event = self._envelope("model", "agent")
        event["partial"] = True
        event["content"] = (
            {"kind": "function_call", "id": self._id("pc"), "name": "Bash", "args": {}}
            if kind == "call"
            else {"kind": "text", "text": "stream"}
        )
        self._try_append(event)

    @rule(field=st.sampled_from(["sessionId", "runId", "invocationId", "turnId"]))
    def foreign_identity(self, field: str) -> None:
        event = self._envelope("model", "agent")
        event["content"] = {"kind": "text", "text": "from elsewhere"}
        event[field] = "foreign"
        self._try_append(event)

    @rule(value=st.sampled_from(["t1_after_preflight_v1", "t0_unknown"]))
    def late_marker(self, value: str) -> None:
        event = self._envelope("system", "system")
        event["actions"] = {"runtimeProtocol": {"toolBoundary": value}}
        self._try_append(event)

    @rule()
    def reopen(self) -> None:
        before = self.app.plan_resume(self.spine.run_id)
        self.app.close()
        self.app = self.make_app(self.workdir)
        assert self.app.plan_resume(self.spine.run_id) == before

    # -- invariants -----------------------------------------------------------------------------

    @invariant()
    def planning_is_deterministic_pure_and_store_backed(self) -> None:
        before = store_snapshot(self.app)
        first = self.app.plan_resume(self.spine.run_id)
        second = self.app.plan_resume(self.spine.run_id)
        assert first == second
        assert store_snapshot(self.app) == before, "planning wrote to the store"
        in_memory = build_resume_plan(copy.deepcopy(self.committed))
        assert first == in_memory
        assert resolve_tool_operations(self.committed) == resolve_tool_operations(self.committed)
        self._check_replay(first.replay_runtime_events)
        self._check_dangling(first.disposition)
        self._check_monotonic()

    def _check_replay(self, replay: Any) -> None:
        calls: dict[str, str] = {}
        responses: dict[str, str] = {}
        for event in replay:
            assert not event.partial
            assert not event.is_hidden
            if event.function_call is not None:
                calls[event.function_call.id] = event.function_call.name
            if event.function_response is not None:
                assert event.function_response.id in calls, "replayed response without its call"
                responses[event.function_response.id] = event.function_response.name
        for call_id, name in calls.items():
            assert responses.get(call_id) == name, "replayed call without its result"

    def _check_dangling(self, disposition: str) -> None:
        last_call = None
        for event in self.committed:
            content = event.get("content") or {}
            if content.get("kind") == "function_call":
                last_call = content["id"]
        if last_call is not None:
            answered = any(
                (e.get("content") or {}).get("kind") == "function_response"
                and e["content"]["id"] == last_call
                for e in self.committed
            )
            if not answered:
                assert disposition != "safe_replay", "unanswered tool call replayed as safe"

    def _check_monotonic(self) -> None:
        resolution = resolve_tool_operations(self.committed)
        if resolution.has_corruption:
            return
        current = {d.tool_call_id: d.status for d in resolution.decisions}
        plan = build_resume_plan(self.committed)
        statuses = {op.tool_call_id: op.status for op in plan.operations}
        for call_id, status in self.settled.items():
            assert statuses.get(call_id) == status, f"settled {call_id} changed to {current}"
        for call_id, status in statuses.items():
            if status in {"succeeded", "failed"}:
                self.settled[call_id] = status
