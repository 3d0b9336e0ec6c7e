"""continuation: see docs/architecture.md."""
