"""The indexing batch job: find corpus files, sign documents in worker processes, write them
from one writer thread, committing files whole and in groups.

Exactly-once: a file is identified by its content hash (xxh3-128) within a corpus. Its
documents and postings are written in the same transaction that records the file as done
(with the other files of its group), so a run killed at any moment leaves each file either
whole or absent, and the next run indexes exactly the files that are missing. A file that
cannot be read to its end rolls its group back and is recorded as failed with the reason
(the next run retries it); the group's other files are indexed again in this run.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import xxhash
import zstandard
from sqlalchemy import Engine

from app.core.config import SignatureConfig
from app.core.signatures import sign_text
from app.core.text import tokenize
from app.errors import ConfigError, CorruptFileError, FingerprintMismatch
from app.readers.corpus import RawDocument, find_files, read_documents
from app.store import repo
from app.store.db import checkpoint, refresh_statistics


@dataclass(frozen=True)
class IndexOptions:
    text_field: str = "text"
    id_field: str = "id"
    limit: int | None = None  # documents per file
    workers: int = 1
    batch_size: int = 2000  # documents per batch sent to a worker
    batch_bytes: int = 1 << 20  # or this much text, whichever comes first
    store_text: bool = True  # keep the (compressed) text; else only a pointer into the file
    # Posting rows buffered and then written as one segment (a sorted append, which never
    # touches older pages): memory grows with it (about 30 bytes a row), the number of segments
    # each look-up visits falls with it (README, "How postings are stored").
    segment_rows: int = 8_000_000
    # This many segments of one size merge into one (look-ups then visit fewer); 0: never.
    # Off by default: merging costs more indexing time than it saves in look-ups below many
    # GB of text (README has the figures).
    merge_fanout: int = 0
    commit_bytes: int = 256 << 20  # text per transaction: small files are committed in groups
    commit_seconds: float = 30.0  # or this long: other writers (report jobs) wait at most ~this


@dataclass
class FileReport:
    path: str
    status: str  # done | unchanged | failed
    documents: int = 0
    tokens: int = 0
    ngrams: int = 0
    windows: int = 0
    bytes: int = 0  # file size on disk
    text_bytes: int = 0  # characters of document text read
    skipped: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0


@dataclass
class IndexSummary:
    corpus: str
    files: list[FileReport]
    seconds: float

    def total(self, name: str) -> int:
        return sum(getattr(f, name) for f in self.files if f.status == "done")

    @property
    def failed(self) -> list[FileReport]:
        return [f for f in self.files if f.status == "failed"]

    def skipped(self) -> dict[str, int]:
        c: Counter[str] = Counter()
        for f in self.files:
            c.update(f.skipped)
        return dict(sorted(c.items()))

    def as_dict(self) -> dict[str, Any]:
        mb = self.total("text_bytes") / 1e6
        return {
            "corpus": self.corpus,
            "files_indexed": sum(f.status == "done" for f in self.files),
            "files_unchanged": sum(f.status == "unchanged" for f in self.files),
            "files_failed": len(self.failed),
            "documents": self.total("documents"),
            "tokens": self.total("tokens"),
            "ngrams": self.total("ngrams"),
            "windows": self.total("windows"),
            "skipped": self.skipped(),
            "seconds": round(self.seconds, 3),
            "text_mb": round(mb, 3),
            "mb_per_s": round(mb / self.seconds, 3) if self.seconds > 0 else 0.0,
        }


class Progress(Protocol):
    def file_started(self, path: str, size: int) -> None: ...
    def advanced(self, documents: int, nbytes: int) -> None: ...
    def file_finished(self, report: FileReport) -> None: ...


class NoProgress:
    def file_started(self, path: str, size: int) -> None:
        pass

    def advanced(self, documents: int, nbytes: int) -> None:
        pass

    def file_finished(self, report: FileReport) -> None:
        pass


# ---------------------------------------------------------------- worker side (pure)


@dataclass
class SignedBatch:
    """One batch's rows; postings sorted by (hash, doc) and (key, doc, win), n-grams distinct per doc."""

    n_tokens: np.ndarray
    n_chars: list[int]
    text_hash: np.ndarray
    blobs: list[bytes] | None
    ng_hash: np.ndarray
    ng_doc: np.ndarray  # index into the batch
    band_key: np.ndarray
    band_doc: np.ndarray
    band_win: np.ndarray


def sign_batch(texts: list[str], cfg: SignatureConfig, store_text: bool) -> SignedBatch:
    """Tokenise and sign a batch of texts (runs in a worker process)."""
    comp = zstandard.ZstdCompressor(level=3) if store_text else None
    n_tok, hashes, blobs = [], [], []
    ng, ng_doc, bk, bk_doc, bk_win = [], [], [], [], []
    for i, t in enumerate(texts):
        raw = t.encode("utf-8", "surrogatepass")
        sig = sign_text(tokenize(t), cfg, distinct=False)
        n_tok.append(sig.n_tokens)
        hashes.append(xxhash.xxh3_64_intdigest(raw))
        if comp is not None:
            blobs.append(comp.compress(raw))
        ng.append(sig.ngrams)
        ng_doc.append(np.full(len(sig.ngrams), i, dtype=np.int32))
        if sig.bands.size:
            w = sig.bands.shape[0]
            bk.append(sig.bands.ravel())
            bk_doc.append(np.full(sig.bands.size, i, dtype=np.int32))
            bk_win.append(np.repeat(np.arange(w, dtype=np.int32), cfg.bands))

    def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.empty(0, dtype=dtype)

    # Sorted here, in parallel, so that the single writer inserts B-tree keys in order; the
    # same sort drops an n-gram's repeats within a document.
    ng_hash, ng_doc_ = cat(ng, np.int64), cat(ng_doc, np.int32)
    order = np.lexsort((ng_doc_, ng_hash))
    ng_hash, ng_doc_ = ng_hash[order], ng_doc_[order]
    keep = np.ones(len(ng_hash), dtype=bool)
    keep[1:] = (ng_hash[1:] != ng_hash[:-1]) | (ng_doc_[1:] != ng_doc_[:-1])
    band_key, band_doc, band_win = cat(bk, np.int64), cat(bk_doc, np.int32), cat(bk_win, np.int32)
    order = np.lexsort((band_win, band_doc, band_key))
    return SignedBatch(
        n_tokens=np.array(n_tok, dtype=np.int64),
        n_chars=[len(t) for t in texts],
        text_hash=np.array(hashes, dtype=np.uint64).view(np.int64),
        blobs=blobs if comp is not None else None,
        ng_hash=ng_hash[keep],
        ng_doc=ng_doc_[keep],
        band_key=band_key[order],
        band_doc=band_doc[order],
        band_win=band_win[order],
    )


# ---------------------------------------------------------------- coordinator side


def file_content_hash(path: Path) -> str:
    h = xxhash.xxh3_128()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def _batches(docs: Iterator[RawDocument], opts: IndexOptions) -> Iterator[list[RawDocument]]:
    batch: list[RawDocument] = []
    size = 0
    for d in docs:
        batch.append(d)
        size += len(d.text)
        if len(batch) >= opts.batch_size or size >= opts.batch_bytes:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


class _Postings:
    """A commit group's posting rows, buffered across batches and files and bulk-inserted in
    key order into one segment when `segment_rows` are buffered or the group commits.

    Each batch arrives sorted (by its worker) and batches hold increasing document ids, so a
    stable sort on the key alone merges the runs into (key, doc, ...) order cheaply.
    """

    def __init__(self, conn: Any, corpus_id: int, opts: IndexOptions) -> None:
        self.conn, self.corpus_id = conn, corpus_id
        self.segment_rows = opts.segment_rows
        self.ng: list[tuple[np.ndarray, np.ndarray]] = []
        self.bd: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.rows = 0

    def add(self, sb: SignedBatch, ids: np.ndarray) -> None:
        ids = ids.astype(np.int32)  # document ids are INTEGER columns
        self.ng.append((sb.ng_hash, ids[sb.ng_doc]))
        self.bd.append((sb.band_key, ids[sb.band_doc], sb.band_win))
        self.rows += len(sb.ng_hash) + len(sb.band_key)
        if self.rows >= self.segment_rows:
            self.flush()

    @staticmethod
    def _merge(runs: list[Any]) -> list[np.ndarray]:
        cols = [np.concatenate(c) for c in zip(*runs, strict=True)]
        several = len(runs) > 1
        runs.clear()  # the caller's list: the runs can be freed before the sorted copy is made
        if several:
            order = np.argsort(cols[0], kind="stable")
            cols = [c[order] for c in cols]
        return cols

    def flush(self) -> None:
        if not self.rows:
            return
        seg = repo.open_segment(self.conn, self.corpus_id, self.rows, self.segment_rows)
        ng, bd = self.ng, self.bd
        self.clear()
        repo.insert_ngrams(self.conn, seg, *self._merge(ng))
        del ng  # before the bands are merged: peak memory
        repo.insert_bands(self.conn, seg, *self._merge(bd))

    def clear(self) -> None:
        self.ng, self.bd, self.rows = [], [], 0


def plan_merge(sizes: Sequence[tuple[int, int]], base: int, fanout: int) -> list[int]:
    """Size-tiered merging: the segments to merge next, or [] when none need it.

    Tier t holds segments of up to base * fanout**t rows; `fanout` segments of one tier merge
    into one of the next. Each row is rewritten once per tier it climbs (log_fanout of the
    corpus size), and a corpus has fewer than fanout segments per tier, so a look-up, which
    visits every segment, stays cheap as the corpus grows.
    """
    tiers: dict[int, list[int]] = {}
    for seg, rows in sizes:
        tier, cap = 0, base
        while rows > cap:
            tier, cap = tier + 1, cap * fanout
        tiers.setdefault(tier, []).append(seg)
    for tier in sorted(tiers):
        if len(tiers[tier]) >= fanout:
            return tiers[tier][:fanout]
    return []


def ensure_corpus(engine: Engine, name: str, cfg: SignatureConfig, store_text: bool) -> int:
    """The corpus id, creating the corpus; refuses settings that differ from the stored ones."""
    with engine.begin() as conn:
        row = repo.get_corpus(conn, name)
        if row is None:
            return repo.create_corpus(conn, name, cfg, store_text)
        stored = repo.corpus_config(row)
        if row["fingerprint"] != cfg.fingerprint():
            diffs = stored.differences(cfg)
            listing = "; ".join(f"{k}: index has {a!r}, requested {b!r}" for k, (a, b) in diffs.items())
            raise FingerprintMismatch(
                f"corpus {name!r} was indexed with other signature settings ({listing}); "
                "use the same settings or another corpus name",
                {k: list(v) for k, v in diffs.items()},
            )
        if bool(row["store_text"]) != store_text:
            raise ConfigError(
                f"corpus {name!r} was indexed with store_text={bool(row['store_text'])}; keep it the same"
            )
        return int(row["id"])


@dataclass
class _Start:
    path: Path
    size: int
    content_hash: str


@dataclass
class _Batch:
    docs: list[RawDocument]
    future: Future[SignedBatch]


@dataclass
class _End:
    skipped: Counter[str]
    error: str | None = None  # set when the file could not be read to its end


@dataclass
class _Sync:
    """Commit what is written so far, then set `done` (the main thread waits on it)."""

    done: threading.Event = field(default_factory=threading.Event)


_STOP = object()


class _Stopped(Exception):
    """The main thread stopped sending in the middle of a file (an error or Ctrl-C there)."""


MERGE_STEP_ROWS = 2_000_000  # rows a merge moves per transaction


class _Writer(threading.Thread):
    """The only thread that writes, fed in order through a bounded queue.

    The main thread reads files and hands batches to the worker processes without waiting for
    the database, so reading, signing and writing overlap, also across file boundaries.

    Files are committed in groups of up to `commit_bytes` of text or `commit_seconds` of work
    (so other writers, such as report jobs on the same SQLite file, wait for the lock about that
    long at most, plus the file in progress). Grouping pays: the group's postings are buffered
    across its files and appended as whole segments (`_Postings`), and each commit rewrites
    the pages its transaction touched (README, "Where the time goes"). Merges, when asked for,
    run between groups, one key range per transaction. A file that turns out to be corrupt rolls
    its whole group back; it is recorded as failed and the group's other files are handed back
    to the main thread (`retry`) to be indexed again, so the rest of the run still goes on.
    """

    def __init__(self, job: IndexJob, corpus_id: int, depth: int) -> None:
        super().__init__(name="contam-writer", daemon=True)
        self.job, self.corpus_id = job, corpus_id
        self.queue: queue.Queue[object] = queue.Queue(maxsize=depth)
        self.reports: list[FileReport] = []  # files committed, or recorded as failed
        self.retry: list[_Start] = []  # files rolled back with a corrupt one, to index again
        self.error: BaseException | None = None
        self.abort = threading.Event()  # the main thread failed: stop merging after the current step
        self._trans: Any = None
        self._postings: Any = None  # the group's posting rows not yet inserted
        self._group: list[tuple[_Start, FileReport]] = []
        self._group_bytes = 0
        self._group_started = 0.0

    def put(self, msg: object) -> None:
        while True:
            if self.error is not None:
                raise self.error
            try:
                self.queue.put(msg, timeout=0.2)
                return
            except queue.Full:
                continue

    def sync(self) -> list[_Start]:
        """Wait until everything sent so far is committed; the files to index again."""
        msg = _Sync()
        self.put(msg)
        while not msg.done.wait(0.2):
            if self.error is not None:
                raise self.error
        retry, self.retry = self.retry, []
        return retry

    def run(self) -> None:
        try:
            with self.job.engine.connect() as conn:
                self._postings = _Postings(conn, self.corpus_id, self.job.opts)
                if conn.dialect.name == "sqlite":
                    conn.exec_driver_sql("PRAGMA wal_autocheckpoint=0")  # we checkpoint after each group
                    conn.commit()  # (the statement began SQLAlchemy's implicit transaction)
                try:
                    while True:
                        msg = self.queue.get()
                        if msg is _STOP:
                            self._commit()
                            self._merge_segments(conn)
                            if any(r.status == "done" for r in self.reports):
                                refresh_statistics(conn)
                            return
                        if isinstance(msg, _Sync):
                            self._commit()
                            msg.done.set()
                            continue
                        assert isinstance(msg, _Start)
                        self._file(conn, msg)
                except _Stopped:  # the group in progress is dropped whole; the main thread raises
                    self._trans.rollback()
                    return
                except BaseException:
                    if self._trans is not None:
                        self._trans.rollback()
                    raise
        except BaseException as exc:  # handed to the main thread by put()/sync()
            self.error = exc
            while True:  # drain so the producer never blocks on a dead writer
                try:
                    msg = self.queue.get(timeout=0.5)
                    if msg is _STOP:
                        return
                except queue.Empty:
                    continue

    def _commit(self) -> None:
        if self._trans is not None:
            self._postings.flush()
            self._trans.commit()
        self._trans = None
        for _, report in self._group:
            self.reports.append(report)
            self.job.progress.file_finished(report)
        self._group, self._group_bytes = [], 0

    def _merge_segments(self, conn: Any) -> None:
        """Merge segments as plan_merge says, first finishing any merge a killed run left.

        A merge moves rows a key range at a time, each range its own transaction of about
        MERGE_STEP_ROWS rows: other writers (report jobs on the same SQLite file) wait for one
        step, not a whole merge, and the sort of a step fits in memory."""
        opts = self.job.opts
        with conn.begin():  # finished whatever the fan-out: the rows are half moved
            pending = repo.unfinished_merges(conn, self.corpus_id)
        while True:
            for target, sources in pending:
                with conn.begin():
                    rows = sum(n for s, n in repo.segment_sizes(conn, self.corpus_id) if s in sources)
                steps = max(1, -(-rows // MERGE_STEP_ROWS))
                bounds: list[int | None] = [-(2**63) + (2**64 * i) // steps for i in range(steps)]
                for lo, hi in itertools.pairwise([*bounds, None]):
                    assert lo is not None
                    if self.abort.is_set():  # the merge is finished by the next run
                        return
                    with conn.begin():
                        repo.move_postings(conn, target, sources, lo, hi)
                    checkpoint(conn)
                with conn.begin():
                    repo.finish_merge(conn, target, sources)
            if opts.merge_fanout < 2:
                return
            with conn.begin():
                group = plan_merge(repo.lock_segments(conn, self.corpus_id), opts.segment_rows, opts.merge_fanout)
                if not group:
                    return
                pending = [(repo.start_merge(conn, self.corpus_id, group), group)]

    def _file(self, conn: Any, start: _Start) -> None:
        job = self.job
        report = FileReport(str(start.path), "done", bytes=start.size)
        job.progress.file_started(str(start.path), start.size)
        t0 = time.perf_counter()
        if self._trans is None:
            self._trans = conn.begin()
            self._group_started = t0
        existing = repo.find_file(conn, self.corpus_id, start.content_hash)
        if existing is not None:  # failed before: forget it and try again
            repo.delete_file(conn, existing["id"])
        file_id = repo.insert_file(conn, self.corpus_id, str(start.path), start.size, start.content_hash, "done")
        while True:
            msg = self.queue.get()
            if isinstance(msg, _End):
                break
            if msg is _STOP:
                raise _Stopped
            assert isinstance(msg, _Batch)
            self._write_batch(conn, file_id, msg, report)
        report.skipped = dict(sorted(msg.skipped.items()))
        if msg.error is not None:
            self._fail(conn, start, report, msg.error)
            return
        report.seconds = time.perf_counter() - t0
        repo.finish_file(
            conn,
            file_id,
            n_docs=report.documents,
            n_tokens=report.tokens,
            n_ngrams=report.ngrams,
            n_windows=report.windows,
            skipped=report.skipped,
            seconds=report.seconds,
        )
        self._group.append((start, report))
        self._group_bytes += report.text_bytes
        if (
            self._group_bytes >= job.opts.commit_bytes
            or time.perf_counter() - self._group_started >= job.opts.commit_seconds
        ):
            self._commit()
            checkpoint(conn)  # keeps the WAL (and the disk it takes) to about one group
            self._merge_segments(conn)

    def _fail(self, conn: Any, start: _Start, report: FileReport, error: str) -> None:
        """Nothing of a corrupt file stays: roll back its group, record it as failed."""
        self._trans.rollback()
        self._postings.clear()
        self.retry += [s for s, _ in self._group]
        self._trans, self._group, self._group_bytes = None, [], 0
        with conn.begin():
            existing = repo.find_file(conn, self.corpus_id, start.content_hash)
            if existing is not None:
                repo.delete_file(conn, existing["id"])
            repo.insert_file(
                conn, self.corpus_id, str(start.path), start.size, start.content_hash, "failed", error, report.skipped
            )
        failed = FileReport(str(start.path), "failed", bytes=start.size, skipped=report.skipped, error=error)
        self.reports.append(failed)
        self.job.progress.file_finished(failed)

    def _write_batch(self, conn: Any, file_id: int, msg: _Batch, report: FileReport) -> None:
        sb, docs = msg.future.result(), msg.docs
        ids = repo.allocate_doc_ids(conn, len(docs))
        blobs = sb.blobs if sb.blobs is not None else [None] * len(docs)
        repo.insert_documents(
            conn,
            (
                (
                    int(ids[i]),
                    self.corpus_id,
                    file_id,
                    d.external_id,
                    d.position,
                    sb.n_chars[i],
                    int(sb.n_tokens[i]),
                    int(sb.text_hash[i]),
                    blobs[i],
                )
                for i, d in enumerate(docs)
            ),
        )
        self._postings.add(sb, ids)
        report.documents += len(docs)
        report.tokens += int(sb.n_tokens.sum())
        report.ngrams += len(sb.ng_hash)
        report.windows += len(sb.band_key) // self.job.cfg.bands
        nbytes = sum(sb.n_chars)
        report.text_bytes += nbytes
        self.job.progress.advanced(len(docs), nbytes)


class IndexJob:
    """Index files into one corpus. Use as a context manager (it owns the worker pool)."""

    def __init__(
        self, engine: Engine, corpus: str, cfg: SignatureConfig, opts: IndexOptions, progress: Progress | None = None
    ) -> None:
        self.engine, self.corpus, self.cfg, self.opts = engine, corpus, cfg, opts
        self.progress = progress or NoProgress()
        self.pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> IndexJob:
        if self.opts.workers > 1:
            self.pool = ProcessPoolExecutor(self.opts.workers, mp_context=get_context("forkserver"))
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def _submit(self, texts: list[str]) -> Future[SignedBatch]:
        if self.pool is None:
            fut: Future[SignedBatch] = Future()
            fut.set_result(sign_batch(texts, self.cfg, self.opts.store_text))
            return fut
        return self.pool.submit(sign_batch, texts, self.cfg, self.opts.store_text)

    def _send(self, path: Path, writer: _Writer, corpus_id: int, queued: set[str], unchanged: list[FileReport]) -> None:
        """Hand one file to the writer (its batches signed by the workers), unless already indexed."""
        size = path.stat().st_size
        chash = file_content_hash(path)
        with self.engine.connect() as conn:
            existing = repo.find_file(conn, corpus_id, chash)
        if chash in queued or (existing is not None and existing["status"] == "done"):
            report = FileReport(str(path), "unchanged", bytes=size)
            unchanged.append(report)
            self.progress.file_finished(report)
            return
        queued.add(chash)
        writer.put(_Start(path, size, chash))
        skipped: Counter[str] = Counter()
        error = None
        try:
            docs = read_documents(path, skipped, self.opts.text_field, self.opts.id_field, self.opts.limit)
            for batch in _batches(docs, self.opts):
                writer.put(_Batch(batch, self._submit([d.text for d in batch])))
        except CorruptFileError as exc:
            error = exc.message
        writer.put(_End(skipped, error))

    def run(self, paths: list[Path]) -> IndexSummary:
        t0 = time.perf_counter()
        files = find_files(paths)
        corpus_id = ensure_corpus(self.engine, self.corpus, self.cfg, self.opts.store_text)
        writer = _Writer(self, corpus_id, depth=max(4, 3 * self.opts.workers))
        writer.start()
        unchanged: list[FileReport] = []
        queued: set[str] = set()
        pending = deque(files)
        try:
            while pending:
                path = pending.popleft()
                self._send(path, writer, corpus_id, queued, unchanged)
                if not pending:  # files rolled back with a corrupt one go round again
                    for again in writer.sync():
                        queued.discard(again.content_hash)
                        pending.append(again.path)
        except BaseException:
            writer.abort.set()
            raise
        finally:
            writer.queue.put(_STOP)
            writer.join()
        if writer.error is not None:
            raise writer.error
        order = {str(p): i for i, p in enumerate(files)}
        reports = sorted(writer.reports + unchanged, key=lambda r: order[r.path])
        return IndexSummary(self.corpus, reports, time.perf_counter() - t0)
