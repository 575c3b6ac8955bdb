"""The Ray executor: `contam index --executor ray [--address ADDR]`.

The driver (this process) lists the corpus files and hands them, in groups, to Ray tasks, at
most `tasks` at once; it never reads a document. A task, on whichever machine of the cluster
Ray puts it, hashes its files, claims them in the database (leases it renews while it works),
reads and signs their documents and writes them and their postings (binary COPY into the
blocks) straight into PostgreSQL, in one transaction per group that also drops the claims. So:

- a file is indexed exactly once: its rows commit together with its record as done (as with
  the local executor), and only while the task still holds its claim (the fence: a task whose
  lease ran out and was taken over rolls back);
- a worker killed mid-file leaves nothing: its transaction dies with its connection, its
  claims lapse after `lease` seconds and the next task to try the files (the driver's retry in
  this run, or another run) takes them over;
- runs that overlap share the files: a file another run's task holds is tried again when that
  task's lease would end, and found indexed by then, or taken over.

The workers must reach the database at the URL the driver was given and read the corpus files
at the same paths (a shared filesystem). SQLite is refused: a Ray worker on another machine
cannot open this machine's file. Ray is imported only when the executor is used.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
import uuid
from collections import Counter, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

from contam.app.core.config import SignatureConfig
from contam.app.errors import ConfigError, ContamError, CorruptFileError
from contam.app.readers.corpus import find_files, read_documents, why_no_documents
from contam.app.services.database import connect
from contam.app.services.indexing import (
    CorpusWriter,
    drop_stale_claims,
    file_indexed,
    forget_failures,
    open_corpus,
    release_claims,
    renew_claims,
    take_claim,
)
from contam.indexer.job import batches, file_identity
from contam.indexer.options import IndexOptions
from contam.indexer.postings import PostingBuffer
from contam.indexer.progress import NoProgress, Progress
from contam.indexer.signing import sign_batch
from contam.indexer.summary import FileReport, IndexSummary

LEASE_SECONDS = 30.0  # a claim not renewed for this long may be taken over
CRASH_RETRIES = 3  # times a file is tried again after its worker died, in one run
KILL_MARKER = "CONTAM_TEST_KILL_MARKER"  # tests: a file naming the path whose worker kills itself mid-file


@dataclass
class Outcome:
    """What a task returns: the file's report, or `busy` seconds (another task holds it)."""

    report: FileReport
    busy: float = 0.0
    content_hash: str = ""


# ---------------------------------------------------------------- the task, on a Ray worker

_engines: dict[str, Engine] = {}  # per worker process: one engine (and pool) per database


def _engine(url: str) -> Engine:
    if url not in _engines:
        _engines[url] = connect(url)
    return _engines[url]


class Heartbeat(threading.Thread):
    """Renews a task's claims every lease/3 seconds; `lost` is set when another task took one over."""

    def __init__(self, engine: Engine, corpus_id: int, owner: str, lease: float, claims: int) -> None:
        super().__init__(name="contam-claim-heartbeat", daemon=True)
        self.engine, self.corpus_id, self.owner, self.lease, self.claims = engine, corpus_id, owner, lease, claims
        self.lost = threading.Event()
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.lease / 3):
            try:
                if renew_claims(self.engine, self.corpus_id, self.owner, self.lease) < self.claims:
                    self.lost.set()
                    return
            except OperationalError:  # the database is away: the lease may lapse; the fence decides
                continue

    def stop(self) -> None:
        self.done.set()
        if self.is_alive():
            self.join()


@dataclass
class Claimed:
    path: Path
    size: int
    content_hash: str


def index_files(
    url: str, corpus_id: int, paths: list[str], cfg: SignatureConfig, opts: IndexOptions, lease: float
) -> list[Outcome]:
    """The Ray task: index a group of corpus files into the corpus in one transaction, exactly
    once (see the module doc); an Outcome per file."""
    engine, owner = _engine(url), uuid.uuid4().hex
    out: list[Outcome] = []
    mine: list[Claimed] = []
    for path in paths:
        p = Path(path)
        size, chash = p.stat().st_size, file_identity(p, opts)
        if file_indexed(engine, corpus_id, chash):
            out.append(Outcome(FileReport(path, "unchanged", bytes=size), content_hash=chash))
        elif wait := take_claim(engine, corpus_id, chash, path, owner, lease):
            out.append(Outcome(FileReport(path, "busy", bytes=size), busy=wait, content_hash=chash))
        else:
            mine.append(Claimed(p, size, chash))
    if not mine:
        return out
    heartbeat = Heartbeat(engine, corpus_id, owner, lease, len(mine))
    heartbeat.start()
    try:
        with CorpusWriter(engine, corpus_id) as store:
            out += _write_group(store, mine, owner, cfg, opts, heartbeat)
    finally:
        heartbeat.stop()
    for o in out:
        if o.report.status == "done":  # failed records of the path with other settings go
            forget_failures(engine, corpus_id, o.report.path)
    return out


def _write_group(
    store: CorpusWriter, mine: list[Claimed], owner: str, cfg: SignatureConfig, opts: IndexOptions, hb: Heartbeat
) -> list[Outcome]:
    """Write the claimed files in one transaction, committed only while this task holds every
    claim. A corrupt file rolls the group back and is recorded as failed; the others are handed
    back (busy, no wait) to be tried again, as are all when a claim was lost."""
    store.begin()
    postings = PostingBuffer(store, opts.segment_rows)
    reports = []
    for c in mine:
        report = _write_file(store, postings, c, cfg, opts, hb)
        if report.status != "failed" and report.status != "busy":
            reports.append(report)
            continue
        store.rollback()
        hb.stop()
        recorded = report.status == "failed" and store.record_failure(
            str(c.path), c.size, c.content_hash, report.error or "", report.skipped, owner
        )
        release_claims(store.engine, store.corpus_id, owner)
        failed = [Outcome(report, content_hash=c.content_hash)] if recorded else []
        return failed + [_again(o) for o in mine if not (recorded and o is c)]
    postings.flush()
    hb.stop()
    if not store.release_claims(owner, [c.content_hash for c in mine]):  # one was taken over
        store.rollback()
        release_claims(store.engine, store.corpus_id, owner)
        return [_again(c) for c in mine]
    store.commit()
    return [Outcome(r, content_hash=c.content_hash) for r, c in zip(reports, mine, strict=True)]


def _again(c: Claimed) -> Outcome:
    return Outcome(FileReport(str(c.path), "busy", bytes=c.size), busy=0.01, content_hash=c.content_hash)


def _write_file(
    store: CorpusWriter, postings: PostingBuffer, c: Claimed, cfg: SignatureConfig, opts: IndexOptions, hb: Heartbeat
) -> FileReport:
    """Write a file's documents and postings in the store's open transaction; its report
    ("done", "unchanged": committed meanwhile by another indexer, "failed", or "busy": a claim lost)."""
    report = FileReport(str(c.path), "done", bytes=c.size)
    t0 = time.perf_counter()
    file_id = store.start_file(str(c.path), c.size, c.content_hash)
    if file_id is None:
        report.status = "unchanged"
        return report
    skipped: Counter[str] = Counter()
    try:
        docs = read_documents(c.path, skipped, opts.text_field, opts.id_field, opts.limit)
        for batch in batches(docs, opts):
            sb = sign_batch([d.text for d in batch], cfg, opts.store_text)
            ids = store.add_documents(file_id, batch, sb.n_chars, sb.n_tokens, sb.text_hash, sb.blobs)
            postings.add(sb, ids)
            report.documents += len(batch)
            report.tokens += int(sb.n_tokens.sum())
            report.ngrams += len(sb.ng_hash)
            report.windows += len(sb.band_key) // cfg.bands
            report.text_bytes += sum(sb.n_chars)
            _test_kill(str(c.path))
            if hb.lost.is_set():
                report.status = "busy"
                return report
    except CorruptFileError as exc:
        report.status, report.error = "failed", exc.message
    report.skipped = dict(sorted(skipped.items()))
    if report.status == "done" and report.documents == 0:  # zero is never silent
        report.status, report.error = "failed", f"{c.path}: {why_no_documents(c.path, opts.text_field, skipped)}"
    if report.status != "done":
        return report
    report.seconds = time.perf_counter() - t0
    store.finish_file(file_id, **report.counts())
    return report


def _test_kill(path: str) -> None:
    """The tests' hook: with CONTAM_TEST_KILL_MARKER naming a file that holds part of this
    path, the first worker to get here deletes the file and kills itself (-9) mid-file."""
    marker = os.environ.get(KILL_MARKER)
    if not marker:
        return
    try:
        want = Path(marker).read_text().strip()
        if want and want in path:
            os.remove(marker)  # only one worker gets past this
            os.kill(os.getpid(), signal.SIGKILL)
    except FileNotFoundError:
        return


# ---------------------------------------------------------------- the driver


def require_postgresql(engine: Engine) -> None:
    if engine.dialect.name != "postgresql":
        raise ConfigError(
            "--executor ray needs a PostgreSQL database (--db postgresql://...): Ray workers, "
            "which may run on other machines, cannot open this machine's SQLite file"
        )


class RayJob:
    """Index files into one corpus with Ray tasks. Use as a context manager: it connects to the
    cluster at `address` (None: Ray's own choice, RAY_ADDRESS or the cluster started last on
    this machine, else a new local one) unless this process is connected already, and
    disconnects if it connected. `tasks`: files in work at once (None: the cluster's CPUs)."""

    def __init__(
        self,
        engine: Engine,
        corpus: str,
        cfg: SignatureConfig,
        opts: IndexOptions,
        progress: Progress | None = None,
        *,
        address: str | None = None,
        tasks: int | None = None,
        lease: float = LEASE_SECONDS,
    ) -> None:
        require_postgresql(engine)
        self.engine, self.corpus, self.cfg, self.opts = engine, corpus, cfg, opts
        self.progress = progress or NoProgress()
        self.address, self.tasks, self.lease = address, tasks, lease
        self.url = engine.url.render_as_string(hide_password=False)
        self._connected = False

    def __enter__(self) -> RayJob:
        import ray

        if not ray.is_initialized():
            try:
                ray.init(address=self.address, logging_level=logging.WARNING, include_dashboard=False)
            except ConnectionError as exc:
                hint = (
                    ""
                    if os.environ.get("RAY_AUTH_MODE")
                    else " (a cluster with token authentication: set RAY_AUTH_MODE=token)"
                )
                raise ContamError(f"cannot reach the Ray cluster at {self.address or 'auto'}: {exc}{hint}") from exc
            self._connected = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._connected:
            import ray

            ray.shutdown()

    def run(self, paths: list[Path]) -> IndexSummary:
        t0 = time.perf_counter()
        files = find_files(paths)
        self.progress.run_started(files)
        corpus_id = open_corpus(self.engine, self.corpus, self.cfg, self.opts.store_text)
        reports = _Scheduler(self, corpus_id, files).run(files)
        with CorpusWriter(self.engine, corpus_id) as store:  # what the local writer does at its end
            store.merge_segments(self.opts.segment_rows, self.opts.merge_fanout, lambda: False)
            if any(r.status == "done" for r in reports) or store.statistics_stale():
                store.refresh_statistics()
        drop_stale_claims(self.engine, corpus_id)
        order = {str(p): i for i, p in enumerate(files)}
        return IndexSummary(self.corpus, sorted(reports, key=lambda r: order[r.path]), time.perf_counter() - t0)


class _Scheduler:
    """The driver's loop: keep `tasks` groups of files in work, try busy files again when their
    holder's lease would end, retry files whose worker died.

    A task takes a group of files of up to `commit_bytes` on disk, and of at most a
    2 x tasks-th of the corpus so that every worker gets work: a group is one transaction and
    its postings one buffer, so small files still make full-sized posting blocks."""

    def __init__(self, job: RayJob, corpus_id: int, files: list[Path]) -> None:
        import ray

        self.job, self.corpus_id = job, corpus_id
        self.remote = ray.remote(index_files).options(num_cpus=1, max_retries=0)
        cpus = int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
        self.limit = max(1, job.tasks or cpus)
        self.sizes = {str(p): p.stat().st_size for p in files}
        self.group_bytes = min(job.opts.commit_bytes, sum(self.sizes.values()) // (2 * self.limit))
        self.crashes: Counter[str] = Counter()
        self.later: list[tuple[float, str, str]] = []  # (when, path, content hash) of busy files
        self.inflight: dict[Any, list[str]] = {}
        self.reports: list[FileReport] = []

    def run(self, files: list[Path]) -> list[FileReport]:
        import ray

        pending = deque(str(p) for p in files)
        try:
            while pending or self.inflight or self.later:
                self._due(pending)
                while pending and len(self.inflight) < self.limit:
                    self._submit(pending)
                if not self.inflight:
                    time.sleep(0.05)
                    continue
                ready, _ = ray.wait(list(self.inflight), num_returns=1, timeout=0.2)
                for ref in ready:
                    self._collect(ref, self.inflight.pop(ref))
        except BaseException:
            for ref in self.inflight:
                ray.cancel(ref, force=True)
            raise
        return self.reports

    def _submit(self, pending: deque[str]) -> None:
        job, group = self.job, [pending.popleft()]
        size = self.sizes[group[0]]
        while pending and size + self.sizes[pending[0]] <= self.group_bytes:
            group.append(pending.popleft())
            size += self.sizes[group[-1]]
        for path in group:
            job.progress.file_started(path, self.sizes[path])
        self.inflight[self.remote.remote(job.url, self.corpus_id, group, job.cfg, job.opts, job.lease)] = group

    def _due(self, pending: deque[str]) -> None:
        """Busy files whose time has come: done by the holder meanwhile, or back to `pending`."""
        now, waiting = time.monotonic(), []
        for when, path, chash in self.later:
            if when > now:
                waiting.append((when, path, chash))
            elif chash and file_indexed(self.job.engine, self.corpus_id, chash):
                self._finish(FileReport(path, "unchanged", bytes=self.sizes[path]))
            else:
                pending.append(path)
        self.later = waiting

    def _collect(self, ref: Any, group: list[str]) -> None:
        import ray
        from ray.exceptions import NodeDiedError, OutOfMemoryError, WorkerCrashedError

        try:
            outcomes: list[Outcome] = ray.get(ref)
        except (WorkerCrashedError, NodeDiedError, OutOfMemoryError) as exc:
            for path in group:
                self.crashes[path] += 1
                if self.crashes[path] > CRASH_RETRIES:
                    error = f"{path}: its Ray worker died {self.crashes[path]} times ({type(exc).__name__})"
                    self._finish(FileReport(path, "failed", bytes=self.sizes[path], error=error))
                else:  # its claim lapses after the lease; the retry takes it over then
                    self.later.append((time.monotonic(), path, ""))
            return
        for out in outcomes:
            if out.report.status == "busy":
                when = time.monotonic() + min(out.busy, self.job.lease / 3)
                self.later.append((when, out.report.path, out.content_hash))
            else:
                self._finish(out.report)

    def _finish(self, report: FileReport) -> None:
        if report.status == "done":
            self.job.progress.advanced(report.documents, report.text_bytes)
        self.reports.append(report)
        self.job.progress.file_finished(report)
