"""Eight host processes on one store (a SQLite file; a PostgreSQL schema, ADR 0028), started,
recovering and running agent turns concurrently over 20 rounds of random SIGKILLs (ADR 0021):
no live run is ended by another process, every dead run is recovered exactly once, and no write
of a fenced-off owner lands.

Half the slots keep their host id across restarts (a restart recovers its previous
incarnation's runs at once); the other half come back as new hosts, so their dead runs wait
for their lease to expire and are taken over by another host. The soak is forked (imports
done once) to stay within seconds on two cores; ``-m slow`` runs a longer one.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import re
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.recovery.startup import recovered_terminal_id
from maka_es.testing.ownership_soak import WorkerSpec, first_owner_writes_after_takeover, work

SLOTS = 8
LEASE_MS = 6_000


@dataclass
class Soak:
    tmp: Path
    rng: random.Random
    db: str = ""
    procs: dict[int, Any] = field(default_factory=dict)
    generation: Counter[int] = field(default_factory=Counter)
    killed: list[str] = field(default_factory=list)  # report files of killed workers
    finished: list[str] = field(default_factory=list)

    def host_id(self, slot: int) -> str:
        stable = slot % 2 == 0
        return f"w{slot}" if stable else f"w{slot}-g{self.generation[slot]}"

    def spawn(self, slot: int) -> None:
        self.generation[slot] += 1
        report = self.tmp / f"report-{slot}-{self.generation[slot]}.jsonl"
        spec = WorkerSpec(
            self.db, self.host_id(slot), LEASE_MS, str(report), str(self.tmp / "stop")
        )
        process = multiprocessing.get_context("fork").Process(target=work, args=(spec,))
        process.start()
        self.procs[slot] = (process, str(report))

    def kill(self, slot: int) -> None:
        process, report = self.procs[slot]
        if process.pid is not None and process.is_alive():
            os.kill(process.pid, signal.SIGKILL)
        process.join(10)
        (self.killed if process.exitcode == -signal.SIGKILL else self.finished).append(report)

    def stop_all(self) -> None:
        (self.tmp / "stop").touch()
        for process, report in self.procs.values():
            process.join(60)
            assert process.exitcode == 0, _lines(report)[-3:]
            self.finished.append(report)


def _lines(report: str) -> list[dict[str, Any]]:
    path = Path(report)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def _run_soak(tmp_path: Path, rounds: int, seed: int, store: str | None = None) -> None:
    soak = Soak(tmp_path, random.Random(seed), db=store or str(tmp_path / "shared.sqlite"))
    RuntimeApplication.open(soak.db).close()  # the schema, before the race
    for slot in range(SLOTS):
        soak.spawn(slot)
    for _ in range(rounds):
        time.sleep(soak.rng.uniform(0.1, 0.3))
        for slot in soak.rng.sample(range(SLOTS), soak.rng.randint(1, 2)):
            soak.kill(slot)
            soak.spawn(slot)
    soak.stop_all()
    time.sleep(LEASE_MS / 1000 + 0.2)  # every lease of a dead host has expired now
    final = RuntimeApplication.open(soak.db, host_id="final", lease_ms=LEASE_MS)
    try:
        final_repairs: list[tuple[str, str]] = [(r.kind, r.run_id) for r in final.recover().repairs]
        final_repairs += _attest_waiting(final, final_repairs)
        _check(final, soak, final_repairs)
    finally:
        final.close()


def _attest_waiting(
    app: RuntimeApplication, final_repairs: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    """A worker killed between T1 and T2 of its ``never_auto_retry`` Read leaves its run
    awaiting the operator, unsealed (ADR 0019, amendment of 2026-12-01): the operator attests
    it, which finishes that run's recovery; its repair lines join the final recovery's."""
    lines: list[tuple[str, str]] = []
    for kind, run_id in final_repairs:
        if kind != "left_awaiting_operator":
            continue
        for operation in app.tool_journal.tool_operations(run_id):
            if operation.is_unsettled:
                report = app.attest_operation(
                    run_id, operation.operation_id, applied=False, actor="soak"
                )
                lines += [(r.kind, run_id) for r in report.recovery]
    return lines


def _check(app: RuntimeApplication, soak: Soak, final_repairs: list[tuple[str, str]]) -> None:
    survivors = [line for report in soak.finished for line in _lines(report)]
    dead = [line for report in soak.killed for line in _lines(report)]
    # 0 live runs ended by another process: no surviving worker was refused anything
    assert [line for line in survivors if "error" in line] == []
    assert [line for line in dead if "error" in line] == []
    completed = {line["completed"] for line in survivors + dead if "completed" in line}
    recovered = Counter(
        line["runId"] for line in survivors + dead if line.get("repair") == "terminal_recovered"
    )
    recovered.update(run_id for kind, run_id in final_repairs if kind == "terminal_recovered")
    takeovers = 0
    run_ids = app.ledger.all_run_ids()
    assert len(run_ids) > SLOTS * 2
    for run_id in run_ids:
        events = app.read_run_events(run_id)
        terminals = [e.id for e in events if e.is_terminal]
        assert len(terminals) == 1, (run_id, terminals)
        assert app.get_run_header(run_id).is_terminal
        if run_id in completed:  # its own host ended it: nobody else did
            assert re.fullmatch(re.escape(run_id) + r"-e\d+", terminals[0]), run_id
            assert app.get_run_header(run_id).status == "completed"
            assert recovered[run_id] == 0, run_id
        elif terminals != [recovered_terminal_id(run_id)]:  # killed after its terminal
            assert re.fullmatch(re.escape(run_id) + r"-e\d+", terminals[0]), run_id
            assert recovered[run_id] == 0, run_id
        else:  # a dead one, recovered exactly once (a recoverer killed right after it
            # ended the run may not have reported it; none reports it twice)
            assert recovered[run_id] <= 1, run_id
        takeovers += _fenced_writes_absent(app, run_id)
    assert takeovers > 0  # the cross-host path was exercised, not only restarts
    assert recovered.total() > 0


def _fenced_writes_absent(app: RuntimeApplication, run_id: str) -> int:
    """After a run's first takeover, no event of its first owner (``<runId>-e<n>``) lands.
    Returns the number of takeovers of the run."""
    own = re.compile(re.escape(run_id) + r"-e\d+$")
    late, takeovers = first_owner_writes_after_takeover(app, run_id, own)
    assert late == [], (run_id, late)
    return takeovers


def test_eight_hosts_twenty_rounds_of_sigkill_on_one_store(tmp_path: Path, store_url: str) -> None:
    """On SQLite and on PostgreSQL, where the hosts share one server (cross-machine fencing is
    the store's primary key, ADR 0028)."""
    _run_soak(tmp_path, rounds=20, seed=11, store=store_url)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_eight_hosts_soak_longer(tmp_path: Path, store_url: str, seed: int) -> None:
    _run_soak(tmp_path, rounds=80, seed=seed, store=store_url)
