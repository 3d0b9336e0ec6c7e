"""Timeline rows are decided in Python, purely: lanes as the store classifies them, summaries
clipped but unescaped (escaping is the template's job), times converted without a clock."""

from __future__ import annotations

from maka_es.report.view import LANES, SUMMARY_LIMIT, event_anchor, event_row, format_ms
from maka_es.testing.builders import LedgerBuilder, Spine
from maka_es.wire.events import as_runtime_event

SPINE = Spine(run_id="r1", invocation_id="i-r1", turn_id="t-r1")


def test_each_tool_fact_lands_in_its_own_lane_column() -> None:
    ledger = LedgerBuilder(SPINE)
    ledger.user(marker=True)
    ledger.t1_call("c1", "Send", {"to": "ops"})
    ledger.response("c1", "Send", {"kind": "text", "text": "sent"})
    rows = [event_row("run-1", n, as_runtime_event(e)) for n, e in enumerate(ledger.events, 1)]
    assert [r.lane for r in rows] == [
        "ordinary",
        "function_call",
        "tool_dispatch",
        "function_response",
    ]
    assert [LANES[r.lane_index].lane for r in rows] == [r.lane for r in rows]
    assert rows[2].operation_id == SPINE.operation_id("c1")
    assert rows[2].summary.startswith("T1 Send ")
    assert all(r.conflict is None for r in rows)


def test_hostile_text_is_kept_as_text_and_long_text_is_clipped() -> None:
    ledger = LedgerBuilder(SPINE)
    ledger.user("<script>alert(1)</script>" + "x" * 1000, marker=True)
    row = event_row("run-1", 1, as_runtime_event(ledger.events[0]))
    assert row.summary.startswith("<script>alert(1)</script>")
    assert len(row.summary) == SUMMARY_LIMIT
    assert row.anchor == event_anchor("run-1", 1) == "run-1-e1"
    assert "<script>alert(1)</script>" in row.wire_json


def test_times_are_utc_iso_and_implausible_ones_stay_numbers() -> None:
    assert format_ms(1_700_000_000_000) == "2023-11-14T22:13:20.000Z"
    assert format_ms(-5) == "-5"
    assert format_ms(10**15) == str(10**15)
