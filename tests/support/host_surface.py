"""The host surface's plumbing, by the service attribute that documents it (ADR 0039).

Why one table: the entry-point tables of the store-fault, id-argument and facade tests cover
the host's verbs and this plumbing; each checks that its table names all of them, so a verb
moved between the host and a service fails there until the table follows.
"""

from __future__ import annotations

import inspect

from maka_es.app import RuntimeApplication, ToolJournalService
from maka_es.continuation.claims import Claims
from maka_es.ledger.host_leases import HostLeases
from maka_es.ledger.service import Ledger, RunStarts

#: Service attribute -> (its type, the plumbing a host or tool reaches on it).
PLUMBING: dict[str, tuple[type, frozenset[str]]] = {
    "ledger": (
        Ledger,
        frozenset(
            {
                "append_event",
                "append_events",
                "create_run",
                "import_run",
                "update_run_header",
                "run_high_water",
                "read_run_payloads",
                "all_run_ids",
                "list_all_runs",
            }
        ),
    ),
    "run_starts": (RunStarts, frozenset({"create_run_with_events"})),
    "tool_journal": (
        ToolJournalService,
        frozenset(
            {
                "commit_tool_prepared",
                "commit_tool_outcome",
                "commit_tool_recovery_bundle",
                "tool_operations",
                "resolve_run",
                "attestations",
            }
        ),
    ),
    "claims": (
        Claims,
        frozenset(
            {
                "get_claim",
                "claim_exists",
                "all_claims",
                "continuation_start_record",
                "create_claimed_run",
                "start_claimed_run",
            }
        ),
    ),
    "ownership": (HostLeases, frozenset({"lease"})),
}


def plumbing_names() -> set[str]:
    """Every plumbing entry as ``service.method`` (the tables' key for it)."""
    return {f"{service}.{name}" for service, (_, names) in PLUMBING.items() for name in names}


def host_public_names() -> set[str]:
    """The public names of the host class (``dir``: inherited ones included)."""
    return {name for name in dir(RuntimeApplication) if not name.startswith("_")}


def entries_taking(parameters: set[str], cls: type = RuntimeApplication) -> set[str]:
    """The public functions of ``cls`` (the application or its asyncio facade) and the
    plumbing whose signature names one of ``parameters`` (the facade's service attributes have
    the application's methods and parameters, tests/unit/test_async_surface.py)."""
    found = {
        name
        for name, function in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_") and parameters & set(inspect.signature(function).parameters)
    }
    for service, (service_type, names) in PLUMBING.items():
        for name in names:
            signature = inspect.signature(getattr(service_type, name))
            if parameters & set(signature.parameters):
                found.add(f"{service}.{name}")
    return found
