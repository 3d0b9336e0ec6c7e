"""Lifecycle telemetry (docs/reference/continuation.md#telemetry).

What is pinned here: the exact dumped shape of each of the five events; that the field types
refuse free text (a prompt, a tool argument, JSON) at construction, so a call site that passes
the wrong string fails loudly in tests; and that telemetry is best-effort - neither a malformed
event nor a raising sink ever reaches the caller, and the other sinks still get the event.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from maka_es.errors import MakaError, RunNotFoundError
from maka_es.telemetry import (
    IDENTIFIER_PATTERN,
    MAX_IDENTIFIER_LENGTH,
    MAX_REJECTION_REASONS,
    TELEMETRY_LOGGER_NAME,
    ExecutionCompletedEvent,
    ExecutionFailedEvent,
    ExecutionStartedEvent,
    LifecycleEvent,
    LifecycleEventAdapter,
    LoggingTelemetrySink,
    NullTelemetrySink,
    PlanApprovedEvent,
    PlanParkedEvent,
    RecordingTelemetrySink,
    Telemetry,
    TelemetrySink,
    error_class_of,
)

MODULE_LOGGER = "maka_es.telemetry"
SESSION = "session-7f3a"
SOURCE = "run-0f8fad5b-d9cb-469f-a165-70867728950e"
TARGET = "run:continuation.2"

#: Strings a careless call site might pass instead of an identity.
NOT_IDENTIFIERS = [
    "has space",
    "two\nlines",
    "trailing-newline\n",
    "tab\tseparated",
    '{"command": "rm -rf /"}',
    "please summarise the file",
    "path/to/file",
    "quote'd",
    "caf\u00e9",
    "\u0661\u0662",  # non-ASCII digits
    "x" * (MAX_IDENTIFIER_LENGTH + 1),
]


def sample_events() -> list[tuple[LifecycleEvent, dict[str, Any]]]:
    """Every event type with its exact expected dump (keys in spec order)."""
    return [
        (
            PlanApprovedEvent(session_id=SESSION, source_run_id=SOURCE, target_run_id=TARGET),
            {
                "type": "plan_approved",
                "sessionId": SESSION,
                "sourceRunId": SOURCE,
                "targetRunId": TARGET,
            },
        ),
        (
            PlanParkedEvent(
                session_id=SESSION,
                source_run_id=SOURCE,
                rejection_reasons=("pending_permission", "dangling_tool_state"),
            ),
            {
                "type": "plan_parked",
                "sessionId": SESSION,
                "sourceRunId": SOURCE,
                "rejectionReasons": ["pending_permission", "dangling_tool_state"],
            },
        ),
        (
            PlanParkedEvent(
                session_id=SESSION,
                source_run_id="",
                rejection_reasons=("resume_candidate_missing",),
            ),
            {
                "type": "plan_parked",
                "sessionId": SESSION,
                "sourceRunId": "",
                "rejectionReasons": ["resume_candidate_missing"],
            },
        ),
        (
            ExecutionStartedEvent(session_id=SESSION, source_run_id=SOURCE, target_run_id=TARGET),
            {
                "type": "execution_started",
                "sessionId": SESSION,
                "sourceRunId": SOURCE,
                "targetRunId": TARGET,
            },
        ),
        (
            ExecutionCompletedEvent(session_id=SESSION, source_run_id=SOURCE, target_run_id=TARGET),
            {
                "type": "execution_completed",
                "sessionId": SESSION,
                "sourceRunId": SOURCE,
                "targetRunId": TARGET,
            },
        ),
        (
            ExecutionFailedEvent(
                session_id=SESSION,
                source_run_id=SOURCE,
                target_run_id=TARGET,
                error_class="continuation_already_exists",
            ),
            {
                "type": "execution_failed",
                "sessionId": SESSION,
                "sourceRunId": SOURCE,
                "targetRunId": TARGET,
                "errorClass": "continuation_already_exists",
            },
        ),
    ]


# --- exact shapes -------------------------------------------------------------------------


@pytest.mark.parametrize(("event", "expected"), sample_events())
def test_event_dumps_exactly(event: LifecycleEvent, expected: dict[str, Any]) -> None:
    dumped = event.to_wire()
    assert dumped == expected
    assert list(dumped) == list(expected)  # spec order, every key present
    assert json.loads(json.dumps(dumped)) == expected  # JSON-ready as is


@pytest.mark.parametrize(("event", "expected"), sample_events())
def test_dump_round_trips_through_the_adapter(
    event: LifecycleEvent, expected: dict[str, Any]
) -> None:
    assert LifecycleEventAdapter.validate_python(expected) == event


def test_events_are_frozen_and_refuse_extra_keys() -> None:
    event = PlanApprovedEvent(session_id=SESSION, source_run_id=SOURCE, target_run_id=TARGET)
    with pytest.raises(ValidationError):
        event.session_id = "other"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        PlanApprovedEvent.model_validate(
            {
                "sessionId": SESSION,
                "sourceRunId": SOURCE,
                "targetRunId": TARGET,
                "prompt": "hello",
            }
        )


def test_type_cannot_be_overridden() -> None:
    with pytest.raises(ValidationError):
        PlanApprovedEvent.model_validate(
            {
                "type": "plan_parked",
                "sessionId": SESSION,
                "sourceRunId": SOURCE,
                "targetRunId": TARGET,
            }
        )


# --- free text is refused at construction --------------------------------------------------


@pytest.mark.parametrize("bad", NOT_IDENTIFIERS)
def test_identities_refuse_free_text(bad: str) -> None:
    with pytest.raises(ValidationError):
        PlanApprovedEvent(session_id=bad, source_run_id=SOURCE, target_run_id=TARGET)
    with pytest.raises(ValidationError):
        ExecutionStartedEvent(session_id=SESSION, source_run_id=bad, target_run_id=TARGET)
    with pytest.raises(ValidationError):
        ExecutionCompletedEvent(session_id=SESSION, source_run_id=SOURCE, target_run_id=bad)


@pytest.mark.parametrize("bad", [*NOT_IDENTIFIERS, ""])
def test_codes_refuse_free_text_and_empty(bad: str) -> None:
    with pytest.raises(ValidationError):
        PlanParkedEvent(session_id=SESSION, source_run_id=SOURCE, rejection_reasons=(bad,))
    with pytest.raises(ValidationError):
        ExecutionFailedEvent(
            session_id=SESSION, source_run_id=SOURCE, target_run_id=TARGET, error_class=bad
        )


def test_identities_are_strict_strings() -> None:
    with pytest.raises(ValidationError):
        PlanApprovedEvent.model_validate(
            {"sessionId": 42, "sourceRunId": SOURCE, "targetRunId": TARGET}
        )
    with pytest.raises(ValidationError):
        PlanParkedEvent.model_validate(
            {"sessionId": SESSION, "sourceRunId": SOURCE, "rejectionReasons": [{"a": 1}]}
        )


def test_longest_identifier_is_accepted_and_one_more_is_not() -> None:
    longest = "a" * MAX_IDENTIFIER_LENGTH
    event = PlanApprovedEvent(session_id=longest, source_run_id=SOURCE, target_run_id=TARGET)
    assert event.session_id == longest
    with pytest.raises(ValidationError):
        PlanApprovedEvent(session_id=longest + "a", source_run_id=SOURCE, target_run_id=TARGET)


def test_rejection_reasons_are_bounded() -> None:
    reasons = tuple(f"code_{i}" for i in range(MAX_REJECTION_REASONS))
    PlanParkedEvent(session_id=SESSION, source_run_id=SOURCE, rejection_reasons=reasons)
    with pytest.raises(ValidationError):
        PlanParkedEvent(
            session_id=SESSION, source_run_id=SOURCE, rejection_reasons=(*reasons, "one_more")
        )


def test_identifier_pattern_is_documented_shape() -> None:
    assert IDENTIFIER_PATTERN == r"[A-Za-z0-9._:\-]{0,200}"


# --- error_class_of -----------------------------------------------------------------------


class CodedError(Exception):
    def __init__(self, code: object) -> None:
        super().__init__("secret prompt text that must not leak")
        self.code = code


class RaisingCodeError(Exception):
    @property
    def code(self) -> str:
        raise RuntimeError("boom")


def test_error_class_is_the_code_attribute() -> None:
    assert error_class_of(CodedError("continuation_claim_repair_required")) == (
        "continuation_claim_repair_required"
    )
    assert error_class_of(RunNotFoundError("run x missing")) == "run_not_found"
    assert error_class_of(MakaError("m", code="custom:code.1")) == "custom:code.1"


def test_error_class_falls_back_to_the_class_name() -> None:
    assert error_class_of(ValueError("no code here")) == "ValueError"
    assert error_class_of(SystemExit(3)) == "SystemExit"  # int code is not a code
    assert error_class_of(CodedError(None)) == "CodedError"
    assert error_class_of(CodedError(404)) == "CodedError"
    assert error_class_of(RaisingCodeError()) == "RaisingCodeError"


@pytest.mark.parametrize(
    "weird", ["has spaces", "", "line\nbreak", '{"a":1}', "x" * (MAX_IDENTIFIER_LENGTH + 1)]
)
def test_error_class_ignores_a_code_that_is_not_an_identifier(weird: str) -> None:
    assert error_class_of(CodedError(weird)) == "CodedError"


def test_error_class_is_unknown_when_the_name_is_not_an_identifier() -> None:
    unicode_named = type("Ошибка", (Exception,), {})
    assert error_class_of(unicode_named()) == "unknown"
    long_named = type("E" * (MAX_IDENTIFIER_LENGTH + 1), (Exception,), {})
    assert error_class_of(long_named()) == "unknown"


@given(st.text(max_size=300))
def test_error_class_is_always_a_valid_code(code: str) -> None:
    error_class = error_class_of(CodedError(code))
    ExecutionFailedEvent(
        session_id=SESSION, source_run_id=SOURCE, target_run_id=TARGET, error_class=error_class
    )
    assert error_class in (code, "CodedError")


# --- Telemetry: helpers and fan-out -------------------------------------------------------


@pytest.fixture
def recorder() -> RecordingTelemetrySink:
    return RecordingTelemetrySink()


def test_helpers_build_the_exact_events(recorder: RecordingTelemetrySink) -> None:
    telemetry = Telemetry([recorder])
    telemetry.plan_approved(session_id=SESSION, source_run_id=SOURCE, target_run_id=TARGET)
    telemetry.plan_parked(
        session_id=SESSION, source_run_id=SOURCE, rejection_reasons=["pending_permission"]
    )
    telemetry.plan_parked(
        session_id=SESSION, source_run_id=None, rejection_reasons=("resume_candidate_missing",)
    )
    telemetry.execution_started(session_id=SESSION, source_run_id=SOURCE, target_run_id=TARGET)
    telemetry.execution_completed(session_id=SESSION, source_run_id=SOURCE, target_run_id=TARGET)
    telemetry.execution_failed(
        session_id=SESSION,
        source_run_id=SOURCE,
        target_run_id=TARGET,
        error=CodedError("continuation_already_exists"),
    )
    expected = [dump for _, dump in sample_events()]
    expected[1] = {**expected[1], "rejectionReasons": ["pending_permission"]}
    assert [event.to_wire() for event in recorder.events] == expected


def test_execution_failed_reports_only_the_error_class(recorder: RecordingTelemetrySink) -> None:
    Telemetry([recorder]).execution_failed(
        session_id=SESSION,
        source_run_id=SOURCE,
        target_run_id=TARGET,
        error=ValueError("the user's prompt: delete everything"),
    )
    (event,) = recorder.events
    assert event.to_wire() == {
        "type": "execution_failed",
        "sessionId": SESSION,
        "sourceRunId": SOURCE,
        "targetRunId": TARGET,
        "errorClass": "ValueError",
    }


@pytest.mark.parametrize("bad", NOT_IDENTIFIERS)
def test_helpers_drop_malformed_events_without_raising(
    bad: str, recorder: RecordingTelemetrySink, caplog: pytest.LogCaptureFixture
) -> None:
    telemetry = Telemetry([recorder])
    with caplog.at_level(logging.DEBUG, logger=MODULE_LOGGER):
        telemetry.plan_approved(session_id=bad, source_run_id=SOURCE, target_run_id=TARGET)
        telemetry.plan_parked(session_id=SESSION, source_run_id=bad, rejection_reasons=["a"])
        telemetry.plan_parked(session_id=SESSION, source_run_id=SOURCE, rejection_reasons=[bad])
        telemetry.execution_started(session_id=SESSION, source_run_id=SOURCE, target_run_id=bad)
        telemetry.execution_completed(session_id=SESSION, source_run_id=bad, target_run_id=TARGET)
        telemetry.execution_failed(
            session_id=bad, source_run_id=SOURCE, target_run_id=TARGET, error=ValueError()
        )
    assert recorder.events == []
    dropped = [r for r in caplog.records if r.name == MODULE_LOGGER]
    assert len(dropped) == 6
    assert all(r.levelno == logging.DEBUG for r in dropped)
    # The note names the refused field, never the refused value.
    assert all(bad not in r.getMessage() for r in dropped)
    assert bad not in caplog.text
    assert dropped[0].getMessage() == "telemetry event plan_approved dropped: invalid session_id"
    assert dropped[2].getMessage() == (
        "telemetry event plan_parked dropped: invalid rejection_reasons.0"
    )


def test_plan_parked_refuses_a_bare_string_of_reasons(recorder: RecordingTelemetrySink) -> None:
    # A str is an iterable of one-character codes; it must not be split silently.
    Telemetry([recorder]).plan_parked(
        session_id=SESSION, source_run_id=SOURCE, rejection_reasons="pending_permission"
    )
    assert recorder.events == []


def test_helpers_survive_a_raising_reasons_iterable(recorder: RecordingTelemetrySink) -> None:
    def reasons() -> Iterator[str]:
        yield "pending_permission"
        raise RuntimeError("iterator broke")

    Telemetry([recorder]).plan_parked(
        session_id=SESSION, source_run_id=SOURCE, rejection_reasons=reasons()
    )
    assert recorder.events == []


@given(session_id=st.text(max_size=250), source_run_id=st.text(max_size=250))
def test_helpers_never_raise_and_emit_only_valid_values(
    session_id: str, source_run_id: str
) -> None:
    recorder = RecordingTelemetrySink()
    Telemetry([recorder]).execution_started(
        session_id=session_id, source_run_id=source_run_id, target_run_id=TARGET
    )
    for event in recorder.events:
        assert event.to_wire() == {
            "type": "execution_started",
            "sessionId": session_id,
            "sourceRunId": source_run_id,
            "targetRunId": TARGET,
        }
    valid = all(
        len(value) <= MAX_IDENTIFIER_LENGTH
        and all(c.isascii() and (c.isalnum() or c in "._:-") for c in value)
        for value in (session_id, source_run_id)
    )
    assert len(recorder.events) == (1 if valid else 0)


class ExplodingSink:
    def __init__(self, exc: Exception) -> None:
        self.exc = exc
        self.calls = 0

    def emit(self, event: LifecycleEvent) -> None:
        self.calls += 1
        raise self.exc


@pytest.mark.parametrize(
    "exc",
    [RuntimeError("sink down"), OSError(28, "No space left"), ValueError(SOURCE), MakaError("x")],
)
def test_a_raising_sink_changes_nothing(exc: Exception, caplog: pytest.LogCaptureFixture) -> None:
    before, after = RecordingTelemetrySink(), RecordingTelemetrySink()
    exploding = ExplodingSink(exc)
    telemetry = Telemetry([before, exploding, after])
    event, _ = sample_events()[0]
    with caplog.at_level(logging.DEBUG, logger=MODULE_LOGGER):
        assert telemetry.emit(event) is None  # type: ignore[func-returns-value]
        telemetry.plan_approved(session_id=SESSION, source_run_id=SOURCE, target_run_id=TARGET)
    assert exploding.calls == 2
    assert before.events == [event, event]
    assert after.events == [event, event]
    notes = [r for r in caplog.records if r.name == MODULE_LOGGER]
    assert len(notes) == 2
    assert all(r.levelno == logging.DEBUG for r in notes)
    assert all("ExplodingSink" in r.getMessage() for r in notes)
    # No payload in the note: neither the identities nor the sink's error message.
    for note in notes:
        message = note.getMessage()
        assert SESSION not in message
        assert SOURCE not in message
        assert str(exc) not in message
        assert note.exc_info is None


def test_base_exceptions_are_not_swallowed() -> None:
    class Interrupting:
        def emit(self, event: LifecycleEvent) -> None:
            raise KeyboardInterrupt

    event, _ = sample_events()[0]
    with pytest.raises(KeyboardInterrupt):
        Telemetry([Interrupting()]).emit(event)


def test_default_telemetry_logs(caplog: pytest.LogCaptureFixture) -> None:
    telemetry = Telemetry()
    assert len(telemetry.sinks) == 1
    assert isinstance(telemetry.sinks[0], LoggingTelemetrySink)
    with caplog.at_level(logging.INFO, logger=TELEMETRY_LOGGER_NAME):
        telemetry.plan_approved(session_id=SESSION, source_run_id=SOURCE, target_run_id=TARGET)
    (record,) = [r for r in caplog.records if r.name == TELEMETRY_LOGGER_NAME]
    assert record.getMessage() == "plan_approved"


def test_the_fan_out_reaches_only_the_sinks(caplog: pytest.LogCaptureFixture) -> None:
    """The sinks are handlers of the instance's own logger (ADR 0043): the root logging of
    the host sees the event once, through the logging sink, never the fan-out itself; two
    instances never share sinks."""
    first, second = RecordingTelemetrySink(), RecordingTelemetrySink()
    event, _ = sample_events()[0]
    with caplog.at_level(logging.DEBUG):
        Telemetry([first, LoggingTelemetrySink()]).emit(event)
        Telemetry([second]).emit(event)
    assert first.events == [event]
    assert second.events == [event]
    assert [r.name for r in caplog.records] == [TELEMETRY_LOGGER_NAME]


def test_empty_and_null_sinks_discard() -> None:
    event, _ = sample_events()[0]
    Telemetry([]).emit(event)
    Telemetry([NullTelemetrySink()]).emit(event)
    NullTelemetrySink().emit(event)


def test_sinks_satisfy_the_protocol() -> None:
    sinks: list[TelemetrySink] = [
        LoggingTelemetrySink(),
        RecordingTelemetrySink(),
        NullTelemetrySink(),
        ExplodingSink(RuntimeError()),
    ]
    assert all(isinstance(sink, TelemetrySink) for sink in sinks)


# --- logging sink -------------------------------------------------------------------------

#: Attributes every LogRecord has; anything else on a record came from ``extra``.
STANDARD_RECORD_ATTRS = frozenset(
    logging.LogRecord("n", logging.INFO, "p", 1, "m", None, None).__dict__
) | {"message", "asctime", "taskName"}


@pytest.mark.parametrize(("event", "expected"), sample_events())
def test_logging_sink_writes_only_the_dumped_fields(
    event: LifecycleEvent, expected: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    sink = LoggingTelemetrySink()
    assert sink.logger.name == TELEMETRY_LOGGER_NAME
    with caplog.at_level(logging.DEBUG):
        sink.emit(event)
    (record,) = caplog.records
    assert record.name == TELEMETRY_LOGGER_NAME
    assert record.levelno == logging.INFO
    assert record.getMessage() == expected["type"]
    assert record.args in (None, ())
    assert record.exc_info is None
    extras = set(record.__dict__) - STANDARD_RECORD_ATTRS
    assert extras == {"maka_es_event"}
    assert record.__dict__["maka_es_event"] == expected
    assert list(record.__dict__["maka_es_event"]) == list(expected)
    # The formatted text carries the type only; the payload is structured, not interpolated.
    assert caplog.text.strip().endswith(expected["type"])


def test_logging_sink_uses_a_given_logger(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("host.observability")
    event, expected = sample_events()[3]
    with caplog.at_level(logging.INFO, logger="host.observability"):
        Telemetry([LoggingTelemetrySink(logger)]).emit(event)
    (record,) = [r for r in caplog.records if r.name == "host.observability"]
    assert record.__dict__["maka_es_event"] == expected
