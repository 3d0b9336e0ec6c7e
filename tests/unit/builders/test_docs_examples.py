"""The builders reproduce the reference's example events byte for byte.

Why: docs/reference/wire.md#examples (and the bundle and start-fact examples) are what a host
reads to learn the shapes; the builders are what tests use. If either drifts, this fails.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from maka_es.testing.builders import Events, Spine

DOCS = Path(__file__).resolve().parents[3] / "docs" / "reference"
RUN_7 = Spine("sess-A", "inv-7", "run-7", "turn-7")
WRITE_ARGS = {"path": "app.cfg", "content": "port=8080\n"}


def examples(page: str, anchor: str) -> list[dict[str, Any]]:
    """The JSON blocks of ``page`` between ``<a id="anchor">`` and the next anchor."""
    text = (DOCS / page).read_text()
    section = text.split(f'<a id="{anchor}"></a>', 1)[1].split("<a id=", 1)[0]
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", section, re.S)]


def test_user_and_model_text_examples() -> None:
    kit = Events.wire(RUN_7, ts=5000)
    assert examples("wire.md", "example-user") == [
        kit.user("bump the port to 8080", event_id="ev-1", marker=True),
        kit.at(5001).text(
            "I will ed", event_id="ev-2.p", partial=True, refs={"providerEventId": "step-1"}
        ),
        kit.at(5001).text(
            "I will edit app.cfg.", event_id="ev-2", refs={"providerEventId": "step-1"}
        ),
    ]


def test_t1_call_and_dispatch_examples() -> None:
    kit = Events.wire(RUN_7, ts=5002)
    call = kit.call("call_a", "Write", WRITE_ARGS, event_id="ev-3", t1=True, step_id="step-1")
    assert examples("wire.md", "example-call") == [call]
    assert examples("wire.md", "example-dispatch") == [
        kit.dispatch("call_a", "Write", WRITE_ARGS, recovery_mode="reconcile")
    ]


def test_t2_response_example() -> None:
    result = {"kind": "text", "text": "wrote 10 bytes to app.cfg"}
    response = Events.wire(RUN_7, ts=5003).bound_response(
        "call_a", "Write", result, actions={"stateDelta": {"durationMs": 4}}
    )
    assert examples("wire.md", "example-response") == [response]


def test_permission_examples() -> None:
    kit = Events.wire(RUN_7, ts=5004)
    request = kit.permission_request(
        "perm-1", event_id="ev-4", tool_call_id="call_b", args={"command": "make deploy"}
    )
    decision = kit.at(5005).permission_decision(
        "perm-1", "allow", event_id="ev-5", tool_name="Bash"
    )
    assert examples("wire.md", "example-permission") == [request, decision]


def test_failed_terminal_example() -> None:
    terminal = Events.wire(RUN_7, ts=5009).terminal(
        "failed", event_id="ev-9", message="provider_error", failure_class="provider_error"
    )
    assert examples("wire.md", "example-terminal") == [terminal]


def test_completed_bundle_example() -> None:
    kit = Events.wire(RUN_7, ts=7000)
    outcome_id = RUN_7.fact_id("call_a", "response")
    evidence = [*kit.evidence("call_a", call_event_id="ev-3"), outcome_id]
    digest = "sha256:3ecd597da01efd1ee67b4aa24bc52d98469835d50e72fd923a9b1cae3863d4a7"
    result = {"kind": "text", "text": "wrote 10 bytes to app.cfg (reconciled)"}
    assert examples("tool-journal.md", "bundle-example") == [
        kit.reconcile("call_a", digest=digest),
        kit.bound_response("call_a", "Write", result),
        kit.completed_decision("call_a", evidence=evidence, outcome_event_id=outcome_id),
    ]


def test_continuation_start_example() -> None:
    run_8 = Events.wire(Spine("sess-A", "inv-8", "run-8", "turn-8"), ts=6000)
    start = run_8.continuation_start(
        RUN_7,
        6,
        claim_id="claim_61c31aae74f5462d4833b0ea4edffed6",
        boundary_digest="sha256:51c4d81f73bd161b4793d7667c059d6209550aaa480792ef25dbee76bd7cbbaa",
        prefix_digest="sha256:426ce37aa580ab3d2afceb01495e94a5108777e38a2fe25ae9fbb4a1e97b3de6",
        provider_replay_digest=(
            "sha256:b45d639f044fb88fa73941e3ff11f08fa5eb2495324570eefeca0678bd07425a"
        ),
    )
    assert examples("continuation.md", "start-fact") == [start]
