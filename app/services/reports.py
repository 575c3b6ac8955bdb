"""Use cases around reports: submit a benchmark, run the check (as a background job), read,
export, and the clean subset of the uploaded benchmark (the files themselves: exports.py;
what is kept of each item and the summary: results.py)."""

from __future__ import annotations

import hashlib
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy import Engine

from app import __version__
from app.core.config import Thresholds
from app.core.types import Status
from app.errors import InputError, NotFoundError
from app.limits import Limits, exceeded
from app.readers.benchmark import read_benchmark
from app.services.exports import export_items, without_items
from app.services.results import item_row, summarize
from app.services.scanning import Scanner
from app.store import reports as rrepo

log = logging.getLogger("contam.reports")


class ReportService:
    """Submits and runs reports. Jobs run on one background thread; state lives in the database,
    so a restart resumes queued or interrupted jobs (`resume_pending`)."""

    def __init__(self, engine: Engine, max_upload_bytes: int, limits: Limits | None = None) -> None:
        """`max_upload_bytes`: the largest benchmark `submit` takes (CONTAM_MAX_UPLOAD_MB, in MiB);
        `limits`: what reading it may take (decompressed size, items, characters per field)."""
        self.engine = engine
        self.max_upload = max_upload_bytes
        self.limits = limits or Limits()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="contam-job")

    def shutdown(self) -> None:
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
        scanner = Scanner(self.engine, corpora, th)  # refuses unknown corpora or mismatched settings now
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
        except Exception:  # the job records its own failure; this only keeps the thread alive
            log.exception("report %s failed", report_id)

    def run(self, report_id: str) -> None:
        """Score every item of a stored report; on any error mark it failed with the reason."""
        with self.engine.connect() as conn:
            rep = rrepo.get(conn, report_id)
            data = rrepo.upload(conn, report_id)
        if rep is None or data is None:
            raise NotFoundError(f"no report {report_id}")
        with self.engine.begin() as conn:
            rrepo.set_status(conn, report_id, "running", error=None)
        try:
            items, _ = read_benchmark(data, rep["filename"], rep["mapping"], self.limits)
            th = Thresholds(**rep["thresholds"])
            scanner = Scanner(self.engine, rep["corpora"], th)

            def progress(done: int, total: int) -> None:
                with self.engine.begin() as c:
                    rrepo.set_progress(c, report_id, done)

            results = scanner.scan(items, progress)
            with self.engine.begin() as conn:
                rrepo.delete_items(conn, report_id)
                rows = [item_row(r, th) for r in results]
                for i in range(0, len(rows), 2000):
                    rrepo.insert_items(conn, report_id, rows[i : i + 2000])
                rrepo.set_status(conn, report_id, "done", summary=summarize(results, th), done_items=len(results))
        except Exception as exc:
            with self.engine.begin() as conn:
                rrepo.delete_items(conn, report_id)
                rrepo.set_status(conn, report_id, "failed", error=f"{type(exc).__name__}: {exc}")
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
