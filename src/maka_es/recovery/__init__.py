"""recovery: see docs/architecture.md."""
