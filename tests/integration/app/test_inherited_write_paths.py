"""eventsourcing's own write entry points are closed (issue 20), and gone from the host (issue 22).

Why: ``RuntimeApplication`` was an ``eventsourcing.Application``, whose ``save`` commits any
fact it is given. A dispatch fact at the run's next version, refused by ``append_events`` as
``reserved_fact``, went in through ``app.save`` and came back from ``read_run_events``. The
host object now holds its eventsourcing application (``app._es``, ADR 0039) and has no such
name; the held application's writers refuse with ``write_path_refused`` and write nothing; the
evidence is read from the store's table itself (SQLite file, PostgreSQL schema) and by a fresh
application.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.errors import ReservedFactError, WritePathRefusedError
from maka_es.ledger.model.facts import RuntimeEventRecorded, run_stream_id
from maka_es.testing.builders import Events, Spine, run_header
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import TOOL_BOUNDARY_PROTOCOL_V1, RuntimeEvent
from maka_es.wire.facts import dispatch_fact
from tests.support.store_sql import all_rows, event_rows

SPINE = Spine()
RUN = SPINE.run_id
EV = Events.wire()
ARGS: dict[str, Any] = {"path": "notes.txt", "content": "after"}


def run_with_pending_call(app: RuntimeApplication) -> RuntimeEvent:
    """Run r1 declaring the T1 protocol, with a committed call c1 awaiting its dispatch; the
    dispatch event the generic path must never take."""
    app.open_session(SPINE.session_id, "/workspace")
    app.ledger.create_run(run_header(SPINE))
    app.ledger.append_event(RUN, EV.user(marker=TOOL_BOUNDARY_PROTOCOL_V1))
    call = RuntimeEvent.model_validate(EV.call("c1", "Write", ARGS))
    app.ledger.append_event(RUN, call.to_wire())
    return dispatch_fact(call, SPINE.operation_id("c1"), "never_auto_retry")


def dispatch_recorded(app: RuntimeApplication, dispatch: RuntimeEvent) -> RuntimeEventRecorded:
    """The stored fact of ``dispatch`` at the run's next version and event_seq."""
    run = app._store.load_run(RUN)
    return RuntimeEventRecorded(
        originator_id=run_stream_id(RUN),
        originator_version=run.version + 1,
        event_seq=run.high_water + 1,
        event_id=dispatch.id,
        payload=canonical_json(dispatch),
        committed_at=1.0,
    )


def test_save_of_a_dispatch_fact_is_refused_and_nothing_is_stored(
    store_app: RuntimeApplication, store_url: str
) -> None:
    dispatch = run_with_pending_call(store_app)
    with pytest.raises(ReservedFactError):
        store_app.ledger.append_event(RUN, dispatch.to_wire())
    before_events = store_app.read_run_events(RUN)
    before_rows = event_rows(store_url)
    fact = dispatch_recorded(store_app, dispatch)

    with pytest.raises(WritePathRefusedError) as refused:
        store_app._es.save(fact)

    assert refused.value.code == "write_path_refused"
    assert refused.value.detail == {"name": "save"}
    assert store_app.read_run_events(RUN) == before_events
    assert event_rows(store_url) == before_rows
    assert not [row for row in before_rows if dispatch.id.encode() in row[3]]
    fresh = RuntimeApplication.open(store_url)
    try:
        assert fresh.read_run_events(RUN) == before_events
    finally:
        fresh.close()


def _take_snapshot(app: RuntimeApplication) -> object:
    app._es.take_snapshot(run_stream_id(RUN))
    return None


def _notify(app: RuntimeApplication) -> object:
    app._es.notify([])
    return None


def _repository(app: RuntimeApplication) -> object:
    return app._es.repository.get(run_stream_id(RUN))


@pytest.mark.parametrize(
    ("name", "call"),
    [("take_snapshot", _take_snapshot), ("notify", _notify), ("repository", _repository)],
)
def test_every_other_inherited_writer_is_refused_and_writes_nothing(
    store_app: RuntimeApplication,
    store_url: str,
    name: str,
    call: Callable[[RuntimeApplication], object],
) -> None:
    """``take_snapshot`` would write eventsourcing's own snapshot rows; ``repository`` hands
    out the cache's own aggregates (the application keeps no deep copy), so changing one
    would change what the next command validates against; ``notify`` is a save hook that
    nothing calls any more."""
    run_with_pending_call(store_app)
    before = all_rows(store_url)
    with pytest.raises(WritePathRefusedError) as refused:
        call(store_app)
    assert (refused.value.code, refused.value.detail) == ("write_path_refused", {"name": name})
    assert all_rows(store_url) == before
    assert store_app.read_run_events(RUN)[-1].id == "call-c1"
