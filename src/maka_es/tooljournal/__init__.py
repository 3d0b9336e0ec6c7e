"""tooljournal: see docs/architecture.md."""
