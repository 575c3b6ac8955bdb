"""Engines, SQLite pragmas, migrations and the bulk-write/look-up primitives per dialect."""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Engine, Float, create_engine, event, inspect, literal_column
from sqlalchemy.engine import Connection
from sqlalchemy.engine.url import make_url
from sqlalchemy.exc import OperationalError

from contam.app.errors import ConfigError

if TYPE_CHECKING:  # Alembic is imported where migrations are read: a Ray worker or a look-up never needs it
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


SQLITE_CACHE_MIB = 256  # the page cache of the indexer's one bulk-writing connection (README)
SQLITE_POOL_CACHE_MIB = 32  # the page cache a process's pooled connections share (look-ups, reports)
SQLITE_CONNECTIONS = 8  # a process's pooled connections to one SQLite file; more requests wait for one
SQLITE_BUSY_MS = 60_000  # a writer waits this long for another's write lock before giving up
WRITE = {"sqlite_begin": "IMMEDIATE"}  # execution options of a connection that reads before it writes


def make_engine(url: str, existing: bool = False) -> Engine:
    """An engine for `url`; SQLite files get WAL, 64 KiB pages, a page cache bounded per process
    and transactions begun explicitly (see `writing`). existing: an SQLite file the engine never
    creates (one moved or deleted while in use is an error, not a new, empty database)."""
    parsed = make_url(url)
    backend, driver = parsed.get_backend_name(), parsed.drivername.partition("+")[2]
    if backend in DRIVERS and driver and driver not in DRIVERS[backend]:  # psycopg2, asyncpg, aiosqlite
        raise ConfigError(
            f"unsupported database driver +{driver} in {parsed.render_as_string(hide_password=True)!r}: use "
            + ("sqlite:///PATH" if backend == "sqlite" else "postgresql://... (psycopg 3, installed with contam)")
        )
    if backend == "sqlite":
        return _sqlite_engine(url, parsed.database, existing)
    if backend == "postgresql":
        if parsed.drivername in ("postgresql", "postgres"):
            parsed = parsed.set(drivername="postgresql+psycopg")
        return create_engine(parsed, pool_pre_ping=True)
    raise ConfigError(  # the password hidden, as in every other message (it was shown whole)
        f"unsupported database URL {parsed.render_as_string(hide_password=True)!r}: "
        + (
            "write postgresql://, not postgres://"
            if backend == "postgres"
            else "use sqlite:///PATH or postgresql://..."
        )
    )


DRIVERS = {"sqlite": ("pysqlite",), "postgresql": ("psycopg",)}  # a URL's +driver, if it names one
GONE = "is gone (moved or deleted while in use)"  # what a connection to a file no longer there says


def _never_create(engine: Engine, path: Path) -> None:
    """A new connection to a file moved or deleted under a running server made a new, empty
    database at its path, which the next start served as an empty index (an operator's trial)."""

    @event.listens_for(engine, "do_connect")
    def _there(_dialect: Any, _record: Any, _cargs: Any, _cparams: Any) -> None:
        if not path.exists():
            raise sqlite3.OperationalError(
                f"the database file {path} {GONE}: put it back, or point CONTAM_DATABASE_URL (--db) at where "
                "it is now and start again"
            )


def _sqlite_engine(url: str, database: str | None, existing: bool = False) -> Engine:
    if database and database != ":memory:":
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        url,
        connect_args={"timeout": SQLITE_BUSY_MS / 1000, "check_same_thread": False},
        # Each connection has a page cache of its own: a bounded pool shares SQLITE_POOL_CACHE_MIB.
        pool_size=SQLITE_CONNECTIONS,
        max_overflow=0,
        pool_timeout=SQLITE_BUSY_MS / 1000,
    )

    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the sqlite3 module, decide when transactions begin.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        for pragma in (
            # Only takes effect when the file is created (before WAL is switched on). Large
            # pages make bulk inserts into the posting B-trees faster (README, "Where the time goes").
            "page_size=65536",
            "journal_mode=WAL",
            "synchronous=NORMAL",
            "foreign_keys=ON",
            f"cache_size=-{SQLITE_POOL_CACHE_MIB * 1024 // SQLITE_CONNECTIONS}",  # KiB: the process's share
            "temp_store=MEMORY",
            f"busy_timeout={SQLITE_BUSY_MS}",
        ):
            cur.execute(f"PRAGMA {pragma}")
        cur.close()

    if existing and database and database != ":memory:" and not database.startswith("file:"):
        _never_create(engine, Path(database).expanduser())

    @event.listens_for(engine, "begin")
    def _sqlite_begin(conn: Connection) -> None:
        # Deferred: readers never take the write lock. A connection marked WRITE takes it at
        # BEGIN, waiting for another writer up to the busy timeout: a deferred transaction that
        # has read cannot wait for the lock (SQLite answers "database is locked" at once).
        immediate = conn.get_execution_options().get("sqlite_begin") == "IMMEDIATE"
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def claim_cache(conn: Connection, whole: bool = True) -> None:
    """Give a SQLite connection that bulk-writes (the indexer's one writing connection) the large
    page cache inserts into the posting B-trees need, or (`whole=False`, before it goes back to
    the pool) its share of the pool's small one again. Look-ups read few pages each (the OS
    keeps the file cached): a large cache in every pooled connection only held memory (a 200 MB
    upload's server and scan workers: README, "Limits and safety", big uploads)."""
    if dialect(conn) == "sqlite":
        kib = SQLITE_CACHE_MIB * 1024 if whole else SQLITE_POOL_CACHE_MIB * 1024 // SQLITE_CONNECTIONS
        conn.exec_driver_sql(f"PRAGMA cache_size=-{kib}")


@contextmanager
def writing(engine: Engine) -> Iterator[Connection]:
    """A transaction for work that reads, then writes: on SQLite it takes the write lock at
    BEGIN, so two writers wait for each other instead of failing."""
    with engine.connect() as conn:
        conn.execution_options(**WRITE)
        with conn.begin():
            yield conn


def alembic_config(url: str) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database schema to `revision` through Alembic."""
    from alembic import command

    command.upgrade(alembic_config(url), revision)


def is_migrated(engine: Engine) -> bool:
    return inspect(engine).has_table("corpus")


_REVISION_LINE = re.compile(r"""^(revision|down_revision)\s*(?::[^=\n]*)?=\s*(?:["']([^"'\n]*)["']|None)""", re.M)


@functools.cache
def known_revisions() -> tuple[frozenset[str], str]:
    """(every schema revision this code's migrations know, the one they end at), read from the
    migration files' `revision` and `down_revision` lines: Alembic's own reading imports Alembic
    and every migration, a fifth of each command's start (a test holds the two equal)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in sorted((MIGRATIONS_DIR / "versions").glob("*.py")):
        said = {m.group(1): m.group(2) for m in _REVISION_LINE.finditer(path.read_text(encoding="utf-8"))}
        if said.get("revision"):
            revisions.add(said["revision"])
            if said.get("down_revision"):
                parents.add(said["down_revision"])
    heads = revisions - parents
    if len(heads) != 1:
        raise RuntimeError(f"the migrations must end at one revision, not {sorted(heads)}")
    return frozenset(revisions), heads.pop()


def schema_revisions(engine: Engine) -> tuple[str | None, str, bool]:
    """(the database's schema revision, the one this code's migrations end at, whether this
    code knows the database's: False for one a newer version migrated)."""
    revisions, head = known_revisions()
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            current = None
        else:
            rows = conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalars().all()
            current = rows[0] if len(rows) == 1 else None if not rows else ",".join(sorted(rows))
    # several rows (an interrupted or mixed migration): known if each is (it said "a newer version")
    return current, head, current is None or all(r in revisions for r in current.split(","))


def dialect(conn: Connection) -> str:
    return conn.dialect.name


def lease_grace(conn: Connection) -> float:
    """Seconds a lease is still honoured after it ran out. On SQLite a live owner's renewal may
    wait that long for another writer's lock (the busy timeout: an indexer's commit group, a
    big delete), so a lease is stale only once it is older than that too; PostgreSQL renewals
    do not wait on writers."""
    return SQLITE_BUSY_MS / 1000 if dialect(conn) == "sqlite" else 0.0


def clock(conn: Connection) -> ColumnElement[float]:
    """The database's clock in seconds since the epoch, for leases that servers and indexers on
    several machines compare (their own clocks need not agree)."""
    if dialect(conn) == "postgresql":
        return literal_column("extract(epoch FROM clock_timestamp())", Float)
    return literal_column("((julianday('now') - 2440587.5) * 86400.0)", Float)


# ---------------------------------------------------------------- bulk writes


def copy_in(conn: Connection, table: str, columns: Sequence[str], payload: bytes | memoryview) -> None:
    """PostgreSQL: COPY a whole binary COPY stream (header and trailer included) into `table`."""
    raw = conn.connection.driver_connection
    assert raw is not None
    with raw.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)") as cp:
        cp.write(payload)


def copy_rows(
    conn: Connection, table: str, columns: Sequence[str], types: Sequence[str], rows: Iterable[Sequence[Any]]
) -> None:
    """PostgreSQL: COPY tuples into `table` as a binary stream (`types`: the columns' type names)."""
    raw = conn.connection.driver_connection
    assert raw is not None
    with raw.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)") as cp:
        cp.set_types(list(types))
        for row in rows:
            cp.write_row(row)


def bulk_insert_rows(conn: Connection, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Insert tuples with the driver's executemany (one round of parsing, no ORM)."""
    raw = conn.connection.driver_connection
    assert raw is not None
    mark = "%s" if dialect(conn) == "postgresql" else "?"
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join([mark] * len(columns))})"
    cur = raw.cursor()
    cur.executemany(sql, list(rows))
    cur.close()


def sqlite_variables(conn: Connection) -> int:
    """How many values one statement may bind on this SQLite connection (999 before 3.32)."""
    raw = conn.connection.driver_connection
    assert raw is not None
    return int(raw.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))


def chunks(values: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(values), size):
        yield values[i : i + size]


def checkpoint(conn: Connection, mode: str = "PASSIVE") -> None:
    """Copy SQLite's WAL into the database (outside a transaction). PASSIVE never waits for
    readers; TRUNCATE also empties the WAL file."""
    if dialect(conn) == "sqlite":
        raw = conn.connection.driver_connection
        assert raw is not None
        try:
            raw.execute(f"PRAGMA wal_checkpoint({mode})")
        except sqlite3.OperationalError as exc:  # as SQLAlchemy's: the callers' handlers name it (a full disk)
            raise OperationalError(f"PRAGMA wal_checkpoint({mode})", None, exc) from exc


STATISTICS_TABLES = ("ngram_block", "band_block", "document", "corpus_file", "corpus")


def statistics_stale(conn: Connection) -> bool:
    """PostgreSQL: rows changed since the tables were last analysed (say, by a run killed
    between its last commit and its ANALYZE). SQLite: False (its statistics are advisory)."""
    if dialect(conn) != "postgresql":
        return False
    changed = conn.exec_driver_sql(
        "SELECT coalesce(sum(n_mod_since_analyze), 0) FROM pg_stat_user_tables WHERE relname = ANY(%(t)s)",
        {"t": list(STATISTICS_TABLES)},
    ).scalar_one()
    conn.commit()
    return int(changed) > 0


def refresh_statistics(conn: Connection) -> None:
    """Give the query planner fresh statistics after a bulk load (outside a transaction).

    Without them PostgreSQL plans look-ups on a freshly COPYed table as if each key matched
    a large share of the rows and scans slow down many times (README). ANALYZE samples, so it is
    cheap; on SQLite `PRAGMA optimize` with an analysis limit does the same bounded work.
    The indexer calls it on its writing connection, whose page cache is already warm.
    """
    if dialect(conn) == "postgresql":
        # The blocks' data is never filtered on: its statistics (a third of ANALYZE's time) are left out.
        tables = [f"{t} (seg, bucket)" if t.endswith("_block") else t for t in STATISTICS_TABLES]
        conn.exec_driver_sql(f"ANALYZE {', '.join(tables)}")
        conn.commit()
        return
    conn.exec_driver_sql("PRAGMA analysis_limit=1000")
    conn.exec_driver_sql("PRAGMA optimize")
    conn.commit()
    # The indexer turns automatic checkpoints off and checkpoints after each group of files;
    # after the last one, empty the WAL and free the page cache.
    checkpoint(conn, "TRUNCATE")
    conn.exec_driver_sql("PRAGMA shrink_memory")
    conn.commit()
