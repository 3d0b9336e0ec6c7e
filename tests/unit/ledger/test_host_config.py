"""HostConfig is a frozen, closed model whose bad values are a typed ``invalid_host_config``
naming the fields (never their values), and header_for_run builds a valid admission header
(docs/reference/ledger.md#run-header, docs/configuration.md#one-host-configuration)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from maka_es.errors import InvalidHostConfigError, MakaError
from maka_es.ledger.model.host_config import HostConfig, header_for_run
from maka_es.wire.run_header import RunHeader

CONFIG = HostConfig(
    backend_kind="fake", llm_connection_slug="c", model_id="m", permission_mode="ask"
)


def test_config_is_frozen_and_closed() -> None:
    with pytest.raises(ValidationError):
        CONFIG.model_id = "other"  # type: ignore[misc]
    with pytest.raises(InvalidHostConfigError) as extra:
        HostConfig.model_validate({**CONFIG.model_dump(), "modelName": "x"})
    assert extra.value.detail == {"errors": [{"field": "modelName", "type": "extra_forbidden"}]}
    with pytest.raises(InvalidHostConfigError) as kind:
        HostConfig.model_validate({**CONFIG.model_dump(), "backend_kind": "openai"})
    assert kind.value.detail == {"errors": [{"field": "backend_kind", "type": "literal_error"}]}


SECRET = "sk-live-0123456789"
GOOD: dict[str, Any] = {
    "backend_kind": "fake",
    "llm_connection_slug": "c",
    "model_id": "m",
    "permission_mode": "ask",
}
#: (field, bad value, pydantic's error type): every field, each way it can be wrong.
BAD_FIELDS: list[tuple[str, object, str]] = [
    ("backend_kind", SECRET, "literal_error"),
    ("backend_kind", None, "literal_error"),
    ("llm_connection_slug", 7, "string_type"),
    ("llm_connection_slug", SECRET.encode(), "string_type"),
    ("llm_connection_slug", None, "string_type"),
    ("model_id", [SECRET], "string_type"),
    ("model_id", 1.5, "string_type"),
    ("permission_mode", {"mode": SECRET}, "string_type"),
    ("permission_mode", True, "string_type"),
    ("cwd", SECRET.encode(), "string_type"),
    ("cwd", 0, "string_type"),
    ("apiKey", SECRET, "extra_forbidden"),
]


def _refusal(build: Any) -> InvalidHostConfigError:
    with pytest.raises(InvalidHostConfigError) as refused:
        build()
    return refused.value


HOWS = ["constructor", "model_validate", "model_validate_json"]
CASES = [
    (how, *case)
    for how in HOWS
    for case in BAD_FIELDS
    if not (how == "model_validate_json" and isinstance(case[1], bytes))  # JSON has no bytes
]


@pytest.mark.parametrize(("how", "field", "value", "error_type"), CASES)
def test_a_bad_field_is_a_typed_refusal_that_names_it_and_not_its_value(
    how: str, field: str, value: object, error_type: str
) -> None:
    data = {**GOOD, field: value}
    if how == "constructor":
        refused = _refusal(lambda: HostConfig(**data))
    elif how == "model_validate":
        refused = _refusal(lambda: HostConfig.model_validate(data))
    else:
        refused = _refusal(lambda: HostConfig.model_validate_json(json.dumps(data)))

    assert refused.code == "invalid_host_config"
    assert refused.detail == {"errors": [{"field": field, "type": error_type}]}
    assert isinstance(refused, MakaError)
    assert isinstance(refused, ValueError)
    assert SECRET not in str(refused)
    assert SECRET not in repr(refused.detail)
    assert refused.__cause__ is None
    assert refused.__suppress_context__


@pytest.mark.parametrize(
    "missing", ["backend_kind", "llm_connection_slug", "model_id", "permission_mode"]
)
def test_a_missing_field_is_named(missing: str) -> None:
    data = {key: value for key, value in GOOD.items() if key != missing}

    refused = _refusal(lambda: HostConfig(**data))

    assert refused.detail == {"errors": [{"field": missing, "type": "missing"}]}


def test_every_bad_field_is_listed_at_once() -> None:
    refused = _refusal(lambda: HostConfig.model_validate({"backend_kind": "x", "model_id": 1}))

    assert [error["field"] for error in refused.detail["errors"]] == [
        "backend_kind",
        "llm_connection_slug",
        "model_id",
        "permission_mode",
    ]


def test_input_that_is_no_mapping_is_refused_at_the_root() -> None:
    refused = _refusal(lambda: HostConfig.model_validate(SECRET))

    assert refused.detail == {"errors": [{"field": "<root>", "type": "model_type"}]}
    assert SECRET not in str(refused)


@pytest.mark.parametrize("identity", [None, "workspace:v1:abc"])
def test_header_takes_the_session_cwd_unless_the_config_has_one(identity: str | None) -> None:
    def build(config: HostConfig) -> RunHeader:
        return header_for_run(
            config,
            session_id="s1",
            session_cwd="/s",
            workspace_identity=identity,
            run_id="r1",
            invocation_id="i1",
            turn_id="t1",
            now_ms=7,
        )

    header = build(CONFIG)
    assert (header.cwd, header.workspace_identity, header.created_at) == ("/s", identity, 7)
    assert header.to_wire().get("workspaceIdentity", None) == identity
    own = CONFIG.model_copy(update={"cwd": "/own"})
    assert build(own).cwd == "/own"
