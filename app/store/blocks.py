"""Posting blocks: how the n-gram and band rows of a segment are stored, on both backends.

One PostgreSQL row per posting costs about 93 bytes (a 24-byte tuple header, alignment, and a
B-tree entry as wide again) and loads at about 1 M rows/s, the B-tree being maintained row by
row; one SQLite row per posting (a WITHOUT ROWID table) about 20 bytes, and binding and stepping
each row was nearly all of SQLite's writer thread. So a segment's postings, sorted by key, are
cut into blocks by the top bits of the key (keys are uniform 64-bit hashes, so blocks hold about
equal numbers of postings: 64 to 128, below), and each block is one row (seg, bucket, data):
`data` holds the block's postings as packed little-endian records. About 13-16 bytes a posting,
loaded several times faster (README, "Measured on this machine"). A look-up fetches the blocks
of the keys' buckets and keeps the records whose key it asked for, so it answers exactly what
one row per posting answered. The bucket is the key shifted right (arithmetic), so buckets
follow key order. A segment that is appended to again gets more blocks for the same buckets: a
look-up reads them all.

How many buckets a segment has is its own (`segment.block_bits`, migration 0014), chosen when it
is created from the rows it is made to hold (bits_for): 64 to 128 of them per bucket, n-gram and
band rows together (about 3 to 1, so n-gram blocks of about 90 postings, band blocks of 25). Each block
is a row with its B-tree entry, which was about half of PostgreSQL's COPY of an 8 M-row segment
cut into 2**18 blocks of 30; the blocks stay far below the 2 kB at which PostgreSQL would try to
compress them (and the tables' toast_tuple_target keeps even a block twice that size inline).
Segments written before 0014 have BLOCK_BITS.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from contam.app.core import _native

BLOCK_BITS = 18  # buckets per segment written before migration 0014: 2**18
BLOCK_POSTINGS = 64  # a new segment's blocks hold 64 to 128 of its postings on average (bits_for)
MIN_BITS, MAX_BITS = 4, 24

NGRAM = np.dtype([("key", "<i8"), ("doc", "<i4")])
BAND = np.dtype([("key", "<i8"), ("doc", "<i4"), ("win", "<i4")])
RECORDS = {"ngram": NGRAM, "band": BAND}


def bits_for(rows: int) -> int:
    """The block bits of a segment made to hold `rows` postings: 2**bits buckets of 64 to 128
    postings each (fewer than 2**MIN_BITS buckets are not worth a look-up's while)."""
    return max(MIN_BITS, min(MAX_BITS, (max(rows, 1) // BLOCK_POSTINGS).bit_length() - 1))


def buckets(keys: np.ndarray, bits: int = BLOCK_BITS) -> np.ndarray:
    """The bucket of each key in a segment of `bits` block bits (int64 keys: an arithmetic shift
    keeps their order)."""
    return (np.asarray(keys, dtype=np.int64) >> (64 - bits)).astype(np.int64)


def bucket_of(key: int, bits: int) -> int:
    return int(key) >> (64 - bits)


def copy_payload(seg: int, rows: np.ndarray | Sequence[np.ndarray], bits: int = BLOCK_BITS) -> memoryview:
    """A binary COPY stream of rows (seg, bucket, data) holding `rows` (sorted by key: records of
    RECORDS' dtypes, or their columns key, doc[, win]) in blocks: each block's 22-byte row head
    (three fields: seg, bucket, the records' byte length) before its records, laid out in C in
    one pass straight from the columns (a numpy layout of the stream, from records packed first,
    took about a third of the writer thread on PostgreSQL; the per-block Python loop before it 40%)."""
    cols = [rows[name] for name in rows.dtype.names] if isinstance(rows, np.ndarray) and rows.dtype.names else rows
    return _native.copy_blocks(seg, list(cols), 64 - bits)


def block_rows(rows: np.ndarray | Sequence[np.ndarray], bits: int = BLOCK_BITS) -> list[int | bytes]:
    """The blocks of `rows` (as copy_payload takes them) for SQLite: bucket, data, bucket, data...
    end to end in one list, for multi-row INSERTs a slice at a time (made in C: a Python loop
    making each block's slice and tuple cost 5 microseconds a block, 2 M blocks per eval corpus)."""
    cols = [rows[name] for name in rows.dtype.names] if isinstance(rows, np.ndarray) and rows.dtype.names else rows
    return _native.block_rows(list(cols), 64 - bits)


def slices(keys: np.ndarray, parts: int = 16, bits: int = BLOCK_BITS) -> list[tuple[int, int]]:
    """(start, end) of `parts` runs of sorted keys, cut where a range of whole buckets ends, so
    that writing them one after another gives the blocks writing them at once gives (with the
    memory of one run's block objects, not a segment's)."""
    parts = min(parts, 2**bits)
    lows = np.arange(-(2 ** (bits - 1)), 2 ** (bits - 1), 2**bits // parts, dtype=np.int64) << (64 - bits)
    cuts = [0, *np.searchsorted(keys, lows[1:]).tolist(), len(keys)]
    return [(a, b) for a, b in zip(cuts[:-1], cuts[1:], strict=True) if b > a]


def decode(table: str, blobs: Iterable[bytes]) -> np.ndarray:
    """The records of fetched blocks, in one array."""
    raw = b"".join(blobs)
    return np.frombuffer(raw, dtype=RECORDS[table]).copy() if raw else np.empty(0, dtype=RECORDS[table])


def select(
    table: str, blobs: Sequence[bytes], keys: np.ndarray, directory: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(the records of fetched blocks whose key is one of `keys`, in the order read; each one's
    index in keys): keys int64, ascending, without repeats, `directory` their key_directory. In
    C, one pass over the blocks (native select_records): decoding every record, then searching
    each, copied the blocks twice to keep one or two records of each."""
    shift = 64 - ((len(directory) - 1).bit_length() - 1)  # as arrays.find_sorted
    raw, pos = _native.select_records(blobs, RECORDS[table].itemsize, keys, directory, shift)
    return np.frombuffer(raw, dtype=RECORDS[table]), np.frombuffer(pos, dtype=np.int64)


def in_order(rec: np.ndarray) -> np.ndarray:
    """Records sorted by all their fields, key first."""
    names = list(rec.dtype.names or ())
    return rec[np.lexsort(tuple(rec[n] for n in reversed(names)))]


# ---------------------------------------------------------------- key filters
#
# Beside its blocks, each segment keeps a key filter per table (`key_filter` rows): a split-block
# Bloom filter (native.c, filter_add) of every key written into the segment, so a look-up fetches
# a segment's blocks only for the keys the segment may hold. Most of an item's n-grams are in no
# segment (a clean item's nearly all of them), and each asked-for key cost one block fetch per
# segment (64 to 128 records read to keep one or none). A filter never hides a key it was given; it
# answers "may hold" for about FILTER_FALSE_RATE of the keys it was not given. A segment's filter
# is written in the transaction that writes its blocks, in parts: a write adds its keys to the
# segment's last part while that part has room for them, else starts a part sized for them (at
# least FILTER_MIN_KEYS), so a part is never loaded past its design. A segment without a filter
# (written by code that kept none) is probed for every key, as before.

FILTER_SCHEME = 1  # the bit layout above; a filter of another scheme is not read (its segment is probed in full)
# 16 bits a key: about 0.13% of absent keys pass (FILTER_FALSE_RATE, measured in the tests). At 10
# bits (1.2%), with 7 segments, a fifth of a 10,000-item scan's n-gram block reads and half its
# band block reads were for keys no block held; 16 bits made the index 3.7% larger (36 MB more
# on bench/scan_speed.py's 200 MB) and its scan and news scan 2-3% faster (bench/MEASUREMENTS.md, session 22)
FILTER_BITS_PER_KEY = 16
FILTER_FALSE_RATE = 0.0013
FILTER_MIN_KEYS = 1 << 16  # the smallest part: small appends share one instead of a part each


def filter_bytes(capacity: int) -> int:
    """Bytes of a filter part designed for `capacity` keys: whole 32-byte blocks, at least one."""
    return 32 * max(1, -(-max(capacity, 1) * FILTER_BITS_PER_KEY // 256))


def filter_add(bits: bytearray, keys: np.ndarray) -> None:
    """Set `keys` (int64) in the filter part `bits`, in place."""
    _native.filter_add(bits, np.ascontiguousarray(keys, dtype=np.int64))


def may_hold(parts: Sequence[bytes | bytearray | np.ndarray], keys: np.ndarray) -> np.ndarray:
    """bool per key: some part of a segment's filter may hold it (False: the segment does not)."""
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    out = np.zeros(len(keys), dtype=np.uint8)
    for bits in parts:
        _native.filter_query(bits, keys, out)
    return out.view(bool)
