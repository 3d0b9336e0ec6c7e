"""A planner that races ``end_run`` between its two saves sees a transient answer (issue 20).

Why: ``end_run`` makes the terminal event durable first and derives the header in a second
save (docs/reference/ledger.md#terminal-rules). A planner of the same boundary that read the
claimed continuation in between was told ``continuation_claim_repair_required``, an order to
run recovery, while nothing was wrong. Now a target whose terminal fact is durable, whose
header is not terminal yet and whose owner is live (this process holds it, or another host's
lease is live) parks ``continuation_end_in_progress``: plan again. Once the header is saved
the answer is ``continuation_already_exists``; once the owner is gone (lease lapsed, or this
host restarted) the same state is ``continuation_claim_repair_required`` again, and recovery
repairs it. The pause is the ``AFTER_TERMINAL_EVENT`` failpoint, on both stores.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from maka_es import failpoints
from maka_es.app import RuntimeApplication
from maka_es.continuation.host import HostObservation, StaticHostInspector
from maka_es.providers.protocol import ProviderTurn, ScriptedProvider
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from tests.conftest import FixedClock

WORKSPACE = "workspace:v1:6f1c2a4e-8b7d-4c3e-9a1f-0e2d3c4b5a69"
LEASE_MS = 30_000
ENDING = ("continuation_end_in_progress",)
REPAIR = ("continuation_claim_repair_required",)
EXISTS = ("continuation_already_exists",)


class Crash(BaseException):
    """The writer dies between the two saves (nothing in the library catches it)."""


@pytest.fixture
def hosts(store_url: str, clock: FixedClock) -> Iterator[Any]:
    opened: list[RuntimeApplication] = []

    def open_host(host_id: str) -> RuntimeApplication:
        counter = itertools.count(1)
        app = RuntimeApplication.open(
            store_url,
            clock=clock,
            host_id=host_id,
            lease_ms=LEASE_MS,
            env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
            id_factory=lambda: f"{host_id}-{next(counter)}",
            host_inspector=StaticHostInspector(
                HostObservation(
                    workspace_identity=WORKSPACE,
                    workspace_path="/workspace",
                    background_operations_settled=True,
                    available_tool_names=("Bash",),
                )
            ),
        )
        opened.append(app)
        return app

    yield open_host
    failpoints.disarm()
    for app in opened:
        app.close()


def failed_source(app: RuntimeApplication) -> None:
    app.open_session("s1", "/workspace")
    ledger = LedgerBuilder(Spine(), prefix="r1-")
    app.ledger.create_run(run_header(Spine(), workspaceIdentity=WORKSPACE))
    ledger.user("fix the port")
    ledger.call("c1", "Bash", {"command": "ls"})
    ledger.response("c1", "Bash")
    ledger.terminal("failed")
    app.ledger.append_events("r1", ledger.events)
    app.ledger.update_run_header("r1", {"status": "failed", "failureClass": "provider_error"})


def reasons(app: RuntimeApplication) -> tuple[str, ...]:
    return tuple(app.plan_continuation("s1", "r1").rejection_reasons)


def continue_source(app: RuntimeApplication) -> str:
    """Execute the continuation of r1 (the provider answers once, the run completes)."""
    plan = app.plan_continuation("s1", "r1")
    assert plan.disposition == "continue", plan.rejection_reasons
    provider = ScriptedProvider([ProviderTurn(outputs=({"kind": "text", "text": "done"},))])
    return app.execute_continuation(plan, provider).target_run_id


def test_planners_between_the_two_saves_see_the_transient_code(hosts: Any) -> None:
    writer, other = hosts("host-a"), hosts("host-b")
    failed_source(writer)
    seen: list[tuple[str, tuple[str, ...]]] = []

    def in_the_window(name: str) -> None:
        seen.append(("other host", reasons(other)))
        seen.append(("writer's own process", reasons(writer)))

    failpoints.arm(failpoints.AFTER_TERMINAL_EVENT, in_the_window)
    target = continue_source(writer)
    failpoints.disarm()

    assert seen == [("other host", ENDING), ("writer's own process", ENDING)]
    assert writer.get_run_header(target).status == "completed"
    assert reasons(other) == EXISTS
    assert reasons(writer) == EXISTS
    assert reasons(hosts("host-c")) == EXISTS


def test_once_the_writer_is_gone_the_same_state_needs_repair(hosts: Any, clock: FixedClock) -> None:
    """The writer dies between the saves: while its lease is live another host cannot tell it
    from a writer about to save (transient); after the lease lapses, or for the same host after
    its restart, it is repair (and recovery repairs it)."""
    writer, other = hosts("host-a"), hosts("host-b")
    failed_source(writer)

    def crash(name: str) -> None:
        raise Crash(name)

    failpoints.arm(failpoints.AFTER_TERMINAL_EVENT, crash)
    with pytest.raises(Crash):
        continue_source(writer)
    failpoints.disarm()

    assert reasons(other) == ENDING
    restarted = hosts("host-a")
    assert reasons(restarted) == REPAIR
    clock.now += LEASE_MS + 1
    assert reasons(other) == REPAIR
    report = restarted.recover()
    assert report.repairs, report
    assert reasons(other) == EXISTS
