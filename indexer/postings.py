"""The posting buffer: a commit group's n-gram and band rows, kept in memory and appended in
key order, a whole segment at a time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from contam.app.core import _native
from contam.indexer.signing import SignedBatch


class PostingSink(Protocol):
    def stage_segment(
        self,
        rows: int,
        ngrams: Callable[[], list[np.ndarray]],
        bands: Callable[[], list[np.ndarray]],
        hold: int | None = None,
    ) -> bool: ...
    def open_segment(self, rows: int, segment_rows: int) -> int: ...
    def insert_ngrams(self, seg: int, hashes: np.ndarray, doc_ids: np.ndarray) -> None: ...
    def insert_bands(self, seg: int, keys: np.ndarray, doc_ids: np.ndarray, wins: np.ndarray) -> None: ...


def merge_runs(runs: list[Any]) -> list[np.ndarray]:
    """Columns (int64 keys, then int32 columns) of several sorted runs of rows as one run sorted
    by the first column.

    Each batch arrives sorted (by its worker) and batches hold increasing document ids, so a
    stable merge on the key alone gives (key, doc, ...) order: a k-way merge in C, rows of equal
    keys in run order (numpy's stable argsort of the runs laid end to end, without the sort)."""
    if len(runs) <= 1:
        cols = list(runs[0]) if runs else []
    else:
        merged = _native.merge_runs([tuple(np.ascontiguousarray(c) for c in run) for run in runs])
        cols = [np.frombuffer(c, dtype=np.int64 if i == 0 else np.int32) for i, c in enumerate(merged)]
    runs.clear()  # the caller's list: the runs are freed as soon as the caller lets go of them
    return cols


TAIL_SHARE = 8  # a bulk group's commit leaves an eighth of a segment or more: a segment of its own


class PostingBuffer:
    """A commit group's posting rows, buffered across batches and files and bulk-inserted in
    key order into one segment when `segment_rows` are buffered or the group commits."""

    def __init__(self, sink: PostingSink, segment_rows: int) -> None:
        self.sink, self.segment_rows = sink, segment_rows
        self.ng: list[tuple[np.ndarray, np.ndarray]] = []
        self.bd: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.rows = 0
        self.staged = 0  # segments of the open group handed to the sink

    def add(self, sb: SignedBatch, ids: np.ndarray) -> None:
        ids = ids.astype(np.int32)  # document ids are INTEGER columns
        self.ng.append((sb.ng_hash, ids[sb.ng_doc]))
        self.bd.append((sb.band_key, ids[sb.band_doc], sb.band_win))
        self.rows += len(sb.ng_hash) + len(sb.band_key)
        if self.rows >= self.segment_rows:
            self.flush(full=True)

    def flush(self, full: bool = False) -> None:
        """Write the buffered rows; `full` False: the group commits next. A full buffer is a new
        segment, which the sink may write in the background (PostgreSQL: merged and copied there
        while the group goes on, its n-gram and band blocks on two connections at once); so is
        what a group leaves at its commit when that is at least half a segment (no segment but
        an empty one has room for it anyway), or, after full ones, at least a TAIL_SHARE-th (the
        commit waits for it, the signing done: written on the group's one connection into a
        segment sized for a whole one, a Ray worker's last 3 M rows took 1.6-2.6 s, and staged
        the run's last commit came 1.6 s sooner: bench/MEASUREMENTS.md, session 33). A smaller
        remainder, or a small group's, goes into the newest segment with room, here and now, so
        small runs add no segments."""
        try:
            self._write(full)
        finally:
            if not full:
                self.staged = 0  # the group ends with this flush (an empty one too)

    def _write(self, full: bool) -> None:
        if not self.rows:
            return
        tail = self.staged and TAIL_SHARE * self.rows >= self.segment_rows
        if (full or 2 * self.rows >= self.segment_rows or tail) and self._stage():
            return
        seg = self.sink.open_segment(self.rows, self.segment_rows)
        ng, bd = self.ng, self.bd
        self.clear()
        self.sink.insert_ngrams(seg, *merge_runs(ng))
        del ng  # before the bands are merged: peak memory
        self.sink.insert_bands(seg, *merge_runs(bd))

    def _stage(self) -> bool:
        """Hand the buffer to the sink to write as a new segment in the background, if it does."""
        ng, bd = self.ng, self.bd
        # made to hold half a segment at least: later small writes may fill it (blocks of up to
        # twice their size, as a half-segment remainder's)
        hold = max(self.rows, self.segment_rows // 2)
        if not self.sink.stage_segment(self.rows, lambda: merge_runs(ng), lambda: merge_runs(bd), hold):
            return False
        staged = self.staged
        self.clear()
        self.staged = staged + 1
        return True

    def clear(self) -> None:
        """Empty the buffer (also when the group rolls back)."""
        self.ng, self.bd, self.rows, self.staged = [], [], 0, 0
