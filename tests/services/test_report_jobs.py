"""Report jobs: several run at once, and deleting a report stops its job (both databases)."""

from __future__ import annotations

import json
import threading
import time

import pytest
from conftest import IndexCorpus
from helpers import make_docs
from sqlalchemy import Engine, func, select

from contam.app.services import scanning
from contam.app.services.reports import ReportService
from contam.app.store import reports as rrepo
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
    steps: list[int] = []
    real = rrepo.set_progress

    def deleted_after_first_step(conn, report_id, done):  # type: ignore[no-untyped-def]
        steps.append(done)
        if len(steps) == 2:  # a DELETE arrives while the job runs
            svc.delete(report_id)
        return real(conn, report_id, done)

    monkeypatch.setattr(rrepo, "set_progress", deleted_after_first_step)
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
