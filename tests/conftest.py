"""Shared fixtures. Every test that touches a database gets its own: a fresh SQLite file, or a
PostgreSQL database created for the test and dropped after it (never a mock)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

PG_ADMIN_URL = os.environ.get("CONTAM_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def _pg_admin():  # type: ignore[no-untyped-def]
    import psycopg

    url = PG_ADMIN_URL.replace("postgresql+psycopg://", "postgresql://")
    return psycopg.connect(url, autocommit=True, connect_timeout=5)


@pytest.fixture(scope="session")
def pg_available() -> bool:
    try:
        _pg_admin().close()
        return True
    except Exception as exc:  # pragma: no cover - depends on the machine
        # PostgreSQL is part of the test contract: an unreachable server fails the run.
        pytest.fail(f"PostgreSQL is not reachable at {PG_ADMIN_URL}: {exc}")
        return False


def make_pg_database() -> tuple[str, str]:
    name = f"contam_t_{uuid.uuid4().hex[:12]}"
    with _pg_admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    return name, f"{base}/{name}"


def drop_pg_database(name: str) -> None:
    with _pg_admin() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database URL of each kind."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'contam.db'}"
        return
    request.getfixturevalue("pg_available")
    name, url = make_pg_database()
    try:
        yield url
    finally:
        drop_pg_database(name)


@pytest.fixture
def migrated_url(db_url: str) -> str:
    from app.store.db import upgrade

    upgrade(db_url)
    return db_url


@pytest.fixture
def engine(migrated_url: str) -> Iterator[object]:
    from app.store.db import make_engine

    eng = make_engine(migrated_url)
    yield eng
    eng.dispose()
