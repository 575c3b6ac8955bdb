"""Posting blocks: how PostgreSQL stores the n-gram and band rows of a segment.

One PostgreSQL row per posting costs about 93 bytes (a 24-byte tuple header, alignment, and a
B-tree entry as wide again) and loads at about 1 M rows/s, the B-tree being maintained row by
row. So on PostgreSQL a segment's postings, sorted by key, are cut into blocks by the top
BLOCK_BITS bits of the key (keys are uniform 64-bit hashes, so an 8 M-row segment gives blocks
of about 20 rows), and each block is one row (seg, bucket, data): `data` holds the block's
postings as packed little-endian records. About 16 bytes a posting, loaded several times
faster (README, "Measured on this machine"). A look-up fetches the blocks of the keys' buckets
and keeps the records whose key it asked for, so it answers exactly what one row per posting
answered. The bucket is the key shifted right (arithmetic), so buckets follow key order.

SQLite keeps one row per posting in its WITHOUT ROWID tables (about 20 bytes a row already).
A segment that is appended to again gets more blocks for the same buckets: a look-up reads them all.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

import numpy as np

BLOCK_BITS = 18  # buckets per segment: 2**18
SHIFT = 64 - BLOCK_BITS

NGRAM = np.dtype([("key", "<i8"), ("doc", "<i4")])
BAND = np.dtype([("key", "<i8"), ("doc", "<i4"), ("win", "<i4")])
RECORDS = {"ngram": NGRAM, "band": BAND}

_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
_COPY_TRAILER = struct.pack(">h", -1)
_BLOCK_HEAD = np.dtype([("nf", ">i2"), ("l0", ">i4"), ("seg", ">i4"), ("l1", ">i4"), ("bucket", ">i4"), ("l2", ">i4")])


def buckets(keys: np.ndarray) -> np.ndarray:
    """The bucket of each key (int64 keys: an arithmetic shift keeps their order)."""
    return (np.asarray(keys, dtype=np.int64) >> SHIFT).astype(np.int64)


def records(table: str, columns: Iterable[np.ndarray]) -> np.ndarray:
    """Rows given as column arrays (key, doc[, win]) as packed records."""
    dtype = RECORDS[table]
    cols = list(columns)
    rec = np.empty(len(cols[0]), dtype=dtype)
    for name, col in zip(dtype.names or (), cols, strict=True):
        rec[name] = col
    return rec


def copy_payload(seg: int, rec: np.ndarray) -> memoryview:
    """A binary COPY stream of rows (seg, bucket, data) holding `rec` (sorted by key) in blocks.

    Laid out with numpy, not a Python loop over the blocks (an 8 M-row segment has about 2**18
    of them, and the loop took about 40% of the writer thread on PostgreSQL): block j's 22-byte
    row head goes before its first record, so it starts at j head widths plus that record's
    offset, and the records fill every byte the heads leave free, in order. The stream is
    returned as a view of the array that holds it, not copied into a bytes object."""
    b = buckets(rec["key"])
    starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
    ends = np.r_[starts[1:], len(rec)]
    w, hw = rec.dtype.itemsize, _BLOCK_HEAD.itemsize
    head = np.empty(len(starts), dtype=_BLOCK_HEAD)
    head["nf"], head["l0"], head["seg"], head["l1"] = 3, 4, seg, 4
    head["bucket"] = b[starts]
    head["l2"] = (ends - starts) * w
    h0 = len(_COPY_HEADER)
    out = np.empty(h0 + len(starts) * hw + len(rec) * w + len(_COPY_TRAILER), dtype=np.uint8)
    out[:h0] = np.frombuffer(_COPY_HEADER, dtype=np.uint8)
    out[len(out) - len(_COPY_TRAILER) :] = np.frombuffer(_COPY_TRAILER, dtype=np.uint8)
    body = out[h0 : len(out) - len(_COPY_TRAILER)]
    at = (np.arange(len(starts), dtype=np.int64) * hw + starts * w)[:, None] + np.arange(hw)
    free = np.ones(len(body), dtype=bool)
    free[at] = False
    body[at] = head.view(np.uint8).reshape(-1, hw)
    body[free] = np.ascontiguousarray(rec).view(np.uint8)
    return out.data


def decode(table: str, blobs: Iterable[bytes]) -> np.ndarray:
    """The records of fetched blocks, in one array."""
    raw = b"".join(blobs)
    return np.frombuffer(raw, dtype=RECORDS[table]).copy() if raw else np.empty(0, dtype=RECORDS[table])


def in_order(rec: np.ndarray) -> np.ndarray:
    """Records sorted by all their fields, key first."""
    names = list(rec.dtype.names or ())
    return rec[np.lexsort(tuple(rec[n] for n in reversed(names)))]
