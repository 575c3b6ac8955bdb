"""What one training document holds of one benchmark item (pure).

The document is aligned with the item on a bounded region (the densest cluster of the item's
n-grams, padded by the item's length; never the whole document): a token of the item is held
when a MATCH_N-gram of the item around it occurs in the region and LCS aligns it in the item's
order (app.core.align). Then the item's own text: if the region holds a larger share of some
other item's distinct text (what it does not share with this one) than of this item's, or as
much of both and as large a share of that whole item (or its alignment accounts for more of the
stretch holding this item's match; or, holding neither's distinct text nor this item's question
whole, as many of the region's tokens), it is that item's copy, and only what this item shares with
none of them (the best such item, and the others whose copy is where this item's match is)
counts; otherwise all but the passages it shares word for word with another item. Common text
(boilerplate n-grams) is never own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from contam.app.core import _native
from contam.app.core.align import Alignment, align, align_fields, covered, densest, find_sequence, longest_run, runs
from contam.app.core.arrays import count, distinct, member, occurrences, positions_of, share, stable_order
from contam.app.core.config import Thresholds
from contam.app.core.items import (
    ANSWER,
    CHOICES,
    COMPETITOR_MAX_ITEMS,
    MATCH_N,
    QUESTION,
    SOLUTION,
    ItemStats,
    PreparedItem,
    SharedText,
    answer_ids,
    tokens_of,
)
from contam.app.core.signatures import rolling_hashes, token_hashes

COMPETITOR_CANDIDATES = 8
PRESENCE_MAX_ITEMS = 64  # grams in at most this many items say which item a region holds
COMPETITORS_ALIGNED = 3  # candidates aligned in full, those holding the largest share of their grams
SOLUTION_MIN_TOKENS = 9  # a worked solution shorter than this is judged as a short answer is
NEAR_CACHE_ITEMS = 4096  # competitors' regions kept per document (about 300 bytes each)
COPY_GAP = 10  # document tokens between two of a passage's n-grams in one copy of it (passage_copies)
RUN_GAP = 1  # document tokens a run of the item's text may skip (a word inserted by an edit)
LONG_ANSWER = 8  # tokens: a free-text answer longer than this is found when half of it is held
ANSWER_WINDOW = 16  # tokens after the question where a repeated choice must appear to be "the answer"
BLANK_TOKENS = 2  # item tokens a cloze's blank may be written as ("[MASK]", "<mask>"); "____" is none
# a cloze's blank in its question's text: underscores that are no part of a word, or a mask token
BLANK = re.compile(r"(?<!\w)_++(?!\w)|\[mask\]|<mask>", re.IGNORECASE)
LABEL_CJK_CHARS = 2  # the longest answer label of a CJK item, in characters ("答案", "答え", "正解")
EDITED_CHOICE_MIN = 4  # the fewest choices of which a page's key may list one as another text (_label_given)
SHORT_ALT_WINDOW = 2  # tokens before a one- or two-word accepted answer after the question ("A:", "Answer:")
_LETTERS = token_hashes(list("abcdefghijklmnopqrstuvwxyz")).view(np.int64)  # choice labels, as tokens
_LETTER_PLACE = {int(t): k for k, t in enumerate(_LETTERS.tolist())}  # a label token -> its place in the alphabet
_NUMBER_IDS = np.unique(token_hashes([str(k) for k in range(10_000)]).view(np.int64))  # 0-9999 as tokens, sorted
_NUMBERS = frozenset(_NUMBER_IDS.tolist())  # a question's number
# a number's head (1-3 digits) and its groups of three ("1,641" and "1 641" are the tokens 1 and 641)
_HEADS = frozenset(token_hashes([str(k) for k in range(1000)]).view(np.int64).tolist())
_GROUPS = frozenset(token_hashes([f"{k:03d}" for k in range(1000)]).view(np.int64).tolist())
# MatchCache: the tokens of the competitors' regions kept (about 80 bytes a token: its grams and
# the id list the aligner takes) and of the alignments (about 10 bytes a token of the competitor)
REGION_TOKENS_KEPT = 1 << 18  # about 20 MB at most (256 regions of a news article's 1,000 tokens)
ALIGNED_TOKENS_KEPT = 1 << 20  # about 10 MB at most


@dataclass
class DocMatch:
    """One candidate document aligned with one item."""

    doc: int
    matched: np.ndarray  # bool per item token: the region holds it (inside a MATCH_N-gram of the item)
    own: np.ndarray  # bool per item token: the item's own text, given this document's competitor
    own_hit: np.ndarray  # bool per item token: own text the region holds (inside an own MATCH_N-gram)
    competitor: int | None  # index of the item that best explains the document, if another
    region: tuple[int, int]  # document token range that was aligned
    blocks: list[tuple[int, int, int]]  # (item start, document token start, size), in order
    answer_found: bool
    passage_coverage: float = 0.0
    passage_near: float = 0.0  # the same, within the passage's length of the region
    near_window: int | None = None
    shared_run: int = 0  # longest verbatim run of text shared with other items
    shared_items: int = 0  # how many items hold that run (this one included)
    competitor_found: bool = False  # the region holds distinct text of an item it is a copy of
    # own text held inside short-channel n-grams that are each in at most max_df documents of the
    # corpus: its longest run, and how many tokens (0 without a short channel, or for a long item)
    rare_run: int = 0
    rare_tokens: int = 0
    # the longest run of own text held inside index n-grams the corpus holds in this document
    # only: a run that other documents hold too is a phrase of the language, not one item's copy
    unique_run: int = 0
    opening: int = 0  # own tokens held in one run from the first own token of the question on
    # the longest run inside that opening held in n-grams this document alone holds (as unique_run)
    opening_unique: int = 0
    # share of the question's tokens the region holds, leaving out a passage it shares with other
    # items (schema, story) where it has other text: the question there as a whole
    question_there: float = 0.0
    # share of the question's 3-grams that tell it from its siblings' (not quoted from the passage)
    # that the region holds apart from its copy of the item's passage field (0 without one, or with
    # the passage not near): the question asked of that passage there (_question_apart)
    question_apart: float = 0.0
    # the question's own tokens after the last one the region holds (all of them where it holds none): a copy
    # gives the answer after the question's end, a page the question was written from beside the
    # phrase the two share
    question_tail: int = 0
    # item positions where a run of held tokens breaks although both neighbours are held: the
    # document holds them apart (_cuts); every run below is counted so
    cuts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False, compare=False)
    # bool per item token: what the coverages count (None: all); a worked solution the document
    # does not give is left out, as a page may give the final answer, the solution, or both
    counted: np.ndarray | None = None
    # Information (bits) in what the region holds of the item, and in the own text it holds, each
    # less what it costs to choose where its pieces sit (`breaks`; break_bits: that of all of it).
    matched_bits: float = 0.0
    own_bits: float = 0.0
    break_bits: float = 0.0
    own_bits_total: float = 0.0  # information in all of the item's own text here
    bits_total: float = 0.0
    # (document token start, size) of a short answer found after the question apart from the
    # alignment (a long one, or a solution, is found by it: its blocks show it); None otherwise
    answer_at: tuple[int, int] | None = None
    # role code -> (role_coverage, own_role_coverage): the verdict and the score ask several times
    _roles: dict[int, tuple[float, float | None]] = field(default_factory=dict, repr=False, compare=False)

    # The arrays are never changed once the match is made, so what is derived from them is
    # worked out once (ranking and the verdict ask for each several times).
    @cached_property
    def own_total(self) -> int:
        return count(self.own if self.counted is None else self.own & self.counted)

    @cached_property
    def own_matched(self) -> int:
        return count(self.own_hit if self.counted is None else self.own_hit & self.counted)

    @cached_property
    def own_coverage(self) -> float:
        return self.own_matched / self.own_total if self.own_total else 0.0

    @cached_property
    def coverage(self) -> float:
        scope = self.matched[self.counted] if self.counted is not None else self.matched
        return share(scope)

    @cached_property
    def longest_own(self) -> int:
        return run_length(self.own_hit, self.cuts)

    def _role(self, p: PreparedItem, code: int) -> tuple[float, float | None]:
        if code not in self._roles:
            sel = p.role == code
            own_sel = sel & self.own
            self._roles[code] = (
                share(self.matched[sel]),
                share(self.own_hit[own_sel]) if own_sel.any() else None,
            )
        return self._roles[code]

    def role_coverage(self, p: PreparedItem, code: int) -> float:
        """Share of a field's tokens the document holds."""
        return self._role(p, code)[0]

    def own_role_tokens(self, p: PreparedItem, code: int) -> int:
        """How many of a field's tokens are own text here."""
        return count((p.role == code) & self.own)

    def own_role_coverage(self, p: PreparedItem, code: int) -> float | None:
        """Share of a field's own tokens the document holds (None: none of it is own here)."""
        return self._role(p, code)[1]


@dataclass(eq=False)
class DocTokens:
    """A document as the scorer sees it: token ids and gram hashes by position. Its n-grams are
    sorted once it is asked for an item's n-grams a second time, so each later look costs a
    binary search a gram; the first look scans the document instead (most candidate documents
    of a scan are asked once: 1,538 of a news scan's 1,728, and sorting each cost more than the
    scan). Equal and hashed by identity (a MatchCache key holds the document itself)."""

    ids: np.ndarray  # int64
    grams: np.ndarray  # int64 index n-grams, len(ids) - n + 1 values
    mgrams: np.ndarray  # int64 MATCH_N-grams
    # (MATCH_N-grams' hash, tokens, n) of an item -> where its own region is (_region_near), None
    # if the document holds none of those grams: a competitor is measured here for each sibling
    _near: dict[tuple[int, int, int], tuple[int, int] | None] = field(default_factory=dict, repr=False, compare=False)
    _looks: int = field(default=0, repr=False, compare=False)  # positions() asked so far

    @classmethod
    def of(cls, ids: np.ndarray, n: int) -> DocTokens:
        u = ids.view(np.uint64)
        return cls(ids.view(np.int64), rolling_hashes(u, n).view(np.int64), rolling_hashes(u, MATCH_N).view(np.int64))

    @cached_property
    def _gram_index(self) -> tuple[np.ndarray, np.ndarray]:
        """(positions of `grams` in ascending order of hash, the grams in that order)."""
        order = stable_order(self.grams)
        return order, self.grams[order]

    def positions(self, grams: np.ndarray) -> np.ndarray:
        """Sorted positions where any of `grams` (index n-grams) occurs."""
        self._looks += 1
        if self._looks == 1:  # the first look: a scan of the document (member: a table of the grams)
            if not len(grams) or not len(self.grams):
                return np.zeros(0, dtype=np.int64)
            return np.flatnonzero(member(self.grams, distinct(np.asarray(grams, dtype=np.int64))))
        order, ranked = self._gram_index
        return positions_of(ranked, order, grams)

    @property
    def nbytes(self) -> int:
        """Bytes its arrays take, the sorted n-gram index counted whether made yet or not (a cache
        counts a document in when it keeps it and out when it drops it: the figure must not move)."""
        return self.ids.nbytes + 3 * self.grams.nbytes + self.mgrams.nbytes

    @cached_property
    def _mgram_index(self) -> tuple[np.ndarray, np.ndarray]:
        order = stable_order(self.mgrams)
        return order, self.mgrams[order]

    def mpositions(self, mgrams: np.ndarray) -> np.ndarray:
        """Sorted positions where any of `mgrams` (MATCH_N-grams) occurs: the MATCH_N-grams are
        sorted once per document, when first asked (a document is asked for many items)."""
        order, ranked = self._mgram_index
        return positions_of(ranked, order, mgrams)


def region_for(
    p: PreparedItem, doc: DocTokens, n: int, window: tuple[int, int] | None, ppos: np.ndarray | None = None
) -> tuple[int, int]:
    """The bounded document range to align: the densest cluster of the item's n-grams (or the
    near-duplicate window), padded by the item's length on both sides. An n-gram weighs 1/k where
    the document holds it k times, so a run of siblings repeating the item's frame ("Turn left.
    Take 3 steps.") does not outweigh the one place that holds each of the item's n-grams.
    ppos: where the document holds the passage field's n-grams, if the caller has them."""
    length = max(p.n_tokens, n)
    # Placed by the item's own n-grams: a passage given as a field of its own (scored apart, and
    # often several times the question's length) would place the range inside itself, away from
    # a question copied after it. By the passage's only if the document holds none of the item's.
    # An item none of whose n-grams the document holds (an edited copy of a short one) is placed
    # by its MATCH_N-grams. Only then: a frame's 3-grams are everywhere in a page of siblings, and
    # placed by them, a copy would be aligned with its siblings' more often than by its n-grams.
    pos = doc.positions(p.grams)
    grams, width = doc.grams, n
    if ppos is None:
        ppos = doc.positions(p.passage_grams) if len(p.passage_grams) else pos[:0]
    apart = _apart_from_passage_copy(p, doc, pos, ppos, n) if len(pos) and len(ppos) else pos
    if len(apart) < len(pos):  # placed by the copy apart from the passage's, which chooses between copies
        if _copies_of_text(p, doc, apart, length):  # (a dump asking one question of many passages)
            lo, hi = _padded_cluster(doc, apart, grams, width, length, ppos)
            apart = apart[(apart >= lo) & (apart < hi)]
        return _padded_cluster(doc, apart, grams, width, length)  # and not pulled back by its n-grams
    if len(pos) and len(ppos) and _copies_of_text(p, doc, pos, length):
        return _padded_cluster(doc, pos, grams, width, length, ppos)  # the passage chooses between copies
    if not len(pos) and len(ppos) and len(short := _short_apart(p, doc, ppos, n, length)):
        return _padded_cluster(doc, short, doc.mgrams, MATCH_N, length)
    if not len(pos):
        pos = ppos
    if not len(pos):
        pos, grams, width = doc.mpositions(p.umgrams), doc.mgrams, MATCH_N
    if len(pos):
        return _padded_cluster(doc, pos, grams, width, length)
    lo, hi = window if window is not None else (0, length)
    return max(0, lo - length), min(len(doc.ids), hi + length)


def passage_copies(p: PreparedItem, doc: DocTokens, ppos: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the document's copies of the item's passage field, in document tokens
    (ppos: where the document holds the passage's n-grams, ascending). A copy is a chain of those
    positions holding the passage's n-grams in the passage's order: each within COPY_GAP tokens
    of the one before, the place in the passage advancing as far as the place in the document,
    give or take n (an edited word breaks n n-grams; a word put in or left out shifts the rest),
    with at least one n-gram the item lacks. What the question quotes of the passage lies inside
    the passage's copy, where the chain runs through it; a copy of the question holds the quoted
    words apart, as a chain of the item's n-grams alone, or one that goes back in the passage
    (a hypothesis repeating its premise's first words, right after the premise). An n-gram the
    passage holds twice is read at its first place, which cuts a chain at its second: the spans
    only place the region (region_for), and what the item is credited with does not rest on them
    (_apart_from_passage)."""
    if not len(ppos):
        return ppos[:0], ppos[:0]
    order = np.argsort(p.passage_grams, kind="stable")
    ranked = p.passage_grams[order]
    grams = doc.grams[ppos]
    place = order[np.minimum(np.searchsorted(ranked, grams), len(order) - 1)]  # first place in the passage
    step, advance = np.diff(ppos), np.diff(place)
    cut = (step > COPY_GAP) | (advance <= 0) | (np.abs(step - advance) > n)
    chain = np.concatenate(([0], np.cumsum(cut)))
    lacking = ~member(grams, distinct(p.grams))
    copy = np.bincount(chain, weights=lacking, minlength=int(chain[-1]) + 1) > 0
    first = np.flatnonzero(np.concatenate(([True], cut)))
    last = np.concatenate((first[1:] - 1, [len(ppos) - 1]))
    return ppos[first][copy], ppos[last][copy] + n


def _inside(starts: np.ndarray, ends: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """bool per gram of `width` tokens at `pos`: it overlaps one of the spans [starts, ends)
    (starts and ends each ascending, at least one; spans may overlap)."""
    k = np.searchsorted(ends, pos, side="right")  # the first span ending after the gram starts
    return (k < len(starts)) & (starts[np.minimum(k, len(starts) - 1)] < pos + width)


def _apart_from_passage_copy(p: PreparedItem, doc: DocTokens, pos: np.ndarray, ppos: np.ndarray, n: int) -> np.ndarray:
    """The item's n-gram positions `pos` that lie apart from the document's copies of its passage
    (passage_copies), if any lie apart, else all of them. What a question quotes of its passage
    is found inside every copy of the passage; a copy of the item holds it again, apart, and there
    the region must be (placed on the passage's copy, a hypothesis repeating its premise's first
    words was aligned with the premise and its copy after the premise went unseen; placed with the
    passage's n-grams as ties, a short premise's first words were in the region and the hypothesis
    was aligned with them, so the label after its copy was not found: a new user's trial)."""
    starts, ends = passage_copies(p, doc, ppos, n)
    if not len(starts):
        return pos
    inside = _inside(starts, ends, pos, n)
    return pos[~inside] if inside.any() and not inside.all() else pos


def _short_apart(p: PreparedItem, doc: DocTokens, ppos: np.ndarray, n: int, length: int) -> np.ndarray:
    """Where the document holds the MATCH_N-grams of an item with no n-gram there (a question of
    fewer than n tokens) apart from its copies of the item's passage, when the densest cluster of
    them holds half the item's MATCH_N-grams (a copy of it, not a phrase of a frame); empty
    otherwise. Placed by the passage's n-grams, "Unspecified number of which?" copied after its
    passage was looked for inside the passage, where its quoted words are, and every such copy
    of a SQuAD-style benchmark was clean, while the same question copied alone was found (a
    probe)."""
    mpos = doc.mpositions(p.umgrams)
    starts, ends = passage_copies(p, doc, ppos, n)
    if not len(mpos) or not len(starts):
        return mpos[:0]
    in_copy = _inside(starts, ends, mpos, MATCH_N)
    apart = mpos[~in_copy]
    if not len(apart):
        return apart
    lo, hi = densest(apart, 2 * length, 1.0 / occurrences(doc.mgrams[apart]))
    inside = apart[(apart >= lo) & (apart <= hi)]
    held = distinct(doc.mgrams[inside])
    # and text of its own there, a 3-gram no copy of the passage holds: a question every 3-gram of
    # which its passage holds ("Boats passed the firth.") is a phrase its source may say again (a
    # review: flagged by "Later, fewer boats passed the firth each year" beside the passage)
    own = ~member(held, distinct(doc.mgrams[mpos[in_copy]]))
    return inside if 2 * len(held) >= len(p.umgrams) and own.any() else apart[:0]


def _copies_of_text(p: PreparedItem, doc: DocTokens, pos: np.ndarray, length: int) -> bool:
    """Whether the densest cluster of the item's n-grams (at `pos`) holds half its distinct
    n-grams or more: a copy of its text, which the page may hold more than once (a dump of a
    benchmark asking one question of many passages), the passage then choosing between them.
    Between chance matches of a phrase (a question sharing "how many percent were not" with its
    siblings) the passage does not choose: it would place the item beside a sibling's copy."""
    lo, hi = densest(pos, 2 * length, 1.0 / occurrences(doc.grams[pos]))
    inside = pos[(pos >= lo) & (pos <= hi)]
    return 2 * len(distinct(doc.grams[inside])) >= len(distinct(p.grams))


def _padded_cluster(
    doc: DocTokens, pos: np.ndarray, grams: np.ndarray, width: int, length: int, ties: np.ndarray | None = None
) -> tuple[int, int]:
    """The densest cluster of the grams at `pos` (each of width tokens; a gram the document holds
    k times weighs 1/k), padded by `length` tokens on both sides. ties: positions that weigh
    less than half a gram in all (the passage's n-grams), to choose between equal clusters."""
    weights = 1.0 / occurrences(grams[pos])
    if ties is not None and len(ties):
        pos = np.concatenate([pos, ties])
        weights = np.concatenate([weights, np.full(len(ties), 0.5 / (len(ties) + 1))])
        order = np.argsort(pos, kind="stable")
        pos, weights = pos[order], weights[order]
    lo, hi = densest(pos, 2 * length, weights)
    return max(0, lo - length), min(len(doc.ids), hi + width + length)


def _region_near(p: PreparedItem, doc: DocTokens, around: tuple[int, int], n: int) -> tuple[int, int]:
    """A competitor's own region in a document: region_for by its MATCH_N-grams alone (every item
    has them, in whichever chunk of the benchmark it is, so the region does not depend on how the
    benchmark was cut into chunks); `around` (the region that holds part of its copy) if the
    document holds none of them."""
    key = (p.umgram_key, p.n_tokens, n)  # what the answer depends on, whichever benchmark p is in
    if key in doc._near:
        return doc._near[key] or around
    pos = doc.mpositions(p.umgrams)
    cluster = _padded_cluster(doc, pos, doc.mgrams, MATCH_N, max(p.n_tokens, n)) if len(pos) else None
    if len(doc._near) >= NEAR_CACHE_ITEMS:  # a document the server keeps for many /check requests
        doc._near.clear()
    doc._near[key] = cluster
    return cluster or around


def held(
    p: PreparedItem,
    region_ids: np.ndarray,
    region_mgrams: np.ndarray,
    select: np.ndarray | None = None,
    tiny_select: Sequence[bool] | None = None,
    present: np.ndarray | None = None,
) -> np.ndarray:
    """bool per item token: inside one of the item's MATCH_N-grams (those `select`ed) that the
    region holds (`region_mgrams` sorted, without repeats); a field shorter than MATCH_N counts
    when the region holds it whole. present: member(p.mgrams, region_mgrams), if known."""
    present = member(p.mgrams, region_mgrams) if present is None else present
    if select is not None:
        present = present & select
    out = tokens_of(p, p.mgram_pos[present], MATCH_N)
    for k, (s, e, _key) in enumerate(p.tiny_fields):
        if (tiny_select is None or tiny_select[k]) and find_sequence(region_ids, p.ids[s:e]) >= 0:
            out[s:e] = True
    return out


def match_document(
    i: int,
    items: Sequence[PreparedItem],
    stats: ItemStats,
    shared: SharedText,
    doc_id: int,
    doc: DocTokens,
    n: int,
    th: Thresholds,
    window: tuple[int, int] | None = None,
    cache: MatchCache | None = None,
) -> DocMatch:
    """What one document holds of item `i`, and which of that is its own text (cache: MatchCache)."""
    p, cache = items[i], MatchCache() if cache is None else cache
    ppos = doc.positions(p.passage_grams) if len(p.passage_grams) else None  # asked three times below
    lo, hi = region_for(p, doc, n, window, ppos)
    region, src = _unglued(p, Region.of(doc, lo, hi, n), n)  # not kept: few items share it
    al = align_fields(p.ids, region.ids, p.whole, p.fields)
    matched = held(p, region.ids, region.mgrams, present=(present := member(p.mgrams, region.mgrams))) & al.matched
    own, own_hit, competitor, competitor_found = _own_text(
        i, items, stats, shared, region, matched, al, th, present, doc, n, (lo, hi), cache
    )
    own, own_hit = _apart_from_passage(p, doc, ppos, region, (lo, hi), src, n, own, own_hit)
    shared_run, shared_items = _shared_run(p, stats, al.blocks, own, n)
    rare_run, rare_tokens = _rare(p, stats, present, own_hit, th, cuts := _cuts(p.ids, region.ids, al, matched))
    unique_run, opening, opening_unique = _uniqueness(p, stats, region, own, own_hit, n, cuts)
    cost, own_cost = _break_costs(p, matched, own_hit, al, region, hi - lo)
    answer_found, answer_at = _answer_found(p, al, matched, region.ids, _solution_share(p, own, own_hit), lo, src)
    return DocMatch(
        doc=doc_id,
        matched=matched,
        own=own,
        own_hit=own_hit,
        competitor=competitor,
        region=(lo, hi),
        blocks=_in_document(al.blocks, lo, src),
        answer_found=answer_found,
        answer_at=answer_at,
        passage_coverage=_passage_coverage(p, doc, n, ppos),
        passage_near=(near := _passage_coverage(p, doc, n, ppos, (lo, hi))),
        near_window=window[0] if window else None,
        shared_run=shared_run,
        shared_items=shared_items,
        competitor_found=competitor_found,
        rare_run=rare_run,
        rare_tokens=rare_tokens,
        unique_run=unique_run,
        opening=opening,
        opening_unique=opening_unique,
        question_there=_question_there(p, stats, matched),
        question_tail=_question_tail(p, own, own_hit),
        question_apart=_question_apart(p, shared, doc, ppos, region, lo, src, n, near >= th.contaminated_coverage),
        cuts=cuts,
        counted=_counted(p, _solution_share(p, own, own_hit)),
        matched_bits=max(0.0, float(stats.bits[matched].sum()) - cost),
        own_bits=max(0.0, float(stats.bits[own_hit].sum()) - own_cost),
        break_bits=cost,
        own_bits_total=float(stats.bits[own].sum()),
        bits_total=float(stats.bits.sum()),
    )


def _break_costs(
    p: PreparedItem, matched: np.ndarray, own_hit: np.ndarray, al: Alignment, region: Region, length: int
) -> tuple[float, float]:
    """`breaks` of all the matched text and of the own text held, in a region of `length`
    document tokens (placing one more piece in it costs log2 of that)."""
    piece = math.log2(max(2, length))
    return breaks(p, matched, matched, al.doc_pos, region.ids, piece), breaks(
        p, own_hit, matched, al.doc_pos, region.ids, piece
    )


def _apart_from_passage(
    p: PreparedItem,
    doc: DocTokens,
    ppos: np.ndarray | None,
    region: Region,
    span: tuple[int, int],
    src: np.ndarray | None,
    n: int,
    own: np.ndarray,
    own_hit: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(own, own_hit) of an item with a passage field, whose region is document tokens `span`.
    Where the region holds a copy of the passage, own text counts only held apart from it
    (_outside_passage), and what the question quotes of the passage is own text too, held where
    the document holds it again (_quoted_again): any copy of the passage holds it once, a copy of
    the item a second time, with at least half of the question's other own text (a sibling's
    question quoting the same words, when the sibling is not among the items checked, holds them
    again too). Elsewhere quoted text is no own text, held or not, as before: counted but not
    held, an edited copy's quoted words the edit left once only lowered its share (a heavy edit of
    the DROP layout went clean). Left out, an entailed hypothesis that repeats its premise's first
    words, or a cloze question every word of which is in its passage, had no own text, so even a
    verbatim copy of premise and hypothesis was clean (a probe: 28% of NLI verbatim copies).
    Counted where held apart from the copy (a first version), the passage's own source with a
    clause inserted after the quoted words, split there, or reworded around them, read as the
    item's copy (a review): each holds the words once. Where the region holds no copy of the
    passage, quoted text is left out: without the passage beside it, it is as likely its source."""
    if p.quoted is None:
        return own, own_hit
    outside = None
    if ppos is not None and (own_hit | (own & p.quoted)).any():
        outside = _outside_passage(p, doc, ppos, region, span[0], src, n)
    if outside is None or ppos is None:
        return own & ~p.quoted, own_hit & ~p.quoted
    apart = own_hit & ~p.quoted & held(p, *outside)
    asked = p.role == QUESTION  # a question quoting the passage, copied, holds its other words too
    other = count(own & ~p.quoted & asked)
    if 2 * count(apart & asked) < other:
        return own & ~p.quoted, apart
    quoted = member(p.grams, distinct(p.passage_grams))  # the item's n-grams the passage holds
    again = _quoted_again(p, doc, ppos, quoted, (span[0] - p.passage_tokens, span[1] + p.passage_tokens))
    # most of what it quotes, as a copy of it holds; and for a question that is all quoted, more
    # than a phrase: one n-gram again is what the passage's source may say twice ("To make a
    # version of bc with ..." beside a premise whose hypothesis is "A version of bc with.": a
    # probe), unless its answer follows it there ("... Label: entailment": a review), where a
    # question with words of its own has them held apart too
    phrase = count(again) < 2 and not other and not _answer_after(p, doc, p.grams[again], n)
    if 2 * count(again) <= count(quoted) or phrase:
        return own & ~p.quoted, apart
    repeated = tokens_of(p, p.gram_pos[again], n)
    return own & (~p.quoted | repeated), apart | (own_hit & repeated)


def _answer_after(p: PreparedItem, doc: DocTokens, grams: np.ndarray, n: int) -> bool:
    """Whether a short answer (a label, a word) stands right after a place where the document holds
    one of `grams` (within SHORT_ALT_WINDOW tokens after it, "Label: entailment")."""
    answer = p.ids[p.role == ANSWER]
    if not 0 < len(answer) <= LONG_ANSWER or not len(grams):
        return False
    ends = doc.positions(grams) + n
    return any(_right_after(doc.ids, int(end), answer) >= 0 for end in ends.tolist())


def _quoted_again(
    p: PreparedItem, doc: DocTokens, ppos: np.ndarray, quoted: np.ndarray, window: tuple[int, int]
) -> np.ndarray:
    """bool per n-gram of the item: one its passage holds (`quoted`) that the document holds, within
    `window` (document tokens), as often as the copies of the passage there and a copy of the
    question together do: as often as the passage holds it, times the copies of the passage (as
    many as the document holds of the passage's n-gram the item lacks that it holds most often: a
    dump giving one premise with each of its hypotheses holds it three times), plus as often as the
    question holds it (a question quoting a phrase twice). A second copy of the passage, or the
    passage's source repeating the phrase once, read as a copy of the question (a review)."""
    if not quoted.any():
        return quoted
    grams = p.grams[quoted]
    near = (ppos >= window[0]) & (ppos < window[1])
    lacking = doc.grams[ppos[near]]
    lacking = lacking[~member(lacking, distinct(p.grams))]
    copies = int(occurrences(lacking).max()) if len(lacking) else 1
    at = doc.positions(grams)
    at = at[(at >= window[0]) & (at < window[1])]
    in_doc, doc_count = np.unique(doc.grams[at], return_counts=True)
    held_count = np.zeros(len(grams), dtype=np.int64)
    if len(in_doc):
        k = np.minimum(np.searchsorted(in_doc, grams), len(in_doc) - 1)
        hit = in_doc[k] == grams
        held_count[hit] = doc_count[k[hit]]
    in_passage, passage_count = np.unique(p.passage_grams, return_counts=True)
    asked = occurrences(grams)  # as often as the question holds it (grams of one item: its own count)
    again = quoted.copy()
    again[quoted] = held_count >= copies * passage_count[np.searchsorted(in_passage, grams)] + asked
    return again


def _uniqueness(
    p: PreparedItem,
    stats: ItemStats,
    region: Region,
    own: np.ndarray,
    own_hit: np.ndarray,
    n: int,
    cuts: np.ndarray,
) -> tuple[int, int, int]:
    """(unique_run, opening, opening_unique) of a match (DocMatch)."""
    unique = own_hit & _unique_tokens(p, stats, region, n)
    start = np.flatnonzero(own & (p.role == QUESTION))[:1]  # the opening's first token, if any
    opening = _opening(own_hit, start, cuts)
    in_opening = np.zeros(p.n_tokens, dtype=bool)
    if opening:
        in_opening[start[0] : start[0] + opening] = True
    return run_length(unique, cuts), opening, run_length(unique & in_opening, cuts)


def _cuts(item: np.ndarray, region: np.ndarray, al: Alignment, matched: np.ndarray) -> np.ndarray:
    """Item positions t where a run of held tokens breaks though t - 1 and t are both held: the
    document does not hold them in one stretch (t more than RUN_GAP tokens after t - 1, or before
    it). Held in the item's order is not held in one run: "Returns a set view of the keys ... contained
    in this" with fifteen words between, or a paraphrase's pieces, read as a 10- or 16-token run
    of the item (a probe: two false positives of API documentation). A word the document inserts
    (an edit) does not break a run; two do ("returns the result of applying the given
    Optional-bearing mapping function", another method's documentation, read as a 16-token run).

    Held tokens lie in the alignment's blocks, which run on in the document, so only a block's
    start can cut. Of equally long alignments LCS picks one, and it may place a block on an
    earlier mention of its words ("the committee of nine" quoted, then the copy): no cut where the
    region also holds the block before right before this one, or this one right after the block
    before (a review)."""
    cuts = []
    for (a0, b0, size0), (a, b, size) in zip(al.blocks, al.blocks[1:], strict=False):
        if a != a0 + size0 or not (matched[a - 1] and matched[a]) or 0 <= b - (b0 + size0) <= RUN_GAP:
            continue
        before, after = item[a0:a], item[a : a + size]
        if not any(
            np.array_equal(region[b - g - size0 : b - g], before)
            or np.array_equal(region[b0 + size0 + g : b0 + size0 + g + size], after)
            for g in range(RUN_GAP + 1)
        ):
            cuts.append(a)
    return np.array(cuts, dtype=np.int64)


def run_length(mask: np.ndarray, cuts: np.ndarray) -> int:
    """Length of the longest run of True values of `mask` that crosses none of `cuts` (_cuts)."""
    return longest_run(np.insert(mask, cuts, False) if len(cuts) else mask)


def _outside_passage(
    p: PreparedItem, doc: DocTokens, ppos: np.ndarray, region: Region, lo: int, src: np.ndarray | None, n: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """(token ids, MATCH_N-grams) of the region with the document's copy of the item's passage
    field blanked out (None where the region holds none of it): the item's own text counts where
    the document holds it apart from its passage. A question that quotes its passage with words
    left out (a cloze's blank, a question reworded around the passage's phrases) keeps a few words
    of its own beside each gap, and any copy of the passage holds them, with the answer between:
    text found only inside the passage's copy is the passage's, found for every question of it.
    The passage's copy is where the document holds the passage's n-grams that the item lacks: a
    copy of the question quotes the passage too, but holds none of those. ppos: where the
    document holds the passage's n-grams."""
    if not len(ppos) or not len(region.ids):
        return None
    at = lo + (np.arange(len(region.ids), dtype=np.int64) if src is None else src)  # region token -> document
    first, last = int(at[0]) - n + 1, int(at[-1])  # n-grams starting here may cover a region token
    ugrams = distinct(p.grams)
    starts = ppos[(ppos >= first) & (ppos <= last)]
    starts = starts[~member(doc.grams[starts], ugrams)]
    if not len(starts):
        return None
    inside = _covered_at(starts, first, last, n)[at - first]
    # but where the document holds the item's n-grams that the passage lacks, the text is the
    # item's: a copy of the question written in place (an exam page giving the passage with its
    # blank), its n-grams spanning the blank, is no copy of the passage's
    span = np.arange(max(0, first), min(len(doc.grams) - 1, last) + 1, dtype=np.int64)
    mine = span[member(doc.grams[span], ugrams[~member(ugrams, distinct(p.passage_grams))])]
    if len(mine):
        inside &= ~_covered_at(mine, first, last, n)[at - first]
    if not inside.any():
        return None
    ids = np.where(inside, -1, region.ids)
    if len(ids) < MATCH_N:
        return ids, np.zeros(0, dtype=np.int64)
    apart = ~np.asarray(np.lib.stride_tricks.sliding_window_view(inside, MATCH_N).any(axis=1))  # none inside
    if src is None:  # the document's own MATCH_N-grams of the range
        grams = doc.mgrams[lo : lo + len(ids) - MATCH_N + 1]
    else:
        grams = rolling_hashes(region.ids.view(np.uint64), MATCH_N).view(np.int64)
    return ids, distinct(grams[apart])


def _covered_at(starts: np.ndarray, first: int, last: int, n: int) -> np.ndarray:
    """bool per document position first..last: inside an n-gram starting at one of `starts`."""
    marks = np.zeros(last - first + 1, dtype=bool)
    marks[starts - first] = True
    return covered(marks, n, len(marks))


def _in_document(blocks: list[tuple[int, int, int]], lo: int, src: np.ndarray | None) -> list[tuple[int, int, int]]:
    """Aligned blocks (item start, region start, size) placed in the document: `src` maps an
    unglued region's tokens back to the document's (None when the region is the document's)."""
    if src is None:
        return [(a, lo + b, size) for a, b, size in blocks]
    return [(a, lo + int(src[b]), int(src[b + size - 1] - src[b]) + 1) for a, b, size in blocks]


def _placed(start: int, size: int, lo: int, src: np.ndarray | None) -> tuple[int, int]:
    """A run of region tokens (start, size) placed in the document, as _in_document places a block."""
    _a, at, length = _in_document([(0, start, size)], lo, src)[0]
    return at, length


def _passage_coverage(
    p: PreparedItem, doc: DocTokens, n: int, pos: np.ndarray | None, near: tuple[int, int] | None = None
) -> float:
    """Share of the item's passage field whose n-grams the document holds in one place: the
    densest cluster of them, padded by the passage's length (the item's own text, placed apart,
    may be on either side of it, or elsewhere); near: only within the passage's length of that
    document range (the item's region). pos: where the document holds the passage's n-grams."""
    return passage_place(p, doc, n, pos, near)[0]


def passage_place(
    p: PreparedItem, doc: DocTokens, n: int, pos: np.ndarray | None, near: tuple[int, int] | None = None
) -> tuple[float, np.ndarray]:
    """(_passage_coverage, the positions of the passage's n-grams inside the cluster it measures)."""
    if pos is None or not p.passage_tokens:
        return 0.0, np.zeros(0, dtype=np.int64)
    if near is not None:
        pos = pos[(pos >= near[0] - p.passage_tokens) & (pos < near[1] + p.passage_tokens)]
    if not len(pos):
        return 0.0, pos
    lo, hi = _padded_cluster(doc, pos, doc.grams, n, max(p.passage_tokens, n))
    grams = distinct(doc.grams[lo : max(lo, hi - n + 1)])
    return share(covered(member(p.passage_grams, grams), n, p.passage_tokens)), pos[(pos >= lo) & (pos < hi)]


def _unglued(p: PreparedItem, region: Region, n: int) -> tuple[Region, np.ndarray | None]:
    """The region with each token that is one of the item's glued runs (PreparedItem.glued: "314"
    for "3.14") read as that run's tokens, so a copy that dropped the punctuation inside numbers,
    formulas or identifiers aligns token for token; and for each token of that region, the
    region token it comes from (None: nothing glued)."""
    if not len(p.glued):
        return region, None
    # a token the item itself has ("12" beside "1/2") is read as itself
    hit = member(region.ids, p.glued_ids)
    if not hit.any():
        return region, None
    hit[hit] = ~member(region.ids[hit], p.uids)
    if not hit.any():
        return region, None
    # the first run of each glued id (np.unique gives each value's first index)
    keys, first = np.unique(p.glued[:, 0], return_index=True)
    run = first[np.searchsorted(keys, region.ids[hit])]
    start = np.zeros(len(region.ids), dtype=np.int64)  # for a glued token, where its run is in the item
    width = np.ones(len(region.ids), dtype=np.int64)  # tokens each region token is read as
    start[hit], width[hit] = p.glued[run, 1], p.glued[run, 2]
    src = np.repeat(np.arange(len(region.ids), dtype=np.int64), width)
    offset = np.arange(len(src), dtype=np.int64) - np.repeat(np.cumsum(width) - width, width)
    ids = np.where(hit[src], p.ids[start[src] + offset], region.ids[src])  # runs lie inside the item
    ids = ids.astype(np.int64, copy=False)
    u = ids.view(np.uint64)
    grams = [distinct(rolling_hashes(u, w).view(np.int64)) for w in (MATCH_N, n)]
    return Region(ids, grams[0], grams[1]), src


def _counted(p: PreparedItem, solution_held: float) -> np.ndarray | None:
    """What the coverages count (None: all): a worked solution beside a final answer that the page
    does not give is left out (pages give the final answer, the solution, or both); its runs
    still count as own text."""
    final_answer = bool((p.role == ANSWER).any() or len(p.answer_ids))
    solution = p.role == SOLUTION
    return ~solution if solution.any() and final_answer and solution_held < 0.5 else None


def _rare(
    p: PreparedItem, stats: ItemStats, present: np.ndarray, own_hit: np.ndarray, th: Thresholds, cuts: np.ndarray
) -> tuple[int, int]:
    """(longest run, tokens) of own text held inside short-channel n-grams that no other document
    holds (_one_place); (0, 0) without a short channel or for a long item."""
    if stats.sdf is None or not len(p.sgrams):
        return 0, 0
    alone = _one_place(stats.sdf, p.sgrams, stats.one_text)
    rare = own_hit & tokens_of(p, p.mgram_pos[present & alone], MATCH_N)  # sgrams is mgrams
    return run_length(rare, cuts), count(rare)


def _unique_tokens(p: PreparedItem, stats: ItemStats, region: Region, n: int) -> np.ndarray:
    """bool per item token: inside an index n-gram that the region holds and the corpus holds in
    at most one document (this one; 0 documents: an n-gram a sampled index leaves out, not known
    to be anywhere else). Own text held in a run of them is this document's, not a phrase: "Do
    not print a header line" is in two manual pages of a small corpus: in another item's text, it
    is a phrase both hold, not that item's copy."""
    if not len(p.grams):
        return np.zeros(p.n_tokens, dtype=bool)
    unique = _one_place(stats.df, p.grams, stats.one_text) & member(p.grams, region.grams)
    return tokens_of(p, p.gram_pos[unique], n)


def _one_place(df: np.ndarray, grams: np.ndarray, one_text: np.ndarray | None) -> np.ndarray:
    """bool per gram: held by at most one document, or by several that are one text (exact copies
    of a page: a mirror, or the same page in two corpora scanned together)."""
    alone = df <= 1
    return alone if one_text is None or not len(one_text) else alone | member(grams, one_text)


def _question_there(p: PreparedItem, stats: ItemStats, matched: np.ndarray) -> float:
    """Share of the question's tokens the region holds, but for a passage the question shares
    with other items (ItemStats.passage_tok: a schema or story written into the question field),
    where the question has text besides: a copy of the question alone is the question there."""
    question = p.role == QUESTION
    if not question.any():
        return 0.0
    apart = question & ~stats.passage_tok if count(matched) > stats.n else question
    return share(matched[apart if count(apart) > stats.n else question])  # more than a phrase apart


def _question_apart(
    p: PreparedItem,
    shared: SharedText,
    doc: DocTokens,
    ppos: np.ndarray | None,
    region: Region,
    lo: int,
    src: np.ndarray | None,
    n: int,
    near: bool,
) -> float:
    """DocMatch.question_apart: the share of the question's MATCH_N-grams that no other item asking
    of the same passage holds (what tells the question from theirs: "longest" in "How many yards
    was the longest field goal?" beside "... the shortest ..."), that the region holds where it
    holds no copy of the passage (_outside_passage; all of the region where it holds none). A
    question quoting its passage is found inside every copy of the passage, so only what is held
    apart from it says the question was written down there; and a question quoting its passage
    (an NLI hypothesis quoting its premise) is found apart from the passage's copy wherever the
    passage's source runs on differently after the quote (a clause inserted there: a test), so
    what it quotes is left out. 0 for an item without a passage field, or whose question is all
    quoted, or a sibling's too, and where the passage is not `near` (passage_near under
    contaminated_coverage: the rule reads it nowhere else)."""
    if not near or ppos is None or not len(ppos) or p.passage_tokens == 0:
        return 0.0
    asked = p.role[p.mgram_pos] == QUESTION
    if p.quoted is not None and len(p.quoted) >= MATCH_N:  # what it quotes (grams all of whose tokens it quotes)
        quoted = np.asarray(np.lib.stride_tricks.sliding_window_view(p.quoted, MATCH_N).all(axis=1))
        asked &= ~quoted[p.mgram_pos]
    question = shared.lone_question(p, p.mgrams[asked])
    if not len(question):
        return 0.0
    outside = _outside_passage(p, doc, ppos, region, lo, src, n)
    return share(member(question, region.mgrams if outside is None else outside[1]))


def _question_tail(p: PreparedItem, own: np.ndarray, own_hit: np.ndarray) -> int:
    """DocMatch.question_tail, counted in the question's own text: a frame it shares with other
    items ("Q: Was this claim true or false? A:"), which a copy may leave out, is not its end (a
    review)."""
    q = np.flatnonzero((p.role == QUESTION) & own)
    held_q = q[own_hit[q]]
    return len(q) if not len(held_q) else int(count(q > held_q.max()))


def _opening(own_hit: np.ndarray, start: np.ndarray, cuts: np.ndarray) -> int:
    """Own tokens held in one run from `start` (the first own token of the question; empty: none)
    on, crossing none of `cuts` (_cuts), 0 if that one is not held: how a truncated copy holds an item."""
    if not len(start) or not own_hit[start[0]]:
        return 0
    rest = own_hit[start[0] :].copy()
    rest[cuts[cuts > start[0]] - start[0]] = False  # a cut ends the run before the token it is at
    gaps = np.flatnonzero(~rest)
    return int(gaps[0]) if len(gaps) else len(rest)


def breaks(
    p: PreparedItem, sel: np.ndarray, matched: np.ndarray, doc_pos: np.ndarray, region_ids: np.ndarray, piece: float
) -> float:
    """Bits it costs to say where each piece of the selected matched text (`sel`: all of it, or
    the own text) of one field resumes after it breaks off: between two selected tokens of the
    same field, an item token is missing from the match, or the region holds the two pieces only
    apart.

    A copy holds each field in one piece, or in pieces a word or two apart where it was edited;
    the pieces that chance (or a sibling's copy) assembles are many, and anywhere. Each piece
    after the first costs the bits that place it: 1 + log2(1 + g) where it resumes g tokens on
    (the item's gap and the document's, added), or `piece` bits, log2(region length), if that is
    less (it could start anywhere in the region): the gap cost of local alignment statistics
    (Karlin & Altschul 1990; Altschul et al. 1997), with a gap's length coded in about log2 of
    it. So an edited copy's pieces, one substituted word apart, cost 2.6 bits each, and pieces
    of siblings' copies strewn over the region the full price. A break between fields costs
    nothing: documents lay fields out as they please.

    The aligner's pieces are not the count: LCS may take a field's first words from an earlier
    sibling's copy and the rest from the item's own copy, and a token between two blocks may not
    count as matched. Pieces are one piece when the region holds the item's text from the first
    to the last of them contiguously. In C (_native.breaks; a test holds it equal to this rule
    written in numpy)."""
    return _native.breaks(
        np.ascontiguousarray(sel, dtype=bool),
        np.ascontiguousarray(matched, dtype=bool),
        np.ascontiguousarray(doc_pos, dtype=np.int64),
        p.field_starts,
        p.ids,
        np.ascontiguousarray(region_ids, dtype=np.int64),
        piece,
    )


@dataclass
class Region:
    """The aligned range of a document: token ids, and its MATCH_N-grams (sorted, without
    repeats)."""

    ids: np.ndarray
    mgrams: np.ndarray
    grams: np.ndarray  # its index n-grams, sorted, without repeats
    key: tuple[DocTokens, int, int] | None = None  # (document, lo, hi) of a range of one, None if read otherwise

    @classmethod
    def of(cls, doc: DocTokens, lo: int, hi: int, n: int) -> Region:
        return cls(
            doc.ids[lo:hi],
            distinct(doc.mgrams[lo : max(lo, hi - MATCH_N + 1)]),
            distinct(doc.grams[lo : max(lo, hi - n + 1)]),
            (doc, lo, hi),
        )


class MatchCache:
    """What matching one item with a document works out that another item's matching with the
    same document asks again: competitors' document ranges (Region.of) and other items aligned
    with a range, up to REGION_TOKENS_KEPT and ALIGNED_TOKENS_KEPT tokens (then it starts afresh).
    The items of a chunk share candidate documents, and siblings share competitors, so 59% of
    the competitors' alignments of a 10,000-item scan were repeats (bench/scan_speed.py's
    benchmark). It lives as long as the caller keeps it (a chunk); its keys hold the documents
    themselves (DocTokens are equal by identity), so no other document can take one's place. What
    it returns is shared: read it, never write to it (the alignments' arrays are read-only)."""

    def __init__(self) -> None:
        self._regions: dict[tuple[DocTokens, int, int, int], Region] = {}
        self._aligned: dict[tuple[int, DocTokens, int, int], Alignment] = {}
        self._region_tokens = self._aligned_tokens = 0

    def region(self, doc: DocTokens, lo: int, hi: int, n: int) -> Region:
        key = (doc, lo, hi, n)
        region = self._regions.get(key)
        if region is None:
            if self._region_tokens + hi - lo > REGION_TOKENS_KEPT:
                self._regions.clear()
                self._region_tokens = 0
            region = self._regions[key] = Region.of(doc, lo, hi, n)
            self._region_tokens += hi - lo
        return region

    def align(self, other: PreparedItem, region: Region) -> Alignment:
        """align() of item `other` (all its text) with the region."""
        if region.key is None:  # read otherwise (_unglued): as this item's match reads it only
            return align(other.ids, region.ids, other.whole)
        key = (other.text_key, *region.key)
        al = self._aligned.get(key)
        if al is None:
            if self._aligned_tokens + other.n_tokens > ALIGNED_TOKENS_KEPT:
                self._aligned.clear()
                self._aligned_tokens = 0
            al = align(other.ids, region.ids, other.whole)
            al.matched.flags.writeable = al.doc_pos.flags.writeable = False
            self._aligned[key] = al
            self._aligned_tokens += other.n_tokens
        return al


def _own_text(
    i: int,
    items: Sequence[PreparedItem],
    stats: ItemStats,
    shared: SharedText,
    region: Region,
    matched: np.ndarray,
    al: Alignment,
    th: Thresholds,
    present: np.ndarray,
    doc: DocTokens,
    n: int,
    around: tuple[int, int],
    cache: MatchCache,
) -> tuple[np.ndarray, np.ndarray, int | None, bool]:
    """(own tokens, own tokens held, competitor, whether another item's own text is found: distinct
    text of an item the region is a copy of).

    If the region holds a larger share of another item's distinct text than of item i's (or an
    equal share, and as large a share of that whole item as of item i), it is that item's copy:
    item i is credited only with what it does not share with it. Otherwise, all but the
    passages item i shares word for word with another item.
    present: bool per MATCH_N-gram of item i, the region holds it."""
    p = items[i]
    # Which item the document is a copy of matters only where its verdict can: a match whose
    # tokens carry fewer than min_bits in all, with no block a passage's length, is clean
    # whatever its own text is (every route to a status needs one or the other), so no
    # competitor is looked for (the slowest part of matching a document)
    hopeless = float(stats.bits[matched].sum()) < th.min_bits and (
        max((size for _a, _b, size in al.blocks), default=0) < th.passage_tokens
    )
    if hopeless:
        own = unshared(p, stats, th)
        return own, matched & own, None, False
    candidates = [] if count(matched) < 2 else _competitors(i, items, stats, shared, region, th, present)
    if not candidates:
        own = _own_alone(p, stats, matched, th)
        return own, matched & own, None, False
    order, label, flat, in_region = _measured(p, [items[j].umgrams for j in candidates], region)
    others = [items[candidates[k]] for k in order]
    copies = _copy_of(p, others, region, matched, al, present, doc, n, around, cache)
    if len(copies) > 1:  # the best, and the others whose copy is where item i's match is
        at = np.zeros(len(region.ids), dtype=bool)
        at[al.doc_pos[matched]] = True
        copies = copies[:1] + [k for k in copies[1:] if (_stretch(p, others[k], region, cache) & at).any()]
    if not copies:
        own = _own_unexplained(p, stats, matched, th)
        return own, matched & own, None, False
    chosen = [(order[k], others[k]) for k in copies]
    own, own_hit = _beside(p, [others[k] for k in copies], stats, region, al, present)
    found_other = _copy_text_found(p, present, stats, own, chosen, label[in_region], flat[in_region])
    return own, own_hit, candidates[order[copies[0]]], found_other


def _measured(
    p: PreparedItem, grams: Sequence[np.ndarray], region: Region
) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray]:
    """(which candidates, of their MATCH_N-grams `grams`, to align with the region, and every
    candidate gram's label (which candidate), value and whether the region holds it). Those the
    region holds the largest shares of; of equal shares, the item that explains more of the
    region (a longer item held whole explains more than a shorter one whose every gram is in it
    too). And, if none of those holds text item p lacks there, the one holding most of it: of
    sixty chats sharing one frame, those with the shortest replies have the largest shares, and
    the one copied, most of whose text is its long reply, was never measured (a probe: a clean
    item `suspicious` for the frame it shares with the copy)."""
    label = np.repeat(np.arange(len(grams)), [len(g) for g in grams])
    flat = np.concatenate(grams)
    in_region = member(flat, region.mgrams)
    held_count = np.bincount(label[in_region], minlength=len(grams))
    bag_share = held_count / np.maximum([len(g) for g in grams], 1)
    order: list[int] = np.lexsort((-held_count, -bag_share))[:COMPETITORS_ALIGNED].tolist()
    theirs = np.bincount(label[in_region & ~member(flat, p.umgrams)], minlength=len(grams))
    if not theirs[order].any() and theirs.any():
        order.append(int(np.argmax(theirs)))
    return order, label, flat, in_region


def _own_alone(p: PreparedItem, stats: ItemStats, matched: np.ndarray, th: Thresholds) -> np.ndarray:
    """bool per item token: own text where no other item explains the document: all but common
    text, the passages the item shares (too little held for a verdict: they need not be worked
    out), and templates (text in more items than a passage is): a frame every item carries is no
    item's own text, held or not; counted, a claim copied without its frame was a third of it."""
    own = ~stats.passage_tok & ~stats.common_tok if count(matched) > stats.n else ~stats.common_tok
    return own & ~_template(p, stats, th)


def _own_unexplained(p: PreparedItem, stats: ItemStats, matched: np.ndarray, th: Thresholds) -> np.ndarray:
    """bool per item token: own text where other items share what the region holds and none of
    them is its copy. Not the passages the item shares, nor common text, nor text every item
    carries (_everywhere: a trial's lm-evaluation-harness header before each MMLU question held
    copies at 75% of their own text). The pieces of a template an item strings together are its
    own text (navigate's "Take 3 steps. Turn left."; without them its copies went clean), but
    not where the region holds the question around two or more numbers it has beside the template
    and none of them: a page holding a maths problem's frame with other numbers in their places is
    another instance of it, not this item (a probe: such siblings came out `contaminated`, the frame
    83-89% of their own text). (Numbers outside the stretch held, a half copy's missing half, say
    nothing.)"""
    own = ~stats.passage_tok & ~stats.common_tok
    asked = np.flatnonzero(matched & (p.role == QUESTION))
    if len(asked) >= 2:
        slots = own & ~_template(p, stats, th)
        numbers = slots & member(p.ids, _NUMBER_IDS)  # np.isin sorted the 10,000 each call: a tenth of a scan
        numbers[: asked[0]] = numbers[asked[-1] + 1 :] = False
        if count(numbers) >= 2 and not (matched & numbers).any():
            return slots
    return own & ~_everywhere(p, stats, th)


def _template(p: PreparedItem, stats: ItemStats, th: Thresholds) -> np.ndarray:
    """bool per item token: in a MATCH_N-gram more items hold than share a passage."""
    return tokens_of(p, p.mgram_pos[stats.mfreq > th.passage_max_items + 1], MATCH_N)


def _everywhere(p: PreparedItem, stats: ItemStats, th: Thresholds) -> np.ndarray:
    """bool per item token: in a MATCH_N-gram that every item of the benchmark holds (a header or
    an instruction they all carry), they being more than a passage is shared by (of two items,
    what both hold is a question and solution they share: one is the other's sibling, a copy of
    it decided by what they do not share). Not all template text: where the frame is most of every
    item (navigate's "Take 3 steps. Turn left."), which pieces of it an item strings together is
    what it has of its own, and copies counted without them went clean (254 of the evaluation
    set's items changed)."""
    groups = len(stats.shared.members)
    if groups <= th.passage_max_items + 1:
        return np.zeros(p.n_tokens, dtype=bool)
    return tokens_of(p, p.mgram_pos[stats.mfreq >= groups], MATCH_N)


def unshared(p: PreparedItem, stats: ItemStats, th: Thresholds) -> np.ndarray:
    """bool per item token: the item's own text when no document says which other item it is
    measured against: no token of a MATCH_N-gram another item has, nor common text."""
    return ~tokens_of(p, p.mgram_pos[stats.mfreq >= th.template_min_items], MATCH_N) & ~stats.common_tok


def _copy_text_found(
    p: PreparedItem,
    present: np.ndarray,
    stats: ItemStats,
    own: np.ndarray,
    copies: Sequence[tuple[int, PreparedItem]],
    held_label: np.ndarray,
    held: np.ndarray,
) -> bool:
    """Whether the region holds distinct text (MATCH_N-grams p lacks) of an item it is a copy of
    that shares the text p shares with other items there (most of the grams of it the region
    holds, those not common in the corpus: a passage, or whatever run DocMatch.shared_run measures,
    which is what the rule this answers for reads). Only such a copy's text is another item's own
    text found: grams of the other candidates in the padded region are chance (the phrases of one
    passage recur in others), and an unrelated item's copy beside a passage found alone (sharing a
    phrase with it at most) does not make the passage its copy's; neither hides the passage. A run
    a record shares with a few others, its frame with the values they have in common ("Serum
    cholesterol: 288 mg/dl, Fasting blood sugar ..."), is no passage by ItemStats.passage_tok (the
    frame's grams are in every record), and the copy of another record holding it left the run
    "found alone" (a probe's structured records, bench/MEASUREMENTS.md, session 45). copies: (label,
    item) of the items the region is a copy of; own: bool per item token, p's own text beside them
    (_beside); held, held_label: each candidate's gram the region holds, and its label; present:
    bool per MATCH_N-gram of p, the region holds it."""
    shared_text = ~own & ~stats.common_tok  # own leaves out its passage (_beside)
    mine = p.mgrams[present & shared_text[p.mgram_pos]]
    labels = [k for k, other in copies if 2 * count(member(mine, other.umgrams)) > len(mine)]
    if not labels:  # half the calls of a 10,000-item scan: no copy shares the passage
        return False
    of_copy = np.zeros(len(held_label), dtype=bool)
    for k in labels:  # at most COMPETITORS_ALIGNED of them (np.isin took 50 us a call)
        of_copy |= held_label == k
    return not member(held[of_copy], p.umgrams).all()


def _stretch(p: PreparedItem, other: PreparedItem, region: Region, cache: MatchCache) -> np.ndarray:
    """bool per region token: inside a block of other's alignment that holds some of its distinct
    text (what p lacks), i.e. where the region holds other's copy."""
    alo = cache.align(other, region)
    mine = ~member(other.mgrams, p.umgrams) & member(other.mgrams, region.mgrams)
    distinct_tok = tokens_of(other, other.mgram_pos[mine], MATCH_N)
    out = np.zeros(len(region.ids), dtype=bool)
    if not alo.blocks:
        return out
    blocks = np.array(alo.blocks, dtype=np.int64)
    held_before = np.concatenate(([0], np.cumsum(distinct_tok)))  # distinct tokens before each item token
    keep = held_before[blocks[:, 0] + blocks[:, 2]] > held_before[blocks[:, 0]]
    for b, size in blocks[keep, 1:].tolist():
        out[b : b + size] = True
    return out


def _beside(
    p: PreparedItem,
    others: Sequence[PreparedItem],
    stats: ItemStats,
    region: Region,
    al: Alignment,
    present: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(own tokens, own tokens held) of item p where the region is a copy of each of `others`
    (a page may hold several items' copies): what p shares with none of them (its MATCH_N-grams
    they lack, its short fields they have not), and, as with no copy, no passage p shares with
    another item (that item's copy need not be among them: a passage beside an unrelated item's
    copy is still no item's own text)."""
    own_g = ~member(
        p.mgrams, others[0].umgrams if len(others) == 1 else distinct(np.concatenate([o.umgrams for o in others]))
    )
    their_fields = {key for other in others for *_se, key in other.tiny_fields}
    own_tiny = [key not in their_fields for *_se, key in p.tiny_fields]
    own = tokens_of(p, p.mgram_pos[own_g], MATCH_N)
    for (s, e, _key), flag in zip(p.tiny_fields, own_tiny, strict=True):
        own[s:e] = flag
    own &= ~stats.common_tok & ~stats.passage_tok
    own_hit = held(p, region.ids, region.mgrams, own_g, own_tiny, present) & own & al.matched
    return own, own_hit


def _copy_of(
    p: PreparedItem,
    others: Sequence[PreparedItem],
    region: Region,
    matched: np.ndarray,
    al: Alignment,
    present: np.ndarray,
    doc: DocTokens,
    n: int,
    around: tuple[int, int],
    cache: MatchCache,
) -> list[int]:
    """Which of `others` the region is a copy of rather than of item p: their indices in
    `others`, the best first (a page may hold several items' copies, each explaining part of
    what the region holds of p). present: bool per MATCH_N-gram of p, the region holds it.

    An item longer than p is measured on its own region of the document (_region_near): p's
    region, cut to p's length, would hold only part of a longer item's copy, and a short item
    whose text is a stretch of a longer one's would be the better explanation of it.
    around: p's region (document token range)."""
    copies: list[tuple[tuple[float, float], int]] = []
    whole_i = share(matched)
    at = al.doc_pos[matched]
    span = (int(at.min()), int(at.max())) if len(at) else (0, -1)
    gaps = span[1] - span[0] + 1 > len(at)  # the region holds other text between the item's matched words
    told: bool | None = None  # _told_here's answer, worked out the first time a tie of neither asks
    for k, other in enumerate(others):
        if not other.n_tokens:
            continue
        theirs_region = (
            cache.region(doc, *_region_near(other, doc, around, n), n) if other.n_tokens > p.n_tokens else region
        )
        theirs_present = member(other.mgrams, theirs_region.mgrams)
        shares = _distinct_shares(p, other, present, theirs_present)
        d_i, d_o = shares or (0.0, 0.0)
        neither = shares == (0.0, 0.0)  # _distinct_shares says why
        if neither and told is None:
            told = _told_here(p, region, matched)
        neither = neither and not told
        if d_o < d_i:
            continue
        theirs = held(other, theirs_region.ids, theirs_region.mgrams, present=theirs_present)
        # the other aligned on p's region: for _fills_gaps, and (once) for its held share when
        # that is also the other's region
        here = cache.align(other, region) if d_o == d_i and gaps else None
        fills = here is not None and _fills_gaps(other, here, region, span, int(count(matched)))
        if d_o == d_i and share(theirs) < whole_i and not fills and not neither:
            continue  # aligned, it would hold no more than that
        if here is None or theirs_region is not region:
            here = cache.align(other, theirs_region)
        held_share = share(theirs & here.matched)
        as_much = neither and count(theirs & here.matched) >= count(matched)
        if d_o > d_i or held_share >= whole_i or fills or as_much:
            copies.append(((d_o, held_share), k))
    return [k for _score, k in sorted(copies, key=lambda c: c[0], reverse=True)]


def _told_here(p: PreparedItem, region: Region, matched: np.ndarray) -> bool:
    """Whether the region holds item p's question whole, or its answer (MATCH_N tokens or more,
    word for word) with some of its question: p's copy, not a twin's, whoever else holds as many
    of its tokens (an edited continuation whose answer is the next item's context went clean: a
    review)."""
    asked = p.role == QUESTION
    if asked.any() and matched[asked].all():
        return True
    needle = answer_ids(p)
    return bool(len(needle) >= MATCH_N and matched[asked].any() and find_sequence(region.ids, needle) >= 0)


def _distinct_shares(
    p: PreparedItem, other: PreparedItem, present: np.ndarray, theirs_present: np.ndarray
) -> tuple[float, float] | None:
    """(share of item p's distinct MATCH_N-grams, those `other` lacks, that the region holds; the
    same of other's), or None where one item holds all of the other's text (only the shares of
    the whole items can decide then). Two items are told apart by the text they do not share:
    the region is the other's copy if it holds a larger share of the other's distinct text than
    of p's (a passage, frame or long solution they share, held or not, decides nothing). On a tie
    (both all there, or neither), the larger share of each whole item held decides, the other
    winning ties (it holds at least as large a share of itself), or the other accounting for more
    of the stretch that holds p's match (_fills_gaps). With none of either's distinct text there,
    nor p's question whole, what the region holds of them is what they share, and the other
    explains it as well if it holds as many tokens there: a share of the whole would favour the
    shorter (a twin a word longer holds a smaller share of itself, and the shorter was credited
    with the passage they share, a probe's sibling `contaminated` by its twin's half copy:
    bench/twin_shapes.py)."""
    mine_g = ~member(p.mgrams, other.umgrams)
    theirs_g = ~member(other.mgrams, p.umgrams)
    if not (mine_g.any() and theirs_g.any()):
        return None
    return share(present[mine_g]), share(theirs_present[theirs_g])


def _fills_gaps(other: PreparedItem, al: Alignment, region: Region, span: tuple[int, int], mine: int) -> bool:
    """Whether item `other`, aligned with the region (`al`), accounts for more of the stretch of it that
    holds the item's match (span: its first and last aligned region token) than the item's own
    `mine` tokens: the stretch holds the item's text with other text between, and the other item
    explains that text too (an edited copy of a longer item that holds this one's words, with the
    longer one's words between them, is the longer one's copy)."""
    pos = al.doc_pos[al.matched & held(other, region.ids, region.mgrams)]
    return count((pos >= span[0]) & (pos <= span[1])) > mine


def _competitors(
    i: int,
    items: Sequence[PreparedItem],
    stats: ItemStats,
    shared: SharedText,
    region: Region,
    th: Thresholds,
    present: np.ndarray,
) -> list[int]:
    """Other items that could explain what the region holds of item i (module doc, step 4):
    those sharing most of the MATCH_N-grams of item i that the region holds, those most present
    in the region (their grams in at most PRESENCE_MAX_ITEMS items), and those holding most of
    the region's index n-grams (longer grams name fewer items: in a benchmark drawn from a small
    vocabulary, every 3-gram is in hundreds of items, a 5-gram in a few).

    The caller measures how much of each the region holds, as it does for item i: if one holds
    at least as large a share of itself, the region is (at least as much) its copy, and item i
    is credited only with the text that one lacks. Otherwise item i explains the region best,
    and its own text is all but what it shares word for word with another item as a passage."""
    p = items[i]
    me = int(shared.group[i])
    sharing = present & (stats.mfreq >= th.template_min_items)
    if not sharing.any():
        return []
    candidates = shared.mgrams.top_groups(p.mgrams[sharing], COMPETITOR_MAX_ITEMS, me, COMPETITOR_CANDIDATES)
    if not candidates:
        return []  # only template grams are shared: no one item explains them
    candidates += shared.mgrams.top_groups(region.mgrams, PRESENCE_MAX_ITEMS, me, COMPETITOR_CANDIDATES)
    candidates += shared.ngrams.top_groups(region.grams, COMPETITOR_MAX_ITEMS, me, COMPETITOR_CANDIDATES)
    return [shared.members[g] for g in dict.fromkeys(candidates)]


def _solution_share(p: PreparedItem, own: np.ndarray, own_hit: np.ndarray) -> float:
    """Share of the worked solution's own text (what no competitor shares: a templated solution
    step is not this item's) that the region holds; 0 for an item whose solution is too short to
    tell (SOLUTION_MIN_TOKENS) or is all shared."""
    sel = (p.role == SOLUTION) & own
    return share(own_hit[sel]) if count(sel) >= SOLUTION_MIN_TOKENS else 0.0


def _answer_found(
    p: PreparedItem,
    al: Alignment,
    matched: np.ndarray,
    region: np.ndarray,
    solution: float,
    lo: int,
    src: np.ndarray | None,
) -> tuple[bool, tuple[int, int] | None]:
    """Whether the answer follows the question in the document, and where a short one was found
    (document token start, size: _in_document places the region's tokens, which start at `lo`
    or are mapped by `src`; None where the alignment shows it, or nothing was found).

    A long free-text answer must be at least half held. A short one (a number, a word, a
    repeated choice) must appear exactly within a few tokens after the question (after the
    choices, if they are listed); a repeated choice must appear twice when the other choices
    are listed too, once as a choice and once as the answer (the last is where it is given;
    otherwise the first after the question is, a later one being the text going on about it),
    or be named by the letter the document lists it under (_label_given), or fill the question's
    blank (_filled_blank: a cloze copied as the sentence it was cut from). Half of a worked
    solution's own text held gives the answer away too; a short final answer after it is found
    for the evidence (_after_solution).
    """
    answer_sel = p.role == ANSWER
    if solution >= 0.5:  # given away; a short answer is placed after the solution, or after the question
        placed = _after_solution(p, al, region, answer_sel, lo, src)  # ("Answer: 72. Explanation: ...": a review)
        return True, placed if placed is not None else _answer_found(p, al, matched, region, 0.0, lo, src)[1]
    if len(p.answer_ids) == 0 and not answer_sel.any():
        return False, None
    if count(answer_sel) > LONG_ANSWER:
        return share(matched[answer_sel]) >= 0.5, None
    q_end = _question_end(p, al)
    if q_end < 0:
        return False, None
    needle = answer_ids(p)
    choices = [p.ids[s:e] for s, e, code in p.fields if code == CHOICES]
    width = ANSWER_WINDOW + 2 * len(needle) + sum(len(c) + 2 for c in choices)
    window = region[q_end : q_end + width]
    found: list[int] = []
    at = 0
    listed_one = frozenset(int(c[0]) for c in choices if len(c) == 1)  # "512 641 700": choices, not one number
    while (k := find_sequence(window[at:], needle)) >= 0:
        if len(needle) > 1 or not _inside_number(window, at + k, listed_one):
            found.append(at + k)
        at += k + len(needle)
    others = [c for c in choices if not np.array_equal(c, needle)]
    listed = bool(others) and sum(find_sequence(window, c) >= 0 for c in others) * 2 >= len(others)
    repeated = listed and len(p.answer_ids) > 0  # a choice listed, then given: the last is the answer
    if len(found) >= (2 if repeated else 1):  # else the first after the question (a later one is prose)
        return True, _placed(q_end + found[-1 if repeated else 0], len(needle), lo, src)
    if (filled := _filled_blank(p, al, region, needle)) >= 0:
        return True, _placed(filled, len(needle), lo, src)
    if len(p.answer_ids):
        k = _label_given(p, window, choices, needle) if listed else -1
        return (True, _placed(q_end + k, 1, lo, src)) if k >= 0 else (False, None)
    return _alternative_found(p, region, q_end, lo, src)


def _inside_number(window: np.ndarray, at: int, choices: frozenset[int] = frozenset()) -> bool:
    """Whether the token window[at] is part of a longer number written in groups of three: an answer
    of 1 is not found in "a total of 1,641 pupils" (the tokens 1 and 641), nor 641 there (a probe:
    a DROP question `contaminated` against its source passage, answer "1"). Asked of one-token
    answers only: "37.9" followed by a list of numbers is still 37.9 (a planted copy in a source
    file of numbers). A neighbour that is one of the item's one-token `choices` is no group of the
    same number: choices of three digits listed without labels ("512 641 700 820") before the one
    given (review 40)."""
    here = int(window[at])
    prev = int(window[at - 1]) if at > 0 else None
    succ = int(window[at + 1]) if at + 1 < len(window) else None
    before = prev in _HEADS and prev not in choices and here in _GROUPS
    after = here in _HEADS and succ in _GROUPS and succ not in choices
    return bool(before or after)


def _question_end(p: PreparedItem, al: Alignment) -> int:
    """Region index right after the last question token the region holds in a block of two or
    more question tokens, or a question field of one token (-1: none), where a short answer is
    looked for. A block of one question word and the answer is where the answer stands, not
    where the question ends: a claim copied alone, with "... wears a false brow ..." 48 words on,
    had the frame's last word ("A:") and the answer ("False") matched as one block there, and
    came out `contaminated` (a probe of templated true/false claims)."""
    end = -1
    for a, b, size in al.blocks:
        q = np.flatnonzero(p.role[a : a + size] == QUESTION)
        if len(q) >= 2 or (len(q) == 1 and p.whole[a + q[0]]):  # a one-token question ("ephemeral") is whole
            end = max(end, b + int(q[-1]) + 1)
    return end


def _filled_blank(p: PreparedItem, al: Alignment, region: np.ndarray, needle: np.ndarray) -> int:
    """Region index where the answer fills the question's blank (-1: nowhere, or a question with
    no blank): the region holds the answer, and nothing else, between two question words that the
    item has side by side or with at most BLANK_TOKENS words between that the region lacks (the
    blank: "____" is no token, "[MASK]" one). A cloze item's source sentence holds its answer
    there, inside the question, where the answer after the question was looked for only (a new
    user's trial: a page holding "These functions are intended for ..." was "the question ...
    without its answer" for "These functions are ____ for ...", and found only with the blank at
    the sentence's end). Only a question with a blank (BLANK) has one to fill: in any other, a
    word an edited copy changed that happens to be the answer ("Which gas do oxygen plants take
    in") is no answer given (a review)."""
    q = np.flatnonzero((p.role == QUESTION) & al.matched)
    if len(q) < 2 or not len(needle) or not BLANK.search(p.item.question):
        return -1
    d = al.doc_pos[q]
    for j in np.flatnonzero((np.diff(d) == len(needle) + 1) & (np.diff(q) <= BLANK_TOKENS + 1)).tolist():
        start = int(d[j]) + 1
        if np.array_equal(region[start : start + len(needle)], needle):
            return start
    return -1


def _alternative_found(
    p: PreparedItem, region: np.ndarray, q_end: int, lo: int, src: np.ndarray | None
) -> tuple[bool, tuple[int, int] | None]:
    """Another accepted answer of a free-text answer after the question (region token q_end on):
    one or two words ("no", "1") right after it (an "Answer:" between), as chance puts such words
    anywhere in a wider window ("no" is in 4-6% of 18-token windows of prose); a longer one in
    the answer's window."""
    for alt in p.alternative_ids:
        if len(alt) <= 8 and (k := _right_after(region, q_end, alt)) >= 0:
            return True, _placed(q_end + k, len(alt), lo, src)
    return False, None


def _right_after(region: np.ndarray, start: int, needle: np.ndarray) -> int:
    """Where a short answer stands from region token `start` on (-1: not there): a one- or two-word
    one within SHORT_ALT_WINDOW tokens ("A: no", "Answer: 72"), a longer one within ANSWER_WINDOW."""
    reach = SHORT_ALT_WINDOW if len(needle) <= 2 else ANSWER_WINDOW
    return find_sequence(region[start : start + reach + len(needle)], needle)


def _label_given(p: PreparedItem, window: np.ndarray, choices: Sequence[np.ndarray], needle: np.ndarray) -> int:
    """Where (in `window`, the region after the question) the document names the right choice by
    the letter it lists it under ("A. ... B. ... C. ... D. ...  Answer: C"), -1 if it does not:
    every choice is there, each after one letter, the letters consecutive in the alphabet in the
    document's order; then the right choice's letter stands after the last choice with exactly one
    other word between, not a number ("Answer: C", "Ans. C", "答案：C", in any language).

    Of four choices or more, one wrong choice may be another text under its letter (an edited
    copy: "D. Argon" for "D. Helium"; the key was not found, a trial): its letter must stand where
    it would, right after the choice before it; where it is the last, its text is taken to be as
    long as the choice's (a looser reach read "A leaf is green", "E. C and O only" and the next
    list's "C." as keys: a review), and the word before the key is no letter.

    Anything looser reads the next question as a key (a review): a letter right after the choices,
    or after a number ("2. B cells mature ..."), or further on ("Question 2 A train ..."), is that
    question's first word as often as a key; so is a letter the item's own text uses as a word
    ("a"). One word then the right letter by chance remains possible ("Choose A, B, C or D" where
    the answer is A; an empty "Answer: ____" line, the blank being no token, before a line that
    starts with the right letter). Numbers are not taken as labels at all: a page of numbered questions
    numbers the next one. "The correct answer is C" is not taken either: the price of the rest."""
    at = [find_sequence(window, c) for c in choices]
    right_j = next(j for j, c in enumerate(choices) if np.array_equal(c, needle))
    missing = [j for j, a in enumerate(at) if a < 1]
    if missing and (len(missing) > 1 or len(choices) < EDITED_CHOICE_MIN or right_j in missing):
        return -1
    order = sorted((j for j in range(len(choices)) if at[j] >= 1), key=at.__getitem__)
    if any(at[j] + len(choices[j]) >= at[k] for j, k in zip(order, order[1:], strict=False)):
        return -1  # a choice overlaps the next one's letter
    labels = [int(window[at[j] - 1]) for j in order]
    if any(t not in _LETTER_PLACE for t in labels):
        return -1
    place = [_LETTER_PLACE[t] for t in labels]
    steps = np.diff(place).tolist()
    right = int(window[at[right_j] - 1])
    if (p.ids == right).any():
        return -1
    end = max(at[j] + len(choices[j]) for j in order)
    if not missing:
        if any(d != 1 for d in steps):
            return -1
        lo, hi = end + 1, end + _label_words(p)
    elif place[0] != 0 or any(d not in (1, 2) for d in steps) or steps.count(2) > 1:
        return -1  # lettered from A, one letter skipped at most (the edited choice's)
    elif 2 in steps:  # the edited choice between two listed ones: its letter right after the one before
        g = steps.index(2)
        if int(window[at[order[g]] + len(choices[order[g]])]) != int(_LETTERS[place[g] + 1]):
            return -1
        lo, hi = end + 1, end + _label_words(p)
    else:  # the edited choice last: its letter right after the others, its text as long as the choice's
        if end >= len(window) or place[-1] + 1 >= len(_LETTERS) or int(window[end]) != int(_LETTERS[place[-1] + 1]):
            return -1
        end += 1 + len(choices[missing[0]])
        lo, hi = end + 1, end + _label_words(p)
    for k in range(lo, min(hi, len(window) - 1) + 1):
        between = window[end:k].tolist()
        if int(window[k]) == right and not any(t in _NUMBERS for t in between):
            # a letter is no label: "D. Argon\nE. C and O only" is a fifth choice (a review)
            return -1 if missing and any(t in _LETTER_PLACE for t in between) else k
    return -1


def _label_words(p: PreparedItem) -> int:
    """Tokens of the one word between the choices and the key: in Chinese or Japanese text a label
    is a word of one or two characters, a token each ("答案：B" was not found where "答：B" and
    "Answer: B" were: a trial); not the tokens a kana-heavy item's word averages (4: "つぎに C" was
    read as a key: a review); in a spaced script it is one token, as before."""
    return min(LABEL_CJK_CHARS, max(1, round(p.tokens_per_word)))


def _after_solution(
    p: PreparedItem, al: Alignment, region: np.ndarray, answer_sel: np.ndarray, lo: int, src: np.ndarray | None
) -> tuple[int, int] | None:
    """Where a short final answer (a number, a word) stands after the worked solution the region
    holds (a page gives the steps, then the answer), in the window _alternative_found gives an
    accepted answer after the question (two tokens between for a one- or two-word answer: "Exercise
    6" and "Problem 2" further on are chance); None if the answer is long or not there."""
    held = (p.role == SOLUTION) & al.matched
    if not held.any() or not 0 < count(answer_sel) <= 8:
        return None
    end = int(al.doc_pos[held].max()) + 1
    needle = p.ids[answer_sel]
    k = _right_after(region, end, needle)  # as another accepted answer after the question
    return _placed(end + k, len(needle), lo, src) if k >= 0 else None


def _shared_run(
    p: PreparedItem, stats: ItemStats, blocks: Sequence[tuple[int, int, int]], own: np.ndarray, n: int
) -> tuple[int, int]:
    """Longest verbatim run (one aligned block) of text the item shares with other items, counted
    in tokens that are not common in the corpus, and how many items hold all of it: a notice or a
    licence that several items carry and many documents hold is boilerplate, not their passage
    (a common phrase inside a passage does not cut it). Only the question's text (a passage is
    part of what an item asks): a choice several items offer is shared choices, as a template is,
    and a page holding a wrong option three quiz items shared flagged all three (a trial)."""
    best, items = 0, 0
    shared = ~own & (p.role == QUESTION)
    for a, _b, size in blocks:
        for s, e in runs(shared[a : a + size]):
            s, e = s + a, e + a
            inside = (p.gram_pos >= s) & (p.gram_pos + n <= e)
            rare = int(count(~stats.common_tok[s:e]))
            if rare > best and inside.any():
                best, items = rare, int(stats.freq[inside].min())
    return best, items
