"""The posting buffer: a commit group's n-gram and band rows, kept in memory and appended in
key order, a whole segment at a time."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from contam.indexer.signing import SignedBatch


class PostingSink(Protocol):
    def open_segment(self, rows: int, segment_rows: int) -> int: ...
    def insert_ngrams(self, seg: int, hashes: np.ndarray, doc_ids: np.ndarray) -> None: ...
    def insert_bands(self, seg: int, keys: np.ndarray, doc_ids: np.ndarray, wins: np.ndarray) -> None: ...


def merge_runs(runs: list[Any]) -> list[np.ndarray]:
    """Columns of several sorted runs of rows as one run sorted by the first column.

    Each batch arrives sorted (by its worker) and batches hold increasing document ids, so a
    stable sort on the key alone merges the runs into (key, doc, ...) order cheaply."""
    cols = [np.concatenate(c) for c in zip(*runs, strict=True)]
    several = len(runs) > 1
    runs.clear()  # the caller's list: the runs can be freed before the sorted copy is made
    if several:
        order = np.argsort(cols[0], kind="stable")
        cols = [c[order] for c in cols]
    return cols


class PostingBuffer:
    """A commit group's posting rows, buffered across batches and files and bulk-inserted in
    key order into one segment when `segment_rows` are buffered or the group commits."""

    def __init__(self, sink: PostingSink, segment_rows: int) -> None:
        self.sink, self.segment_rows = sink, segment_rows
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

    def flush(self) -> None:
        if not self.rows:
            return
        seg = self.sink.open_segment(self.rows, self.segment_rows)
        ng, bd = self.ng, self.bd
        self.clear()
        self.sink.insert_ngrams(seg, *merge_runs(ng))
        del ng  # before the bands are merged: peak memory
        self.sink.insert_bands(seg, *merge_runs(bd))

    def clear(self) -> None:
        self.ng, self.bd, self.rows = [], [], 0
