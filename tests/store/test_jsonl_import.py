"""JSONL import into the event store (idempotent, atomic per run) and export back."""

from __future__ import annotations

from pathlib import Path

import pytest

from maka_es.application.ledger_io import export_jsonl_run, import_jsonl_ledgers
from maka_es.application.runtime import RuntimeApplication
from maka_es.domain.events import RuntimeEvent
from maka_es.domain.run_header import RunHeader
from maka_es.errors import MakaError
from maka_es.infrastructure.jsonl import JsonlLedger
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.store_probe import store_snapshot


def _legacy(root: Path) -> tuple[JsonlLedger, LedgerBuilder]:
    ledger = JsonlLedger(root)
    builder = LedgerBuilder()
    builder.user()
    builder.call()
    builder.response()
    builder.terminal("failed")
    header = run_header(status="failed", failureClass="provider_error", completedAt=1005)
    ledger.write_header(RunHeader.model_validate(header))
    for event in builder.events:
        ledger.append(RuntimeEvent.model_validate(event))
    other = LedgerBuilder(Spine(run_id="r2", invocation_id="i2", turn_id="t2"), prefix="x")
    other.user("torn run")
    ledger.write_header(RunHeader.model_validate(run_header(other.spine)))
    ledger.append(RuntimeEvent.model_validate(other.events[0]))
    with (root / "sessions/s1/runs/r2/runtime-events.jsonl").open("ab") as handle:
        handle.write(b'{"id":"torn","sess')  # a torn tail is never a fact
    return ledger, builder


def test_import_is_idempotent_and_keeps_terminal_headers(tmp_path: Path, db_path: Path) -> None:
    ledger, builder = _legacy(tmp_path / "legacy")
    with RuntimeApplication.open_sqlite(str(db_path)) as app:
        first = import_jsonl_ledgers(app, ledger)
        assert (first.runs, first.appended, first.retried) == (2, 5, 0)
        before = store_snapshot(app)
        again = import_jsonl_ledgers(app, ledger)
        assert (again.runs, again.appended, again.retried) == (2, 0, 5)
        assert store_snapshot(app) == before
        assert [e.to_wire() for e in app.read_run_events("r1")] == builder.events
        assert app.get_run_header("r1").status == "failed"
        assert [e.id for e in app.read_run_events("r2")] == ["x1"]
        assert app.list_sessions() == ["s1"]
        assert app.plan_resume("r1").disposition == "safe_replay"


def test_export_round_trips_byte_identically(tmp_path: Path, db_path: Path) -> None:
    ledger, _ = _legacy(tmp_path / "legacy")
    out = JsonlLedger(tmp_path / "export")
    with RuntimeApplication.open_sqlite(str(db_path)) as app:
        import_jsonl_ledgers(app, ledger)
        export_jsonl_run(app, out, "r1")
        rows = (tmp_path / "export/sessions/s1/runs/r1/runtime-events.jsonl").read_text()
        assert rows == "".join(payload + "\n" for payload in app.read_run_payloads("r1"))
        assert out.read_events("s1", "r1") == app.read_run_events("r1")


def test_a_run_whose_header_contradicts_its_terminal_is_refused_whole(
    tmp_path: Path, db_path: Path
) -> None:
    ledger = JsonlLedger(tmp_path / "legacy")
    builder = LedgerBuilder()
    builder.user()
    builder.terminal("failed")
    ledger.write_header(RunHeader.model_validate(run_header(status="completed")))
    for event in builder.events:
        ledger.append(RuntimeEvent.model_validate(event))
    with RuntimeApplication.open_sqlite(str(db_path)) as app:
        before = store_snapshot(app)
        with pytest.raises(MakaError) as info:
            import_jsonl_ledgers(app, ledger)
        assert info.value.code == "terminal_conflict"
        assert store_snapshot(app) == before
