"""adapters: see docs/architecture.md."""
