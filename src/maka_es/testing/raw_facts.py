"""Facts committed without any command's rules: states another writer can leave behind.

Why a helper: eventsourcing's ``save`` is gone from ``RuntimeApplication`` and closed on the
eventsourcing application it holds (``write_path_refused``; ADR 0017 amendment of issue 20,
ADR 0039), because it committed whatever it was given. Tests still need the
states an older build, the reference runtime or a two-step claimer can leave in a store (a
claim without its start, an event no transition validator checked); they build them here,
through eventsourcing's generic save path, saying so by name.
"""

from __future__ import annotations

from maka_es.app import RuntimeApplication
from maka_es.ledger.facts import StoredFact


def commit_unchecked(app: RuntimeApplication, *facts: StoredFact) -> None:
    """Commit ``facts`` in one transaction, as eventsourcing's ``Application.save`` did: no
    write rule, no ownership fence, no classification of a lost race."""
    app._store._save(facts)
