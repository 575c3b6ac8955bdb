"""Use cases around reports: submit a benchmark, run the check (as a background job), read,
export, and the clean subset of the uploaded benchmark (the files themselves: exports.py;
what is kept of each item and the summary: results.py)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import socket
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DatabaseError, OperationalError

from contam.app import __version__
from contam.app.core.config import Thresholds
from contam.app.core.types import Status
from contam.app.errors import (
    ContamError,
    InputError,
    NotFoundError,
    StateError,
    UnavailableError,
    disk_full,
    first_line,
)
from contam.app.limits import Limits, exceeded
from contam.app.processes import temp_prefix
from contam.app.readers.benchmark import ReadNotes, iter_benchmark
from contam.app.services.corpora import API_REMEDIES, left_out, select_corpora_listing
from contam.app.services.database import RETRY_SECONDS, database_trouble, retrying, unavailable_reason
from contam.app.services.exports import export_items, without_items
from contam.app.services.indexing import RUN_LEASE_SECONDS
from contam.app.services.results import Summary, item_row
from contam.app.services.scanning import Scanner
from contam.app.store import db, repo
from contam.app.store import reports as rrepo

log = logging.getLogger("contam.reports")


class JobStranded(Exception):
    """A job failed and the database stayed away too long to record it: it is still 'running'."""


FAILURE_CHARS = 300  # a report's error is one line of at most this many characters (README)


def failure_reason(exc: Exception) -> str:
    """One line for the report's error: never a traceback, nor a database error's statement and
    parameters (SQLAlchemy puts both in its message, items' text included)."""
    if isinstance(exc, DatabaseError):  # a full disk or a damaged file said as such (database_trouble)
        message, passing = database_trouble(exc)
        if not passing:
            return message
    if isinstance(exc, OperationalError):
        return f"database unavailable: {unavailable_reason(exc)}"
    if full := disk_full(exc):
        return full
    if isinstance(exc, ContamError):
        return exc.message
    cause = getattr(exc, "orig", None) or exc  # a DBAPI error's own message, without the SQL
    text = f"{type(cause).__name__}: {first_line(cause)}"
    return text if len(text) <= FAILURE_CHARS else text[: FAILURE_CHARS - 1] + "…"


class JobCancelled(Exception):
    """The report was deleted while its job ran, or another server took its job up (this one's
    lease ran out): the job stops and records nothing."""


class JobStopped(Exception):
    """The server is stopping: the job stops where it is, to be taken up by the next server."""


JOB_LEASE_SECONDS = 30.0  # CONTAM_JOB_LEASE_SECONDS
START_GRACE_SECONDS = 1.0  # a server takes up other servers' jobs only after this (see `start`)

# Every write of a job below is fenced by its owner: a job another server has taken up (or a
# deleted report) raises JobCancelled at its next write, before anything of it is written.


def _save_chunk(conn: Connection, report_id: str, owner: str, done: int, rows: list[dict[str, Any]]) -> None:
    """A chunk's items, with the progress they make; the progress first, so a report deleted
    meanwhile stops the job before any of its items is written."""
    if not rrepo.set_progress(conn, report_id, done, owner):
        raise JobCancelled(report_id)  # deleted (DELETE /api/v1/reports/{id}) or taken up: stop
    for i in range(0, len(rows), 2000):
        rrepo.insert_items(conn, report_id, rows[i : i + 2000])


def _finish(conn: Connection, report_id: str, owner: str, done: int, summary: dict[str, Any]) -> None:
    if not rrepo.set_status(conn, report_id, "done", owner, summary=summary, done_items=done):
        raise JobCancelled(report_id)


def _read(conn: Connection, report_id: str, owner: str, read: int) -> None:
    """Items the job's first pass has read; a report deleted meanwhile stops the job there."""
    if not rrepo.set_read(conn, report_id, read, owner):
        raise JobCancelled(report_id)


def _start(conn: Connection, report_id: str, owner: str, lease: float) -> None:
    """Held by `owner`, running, and no items yet (an interrupted run may have written some)."""
    if not rrepo.take_job(conn, report_id, owner, lease):
        raise JobCancelled(report_id)  # finished, deleted, or held by a live server
    rrepo.set_status(conn, report_id, "running", owner, error=None, done_items=0, read_items=0)
    rrepo.delete_items(conn, report_id)


def _fail(conn: Connection, report_id: str, owner: str, reason: str) -> None:
    if rrepo.set_status(conn, report_id, "failed", owner, error=reason):
        rrepo.delete_items(conn, report_id)


def _sha256(data: bytes | Path) -> str:
    if isinstance(data, bytes):
        return hashlib.sha256(data).hexdigest()
    digest = hashlib.sha256()
    with data.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


class SharedItemId(InputError):
    """An item asked for by an id several items of the report share; `positions`: the idx of the
    first ten (the dashboard links each)."""

    def __init__(self, message: str, positions: list[int]) -> None:
        super().__init__(message)
        self.positions = positions


@contextlib.contextmanager
def spooled(stream: IO[bytes], limit: int) -> Iterator[Path]:
    """An upload copied to a temporary file (removed after), at most `limit` + 1 bytes of it
    (one byte over is enough for `submit` to refuse it): a big upload is never held in memory."""
    with tempfile.TemporaryDirectory(prefix=temp_prefix("upload")) as tmp:
        path = Path(tmp) / "upload"
        with path.open("wb") as out:
            left = limit + 1
            while left > 0 and (block := stream.read(min(left, 1 << 20))):
                out.write(block)
                left -= len(block)
        yield path


def _not_being_indexed(conn: Connection, corpora: Sequence[Mapping[str, Any]]) -> None:
    """Refuse a report job on a corpus an indexing run writes into: its files committed while the
    job scored would make the report half before, half after (a trial; the run, in turn, refuses
    to start while a job reads the corpus: indexing_run). The corpora are held until the report
    is stored, so a run starting meanwhile sees it; in the order of their ids, as another submit
    holds them. A corpus renamed or deleted since it was chosen is refused: the report would name
    a corpus there no longer is (or another given its name since)."""
    for row in sorted(corpora, key=lambda r: int(r["id"])):
        if repo.lock_corpus(conn, int(row["id"])) != row["name"]:
            raise StateError(
                f"corpus {row['name']!r} was renamed or deleted as this report was submitted; upload again "
                "(`contam corpora` lists the corpora there are)"
            )
        if runs := repo.live_runs(conn, int(row["id"])):
            raise StateError(
                f"corpus {row['name']!r} is being indexed ({', '.join(runs)}): a report now would mix the index "
                "before and after its new files; upload again when the run is done (`contam corpora NAME` shows "
                f"it; a killed run lets go of the corpus {RUN_LEASE_SECONDS:.0f} s after it stopped)"
            )


class ReportService:
    """Submits and runs reports. Jobs run on `job_workers` background threads; state lives in the
    database. Each job is held by the server running it under a lease the server renews (`start`),
    so several servers can share a database: a server takes up only the jobs of servers that
    stopped, and a restart resumes queued or interrupted jobs."""

    def __init__(
        self,
        engine: Engine,
        max_upload_bytes: int,
        limits: Limits | None = None,
        retry_seconds: float = RETRY_SECONDS,
        job_workers: int = 1,
        scan_workers: int = 1,
        lease_seconds: float = JOB_LEASE_SECONDS,
    ) -> None:
        """`max_upload_bytes`: the largest benchmark `submit` takes (CONTAM_MAX_UPLOAD_MB, in MiB);
        `limits`: what reading it may take (decompressed size, items, characters per field);
        `retry_seconds`: how long a job retries a database it cannot reach; `job_workers`: jobs
        run at once (CONTAM_JOB_WORKERS), so one large benchmark does not hold up the rest;
        `scan_workers`: processes each job scores its chunks in (CONTAM_SCAN_WORKERS, 0: one per
        core); `lease_seconds`: how long a job stays this server's after it last renewed it
        (CONTAM_JOB_LEASE_SECONDS): a server that dies leaves its jobs to the others after that."""
        self.scan_workers = scan_workers
        self.lease = lease_seconds
        # who runs the jobs: readable in the database, unique to this service
        self.owner = f"{socket.gethostname()[:32]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._active: set[str] = set()  # jobs queued or running on this service's threads
        self._active_lock = threading.Lock()
        self.engine = engine
        self.max_upload = max_upload_bytes
        self.limits = limits or Limits()
        self.retry_seconds = retry_seconds
        self._pool = ThreadPoolExecutor(max(1, job_workers), thread_name_prefix="contam-job")
        self._stopping = threading.Event()
        self._beat: threading.Thread | None = None  # the lease heartbeat, once started

    def start(self, grace: float = START_GRACE_SECONDS) -> None:
        """Keep this server's jobs (renew their leases every third of a lease) and take up the
        jobs of servers that stopped (their leases ran out), on a thread of its own. The first
        take-up waits `grace` seconds: a server whose port is taken stops within it, before it
        touches any job."""
        self._beat = threading.Thread(target=self._heartbeat, args=(grace,), name="contam-job-leases", daemon=True)
        self._beat.start()

    def _heartbeat(self, grace: float) -> None:
        if self._stopping.wait(grace):
            return
        while True:
            try:
                self.take_up()
            except Exception as exc:  # the database away, say: the next beat tries again
                log.warning("report jobs: leases not renewed: %s", failure_reason(exc))
            if self._stopping.wait(self.lease / 3):
                return

    def take_up(self) -> list[str]:
        """Renew the leases of this server's jobs, then queue the jobs nobody holds (a stopped
        server's); the reports it took up."""
        taken = []
        with self.engine.begin() as conn:
            rrepo.renew_jobs(conn, self.owner, self.lease)
            for rid in rrepo.stale_jobs(conn):
                with self._active_lock:
                    mine = rid in self._active  # its lease lapsed while the database was away
                if not mine and rrepo.take_job(conn, rid, self.owner, self.lease):
                    taken.append(rid)
        for rid in taken:
            log.info("report %s: taking up the job a stopped server left", rid)
            self._enqueue(rid)
        return taken

    def _enqueue(self, report_id: str) -> None:
        with self._active_lock:
            if report_id in self._active:
                return
            self._active.add(report_id)
        self._pool.submit(self._run_logged, report_id)

    def shutdown(self) -> None:
        """Stop: jobs stop at their next chunk, and their leases are let go, so the next server
        (or one running beside this one) takes them up at once."""
        self._stopping.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._beat is not None:  # a renewal under way would otherwise extend what is let go below
            self._beat.join(timeout=30)
        try:
            with self.engine.begin() as conn:
                rrepo.release_jobs(conn, self.owner)
        except Exception as exc:  # their leases run out instead
            log.warning("report jobs: leases not let go: %s", failure_reason(exc))

    # ---------------------------------------------------------------- submit and run

    def submit(
        self,
        data: bytes | Path,
        filename: str,
        name: str | None = None,
        mapping: dict[str, Any] | None = None,
        corpora: list[str] | None = None,
        thresholds: Thresholds | None = None,
        background: bool = True,
    ) -> str:
        """Validate the upload now (errors are the caller's 4xx), store it, then check it.
        `data`: the file's bytes, or the file on disk (an upload spooled there), read as a
        stream: no more than one item of it, and its compressed form, is held."""
        size = len(data) if isinstance(data, bytes) else data.stat().st_size
        if size > self.max_upload:
            raise exceeded("upload_bytes", self.max_upload, f"{filename}: the upload")
        if name is not None and len(name) > rrepo.NAME_CHARS:
            raise InputError(f"report name of {len(name)} characters: at most {rrepo.NAME_CHARS}")
        used: dict[str, Any] = {}
        total = sum(1 for _ in iter_benchmark(data, filename, mapping, self.limits, used, keep_raw=False))
        th = thresholds or Thresholds()
        # refuses unknown or empty corpora, or mismatched settings, now
        names, listing = select_corpora_listing(self.engine, corpora)
        scanner = Scanner(self.engine, names, th, listing=listing)
        report_id = uuid.uuid4().hex
        blob = rrepo.compressed(data)  # before the transaction: compressing 200 MB takes a while
        with db.writing(self.engine) as conn:
            _not_being_indexed(conn, scanner.corpora)
            rrepo.create(
                conn,
                {
                    "id": report_id,
                    "name": name or filename[: rrepo.NAME_CHARS],
                    "filename": filename,
                    "file_hash": _sha256(data),
                    "status": "queued",
                    "error": None,
                    "total_items": total,
                    "corpora": [c["name"] for c in scanner.corpora],
                    "mapping": used,
                    "thresholds": th.as_dict(),
                    "fingerprint": scanner.fingerprint,
                    "config": scanner.cfg.to_dict(),
                    "software_version": __version__,
                    "summary": None,
                    # what the report says of the corpora it was not checked against, decided now, as
                    # they are chosen (an upload that names its corpora chose them: nothing)
                    "left_out": [] if corpora else left_out(listing, names, API_REMEDIES),
                    "upload_zst": blob,
                },
                owner=self.owner,
                lease=self.lease,
            )
        del blob
        if background:
            self._enqueue(report_id)
        else:
            self.run(report_id)
        return report_id

    def _run_logged(self, report_id: str) -> None:
        again = False
        try:
            self.run(report_id)
        except JobStranded as exc:  # the database stayed away: run the job again once it may be back
            log.error("report %s: %s; trying it again in %.0f s", report_id, exc, self.retry_seconds)
            if not self._stopping.is_set():
                timer = threading.Timer(self.retry_seconds, self._requeue, (report_id,))
                timer.daemon = True
                timer.start()
                again = True
        except Exception:  # the job records its own failure; this only keeps the thread alive
            log.exception("report %s failed", report_id)
        finally:
            if not again:
                with self._active_lock:
                    self._active.discard(report_id)

    def _requeue(self, report_id: str) -> None:
        if self._stopping.is_set():
            with self._active_lock:
                self._active.discard(report_id)
        else:
            self._pool.submit(self._run_logged, report_id)

    def _write(self, what: str, work: Callable[[Connection], object]) -> None:
        """One transaction of the job, retried with backoff while the database is unreachable."""

        def attempt() -> None:
            with self.engine.begin() as conn:
                work(conn)

        retrying(what, attempt, self.retry_seconds, self._stopping.is_set)  # a stopping server: resumed later

    def _load(self, report_id: str, dest: IO[bytes]) -> dict[str, Any]:
        """The report, its upload written to `dest` (from the start, whatever an earlier attempt left)."""
        dest.seek(0)
        dest.truncate()
        with self.engine.connect() as conn:
            rep = rrepo.get(conn, report_id)
            found = rep is not None and rrepo.upload_to(conn, report_id, dest)
        if rep is None or not found:
            raise NotFoundError(f"no report {report_id}")
        dest.flush()
        return rep

    def run(self, report_id: str) -> None:
        """Score every item of a stored report; on any error mark it failed with the reason. Its
        writes are retried while the database is away (`retry_seconds`); if even the failure
        cannot be recorded, JobStranded: the report stays running, to be picked up again.

        The upload is decompressed to a temporary file and read from there as a stream (twice:
        Scanner.scan_stream); each chunk's items are written as it is scored, with the progress,
        so neither the benchmark nor its results are ever held whole."""
        with tempfile.NamedTemporaryFile(prefix=temp_prefix("upload")) as spool:
            try:
                rep = retrying(
                    "reading the report",
                    lambda: self._load(report_id, spool),
                    self.retry_seconds,
                    self._stopping.is_set,
                )
                self._write("starting the job", lambda c: _start(c, report_id, self.owner, self.lease))
            except UnavailableError as lost:
                raise JobStranded(lost.message) from lost
            except JobCancelled:
                log.info("report %s: finished, deleted or held by another server: not run here", report_id)
                return
            try:
                self._score(report_id, rep, Path(spool.name))
            except JobCancelled:
                log.info("report %s was deleted, or taken up by another server: its job stopped", report_id)
            except JobStopped:
                log.info("report %s: the server is stopping; the job is left to the next server", report_id)
            except Exception as exc:
                reason = failure_reason(exc)
                try:
                    self._write("recording the failure", lambda c: _fail(c, report_id, self.owner, reason))
                except UnavailableError as lost:
                    raise JobStranded(lost.message) from exc
                raise

    def _score(self, report_id: str, rep: dict[str, Any], path: Path) -> None:
        th = Thresholds(**rep["thresholds"])
        scanner = Scanner(self.engine, rep["corpora"], th, workers=self.scan_workers, retry_seconds=self.retry_seconds)

        # the reader's arguments, not a closure: pass 1 can then run in a process of its own
        notes = ReadNotes()
        items = functools.partial(
            iter_benchmark, path, rep["filename"], rep["mapping"], self.limits, None, False, notes
        )

        summary, done = Summary(scanner.corpus_names), 0

        owner = self.owner

        def reading(read: int) -> None:
            if self._stopping.is_set():
                raise JobStopped(report_id)
            self._write("recording progress", functools.partial(_read, report_id=report_id, owner=owner, read=read))

        for part in scanner.scan_stream(items, reading=reading):
            if self._stopping.is_set():
                raise JobStopped(report_id)
            rows = [item_row(r, th) for r in part]
            summary.add(part)
            done += len(part)
            self._write(
                "recording progress",
                functools.partial(_save_chunk, report_id=report_id, owner=owner, done=done, rows=rows),
            )
        said = {**summary.as_dict(), "notes": (rep.get("left_out") or []) + notes.said()}
        self._write("saving the summary", lambda c: _finish(c, report_id, owner, done, said))

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
        """The items of one report (or all), filtered (rrepo.query_items); a corpus filter naming
        none of the report's corpora is refused, naming them (a trial: a corpus renamed since,
        asked by its old name, gave 0 items without a word). A search or corpus holding a NUL
        character is refused, as PostgreSQL refuses it: SQLite's LIKE stopped at it, and a search
        for "x\0" matched every item."""
        for name in ("q", "corpus"):
            if "\x00" in (filters.get(name) or ""):
                raise InputError(f"{name} holds a NUL character, which no item's text or corpus holds: remove it")
        if report_id is not None:
            corpora = self.get(report_id).get("corpora") or []
            if (corpus := filters.get("corpus")) is not None and corpus not in corpora:
                raise InputError(
                    f"report {report_id} was not checked against a corpus named {corpus!r} "
                    f"(its corpora: {', '.join(corpora) or 'none'})"
                )
        with self.engine.connect() as conn:
            return rrepo.query_items(conn, report_id, **filters)

    def item(self, report_id: str, item_id: str, idx: int | None = None) -> dict[str, Any]:
        """The report's item with this id; idx (its position in the benchmark, the results'
        `idx`) picks one of several items that share the id, which is refused without it."""
        with self.engine.connect() as conn:
            at = [idx] if idx is not None else rrepo.item_positions(conn, report_id, item_id, 11)
            if len(at) > 1:  # only their positions read: a constant id column may give thousands
                where = ", ".join(map(str, at[:10])) + (", ..." if len(at) > 10 else "")
                raise SharedItemId(
                    f"several items of report {report_id} have the id {item_id!r} (idx {where}): "
                    "ask for one by its idx (?idx=N)",
                    at[:10],
                )
            it = rrepo.get_item(conn, report_id, item_id, at[0]) if at else None
        if it is None:
            where = f" at idx {idx}" if idx is not None else ""
            raise self._no_item(report_id, f"no item {item_id!r}{where} in report {report_id}")
        return it

    def item_at(self, report_id: str, idx: int) -> dict[str, Any]:
        """The report's item at position idx (the results' `idx`), whatever its id."""
        with self.engine.connect() as conn:
            it = rrepo.get_item(conn, report_id, None, idx)
        if it is None:
            raise self._no_item(report_id, f"no item at idx {idx} in report {report_id}")
        return it

    def _no_item(self, report_id: str, said: str) -> NotFoundError:
        """Why an item was not found: no such report (said as the other routes say it, not as a
        missing item), or one still checking, whose items come as they are scored (a trial: an
        item asked for during the job was "no item", as if the benchmark did not hold it)."""
        rep = self.get(report_id)
        if rep["status"] in rrepo.PENDING:
            said += (
                f" yet: the report is {rep['status']} ({rep['done_items']:,} of {rep['total_items']:,} items "
                "scored) and its items come as they are scored; ask again when it is done"
            )
        return NotFoundError(said)

    def delete(self, report_id: str) -> None:
        with self.engine.begin() as conn:
            if not rrepo.delete_report(conn, report_id):
                raise NotFoundError(f"no report {report_id}")

    # ---------------------------------------------------------------- exports

    def export(self, report_id: str, fmt: str) -> tuple[bytes, str, str]:
        """All items as JSONL or CSV (one row an item: id, status, score and the metrics); the
        bytes, their media type and a file name: the benchmark's, as the clean subset's (it was
        `report-<hex>.csv`, beside `mmlu.clean.jsonl`: a trial), and the report's id."""
        rep = self._require_done(report_id)
        _, items = self.items(report_id, sort="row", descending=False, limit=10**9)
        body, media = export_items(items, fmt)
        name = rep.get("filename") or "report"
        stem = name.rsplit(".", 2 if name.lower().endswith((".gz", ".zst", ".zstd", ".bz2", ".xz")) else 1)[0]
        return body, media, f"{stem or 'report'}.results-{report_id[:8]}.{fmt}"

    def clean_subset(self, report_id: str, drop_suspicious: bool = False) -> tuple[bytes, str]:
        """The uploaded benchmark without its contaminated (and, if asked, suspicious) items, in
        its original format."""
        drop = {Status.CONTAMINATED, Status.SUSPICIOUS} if drop_suspicious else {Status.CONTAMINATED}
        rep = self._require_done(report_id)
        with self.engine.connect() as conn:
            data = rrepo.upload(conn, report_id)
            statuses = rrepo.statuses_by_idx(conn, report_id)
        assert data is not None
        return without_items(data, rep["filename"], statuses, drop, self.limits)

    def _require_done(self, report_id: str) -> dict[str, Any]:
        rep = self.get(report_id)
        if rep["status"] == "failed":  # it never will be done (a new user's trial: "its results come when it is")
            raise StateError(
                f"report {report_id} failed ({rep.get('error') or 'no reason kept'}): it has no results to "
                "export; upload the benchmark again once the cause is mended"
            )
        if rep["status"] != "done":
            raise StateError(f"report {report_id} is {rep['status']}, not done: its results come when it is")
        return rep
