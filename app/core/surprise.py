"""How much each token of an item tells about the item: its surprisal, in bits, under a
language model of the rest of the benchmark (pure).

Text that other items of the benchmark make predictable carries few bits: a template ("On June
2017, the following claim was made:"), a frame ("Take 3 steps. Turn around."), a passage that
siblings share. Text only this item has carries many. A match made of low-information text is
what chance (or a sibling's copy) produces, so the scorer asks for a minimum number of matched
bits before a partial match counts as evidence.

The model is an interpolated trigram model with Witten-Bell smoothing (Witten & Bell 1991;
Chen & Goodman 1998, section 2.5), estimated on the benchmark's scored text with each item's own
counts left out (leave-one-out): identical items form one group and are counted once, so a
duplicate does not make its twin predictable. Contexts never cross fields.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from contam.app.core.arrays import stable_order

_BOS1, _BOS2 = np.int64(0x5BD1E995), np.int64(0x1B873593)
_M = np.uint64(0x9E3779B97F4A7C15)
_ALPHA = 0.5  # add-alpha mass for tokens the rest of the benchmark never uses


def _mix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        h = a.view(np.uint64) * _M + b.view(np.uint64)
        h ^= h >> np.uint64(29)
        return (h * _M).view(np.int64)


def _contexts(ids: np.ndarray, field_pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per token: the previous token and the previous two (hashed); `field_pos` is each token's
    position in its field, so contexts restart at every field."""
    p1 = np.concatenate(([_BOS1], ids[:-1]))
    p1[field_pos == 0] = _BOS1
    before = np.concatenate(([_BOS2, _BOS1], ids[:-2]))[: len(ids)]
    before[field_pos == 0] = _BOS2
    before[field_pos == 1] = _BOS1
    return p1, _mix(before, p1)


def token_bits(
    ids: Sequence[np.ndarray], fields: Sequence[Sequence[tuple[int, int, int]]], groups: Sequence[int]
) -> list[np.ndarray]:
    """Surprisal in bits of every token of every item (see the module doc).

    ids: per item, its token ids; fields: per item, (start, end, role) of each field;
    groups: per item, its duplicate group (items of one group have the same token ids and are
    counted once; every item leaves its own text, so its group's, out of the model it is scored
    with).
    """
    if not len(ids):
        return []
    lengths = np.array([len(a) for a in ids], dtype=np.int64)
    a = np.concatenate(ids).astype(np.int64, copy=False)
    bits = flat_bits(a, _field_pos(fields), lengths, np.asarray(groups, dtype=np.int64))
    return np.split(bits, np.cumsum(lengths)[:-1])


def _field_pos(fields: Sequence[Sequence[tuple[int, int, int]]]) -> np.ndarray:
    parts = [np.concatenate([np.arange(e - s) for s, e, _c in f]) if f else np.zeros(0, np.int64) for f in fields]
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def flat_bits(a: np.ndarray, field_pos: np.ndarray, lengths: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """token_bits of items given as one array of token ids (`lengths` per item), each token's
    position in its field, and each item's duplicate group: every token's bits, in one array.

    Every count the model needs is a count of equal keys (a token, a context, a context and its
    token), over the counted tokens (the first item of each group) less the item's own: one
    stable sort per kind of key gives both for every token at once (a table of each kind and a
    binary search per token took 2.4x as long for a 10,000-item benchmark)."""
    if not len(a):
        return np.zeros(0)
    first = np.zeros(len(lengths), dtype=bool)
    first[np.unique(groups, return_index=True)[1]] = True
    counted = np.repeat(first, lengths)  # items of a group: the first counts, once
    item = np.repeat(np.arange(len(lengths), dtype=np.int32), lengths)
    n = int(counted.sum()) - np.repeat(lengths, lengths)  # the rest of the benchmark's tokens
    if len(lengths) == 1:  # a /check of one text: every count less its own is 0, so each token's
        # bits are the add-alpha floor (200 us of sorting per request for the same figures)
        floor: np.ndarray = -np.log2(_ALPHA / (n + _ALPHA * (len(np.unique(a)) + 1)))
        return floor
    uni = _KeyCounts(a, counted, item)
    vocab = int(np.count_nonzero(uni.per_run)) + 1  # distinct counted tokens, and one unseen
    p = (uni.rest + _ALPHA) / (n + _ALPHA * vocab)
    del uni
    for h in _contexts(a, field_pos):  # the previous token, then the previous two
        pair = _KeyCounts(_mix(h, a), counted, item, firsts=True)
        context = _KeyCounts(h, counted, item, ranks=True)
        p = _interpolate(pair.rest, context.rest, context.distinct_after(pair), p)
        del pair, context
    return -np.log2(p)


class _KeyCounts:
    """For each token's key: how often the counted tokens hold it less how often its own item
    does (`rest`, the leave-one-out count), from one stable sort of the keys (the items are in
    order in the array, so within a run of one key its items are too); `per_run`, each key's
    count. ranks: keep `run`, the rank of each token's key; firsts: keep `one_each`, a counted
    token of each distinct key (32-bit: a benchmark's tokens number far fewer than 2**31)."""

    def __init__(
        self, keys: np.ndarray, counted: np.ndarray, item: np.ndarray, ranks: bool = False, firsts: bool = False
    ) -> None:
        # the keys are hashes: spread by their top bits, the C sort (the same permutation as
        # numpy's stable argsort) took a fifth of its time, a fifth of pass 1 in all
        order = stable_order(keys) if keys.dtype == np.int64 else np.argsort(keys, kind="stable")
        ordered = keys[order]
        starts = np.empty(len(keys), dtype=bool)
        starts[:1] = True
        np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
        del ordered
        run = np.cumsum(starts, dtype=np.int32) - 1  # per sorted token: its key's rank
        kept = counted[order]
        self.per_run = np.bincount(run[kept], minlength=int(run[-1]) + 1).astype(np.int32)
        if firsts:
            at = np.flatnonzero(kept)  # the counted tokens in key order: the first of each key's
            first = np.ones(len(at), dtype=bool)
            first[1:] = run[at[1:]] != run[at[:-1]]
            self.one_each = order[at[first]]
            del at, first
        del kept
        it = item[order]
        starts[1:] |= it[1:] != it[:-1]
        del it
        sub = np.cumsum(starts, dtype=np.int32) - 1  # per sorted token: its (key, item) pair's rank
        self.rest = np.empty(len(keys), dtype=np.int32)
        self.rest[order] = self.per_run[run] - np.bincount(sub)[sub]
        del sub
        if ranks:
            self.run = np.empty(len(keys), dtype=np.int32)
            self.run[order] = run

    def distinct_after(self, pair: _KeyCounts) -> np.ndarray:
        """Per token, T(h) of its context h (these counts' keys, ranked): how many distinct
        (h, w) pairs the counted tokens hold (pair: the counts of the tokens' (h, w) keys, with
        firsts)."""
        per_context = np.bincount(self.run[pair.one_each], minlength=len(self.per_run))
        out: np.ndarray = per_context[self.run]
        return out


def _interpolate(pair: np.ndarray, context: np.ndarray, kinds: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """Witten-Bell: P = (c(h, w) + T(h) P_lower(w)) / (c(h) + T(h)); the lower order where h is unseen."""
    pair = np.maximum(pair, 0).astype(np.float64)
    context = np.maximum(context, 0).astype(np.float64)
    kinds = np.maximum(kinds, 1).astype(np.float64)
    seen = context > 0
    return np.where(seen, (pair + kinds * lower) / np.where(seen, context + kinds, 1.0), lower)
