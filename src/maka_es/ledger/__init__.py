"""ledger: see docs/architecture.md."""
