"""Use cases around reports: submit a benchmark, run the check (as a background job), read,
export, and the clean subset of the uploaded benchmark (the files themselves: exports.py;
what is kept of each item and the summary: results.py)."""

from __future__ import annotations

import hashlib
import logging
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import OperationalError

from contam.app import __version__
from contam.app.core.config import Thresholds
from contam.app.core.types import Status
from contam.app.errors import ContamError, InputError, NotFoundError, UnavailableError
from contam.app.limits import Limits, exceeded
from contam.app.readers.benchmark import read_benchmark
from contam.app.services.corpora import select_corpora
from contam.app.services.database import RETRY_SECONDS, retrying, unavailable_reason
from contam.app.services.exports import export_items, without_items
from contam.app.services.results import item_row, summarize
from contam.app.services.scanning import Scanner
from contam.app.store import reports as rrepo

log = logging.getLogger("contam.reports")


class JobStranded(Exception):
    """A job failed and the database stayed away too long to record it: it is still 'running'."""


def failure_reason(exc: Exception) -> str:
    if isinstance(exc, OperationalError):
        return f"database unavailable: {unavailable_reason(exc)}"
    return exc.message if isinstance(exc, ContamError) else f"{type(exc).__name__}: {exc}"


class JobCancelled(Exception):
    """The report was deleted while its job ran: the job stops and records nothing."""


def _save(conn: Connection, report_id: str, rows: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    if not rrepo.set_status(conn, report_id, "done", summary=summary, done_items=len(rows)):
        raise JobCancelled(report_id)  # deleted since the last progress: no orphan items
    rrepo.delete_items(conn, report_id)
    for i in range(0, len(rows), 2000):
        rrepo.insert_items(conn, report_id, rows[i : i + 2000])


def _fail(conn: Connection, report_id: str, reason: str) -> None:
    rrepo.delete_items(conn, report_id)
    rrepo.set_status(conn, report_id, "failed", error=reason)


class ReportService:
    """Submits and runs reports. Jobs run on `job_workers` background threads; state lives in the database,
    so a restart resumes queued or interrupted jobs (`resume_pending`)."""

    def __init__(
        self,
        engine: Engine,
        max_upload_bytes: int,
        limits: Limits | None = None,
        retry_seconds: float = RETRY_SECONDS,
        job_workers: int = 1,
        scan_workers: int = 1,
    ) -> None:
        """`max_upload_bytes`: the largest benchmark `submit` takes (CONTAM_MAX_UPLOAD_MB, in MiB);
        `limits`: what reading it may take (decompressed size, items, characters per field);
        `retry_seconds`: how long a job retries a database it cannot reach; `job_workers`: jobs
        run at once (CONTAM_JOB_WORKERS), so one large benchmark does not hold up the rest;
        `scan_workers`: processes each job scores its chunks in (CONTAM_SCAN_WORKERS, 0: one per
        core)."""
        self.scan_workers = scan_workers
        self.engine = engine
        self.max_upload = max_upload_bytes
        self.limits = limits or Limits()
        self.retry_seconds = retry_seconds
        self._pool = ThreadPoolExecutor(max(1, job_workers), thread_name_prefix="contam-job")
        self._stopping = threading.Event()

    def shutdown(self) -> None:
        self._stopping.set()
        self._pool.shutdown(wait=False, cancel_futures=True)

    # ---------------------------------------------------------------- submit and run

    def submit(
        self,
        data: bytes,
        filename: str,
        name: str | None = None,
        mapping: dict[str, Any] | None = None,
        corpora: list[str] | None = None,
        thresholds: Thresholds | None = None,
        background: bool = True,
    ) -> str:
        """Validate the upload now (errors are the caller's 4xx), store it, then check it."""
        if len(data) > self.max_upload:
            raise exceeded("upload_bytes", self.max_upload, f"{filename}: the upload")
        if name is not None and len(name) > rrepo.NAME_CHARS:
            raise InputError(f"report name of {len(name)} characters: at most {rrepo.NAME_CHARS}")
        items, used = read_benchmark(data, filename, mapping, self.limits)
        th = thresholds or Thresholds()
        # refuses unknown or empty corpora, or mismatched settings, now
        scanner = Scanner(self.engine, select_corpora(self.engine, corpora), th)
        report_id = uuid.uuid4().hex
        with self.engine.begin() as conn:
            rrepo.create(
                conn,
                {
                    "id": report_id,
                    "name": name or filename[: rrepo.NAME_CHARS],
                    "filename": filename,
                    "file_hash": hashlib.sha256(data).hexdigest(),
                    "status": "queued",
                    "error": None,
                    "total_items": len(items),
                    "corpora": [c["name"] for c in scanner.corpora],
                    "mapping": used,
                    "thresholds": th.as_dict(),
                    "fingerprint": scanner.fingerprint,
                    "config": scanner.cfg.to_dict(),
                    "software_version": __version__,
                    "summary": None,
                    "upload": data,
                },
            )
        if background:
            self._pool.submit(self._run_logged, report_id)
        else:
            self.run(report_id)
        return report_id

    def _run_logged(self, report_id: str) -> None:
        try:
            self.run(report_id)
        except JobStranded as exc:  # the database stayed away: run the job again once it may be back
            log.error("report %s: %s; trying it again in %.0f s", report_id, exc, self.retry_seconds)
            if not self._stopping.is_set():
                timer = threading.Timer(self.retry_seconds, self._requeue, (report_id,))
                timer.daemon = True
                timer.start()
        except Exception:  # the job records its own failure; this only keeps the thread alive
            log.exception("report %s failed", report_id)

    def _requeue(self, report_id: str) -> None:
        if not self._stopping.is_set():
            self._pool.submit(self._run_logged, report_id)

    def _write(self, what: str, work: Callable[[Connection], object]) -> None:
        """One transaction of the job, retried with backoff while the database is unreachable."""

        def attempt() -> None:
            with self.engine.begin() as conn:
                work(conn)

        retrying(what, attempt, self.retry_seconds, self._stopping.is_set)  # a stopping server: resumed later

    def _load(self, report_id: str) -> tuple[dict[str, Any], bytes]:
        with self.engine.connect() as conn:
            rep = rrepo.get(conn, report_id)
            data = rrepo.upload(conn, report_id)
        if rep is None or data is None:
            raise NotFoundError(f"no report {report_id}")
        return rep, data

    def run(self, report_id: str) -> None:
        """Score every item of a stored report; on any error mark it failed with the reason. Its
        writes are retried while the database is away (`retry_seconds`); if even the failure
        cannot be recorded, JobStranded: the report stays running, to be picked up again."""
        try:
            rep, data = retrying(
                "reading the report", lambda: self._load(report_id), self.retry_seconds, self._stopping.is_set
            )
            self._write("starting the job", lambda c: rrepo.set_status(c, report_id, "running", error=None))
        except UnavailableError as lost:
            raise JobStranded(lost.message) from lost
        try:
            items, _ = read_benchmark(data, rep["filename"], rep["mapping"], self.limits)
            th = Thresholds(**rep["thresholds"])
            scanner = Scanner(self.engine, rep["corpora"], th, workers=self.scan_workers)

            def progress(done: int, total: int) -> None:
                kept: list[bool] = []
                self._write("recording progress", lambda c: kept.append(rrepo.set_progress(c, report_id, done)))
                if not kept[-1]:  # deleted (DELETE /api/v1/reports/{id}): stop scoring
                    raise JobCancelled(report_id)

            results = scanner.scan(items, progress)
            rows = [item_row(r, th) for r in results]
            summary = summarize(results, th)
            self._write("saving the results", lambda c: _save(c, report_id, rows, summary))
        except JobCancelled:
            log.info("report %s was deleted: its job stopped", report_id)
        except Exception as exc:
            reason = failure_reason(exc)
            try:
                self._write("recording the failure", lambda c: _fail(c, report_id, reason))
            except UnavailableError as lost:
                raise JobStranded(lost.message) from exc
            raise

    def resume_pending(self) -> list[str]:
        """Re-queue reports left queued or running by a stopped server."""
        with self.engine.connect() as conn:
            ids = rrepo.with_status(conn, ["queued", "running"])
        for rid in ids:
            self._pool.submit(self._run_logged, rid)
        return ids

    # ---------------------------------------------------------------- read

    def get(self, report_id: str) -> dict[str, Any]:
        with self.engine.connect() as conn:
            rep = rrepo.get(conn, report_id)
        if rep is None:
            raise NotFoundError(f"no report {report_id}")
        return rep

    def list_reports(self, limit: int = 100, offset: int = 0) -> tuple[int, list[dict[str, Any]]]:
        with self.engine.connect() as conn:
            return rrepo.list_all(conn, limit, offset)

    def items(self, report_id: str | None, **filters: Any) -> tuple[int, list[dict[str, Any]]]:
        if report_id is not None:
            self.get(report_id)
        with self.engine.connect() as conn:
            return rrepo.query_items(conn, report_id, **filters)

    def item(self, report_id: str, item_id: str) -> dict[str, Any]:
        with self.engine.connect() as conn:
            it = rrepo.get_item(conn, report_id, item_id)
        if it is None:
            raise NotFoundError(f"no item {item_id!r} in report {report_id}")
        return it

    def delete(self, report_id: str) -> None:
        with self.engine.begin() as conn:
            if not rrepo.delete_report(conn, report_id):
                raise NotFoundError(f"no report {report_id}")

    # ---------------------------------------------------------------- exports

    def export(self, report_id: str, fmt: str) -> tuple[bytes, str]:
        """All items as JSONL or CSV (one row an item: id, status, score and the metrics)."""
        self._require_done(report_id)
        _, items = self.items(report_id, sort="row", descending=False, limit=10**9)
        return export_items(items, fmt)

    def clean_subset(self, report_id: str, drop_suspicious: bool = False) -> tuple[bytes, str]:
        """The uploaded benchmark without its contaminated (and, if asked, suspicious) items, in
        its original format."""
        drop = {Status.CONTAMINATED, Status.SUSPICIOUS} if drop_suspicious else {Status.CONTAMINATED}
        rep = self._require_done(report_id)
        with self.engine.connect() as conn:
            data = rrepo.upload(conn, report_id)
            statuses = rrepo.statuses_by_idx(conn, report_id)
        assert data is not None
        return without_items(data, rep["filename"], statuses, drop)

    def _require_done(self, report_id: str) -> dict[str, Any]:
        rep = self.get(report_id)
        if rep["status"] != "done":
            raise InputError(f"report {report_id} is {rep['status']}, not done")
        return rep
