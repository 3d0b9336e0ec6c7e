"""The continuation's pure model: the plan and its gates, the composite replay and its
boundary. No store, clock or I/O (ADR 0017).
"""
