"""Sorted-array primitives the scorer calls thousands of times a second (pure).

numpy's own `np.unique` hashes, then sorts: on the few hundred values of an item's or a region's
grams it took 50 microseconds where a sort and a mask take 8 (numpy 2.4), and it was the
scorer's largest single cost. A binary search over a benchmark-wide table of a million grams
misses the cache at every step; a directory of buckets finds each in one or two."""

from __future__ import annotations

import numpy as np

from contam.app.core import _native


def share(mask: np.ndarray) -> float:
    """float(mask.mean()) of a bool array, 0.0 if it is empty: numpy's mean goes through Python
    (about 6 us a call, thousands of calls a second in the scorer); a count takes 0.3."""
    return int(np.count_nonzero(mask)) / len(mask) if len(mask) else 0.0


def count(mask: np.ndarray) -> int:
    """int(mask.sum()) of a bool array, without numpy's Python-level reduction."""
    return int(np.count_nonzero(mask))


def distinct(a: np.ndarray) -> np.ndarray:
    """np.unique(a) of a 1-D array: its distinct values, ascending."""
    s = np.sort(a)
    if len(s) < 2:
        return s
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def stable_order(keys: np.ndarray) -> np.ndarray:
    """np.argsort(keys, kind="stable") of int64 keys, in C several times faster: one pass into
    buckets by the keys' top bits (they are hashes), then each bucket ordered by (key, index).
    The same permutation, not just an equally sorted one (a test holds them equal)."""
    return np.frombuffer(_native.stable_order(np.ascontiguousarray(keys, dtype=np.int64)), dtype=np.int64)


def occurrences(a: np.ndarray) -> np.ndarray:
    """How many times each value of `a` occurs in `a` (np.unique's counts[inverse], without
    the inverse, which took 100 us on a hundred values)."""
    s = np.sort(a)
    counts: np.ndarray = np.searchsorted(s, a, side="right") - np.searchsorted(s, a, side="left")
    return counts


def positions_of(ranked: np.ndarray, order: np.ndarray, needles: np.ndarray) -> np.ndarray:
    """order[j] for every j where ranked[j] is one of `needles`, ascending, without repeats:
    where a document holds any of an item's grams, given the document's grams sorted once
    (`ranked`, int64) and where each of them stands (`order`). In C (native positions)."""
    if len(needles) == 0 or len(ranked) == 0:
        return np.zeros(0, dtype=np.int64)
    as_int64 = [np.ascontiguousarray(a, dtype=np.int64) for a in (ranked, order, needles)]
    found = _native.positions(*as_int64)
    return np.frombuffer(found, dtype=np.int64)


def member(x: np.ndarray, sorted_unique: np.ndarray) -> np.ndarray:
    """bool per value of x: in `sorted_unique` (sorted, without repeats), both 64-bit integers of
    one signedness. In C (native member: a table of the keys, or a binary search when they far
    outnumber x), as np.isin(x, sorted_unique) answers it."""
    found = np.zeros(len(x), dtype=bool)
    if len(sorted_unique) and len(x):
        _native.member(_as_int64(x), _as_int64(sorted_unique), found)
    return found


def _as_int64(a: np.ndarray) -> np.ndarray:
    """a as contiguous int64 in the same order: uint64 with its top bit flipped (so values from
    2**63 up stay above the others, as the binary search needs)."""
    if a.dtype == np.uint64:
        return np.ascontiguousarray(a.view(np.int64) ^ np.int64(-(2**63)))
    if a.dtype != np.int64:
        raise TypeError(f"member takes 64-bit integers, not {a.dtype}")
    return np.ascontiguousarray(a)


_DIRECTORY_MAX_BITS = 24  # buckets of a key directory: 2**24 (128 MiB of offsets) for 64 M keys or more


def key_directory(keys: np.ndarray) -> np.ndarray:
    """Where each bucket of `keys` (int64, ascending, without repeats) starts, for find_sorted: a
    key's bucket is its top bits (sign bit flipped, so buckets follow the keys' order), two to
    four keys a bucket (2 bytes a key). 2**bits + 1 offsets; a /check of one item holds a few dozen keys, so the
    directory is sized to the table, never to the largest benchmark."""
    bits = min(_DIRECTORY_MAX_BITS, max(1, (len(keys) // 4).bit_length()))
    buckets = (keys.view(np.uint64) ^ np.uint64(1 << 63)) >> np.uint64(64 - bits)
    return np.searchsorted(buckets, np.arange((1 << bits) + 1, dtype=np.uint64)).astype(np.int64)


def _shift(directory: np.ndarray) -> int:
    """How far a key is shifted right to give its bucket in `directory` (key_directory)."""
    return 64 - ((len(directory) - 1).bit_length() - 1)


def find_sorted(keys: np.ndarray, directory: np.ndarray, needles: np.ndarray) -> np.ndarray:
    """Index of each needle in `keys` (int64, ascending, without repeats), -1 where absent;
    `directory` is key_directory(keys). One bucket of a few keys is searched per needle: a binary
    search over a table of a million keys missed the cache at every step (the largest share of
    the scorer's look-ups in its benchmark-wide tables)."""
    out = np.empty(len(needles), dtype=np.int64)
    if len(needles):
        _native.sorted_find(keys, directory, _shift(directory), np.ascontiguousarray(needles, dtype=np.int64), out)
    return out


def top_groups(
    table: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    needles: np.ndarray,
    max_items: int,
    exclude: int,
    k: int,
) -> list[int]:
    """The k groups holding most of `needles` in a gram table (keys, their key_directory, and
    for each key the start and count of its run in the groups column; int64 each), the most
    first, equal counts in ascending order of group. A needle counts once per time it is given,
    for each group holding it, unless more than `max_items` groups do; group `exclude` never
    counts. In C (native top_groups): the groups found, counted, and the top k chosen in one pass."""
    keys, directory, start, count, groups = table
    if len(keys) == 0 or len(needles) == 0:
        return []
    args = (keys, directory, _shift(directory), start, count, groups)
    return _native.top_groups(*args, np.ascontiguousarray(needles, dtype=np.int64), max_items, exclude, k)
