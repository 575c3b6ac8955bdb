"""The posting buffer: batches sorted by their workers come out as one run in key order."""

from __future__ import annotations

import numpy as np

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
