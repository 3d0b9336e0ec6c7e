"""HostConfig is a frozen, closed model and header_for_run builds a valid admission header
(docs/reference/ledger.md#run-header)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from maka_es.ledger.host_config import HostConfig, header_for_run
from maka_es.wire.run_header import RunHeader

CONFIG = HostConfig(
    backend_kind="fake", llm_connection_slug="c", model_id="m", permission_mode="ask"
)


def test_config_is_frozen_and_closed() -> None:
    with pytest.raises(ValidationError):
        CONFIG.model_id = "other"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        HostConfig.model_validate({**CONFIG.model_dump(), "modelName": "x"})
    with pytest.raises(ValidationError):
        HostConfig.model_validate({**CONFIG.model_dump(), "backend_kind": "openai"})


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
