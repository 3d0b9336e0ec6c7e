"""Hypothesis state machine: continuation eligibility over generated prefixes and host facts.

The machine grows runs of one session in a real store (user messages, model output, tool calls
and results, failed terminals and headers, new runs) while the host's facts change (workspace
identity, background work, tool catalog, cwd), and reopens the store now and then. After every
step: planning twice gives equal plans (with the id factory replayed), planning never changes
the store, and after a reopen the plan is unchanged.

Your own catalogue: ``ContinuationEligibilityMachine.for_tools(("Label", ...))`` gives a
machine whose runs call your tool names and whose host offers them (docs/testing.md). Subclass
:class:`ContinuationEligibilityMachine` and override :meth:`make_app` for your store.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
import tempfile
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from maka_es.app import RuntimeApplication
from maka_es.continuation.host import HostObservation
from maka_es.continuation.plan import ContinuationPlan
from maka_es.errors import MakaError
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.store_probe import FreshStore, sqlite_store_in, store_snapshot

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
