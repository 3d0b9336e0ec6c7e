"""Probes for tests: observe a store and the files around it, write what another writer leaves,
count a side effect.

:func:`store_snapshot` observes a store without changing it: the evidence behind "nothing was
written".

Why: a refusal is only honest if the store is byte-for-byte unchanged afterwards. A snapshot
records every stored row (notification id, stream, version, topic, state bytes) and, for a
SQLite file, the bytes of the database and its WAL. Compare snapshots before and after.

:func:`commit_unchecked` commits facts without any command's rules: states another writer can
leave behind.

Why a helper: eventsourcing's ``save`` is gone from ``RuntimeApplication`` and closed on the
eventsourcing application it holds (``write_path_refused``; ADR 0017 amendment of issue 20,
ADR 0039), because it committed whatever it was given. Tests still need the
states an older build, the reference runtime or a two-step claimer can leave in a store (a
claim without its start, an event no transition validator checked); they build them here,
through eventsourcing's generic save path, saying so by name.

:func:`leave_unstarted_claim` builds claims another writer left unstarted: the states startup
recovery's claim repair exists for.

Why a helper: maka_es's own executor writes the claim, the target run and its start in ONE
save, so it never leaves a claim without a started target. A two-step claimer (the reference
runtime, an importer, an older build) can: it commits the claim, maybe creates the target run
``created``, and dies before the start. Tests (in-process and the SIGKILL harness's parent)
build exactly that state here, through the real revalidation and the real facts.

Side-effect probe tools for crash tests (:func:`probe_tools`): they count every execution in a
log file.

Why: "the tool did not run twice" must be observed outside the process that might have run
it. Each probe appends one line per execution to ``<root>/executions.log`` (fsynced), so after
any number of crashes and recoveries the log tells exactly how often the side effect ran.

:class:`Outside` and :func:`symlinks_under` are the evidence for "nothing outside the root was
touched" when hostile symlinks are planted.

Why: a refusal of a planted symlink is only worth something if the file the link points to kept
its bytes *and* its modification time, nothing new appeared next to it, and no link below the
root was created, replaced or removed. :class:`Outside` is a directory outside the root under
test with a sentinel file whose mtimes are pinned to a fixed past instant, so even a rewrite
with identical bytes within one clock tick would show; :func:`symlinks_under` lists the links
below a root without following any.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from maka_es import failpoints
from maka_es.adapters.file_write import FileWriteArgs, file_write_tool
from maka_es.app import RuntimeApplication
from maka_es.continuation.claims import ContinuationClaim, ContinuationTarget, continuation_header
from maka_es.continuation.executor import ContinuationExecutor
from maka_es.errors import MakaError
from maka_es.ledger.model.facts import StoredFact
from maka_es.tooljournal.runtime import Tool, ToolContext

#: Gives the store setting (``RuntimeApplication.open``) of an empty store for one example of a
#: state machine; the machines' ``on_store`` takes one (a PostgreSQL schema, say).
FreshStore = Callable[[Path], str]


def sqlite_store_in(workdir: Path) -> str:
    """The machines' default fresh store: a new SQLite file in the example's ``workdir``."""
    return str(workdir / "runtime.sqlite")


@dataclass(frozen=True)
class StoreSnapshot:
    rows: tuple[tuple[int, str, int, str, bytes], ...]
    max_notification_id: int | None
    file_digests: tuple[tuple[str, str], ...]


def _file_digests(db_name: str | None) -> tuple[tuple[str, str], ...]:
    """SHA-256 of the database file and its ``-wal``. The database file is hashed by another
    process: closing any descriptor of it in this process would drop every POSIX lock this
    process holds on it, SQLite's included, and another process could then delete the WAL
    under this process's open connections."""
    if not db_name or ":memory:" in db_name or "mode=memory" in db_name:
        return ()
    digests = []
    database = Path(db_name)
    if database.exists():
        digests.append((database.name, _digest_elsewhere(database)))
    wal = Path(db_name + "-wal")  # SQLite locks the database file and -shm, never the -wal
    if wal.exists():
        digests.append((wal.name, hashlib.sha256(wal.read_bytes()).hexdigest()))
    return tuple(digests)


def _digest_elsewhere(path: Path) -> str:
    """SHA-256 of ``path`` computed by another process (``sha256sum``, else Python)."""
    tool = shutil.which("sha256sum")
    command = (
        [tool, str(path)] if tool is not None else [sys.executable, "-c", _HASH_FILE, str(path)]
    )
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return done.stdout.split()[0]


_HASH_FILE = (
    "import hashlib, sys\n"
    "with open(sys.argv[1], 'rb') as f: print(hashlib.file_digest(f, 'sha256').hexdigest())"
)


def store_snapshot(app: RuntimeApplication) -> StoreSnapshot:
    """Every stored row of ``app``'s store, plus SQLite file digests when file-backed."""
    rows: list[tuple[int, str, int, str, bytes]] = []
    start = 1
    while True:
        page = app._es.recorder.select_notifications(start=start, limit=1000)
        rows.extend(
            (n.id, str(n.originator_id), n.originator_version, n.topic, bytes(n.state))
            for n in page
        )
        if len(page) < 1000:
            break
        start = page[-1].id + 1
    db_name = (
        app.env.get("SQLITE_DBNAME")
        if "popo" not in app.env.get("PERSISTENCE_MODULE", "")
        else None
    )
    return StoreSnapshot(
        tuple(rows), app._es.recorder.max_notification_id(), _file_digests(db_name)
    )


def commit_unchecked(app: RuntimeApplication, *facts: StoredFact) -> None:
    """Commit ``facts`` in one transaction, as eventsourcing's ``Application.save`` did: no
    write rule, no ownership fence, no classification of a lost race."""
    app._store._save(facts)


def leave_unstarted_claim(
    app: RuntimeApplication,
    session_id: str,
    source_run_id: str,
    target: ContinuationTarget,
    *,
    claimed_at: int,
    create_target: bool,
) -> ContinuationClaim:
    """Commit a claim on the source's current boundary (and the source's seal); with
    ``create_target`` also the target run, header ``created``, without any event."""
    plan = app.plan_continuation(session_id, source_run_id)
    if plan.continuation is None:
        raise MakaError(f"the source does not continue: {list(plan.rejection_reasons)}")
    session = app.get_session(session_id)
    executor = ContinuationExecutor(app.claims, app.host_inspector, app.telemetry, app.tool_runtime)
    source_header, source, boundary, observation = executor.revalidate(
        plan.continuation, session_id, session.cwd
    )
    commit_unchecked(
        app,
        ContinuationClaim.create(boundary, target, f"{target.run_id}-start", claimed_at),
        source.decide_seal(boundary.claim_id, sealed_at=claimed_at),
    )
    if create_target:
        header = continuation_header(
            source_header,
            boundary,
            target,
            workspace_identity=observation.workspace_identity,
            claimed_at=claimed_at,
        )
        app.ledger.create_run(header)
    claim = app.claims.get_claim(boundary.claim_id)
    assert claim is not None
    return claim


#: Hit by the probes right after their side effect, before returning to the runtime.
AFTER_SIDE_EFFECT = "probe.after_side_effect"
EXECUTION_LOG = "executions.log"


def _append_durably(path: Path, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def executions(root: Path) -> list[str]:
    """Operation ids of every probe execution so far, in order."""
    log = root / EXECUTION_LOG
    return log.read_text().splitlines() if log.exists() else []


class AppendLineArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    line: str


def append_line_tool(
    root: Path, *, name: str = "AppendLine", mode: Any = "never_auto_retry"
) -> Tool[AppendLineArgs]:
    """Appends ``line`` to ``<root>/side-effect.txt`` (a non-idempotent side effect)."""

    def run(args: AppendLineArgs, context: ToolContext) -> dict[str, Any]:
        _append_durably(root / EXECUTION_LOG, context.operation_id + "\n")
        _append_durably(root / "side-effect.txt", args.line + "\n")
        failpoints.hit(AFTER_SIDE_EFFECT)
        return {"kind": "text", "text": "appended"}

    return Tool(name=name, input_model=AppendLineArgs, run=run, recovery_mode=mode)


def logged_file_write_tool(root: Path) -> Tool[FileWriteArgs]:
    """The shipped ``Write`` tool (with its reconciler), logging each execution."""
    inner = file_write_tool(root / "workspace")

    def run(args: FileWriteArgs, context: ToolContext) -> Any:
        _append_durably(root / EXECUTION_LOG, context.operation_id + "\n")
        result = inner.run(args, context)
        failpoints.hit(AFTER_SIDE_EFFECT)
        return result

    return Tool(
        name=inner.name,
        input_model=FileWriteArgs,
        run=run,
        recovery_mode="reconcile",
        reconciler=inner.reconciler,
    )


def probe_tools(root: Path) -> list[Tool[Any]]:
    """The tools the crash child registers (all logging into ``root``)."""
    return [append_line_tool(root), logged_file_write_tool(root)]


#: A fixed instant (2001-09-09) for every mtime in an :class:`Outside` tree.
PINNED_NS = 1_000_000_000 * 1_000_000_000

Entry = tuple[str, bytes, int]  # (kind, bytes of a file or target of a link, mtime ns)


@dataclass(frozen=True)
class Outside:
    """A directory that nothing under test may change; ``sentinel`` is a file in it."""

    path: Path
    sentinel: Path

    def snapshot(self) -> dict[str, Entry]:
        """Every entry below :attr:`path` (itself included), without following links."""
        entries: dict[str, Entry] = {}
        for directory, dirnames, filenames in os.walk(self.path, followlinks=False):
            for name in [".", *dirnames, *filenames]:
                full = Path(directory) / name
                info = full.lstat()
                key = str(full.relative_to(self.path))
                if stat.S_ISLNK(info.st_mode):
                    entries[key] = ("link", os.fsencode(os.readlink(full)), info.st_mtime_ns)
                elif stat.S_ISDIR(info.st_mode):
                    entries[key] = ("dir", b"", info.st_mtime_ns)
                else:
                    entries[key] = ("file", full.read_bytes(), info.st_mtime_ns)
        return entries

    def pin(self) -> None:
        """Set every mtime below :attr:`path` to :data:`PINNED_NS`."""
        for directory, dirnames, filenames in os.walk(self.path, followlinks=False):
            for name in [*dirnames, *filenames]:
                os.utime(Path(directory) / name, ns=(PINNED_NS, PINNED_NS), follow_symlinks=False)
        os.utime(self.path, ns=(PINNED_NS, PINNED_NS))


def make_outside(path: Path, content: bytes = b"sentinel: must never change\n") -> Outside:
    """Create ``path`` (outside every root under test) with a pinned sentinel file in it."""
    path.mkdir(parents=True)
    sentinel = path / "sentinel.txt"
    sentinel.write_bytes(content)
    outside = Outside(path, sentinel)
    outside.pin()
    return outside


def symlinks_under(root: Path) -> dict[str, str]:
    """``relative path -> link target`` of every symlink below ``root`` (none followed)."""
    links: dict[str, str] = {}
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        for name in [*dirnames, *filenames]:
            full = Path(directory) / name
            if full.is_symlink():
                links[str(full.relative_to(root))] = os.readlink(full)
    return links
