"""The ledger's pure model: the Run aggregate, its facts and snapshot form, ownership, the
Session, host configuration. No store, clock or I/O (ADR 0017).
"""
