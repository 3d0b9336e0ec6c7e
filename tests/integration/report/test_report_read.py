"""The report's one reader (``report/read.py``) hands the page the fork service's own answer.

Why pinned: the fork provenance a report shows is what ``run_forks.provenance`` reports for the
fork's claim (ADR 0022, ADR 0030), not a copy re-listed field by field that could drift from
it; an ordinary continuation and the source run carry no fork provenance.
"""

from __future__ import annotations

from maka_es.report.read import read_session_report
from maka_es.wire.run_header import ContinuationSourceV2
from tests.integration.report.scenario import Store, open_app


def test_fork_provenance_is_the_fork_services_report(store: Store) -> None:
    with open_app(store.db) as app:
        data = read_session_report(app, "s1")
        edge = app.get_run_header(store.fork_run_id).continuation_source
        assert isinstance(edge, ContinuationSourceV2)
        expected = app.run_forks.provenance(edge.claim_id)
    forks = {run.header.run_id: run.fork for run in data.runs}
    assert expected is not None
    assert forks[store.fork_run_id] == expected
    assert (expected.source_run_id, expected.actor, expected.note) == (
        store.crashed_run_id,
        "alice",
        "not sent?",
    )
    assert forks[store.crashed_run_id] is None
    assert forks[store.continuation_run_id] is None
