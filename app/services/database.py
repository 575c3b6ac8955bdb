"""Opening the database: the schema through Alembic, and an engine for a migrated database.
A database that cannot be reached is a UnavailableError naming it (its password hidden)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError

from contam.app.errors import ConfigError, UnavailableError
from contam.app.store import db

T = TypeVar("T")
RETRY_SECONDS = 60.0  # how long background work retries a database it cannot reach (CONTAM_JOB_RETRY_SECONDS)
log = logging.getLogger("contam.database")


def unavailable_reason(exc: DBAPIError) -> str:
    """The driver's own first line (connection refused, server closed the connection, database
    is locked), without the statement."""
    return (str(exc.orig).strip().splitlines() or [type(exc.orig).__name__])[0]


def database_trouble(exc: DBAPIError, then: str = "") -> tuple[str, bool]:
    """What to tell a user whose command or request the database failed, and whether trying
    again may help: a full disk and a corrupt file are said as such (both were "unavailable",
    which a retry does not mend); anything else is the database being away, `then` added (the
    server's "try again shortly")."""
    reason = unavailable_reason(exc)
    if db.GONE in reason:  # an SQLite file moved or deleted under the process: waiting does not bring it back
        return reason, False
    if "disk is full" in reason or "No space left on device" in reason:
        return "the disk holding the database is full: free space, then run it again", False
    if "malformed" in reason or "file is not a database" in reason:
        return "the database file is damaged: restore it from a copy, or index into a new one", False
    if "FATAL:" in reason and 'database "' in reason and "does not exist" in reason:
        # dropped under a running server, which said "try again shortly" (a new user's trial)
        return (
            f"PostgreSQL has no such database: {reason.split('FATAL:', 1)[-1].strip()}; create it "
            "(`createdb NAME`), then `contam db upgrade --db URL`, or point CONTAM_DATABASE_URL at another",
            False,
        )
    return f"the database is unavailable{then}: {reason}", True


def refused_value(exc: DBAPIError) -> str:
    """What to tell the sender of a value the database refused (DataError: a NUL character,
    which PostgreSQL's text never holds; a number out of a column's range)."""
    return f"the request holds a value the database cannot take: {unavailable_reason(exc)}"


def retrying(
    what: str, work: Callable[[], T], seconds: float = RETRY_SECONDS, stop: Callable[[], bool] = lambda: False
) -> T:
    """`work()`, tried again with backoff (0.05 s doubling to 5 s) while the database cannot be
    reached, for up to `seconds` (or until `stop()`, a server shutting down); then an
    UnavailableError naming `what` and the reason."""
    delay, waited = 0.05, 0.0
    while True:
        try:
            return work()
        except OperationalError as exc:
            message, passing = database_trouble(exc)
            if not passing:  # a full disk or a damaged file: waiting does not mend it
                raise UnavailableError(f"{message}, while {what}") from exc
            if waited >= seconds or stop():
                after = f" for {waited:.1f} s" if waited else ""
                raise UnavailableError(
                    f"the database was unavailable{after} while {what}: {unavailable_reason(exc)}"
                ) from exc
            log.warning("database unavailable while %s (%s); retrying in %.2f s", what, unavailable_reason(exc), delay)
            time.sleep(delay)
            waited += delay
            delay = min(delay * 2, 5.0)


def shown_url(url: str) -> str:
    """The URL as messages show it: the password hidden."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


@contextmanager
def reaching(url: str) -> Iterator[None]:
    """Turn a connection failure into one line naming the database and the driver's reason."""
    try:
        yield
    except DBAPIError as exc:
        reason = unavailable_reason(exc)
        if "file is not a database" in reason:  # SQLite's word for a file of something else: a wrong path
            raise ConfigError(
                f"{shown_url(url)} is not an SQLite database (file is not a database): check the path"
            ) from exc
        parsed = make_url(url)
        if parsed.get_backend_name() == "postgresql" and f'database "{parsed.database}" does not exist' in reason:
            raise ConfigError(  # db upgrade makes the tables, not the database (a new user's trial)
                f"PostgreSQL has no database {parsed.database!r} ({shown_url(url)}): create it first "
                f"(`createdb {parsed.database}`, or CREATE DATABASE in psql), then `contam db upgrade --db URL`"
            ) from exc
        refused = ('role "', "password authentication failed", "no password supplied", "pg_hba.conf")
        if parsed.get_backend_name() == "postgresql" and any(r in reason for r in refused):
            raise ConfigError(  # who connects is the URL's to say: no retry mends it (a new user's trial: exit 3)
                f"PostgreSQL refused the user of {shown_url(url)}: {reason}; check the user name and password in "
                "the URL (postgresql+psycopg://USER:PASSWORD@HOST/DATABASE)"
            ) from exc
        message, passing = database_trouble(exc)
        if "malformed" in reason:  # a damaged file, not a database that is away (exit 2, as a wrong file)
            raise ConfigError(f"{message} ({shown_url(url)})") from exc
        if not passing:
            raise UnavailableError(f"{message} ({shown_url(url)})") from exc
        hint = ""
        cannot = ("readonly database", "unable to open database file")
        if any(c in reason for c in cannot) and parsed.get_backend_name() == "sqlite":
            path = parsed.database or "PATH"
            if Path(path).is_dir():  # a usage error, not a database that is away (a new user's trial)
                raise ConfigError(
                    f"{shown_url(url)} names a folder, not a database file: give a file's path, e.g. "
                    f"sqlite:///{Path(path) / 'contam.db'}"
                ) from exc
            hint = (
                "; SQLite writes its -wal and -shm files beside the database, even to read it: the file and its "
                f"folder must be writable, or read it as it is with --db 'sqlite:///file:{path}?immutable=1&uri=true'"
            )
        raise UnavailableError(f"the database is unavailable: {reason} ({shown_url(url)}){hint}") from exc


def migrate(url: str, revision: str = "head") -> tuple[str | None, str, str]:
    """Create or migrate the schema to `revision`; a schema a newer version of contam migrated
    is refused as every other command refuses it (Alembic's "Can't locate revision" named no way out).
    (the revision before, None for a database without the schema; the revision now; the head).
    A path where a URL belongs (`contam.Index("/data/contam.db")`, `--db /data/contam.db`) is refused
    as the other commands refuse it: it raised SQLAlchemy's own ArgumentError (a new user's trial)."""
    sqlite_file_missing(url)  # raises ConfigError for text that is no database URL
    with reaching(url):
        engine = db.make_engine(url)
        try:
            current, head, known = db.schema_revisions(engine)
        finally:
            engine.dispose()
        if not known:
            raise ConfigError(
                f"the database's schema is at revision {current}, which this version of contam does not know "
                f"(it ends at {head}): a newer version of contam migrated it; use that version"
            )
        _upgrade(url, revision, head)
        engine = db.make_engine(url)
        try:  # what the database is at now, read back (a revision may be given as "+1", "heads", a prefix)
            now = db.schema_revisions(engine)[0]
        finally:
            engine.dispose()
    return current, now or head, head


def _upgrade(url: str, revision: str, head: str) -> None:
    """db.upgrade, a revision Alembic cannot find or reach said as the usage error it is (it was
    "CommandError: Can't locate revision ...", exit 3: an operator's trial)."""
    from alembic.util import CommandError

    try:
        db.upgrade(url, revision)
    except CommandError as exc:
        raise ConfigError(
            f"cannot upgrade to revision {revision!r}: {exc}; give one of this version's revisions (the last: {head}), "
            "or leave --revision out"
        ) from None


def sqlite_file_missing(url: str) -> bool:
    """Whether `url` names an SQLite file that is not there (connecting would create it)."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ConfigError(f"not a database URL: {url!r} (use sqlite:///PATH or postgresql://...)") from exc
    path = parsed.database if parsed.get_backend_name() == "sqlite" else None
    if path and parsed.query.get("uri") == "true" and path.startswith("file:"):  # SQLite's URI form (mode=ro)
        path = path.removeprefix("file:").split("?", 1)[0]
    return path not in (None, "", ":memory:") and not Path(str(path)).exists()


def open_database(url: str) -> Engine:
    """An engine for a migrated database; refuses one without the schema, and never creates an
    SQLite file on the way (a read-only command given a wrong path would leave an empty one)."""
    if sqlite_file_missing(url):
        raise ConfigError(
            f"no database at {make_url(url).database}: run `contam db upgrade --db {shown_url(url)}` first "
            "(or check the path)"
        )
    try:
        engine = db.make_engine(url, existing=True)
    except ArgumentError as exc:
        raise ConfigError(f"not a database URL: {url!r} (use sqlite:///PATH or postgresql://...)") from exc
    with reaching(url):
        migrated = db.is_migrated(engine)
    if not migrated:
        engine.dispose()
        raise ConfigError(f"the database has no schema yet: run `contam db upgrade --db {shown_url(url)}` first")
    with reaching(url):
        current, head, known = db.schema_revisions(engine)
    if current != head:  # tables this code reads may be missing, or shaped otherwise
        engine.dispose()
        raise ConfigError(
            f"the database's schema is at revision {current} and this version of contam needs {head}: "
            + (
                f"run `contam db upgrade --db {shown_url(url)}`"
                if known
                else "a newer version of contam migrated it; use that version"
            )
        )
    return engine


def connect(url: str) -> Engine:
    """An engine for `url`, migrated or not (the server migrates it when it starts, before this
    engine's first connection: it never creates an SQLite file)."""
    return db.make_engine(url, existing=True)
