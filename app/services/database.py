"""Opening the database: the schema through Alembic, and an engine for a migrated database.
A database that cannot be reached is a UnavailableError naming it (its password hidden)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from app.errors import ConfigError, UnavailableError
from app.store import db


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
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else type(exc).__name__
        raise UnavailableError(f"cannot open the database {shown_url(url)}: {reason}") from exc


def migrate(url: str, revision: str = "head") -> None:
    """Create or migrate the schema to `revision`."""
    with reaching(url):
        db.upgrade(url, revision)


def open_database(url: str) -> Engine:
    """An engine for a migrated database; refuses one without the schema."""
    try:
        engine = db.make_engine(url)
    except ArgumentError as exc:
        raise ConfigError(f"not a database URL: {url!r} (use sqlite:///PATH or postgresql://...)") from exc
    with reaching(url):
        migrated = db.is_migrated(engine)
    if not migrated:
        engine.dispose()
        raise ConfigError("the database has no schema yet: run `contam db upgrade` first")
    return engine


def connect(url: str) -> Engine:
    """An engine for `url`, migrated or not (the server migrates it when it starts)."""
    return db.make_engine(url)
