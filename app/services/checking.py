"""Checking items without storing a report: a few items for the API, a benchmark file for the CLI."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import multiprocessing
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from contam.app.core.config import Thresholds
from contam.app.core.types import BenchmarkItem
from contam.app.errors import InputError, UnavailableError
from contam.app.limits import Limits, check_item, exceeded
from contam.app.processes import exit_with
from contam.app.readers.benchmark import ReadNotes, Source, benchmark_source, iter_benchmark
from contam.app.services.corpora import API_REMEDIES, Remedies, being_indexed, left_out, select_corpora_listing
from contam.app.services.results import Summary, summarize
from contam.app.services.scanning import ItemResult, Scanner, SharedDocs

Progress = Callable[[int, int], None]  # (items scored, items in all)
Reading = Callable[[int], None]  # items read by the scan's first pass, before any is scored


@dataclass
class CheckResult:
    fingerprint: str  # of the signature settings the corpora were indexed with
    results: list[ItemResult]
    summary: dict[str, Any]
    thresholds: Thresholds
    corpora: list[str]
    mapping: dict[str, Any] = field(default_factory=dict)  # role -> field, as read from a benchmark file
    unspaced: int = 0  # items mostly in a script written without spaces (too short for that, not their mapping)


def check_answer(checked: CheckResult) -> dict[str, Any]:
    """The body of an /api/v1/check answer (the API's CheckResponse, as JSON values): built where
    the items are scored, so a check worker hands the server plain values to send on."""
    extra = {"idx": None, "item": None, "report_id": None, "report_name": None}  # ItemResultRead's unset fields
    return {
        "fingerprint": checked.fingerprint,
        "corpora": checked.corpora,
        "notes": checked.summary.get("notes", []),
        "results": [{**r.as_dict(), **extra} for r in checked.results],
    }


class CheckService:
    """Scores items against the indexed corpora and hands the results back (nothing is stored)."""

    def __init__(
        self,
        engine: Engine,
        limits: Limits | None = None,
        workers: int = 1,
        check_workers: int | None = None,
        remedies: Remedies = API_REMEDIES,
    ) -> None:
        """`workers`: processes that score a benchmark file's chunks (0: one per core); a few
        items (`items`) are always scored in this process. `check_workers`: processes that
        `answer` requests (0: one per core; None: this process answers them). `remedies`: how
        the notes of corpora a check of every corpus left out tell its users to act (left_out)."""
        self.remedies = remedies
        self.engine = engine
        self.limits = limits or Limits()
        self.workers = workers
        self.docs = SharedDocs()  # tokenised documents kept between `items` calls (requests)
        self.pool = None if check_workers is None else CheckWorkers(engine, self.limits, check_workers)

    async def answer(
        self, items: Sequence[BenchmarkItem], corpora: Sequence[str] | None = None, thresholds: Thresholds | None = None
    ) -> dict[str, Any]:
        """`items`, as the API answers them (check_answer): scored by a check worker, whose answer
        the event loop awaits (no thread of the server's is held for it: a thread hand-off a
        request cost more than the hand-off to the worker), or, without check workers, in a thread."""
        if self.pool is None:
            return await asyncio.to_thread(lambda: check_answer(self.items(items, corpora, thresholds)))
        return await self.pool.answer(items, corpora, thresholds)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()

    def items(
        self, items: Sequence[BenchmarkItem], corpora: Sequence[str] | None = None, thresholds: Thresholds | None = None
    ) -> CheckResult:
        """A few items, answered synchronously, against the given corpora (default: those holding
        documents whose settings match: `select_corpora`)."""
        if not items:
            raise InputError("give at least one text or item")
        if len(items) > self.limits.check_items:  # was a 422 of a constant, where every other limit is a setting's 413
            more = f"the number of texts and items in the check, {len(items):,}, (upload a benchmark for more)"
            raise exceeded("check_items", self.limits.check_items, more)
        self._check_size(items)
        return self._scan(items, corpora, thresholds, workers=1, shared_docs=self.docs)

    def benchmark(
        self,
        data: Source,
        filename: str,
        mapping: Mapping[str, Any] | None = None,
        corpora: Sequence[str] | None = None,
        thresholds: Thresholds | None = None,
        progress: Progress | None = None,
        keep_text: bool = True,
        reading: Reading | None = None,
        shown_chars: int = 0,
    ) -> CheckResult:
        """Every item of a benchmark file (any format the reader knows; its bytes, or the file
        on disk, read as a stream); `progress(done, total)` is called as chunks of items are
        scored. keep_text=False: each result keeps only its item's id and row (the CLI prints
        no more), so memory holds the results' figures, never the benchmark's text; and, with
        `shown_chars`, its text as shown up to that many characters, as its question (the CSV's
        text column). The summary's notes begin with the corpora a check of every corpus left
        out (left_out), from the listing the corpora were chosen from: the CLI and the Python
        API each read the listing again to say it, and the CLI's JSON said nothing of them."""
        used: dict[str, Any] = {}
        notes = ReadNotes()

        # the reader's arguments, not a closure: pass 1 can then run in a process of its own
        # (which fills a copy of `used` and `notes`; pass 2, read here, fills these)
        items = functools.partial(iter_benchmark, data, filename, mapping, self.limits, used, False, notes)

        names, listing = select_corpora_listing(self.engine, list(corpora or []))
        scanner = Scanner(self.engine, names, thresholds, workers=self.workers, listing=listing)
        results: list[ItemResult] = []
        summary = Summary(scanner.corpus_names)
        started = False

        def moved(done: int, total: int) -> None:
            nonlocal started
            if progress is not None:
                if not started:
                    progress(0, total)
                    started = True
                progress(done, total)

        for part in scanner.scan_stream(items, moved, reading=reading):
            summary.add(part)
            if not keep_text:
                part = [dataclasses.replace(r, item=_kept(r.item, shown_chars)) for r in part]
            results.extend(part)
        left = ([] if corpora else left_out(listing, names, self.remedies)) + being_indexed(listing, names)
        said = {**summary.as_dict(), "notes": left + notes.said()}
        return CheckResult(scanner.fingerprint, results, said, scanner.th, names, used, notes.unspaced)

    def path(
        self,
        path: Path,
        mapping: Mapping[str, Any] | None = None,
        corpora: Sequence[str] | None = None,
        thresholds: Thresholds | None = None,
        progress: Progress | None = None,
        keep_text: bool = True,
        reading: Reading | None = None,
        shown_chars: int = 0,
    ) -> CheckResult:
        """A benchmark on disk: a file (read as a stream) or a Hugging Face save_to_disk folder."""
        data, filename = benchmark_source(path)
        return self.benchmark(data, filename, mapping, corpora, thresholds, progress, keep_text, reading, shown_chars)

    def _check_size(self, items: Sequence[BenchmarkItem]) -> None:
        """Refuse a field over the per-item limit or holding a NUL character (every field, as a
        file's: only four were looked at, a choice or an id of any length scored), or more text
        in all than one check may hold (the id aside)."""
        total = 0
        for it in items:
            check_item(it, "", self.limits.item_chars, "send it again")
            total += sum(len(text) for name, text in it.named_texts() if name != "id")
        if total > self.limits.check_chars:
            raise exceeded("check_chars", self.limits.check_chars, f"the check's {total:,} characters")

    def _scan(
        self,
        items: Sequence[BenchmarkItem],
        corpora: Sequence[str] | None,
        thresholds: Thresholds | None,
        progress: Progress | None = None,
        workers: int | None = None,
        shared_docs: SharedDocs | None = None,
    ) -> CheckResult:
        """workers: scoring processes (default: the service's own setting); shared_docs: the
        document cache to use instead of the scanner's own (only when scoring in this process)."""
        names, listing = select_corpora_listing(self.engine, list(corpora or []))
        scanner = Scanner(
            self.engine, names, thresholds, workers=self.workers, listing=listing, shared_docs=shared_docs
        )
        if progress is not None:
            progress(0, len(items))
        results = scanner.scan(items, progress, workers=workers)
        said = summarize(results, scanner.th, scanner.corpus_names)
        # the corpora it could not see, and those it read while a run wrote into them
        said["notes"] = ([] if corpora else left_out(listing, names, self.remedies)) + being_indexed(listing, names)
        return CheckResult(scanner.fingerprint, results, said, scanner.th, names)


class CheckWorkers:
    """Processes that score /api/v1/check requests. Scored in the server, requests queued for
    its one interpreter (one core's worth of Python), and a report job's chunks competed with
    them; in worker processes they use every core, at normal priority
    (report jobs' scan workers yield to them: WORKER_NICENESS). Each keeps a CheckService of its
    own, whose tokenised documents and key filters stay read between requests. They start from a
    fork server (the server runs threads, which must not be forked) when the first request comes;
    a worker that dies fails its request with a 503 and the pool is started again."""

    def __init__(self, engine: Engine, limits: Limits, workers: int) -> None:
        self.url = engine.url.render_as_string(hide_password=False)
        self.limits = limits
        self.workers = workers or len(os.sched_getaffinity(0))
        self._lock = threading.Lock()
        self._pool = self._start()

    def _start(self) -> ProcessPoolExecutor:
        ctx = multiprocessing.get_context("forkserver")
        self._cold = self.workers  # submissions that may still start a process (see `answer`)
        return ProcessPoolExecutor(
            self.workers, ctx, initializer=_check_worker_start, initargs=(self.url, self.limits, os.getpid())
        )

    async def answer(
        self, items: Sequence[BenchmarkItem], corpora: Sequence[str] | None, thresholds: Thresholds | None
    ) -> dict[str, Any]:
        """The answer of a worker for `items`, awaited on the event loop. A new pool's first
        submissions start its processes (the fork server, then a process each: 20-90 ms that the
        event loop, and every other request, would wait through), so those are made from a thread."""
        pool = self._pool

        def submit() -> Future[dict[str, Any]]:
            return pool.submit(_check_worker_answer, list(items), corpora, thresholds)

        try:
            if self._cold > 0:
                self._cold -= 1
                future = await asyncio.to_thread(submit)
            else:
                future = submit()
            answer: dict[str, Any] = await asyncio.wrap_future(future)
        except BrokenProcessPool:
            raise self._restart(pool) from None
        return answer

    def _restart(self, pool: ProcessPoolExecutor) -> UnavailableError:
        """A new pool in place of `pool`, whose worker died (once, whichever request saw it
        first), and the error for the request that was in it."""
        with self._lock:
            if self._pool is pool:
                self._pool = self._start()
        pool.shutdown(wait=False, cancel_futures=True)
        return UnavailableError("the process scoring this check stopped; try again")

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


_WORKER: list[CheckService] = []  # a check worker's own service


def _check_worker_start(url: str, limits: Limits, server: int) -> None:
    """A check worker: its own service, and gone with the server that started it."""
    from contam.app.store.db import make_engine

    exit_with(server)
    _WORKER[:] = [CheckService(make_engine(url, existing=True), limits)]


def _check_worker_answer(
    items: list[BenchmarkItem], corpora: Sequence[str] | None, thresholds: Thresholds | None
) -> dict[str, Any]:
    return check_answer(_WORKER[0].items(items, corpora, thresholds))


def _kept(item: BenchmarkItem, shown_chars: int) -> BenchmarkItem:
    """What a result keeps of its item when the caller keeps no text: its id and row, and its
    text as shown, up to `shown_chars`, as its question."""
    return BenchmarkItem(item.item_id, item.row, question=item.display_text()[:shown_chars] if shown_chars else "")
