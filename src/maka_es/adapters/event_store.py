"""The :class:`~maka_es.ledger.ports.RunStore` port on an eventsourcing application.

Why an adapter: eventsourcing gives the recorder (SQLite, PostgreSQL, in-memory), optimistic
concurrency on ``(originator_id, originator_version)``, an aggregate cache and the notification
log. This module is the only place the library's services meet those objects: it loads
aggregates with maka_es's projectors, saves a command's facts in one transaction, and turns a
lost race or a store fault into maka_es's typed errors (ADR 0014, ADR 0017).

One setting chooses the store: a PostgreSQL URL or a SQLite path (docs/configuration.md). Hosts,
the CLI and the test suite pass one string wherever a store is opened, and the same string names
the same store on every machine. ``postgresql://user:pw@host:port/db`` (or ``postgres://``)
becomes eventsourcing's ``POSTGRES_*`` environment for ``maka_es.adapters.postgres``; query
parameters ``schema``, ``connect_timeout``, ``pool_size``, ``max_overflow``, ``lock_timeout``
and ``statement_timeout_ms`` map to their settings. ``sqlite:///PATH`` names the SQLite file
``PATH`` (SQLAlchemy's form: ``sqlite:///rel.db`` is relative, ``sqlite:////abs/x.db``
absolute); any other ``scheme://`` is refused rather than taken as a file name; everything else
is a SQLite path (ADR 0028, amended).
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, ClassVar, Final, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit
from uuid import UUID

from eventsourcing.application import Application, Repository
from eventsourcing.persistence import (
    InfrastructureFactory,
    IntegrityError,
    Mapper,
    Notification,
    PersistenceError,
    Transcoder,
)
from eventsourcing.utils import Environment

from maka_es.adapters.fact_rows import (
    FactMapper,
    JsonTranscoder,
    RecorderFactWriter,
    SqliteFactWriter,
)
from maka_es.adapters.run_loader import (
    FAST_PATHS_ENV,
    PlainFactMapper,
    RunLoader,
    fast_paths_enabled,
)
from maka_es.adapters.run_snapshots import RunSnapshots
from maka_es.adapters.sqlite import FailpointSQLiteApplicationRecorder
from maka_es.continuation.claims import ContinuationClaim, project_claim
from maka_es.errors import (
    RunNotFoundError,
    SessionNotFoundError,
    StorePathError,
    StoreUnavailableError,
    WritePathRefusedError,
)
from maka_es.ledger.model.facts import (
    StoredFact,
    claim_stream_id,
    run_stream_id,
    session_stream_id,
)
from maka_es.ledger.model.run import Run
from maka_es.ledger.model.session import Session, project_session

A = TypeVar("A")
T = TypeVar("T")

#: Notifications read per page by a topic scan.
PAGE = 500

#: Aggregates each reading thread keeps for its own later reads (see :class:`CommandLock`).
READER_CACHE_MAXSIZE = 64


def epoch_ms(reading: float) -> int:
    """A clock reading as the integer milliseconds every library-written timestamp carries.

    Why integers: the reference writes ``Date.now()`` (whole milliseconds) into ``ts``,
    ``createdAt``, ``updatedAt``, ``completedAt`` and ``claimedAt``; a fractional value is a
    different wire fact. An injected clock may return fractions; they are floored here.
    """
    if isinstance(reading, bool) or not math.isfinite(reading):
        raise ValueError(f"the clock must return finite milliseconds, not {reading!r}")
    return math.floor(reading)


class EventStoreApplication(Application[UUID]):
    """The eventsourcing ``Application`` a :class:`~maka_es.app.RuntimeApplication` holds.

    Why held and not inherited (ADR 0039): eventsourcing gives the recorder, the optimistic
    concurrency on ``(originator_id, originator_version)``, the aggregate cache and the
    notification log, but its own public names (``save``, ``repository``, ``take_snapshot``,
    ``recorder.insert_events``) write or hand out cached aggregates without maka_es's write
    rules. This object is reached only through ``RuntimeApplication._es``, by the adapters,
    the testing kit and the tests; its writers refuse with ``write_path_refused`` all the same.
    """

    name = "maka_es"
    env: ClassVar[dict[str, str]] = {
        "PERSISTENCE_MODULE": "maka_es.adapters.sqlite",
        "SQLITE_DBNAME": "maka_es.sqlite",
        "AGGREGATE_CACHE_MAXSIZE": "256",
        "AGGREGATE_CACHE_FASTFORWARD": "y",
        "DEEPCOPY_FROM_AGGREGATE_CACHE": "n",
    }

    def construct_factory(self, env: Environment) -> InfrastructureFactory[Any]:
        """eventsourcing's PostgreSQL module, when named, is taken with maka_es's durability
        and typed faults (``maka_es.adapters.postgres``; ADR 0028)."""
        if env.get("PERSISTENCE_MODULE") == "eventsourcing.postgres":
            env["PERSISTENCE_MODULE"] = POSTGRES_MODULE
        return super().construct_factory(env)

    def construct_transcoder(self) -> Transcoder:
        return JsonTranscoder()

    def construct_mapper(self) -> Mapper[UUID]:
        """The fact mapper; with the fast paths off (``MAKA_ES_FAST_PATHS=n``) the plain one,
        which decodes every row generically and reads every event strictly (ADR 0037)."""
        fast = fast_paths_enabled(self.env.get(FAST_PATHS_ENV))
        return (FactMapper if fast else PlainFactMapper)(
            transcoder=self.construct_transcoder(),
            cipher=self.factory.cipher(),
            compressor=self.factory.compressor(),
        )

    # ``Application`` saves anything it is given and hands out the shared cached aggregates;
    # maka_es writes only through its commands (docs/reference/ledger.md#write-rules). These
    # names are closed; the store adapter below uses the private parts.

    def save(self, *objs: Any, **kwargs: Any) -> Any:
        """Refused (``write_path_refused``): it would commit facts no command validated."""
        raise _refused("save")

    def take_snapshot(self, *args: Any, **kwargs: Any) -> None:
        """Refused: maka_es writes its own verified Run snapshots (ADR 0032)."""
        raise _refused("take_snapshot")

    def notify(self, new_events: Any) -> None:
        """Refused: nothing calls this deprecated hook; a host overrides
        ``RuntimeApplication.on_events_committed``."""
        raise _refused("notify")

    @property
    def repository(self) -> Repository[UUID]:
        """Refused: its aggregates are the cache's own objects (no deep copy), so a caller
        could change what every later command validates against."""
        raise _refused("repository")


def _refused(name: str) -> WritePathRefusedError:
    return WritePathRefusedError(
        f"the store's eventsourcing application {name} is closed: it bypasses maka_es's "
        "write rules; use the application's commands",
        detail={"name": name},
    )


class CommandLock:
    """The store's command lock, which knows whether the calling thread holds it.

    Why it must know: the aggregate cache is the commands' state. A command loads its
    aggregates once under this lock, checks and decides on them, and saves; only a load under
    the lock may advance a cached aggregate, so nothing changes the state a command decided on
    before its save, and the versions it writes are the ones its checks saw. A load by a thread
    that does not hold the lock (a reader) gets that thread's own aggregate instead and never
    touches the cache (ADR 0021, ADR 0026, amendments of issue 20).
    """

    __slots__ = ("_depth", "_lock", "_owner")

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._owner: int | None = None
        self._depth = 0

    def __enter__(self) -> CommandLock:
        self._lock.acquire()
        self._entered()
        return self

    def try_enter(self) -> bool:
        """Enter without waiting (``False``: another thread is inside a command)."""
        if not self._lock.acquire(blocking=False):
            return False
        self._entered()
        return True

    def _entered(self) -> None:
        self._owner = threading.get_ident()
        self._depth += 1

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if not self._depth:
            self._owner = None
        self._lock.release()

    def held(self) -> bool:
        """The calling thread is inside a command (another thread's ident never matches)."""
        return self._owner == threading.get_ident()


class EventSourcedRunStore:
    """Implements ``RunStore`` (and the recovery read model's source) over ``app``."""

    def __init__(self, app: Application[UUID], clock: Callable[[], float]) -> None:
        self._app = app
        self._clock = clock
        # Commands are pure until save; the lock keeps one process's read-validate-save
        # sequences from interleaving on the shared aggregate cache, which only a command
        # advances (CommandLock); each reading thread keeps aggregates of its own.
        self._lock = CommandLock()
        self._readers = threading.local()
        #: How streams are loaded: the plain path and the fast paths (ADR 0037).
        self.loader = RunLoader(app, fast_paths=fast_paths_enabled(app.env.get(FAST_PATHS_ENV)))
        #: The dedicated writer of a command's facts (ADR 0033); the recorder's own
        #: ``insert_events`` when the fast paths are off.
        self._write: Callable[[Sequence[StoredFact]], object] = (
            SqliteFactWriter(app.recorder, app.mapper).write
            if self.loader.fast_paths
            and isinstance(app.recorder, FailpointSQLiteApplicationRecorder)
            else RecorderFactWriter(app.recorder, app.mapper).write
        )

    @property
    def snapshots(self) -> RunSnapshots | None:
        """Run snapshots (ADR 0032); ``None`` for the in-memory store and the plain loader."""
        return self.loader.snapshots

    @property
    def fast_paths(self) -> bool:
        """The fast paths are on (the loader's switch, ADR 0037)."""
        return self.loader.fast_paths

    def now_ms(self) -> int:
        return epoch_ms(self._clock())

    def command(self) -> contextlib.AbstractContextManager[object]:
        return self._lock

    # -- loading --------------------------------------------------------------------------------

    def _repository(self) -> Repository[UUID]:
        """The commands' repository (its cache is the aggregate cache) inside a command; else
        this reading thread's own, whose aggregates no other thread sees."""
        if self._lock.held():
            return self._app._repository
        repository: Repository[UUID] | None = getattr(self._readers, "repository", None)
        if repository is None:
            repository = Repository(
                self._app.events,
                cache_maxsize=READER_CACHE_MAXSIZE,
                fastforward=True,
                deepcopy_from_cache=False,
            )
            self._readers.repository = repository
        return repository

    def load_run(self, run_id: str) -> Run:
        run = self.loader.load_run(self._repository(), run_stream_id(run_id))
        if run is None:
            raise RunNotFoundError(f"run {run_id} not found", detail={"runId": run_id})
        return run

    def read_run(self, run_id: str, view: Callable[[Run], T]) -> T:
        """``view`` of the run, on the commands' state while no command runs (the lock is
        taken without waiting: a read never waits for a command, a command waits for one view
        at most, and nothing changes the state under either), else on this thread's own
        aggregate (:meth:`_repository`)."""
        if not self._lock.try_enter():
            return view(self.load_run(run_id))
        try:
            return view(self.load_run(run_id))
        finally:
            self._lock.__exit__()

    def load_session(self, session_id: str) -> Session:
        session = self.load(session_stream_id(session_id), project_session)
        if session is None:
            raise SessionNotFoundError(
                f"session {session_id} not found", detail={"sessionId": session_id}
            )
        return session

    def load(
        self, stream_id: UUID, projector: Callable[[A | None, Iterable[Any]], A | None]
    ) -> A | None:
        return self.loader.load(self._repository(), stream_id, projector)

    def get_claim(self, claim_id: str) -> ContinuationClaim | None:
        return self.load(claim_stream_id(claim_id), project_claim)

    def stream_exists(self, stream_id: UUID) -> bool:
        return bool(self._app.recorder.select_events(stream_id, limit=1))

    def first_fact(self, stream_id: UUID) -> StoredFact | None:
        """Version 1 of a stream, from the recorder (never the cache: it keeps no history)."""
        rows = self._app.recorder.select_events(stream_id, limit=1)
        if not rows:
            return None
        fact = self._app.mapper.to_domain_event(rows[0])
        assert isinstance(fact, StoredFact)  # the FactMapper only decodes maka_es facts
        return fact

    # -- saving ---------------------------------------------------------------------------------

    def commit(self, facts: Sequence[StoredFact], *, conflict: Callable[[], Exception]) -> None:
        """Save ``facts`` in ONE transaction (every command's single write).

        A uniqueness violation means another writer got there first: the involved streams are
        evicted from the cache (never reused: eventsourcing would write a version gap) and
        ``conflict()`` classifies the refusal. Any other persistence failure is a typed
        ``StoreUnavailableError``; in both cases nothing of the transaction was written.
        """
        try:
            self._write(facts)
        except IntegrityError as exc:
            self._evict(*{fact.originator_id for fact in facts})
            raise conflict() from exc
        except StoreUnavailableError:
            self._evict(*{fact.originator_id for fact in facts})
            raise
        except PersistenceError as exc:
            self._evict(*{fact.originator_id for fact in facts})
            raise StoreUnavailableError(
                f"the store refused the write: {type(exc).__name__}: {exc}",
                detail={"errorClass": type(exc).__name__},
            ) from exc
        self.loader.committed(facts)

    def _save(self, facts: Sequence[StoredFact]) -> None:
        """eventsourcing's generic save path (its event store's ``put``, which
        ``Application.save`` records through): the reference the writers' rows are compared
        with (tests/integration/adapters/test_fact_writer.py, ADR 0033)."""
        self._app.events.put(list(facts))

    def _evict(self, *stream_ids: UUID) -> None:
        self.loader.evict(*stream_ids)

    # -- the notification log -------------------------------------------------------------------

    def max_notification_id(self) -> int:
        """The last notification id committed so far (0: an empty log): where a recovery-status
        catch-up batch ends."""
        return self._app.recorder.max_notification_id() or 0

    def select_notifications(self, start: int, limit: int) -> Sequence[Notification]:
        return self._app.recorder.select_notifications(start=start, limit=limit)

    def to_fact(self, notification: Notification) -> StoredFact:
        fact = self._app.mapper.to_domain_event(notification)
        assert isinstance(fact, StoredFact)  # the FactMapper only decodes maka_es facts
        return fact

    def facts_with_topic(self, topic: str) -> Iterator[StoredFact]:
        """Every stored fact of one topic, in notification order (a paged log scan)."""
        start = 1
        while True:
            page = self._app.recorder.select_notifications(start=start, limit=PAGE, topics=[topic])
            for notification in page:
                yield self.to_fact(notification)
            if len(page) < PAGE:
                return
            start = page[-1].id + 1


POSTGRES_MODULE: Final = "maka_es.adapters.postgres"

#: ``y``: every connection's transactions are read-only in the server itself, the PostgreSQL
#: counterpart of SQLite's ``mode=ro`` (``RuntimeApplication.open(url, read_only=True)``).
READ_ONLY_ENV: Final = "MAKA_PG_READ_ONLY"
_SCHEMES: Final = ("postgresql", "postgres")
_SQLITE_PREFIX: Final = "sqlite:///"
#: RFC 3986's scheme, followed by ``://``: ``C:\\x`` or ``./a:b`` are paths, not URLs.
_URL_SCHEME: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")

_QUERY_KEYS: Final = {
    "schema": "POSTGRES_SCHEMA",
    "connect_timeout": "POSTGRES_CONNECT_TIMEOUT",
    "pool_size": "POSTGRES_POOL_SIZE",
    "max_overflow": "POSTGRES_MAX_OVERFLOW",
    "lock_timeout": "POSTGRES_LOCK_TIMEOUT",
    "statement_timeout_ms": "MAKA_PG_STATEMENT_TIMEOUT_MS",
}


def is_postgres_url(store: str) -> bool:
    """Whether ``store`` names a PostgreSQL server (else it is a SQLite path)."""
    return store.partition("://")[0].lower() in _SCHEMES and "://" in store


def store_scheme(store: str) -> str | None:
    """The URL scheme of ``store`` in lower case, ``None`` for a plain SQLite path."""
    match = _URL_SCHEME.match(store)
    return match.group(1).lower() if match else None


def sqlite_path_of(store: str) -> str:
    """The SQLite file a store setting that is no PostgreSQL URL names: a plain path as is,
    ``sqlite:///PATH`` as ``PATH`` (taken literally: no host, no query, no percent-decoding).

    Why a refusal for another scheme: ``mysql://h/db`` taken as a path would create a SQLite
    file ``mysql:/h/db`` (or fail on its missing directory) instead of saying what is wrong.
    ``store_path_unusable`` with ``detail.reason`` ``unsupported_scheme`` or ``bad_sqlite_url``.
    """
    scheme = store_scheme(store)
    if scheme is None:
        return store
    if scheme != "sqlite":
        raise StorePathError(
            f"a store URL with the scheme {scheme!r} is not supported: use a SQLite path, "
            "sqlite:///PATH, or postgresql://user:pw@host:port/db",
            detail={"reason": "unsupported_scheme", "scheme": scheme},
        )
    path = store[len(_SQLITE_PREFIX) :] if store.lower().startswith(_SQLITE_PREFIX) else ""
    if not path or "?" in path:
        raise StorePathError(
            f"{store!r} is no SQLite URL this library reads: write sqlite:///relative.db or "
            "sqlite:////absolute/path.db (no host, no query)",
            detail={"reason": "bad_sqlite_url", "path": store},
        )
    return path


def redact_store_url(store: str) -> str:
    """``store`` without its password, for messages and logs."""
    if not is_postgres_url(store):
        return store
    parts = urlsplit(store)
    host = parts.hostname or ""
    port = f":{parts.netloc.rpartition(':')[2]}" if ":" in parts.netloc.rpartition("@")[2] else ""
    user = f"{parts.username}@" if parts.username else ""
    return f"{parts.scheme}://{user}{host}{port}{parts.path}"


def postgres_env_from_url(store: str) -> dict[str, str]:
    """eventsourcing's environment for the PostgreSQL store at the URL ``store``."""
    try:
        parts = urlsplit(store)
        port = parts.port
    except ValueError as exc:
        raise _bad_url(store, str(exc)) from exc
    dbname = unquote(parts.path.lstrip("/"))
    if not parts.hostname or not dbname or not parts.username:
        raise _bad_url(store, "a host, a user and a database name are required")
    env = {
        "PERSISTENCE_MODULE": POSTGRES_MODULE,
        "POSTGRES_HOST": unquote(parts.hostname),
        "POSTGRES_PORT": str(port or 5432),
        "POSTGRES_USER": unquote(parts.username),
        "POSTGRES_PASSWORD": unquote(parts.password or ""),
        "POSTGRES_DBNAME": dbname,
    }
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key not in _QUERY_KEYS:
            raise _bad_url(store, f"unknown parameter {key!r}")
        env[_QUERY_KEYS[key]] = value
    _require_driver(store)
    return env


def _require_driver(store: str) -> None:
    """psycopg 3 and its pool are the ``postgres`` extra: without them a PostgreSQL store is a
    typed refusal that says what to install, not an ImportError from deep in eventsourcing."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise StoreUnavailableError(
            f"cannot open the store {redact_store_url(store)!r}: the PostgreSQL driver is not "
            f"installed ({exc.name}); install maka_es[postgres]",
            detail={"reason": "driver_missing", "store": redact_store_url(store)},
        ) from exc


def _bad_url(store: str, why: str) -> StoreUnavailableError:
    return StoreUnavailableError(
        f"cannot open the store {redact_store_url(store)!r}: {why}",
        detail={"reason": "bad_store_url", "store": redact_store_url(store)},
    )
