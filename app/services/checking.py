"""Checking items without storing a report: a few items for the API, a benchmark file for the CLI."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from contam.app.core.config import Thresholds
from contam.app.core.types import BenchmarkItem
from contam.app.errors import InputError
from contam.app.limits import Limits, exceeded
from contam.app.readers.benchmark import Source, benchmark_source, iter_benchmark
from contam.app.services.corpora import select_corpora_listing
from contam.app.services.results import Summary, summarize
from contam.app.services.scanning import ItemResult, Scanner, SharedDocs

Progress = Callable[[int, int], None]  # (items scored, items in all)
Reading = Callable[[int], None]  # items read by the scan's first pass, before any is scored
MAX_CHECK_ITEMS = 1000  # answered within the request; larger sets go through a report


@dataclass
class CheckResult:
    fingerprint: str  # of the signature settings the corpora were indexed with
    results: list[ItemResult]
    summary: dict[str, Any]
    thresholds: Thresholds
    corpora: list[str]
    mapping: dict[str, Any] = field(default_factory=dict)  # role -> field, as read from a benchmark file


class CheckService:
    """Scores items against the indexed corpora and hands the results back (nothing is stored)."""

    def __init__(self, engine: Engine, limits: Limits | None = None, workers: int = 1) -> None:
        """`workers`: processes that score a benchmark file's chunks (0: one per core); a few
        items (`items`) are always scored in this process."""
        self.engine = engine
        self.limits = limits or Limits()
        self.workers = workers
        self.docs = SharedDocs()  # tokenised documents kept between `items` calls (requests)

    def items(
        self, items: Sequence[BenchmarkItem], corpora: Sequence[str] | None = None, thresholds: Thresholds | None = None
    ) -> CheckResult:
        """A few items, answered synchronously, against the given corpora (default: those holding
        documents whose settings match: `select_corpora`)."""
        if not items:
            raise InputError("give at least one text or item")
        if len(items) > MAX_CHECK_ITEMS:
            raise InputError(f"at most {MAX_CHECK_ITEMS} items per check; upload a benchmark for more")
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
    ) -> CheckResult:
        """Every item of a benchmark file (any format the reader knows; its bytes, or the file
        on disk, read as a stream); `progress(done, total)` is called as chunks of items are
        scored. keep_text=False: each result keeps only its item's id and row (the CLI prints
        no more), so memory holds the results' figures, never the benchmark's text."""
        used: dict[str, Any] = {}

        # the reader's arguments, not a closure: pass 1 can then run in a process of its own
        # (which fills a copy of `used`; pass 2, read here, fills this one)
        items = functools.partial(iter_benchmark, data, filename, mapping, self.limits, used, keep_raw=False)

        names, listing = select_corpora_listing(self.engine, list(corpora or []))
        scanner = Scanner(self.engine, names, thresholds, workers=self.workers, listing=listing)
        results: list[ItemResult] = []
        summary = Summary()
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
                part = [dataclasses.replace(r, item=BenchmarkItem(r.item.item_id, r.item.row)) for r in part]
            results.extend(part)
        return CheckResult(scanner.fingerprint, results, summary.as_dict(), scanner.th, names, used)

    def path(
        self,
        path: Path,
        mapping: Mapping[str, Any] | None = None,
        corpora: Sequence[str] | None = None,
        thresholds: Thresholds | None = None,
        progress: Progress | None = None,
        keep_text: bool = True,
        reading: Reading | None = None,
    ) -> CheckResult:
        """A benchmark on disk: a file (read as a stream) or a Hugging Face save_to_disk folder."""
        data, filename = benchmark_source(path)
        return self.benchmark(data, filename, mapping, corpora, thresholds, progress, keep_text, reading)

    def _check_size(self, items: Sequence[BenchmarkItem]) -> None:
        """Refuse a field over the per-item limit, or more text in all than one check may hold."""
        total = 0
        for it in items:
            for name, text in (
                ("question", it.question),
                ("passage", it.passage),
                ("answer", it.answer),
                ("solution", it.solution),
            ):
                if len(text) > self.limits.item_chars:
                    raise exceeded("item_chars", self.limits.item_chars, f"item {it.item_id[:80]!r}, field {name}")
                total += len(text)
            total += sum(len(c) for c in it.choices)
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
        return CheckResult(scanner.fingerprint, results, summarize(results, scanner.th), scanner.th, names)
