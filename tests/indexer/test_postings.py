"""The posting buffer: batches sorted by their workers come out as one run in key order."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from contam.indexer.postings import PostingBuffer, merge_runs
from contam.indexer.signing import SignedBatch


def test_posting_buffer_merges_batches_into_key_order() -> None:
    """Runs sorted per batch, with increasing document ids, come out in (key, doc, win) order:
    SQLite inserts out of order rows several times slower (a missed sort once cost a third)."""

    rng = np.random.default_rng(3)
    runs, doc = [], 0
    for _ in range(4):
        k = rng.integers(0, 50, 300)  # repeated keys across batches
        d = rng.integers(doc, doc + 20, 300).astype(np.int32)
        w = rng.integers(0, 5, 300).astype(np.int32)
        o = np.lexsort((w, d, k))
        runs.append((k[o], d[o], w[o]))
        doc += 20
    k, d, w = merge_runs(list(runs))
    o = np.lexsort((w, d, k))
    assert (k == k[o]).all() and (d == d[o]).all() and (w == w[o]).all()
    assert len(k) == 1200


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 200), max_size=9), st.sampled_from([3, 1000, 2**62]), st.booleans(), st.integers(0, 2**32)
)
def test_merged_runs_are_the_stable_sort_of_the_runs_laid_end_to_end(
    sizes: list[int], spread: int, windows: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    runs = []
    for n in sizes:
        cols = [np.sort(rng.integers(-spread, spread, n, dtype=np.int64)), rng.integers(0, 9, n).astype(np.int32)]
        if windows:
            cols.append(rng.integers(0, 9, n).astype(np.int32))
        runs.append(tuple(cols))
    laid = [np.concatenate(c) for c in zip(*runs, strict=True)] if runs else []
    order = np.argsort(laid[0], kind="stable") if runs else None
    got = merge_runs(list(runs))
    assert [c.tolist() for c in got] == [c[order].tolist() for c in laid]
    assert [c.dtype for c in got] == [c.dtype for c in laid]


class _Sink:
    """A posting sink that writes in the background (as PostgreSQL's does) and records how."""

    def __init__(self) -> None:
        self.staged: list[int] = []  # rows per segment handed over to be written in the background
        self.held: list[int] = []  # rows each staged segment's blocks are sized for
        self.appended: list[int] = []  # rows written here and now into the newest segment with room

    def stage_segment(self, rows, ngrams, bands, hold=None) -> bool:  # type: ignore[no-untyped-def]
        assert len(ngrams()[0]) + len(bands()[0]) == rows
        self.staged.append(rows)
        self.held.append(rows if hold is None else hold)
        return True

    def open_segment(self, rows: int, segment_rows: int) -> int:
        self.appended.append(rows)
        return 1

    def insert_ngrams(self, seg, hashes, doc_ids) -> None:  # type: ignore[no-untyped-def]
        pass

    def insert_bands(self, seg, keys, doc_ids, wins) -> None:  # type: ignore[no-untyped-def]
        pass


def _batch(rows: int) -> SignedBatch:
    keys = np.arange(rows, dtype=np.int64)
    none = np.zeros(0, dtype=np.int64)
    return SignedBatch(
        n_chars=[1],
        n_tokens=np.ones(1, dtype=np.int64),
        text_hash=np.zeros(1, dtype=np.int64),
        ng_hash=keys,
        ng_doc=np.zeros(rows, dtype=np.int64),
        band_key=none,
        band_doc=none,
        band_win=none.astype(np.int32),
        blobs=None,
    )


def test_a_commits_remainder_of_half_a_segment_or_more_is_written_in_the_background() -> None:
    """What a commit group leaves in the buffer: half a segment or more becomes a segment of its
    own, written in the background like a full one (on PostgreSQL its n-gram and band blocks on
    two connections at once; a Ray worker's last commit was one such remainder of nearly a
    segment, written on its one connection after the signing had ended); less goes into the
    newest segment with room."""
    sink = _Sink()
    buf = PostingBuffer(sink, segment_rows=100)
    buf.add(_batch(120), np.array([7]))  # full: staged at once
    buf.add(_batch(60), np.array([8]))
    buf.flush()
    buf.add(_batch(49), np.array([9]))
    buf.flush()
    assert sink.staged == [120, 60]
    assert sink.appended == [49]


def test_a_bulk_groups_commit_writes_its_tail_as_a_segment_of_its_own() -> None:
    """A group that wrote full segments (a bulk load) leaves at its commit what its last files
    added: an eighth of a segment or more is staged as a segment of its own, blocks sized for
    half a segment (later small writes may fill it), not appended here and now on the group's
    one connection (a Ray worker's last 3 M rows took 1.6-2.6 s so, after the signing). A small group's
    remainder, and a bulk group's of less than an eighth, still go into the newest segment with
    room, so small runs add no segments; a group rolled back starts the next one afresh."""
    sink = _Sink()
    buf = PostingBuffer(sink, segment_rows=800)
    buf.add(_batch(900), np.array([1]))  # full: staged
    buf.add(_batch(150), np.array([2]))
    buf.flush()  # the commit: a tail of 150 >= 800 / 8 after a full segment
    assert (sink.staged, sink.held, sink.appended) == ([900, 150], [900, 400], [])
    buf.add(_batch(150), np.array([3]))
    buf.flush()  # the next group wrote no full segment: appended
    buf.add(_batch(900), np.array([4]))
    buf.add(_batch(99), np.array([5]))
    buf.flush()  # after a full segment, but under an eighth: appended
    assert (sink.staged, sink.appended) == ([900, 150, 900], [150, 99])
    buf.add(_batch(900), np.array([6]))
    buf.clear()  # rolled back
    buf.add(_batch(150), np.array([7]))
    buf.flush()
    assert (sink.staged, sink.appended) == ([900, 150, 900, 900], [150, 99, 150])
    # a group whose last batch filled the buffer commits with nothing left: the next group starts afresh
    buf.add(_batch(800), np.array([8]))
    buf.flush()
    buf.add(_batch(150), np.array([9]))
    buf.flush()
    assert (sink.staged[-1:], sink.appended[-1:]) == ([800], [150])
