"""Alembic environment: the URL comes from the caller (contam db upgrade), -x url=..., or settings."""

from __future__ import annotations

from alembic import context
from sqlalchemy import pool

from contam.app.settings import get_settings
from contam.app.store.db import make_engine
from contam.app.store.schema import metadata

config = context.config


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url")
    if url:
        return url
    x = context.get_x_argument(as_dictionary=True)
    if "url" in x:
        return x["url"]
    return get_settings().database_url


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=metadata, literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = make_engine(_url())
    engine.pool = pool.NullPool(engine.pool._creator)  # no pooled connection outlives the migration
    with engine.connect() as connection:
        # SQLite has no ALTER COLUMN: batch mode copies tables when a revision changes one.
        context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
