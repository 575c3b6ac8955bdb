"""Sorted-array primitives the scorer calls thousands of times a second (pure).

numpy's own `np.unique` hashes, then sorts: on the few hundred values of an item's or a region's
grams it took 50 microseconds where a sort and a mask take 8 (numpy 2.4), and it was the
scorer's largest single cost. A binary search over a benchmark-wide table of a million grams
misses the cache at every step; a directory of buckets finds each in one or two."""

from __future__ import annotations

from typing import NamedTuple

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
    counts. In C (native top_groups): the groups found, counted in an array by group kept for the
    process (8 bytes per group up to the largest seen), and the top k chosen in one pass; a group
    below 0 or above 2**31 - 2 is a ValueError (groups are items' places in a benchmark)."""
    keys, directory, start, count, groups = table
    if len(keys) == 0 or len(needles) == 0:
        return []
    args = (keys, directory, _shift(directory), start, count, groups)
    return _native.top_groups(*args, np.ascontiguousarray(needles, dtype=np.int64), max_items, exclude, k)


class Postings(NamedTuple):
    """Documents per key, as arrays: keys (int64, ascending, without repeats), and the documents
    of keys[r] (int64, in order) docs[start[r]:start[r + 1]]."""

    keys: np.ndarray
    start: np.ndarray
    docs: np.ndarray

    @classmethod
    def of(cls, keys: np.ndarray, docs: np.ndarray) -> Postings:
        """From (key, document) pairs sorted by key."""
        uniq, first = np.unique(keys, return_index=True)
        return cls(
            uniq.astype(np.int64, copy=False),
            np.append(first, len(keys)).astype(np.int64, copy=False),
            docs.astype(np.int64, copy=False),
        )

    def as_dict(self) -> dict[int, list[int]]:
        bounds = zip(self.start[:-1].tolist(), self.start[1:].tolist(), strict=True)
        docs = self.docs.tolist()
        return {k: docs[a:b] for k, (a, b) in zip(self.keys.tolist(), bounds, strict=True)}


def top_k(values: np.ndarray, score: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(the values among the k of highest score however ties are broken, the highest first; the
    values tied for the places left, k - len(first), in ascending order): the caller breaks
    the tie by a key of its own (a document's id says in what order it was indexed, not what it
    is). Equal values are equal scores' (a score is a function of the value)."""
    if k <= 0:
        return values[:0], values[:0]
    o = np.lexsort((values, -score))
    if len(o) <= k:
        return values[o], values[:0]
    cut = score[o[k - 1]]
    return values[o[score[o] > cut]], values[o[score[o] == cut]]


def held_counts(postings: Postings, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the values listed under `keys`, ascending; how often each is: each key counted as often as
    it is given)."""
    at = np.searchsorted(postings.keys, keys)
    found = at < len(postings.keys)
    found[found] = postings.keys[at[found]] == keys[found]
    at = at[found]
    lo, hi = postings.start[at], postings.start[at + 1]
    sizes = hi - lo
    total = int(sizes.sum())
    first = np.cumsum(sizes) - sizes  # where each key's run begins in the gathered values
    held = postings.docs[np.repeat(lo - first, sizes) + np.arange(total)]
    values, counts = np.unique(held, return_counts=True)
    return values, counts


class Votes(NamedTuple):
    """What an item's n-grams say of each document holding one (candidate_votes), per document."""

    docs: np.ndarray  # int64
    votes: np.ndarray  # float64
    asked: np.ndarray  # float64: the votes of the question's grams alone
    has_asked: np.ndarray  # bool: it holds one of the question's grams
    hits: np.ndarray  # int64


def candidate_votes(
    postings: Postings,
    exact: tuple[np.ndarray, np.ndarray, np.ndarray],
    short: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    passage: np.ndarray,
) -> Votes:
    """The documents an item's grams name, in C (native candidate_votes): each distinct gram votes
    1 / (items holding it) for each document holding it, once, at its first place, the exact
    channel's grams first; hits count the exact channel's grams, then the short channel's: 2 for
    two grams starting at most _native.SHORT_PAIR_GAP tokens apart (in a row, or on either side of
    one word a copy changed), one of them the item's own, else 1 for any gram of its own; each of the
    passage's n-grams the item lacks adds 0.01 to the votes and 1 to the hits.
    exact: (grams, items holding each, in the question); short: (grams, items holding each, in the
    question, the item's own, token position); passage: distinct grams."""
    grams, freq, q = exact
    sgrams, sfreq, sq, sown, spos = short
    flags = sq.astype(np.uint8) | (sown.astype(np.uint8) << 1)

    def i64(a: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(a, dtype=np.int64)

    out = _native.candidate_votes(
        i64(postings.keys),
        i64(postings.start),
        i64(postings.docs),
        i64(grams),
        i64(freq),
        np.ascontiguousarray(q, dtype=np.uint8),
        i64(sgrams),
        i64(sfreq),
        i64(spos),
        np.ascontiguousarray(flags, dtype=np.uint8),
        i64(passage),
    )
    docs, votes, asked, has_asked, hits = out
    return Votes(
        np.frombuffer(docs, dtype=np.int64),
        np.frombuffer(votes, dtype=np.float64),
        np.frombuffer(asked, dtype=np.float64),
        np.frombuffer(has_asked, dtype=bool),
        np.frombuffer(hits, dtype=np.int64),
    )
