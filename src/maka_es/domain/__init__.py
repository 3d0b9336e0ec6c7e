"""Pure domain layer: wire models, codec and aggregates. No I/O, clock or randomness."""
