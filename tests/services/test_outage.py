"""Report jobs and the server while the database goes away: a fault injected at the connection
(every statement fails as a lost server's would), on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from conftest import PG_ADMIN_URL, IndexCorpus, drop_pg_database, make_pg_database
from fastapi.testclient import TestClient
from helpers import wait_for_report
from sqlalchemy import Engine, event
from sqlalchemy.exc import OperationalError

from contam.app.api.main import create_app
from contam.app.core.types import BenchmarkItem
from contam.app.services.database import open_database
from contam.app.services.reports import ReportService
from contam.app.services.scanning import Scanner
from contam.app.settings import Settings
from contam.app.store.db import upgrade

Q1 = "Which river flows through the ancient city of Baghdad and joins the Euphrates near Basra?"
Q2 = "Tides on the open ocean are driven mostly by the gravity of the moon and the sun together"
BENCH = "".join(json.dumps({"id": i, "question": q}) + "\n" for i, q in (("q1", Q1), ("q2", Q2))).encode()


class Outage:
    """While on, every statement on the engine fails with the driver's own OperationalError;
    `at` starts an outage of `seconds` the first time a statement containing it runs.
    `retried` is set when a statement the outage failed is tried again and fails too."""

    def __init__(self, engine: Engine, at: str | None = None, seconds: float = 0.0) -> None:
        self.until, self.at, self.seconds = 0.0, at, seconds
        self.refused, self.retried = 0, threading.Event()
        event.listen(engine, "before_cursor_execute", self._statement)

    def start(self, seconds: float) -> None:
        self.until = time.monotonic() + seconds

    def _statement(self, conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if self.at is not None and self.at in statement:
            self.at = None
            self.start(self.seconds)
        if time.monotonic() < self.until:
            self.refused += 1
            if self.refused > 1:
                self.retried.set()
            raise conn.dialect.loaded_dbapi.OperationalError("server closed the connection unexpectedly")


@pytest.fixture
def indexed(engine: Engine, index_corpus: IndexCorpus) -> Engine:
    index_corpus(engine, [{"id": "page", "text": f"Quiz night! {Q1}"}])
    return engine


def _service(engine: Engine, retry_seconds: float) -> ReportService:
    return ReportService(engine, Settings().max_upload_bytes, retry_seconds=retry_seconds)


def test_a_job_rides_out_a_short_outage(indexed: Engine) -> None:
    Outage(indexed, at="SET done_items", seconds=0.5)  # the database goes away at the first progress write
    svc = _service(indexed, retry_seconds=10)
    rid = svc.submit(BENCH, "b.jsonl", background=False)
    rep = svc.get(rid)
    assert rep["status"] == "done" and rep["error"] is None and rep["done_items"] == 2
    svc.shutdown()


def test_a_job_rides_out_a_short_outage_while_it_reads_the_index(indexed: Engine) -> None:
    """Only a report job's writes were tried again: a connection lost while a chunk read its
    candidate documents (a probe killed the server's connections mid-job on PostgreSQL) failed
    the job at once, "database unavailable: terminating connection"."""
    Outage(indexed, at="WHERE document.id IN", seconds=0.5)
    svc = _service(indexed, retry_seconds=10)
    rid = svc.submit(BENCH, "b.jsonl", background=False)
    rep = svc.get(rid)
    assert rep["status"] == "done" and rep["error"] is None and rep["done_items"] == 2, rep["error"]
    assert rep["summary"]["counts"]["contaminated"] == 1
    svc.shutdown()


def test_a_job_fails_with_the_reason_when_the_outage_outlasts_its_retries(indexed: Engine) -> None:
    # Retries back off 0.05 s doubling, so with 1 s of them the progress write is tried last at
    # 1.55 s and gives up; the failure's own retries try last at 3.1 s. The database is back at
    # 2.3 s, between the two with 0.75 s to spare on each side. (It was 0.6 s against 0.3 s of
    # retries, tried last at 0.35 and 0.7 s: a loaded CI run's late retry found the database
    # back, and the job ran to "done".)
    Outage(indexed, at="SET done_items", seconds=2.3)
    svc = _service(indexed, retry_seconds=1.0)
    rid = svc.submit(BENCH, "b.jsonl")
    rep = wait_for_report(svc, rid, passing=(OperationalError,))  # the database may still be away
    assert rep["status"] == "failed"
    assert "database was unavailable" in rep["error"] and "recording progress" in rep["error"]
    assert "server closed the connection" in rep["error"]
    svc.shutdown()


def test_a_job_stranded_by_a_long_outage_is_picked_up_again(indexed: Engine) -> None:
    """Not even the failure can be recorded: the report stays running and is run again."""
    Outage(indexed, at="SET done_items", seconds=2.0)
    svc = _service(indexed, retry_seconds=0.2)
    rid = svc.submit(BENCH, "b.jsonl")
    rep = wait_for_report(svc, rid, passing=(OperationalError,))  # the database may still be away
    assert rep["status"] == "done" and rep["done_items"] == 2
    svc.shutdown()


def _assert_unavailable(r: Any) -> None:
    assert r.status_code == 503 and r.headers["retry-after"] == "5"
    assert r.json()["error"].startswith("the database is unavailable")


def test_the_server_answers_503_with_the_reason_while_the_database_is_away(
    migrated_url: str, index_corpus: IndexCorpus
) -> None:
    """The server's own engine (reports, the dashboard) under an injected outage; /check is
    scored in worker processes with engines of their own (next test)."""
    index_corpus(migrated_url, [{"id": "page", "text": f"Quiz night! {Q1}"}])
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        outage = Outage(c.app.state.engine)  # type: ignore[attr-defined]
        outage.start(60)
        r = c.get("/api/v1/reports")
        _assert_unavailable(r)
        assert "server closed the connection" in r.json()["detail"]
        page = c.get("/")
        assert page.status_code == 503 and "Database unavailable" in page.text
        outage.start(0)
        assert c.get("/api/v1/reports").status_code == 200


def test_check_workers_answer_503_while_postgresql_refuses_connections(
    pg_available: bool, index_corpus: IndexCorpus
) -> None:
    """A real outage, seen by every process: the database refuses new connections and its
    sessions are ended. A check worker's failure reaches the client as the 503 it would be in
    the server, and the next check after the database is back is answered again."""
    name, url = make_pg_database()
    try:
        upgrade(url)
        index_corpus(url, [{"id": "page", "text": f"Quiz night! {Q1}"}])
        with TestClient(create_app(Settings(database_url=url, check_workers=1))) as c:
            first = c.post("/api/v1/check", json={"texts": [Q1]})
            assert first.status_code == 200 and first.json()["results"][0]["status"] == "contaminated"
            _pg_outage(name, on=True)
            try:
                r = c.post("/api/v1/check", json={"texts": [Q1]})
                _assert_unavailable(r)
            finally:
                _pg_outage(name, on=False)
            again = c.post("/api/v1/check", json={"texts": [Q1]})
            assert again.status_code == 200 and again.json() == first.json()
    finally:
        drop_pg_database(name)


def test_a_database_dropped_under_the_server_is_named_not_called_away(
    pg_available: bool, index_corpus: IndexCorpus
) -> None:
    """The server's database dropped while it runs: every route said "the database is unavailable;
    try again shortly" (a 503), where the CLI says PostgreSQL has no such database (a new user's
    trial). Waiting does not bring it back: the API's 500 (a page's 503) says what is missing and what to do."""
    name, url = make_pg_database()
    try:
        upgrade(url)
        index_corpus(url, [{"id": "page", "text": f"Quiz night! {Q1}"}])
        with TestClient(create_app(Settings(database_url=url))) as c:
            assert c.get("/api/v1/corpora").status_code == 200
            drop_pg_database(name)
            r = c.get("/api/v1/corpora")
            assert r.status_code == 500 and "retry-after" not in r.headers, r.text
            assert r.json()["error"].startswith('PostgreSQL has no such database: database "') and "createdb" in r.text
            page = c.get("/")  # a page says it as a full disk is said there
            assert page.status_code == 503 and "PostgreSQL has no such database" in page.text
    finally:
        drop_pg_database(name)


def _pg_outage(name: str, on: bool) -> None:
    with psycopg.connect(PG_ADMIN_URL.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS {"false" if on else "true"}')
        if on:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))


def test_a_stopping_server_does_not_wait_out_a_jobs_retries(indexed: Engine) -> None:
    """A job retrying an unreachable database once kept the process alive for its whole retry
    time after the server stopped; now it gives up at once and is resumed at the next start."""
    outage = Outage(indexed, at="SET done_items", seconds=120)
    svc = _service(indexed, retry_seconds=120)
    rid = svc.submit(BENCH, "b.jsonl")
    assert outage.retried.wait(30)  # the job is retrying its progress write
    t0 = time.monotonic()
    svc.shutdown()
    svc._pool.shutdown(wait=True)  # the job thread ends (it held the interpreter at exit)
    assert time.monotonic() - t0 < 10
    outage.start(0)
    assert svc.get(rid)["status"] == "running"  # stranded: resume_pending runs it again


def test_a_sqlite_database_it_cannot_write_beside_says_the_folder_must_be_writable() -> None:
    """SQLite in WAL mode writes its -wal and -shm files beside the database even to read it: in a
    read-only folder `contam corpora` failed with "attempt to write a readonly database" alone (a
    bad-input probe; run as root, the tests cannot make a folder read-only, so the driver's error
    is raised here as SQLite raises it)."""
    import sqlite3

    from sqlalchemy.exc import OperationalError

    from contam.app.errors import UnavailableError
    from contam.app.services.database import reaching

    refused = OperationalError("SELECT 1", {}, sqlite3.OperationalError("attempt to write a readonly database"))
    sqlite_error = r"\(sqlite:////srv/c.db\); SQLite writes its -wal and -shm files"
    with pytest.raises(UnavailableError, match=sqlite_error), reaching("sqlite:////srv/c.db"):
        raise refused
    with pytest.raises(UnavailableError) as pg, reaching("postgresql://u@h/db"):
        raise refused
    assert "-wal" not in pg.value.message
    # a read-only folder's other word for it (a probe), and the way to read such a file as it is
    cannot_open = OperationalError("SELECT 1", {}, sqlite3.OperationalError("unable to open database file"))
    read_as_it_is = r"sqlite:///file:/srv/c.db\?immutable=1&uri=true"
    with pytest.raises(UnavailableError, match=read_as_it_is), reaching("sqlite:////srv/c.db"):
        raise cannot_open


def test_a_sqlite_url_naming_a_folder_is_a_usage_error(tmp_path: Path) -> None:
    """--db sqlite:////some/folder was "the database is unavailable ... must be writable", exit 3
    (a new user's trial): the path is wrong, said as a configuration error (exit 2)."""
    from contam.app.errors import ConfigError
    from contam.app.services.database import open_database

    with pytest.raises(ConfigError, match=f"names a folder, not a database file: .* sqlite:///{tmp_path}/contam.db"):
        open_database(f"sqlite:///{tmp_path}").dispose()


def test_a_postgresql_refusal_of_who_connects_is_the_urls_to_mend() -> None:
    """A user or password PostgreSQL does not know, or a host its pg_hba.conf lets in for no one,
    is a configuration error (exit 2) naming the URL's user and password to check, never "the
    database is unavailable" (exit 3: a new user's trial; pg_hba.conf, a review)."""
    from sqlalchemy.exc import OperationalError

    from contam.app.errors import ConfigError
    from contam.app.services.database import reaching

    for said in (
        'connection failed: FATAL:  role "nobody" does not exist',
        'connection failed: FATAL:  password authentication failed for user "u"',
        'connection failed: FATAL:  no pg_hba.conf entry for host "10.0.0.5", user "u", database "db"',
    ):
        refused = "PostgreSQL refused the user of postgresql://u:\\*\\*\\*@h/db"
        with pytest.raises(ConfigError, match=refused), reaching("postgresql://u:secret@h/db"):
            raise OperationalError("SELECT 1", {}, Exception(said))


def test_a_sqlite_database_opened_read_only_by_its_uri_is_read(tmp_path: Path, index_corpus: IndexCorpus) -> None:
    """`sqlite:///file:PATH?immutable=1&uri=true` (SQLite's read-only URI form, for a file in a folder
    it cannot write) was refused as "no database at file:PATH" (a probe of storage failures)."""
    path = tmp_path / "c.db"
    upgrade(f"sqlite:///{path}")
    index_corpus(f"sqlite:///{path}", [{"id": "page", "text": f"Quiz night! {Q1}"}])
    engine = open_database(f"sqlite:///file:{path}?immutable=1&uri=true")
    assert Scanner(engine).scan([BenchmarkItem("q1", 0, question=Q1)])[0].score.status == "contaminated"


def test_a_full_disk_is_not_waited_out() -> None:
    """A report job tried a full disk again for its whole retry window, then called it "the
    database was unavailable for 60.0 s" (a review); with no window, "for 0.0 s"."""
    import sqlite3

    from sqlalchemy.exc import OperationalError

    from contam.app.errors import UnavailableError
    from contam.app.services.database import retrying

    calls: list[str] = []

    def full() -> None:
        calls.append("x")
        raise OperationalError("INSERT", None, sqlite3.OperationalError("database or disk is full"))

    with pytest.raises(UnavailableError, match="the disk holding the database is full.*while recording"):
        retrying("recording progress", full, 60)
    assert len(calls) == 1

    def away() -> None:
        raise OperationalError("SELECT", None, sqlite3.OperationalError("unable to open database file"))

    with pytest.raises(UnavailableError, match=r"^the database was unavailable while looking up the index: unable"):
        retrying("looking up the index", away, 0)


def test_the_api_says_a_database_damaged_after_it_opened_is_damaged(tmp_path: Path, index_corpus: IndexCorpus) -> None:
    """SQLite says a damaged page with DatabaseError ("malformed"), which no handler took: /check
    answered a plain-text 500 (a new user's trial)."""
    url = f"sqlite:///{tmp_path / 'c.db'}"
    upgrade(url)
    index_corpus(url, [{"id": f"p{i}", "text": f"quiz {i}: {Q1} " * 30} for i in range(300)])
    data = (tmp_path / "c.db").read_bytes()
    (tmp_path / "c.db").write_bytes(data[: 20 * 4096] + b"\xff" * (len(data) - 20 * 4096))
    with TestClient(create_app(Settings(database_url=url, check_workers=1))) as c:
        r = c.post("/api/v1/check", json={"texts": [Q1]})
    assert r.status_code == 500 and r.json()["error"].startswith("the database file is damaged"), r.text


def test_the_server_logs_why_it_answered_503(
    migrated_url: str, index_corpus: IndexCorpus, caplog: pytest.LogCaptureFixture
) -> None:
    """The server's log said `"GET /health HTTP/1.1" 503 Service Unavailable` and not why, for the
    API and the dashboard alike (an operator's trial): the reason is logged with the request."""
    index_corpus(migrated_url, [{"id": "page", "text": f"Quiz night! {Q1}"}])
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        outage = Outage(c.app.state.engine)  # type: ignore[attr-defined]
        outage.start(60)
        with caplog.at_level(logging.WARNING, logger="contam.server"):
            assert c.get("/health").status_code == 503
            assert c.get("/corpora").status_code == 503
        outage.start(0)
    said = [r.getMessage() for r in caplog.records if r.name == "contam.server"]
    assert len(said) == 2, said
    assert said[0].startswith("GET /health answered 503: the database is unavailable") and "server closed" in said[0]
    assert said[1].startswith("GET /corpora answered 503: the database is unavailable")


def test_an_sqlite_file_moved_under_the_server_is_said_and_never_made_again(
    tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """The database file moved while the server ran: the next new connection (a check worker's)
    made an empty database at the old path, answered "unavailable; try again shortly" (no table)
    for good, and the next start served that empty file as the index (an operator's trial)."""
    path = tmp_path / "contam.db"
    url = f"sqlite:///{path}"
    upgrade(url)
    index_corpus(url, [{"id": "page", "text": f"Quiz night! {Q1}"}])
    with TestClient(create_app(Settings(database_url=url, check_workers=1))) as c:
        assert c.get("/health").status_code == 200
        for suffix in ("", "-wal", "-shm"):
            if Path(f"{path}{suffix}").exists():
                Path(f"{path}{suffix}").rename(tmp_path / f"moved.db{suffix}")
        r = c.post("/api/v1/check", json={"texts": [Q1]})
        assert r.status_code == 500 and "retry-after" not in r.headers, r.text
        assert r.json()["error"].startswith(f"the database file {path} is gone (moved or deleted while in use)")
        assert not path.exists()  # no new, empty database where the index was
    moved = f"sqlite:///{tmp_path / 'moved.db'}"
    assert open_database(moved) is not None  # the moved file is whole, usable where it is now
