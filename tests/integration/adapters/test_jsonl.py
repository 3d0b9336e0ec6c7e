"""JSONL file ledger (docs/reference/ledger.md#jsonl): torn-row read/append rules, identity checks,
export.

Every test works on real files under a temporary root, because the rules are about bytes on
disk: what a crash in the middle of a ``write`` can leave behind and what the next reader or
writer must make of it.
"""

from __future__ import annotations

import json
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maka_es.adapters.jsonl import (
    MAX_DEPTH,
    RUN_HEADER_FILE,
    RUNTIME_EVENTS_FILE,
    JsonlLedger,
    classify_json_text,
    classify_tail_bytes,
    strict_json_loads,
    validate_safe_id,
)
from maka_es.errors import JsonlLedgerError
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

SESSION = "s1"
RUN = "r1"

# --- builders ---------------------------------------------------------------------------------


def header_wire(**overrides: Any) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "runId": RUN,
        "sessionId": SESSION,
        "turnId": "t1",
        "invocationId": "i1",
        "status": "running",
        "backendKind": "fake",
        "llmConnectionSlug": "conn",
        "modelId": "model",
        "cwd": "/work",
        "permissionMode": "default",
        "createdAt": 1000,
        "updatedAt": 1000,
    }
    wire.update(overrides)
    return {k: v for k, v in wire.items() if v is not None}


def make_header(**overrides: Any) -> RunHeader:
    return RunHeader.model_validate(header_wire(**overrides))


def event_wire(event_id: str, ts: float = 1001, text: str = "hello", **overrides: Any) -> Any:
    wire: dict[str, Any] = {
        "id": event_id,
        "sessionId": SESSION,
        "invocationId": "i1",
        "runId": RUN,
        "turnId": "t1",
        "ts": ts,
        "partial": False,
        "role": "model",
        "author": "agent",
        "content": {"kind": "text", "text": text},
    }
    wire.update(overrides)
    return wire


def make_event(
    event_id: str, ts: float = 1001, text: str = "hello", **overrides: Any
) -> RuntimeEvent:
    return RuntimeEvent.model_validate(event_wire(event_id, ts, text, **overrides))


def row(event: RuntimeEvent) -> bytes:
    return (canonical_json(event) + "\n").encode("utf-8")


@pytest.fixture
def ledger(tmp_path: Path) -> JsonlLedger:
    store = JsonlLedger(tmp_path / "root")
    store.write_header(make_header())
    return store


def ledger_path(store: JsonlLedger, session_id: str = SESSION, run_id: str = RUN) -> Path:
    return store.run_dir(session_id, run_id) / RUNTIME_EVENTS_FILE


def line_error(exc: pytest.ExceptionInfo[JsonlLedgerError], line: int) -> str:
    """Assert the error is a line error for ``line`` and return its reason."""
    prefix = f"Invalid RuntimeEvent JSONL line {line} for run {RUN}: "
    message = str(exc.value.args[0])
    assert message.startswith(prefix), message
    assert exc.value.line == line
    assert exc.value.code == "invalid_jsonl_line"
    return message[len(prefix) :]


# --- classifier -------------------------------------------------------------------------------

CLASSIFIER_CASES = [
    # complete
    ("{}", "complete"),
    ("[]", "complete"),
    ('  {"a": [1, 2.5, -0, 1e10, true, false, null, "x"]}  \n', "complete"),
    ("12", "complete"),
    ("0", "complete"),
    ("-0.5E+3", "complete"),
    ('"\\u00e9\\n\\"\\\\\\/"', "complete"),
    ('"é raw ☃ 😀"', "complete"),
    ("null", "complete"),
    ("[[[]]]", "complete"),
    ("\t true \r\n", "complete"),
    # incomplete prefixes
    ("", "incomplete-prefix"),
    ("   ", "incomplete-prefix"),
    ("{", "incomplete-prefix"),
    ("[", "incomplete-prefix"),
    ('{"a', "incomplete-prefix"),
    ('{"a"', "incomplete-prefix"),
    ('{"a":', "incomplete-prefix"),
    ('{"a":1', "incomplete-prefix"),
    ('{"a":1,', "incomplete-prefix"),
    ("[1,", "incomplete-prefix"),
    ("[1", "incomplete-prefix"),
    ("-", "incomplete-prefix"),
    ("1.", "incomplete-prefix"),
    ("1e", "incomplete-prefix"),
    ("1e-", "incomplete-prefix"),
    ("tr", "incomplete-prefix"),
    ("nul", "incomplete-prefix"),
    ("f", "incomplete-prefix"),
    ('"abc', "incomplete-prefix"),
    ('"abc\\', "incomplete-prefix"),
    ('"\\u', "incomplete-prefix"),
    ('"\\u12', "incomplete-prefix"),
    ('["\\u12aF', "incomplete-prefix"),
    # invalid
    ("[1,]", "invalid"),
    ('{"a":1,}', "invalid"),
    ("{,", "invalid"),
    ("[,", "invalid"),
    ("01", "invalid"),
    ("-01", "invalid"),
    ("1.e5", "invalid"),
    ("1e+x", "invalid"),
    ("-x", "invalid"),
    ("trux", "invalid"),
    ("nulll", "invalid"),
    ('"a\x01b"', "invalid"),
    ('"a\nb"', "invalid"),
    ('"\\x"', "invalid"),
    ('"\\u12g4"', "invalid"),
    ("{a:1}", "invalid"),
    ("{'a':1}", "invalid"),
    ('{"a" 1}', "invalid"),
    ('{"a":1 "b":2}', "invalid"),
    ("[1 2]", "invalid"),
    ("{}}", "invalid"),
    ("[]]", "invalid"),
    ("[}", "invalid"),
    ("{]", "invalid"),
    ("1 2", "invalid"),
    ("{} x", "invalid"),
    ('{"a":1}\n{', "invalid"),
    ("NaN", "invalid"),
    ("Infinity", "invalid"),
    ("+1", "invalid"),
    (".5", "invalid"),
    ("\ufeff{}", "invalid"),
    ("\u00a0{}", "invalid"),
    ("é", "invalid"),
]


@pytest.mark.parametrize(("text", "expected"), CLASSIFIER_CASES)
def test_classifier_table(text: str, expected: str) -> None:
    assert classify_json_text(text) == expected


def test_classifier_agrees_with_strict_parser_on_complete_table_entries() -> None:
    for text, expected in CLASSIFIER_CASES:
        if expected == "complete":
            strict_json_loads(text)
        else:
            with pytest.raises(ValueError):  # noqa: PT011 - any JSON error
                strict_json_loads(text)


def test_classifier_nesting_limit() -> None:
    assert classify_json_text("[" * MAX_DEPTH + "]" * MAX_DEPTH) == "complete"
    assert classify_json_text("[" * MAX_DEPTH) == "incomplete-prefix"
    assert classify_json_text("[" * (MAX_DEPTH + 1)) == "invalid"
    assert classify_json_text('{"a":' * (MAX_DEPTH + 1)) == "invalid"
    # deep nesting does not exhaust the Python stack
    assert classify_json_text("[" * 100_000) == "invalid"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"text":"caf' + "é".encode()[:1], "incomplete-prefix"),  # split é
        (b'{"t":"' + "😀".encode()[:3], "incomplete-prefix"),  # split 4-byte char
        (b'{"a":1' + "é".encode()[:1], "invalid"),  # non-ASCII can only be in a string
        (b'{"a":"\xff', "invalid"),  # not UTF-8 at all
        (b'{"a":"\xc3\x28', "invalid"),  # bad continuation byte
        (b'{"a":1}', "complete"),
    ],
)
def test_tail_bytes_classification_handles_split_utf8(raw: bytes, expected: str) -> None:
    assert classify_tail_bytes(raw) == expected


# --- safe ids ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad", ["", ".", "..", "a/b", "/abs", "a\\b", "a\x00b", "a\nb", "\x7f", "\ud800", "x" * 256]
)
def test_unsafe_ids_are_refused(tmp_path: Path, bad: str) -> None:
    store = JsonlLedger(tmp_path)
    with pytest.raises(JsonlLedgerError) as exc:
        validate_safe_id(bad)
    assert exc.value.code == "unsafe_id"
    for session_id, run_id in [(bad, RUN), (SESSION, bad)]:
        with pytest.raises(JsonlLedgerError) as exc:
            store.read_events(session_id, run_id)
        assert exc.value.code == "unsafe_id"
    with pytest.raises(JsonlLedgerError) as exc:
        store.read_session_events(bad)
    assert exc.value.code == "unsafe_id"
    assert not (tmp_path / "sessions").exists()


def test_unsafe_ids_in_events_and_headers_never_touch_the_filesystem(tmp_path: Path) -> None:
    store = JsonlLedger(tmp_path / "root")
    with pytest.raises(JsonlLedgerError) as exc:
        store.write_header(make_header(runId=".."))
    assert exc.value.code == "unsafe_id"
    with pytest.raises(JsonlLedgerError) as exc:
        store.append(make_event("e1", runId="../r1"))
    assert exc.value.code == "unsafe_id"
    assert not (tmp_path / "root").exists()


@pytest.mark.parametrize("good", [".hidden", "run-1", "ünïcode", "a b", "x" * 255, "a..b"])
def test_safe_ids_are_accepted(tmp_path: Path, good: str) -> None:
    store = JsonlLedger(tmp_path)
    store.write_header(make_header(runId=good))
    store.append(make_event("e1", runId=good))
    assert [e.id for e in store.read_events(SESSION, good)] == ["e1"]
    assert store.list_runs() == [(SESSION, good)]


# --- header -----------------------------------------------------------------------------------


def test_header_round_trip_is_canonical(ledger: JsonlLedger) -> None:
    path = ledger.run_dir(SESSION, RUN) / RUN_HEADER_FILE
    assert path.read_bytes() == (canonical_json(make_header()) + "\n").encode()
    assert ledger.read_header(SESSION, RUN) == make_header()
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_header_missing_refuses_append_and_read(tmp_path: Path) -> None:
    store = JsonlLedger(tmp_path)
    with pytest.raises(JsonlLedgerError) as exc:
        store.append(make_event("e1"))
    assert exc.value.code == "run_header_missing"
    with pytest.raises(JsonlLedgerError) as exc:
        store.read_events(SESSION, RUN)
    assert exc.value.code == "run_header_missing"
    assert not (tmp_path / "sessions").exists()


def test_header_in_the_wrong_directory_is_refused(ledger: JsonlLedger) -> None:
    other = ledger.run_dir(SESSION, "r2")
    other.mkdir(parents=True)
    (other / RUN_HEADER_FILE).write_bytes(
        (ledger.run_dir(SESSION, RUN) / RUN_HEADER_FILE).read_bytes()
    )
    with pytest.raises(JsonlLedgerError) as exc:
        ledger.read_header(SESSION, "r2")
    assert exc.value.code == "run_header_mismatch"


@pytest.mark.parametrize("content", [b"{", b'{"runId":"r1"}', b"not json", b"\xff"])
def test_corrupt_header_is_refused(ledger: JsonlLedger, content: bytes) -> None:
    (ledger.run_dir(SESSION, RUN) / RUN_HEADER_FILE).write_bytes(content)
    with pytest.raises(JsonlLedgerError) as exc:
        ledger.read_events(SESSION, RUN)
    assert exc.value.code == "run_header_invalid"


# --- append / read ----------------------------------------------------------------------------


def test_append_writes_canonical_rows_and_reads_them_back(ledger: JsonlLedger) -> None:
    events = [make_event("e1"), make_event("e2", text="é ☃ 😀 \u2028 \x00")]
    assert all(ledger.append(event) for event in events)
    assert ledger_path(ledger).read_bytes() == b"".join(row(e) for e in events)
    assert ledger.read_events(SESSION, RUN) == events


def test_run_without_ledger_file_reads_empty(ledger: JsonlLedger) -> None:
    assert ledger.read_events(SESSION, RUN) == []


def test_blank_lines_are_ignored(ledger: JsonlLedger) -> None:
    e1, e2 = make_event("e1"), make_event("e2")
    ledger_path(ledger).write_bytes(b"\n \n" + row(e1) + b"\t\r\n\n" + row(e2) + b"\n")
    assert ledger.read_events(SESSION, RUN) == [e1, e2]


def test_exact_retry_is_a_no_op(ledger: JsonlLedger) -> None:
    event = make_event("e1")
    assert ledger.append(event) is True
    before = ledger_path(ledger).read_bytes()
    assert ledger.append(make_event("e1")) is False
    assert ledger_path(ledger).read_bytes() == before


def test_conflicting_retry_is_refused(ledger: JsonlLedger) -> None:
    ledger.append(make_event("e0"))
    ledger.append(make_event("e1"))
    before = ledger_path(ledger).read_bytes()
    with pytest.raises(JsonlLedgerError) as exc:
        ledger.append(make_event("e1", text="different"))
    assert exc.value.code == "event_id_conflict"
    assert exc.value.line == 2
    assert ledger_path(ledger).read_bytes() == before


def test_partial_event_is_refused(ledger: JsonlLedger) -> None:
    with pytest.raises(JsonlLedgerError) as exc:
        ledger.append(make_event("e1", partial=True, status="streaming"))
    assert exc.value.code == "partial_event_refused"
    assert not ledger_path(ledger).exists()


@pytest.mark.parametrize("override", [{"turnId": "t2"}, {"invocationId": "i2"}])
def test_append_refuses_identity_mismatch(ledger: JsonlLedger, override: dict[str, Any]) -> None:
    with pytest.raises(JsonlLedgerError) as exc:
        ledger.append(make_event("e1", **override))
    assert exc.value.code == "event_identity_mismatch"
    assert not ledger_path(ledger).exists()


def test_legacy_header_without_invocation_id_accepts_any_invocation(tmp_path: Path) -> None:
    store = JsonlLedger(tmp_path)
    store.write_header(make_header(invocationId=None))
    store.append(make_event("e1", invocationId="anything"))
    assert [e.invocation_id for e in store.read_events(SESSION, RUN)] == ["anything"]


def test_identity_mismatch_in_file_names_the_line(ledger: JsonlLedger) -> None:
    rows = row(make_event("e1")) + row(make_event("e2", turnId="t2"))
    ledger_path(ledger).write_bytes(rows)
    with pytest.raises(JsonlLedgerError) as exc:
        ledger.read_events(SESSION, RUN)
    assert "turnId" in line_error(exc, 2)
    with pytest.raises(JsonlLedgerError) as exc:
        ledger.append(make_event("e3"))
    line_error(exc, 2)


def test_invocation_mismatch_in_file_names_the_line(ledger: JsonlLedger) -> None:
    ledger_path(ledger).write_bytes(b"\n" + row(make_event("e1", invocationId="i9")))
    with pytest.raises(JsonlLedgerError) as exc:
        ledger.read_events(SESSION, RUN)
    assert "invocationId" in line_error(exc, 2)


def test_duplicate_id_in_file_is_refused(ledger: JsonlLedger) -> None:
    e1 = make_event("e1")
    ledger_path(ledger).write_bytes(row(e1) + row(make_event("e2")) + row(e1))
    with pytest.raises(JsonlLedgerError) as exc:
        ledger.read_events(SESSION, RUN)
    assert "duplicate event id 'e1' (line 1)" in line_error(exc, 3)


def test_row_that_is_not_a_runtime_event_is_refused(ledger: JsonlLedger) -> None:
    bad = {**event_wire("e2"), "unknownKey": 1}
    ledger_path(ledger).write_bytes(row(make_event("e1")) + json.dumps(bad).encode() + b"\n")
    with pytest.raises(JsonlLedgerError) as exc:
        ledger.read_events(SESSION, RUN)
    assert "unknownKey" in line_error(exc, 2)


@pytest.mark.parametrize(
    "payload",
    [
        b'"ts":NaN',
        b'"ts":Infinity',
        b'"ts":-Infinity',
        b'"ts":1e400',
        b'"ts":1,"ts":2',  # duplicate key
    ],
)
@pytest.mark.parametrize("terminated", [True, False])
def test_non_strict_json_row_is_refused(
    ledger: JsonlLedger, payload: bytes, terminated: bool
) -> None:
    good = canonical_json(make_event("e2")).encode()
    bad = good.replace(b'"ts":1001', payload)
    assert bad != good
    ledger_path(ledger).write_bytes(row(make_event("e1")) + bad + (b"\n" if terminated else b""))
    with pytest.raises(JsonlLedgerError) as exc:
        ledger.read_events(SESSION, RUN)
    assert "not strict JSON" in line_error(exc, 2)


def test_numbers_are_read_with_javascript_semantics(ledger: JsonlLedger) -> None:
    # A double above 2**53 is written with all its digits; reading it as a Python int would
    # change both its value and its canonical form (which refuses such ints).
    big = make_event("e1", ts=4.783544313724215e16)
    assert b'"ts":47835443137242150' in row(big)
    ledger.append(big)
    assert ledger.read_events(SESSION, RUN) == [big]
    assert ledger.append(big) is False  # exact retry still recognised
    assert strict_json_loads("9007199254740993") == 9007199254740992.0
    assert strict_json_loads("-9007199254740992") == -(2**53)
    with pytest.raises(ValueError, match="not a finite double"):
        strict_json_loads("1" + "0" * 400)


# --- torn rows --------------------------------------------------------------------------------


def test_torn_tail_is_invisible_on_read(ledger: JsonlLedger) -> None:
    e1, e2 = make_event("e1"), make_event("e2")
    ledger.append(e1)
    ledger.append(e2)
    torn = row(make_event("e3"))[:40]
    with ledger_path(ledger).open("ab") as handle:
        handle.write(torn)
    assert ledger.read_events(SESSION, RUN) == [e1, e2]


def test_torn_tail_split_inside_a_multibyte_character_is_invisible(ledger: JsonlLedger) -> None:
    e1 = make_event("e1")
    ledger.append(e1)
    full = row(make_event("e2", text="ééé"))
    cut = full.index("é".encode()) + 1
    with ledger_path(ledger).open("ab") as handle:
        handle.write(full[:cut])
    assert ledger.read_events(SESSION, RUN) == [e1]


def test_torn_row_in_the_middle_fails_naming_the_line(ledger: JsonlLedger) -> None:
    e1, e3 = make_event("e1"), make_event("e3")
    torn = row(make_event("e2"))[:30]
    ledger_path(ledger).write_bytes(row(e1) + torn + b"\n" + row(e3))
    with pytest.raises(JsonlLedgerError) as exc:
        ledger.read_events(SESSION, RUN)
    line_error(exc, 2)


def test_torn_last_row_followed_by_a_newline_is_not_tolerated(ledger: JsonlLedger) -> None:
    torn = row(make_event("e2"))[:30]
    ledger_path(ledger).write_bytes(row(make_event("e1")) + torn + b"\n")
    with pytest.raises(JsonlLedgerError) as exc:
        ledger.read_events(SESSION, RUN)
    line_error(exc, 2)


def test_complete_unterminated_last_row_is_read_and_gets_its_newline(ledger: JsonlLedger) -> None:
    e1, e2, e3 = make_event("e1"), make_event("e2"), make_event("e3")
    ledger_path(ledger).write_bytes(row(e1) + row(e2)[:-1])
    assert ledger.read_events(SESSION, RUN) == [e1, e2]
    assert ledger.append(e3) is True
    assert ledger_path(ledger).read_bytes() == row(e1) + row(e2) + row(e3)
    assert ledger.read_events(SESSION, RUN) == [e1, e2, e3]


def test_append_after_torn_tail_truncates_it_first(ledger: JsonlLedger) -> None:
    e1, e3 = make_event("e1"), make_event("e3")
    ledger.append(e1)
    with ledger_path(ledger).open("ab") as handle:
        handle.write(row(make_event("e2"))[:-5])
    assert ledger.append(e3) is True
    assert ledger_path(ledger).read_bytes() == row(e1) + row(e3)
    assert ledger.read_events(SESSION, RUN) == [e1, e3]


def test_torn_tail_of_the_very_first_row_is_truncated(ledger: JsonlLedger) -> None:
    e1 = make_event("e1")
    ledger_path(ledger).write_bytes(b'{"id":"e')
    assert ledger.read_events(SESSION, RUN) == []
    ledger.append(e1)
    assert ledger_path(ledger).read_bytes() == row(e1)


def test_whitespace_tail_is_truncated_before_append(ledger: JsonlLedger) -> None:
    e1, e2 = make_event("e1"), make_event("e2")
    ledger_path(ledger).write_bytes(row(e1) + b"  \t")
    assert ledger.read_events(SESSION, RUN) == [e1]
    ledger.append(e2)
    assert ledger_path(ledger).read_bytes() == row(e1) + row(e2)


def test_torn_row_before_a_whitespace_tail_is_truncated_with_it(ledger: JsonlLedger) -> None:
    # Literal read rule: the torn row is the last *non-blank* line and the file does not end
    # with "\n". What the reader dropped, the writer must drop too.
    e1, e3 = make_event("e1"), make_event("e3")
    ledger_path(ledger).write_bytes(row(e1) + row(make_event("e2"))[:25] + b"\n  ")
    assert ledger.read_events(SESSION, RUN) == [e1]
    ledger.append(e3)
    assert ledger_path(ledger).read_bytes() == row(e1) + row(e3)


@pytest.mark.parametrize("tail", [b'{"id":"e2"}x', b"garbage", b'{"a":1,}', b"\xff\xfe"])
def test_invalid_tail_refuses_append_and_read(ledger: JsonlLedger, tail: bytes) -> None:
    ledger.append(make_event("e1"))
    with ledger_path(ledger).open("ab") as handle:
        handle.write(tail)
    before = ledger_path(ledger).read_bytes()
    with pytest.raises(JsonlLedgerError) as exc:
        ledger.append(make_event("e2"))
    assert exc.value.code == "torn_tail_invalid"
    assert ledger_path(ledger).read_bytes() == before
    with pytest.raises(JsonlLedgerError) as read_exc:
        ledger.read_events(SESSION, RUN)
    line_error(read_exc, 2)


def test_exact_retry_of_a_torn_event_appends_it(ledger: JsonlLedger) -> None:
    e1, e2 = make_event("e1"), make_event("e2")
    ledger.append(e1)
    with ledger_path(ledger).open("ab") as handle:
        handle.write(row(e2)[:-2])
    assert ledger.append(e2) is True  # the torn copy was never committed
    assert ledger_path(ledger).read_bytes() == row(e1) + row(e2)


def test_concurrent_appenders_serialise_on_the_file_lock(ledger: JsonlLedger) -> None:
    def writer(worker: int) -> None:
        store = JsonlLedger(ledger.root)  # separate instance: only the flock serialises
        for i in range(10):
            store.append(make_event(f"w{worker}-{i}"))
            store.append(make_event(f"w{worker}-{i}"))  # exact retry under contention

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    read = ledger.read_events(SESSION, RUN)
    assert sorted(e.id for e in read) == sorted(f"w{n}-{i}" for n in range(4) for i in range(10))
    assert ledger_path(ledger).read_bytes() == b"".join(row(e) for e in read)


# --- enumeration, session view, export --------------------------------------------------------


def test_export_round_trip_is_byte_identical(tmp_path: Path) -> None:
    store = JsonlLedger(tmp_path)
    header = make_header()
    events = [
        make_event("e1", ts=1001),
        make_event("e2", ts=1002.5, text="ünïcode 😀"),
        make_event("e3", ts=1003, actions={"stateDelta": {"b": [1, 2.0, None], "a": {"z": 1e21}}}),
    ]
    store.export_run(SESSION, RUN, header, events)
    assert store.read_header(SESSION, RUN) == header
    read = store.read_events(SESSION, RUN)
    assert read == events
    assert [canonical_json(e) for e in read] == [canonical_json(e) for e in events]
    assert ledger_path(store).read_bytes() == b"".join(row(e) for e in events)
    run_dir = store.run_dir(SESSION, RUN)
    assert (run_dir / RUN_HEADER_FILE).read_bytes() == (canonical_json(header) + "\n").encode()
    # re-export replaces, and exporting the read-back events reproduces the same bytes
    store.export_run(SESSION, RUN, header, read[:2])
    assert ledger_path(store).read_bytes() == row(events[0]) + row(events[1])
    assert not [p for p in run_dir.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    ("events", "code"),
    [
        ([make_event("e1", partial=True)], "partial_event_refused"),
        ([make_event("e1", turnId="t2")], "event_identity_mismatch"),
        ([make_event("e1"), make_event("e1")], "event_id_conflict"),
    ],
)
def test_export_validates_before_writing(
    tmp_path: Path, events: list[RuntimeEvent], code: str
) -> None:
    store = JsonlLedger(tmp_path)
    with pytest.raises(JsonlLedgerError) as exc:
        store.export_run(SESSION, RUN, make_header(), events)
    assert exc.value.code == code
    assert not (tmp_path / "sessions").exists()


def test_export_refuses_a_header_for_another_run(tmp_path: Path) -> None:
    with pytest.raises(JsonlLedgerError) as exc:
        JsonlLedger(tmp_path).export_run(SESSION, "r2", make_header(), [])
    assert exc.value.code == "run_header_mismatch"


def test_list_runs_is_sorted_and_skips_non_runs(tmp_path: Path) -> None:
    store = JsonlLedger(tmp_path)
    for session_id, run_id in [("s2", "r1"), ("s1", "rb"), ("s1", "ra"), ("s1", "B")]:
        store.write_header(make_header(sessionId=session_id, runId=run_id))
    (tmp_path / "sessions" / "s1" / "runs" / "no-header").mkdir()
    (tmp_path / "sessions" / "s3").mkdir()
    (tmp_path / "sessions" / "s1" / "runs" / "stray-file").write_text("x")
    assert store.list_runs() == [("s1", "B"), ("s1", "ra"), ("s1", "rb"), ("s2", "r1")]
    assert JsonlLedger(tmp_path / "empty").list_runs() == []


def test_read_session_events_orders_by_ts_run_index_id(tmp_path: Path) -> None:
    store = JsonlLedger(tmp_path)
    for run_id, turn_id in [("rB", "tB"), ("rA", "tA")]:
        store.write_header(make_header(runId=run_id, turnId=turn_id))
    store.write_header(make_header(sessionId="other", runId="rZ", turnId="tZ"))

    def ev(event_id: str, run_id: str, ts: float) -> RuntimeEvent:
        return make_event(event_id, ts=ts, runId=run_id, turnId="t" + run_id[1:])

    for event in [ev("b1", "rB", 5), ev("b2", "rB", 1), ev("b3", "rB", 5)]:
        store.append(event)
    for event in [ev("a2", "rA", 5), ev("a1", "rA", 5), ev("a0", "rA", 9)]:
        store.append(event)
    store.append(make_event("z", ts=0, sessionId="other", runId="rZ", turnId="tZ"))
    ordered = [e.id for e in store.read_session_events(SESSION)]
    # ts first; same ts -> runId; same run -> file index (a2 before a1), then id
    assert ordered == ["b2", "a2", "a1", "b1", "b3", "a0"]
    assert store.read_session_events("nobody") == []


def test_session_read_fails_when_one_run_is_unreadable(tmp_path: Path) -> None:
    store = JsonlLedger(tmp_path)
    store.write_header(make_header())
    store.write_header(make_header(runId="r2", turnId="t2"))
    store.append(make_event("e1"))
    (store.run_dir(SESSION, "r2") / RUNTIME_EVENTS_FILE).write_bytes(b"garbage\n")
    with pytest.raises(JsonlLedgerError) as exc:
        store.read_session_events(SESSION)
    assert exc.value.line == 1


# --- properties -------------------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)
ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=8)


@st.composite
def events(draw: st.DrawFn, event_id: str | None = None) -> RuntimeEvent:
    wire = event_wire(
        event_id if event_id is not None else draw(ids),
        ts=draw(st.integers(0, 2**53) | st.floats(0, 1e300, allow_nan=False)),
        text=draw(st.text(max_size=30)),
    )
    if draw(st.booleans()):
        wire["actions"] = {
            "stateDelta": draw(st.dictionaries(st.text(max_size=4), json_values, max_size=3))
        }
    return RuntimeEvent.model_validate(wire)


@given(value=json_values)
def test_every_prefix_of_canonical_json_is_a_prefix_or_complete(value: Any) -> None:
    text = canonical_json(value)
    assert classify_json_text(text) == "complete"
    assert canonical_json(strict_json_loads(text)) == text
    for cut in range(len(text)):
        verdict = classify_json_text(text[:cut])
        assert verdict in ("incomplete-prefix", "complete"), (text, cut)
        if verdict == "complete":  # only a number can be complete and still extensible
            strict_json_loads(text[:cut])


@given(event=events())
def test_every_proper_prefix_of_an_event_row_is_incomplete(event: RuntimeEvent) -> None:
    text = canonical_json(event)
    assert classify_json_text(text) == "complete"
    for cut in range(len(text)):
        assert classify_json_text(text[:cut]) == "incomplete-prefix", (text, cut)
    data = text.encode("utf-8")
    for cut in range(len(data)):
        assert classify_tail_bytes(data[:cut]) == "incomplete-prefix", (data, cut)


@given(data=st.data(), count=st.integers(min_value=1, max_value=4))
def test_cut_inside_last_row_reads_the_first_n_minus_1_events(
    data: st.DataObject, count: int
) -> None:
    stored = [data.draw(events(event_id=f"e{i}")) for i in range(count)]
    with tempfile.TemporaryDirectory() as tmp:
        store = JsonlLedger(tmp)
        store.export_run(SESSION, RUN, make_header(), stored)
        path = ledger_path(store)
        full = path.read_bytes()
        last_row_start = len(full) - len(row(stored[-1]))
        # any cut strictly inside the last row's JSON (the row without its final "}" + "\n")
        cut = data.draw(st.integers(last_row_start, len(full) - 2), label="cut")
        path.write_bytes(full[:cut])
        assert store.read_events(SESSION, RUN) == stored[:-1]
        # the next append removes the torn bytes and lands on a clean row boundary
        extra = make_event("extra")
        assert store.append(extra) is True
        assert path.read_bytes() == full[:last_row_start] + row(extra)
        assert store.read_events(SESSION, RUN) == [*stored[:-1], extra]
