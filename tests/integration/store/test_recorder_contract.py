"""eventsourcing's own recorder contract, run against the project's SQLite recorder.

Why: maka_es replaces parts of eventsourcing's SQLite plumbing (a durable connection pool, a
recorder with a failpoint inside the write transaction). The library ships the test cases its
own recorders must pass; running them here proves the replacement is still a faithful
``ApplicationRecorder`` (insert/select, notification ids, concurrency), not merely one that
works for the paths maka_es happens to use.
"""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

import pytest
from eventsourcing.persistence import ApplicationRecorder
from eventsourcing.tests.persistence import ApplicationRecorderTestCase
from eventsourcing.utils import Environment

from maka_es.adapters.sqlite import Factory


class TestProjectSQLiteApplicationRecorder(ApplicationRecorderTestCase[ApplicationRecorder]):
    """The library's contract on a real SQLite file opened through the project's factory."""

    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self._factories: list[Factory] = []
        self._threads_before = set(threading.enumerate())

    def tearDown(self) -> None:
        # The library's concurrency tests do not join their reader threads: they may still be
        # inside a select when the store is closed here (the durable pool closes their
        # connection when they return it). Wait for them before the next test and before the
        # directory is removed, so no thread outlives the test that started it.
        for factory in self._factories:
            factory.close()
        for thread in set(threading.enumerate()) - self._threads_before:
            thread.join(timeout=30)
            assert not thread.is_alive(), f"thread {thread.name} did not stop"
        self._tmp.cleanup()

    def create_recorder(self) -> ApplicationRecorder:
        path = Path(self._tmp.name) / f"contract-{len(self._factories)}.sqlite"
        factory = Factory(Environment("maka_es", {"SQLITE_DBNAME": str(path)}))
        self._factories.append(factory)
        recorder = factory.application_recorder()
        assert isinstance(recorder, ApplicationRecorder)
        return recorder

    @pytest.mark.skip(reason="prints a timing only; performance is measured by make bench")
    def test_performance(self) -> None:
        """Nothing to check: the library's version only prints inserts per second."""
