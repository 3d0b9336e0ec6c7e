"""resume: see docs/architecture.md."""
