"""A sweeping host leaves a dead host's run that awaits the operator to the operator.

Why: recovery took over (``owner_taken_over``) an expired host's run whose interrupted
``never_auto_retry`` call only an operator can settle, and then wrote nothing else to it
(``left_awaiting_operator``). The sweeping host became its owner, so while that host lived
every operator action from any other host id was refused: ``maka-es attest`` with
``run_owner_fenced``, ``maka-es fork`` with ``fork_conflict`` (``source_live``). A run
recovery does not write to is not taken over (ADR 0021); the operator's action takes it
over itself, once; a live owner's run is still refused, nothing written. Found by
tests/crash/test_live_agent_two_hosts.py. Both stores.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.errors import RunOwnerFencedError
from maka_es.ledger.model.ownership import RunOwner
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.probes import store_snapshot
from tests.support.send_tool import Killed, send_tool

LEASE_MS = 1_000
T0 = 1_700_000_000_000
LATER = T0 + 10 * LEASE_MS  # the first host's lease has long expired


@pytest.fixture
def hosts(store_url: str) -> Iterator[dict[str, RuntimeApplication]]:
    """``w1`` (dies inside its Send), ``w2`` (alive, sweeping), ``op`` (the operator's CLI)."""
    opened: dict[str, RuntimeApplication] = {}

    def host(host_id: str, now: int, **kwargs: Any) -> RuntimeApplication:
        app = RuntimeApplication.open(
            store_url, clock=lambda: now, host_id=host_id, lease_ms=LEASE_MS, **kwargs
        )
        opened[host_id] = app
        return app

    host("w1", T0, tools=[send_tool(dies=True)])
    host("w2", LATER, tools=[send_tool(dies=False)])
    host("op", LATER, tools=[send_tool(dies=False)])
    yield opened
    for app in opened.values():
        app.close()


def _interrupted_send(app: RuntimeApplication) -> str:
    """Host ``w1``'s run ``r1`` whose Send died after T1; its operation id."""
    spine = Spine(run_id="r1", invocation_id="i-r1", turn_id="t-r1")
    app.open_session("s1", "/workspace")
    app.ledger.create_run(run_header(spine))
    ledger = LedgerBuilder(spine)
    ledger.user(marker=True)
    app.ledger.append_events("r1", ledger.events)
    with pytest.raises(Killed):
        app.tool_runtime.execute("r1", ledger.call("c1", "Send", {"to": "ops"}))
    return spine.operation_id("c1")


def _swept(sweeper: RuntimeApplication) -> list[str]:
    return [r.kind for r in sweeper.recover().repairs if r.run_id == "r1"]


def test_a_sweep_leaves_an_expired_hosts_run_awaiting_the_operator_and_the_operator_attests(
    hosts: dict[str, RuntimeApplication],
) -> None:
    operation = _interrupted_send(hosts["w1"])
    high_water = hosts["w2"].ledger.load_run("r1").high_water
    assert _swept(hosts["w2"]) == ["left_awaiting_operator"]
    assert _swept(hosts["w2"]) == ["left_awaiting_operator"]  # every sweep, nothing written
    run = hosts["w2"].ledger.load_run("r1")
    assert (run.owner, run.high_water) == (RunOwner("w1", 1), high_water)
    report = hosts["op"].attest_operation("r1", operation, applied=False, actor="ops")
    assert report.created
    assert [r.kind for r in report.recovery] == ["terminal_recovered"]
    ended = hosts["w2"].ledger.load_run("r1")
    assert ended.owner == RunOwner("op", 2)
    assert ended.terminal_event is not None
    assert _swept(hosts["w2"]) == []


def test_a_sweep_leaves_an_expired_hosts_run_awaiting_the_operator_and_the_operator_forks(
    hosts: dict[str, RuntimeApplication],
) -> None:
    operation = _interrupted_send(hosts["w1"])
    assert _swept(hosts["w2"]) == ["left_awaiting_operator"]
    fork = hosts["op"].fork_run("r1", before_operation=operation, actor="ops")
    assert fork.created
    source = hosts["w2"].ledger.load_run("r1")
    assert source.owner == RunOwner("op", 2)  # the fork took it over, then ended it
    assert source.terminal_event is not None
    assert source.sealed_by == fork.claim_id


def test_an_attestation_of_a_live_hosts_run_is_refused_and_takes_nothing_over(
    hosts: dict[str, RuntimeApplication], store_url: str
) -> None:
    operation = _interrupted_send(hosts["w1"])
    early = RuntimeApplication.open(
        store_url, clock=lambda: T0 + LEASE_MS // 2, host_id="op2", lease_ms=LEASE_MS
    )
    with early:
        before = store_snapshot(early)
        with pytest.raises(RunOwnerFencedError):
            early.attest_operation("r1", operation, applied=False, actor="ops")
        assert store_snapshot(early) == before
        assert early.ledger.load_run("r1").owner == RunOwner("w1", 1)
