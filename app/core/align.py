"""Token alignment of a benchmark item with a bounded region of a training document (pure).

Tokens are compared by their 64-bit hashes (ids), never as characters, so the cost is that of
an LCS over token ids (bit-parallel, in C: a few microseconds for 40 x 200 tokens) and the work
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

from contam.app.core import _native

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


def align(
    item_ids: np.ndarray,
    region_ids: np.ndarray,
    whole: np.ndarray | None = None,
    min_block: int = MIN_BLOCK,
    starts: Sequence[int] = (),
) -> Alignment:
    """Align item tokens with region tokens (int64 ids; longest common subsequence).

    whole: bool per item token, true where the token is a one-token field on its own; such a
        token counts when aligned even in a block of one.
    starts: where the item's fields start; a block is not grown across one, so a field left
        unmatched is still aligned on its own (align_fields).

    The subsequence is rapidfuzz's (LCSseq.opcodes: Hyyrö's bit-parallel matrix traced back
    from the end), cut into blocks as its matching blocks are, computed in C (_native.align; a
    test holds the two equal). Of the subsequences of equal length, LCS returns one, and in
    repetitive text (a frame such as "Take 3 steps. Turn left.") it may spend a copy's first
    words one by one on earlier repeats of them, leaving the copy's run shorter than the
    document holds it. A run is the evidence of a copy, so each kept block takes back the tokens
    that continue it in both sequences, up to its neighbours and within its fields; and two blocks
    next to each other in the item but apart in the region are moved together where the region
    holds one beside the other (a copy's opening words matched to an earlier repeat of them, "in
    the city of Bath and draws ... In the city of Bath which ..."), the smaller of the two moved,
    and only where no third block is joined to it, so the pieces a copy counts in only join."""
    item = _int64(item_ids)
    field_start = None
    if len(starts):
        field_start = np.zeros(len(item), dtype=bool)
        field_start[list(starts)] = True
    matched, doc_pos, blocks = _native.align(
        item,
        _int64(region_ids),
        None if whole is None else np.ascontiguousarray(whole, dtype=bool),
        field_start,
        min_block,
    )
    return Alignment(np.frombuffer(matched, dtype=bool), np.frombuffer(doc_pos, dtype=np.int64), blocks)


def _int64(ids: np.ndarray) -> np.ndarray:
    """Token ids as contiguous int64 (hashes given as uint64 are read as the same 64 bits)."""
    arr = np.asarray(ids)
    if arr.dtype == np.uint64:
        arr = arr.view(np.int64)
    return np.ascontiguousarray(arr, dtype=np.int64)


def align_fields(
    item_ids: np.ndarray,
    region_ids: np.ndarray,
    whole: np.ndarray | None,
    fields: Sequence[tuple[int, int, int]],
    min_block: int = MIN_BLOCK,
) -> Alignment:
    """align() of the whole item, then each field it left without a counted block aligned on its
    own: one LCS over the whole item puts its fields in one order, but a document lays them out
    as it pleases (the answer before the choices, one choice only), and LCS, maximising tokens
    aligned rather than counted, may spend a field's words one by one on text before the copy
    and on another field's words, leaving the field unmatched where the document holds it whole.

    Document text is held by one field's block at most: a block found for a field on its own
    takes the text from the blocks of other fields it overlaps only if it is longer than each of
    them (the longer alignment explains the text better), and is dropped otherwise. So a title
    in the question and again in the answer, found once in the document, is found once.
    fields: (start, end, role) of each."""
    al = align(item_ids, region_ids, whole, min_block, [s for s, _e, _r in fields])
    redo = [(s, e) for s, e, _r in fields if e - s >= min_block and not al.matched[s:e].any()]
    if not redo or not al.blocks:  # nothing aligned at all: no field will be on its own
        return al
    blocks = list(al.blocks)
    for s, e in redo:
        part = align(item_ids[s:e], region_ids, None if whole is None else whole[s:e], min_block)
        for a, b, size in part.blocks:
            overlap = [blk for blk in blocks if blk[1] < b + size and b < blk[1] + blk[2]]
            if all(blk[2] < size for blk in overlap):
                blocks = [blk for blk in blocks if blk not in overlap] + [(s + a, b, size)]
    matched = np.zeros(len(item_ids), dtype=bool)
    doc_pos = np.full(len(item_ids), -1, dtype=np.int64)
    for a, b, size in blocks:
        matched[a : a + size] = True
        doc_pos[a : a + size] = np.arange(b, b + size)
    return Alignment(matched, doc_pos, sorted(blocks))


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
    """[start, end) of every run of True values of a bool array (in C)."""
    return _native.runs(np.ascontiguousarray(mask, dtype=bool))


def longest_run(mask: np.ndarray) -> int:
    """Length of the longest run of True values of a bool array (in C)."""
    return _native.longest_run(np.ascontiguousarray(mask, dtype=bool))


def covered(mask: np.ndarray, n: int, length: int) -> np.ndarray:
    """Token mask: token i is covered if some n-gram starting in [i-n+1, i] is in `mask` (in C)."""
    return np.frombuffer(_native.covered(np.ascontiguousarray(mask, dtype=bool), n, length), dtype=bool)


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
