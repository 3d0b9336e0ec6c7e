"""One scenario store per module: building it runs recovery, a fork and a continuation."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.report.scenario import Store, build_store


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return build_store(tmp_path_factory.mktemp("report") / "runtime.sqlite")


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    return tmp_path
