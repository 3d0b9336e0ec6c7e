"""``create_run`` after an unknown outcome: an exact retry answers the existing run (issue 20).

Why: a host whose ``create_run`` raised ``store_outcome_unknown``, or that crashed before it
saw the answer, cannot know whether the run exists; ``append_events`` and T1 let it simply
send the same command again, ``create_run`` answered ``run_already_exists``. An exact retry
is the same run id with a header byte-identical (canonical JSON) to the one the run was
created with; it answers the run's current header and writes nothing. A different header for
the same run id stays ``run_already_exists``. The host's situation after a crash is a new
application on the same store: every retry here is also made from one.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from maka_es import HostConfig
from maka_es.aio import AsyncRuntimeApplication
from maka_es.app import RuntimeApplication
from maka_es.errors import RunAlreadyExistsError
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.wire.run_header import RunHeader
from tests.conftest import FixedClock
from tests.support.store_sql import all_rows

SPINE = Spine()
RUN = SPINE.run_id
LEDGER = LedgerBuilder(SPINE)
CONFIG = HostConfig(
    backend_kind="ai-sdk",
    llm_connection_slug="openai-main",
    model_id="gpt-test",
    permission_mode="ask",
)


@pytest.fixture
def reopen(store_url: str, clock: FixedClock) -> Iterator[Any]:
    """Opens a new application on the test's store (the host after a restart); closes all."""
    opened: list[RuntimeApplication] = []

    def open_again(**kwargs: Any) -> RuntimeApplication:
        app = RuntimeApplication.open(store_url, clock=clock, **kwargs)
        opened.append(app)
        return app

    yield open_again
    for app in opened:
        app.close()


def created(app: RuntimeApplication) -> RunHeader:
    app.open_session(SPINE.session_id, "/workspace")
    return app.ledger.create_run(run_header(SPINE))


def test_an_exact_retry_answers_the_existing_header_and_writes_nothing(
    store_app: RuntimeApplication, store_url: str, reopen: Any
) -> None:
    first = created(store_app)
    rows = all_rows(store_url)

    assert store_app.ledger.create_run(run_header(SPINE)) == first
    assert store_app.ledger.create_run(first.to_wire()) == first
    assert reopen().ledger.create_run(run_header(SPINE)) == first
    assert all_rows(store_url) == rows
    assert store_app.list_runs(SPINE.session_id) == [first]


def test_a_different_header_for_the_same_run_stays_run_already_exists(
    store_app: RuntimeApplication, store_url: str, reopen: Any
) -> None:
    created(store_app)
    rows = all_rows(store_url)
    other_model = run_header(SPINE, modelId="another-model")
    other_time = {**run_header(SPINE), "updatedAt": run_header(SPINE)["updatedAt"] + 1}
    for header in (other_model, other_time):
        for app in (store_app, reopen()):
            with pytest.raises(RunAlreadyExistsError) as refused:
                app.ledger.create_run(header)
            assert refused.value.code == "run_already_exists"
    assert all_rows(store_url) == rows


def test_a_retry_after_the_run_moved_on_answers_its_current_header(
    store_app: RuntimeApplication, store_url: str, reopen: Any
) -> None:
    """The run was created, then written to and ended (by this host or by recovery) before
    the retry came: still the same creation, answered with the header as it is now."""
    created(store_app)
    store_app.ledger.append_event(RUN, LEDGER.user())
    ended = store_app.end_run(RUN, LEDGER.terminal("failed", event_id="ev-end"))
    rows = all_rows(store_url)

    assert reopen().ledger.create_run(run_header(SPINE)) == ended
    assert ended.status == "failed"
    assert all_rows(store_url) == rows
    assert len(reopen().read_run_events(RUN)) == 2


def _host(reopen: Any, **kwargs: Any) -> RuntimeApplication:
    counter = itertools.count(1)
    return reopen(  # type: ignore[no-any-return]
        id_factory=lambda: f"id-{next(counter)}",
        host_config=kwargs.pop("host_config", CONFIG),
        **kwargs,
    )


def test_start_run_retried_with_the_same_ids_answers_the_run_it_created(
    store_url: str, reopen: Any
) -> None:
    """``start_run`` fills ``createdAt``/``updatedAt`` from the clock, which a retry cannot
    repeat: the same session, ids and config are its exact retry. Another config is not."""
    host = _host(reopen)
    host.open_session(SPINE.session_id, "/workspace", "workspace:v1:retry")
    ids: dict[str, Any] = {
        "run_id": RUN,
        "invocation_id": SPINE.invocation_id,
        "turn_id": SPINE.turn_id,
    }
    first = host.start_run(SPINE.session_id, **ids)
    rows = all_rows(store_url)

    again = _host(reopen).start_run(SPINE.session_id, **ids)

    assert again == first
    assert all_rows(store_url) == rows
    other = HostConfig(**{**CONFIG.__dict__, "model_id": "another-model"})
    with pytest.raises(RunAlreadyExistsError):
        _host(reopen, host_config=other).start_run(SPINE.session_id, **ids)
    assert all_rows(store_url) == rows


def test_the_async_facade_answers_an_exact_retry_the_same_way(store_url: str, reopen: Any) -> None:
    async def main() -> tuple[RunHeader, RunHeader]:
        async with AsyncRuntimeApplication(reopen()) as first_host:
            await first_host.open_session(SPINE.session_id, "/workspace")
            first = await first_host.ledger.create_run(run_header(SPINE))
        async with AsyncRuntimeApplication(reopen()) as second_host:
            again = await second_host.ledger.create_run(run_header(SPINE))
            with pytest.raises(RunAlreadyExistsError):
                await second_host.ledger.create_run(run_header(SPINE, modelId="another-model"))
        return first, again

    first, again = asyncio.run(main())
    assert again == first
