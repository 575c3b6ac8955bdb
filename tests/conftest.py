"""Shared fixtures. Every test that touches a database gets its own: a fresh SQLite file, or a
PostgreSQL database created for the test and dropped after it (never a mock). `index_corpus`
is the one way the tests index a small corpus."""

from __future__ import annotations

import itertools
import json
import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine

from contam.app.core.config import SignatureConfig
from contam.app.store.db import make_engine, upgrade
from contam.indexer.job import IndexJob
from contam.indexer.options import IndexOptions
from contam.indexer.progress import Progress
from contam.indexer.summary import IndexSummary

PG_ADMIN_URL = os.environ.get("CONTAM_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def _pg_admin() -> psycopg.Connection[Any]:
    url = PG_ADMIN_URL.replace("postgresql+psycopg://", "postgresql://")
    return psycopg.connect(url, autocommit=True, connect_timeout=5)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `ray` run last, in their order. Their driver runs in this process, and Ray's
    and gRPC's native threads outlive ray.shutdown(); one that later calls into Python is listed
    by `threading` as a thread for good, so a scan in this process rightly stops forking its
    workers (scanning._run), and a later test of the fork path failed in CI."""
    items.sort(key=lambda item: item.get_closest_marker("ray") is not None)


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


def migrated_pg_database() -> Iterator[str]:
    """A PostgreSQL database of its own, migrated, dropped after use."""
    name, url = make_pg_database()
    try:
        upgrade(url)
        yield url
    finally:
        drop_pg_database(name)


@pytest.fixture
def pg_url(pg_available: bool) -> Iterator[str]:
    """A migrated PostgreSQL database (tests of what only PostgreSQL does)."""
    yield from migrated_pg_database()


@pytest.fixture
def other_pg_url(pg_available: bool) -> Iterator[str]:
    """A second one, beside pg_url."""
    yield from migrated_pg_database()


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
    upgrade(db_url)
    return db_url


@pytest.fixture
def engine(migrated_url: str) -> Iterator[Engine]:
    eng = make_engine(migrated_url)
    yield eng
    eng.dispose()


IndexCorpus = Callable[..., IndexSummary]


@pytest.fixture
def index_corpus(tmp_path: Path) -> IndexCorpus:
    """index(target, source, name="web", cfg=None, progress=None, **options) -> IndexSummary.

    target: an engine or a database URL (migrated). source: corpus files or directories, or
    documents (dicts with id and text), which are written to a JSONL file first. options are
    IndexOptions fields (workers=1 unless given)."""
    counter = itertools.count()

    def index(
        target: Engine | str,
        source: Path | Sequence[Path] | Sequence[dict[str, Any]],
        name: str = "web",
        cfg: SignatureConfig | None = None,
        progress: Progress | None = None,
        **options: Any,
    ) -> IndexSummary:
        paths = [source] if isinstance(source, Path) else list(source)
        if paths and isinstance(paths[0], dict):
            docs = tmp_path / f"corpus-{name}-{next(counter)}.jsonl"
            docs.write_text("".join(json.dumps(d) + "\n" for d in paths))
            paths = [docs]
        eng = target if isinstance(target, Engine) else make_engine(target)
        try:
            with IndexJob(eng, name, cfg or SignatureConfig(), IndexOptions(**options), progress) as job:
                return job.run(paths)
        finally:
            if eng is not target:
                eng.dispose()

    return index
