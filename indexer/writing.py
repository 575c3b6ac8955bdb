"""The writer: the only thread that writes, fed in order through a bounded queue.

The main thread reads files and hands batches to the worker processes without waiting for the
database, so reading, signing and writing overlap, also across file boundaries.

Files are committed in groups of up to `commit_bytes` of text or `commit_seconds` of work (so
other writers, such as report jobs on the same SQLite file, wait for the lock about that long
at most, plus the file in progress). Grouping pays: the group's postings are buffered across
its files and appended as whole segments (PostingBuffer), and each commit rewrites the pages
its transaction touched (README, "Where the time goes"). Merges, when asked for, run between
groups. A file that turns out to be corrupt rolls its whole group back; it is recorded as
failed and the group's other files are handed back to the main thread (`retry`) to be indexed
again, so the rest of the run still goes on.

Its duties, one piece each: the queue protocol (protocol.py), the posting buffer
(postings.py), the commit group (CommitGroup, here), and the Writer thread that runs them on a
CorpusWriter (app.services.indexing), which owns the SQL, the WAL checkpoints and the merges.
"""

from __future__ import annotations

import threading
import time

from sqlalchemy import Engine

from contam.app.services.indexing import CorpusWriter
from contam.indexer.options import IndexOptions
from contam.indexer.postings import PostingBuffer
from contam.indexer.progress import Progress
from contam.indexer.protocol import STOP, Batch, FileEnd, FileStart, Inbox, Stopped, Sync
from contam.indexer.summary import FileReport

# ---------------------------------------------------------------- the commit group


class CommitGroup:
    """The files written since the last commit: they commit, or roll back, together."""

    def __init__(self, opts: IndexOptions) -> None:
        self.max_bytes, self.max_seconds = opts.commit_bytes, opts.commit_seconds
        self.files: list[tuple[FileStart, FileReport]] = []
        self.text_bytes = 0
        self.started = 0.0  # when its transaction began

    def add(self, start: FileStart, report: FileReport) -> None:
        self.files.append((start, report))
        self.text_bytes += report.text_bytes

    def full(self) -> bool:
        return self.text_bytes >= self.max_bytes or time.perf_counter() - self.started >= self.max_seconds

    def take(self) -> list[tuple[FileStart, FileReport]]:
        files, self.files, self.text_bytes = self.files, [], 0
        return files


# ---------------------------------------------------------------- the writer thread


class Writer(threading.Thread):
    """Writes the files the main thread sends into one corpus (see the module doc)."""

    store: CorpusWriter  # both set when the thread starts: the connection is the thread's own
    postings: PostingBuffer

    def __init__(
        self, engine: Engine, corpus_id: int, opts: IndexOptions, bands: int, progress: Progress, depth: int
    ) -> None:
        super().__init__(name="contam-writer", daemon=True)
        self.engine, self.corpus_id, self.opts, self.bands, self.progress = engine, corpus_id, opts, bands, progress
        self.inbox = Inbox(depth)
        self.reports: list[FileReport] = []  # files committed, or recorded as failed
        self.retry: list[FileStart] = []  # files rolled back with a corrupt one, to index again
        self.uncommitted = [0, 0]  # documents and text bytes shown as progress since the last commit
        self.abort = threading.Event()  # the main thread failed: stop merging after the current step
        self.group = CommitGroup(opts)

    @property
    def error(self) -> BaseException | None:
        return self.inbox.error

    def sync(self) -> list[FileStart]:
        """Wait until everything sent so far is committed; the files to index again."""
        self.inbox.sync()
        retry, self.retry = self.retry, []
        return retry

    def run(self) -> None:
        try:
            with CorpusWriter(self.engine, self.corpus_id) as store:
                self._serve(store, PostingBuffer(store, self.opts.segment_rows))
        except BaseException as exc:  # handed to the main thread by put()/sync()
            self.inbox.fail(exc)

    def _serve(self, store: CorpusWriter, postings: PostingBuffer) -> None:
        self.store, self.postings = store, postings
        try:
            while True:
                msg = self.inbox.get()
                if msg is STOP:
                    self._finish()
                    return
                if isinstance(msg, Sync):
                    self._commit()
                    msg.done.set()
                    continue
                assert isinstance(msg, FileStart)
                self._file(msg)
        except Stopped:  # the group in progress is dropped whole; the main thread raises
            store.rollback()
        except BaseException:
            store.rollback()
            raise

    def _finish(self) -> None:
        self._commit()
        self._merge()
        # Also when this run wrote nothing but an earlier one was killed before its ANALYZE.
        if any(r.status == "done" for r in self.reports) or self.store.statistics_stale():
            self.store.refresh_statistics()

    def _commit(self) -> None:
        if self.store.in_group:
            self.postings.flush()
            self.store.commit()
        self.uncommitted = [0, 0]
        for _, report in self.group.take():
            self.reports.append(report)
            self.progress.file_finished(report)

    def _merge(self) -> None:
        self.store.merge_segments(self.opts.segment_rows, self.opts.merge_fanout, self.abort.is_set)

    def _file(self, start: FileStart) -> None:
        report = FileReport(str(start.path), "done", bytes=start.size)
        self.progress.file_started(str(start.path), start.size)
        t0 = time.perf_counter()
        if not self.store.in_group:
            self.store.begin()
            self.group.started = t0
        file_id = self.store.start_file(str(start.path), start.size, start.content_hash)
        if isinstance(file_id, str):  # another indexer committed this content meanwhile, under this path or another
            report.indexed_as = file_id
            self._skip(report)
            return
        end = self._batches(file_id, report)
        report.skipped = dict(sorted(end.skipped.items()))
        report.skipped_at = dict(getattr(end.skipped, "where", {}))
        if end.error is not None:
            self._fail(start, report, end.error)
            return
        report.seconds = time.perf_counter() - t0
        self.store.finish_file(file_id, **report.counts(), text_field=self.opts.text_field)
        self.group.add(start, report)
        if self.group.full():
            self._commit()
            self.store.checkpoint()
            self._merge()

    def _skip(self, report: FileReport) -> None:
        """Drop a file's batches unwritten: it is indexed already."""
        while not isinstance(msg := self.inbox.get(), FileEnd):
            if msg is STOP:
                raise Stopped
        report.status = "unchanged"
        self.reports.append(report)
        self.progress.file_finished(report)

    def _batches(self, file_id: int, report: FileReport) -> FileEnd:
        """Write the file's batches as they come; its FileEnd."""
        while True:
            msg = self.inbox.get()
            if isinstance(msg, FileEnd):
                return msg
            if msg is STOP:
                raise Stopped
            assert isinstance(msg, Batch)
            self._write_batch(file_id, msg, report)

    def _write_batch(self, file_id: int, msg: Batch, report: FileReport) -> None:
        sb, docs = msg.future.result(), msg.docs
        ids = self.store.add_documents(file_id, docs, sb.n_chars, sb.n_tokens, sb.text_hash, sb.blobs)
        self.postings.add(sb, ids)
        report.documents += len(docs)
        report.tokens += int(sb.n_tokens.sum())
        report.ngrams += len(sb.ng_hash)
        report.windows += len(sb.band_key) // self.bands
        nbytes = sum(sb.n_chars)
        report.text_bytes += nbytes
        self.progress.advanced(len(docs), nbytes)
        self.uncommitted[0] += len(docs)
        self.uncommitted[1] += nbytes

    def _fail(self, start: FileStart, report: FileReport, error: str) -> None:
        """Nothing of a corrupt file stays: roll back its group, record it as failed."""
        self.store.rollback()
        self.postings.clear()
        self.progress.advanced(-self.uncommitted[0], -self.uncommitted[1])  # they are indexed again, and counted then
        self.uncommitted = [0, 0]
        self.retry += [s for s, _ in self.group.take()]
        self.store.record_failure(str(start.path), start.size, start.content_hash, error, report.skipped)
        failed = FileReport(str(start.path), "failed", bytes=start.size, skipped=report.skipped, error=error)
        self.reports.append(failed)
        self.progress.file_finished(failed)
