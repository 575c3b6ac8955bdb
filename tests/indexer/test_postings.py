"""The posting buffer: batches sorted by their workers come out as one run in key order."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from contam.indexer.postings import merge_runs


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
