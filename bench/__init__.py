"""``make bench``: maka_es against the raw fsync floor, LangGraph and DBOS (ADR 0027).

Why a package outside ``src/``: the peers come from the optional ``bench`` extra and must
never be importable from the library. One module per workload; each returns
:class:`bench.core.Figure` rows that :mod:`bench.report` renders into ``docs/benchmarks.md``.
"""
