"""Token alignment of a benchmark item with a bounded region of a training document (pure).

Tokens are compared by their 64-bit hashes (ids), never as characters, so the cost is that of
an LCS over token ids (rapidfuzz, bit-parallel: about 10 us for 40 x 200 tokens) and the work
is bounded by the region, a few times the item's length, never a whole document (DESIGN.md 10).

A token of the item counts as *matched* only inside an aligned block of at least MIN_BLOCK
consecutive tokens (consecutive in the item and in the document), or when it is a whole
one-token field (a choice such as "True"). Single tokens that LCS picks up from unrelated text
("the", "of", a digit) are chance, and counting them would give every item a baseline overlap
with every document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rapidfuzz.distance import LCSseq

MIN_BLOCK = 2


@dataclass(frozen=True, slots=True)
class Alignment:
    """Which item tokens a region holds, and where.

    matched: bool per item token (see the module doc).
    doc_pos: per item token, the region index it aligned to, or -1 (also for tokens that LCS
        aligned but that do not count as matched).
    blocks: the counted blocks as (item start, region start, size), in item order.
    """

    matched: np.ndarray
    doc_pos: np.ndarray
    blocks: list[tuple[int, int, int]]


def countable(item_ids: np.ndarray, region_ids: np.ndarray, can: np.ndarray) -> tuple[list[int], list[int]]:
    """The two id sequences with every token that cannot count replaced by a sentinel that
    matches nothing: item tokens neither in `can` nor beside a token in it (a neighbour may
    complete a block across a field's edge), and region tokens equal to no item token kept.

    LCS maximises the tokens it aligns, not the tokens that count: a copy of the question could
    lose to a dozen chance single words (a choice's "to", "a", "the" matched in the text before
    the copy), which are then dropped as chance, and the question with them. Aligned on what
    can count, it cannot."""
    a = item_ids.astype(np.int64, copy=True)
    near = can.copy()  # a token beside one that can count may complete its block
    near[1:] |= can[:-1]
    near[:-1] |= can[1:]
    cannot = np.flatnonzero(~near)
    a[cannot] = -1 - cannot
    r = region_ids.astype(np.int64, copy=True)
    miss = np.flatnonzero(~np.isin(r, a[near]))
    r[miss] = -1 - len(a) - miss  # apart from the item's sentinels
    return a.tolist(), r.tolist()


def align(
    item_ids: Sequence[int], region_ids: Sequence[int], whole: np.ndarray | None = None, min_block: int = MIN_BLOCK
) -> Alignment:
    """Align item tokens with region tokens (longest common subsequence of token ids).

    whole: bool per item token, true where the token is a one-token field on its own; such a
        token counts when aligned even in a block of one.
    Pass sequences made by `countable` to align only the tokens that can count.
    """
    n = len(item_ids)
    matched = np.zeros(n, dtype=bool)
    doc_pos = np.full(n, -1, dtype=np.int64)
    blocks: list[tuple[int, int, int]] = []
    if n == 0 or len(region_ids) == 0:
        return Alignment(matched, doc_pos, blocks)
    lcs = [(b.a, b.b, b.size) for b in LCSseq.opcodes(item_ids, region_ids).as_matching_blocks() if b.size]
    for a, r, size in _grown(lcs, item_ids, region_ids):
        if size >= min_block or (size == 1 and whole is not None and whole[a]):
            matched[a : a + size] = True
            doc_pos[a : a + size] = np.arange(r, r + size)
            blocks.append((a, r, size))
    return Alignment(matched, doc_pos, blocks)


def _grown(
    blocks: list[tuple[int, int, int]], item_ids: Sequence[int], region_ids: Sequence[int]
) -> list[tuple[int, int, int]]:
    """LCS blocks grown over equal neighbours held by single-token matches.

    Of equally long common subsequences LCS returns one without regard to contiguity, so a copy
    can come out as a block and a stray single token (the copy's first word matched to the same
    word earlier in the region): the token is then dropped as chance, and the copy shortened.
    Each block, longest first, takes its equal neighbours on both sides when nothing longer than
    a single token holds them; the blocks stay in order."""
    if len(blocks) < 2:
        return blocks
    n, m = len(item_ids), len(region_ids)
    live = [list(b) for b in sorted(blocks, key=lambda b: -b[2])]
    at_item: dict[int, int] = {}
    at_region: dict[int, int] = {}
    for k, (a, r, size) in enumerate(live):
        for j in range(size):
            at_item[a + j], at_region[r + j] = k, k

    def free(k: int | None) -> bool:
        return k is None or live[k][2] == 1

    def drop(k: int | None) -> None:
        if k is not None and live[k][2]:
            a, r, _ = live[k]
            del at_item[a], at_region[r]
            live[k][2] = 0

    for k, blk in enumerate(live):
        if blk[2] < 2:
            continue
        while blk[0] + blk[2] < n and blk[1] + blk[2] < m:  # rightwards
            i, j = blk[0] + blk[2], blk[1] + blk[2]
            hi, hr = at_item.get(i), at_region.get(j)
            if item_ids[i] != region_ids[j] or not (free(hi) and free(hr)):
                break
            drop(hi)
            drop(hr)
            at_item[i], at_region[j] = k, k
            blk[2] += 1
        while blk[0] > 0 and blk[1] > 0:  # leftwards
            i, j = blk[0] - 1, blk[1] - 1
            hi, hr = at_item.get(i), at_region.get(j)
            if item_ids[i] != region_ids[j] or not (free(hi) and free(hr)):
                break
            drop(hi)
            drop(hr)
            at_item[i], at_region[j] = k, k
            blk[0], blk[1], blk[2] = i, j, blk[2] + 1
    return sorted((a, r, size) for a, r, size in live if size)


def common_tokens(a_ids: Sequence[int], b_ids: Sequence[int]) -> np.ndarray:
    """bool per token of `a`: aligned with some token of `b` (any block size).

    Used to find what an item shares with another item of its benchmark: whatever LCS can pair
    up is shared, so what remains is text only this item has.
    """
    out = np.zeros(len(a_ids), dtype=bool)
    if len(a_ids) == 0 or len(b_ids) == 0:
        return out
    for b in LCSseq.opcodes(a_ids, b_ids).as_matching_blocks():
        out[b.a : b.a + b.size] = True
    return out


def densest(positions: np.ndarray, span: int, weights: np.ndarray | None = None) -> tuple[int, int]:
    """(first, last) of the positions inside `span` with the most weight (each 1 by default);
    positions sorted ascending."""
    ends = np.searchsorted(positions, positions + span, side="right")
    if weights is None:
        score = ends - np.arange(len(positions))
    else:
        cum = np.concatenate(([0.0], np.cumsum(weights)))
        score = cum[ends] - cum[: len(positions)]
    best = int(np.argmax(score))
    return int(positions[best]), int(positions[ends[best] - 1])


def runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of every run of True values."""
    if len(mask) == 0 or not mask.any():
        return []
    padded = np.concatenate(([0], mask.astype(np.int8), [0]))
    edges = np.flatnonzero(np.diff(padded))
    return list(zip(edges[0::2].tolist(), edges[1::2].tolist(), strict=True))


def longest_run(mask: np.ndarray) -> int:
    """Length of the longest run of True values."""
    return max((e - s for s, e in runs(mask)), default=0)


def covered(mask: np.ndarray, n: int, length: int) -> np.ndarray:
    """Token mask: token i is covered if some n-gram starting in [i-n+1, i] is in `mask`."""
    if length == 0:
        return np.zeros(0, dtype=bool)
    if len(mask) == 0:
        return np.zeros(length, dtype=bool)
    return np.convolve(mask.astype(np.int32), np.ones(n, dtype=np.int32))[:length] > 0


def find_sequence(haystack: np.ndarray, needle: np.ndarray, allowed: np.ndarray | None = None) -> int:
    """Index of the first occurrence of `needle` in `haystack` (-1 if none); `allowed` masks
    haystack positions that may take part.

    Arrays of one integer type are searched as bytes (bytes.find, in C), keeping only matches
    that start on an element boundary: a scan calls this tens of thousands of times, and the
    loop over the positions holding the needle's first token (a comparison of arrays each) was
    6% of it. Other arrays take that loop (_find_sequence_loop); a test holds the two equal."""
    m, h = len(needle), len(haystack)
    if m == 0 or m > h:
        return -1
    if haystack.dtype != needle.dtype or haystack.dtype.kind not in "iu":
        return _find_sequence_loop(haystack, needle, allowed)
    hay, pin, width = haystack.tobytes(), needle.tobytes(), haystack.dtype.itemsize
    at = 0
    while (k := hay.find(pin, at)) >= 0:
        if k % width:  # inside an element: the next start on a boundary
            at = k + width - k % width
            continue
        i = k // width
        if allowed is None or allowed[i : i + m].all():
            return i
        at = k + width
    return -1


def _find_sequence_loop(haystack: np.ndarray, needle: np.ndarray, allowed: np.ndarray | None = None) -> int:
    """find_sequence by comparing arrays at each position holding the needle's first value."""
    m, h = len(needle), len(haystack)
    if m == 0 or m > h:
        return -1
    hits = np.flatnonzero(haystack[: h - m + 1] == needle[0])
    for i in hits.tolist():
        if np.array_equal(haystack[i : i + m], needle) and (allowed is None or allowed[i : i + m].all()):
            return i
    return -1
