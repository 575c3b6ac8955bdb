"""Report jobs: several run at once, deleting a report stops its job, and servers sharing a
database never run one job twice (both databases)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import IndexCorpus
from fastapi.testclient import TestClient
from helpers import delete_at_progress_step, make_docs, wait_for_report
from sqlalchemy import Engine, func, select, update

from contam.app.api.main import create_app
from contam.app.errors import NotFoundError
from contam.app.services import scanning
from contam.app.services.reports import ReportService
from contam.app.settings import Settings
from contam.app.store import reports as rrepo
from contam.app.store.db import make_engine
from contam.app.store.schema import report, report_item


def _bench(n: int) -> bytes:
    return "".join(
        json.dumps({"id": f"q{i}", "question": f"question number {i} about rivers"}) + "\n" for i in range(n)
    ).encode()


def test_deleting_a_report_stops_its_job(
    engine: Engine, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DELETE once answered 204 while the job went on scoring (and then wrote items for a report
    that was gone); now the job stops at its next progress step and leaves nothing behind."""
    index_corpus(engine, make_docs(3, 60, 1, "a"), "web")
    monkeypatch.setattr(scanning, "CHUNK", 2)  # five progress steps for ten items
    svc = ReportService(engine, 1 << 20)
    steps = delete_at_progress_step(monkeypatch, svc, 2)  # a DELETE arrives while the job runs
    svc.submit(_bench(10), "b.jsonl", background=False)
    assert len(steps) == 2  # stopped at once, not after all five chunks
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(report)).scalar_one() == 0
        assert conn.execute(select(func.count()).select_from(report_item)).scalar_one() == 0


def test_several_jobs_run_at_once(engine: Engine, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch) -> None:
    """One large benchmark once held up every other report behind it (one job worker)."""
    index_corpus(engine, make_docs(3, 60, 1, "a"), "web")
    svc = ReportService(engine, 1 << 20, job_workers=2)
    both = threading.Barrier(2, timeout=10)
    ran: list[str] = []

    def run(report_id: str) -> None:  # each job waits until the other has started too
        both.wait()
        ran.append(report_id)

    monkeypatch.setattr(svc, "run", run)
    ids = [svc.submit(_bench(2), f"b{i}.jsonl") for i in range(2)]
    for _ in range(200):
        if len(ran) == 2:
            break
        time.sleep(0.05)
    svc.shutdown()
    assert sorted(ran) == sorted(ids)


def test_a_job_scored_by_worker_processes_gives_the_same_report(
    engine: Engine, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report job splits its benchmark over `scan_workers` processes. The server runs threads,
    so they start from a fork server and receive the scan pickled (a fork could inherit a lock
    another thread holds); the report is the one a single process writes, row for row."""
    docs = make_docs(6, 80, 2, "d")
    index_corpus(engine, docs, "web")
    monkeypatch.setattr(scanning, "CHUNK", 3)
    rows = [{"id": f"c{i}", "question": " ".join(d["text"].split()[10:40])} for i, d in enumerate(docs)]
    rows += [{"id": f"n{i}", "question": f"question number {i} about rivers and their deltas"} for i in range(5)]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    started: list[str] = []
    real_context = scanning.multiprocessing.get_context

    def context(method: str):  # type: ignore[no-untyped-def]
        started.append(method)
        return real_context(method)

    monkeypatch.setattr(scanning.multiprocessing, "get_context", context)
    exports = []
    for workers in (1, 2):
        svc = ReportService(engine, 1 << 20, scan_workers=workers)
        keep_alive = threading.Event()  # a second thread, as in the server
        threading.Thread(target=keep_alive.wait, daemon=True).start()
        rid = svc.submit(data, "b.jsonl", name=f"w{workers}", background=False)
        keep_alive.set()
        lines = [json.loads(x) for x in svc.export(rid, "jsonl")[0].decode().splitlines()]
        exports.append([{k: v for k, v in row.items() if k not in ("report_id", "report_name")} for row in lines])
        svc.shutdown()
    assert exports[0] == exports[1]
    statuses = [row["status"] for row in exports[1]]
    assert statuses[:6] == ["contaminated"] * 6 and len(statuses) == 11
    # each job's pass 1 in a process of its own, one pool for the job with two workers; never a fork
    assert started == ["forkserver"] * 3


# ---------------------------------------------------------------- servers sharing a database


@pytest.fixture
def services(engine: Engine) -> Iterator[Callable[..., ReportService]]:
    """Report services on the test's database, stopped after the test whatever its outcome."""
    made: list[ReportService] = []

    def make(**options: Any) -> ReportService:
        made.append(ReportService(engine, 1 << 20, **options))
        return made[-1]

    yield make
    for svc in made:
        svc.shutdown()


def _paced(monkeypatch: pytest.MonkeyPatch, each: Callable[[], object]) -> None:
    """Jobs score chunks of two items, and call `each` before handing on each chunk."""
    monkeypatch.setattr(scanning, "CHUNK", 2)
    monkeypatch.setattr(scanning, "FIRST_CHUNKS", ())
    real_stream = scanning.Scanner.scan_stream

    def paced(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        for part in real_stream(self, *args, **kwargs):
            each()
            yield part

    monkeypatch.setattr(scanning.Scanner, "scan_stream", paced)


def _held(engine: Engine, rid: str, owner: str, lease_until: float, **values: object) -> None:
    with engine.begin() as conn:
        conn.execute(update(report).where(report.c.id == rid).values(owner=owner, lease_until=lease_until, **values))


def test_a_new_server_takes_up_only_the_jobs_of_stopped_servers(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """A server used to re-run, at start, every queued or running report, a live server's
    running job included (whose report then held both runs' items). Now it takes up a job
    only when its server's lease ran out; the live server's job is left alone."""
    engine = make_engine(migrated_url)
    index_corpus(engine, make_docs(3, 60, 1, "a"), "web")
    first = ReportService(engine, 1 << 20)
    dead, live = (first.submit(_bench(4), f"{n}.jsonl", background=False) for n in ("dead", "live"))
    first.shutdown()
    with engine.begin() as conn:  # both as a server leaves them mid-job
        for rid in (dead, live):
            rrepo.set_status(conn, rid, "running", done_items=2)
    _held(engine, dead, "killed-server", 0.0)  # its lease ran out long ago
    _held(engine, live, "live-server", time.time() + 3600)  # renewed by a server that runs
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rep = wait_for_report(c.app.state.reports, dead)  # type: ignore[attr-defined]
        assert rep["status"] == "done" and rep["done_items"] == 4
        time.sleep(0.3)
        other = c.get(f"/api/v1/reports/{live}").json()
        assert (other["status"], other["done_items"]) == ("running", 2)  # untouched
    with engine.connect() as conn:
        assert conn.execute(select(report.c.owner).where(report.c.id == live)).scalar_one() == "live-server"
    engine.dispose()


def test_a_job_taken_over_stops_writing_and_the_new_server_finishes_it(
    engine: Engine, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch, services: Callable[..., ReportService]
) -> None:
    """Server A's lease on a running job runs out (A stalled); server B takes the job up. A's
    next write is fenced by the owner and refused, so A stops; the report holds B's run only."""
    index_corpus(engine, make_docs(3, 60, 1, "a"), "web")
    monkeypatch.setattr(scanning, "CHUNK", 2)
    monkeypatch.setattr(scanning, "FIRST_CHUNKS", ())
    a, b = services(), services()
    writes: list[tuple[str, int, bool]] = []
    real_progress = rrepo.set_progress

    def progress(conn, report_id, done, owner=None):  # type: ignore[no-untyped-def]
        ok = real_progress(conn, report_id, done, owner)
        writes.append((owner, done, ok))
        return ok

    monkeypatch.setattr(rrepo, "set_progress", progress)
    real_stream = scanning.Scanner.scan_stream
    taken: list[str] = []

    def stream(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        for k, part in enumerate(real_stream(self, *args, **kwargs)):
            if k == 1 and threading.current_thread().name.startswith("contam-job") and not taken:
                with engine.begin() as conn:  # A stalled past its lease
                    conn.execute(update(report).values(lease_until=0.0))
                taken.extend(b.take_up())
                wait_for_report(b, taken[0])  # B runs the job whole meanwhile
            yield part

    monkeypatch.setattr(scanning.Scanner, "scan_stream", stream)
    rid = a.submit(_bench(10), "b.jsonl")
    rep = wait_for_report(a, rid)
    for _ in range(100):  # A's job ends at its next write
        if not a._active:
            break
        time.sleep(0.05)
    assert taken == [rid] and rep["status"] == "done" and rep["done_items"] == 10
    by_a = [(done, ok) for owner, done, ok in writes if owner == a.owner]
    assert by_a[0] == (2, True) and by_a[1:] == [(4, False)]  # refused once taken over, and stopped
    assert [ok for owner, _, ok in writes if owner == b.owner] == [True] * 5
    with engine.connect() as conn:
        idx = list(conn.execute(select(report_item.c.idx).where(report_item.c.report_id == rid)).scalars())
    assert sorted(idx) == list(range(10))


def test_a_live_server_keeps_its_jobs_and_lets_them_go_when_it_stops(
    engine: Engine, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch, services: Callable[..., ReportService]
) -> None:
    """A server renews its jobs' leases while it runs them, so no other server takes them up;
    stopping, it stops them at their next chunk and lets them go at once."""
    index_corpus(engine, make_docs(3, 60, 1, "a"), "web")
    release = threading.Event()
    _paced(monkeypatch, lambda: release.wait(1.5))
    # leases long enough that a renewal late by a second on a busy machine is still in time
    # (at 0.6 s, a CI run beside other work once saw B take the job up)
    a, b = services(lease_seconds=1.5), services(lease_seconds=1.5)
    a.start(grace=0)
    rid = a.submit(_bench(10), "b.jsonl")
    t0 = time.monotonic()
    while time.monotonic() - t0 < 4.0:  # more than two leases: A renews every 0.5 s
        assert b.take_up() == []
        time.sleep(0.1)
    assert a.get(rid)["status"] == "running"
    a.shutdown()
    assert b.take_up() == [rid]  # let go at once, not after a lease
    release.set()
    rep = wait_for_report(b, rid)
    assert rep["status"] == "done" and rep["done_items"] == 10


def test_a_renewal_under_way_when_a_server_stops_does_not_keep_its_jobs(
    engine: Engine, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch, services: Callable[..., ReportService]
) -> None:
    """The heartbeat's renewal could land after the stopping server let its jobs go, holding them
    for another lease: the test above once saw no other server take the job up at once (CI under
    load). Stopping now waits for the renewal under way, then lets go."""
    index_corpus(engine, make_docs(3, 60, 1, "a"), "web")
    release = threading.Event()
    _paced(monkeypatch, lambda: release.wait(5))
    a, b = services(lease_seconds=3.0), services(lease_seconds=3.0)
    renew = rrepo.renew_jobs
    armed, inside, go = threading.Event(), threading.Event(), threading.Event()

    def slow_renew(conn: Any, owner: str, lease: float) -> int:  # a beat held inside its renewal
        if owner == a.owner and armed.is_set() and not inside.is_set():
            inside.set()
            go.wait(10)
        return renew(conn, owner, lease)

    monkeypatch.setattr(rrepo, "renew_jobs", slow_renew)
    stopping = threading.Event()  # the stopping server waits for the beat, or has let go without waiting
    release_jobs = rrepo.release_jobs
    monkeypatch.setattr(rrepo, "release_jobs", lambda *args: (stopping.set(), release_jobs(*args))[1])
    a.start(grace=0)
    assert a._beat is not None
    join = a._beat.join
    monkeypatch.setattr(a._beat, "join", lambda timeout=None: (stopping.set(), join(timeout))[1])
    rid = a.submit(_bench(10), "b.jsonl")
    armed.set()
    assert inside.wait(10)  # a beat is renewing
    stopper = threading.Thread(target=a.shutdown)
    stopper.start()
    assert stopping.wait(10)
    go.set()
    stopper.join(10)
    assert b.take_up() == [rid]  # let go after the renewal, not before it
    release.set()
    assert wait_for_report(b, rid)["status"] == "done"


def test_a_stopping_server_stops_its_jobs_at_their_next_chunk(
    engine: Engine, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch, services: Callable[..., ReportService]
) -> None:
    """A server that stops leaves its running jobs where they are, for the next server, at their
    next chunk: it does not score the rest of the benchmark first (the process would wait for it)."""
    index_corpus(engine, make_docs(3, 60, 1, "a"), "web")
    first_chunk = threading.Event()
    _paced(monkeypatch, lambda: (first_chunk.set(), time.sleep(0.3)))
    a = services()
    rid = a.submit(_bench(20), "b.jsonl")
    assert first_chunk.wait(30)
    a.shutdown()
    a._pool.shutdown(wait=True)  # the job's thread ends
    rep = a.get(rid)
    assert rep["status"] == "running" and rep["done_items"] < 20  # left, not finished
    assert services().take_up() == [rid]  # and let go at once


def test_an_item_not_scored_yet_is_said_to_be(
    engine: Engine, index_corpus: IndexCorpus, services: Callable[..., ReportService]
) -> None:
    """An item asked for while its report's job ran was "no item 'q3' in report R", as if the
    benchmark did not hold it, and an item of a report that does not exist was a missing item
    too (a trial): now the first says the report is still scoring, the second that there is no
    such report, as the report's other routes say it."""
    index_corpus(engine, make_docs(3, 60, 1, "a"), "web")
    svc = services()
    rid = svc.submit(_bench(4), "b.jsonl", background=False)
    with engine.begin() as conn:  # as a job leaves it halfway: two of four items scored
        rrepo.set_status(conn, rid, "running", done_items=2)
        conn.execute(report_item.delete().where(report_item.c.report_id == rid, report_item.c.idx >= 2))
    assert svc.item(rid, "q1")["item_id"] == "q1"
    running = r"no item 'q3' in report \w+ yet: the report is running \(2 of 4 items scored\).*ask again when"
    with pytest.raises(NotFoundError, match=running):
        svc.item(rid, "q3")
    with pytest.raises(NotFoundError, match=r"no item at idx 3 in report \w+ yet: the report is running"):
        svc.item_at(rid, 3)
    with pytest.raises(NotFoundError, match=r"^no report nope$"):
        svc.item("nope", "q3")
    with engine.begin() as conn:
        rrepo.set_status(conn, rid, "done", done_items=4)
    with pytest.raises(NotFoundError, match=r"^no item 'q9' in report \w+$"):
        svc.item(rid, "q9")
