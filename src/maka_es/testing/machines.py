"""Hypothesis state machines over a real RuntimeApplication, one module for the kit's three.

:class:`ResumeLedgerMachine`, the Phase 0 invariants.

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

:class:`ContinuationEligibilityMachine`, continuation eligibility over generated prefixes and
host facts.

The machine grows runs of one session in a real store (user messages, model output, tool calls
and results, failed terminals and headers, new runs) while the host's facts change (workspace
identity, background work, tool catalog, cwd), and reopens the store now and then. After every
step: planning twice gives equal plans (with the id factory replayed), planning never changes
the store, and after a reopen the plan is unchanged.

Your own catalogue: ``ContinuationEligibilityMachine.for_tools(("Label", ...))`` gives a
machine whose runs call your tool names and whose host offers them (docs/testing.md). Subclass
:class:`ContinuationEligibilityMachine` and override :meth:`make_app` for your store.

:class:`ToolRecoveryMachine`, over ToolRuntime: calls, crashes and recoveries interleaved.

A "crash" drops the application in the middle of a call (the implementation or the point
just before T2 raises a ``BaseException``, so no T2 is written) and reopens the SQLite file
with a fresh application, as a restarted host would. Invariants after every step:

* no implementation of a non-idempotent tool ever ran twice for one operation id (idempotent
  and replay-safe tools may be re-executed by recovery, always with the same operation id);
* every result acknowledged to a caller is in the ledger, byte for byte;
* the plan is deterministic and its replay never holds a dangling call.

Your own tools: ``ToolRecoveryMachine.for_tools(catalogue)`` returns a machine class that drives
the tools ``catalogue(workdir)`` builds (each a :class:`ToolUnderTest`: your ``Tool`` with its
implementation, recovery mode and reconciler, and a strategy for its arguments), so the same
invariants hold for them (docs/testing.md). Subclass :class:`ToolRecoveryMachine` and override
:meth:`make_app` to run it on your store.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from pydantic import BaseModel

from maka_es import failpoints
from maka_es.adapters.file_write import file_write_tool
from maka_es.app import RuntimeApplication
from maka_es.continuation.host import HostObservation
from maka_es.continuation.model.plan import ContinuationPlan
from maka_es.errors import MakaError
from maka_es.resume.plan import build_resume_plan
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.probes import FreshStore, sqlite_store_in, store_snapshot
from maka_es.tooljournal.model.resolver import resolve_tool_operations
from maka_es.tooljournal.runtime import BEFORE_T2, Tool, ToolContext, ToolResult, ToolRuntime
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


WORKSPACES = (
    "workspace:v1:6f1c2a4e-8b7d-4c3e-9a1f-0e2d3c4b5a69",
    "workspace:v1:00000000-0000-4000-8000-000000000000",
)


#: A tool name no catalogue offers: a run that called it cannot be continued.
GONE = "Gone"


class _MutableInspector:
    def __init__(self, tool_names: tuple[str, ...]) -> None:
        self.observation = HostObservation(
            workspace_identity=WORKSPACES[0],
            workspace_path="/workspace",
            background_operations_settled=True,
            available_tool_names=tool_names,
        )

    def inspect(self, session_id: str, cwd: str) -> HostObservation:
        return self.observation


class ContinuationEligibilityMachine(RuleBasedStateMachine):
    #: The host's tool names; ``for_tools`` gives a machine class over your own.
    tool_names: ClassVar[tuple[str, ...]] = ("Bash", "Read")
    #: Where each example's store lives (``on_store`` changes it); default a SQLite file.
    fresh_store: ClassVar[FreshStore] = staticmethod(sqlite_store_in)

    @classmethod
    def on_store(cls, fresh_store: FreshStore) -> type[ContinuationEligibilityMachine]:
        """A machine class whose examples each run on ``fresh_store(workdir)`` (an empty store,
        e.g. a PostgreSQL schema whose tables were cleared; ADR 0028)."""
        return type(f"{cls.__name__}OnStore", (cls,), {"fresh_store": staticmethod(fresh_store)})

    @classmethod
    def for_tools(cls, tool_names: tuple[str, ...]) -> type[ContinuationEligibilityMachine]:
        """A machine class whose runs call ``tool_names`` (and one missing tool)."""
        if not tool_names or GONE in tool_names:
            raise ValueError(f"tool names must be non-empty and not {GONE!r}: {tool_names}")
        name = f"{cls.__name__}ForTools"
        return type(name, (cls,), {"tool_names": tuple(sorted(tool_names))})

    def __init__(self) -> None:
        super().__init__()
        self.workdir = Path(tempfile.mkdtemp(prefix="maka-es-continuation-"))
        self.store = type(self).fresh_store(self.workdir)
        self.inspector = _MutableInspector(self.tool_names)
        self.app = self.make_app(self.workdir)
        self.app.open_session("s1", "/workspace")
        self.runs = 0
        self.ledger = self._new_run()
        self.cwd = "/workspace"

    def make_app(self, workdir: Path) -> RuntimeApplication:
        self._ids = itertools.count()
        return RuntimeApplication.open(
            self.store,
            env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
            id_factory=lambda: f"fresh-{next(self._ids)}",
            host_inspector=self.inspector,
        )

    def teardown(self) -> None:
        self.app.close()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _new_run(self) -> LedgerBuilder:
        self.runs += 1
        spine = Spine("s1", f"i{self.runs}", f"r{self.runs}", f"t{self.runs}")
        self.app.ledger.create_run(
            run_header(spine, createdAt=1000 * self.runs, workspaceIdentity=WORKSPACES[0])
        )
        return LedgerBuilder(spine, prefix=f"r{self.runs}-")

    def _append(self, event: dict[str, Any]) -> None:
        try:
            self.app.ledger.append_event(self.ledger.spine.run_id, event)
        except MakaError:
            self.ledger.events.remove(event)

    def plan(self) -> ContinuationPlan:
        self._ids = itertools.count()  # fresh ids are part of the plan: replay the factory
        return self.app.plan_continuation("s1", current_cwd=self.cwd)

    # -- ledger rules -----------------------------------------------------------------------------

    @rule(text=st.sampled_from(["go", "again"]))
    def user(self, text: str) -> None:
        self._append(self.ledger.user(text))

    @rule()
    def model_text(self) -> None:
        self._append(self.ledger.text())

    @rule(answer=st.booleans(), data=st.data())
    def tool(self, answer: bool, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from([*self.tool_names, GONE]), label="tool")
        call_id = f"c{len(self.ledger.events)}"
        self._append(self.ledger.call(call_id, name, {"x": 1}))
        if answer:
            self._append(self.ledger.response(call_id, name))

    @rule()
    def permission_request(self) -> None:
        event = self.ledger.spine.envelope(f"perm-{len(self.ledger.events)}", 1, "system", "system")
        event["actions"] = {
            "permissionRequest": {"kind": "sandbox_escalation", "requestId": event["id"]}
        }
        self._append(self.ledger.add(event))

    @rule(header=st.booleans())
    def fail(self, header: bool) -> None:
        self._append(self.ledger.terminal("failed"))
        if header:
            with contextlib.suppress(MakaError):
                self.app.ledger.update_run_header(
                    self.ledger.spine.run_id, {"status": "failed", "failureClass": "provider_error"}
                )

    @rule()
    def next_run(self) -> None:
        self.ledger = self._new_run()

    # -- host rules -------------------------------------------------------------------------------

    @rule(
        identity=st.sampled_from(WORKSPACES),
        settled=st.booleans(),
        cwd=st.sampled_from(["/workspace", "/workspace/", "/moved"]),
        data=st.data(),
    )
    def host_changes(self, identity: str, settled: bool, cwd: str, data: st.DataObject) -> None:
        every, fewer = self.tool_names, self.tool_names[1:]
        offers = [every, fewer, tuple(sorted((*every, GONE)))]
        tools = data.draw(st.sampled_from(offers), label="available tools")
        self.inspector.observation = HostObservation(
            workspace_identity=identity,
            workspace_path=cwd,
            background_operations_settled=settled,
            available_tool_names=tools,
        )
        self.cwd = cwd

    @rule()
    def reopen(self) -> None:
        before = self.plan()
        self.app.close()
        self.app = self.make_app(self.workdir)
        assert self.plan() == before

    # -- invariants ------------------------------------------------------------------------------

    @invariant()
    def planning_is_deterministic_and_read_only(self) -> None:
        before = store_snapshot(self.app)
        first = self.plan()
        second = self.plan()
        assert first == second
        assert store_snapshot(self.app) == before
        if first.disposition == "continue":
            assert first.rejection_reasons == ()
            assert first.continuation is not None
        else:
            assert first.rejection_reasons
            assert first.continuation is None


class SimulatedCrash(BaseException):
    """The process 'dies' here: not an Exception, so the runtime commits no outcome."""


class Note(BaseModel):
    text: str


CRASH_POINTS = (None, "before_effect", "after_effect", "before_t2")
#: Recovery modes whose implementation recovery never runs again (at most one run per operation).
RUN_AT_MOST_ONCE = frozenset({"never_auto_retry", "reconcile"})


@dataclass(frozen=True)
class ToolUnderTest:
    """One tool of the catalogue a machine drives: the host's own ``Tool`` (implementation,
    recovery mode, reconciler) and the strategy that draws its call arguments."""

    tool: Tool[Any]
    arguments: st.SearchStrategy[dict[str, Any]]


#: Builds the catalogue in the machine's fresh work directory (a file tool's root goes there).
ToolCatalogue = Callable[[Path], Sequence[ToolUnderTest]]

_TEXTS = st.sampled_from(["a", "b", "c"])


def _note_tool(name: str, mode: Any) -> Tool[Note]:
    def run(args: Note, context: ToolContext) -> Any:
        return {"kind": "text", "text": f"{name}:{args.text}"}

    return Tool(name, Note, run, recovery_mode=mode)


def default_catalogue(workdir: Path) -> list[ToolUnderTest]:
    """The kit's own three tools: one never retried, one idempotent, the reconciled ``Write``."""
    notes = st.fixed_dictionaries({"text": _TEXTS})
    writes = st.fixed_dictionaries(
        {"path": _TEXTS.map(lambda t: f"{t}.txt"), "content": st.sampled_from(["x", "y", "z"])}
    )
    return [
        ToolUnderTest(_note_tool("Append", "never_auto_retry"), notes),
        ToolUnderTest(_note_tool("Idem", "idempotent"), notes),
        ToolUnderTest(file_write_tool(workdir / "ws"), writes),
    ]


class ToolRecoveryMachine(RuleBasedStateMachine):
    #: The tools under test; ``for_tools`` gives a machine class over your own.
    catalogue: ClassVar[ToolCatalogue] = staticmethod(default_catalogue)
    #: Where each example's store lives (``on_store`` changes it); default a SQLite file.
    fresh_store: ClassVar[FreshStore] = staticmethod(sqlite_store_in)

    @classmethod
    def on_store(cls, fresh_store: FreshStore) -> type[ToolRecoveryMachine]:
        """A machine class whose examples each run on ``fresh_store(workdir)`` (an empty store,
        e.g. a PostgreSQL schema whose tables were cleared; ADR 0028)."""
        return type(f"{cls.__name__}OnStore", (cls,), {"fresh_store": staticmethod(fresh_store)})

    @classmethod
    def for_tools(cls, catalogue: ToolCatalogue) -> type[ToolRecoveryMachine]:
        """A machine class over ``catalogue`` (run its ``TestCase`` from your suite)."""
        return type(f"{cls.__name__}ForTools", (cls,), {"catalogue": staticmethod(catalogue)})

    def __init__(self) -> None:
        super().__init__()
        self.workdir = Path(tempfile.mkdtemp(prefix="maka-es-tools-"))
        self.store = type(self).fresh_store(self.workdir)
        self.tools: Mapping[str, ToolUnderTest] = {
            entry.tool.name: entry for entry in type(self).catalogue(self.workdir)
        }
        if not self.tools:
            raise ValueError("the tool catalogue is empty: nothing to drive")
        self.app = self.make_app(self.workdir)
        self.app.open_session("s1", str(self.workdir))
        self.app.ledger.create_run(run_header())
        self.ledger = LedgerBuilder()
        self.app.ledger.append_events("r1", [self.ledger.user(marker=True)])
        self.runs: Counter[tuple[str, str]] = Counter()  # (tool, operation id) -> executions
        self.acknowledged: list[ToolResult] = []
        self.crash_at: str | None = None
        self.sealed = False

    def make_app(self, workdir: Path) -> RuntimeApplication:
        return RuntimeApplication.open(self.store)

    def teardown(self) -> None:
        failpoints.disarm(BEFORE_T2)
        self.app.close()
        shutil.rmtree(self.workdir, ignore_errors=True)

    # -- tools ----------------------------------------------------------------------------------

    def _instrumented(self, tool: Tool[Any]) -> Tool[Any]:
        """The host's tool, counted and crashable just before or just after its side effect."""

        def run(args: Any, context: ToolContext) -> Any:
            self.runs[(tool.name, context.operation_id)] += 1
            if self.crash_at == "before_effect":
                raise SimulatedCrash()
            result = tool.run(args, context)
            if self.crash_at == "after_effect":
                raise SimulatedCrash()
            return result

        return Tool(tool.name, tool.input_model, run, tool.recovery_mode, tool.reconciler)

    def runtime(self) -> ToolRuntime:
        return ToolRuntime(
            self.app.tool_journal, [self._instrumented(e.tool) for e in self.tools.values()]
        )

    def _crash_and_restart(self) -> None:
        self.app.close()
        self.app = self.make_app(self.workdir)

    # -- rules ----------------------------------------------------------------------------------

    @precondition(lambda self: not self.sealed)
    @rule(crash=st.sampled_from(CRASH_POINTS), data=st.data())
    def call(self, crash: str | None, data: st.DataObject) -> None:
        tool = data.draw(st.sampled_from(sorted(self.tools)), label="tool")
        args = data.draw(self.tools[tool].arguments, label="arguments")
        call_id = f"call-{len(self.ledger.events)}"
        event = self.ledger.call(call_id, tool, args)
        self.crash_at = crash

        def die(_: str) -> None:
            raise SimulatedCrash()

        if crash == "before_t2":
            failpoints.arm(BEFORE_T2, die)
        try:
            result = self.runtime().execute("r1", event)
        except SimulatedCrash:
            self._crash_and_restart()
            return
        finally:
            failpoints.disarm(BEFORE_T2)
            self.crash_at = None
        self.acknowledged.append(result)

    @precondition(lambda self: not self.sealed)
    @rule()
    def recover(self) -> None:
        self.runtime().recover("r1")

    @rule()
    def restart(self) -> None:
        self._crash_and_restart()

    @precondition(lambda self: any(r.dispatched for r in self.acknowledged))
    @rule(data=st.data())
    def replay_an_acknowledged_call(self, data: st.DataObject) -> None:
        """A confused host sends an already executed call again: it must not run again."""
        result = data.draw(st.sampled_from([r for r in self.acknowledged if r.dispatched]))
        call = next(
            e
            for e in self.ledger.events
            if (e.get("content") or {}).get("id") == result.tool_call_id
        )
        before = dict(self.runs)
        with contextlib.suppress(MakaError):
            self.runtime().execute("r1", call)
        assert dict(self.runs) == before

    @precondition(lambda self: not self.sealed)
    @rule()
    def finish(self) -> None:
        self.runtime().recover("r1")
        try:
            self.app.ledger.append_event("r1", self.ledger.terminal())
        except MakaError:
            return
        self.sealed = True

    # -- invariants -----------------------------------------------------------------------------

    @invariant()
    def no_blind_second_execution(self) -> None:
        for (tool, operation_id), count in self.runs.items():
            if self.tools[tool].tool.recovery_mode in RUN_AT_MOST_ONCE:
                assert count <= 1, f"{tool} ran {count} times for {operation_id}"
            else:
                assert count <= 2, f"{tool} re-executed more than once for {operation_id}"

    @invariant()
    def acknowledged_results_are_committed(self) -> None:
        committed = {e.id: e for e in self.app.read_run_events("r1")}
        for result in self.acknowledged:
            event = committed.get(result.response_event_id)
            assert event is not None, f"acknowledged {result.response_event_id} not in ledger"
            response = event.function_response
            assert response is not None
            assert response.result == result.result

    @invariant()
    def plan_is_deterministic(self) -> None:
        first = self.app.plan_resume("r1")
        assert first == self.app.plan_resume("r1")
        replay_calls = {e.function_call.id for e in first.replay_runtime_events if e.function_call}
        replay_responses = {
            e.function_response.id for e in first.replay_runtime_events if e.function_response
        }
        assert replay_calls == replay_responses
