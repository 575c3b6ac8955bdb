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


class _Counts:
    def __init__(self, keys: np.ndarray) -> None:
        self.keys, self.n = np.unique(keys, return_counts=True)

    def get(self, keys: np.ndarray) -> np.ndarray:
        if len(self.keys) == 0:
            return np.zeros(len(keys), dtype=np.int64)
        idx = np.clip(np.searchsorted(self.keys, keys), 0, len(self.keys) - 1)
        return np.where(self.keys[idx] == keys, self.n[idx], 0)


def _own(item: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """How often each key occurs within its own item."""
    _, inv, counts = np.unique(_mix(item, keys), return_inverse=True, return_counts=True)
    return counts[inv]


def token_bits(
    ids: Sequence[np.ndarray], fields: Sequence[Sequence[tuple[int, int, int]]], groups: Sequence[int]
) -> list[np.ndarray]:
    """Surprisal in bits of every token of every item (see the module doc).

    ids: per item, its token ids; fields: per item, (start, end, role) of each field;
    groups: per item, its duplicate group (items of one group are counted once, and every item
    leaves its group's text out of the model it is scored with).
    """
    if not len(ids):
        return []
    return TokenModel(ids, fields, groups).bits(ids, fields, np.arange(len(ids), dtype=np.int64))


def _field_pos(fields: Sequence[Sequence[tuple[int, int, int]]]) -> np.ndarray:
    parts = [np.concatenate([np.arange(e - s) for s, e, _c in f]) if f else np.zeros(0, np.int64) for f in fields]
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


class TokenModel:
    """The benchmark's trigram model (its counts), fitted once on every item; `bits` then scores
    any subset of the items, so a benchmark can be scored a part at a time with the figures
    token_bits gives for the whole."""

    def __init__(
        self, ids: Sequence[np.ndarray], fields: Sequence[Sequence[tuple[int, int, int]]], groups: Sequence[int]
    ) -> None:
        lengths = np.array([len(a) for a in ids], dtype=np.int64)
        a = np.concatenate(ids).astype(np.int64, copy=False) if len(ids) else np.zeros(0, np.int64)
        self._fit(a, _field_pos(fields), lengths, np.asarray(groups, dtype=np.int64))

    @classmethod
    def flat(
        cls, a: np.ndarray, field_pos: np.ndarray, lengths: np.ndarray, groups: np.ndarray, general: bool = False
    ) -> TokenModel:
        """The model of items given as one array of token ids (`lengths` per item), each
        token's position in its field, and each item's duplicate group. general: count a single
        item's text too (it gives the same bits: tests compare the two)."""
        model = cls.__new__(cls)
        model._fit(a, field_pos, lengths, groups, general)
        return model

    def _fit(
        self, a: np.ndarray, field_pos: np.ndarray, lengths: np.ndarray, groups: np.ndarray, general: bool = False
    ) -> None:
        first = np.zeros(len(lengths), dtype=bool)
        first[np.unique(groups, return_index=True)[1]] = True
        counted = np.repeat(first, lengths)  # items of a group: the first counts, once
        a = a[counted]
        if not len(a):  # no token anywhere: every lookup finds nothing
            a = np.zeros(0, np.int64)
        self.total, self.vocab = int(counted.sum()), len(np.unique(a)) + 1
        # One item (a /check of one text): the rest of the benchmark is empty, so every count
        # less the item's own is 0 and each token's bits are the add-alpha floor (flat_bits); no
        # table is needed
        self.alone = len(lengths) <= 1 and not general
        if self.alone:
            return
        p1, p2 = (
            _contexts(a, field_pos[counted]) if len(a) else (a, a)
        )  # contexts stay within a field, so within an item
        b1, b2 = _mix(p1, a), _mix(p2, a)
        self.uni = _Counts(a)
        self.big, self.h1, self.tri, self.h2 = _Counts(b1), _Counts(p1), _Counts(b2), _Counts(p2)
        self.t1 = _Counts(p1[np.unique(b1, return_index=True)[1]])  # T(h): distinct words after h
        self.t2 = _Counts(p2[np.unique(b2, return_index=True)[1]])

    def bits(
        self, ids: Sequence[np.ndarray], fields: Sequence[Sequence[tuple[int, int, int]]], index: np.ndarray
    ) -> list[np.ndarray]:
        """Bits of every token of the given items; `index`: each one's position in the benchmark."""
        if not len(ids):
            return []
        lengths = np.array([len(a) for a in ids], dtype=np.int64)
        a = np.concatenate(ids).astype(np.int64, copy=False)
        return np.split(self.flat_bits(a, _field_pos(fields), lengths, index), np.cumsum(lengths)[:-1])

    def flat_bits(self, a: np.ndarray, field_pos: np.ndarray, lengths: np.ndarray, index: np.ndarray) -> np.ndarray:
        """bits, for items given as TokenModel.flat takes them: one array, every token's bits."""
        if not len(a):
            return np.zeros(0)
        n = self.total - np.repeat(lengths, lengths)
        if self.alone:  # the general case's value where every count is 0 (a test holds them equal)
            floor: np.ndarray = -np.log2(_ALPHA / (n + _ALPHA * self.vocab))
            return floor
        item = np.repeat(np.asarray(index, dtype=np.int64), lengths)
        p1, p2 = _contexts(a, field_pos)
        b1, b2 = _mix(p1, a), _mix(p2, a)
        p_uni = (self.uni.get(a) - _own(item, a) + _ALPHA) / (n + _ALPHA * self.vocab)
        p = _interpolate(self.big.get(b1) - _own(item, b1), self.h1.get(p1) - _own(item, p1), self.t1.get(p1), p_uni)
        p = _interpolate(self.tri.get(b2) - _own(item, b2), self.h2.get(p2) - _own(item, p2), self.t2.get(p2), p)
        return -np.log2(p)


def _interpolate(pair: np.ndarray, context: np.ndarray, kinds: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """Witten-Bell: P = (c(h, w) + T(h) P_lower(w)) / (c(h) + T(h)); the lower order where h is unseen."""
    pair = np.maximum(pair, 0).astype(np.float64)
    context = np.maximum(context, 0).astype(np.float64)
    kinds = np.maximum(kinds, 1).astype(np.float64)
    seen = context > 0
    return np.where(seen, (pair + kinds * lower) / np.where(seen, context + kinds, 1.0), lower)
