"""Import legacy JSONL ledgers into the event store, and export runs back to JSONL.

Why both directions: hosts migrating from the reference runtime's file store keep their history
(import is idempotent, so it can run at every start), and any run in the store can be handed
back to tools that read the reference layout, byte-compatibly (canonical JSON rows).

Neither direction goes through a symlink below the ledger root (``ledger_symlink_refused``). On
import such a link is refused, not read through and not skipped: the listing sees it before the
first run is imported, so a refused import leaves the store as it was, and a run that is only a
link away is never reported as imported or silently left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from maka_es.adapters.jsonl import JsonlLedger
from maka_es.ledger.service import AppendResult
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader


class LedgerIo(Protocol):
    """The ledger commands and reads import and export use (``RuntimeApplication`` has them)."""

    def import_run(
        self,
        header: RunHeader | Mapping[str, Any],
        events: Sequence[RuntimeEvent | Mapping[str, Any]],
    ) -> AppendResult: ...

    def get_run_header(self, run_id: str) -> RunHeader: ...

    def read_run_events(self, run_id: str) -> list[RuntimeEvent]: ...


@dataclass(frozen=True)
class ImportOutcome:
    runs: int
    appended: int
    retried: int


def import_jsonl_ledgers(app: LedgerIo, ledger: JsonlLedger) -> ImportOutcome:
    """Import every run found under the ledger root (sorted order). Each run is one save; a run
    that fails its gates raises and the runs after it are not imported. A symlink in the layout
    is refused while listing, before any run is imported."""
    runs = appended = retried = 0
    for session_id, run_id in ledger.list_runs():
        header = ledger.read_header(session_id, run_id)
        events = ledger.read_events(session_id, run_id)
        result = app.import_run(header, events)
        runs += 1
        appended += result.appended
        retried += result.retried
    return ImportOutcome(runs, appended, retried)


def export_jsonl_run(app: LedgerIo, ledger: JsonlLedger, run_id: str) -> None:
    """Write one run's header and committed ledger in the reference JSONL layout."""
    header = app.get_run_header(run_id)
    ledger.export_run(header.session_id, run_id, header, app.read_run_events(run_id))
