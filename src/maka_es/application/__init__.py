"""Use cases: the eventsourcing application and its services."""
