"""The indexing batch job: find corpus files, sign documents in worker processes, write them
from one writer thread, committing files whole and in groups.

Exactly-once: a file is identified by its content hash (xxh3-128) within a corpus. Its
documents and postings are written in the same transaction that records the file as done
(with the other files of its group), so a run killed at any moment leaves each file either
whole or absent, and the next run indexes exactly the files that are missing. A file that
cannot be read to its end rolls its group back and is recorded as failed with the reason
(the next run retries it); the group's other files are indexed again in this run.

The pieces: options.py (the knobs), signing.py (the worker side), protocol.py (the queue to
the writer), writing.py and postings.py (the writer thread), progress.py and summary.py (what
a run tells); the store is reached only through app.services.indexing.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import xxhash
from sqlalchemy import Engine

from contam.app.core.config import SignatureConfig
from contam.app.errors import CorruptFileError
from contam.app.processes import exit_with
from contam.app.readers.corpus import (
    RawDocument,
    Skipped,
    corpus_format,
    find_files,
    read_documents,
    why_no_documents,
)
from contam.app.services.indexing import (
    file_indexed,
    forget_failures,
    indexed_alike,
    indexing_run,
    moved,
    open_corpus,
    record_failures,
    record_move,
)
from contam.indexer.options import IndexOptions as IndexOptions  # re-exported: bench/eval.py imports it here
from contam.indexer.progress import NoProgress, Progress
from contam.indexer.protocol import Batch, FileEnd, FileStart
from contam.indexer.signing import SignedBatch, sign_batch
from contam.indexer.summary import FileReport, IndexSummary
from contam.indexer.writing import Writer


def _worker_args() -> tuple[int, float, bool]:
    """exit_with's arguments for a signing worker: watch this process, and leave Ctrl-C and SIGTERM
    to it (a worker killed mid-result hung the indexer: app.processes.exit_with)."""
    return os.getpid(), 1.0, False


def file_identity(path: Path, opts: IndexOptions) -> tuple[str, str | None]:
    """A file's identity in a corpus: the hash (xxh3-128) of its content and, when they are not
    the defaults, of the settings that pick its documents (text field, id field, limit), so the
    same file indexed again with another --text-field is a new file, not "unchanged". Not of a
    text file's: it is one document whatever they are, and a folder indexed again with the
    --text-field its JSONL files asked for stored its .txt files twice (a new user's trial).
    And, from the same read, where it differs, its identity with the default settings (its bytes'
    hash alone: a copy indexed so, wherever it is, is found by it; indexed_alike), else None."""
    if not stat.S_ISREG(os.stat(path).st_mode):  # opened, a FIFO waits for a writer for good (a trial)
        raise OSError(errno.EINVAL, "not a regular file (a FIFO, a socket or a device): it has no content to index")
    h = xxhash.xxh3_128()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    extraction = opts.extraction()
    if extraction == IndexOptions().extraction() or corpus_format(path) == "txt":  # the default: content alone
        return h.hexdigest(), None
    content = h.hexdigest()
    h.update(b"\0" + json.dumps(extraction, sort_keys=True).encode())
    return h.hexdigest(), content


def changed_while_read(path: Path, before: os.stat_result) -> str | None:
    """The error of a file whose size or modification time is not what it was before its content
    was hashed (`before`), now its documents are read, or None: a file appended to as it was
    indexed was recorded at its old size and hash with some of the new records, and indexed
    again, whole, by the next run (a trial)."""
    try:
        now = path.stat()
    except OSError as exc:
        return f"{path}: changed while it was read (now {exc.strerror or exc}): index it again once it is complete"
    if (now.st_size, now.st_mtime_ns) == (before.st_size, before.st_mtime_ns):
        return None
    how = (
        f"{before.st_size:,} bytes when it was hashed, {now.st_size:,} now"
        if now.st_size != before.st_size
        else "written to since it was hashed, its size the same"  # two equal sizes said nothing (a trial)
    )
    return f"{path}: changed while it was read ({how}): index it again once it is complete"


def unreadable(path: Path, exc: OSError, where: str = "") -> FileReport:
    """The report of a file that cannot be opened or read (no permission, a link to nothing);
    `where`: the machine, said after "cannot be read"."""
    return FileReport(str(path), "failed", error=f"{path}: cannot be read{where} ({exc.strerror or exc})")


def batches(docs: Iterator[RawDocument], opts: IndexOptions) -> Iterator[list[RawDocument]]:
    """Documents in batches of `batch_size` documents or `batch_bytes` of text, whichever is first."""
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


def _preload() -> list[str]:
    """The modules the forkserver imports once, before it forks the workers. A worker imports
    the signing code and, as multiprocessing does, this program's main module again (under
    `contam`: the whole package, about 0.8 CPU-seconds, more on a busy machine); each worker paid
    that itself, because the forkserver's own preload of `__main__` does nothing here (Python
    3.11 asks get_preparation_data for a `main_path` key it never returns). Now the forkserver
    pays it once and the workers inherit the modules. Not the CLI module itself: a worker runs it
    again as its main module, and runpy warns when that module is imported already."""
    return ["contam.indexer.signing", "contam.app.cli"]


class IndexJob:
    """Index files into one corpus. Use as a context manager (it owns the worker pool)."""

    def __init__(
        self,
        engine: Engine,
        corpus: str,
        cfg: SignatureConfig,
        opts: IndexOptions,
        progress: Progress | None = None,
    ) -> None:
        self.engine, self.corpus, self.cfg, self.opts = engine, corpus, cfg, opts
        self.progress = progress or NoProgress()
        self.pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> IndexJob:
        if self.opts.workers > 1:
            if threading.active_count() == 1:
                # The only thread (the CLI): fork the workers now, before the writer and the run's
                # heartbeat start. They inherit the imported package: a fork server imported it
                # again first (1.6-1.9 CPU-seconds a run, and the first batch waited for it).
                self.pool = ProcessPoolExecutor(
                    self.opts.workers, get_context("fork"), initializer=exit_with, initargs=_worker_args()
                )
                self.pool.submit(int).result()  # forks every worker at once (the fork context starts them all)
            else:  # a process with threads must not fork (a lock another thread holds stays held in the child)
                ctx = get_context("forkserver")
                ctx.set_forkserver_preload(_preload())
                self.pool = ProcessPoolExecutor(self.opts.workers, ctx, initializer=exit_with, initargs=_worker_args())
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            if getattr(self.pool, "_broken", False):
                # a worker died (the OOM killer): the pool sends the others SIGTERM, which they
                # ignore (_worker_args), and waits for them while they block writing a result no
                # one reads: the indexer hung instead of failing (a review). Nothing is read from
                # them any more, so killing them cannot leave half a message to wait on.
                for proc in list((getattr(self.pool, "_processes", None) or {}).values()):
                    with contextlib.suppress(OSError, ValueError):
                        proc.kill()
            self.pool.shutdown(wait=True, cancel_futures=True)

    def run(self, paths: list[Path]) -> IndexSummary:
        """Index the corpus files under `paths` (files and directories, recursive)."""
        t0 = time.perf_counter()
        files = find_files(paths)
        self.progress.run_started(files)
        corpus_id = open_corpus(self.engine, self.corpus, self.cfg, self.opts.store_text)
        with indexing_run(self.engine, corpus_id):  # delete and rename refuse while it writes
            return self._index(files, corpus_id, t0)

    def _index(self, files: list[Path], corpus_id: int, t0: float) -> IndexSummary:
        writer = Writer(self.engine, corpus_id, self.opts, self.cfg.bands, self.progress, max(4, 3 * self.opts.workers))
        writer.start()
        unchanged: list[FileReport] = []
        self._forget: list[str] = []  # unchanged files whose failed records of other runs go
        self._moved: dict[str, str] = {}  # content -> where the file indexed with it was moved
        self._first: dict[str, str] = {}  # content -> the run's first file of it
        # files of a content sent already: (path, size, first, content hash)
        self._twins: list[tuple[Path, int, str, str]] = []
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
            writer.inbox.stop()
            writer.join()
        if writer.error is not None:
            raise writer.error
        # Not from _send: on SQLite this process's own writer may hold the write lock with its
        # group open (a file another indexer committed first), and would wait for the next file.
        forget_failures(self.engine, corpus_id, self._forget)
        record_move(self.engine, corpus_id, list(self._moved.items()))
        unchanged += self._twin_reports(writer.reports, corpus_id)
        order = {str(p): i for i, p in enumerate(files)}
        reports = sorted(writer.reports + unchanged, key=lambda r: order[r.path])
        return IndexSummary.of(self.engine, self.corpus, corpus_id, reports, time.perf_counter() - t0)

    def _send(self, path: Path, writer: Writer, corpus_id: int, queued: set[str], unchanged: list[FileReport]) -> None:
        """Hand one file to the writer (its batches signed by the workers), unless already indexed."""
        try:
            before = path.stat()
            size, (chash, same_bytes) = before.st_size, file_identity(path, self.opts)
        except OSError as exc:  # failed alone, the rest indexed (no record: it has no content to key it by)
            unchanged.append(report := unreadable(path, exc))
            self.progress.file_finished(report)
            return
        if chash in queued:  # the content of a file of this run: its outcome, once known (_twins)
            self._twins.append((path, size, self._first[chash], chash))
            return
        if (there := self._moved.get(chash) or file_indexed(self.engine, corpus_id, chash)) is not None:
            self._forget.append(str(path))  # forgotten after the writer has stopped (see run)
            if moved(there, str(path)):  # recorded where it is now, after the writer has stopped too
                self._moved[chash] = there = str(path)  # and a copy of it later in the run is its twin
            report = FileReport(str(path), "unchanged", bytes=size, indexed_as=there)
            unchanged.append(report)
            self.progress.file_finished(report)
            return
        picks = (self.opts.text_field, self.opts.id_field, self.opts.limit)
        if (there := indexed_alike(self.engine, corpus_id, path, same_bytes, *picks)) is not None:
            self._forget.append(str(path))  # its documents as indexed before, with other settings
            unchanged.append(report := FileReport(str(path), "unchanged", bytes=size, indexed_as=there))
            self.progress.file_finished(report)
            return
        queued.add(chash)
        self._first.setdefault(chash, str(path))
        writer.inbox.put(FileStart(path, size, chash))
        skipped = Skipped()
        error = None
        documents = 0
        try:
            docs = read_documents(path, skipped, self.opts.text_field, self.opts.id_field, self.opts.limit)
            for batch in batches(docs, self.opts):
                documents += len(batch)
                writer.inbox.put(Batch(batch, self._submit([d.text for d in batch])))
        except CorruptFileError as exc:
            error = exc.message
        error = error or changed_while_read(path, before)  # its rows then go, as a corrupt file's
        if error is None and documents == 0:  # zero is never silent: a file without documents failed
            error = f"{path}: {why_no_documents(path, self.opts.text_field, skipped)}"
        writer.inbox.put(FileEnd(skipped, error))

    def _twin_reports(self, written: list[FileReport], corpus_id: int) -> list[FileReport]:
        """A file whose content an earlier file of the run holds is indexed once: `unchanged`, or
        `failed` with the reason when that file failed (it was `unchanged` whatever became of the
        other: of two empty files, one failed and one looked fine)."""
        by_path = {r.path: r for r in written}
        out = []
        failed: list[tuple[str, int, str, str]] = []
        for path, size, first, chash in self._twins:
            other = by_path.get(first)
            if other is not None and other.status == "failed":
                why = f"the same content as {first}: " + (other.error or "").removeprefix(f"{first}: ")
                report = FileReport(str(path), "failed", bytes=size, error=f"{path}: {why}")
                failed.append((str(path), size, chash, report.error or ""))
            else:
                report = FileReport(str(path), "unchanged", bytes=size, indexed_as=first)
            self.progress.file_finished(report)
            out.append(report)
        # listed by `contam corpora` as the first is (it kept no record, and the corpus's health
        # said "2 failed" of a run that said 4: a trial)
        record_failures(self.engine, corpus_id, failed)
        return out

    def _submit(self, texts: list[str]) -> Future[SignedBatch]:
        if self.pool is None:
            fut: Future[SignedBatch] = Future()
            fut.set_result(sign_batch(texts, self.cfg, self.opts.store_text))
            return fut
        return self.pool.submit(sign_batch, texts, self.cfg, self.opts.store_text)
