"""The bench's fixture cache (bench/cache.py, ADR 0027 "Fixtures"): an entry is reused only
while the code that wrote it and its parameters are the same; a build that did not finish is
never taken for a fixture. No timing is asserted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bench.cache import MANIFEST, WRITERS, cached, code_digest, entry_name


@pytest.fixture
def sources(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of a library package and of the fixture writers, to edit freely."""
    package, bench = tmp_path / "maka_es", tmp_path / "bench"
    (package / "ledger").mkdir(parents=True)
    (package / "__init__.py").write_text("VERSION = 1\n")
    (package / "ledger" / "run.py").write_text("def apply(): ...\n")
    bench.mkdir()
    for name in WRITERS:
        (bench / name).write_text(f"# {name}\n")
    return package, bench


def test_the_digest_changes_with_any_library_module_or_fixture_writer(
    sources: tuple[Path, Path],
) -> None:
    package, bench = sources
    before = code_digest(package, bench)
    assert code_digest(package, bench) == before  # stable while nothing changes
    (package / "ledger" / "run.py").write_text("def apply(): return 1\n")
    after_library = code_digest(package, bench)
    writers = (*WRITERS, "recovery_store.py")
    (bench / "recovery_store.py").write_text("# its own builder\n")
    assert code_digest(package, bench) == after_library  # not a writer of every kind
    with_builder = code_digest(package, bench, writers)
    (bench / "recovery_store.py").write_text("# changed\n")
    assert code_digest(package, bench, writers) != with_builder
    (bench / "fixtures.py").write_text("# changed\n")
    after_writer = code_digest(package, bench)
    (package / "ledger" / "snapshot.py").write_text("\n")  # a new module counts too
    after_new_module = code_digest(package, bench)
    assert len({before, after_library, after_writer, after_new_module}) == 4


def test_the_installed_library_is_hashed_whole() -> None:
    import maka_es

    root = Path(maka_es.__file__).resolve().parent
    assert code_digest() == code_digest(root)
    assert len(list(root.rglob("*.py"))) > 50  # the whole package, not a chosen subset


def test_the_entry_name_has_a_part_for_the_parameters_and_one_for_the_code() -> None:
    a = entry_name("recovery", {"runs": 10}, digest="one")
    assert a == entry_name("recovery", {"runs": 10}, digest="one")
    other_params = entry_name("recovery", {"runs": 20}, digest="one")
    other_code = entry_name("recovery", {"runs": 10}, digest="two")
    assert a.rsplit("-", 1)[0] == other_code.rsplit("-", 1)[0] != other_params.rsplit("-", 1)[0]
    assert len({a, other_params, other_code}) == 3


def _builder(calls: list[Path], text: str = "store") -> Callable[[Path], None]:
    def build(folder: Path) -> None:
        calls.append(folder)
        (folder / "maka.sqlite").write_text(text)

    return build


def test_an_entry_is_built_once_then_reused(tmp_path: Path) -> None:
    calls: list[Path] = []
    folder, built = cached(tmp_path, "recovery", {"runs": 10}, _builder(calls), digest="v1")
    again, reused = cached(tmp_path, "recovery", {"runs": 10}, _builder(calls), digest="v1")
    assert built is not None
    assert reused is None
    assert again == folder
    assert len(calls) == 1
    assert (folder / "maka.sqlite").read_text() == "store"
    assert '"runs": 10' in (folder / MANIFEST).read_text()


def test_changed_code_rebuilds_and_drops_only_the_stale_entry(tmp_path: Path) -> None:
    calls: list[Path] = []
    old, _ = cached(tmp_path, "recovery", {"runs": 10}, _builder(calls, "old"), digest="v1")
    small, _ = cached(tmp_path, "recovery", {"runs": 2}, _builder(calls, "small"), digest="v1")
    new, built = cached(tmp_path, "recovery", {"runs": 10}, _builder(calls, "new"), digest="v2")
    assert built is not None
    assert new != old
    assert len(calls) == 3
    assert (new / "maka.sqlite").read_text() == "new"
    assert not old.exists()  # the stale store is gone: it can never be picked up again
    assert (small / "maka.sqlite").read_text() == "small"  # another size is kept


def test_a_build_that_failed_leaves_no_entry(tmp_path: Path) -> None:
    def broken(folder: Path) -> None:
        (folder / "maka.sqlite").write_text("half")
        raise RuntimeError("killed mid-build")

    with pytest.raises(RuntimeError, match="mid-build"):
        cached(tmp_path, "recovery", {"runs": 10}, broken, digest="v1")
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".partial")] == []
    calls: list[Path] = []
    folder, built = cached(tmp_path, "recovery", {"runs": 10}, _builder(calls), digest="v2")
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]  # the leftovers are gone
    assert built is not None
    assert len(calls) == 1
    assert (folder / "maka.sqlite").read_text() == "store"
