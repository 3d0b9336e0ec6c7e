"""Hypothesis state machine over ToolRuntime: calls, crashes and recoveries interleaved.

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
from maka_es.errors import MakaError
from maka_es.testing.builders import LedgerBuilder, run_header
from maka_es.testing.store_probe import FreshStore, sqlite_store_in
from maka_es.tooljournal.runtime import BEFORE_T2, Tool, ToolContext, ToolResult, ToolRuntime


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
