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


def _contexts(ids: np.ndarray, fields: Sequence[tuple[int, int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Per token: the previous token and the previous two (hashed), restarting at each field."""
    p1 = np.empty(len(ids), dtype=np.int64)
    p2 = np.empty(len(ids), dtype=np.int64)
    for s, e, _code in fields:
        seg = ids[s:e]
        p1[s:e] = np.concatenate(([_BOS1], seg[:-1]))
        before = np.concatenate(([_BOS2, _BOS1], seg[:-1]))[: e - s]
        p2[s:e] = _mix(before, p1[s:e])
    return p1, p2


class _Counts:
    def __init__(self, keys: np.ndarray) -> None:
        self.keys, self.n = np.unique(keys, return_counts=True)

    def get(self, keys: np.ndarray) -> np.ndarray:
        if len(self.keys) == 0:
            return np.zeros(len(keys), dtype=np.int64)
        idx = np.clip(np.searchsorted(self.keys, keys), 0, len(self.keys) - 1)
        return np.where(self.keys[idx] == keys, self.n[idx], 0)


def _own(keys: np.ndarray) -> np.ndarray:
    """How often each key occurs within the same array."""
    _, inv, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return counts[inv]


def token_bits(
    ids: Sequence[np.ndarray], fields: Sequence[Sequence[tuple[int, int, int]]], groups: Sequence[int]
) -> list[np.ndarray]:
    """Surprisal in bits of every token of every item (see the module doc).

    ids: per item, its token ids; fields: per item, (start, end, role) of each field;
    groups: per item, its duplicate group (items of one group are counted once).
    """
    ctx = [_contexts(a, f) for a, f in zip(ids, fields, strict=True)]
    first: dict[int, int] = {}
    for i, g in enumerate(groups):
        first.setdefault(int(g), i)
    counted = sorted(first.values())
    if not counted:
        return []

    def cat(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    u = cat([ids[i] for i in counted])
    p1 = cat([ctx[i][0] for i in counted])
    p2 = cat([ctx[i][1] for i in counted])
    uni, total, vocab = _Counts(u), len(u), len(np.unique(u)) + 1
    big, h1 = _Counts(_mix(p1, u)), _Counts(p1)
    tri, h2 = _Counts(_mix(p2, u)), _Counts(p2)
    t1 = _Counts(p1[np.unique(_mix(p1, u), return_index=True)[1]])  # T(h): distinct words after h
    t2 = _Counts(p2[np.unique(_mix(p2, u), return_index=True)[1]])
    out = []
    for i, a in enumerate(ids):
        c1, c2 = ctx[i]
        b1, b2 = _mix(c1, a), _mix(c2, a)
        leave = 1  # every member of a group holds the counted text: it is left out for each
        n = total - leave * len(a)
        cu = uni.get(a) - leave * _own(a)
        p_uni = (cu + _ALPHA) / (n + _ALPHA * vocab)
        p = _interpolate(big.get(b1) - leave * _own(b1), h1.get(c1) - leave * _own(c1), t1.get(c1), p_uni)
        p = _interpolate(tri.get(b2) - leave * _own(b2), h2.get(c2) - leave * _own(c2), t2.get(c2), p)
        out.append(-np.log2(p))
    return out


def _interpolate(pair: np.ndarray, context: np.ndarray, kinds: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """Witten-Bell: P = (c(h, w) + T(h) P_lower(w)) / (c(h) + T(h)); the lower order where h is unseen."""
    pair = np.maximum(pair, 0).astype(np.float64)
    context = np.maximum(context, 0).astype(np.float64)
    kinds = np.maximum(kinds, 1).astype(np.float64)
    seen = context > 0
    return np.where(seen, (pair + kinds * lower) / np.where(seen, context + kinds, 1.0), lower)
