"""JSONL import into the event store (idempotent, atomic per run) and export back, on both
stores; a symlink under either root is refused before anything is imported or exported."""

from __future__ import annotations

from pathlib import Path

import pytest

from maka_es.adapters.jsonl import JsonlLedger, export_jsonl_run, import_jsonl_ledgers
from maka_es.app import RuntimeApplication
from maka_es.errors import JsonlLedgerError, MakaError
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.probes import Outside, make_outside, store_snapshot, symlinks_under
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader


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


def test_import_is_idempotent_and_keeps_terminal_headers(tmp_path: Path, store_url: str) -> None:
    ledger, builder = _legacy(tmp_path / "legacy")
    with RuntimeApplication.open(store_url) as app:
        first = import_jsonl_ledgers(app.ledger, ledger)
        assert (first.runs, first.appended, first.retried) == (2, 5, 0)
        before = store_snapshot(app)
        again = import_jsonl_ledgers(app.ledger, ledger)
        assert (again.runs, again.appended, again.retried) == (2, 0, 5)
        assert store_snapshot(app) == before
        assert [e.to_wire() for e in app.read_run_events("r1")] == builder.events
        assert app.get_run_header("r1").status == "failed"
        assert [e.id for e in app.read_run_events("r2")] == ["x1"]
        assert app.list_sessions() == ["s1"]
        assert app.plan_resume("r1").disposition == "safe_replay"


def test_export_round_trips_byte_identically(tmp_path: Path, store_url: str) -> None:
    ledger, _ = _legacy(tmp_path / "legacy")
    out = JsonlLedger(tmp_path / "export")
    with RuntimeApplication.open(store_url) as app:
        import_jsonl_ledgers(app.ledger, ledger)
        export_jsonl_run(app.ledger, out, "r1")
        rows = (tmp_path / "export/sessions/s1/runs/r1/runtime-events.jsonl").read_text()
        assert rows == "".join(payload + "\n" for payload in app.ledger.read_run_payloads("r1"))
        assert out.read_events("s1", "r1") == app.read_run_events("r1")


def test_a_run_whose_header_contradicts_its_terminal_is_refused_whole(
    tmp_path: Path, store_url: str
) -> None:
    ledger = JsonlLedger(tmp_path / "legacy")
    builder = LedgerBuilder()
    builder.user()
    builder.terminal("failed")
    ledger.write_header(RunHeader.model_validate(run_header(status="completed")))
    for event in builder.events:
        ledger.append(RuntimeEvent.model_validate(event))
    with RuntimeApplication.open(store_url) as app:
        before = store_snapshot(app)
        with pytest.raises(MakaError) as info:
            import_jsonl_ledgers(app.ledger, ledger)
        assert info.value.code == "terminal_conflict"
        assert store_snapshot(app) == before


# --- hostile symlinks under the import / export root ---------------------------------------------


def _outside_ledger(tmp_path_factory: pytest.TempPathFactory, spine: Spine) -> Outside:
    """A valid one-run ledger in a separate directory: following a link to it would "work"."""
    outside = make_outside(tmp_path_factory.mktemp("elsewhere") / "outside")
    ledger = JsonlLedger(outside.path)
    builder = LedgerBuilder(spine, prefix="outside")
    builder.user("from outside the root")
    ledger.write_header(RunHeader.model_validate(run_header(spine)))
    ledger.append(RuntimeEvent.model_validate(builder.events[0]))
    outside.pin()
    return outside


def test_import_refuses_a_symlinked_session_before_importing_anything(
    tmp_path: Path, store_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    ledger, _ = _legacy(tmp_path / "legacy")
    spine = Spine(session_id="s2", run_id="r9", invocation_id="i9", turn_id="t9")
    outside = _outside_ledger(tmp_path_factory, spine)
    (tmp_path / "legacy/sessions/s2").symlink_to(outside.path / "sessions/s2")
    before_outside, links = outside.snapshot(), symlinks_under(ledger.root)
    with RuntimeApplication.open(store_url) as app:
        before = store_snapshot(app)
        with pytest.raises(JsonlLedgerError) as info:
            import_jsonl_ledgers(app.ledger, ledger)
        assert (info.value.code, info.value.detail) == (
            "ledger_symlink_refused",
            {"path": "sessions/s2"},
        )
        assert store_snapshot(app) == before  # not even the good runs of s1 were imported
        assert app.list_sessions() == []
    assert outside.snapshot() == before_outside
    assert symlinks_under(ledger.root) == links


@pytest.mark.parametrize("name", ["run.json", "runtime-events.jsonl"])
def test_import_refuses_a_symlinked_ledger_file_before_importing_anything(
    tmp_path: Path, store_url: str, tmp_path_factory: pytest.TempPathFactory, name: str
) -> None:
    ledger, _ = _legacy(tmp_path / "legacy")
    spine = Spine(run_id="r2", invocation_id="i2", turn_id="t2")
    outside = _outside_ledger(tmp_path_factory, spine)
    planted = tmp_path / "legacy/sessions/s1/runs/r2" / name
    planted.unlink()
    planted.symlink_to(outside.path / "sessions/s1/runs/r2" / name)
    before_outside, links = outside.snapshot(), symlinks_under(ledger.root)
    with RuntimeApplication.open(store_url) as app:
        before = store_snapshot(app)
        with pytest.raises(JsonlLedgerError) as info:
            import_jsonl_ledgers(app.ledger, ledger)
        assert (info.value.code, info.value.detail) == (
            "ledger_symlink_refused",
            {"path": f"sessions/s1/runs/r2/{name}"},
        )
        assert store_snapshot(app) == before  # r1, listed first, was not imported either
    assert outside.snapshot() == before_outside
    assert symlinks_under(ledger.root) == links


@pytest.mark.parametrize("component", ["sessions/s1", "sessions/s1/runs/r1/runtime-events.jsonl"])
def test_export_refuses_a_symlink_under_its_root(
    tmp_path: Path, store_url: str, tmp_path_factory: pytest.TempPathFactory, component: str
) -> None:
    ledger, _ = _legacy(tmp_path / "legacy")
    outside = _outside_ledger(tmp_path_factory, Spine())
    out = JsonlLedger(tmp_path / "export")
    (out.root / component).parent.mkdir(parents=True)
    (out.root / component).symlink_to(outside.path / component)
    before_outside, links = outside.snapshot(), symlinks_under(out.root)
    with RuntimeApplication.open(store_url) as app:
        import_jsonl_ledgers(app.ledger, ledger)
        before = store_snapshot(app)
        with pytest.raises(JsonlLedgerError) as info:
            export_jsonl_run(app.ledger, out, "r1")
        assert (info.value.code, info.value.detail) == (
            "ledger_symlink_refused",
            {"path": component},
        )
        assert store_snapshot(app) == before
    assert outside.snapshot() == before_outside
    assert symlinks_under(out.root) == links
