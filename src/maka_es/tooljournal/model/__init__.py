"""The tool journal's pure model: tools and their recovery modes, the operation state, the
scanner, the resolver, recovery bundles and attestations. No store, clock or I/O (ADR 0017).
"""
