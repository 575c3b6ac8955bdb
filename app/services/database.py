"""Opening the database: the schema through Alembic, and an engine for a migrated database."""

from __future__ import annotations

from sqlalchemy import Engine

from app.errors import ConfigError
from app.store import db


def migrate(url: str, revision: str = "head") -> None:
    """Create or migrate the schema to `revision`."""
    db.upgrade(url, revision)


def open_database(url: str) -> Engine:
    """An engine for a migrated database; refuses one without the schema."""
    engine = db.make_engine(url)
    if not db.is_migrated(engine):
        engine.dispose()
        raise ConfigError("the database has no schema yet: run `contam db upgrade` first")
    return engine


def connect(url: str) -> Engine:
    """An engine for `url`, migrated or not (the server migrates it when it starts)."""
    return db.make_engine(url)
