"""Store-free tests of the Session aggregate: opening and registering runs return facts,
the projector rebuilds the same session, and a corrupt stream is refused
(docs/reference/ledger.md#streams)."""

from __future__ import annotations

import pytest

from maka_es.errors import StoreCorruptionError
from maka_es.ledger.model.facts import RunCreated, RunRegistered, SessionOpened, session_stream_id
from maka_es.ledger.model.session import Session, SessionRunEntry, project_session


def _opened() -> SessionOpened:
    return Session.open("s1", "/workspace", "ws-1", 1000)


def test_open_is_version_one_of_the_sessions_stream() -> None:
    opened = _opened()
    assert opened.originator_id == session_stream_id("s1")
    assert opened.originator_version == 1
    session = Session(opened)
    assert (session.session_id, session.cwd, session.workspace_identity) == (
        "s1",
        "/workspace",
        "ws-1",
    )
    assert (session.version, session.runs) == (1, ())


def test_register_run_returns_the_next_fact_without_mutating() -> None:
    session = Session(_opened())
    fact = session.register_run("r1", 1001)
    assert isinstance(fact, RunRegistered)
    assert (fact.originator_id, fact.originator_version, fact.run_id) == (session.id, 2, "r1")
    assert (session.version, session.runs) == (1, ())
    session.apply(fact)
    session.apply(session.register_run("r2", 1002))
    assert session.runs == (SessionRunEntry("r1", 1001), SessionRunEntry("r2", 1002))
    assert session.version == 3


def test_projector_rebuild_equals_the_incrementally_applied_session() -> None:
    live = Session(_opened())
    log: list[SessionOpened | RunRegistered] = [_opened()]
    for n in range(3):
        fact = live.register_run(f"r{n}", 1000 + n)
        live.apply(fact)
        log.append(fact)
    rebuilt = project_session(None, log)
    assert rebuilt is not None
    assert (rebuilt.version, rebuilt.runs, rebuilt.cwd) == (live.version, live.runs, live.cwd)
    assert project_session(None, []) is None
    partial = project_session(None, log[:2])
    assert partial is not None
    assert project_session(partial, log[2:]) is partial
    assert partial.runs == live.runs


def test_a_corrupt_session_stream_is_refused() -> None:
    session = Session(_opened())
    registered = session.register_run("r1", 1)
    with pytest.raises(StoreCorruptionError):
        project_session(None, [registered])  # no SessionOpened first
    gap = RunRegistered(originator_id=session.id, originator_version=3, run_id="r1", created_at=1)
    with pytest.raises(StoreCorruptionError):
        session.apply(gap)
    stranger = RunCreated(originator_id=session.id, originator_version=2, header={}, created_at=1)
    with pytest.raises(StoreCorruptionError):
        session.apply(stranger)
    assert (session.version, session.runs) == (1, ())
