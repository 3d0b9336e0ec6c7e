"""Recovery's pure model: the recovery reason and the recovery-status rows. No store, clock
or I/O (ADR 0017).
"""
