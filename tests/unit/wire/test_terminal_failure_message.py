"""A failed terminal's ``stateDelta.failureMessage`` reaches the header derived from it
(docs/reference/ledger.md#terminal-rules), so a header repaired after a crash between the
terminal event and its header says what went wrong, like the one ``end_run`` writes."""

from __future__ import annotations

from maka_es.testing.builders import Spine, run_header
from maka_es.wire.run_header import RunHeader, terminal_event, terminal_header_patch

SPINE = {"sessionId": "s1", "invocationId": "i1", "runId": "r1", "turnId": "t1"}


def _header() -> RunHeader:
    return RunHeader.model_validate(run_header(Spine()))


def test_a_failed_fact_with_a_failure_message_gives_the_header_that_message() -> None:
    fact = terminal_event(
        SPINE,
        event_id="r1-terminal",
        ts=7,
        status="failed",
        failure_class="provider_output_invalid",
        message="provider output 0 has kind 'error'",
        state_delta={"failureMessage": "provider output 0 has kind 'error'"},
    )
    patch = terminal_header_patch(_header(), fact)
    assert patch == {
        "status": "failed",
        "updatedAt": 7,
        "completedAt": 7,
        "failureClass": "provider_output_invalid",
        "failureMessage": "provider output 0 has kind 'error'",
    }


def test_without_one_the_patch_is_unchanged() -> None:
    fact = terminal_event(
        SPINE, event_id="r1-terminal", ts=7, status="failed", failure_class="app_restarted"
    )
    patch = terminal_header_patch(_header(), fact)
    assert patch is not None
    assert "failureMessage" not in patch
    completed = terminal_event(SPINE, event_id="r1-terminal", ts=7, status="completed")
    assert terminal_header_patch(_header(), completed) == {
        "status": "completed",
        "updatedAt": 7,
        "completedAt": 7,
    }
