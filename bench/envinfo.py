"""The environment line of docs/benchmarks.md: what the figures were measured on."""

from __future__ import annotations

import os
import platform
import sqlite3
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from bench.stores import pragmas

PACKAGES = (
    "maka_es",
    "eventsourcing",
    "pydantic",
    "langgraph",
    "langgraph-checkpoint-sqlite",
    "dbos",
    "pyinstrument",
)


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def environment(folder: Path) -> str:
    """CPU count and load, Python, SQLite, package versions, and the pragmas read back from a
    maka_es store opened the way the workloads open theirs."""
    folder.mkdir(parents=True, exist_ok=True)
    read_back = pragmas(folder / "pragmas.sqlite")
    packages = ", ".join(f"{name} {package_version(name)}" for name in PACKAGES)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} CPUs ({platform.machine()}, {platform.system()} {platform.release()}), "
        f"load average at start {load} (1, 5, 15 min: the machine is shared); "
        f"Python {platform.python_version()}; SQLite {sqlite3.sqlite_version}; {packages}; "
        f"maka_es store pragmas read back: journal_mode={read_back['journal_mode']}, "
        f"synchronous={read_back['synchronous']}"
    )
