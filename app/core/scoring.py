"""Item-centric contamination scoring (pure: no database; look-up results come in as values).

What decides is the item's *own* text, found in one document (DESIGN.md items 2-5, 11-13):

1. An item is tokenised per field (question, each choice, a free-text answer); n-grams never
   cross fields. A multiple-choice answer that repeats a choice is searched for separately,
   right after the question, because the document lists the choices anyway.
2. Look-ups give each n-gram its corpus document frequency (df). n-grams in more than
   `max_df` documents, or made mostly of one-character tokens, are *common*: boilerplate or
   maths identities, never evidence. An item with no other n-gram cannot be judged
   (`too_short`).
3. Candidate documents (rare n-grams and near-duplicate windows) are aligned with the item
   token by token (app.core.align): a token is matched inside a block of two or more tokens
   found in the same order in a bounded region of the document.
4. Text the item shares with other items of its benchmark (a template, a frame, a passage,
   shared choices) is not its own. Which part is shared depends on the document: the other
   item that best explains what the document holds (most shared n-grams found there, then
   most of its text present) is the *competitor*, and the item's own text is what the item
   does not share with it. So a twin that differs by one word is told apart by that word; a
   puzzle asked five ways by the words of its question; a templated claim by the claim. With
   no competitor, own text is what no other item holds. Common text is never own.
5. Status, from the best document (the highest share of own text found):
     contaminated  own text >= contaminated_coverage found, and as much of the whole item;
                   or the question's own text with its answer right after it
     suspicious    own text >= suspicious_coverage, or a run of >= longest_match own tokens
                   (GPT-3's 13-gram rule); or a passage shared with at most
                   passage_max_items other items found as a run of >= passage_tokens tokens
                   with none of the item's own text (the reason says so)
     clean         otherwise
   Thresholds come from the score distribution of unrelated text (bench/calibrate.py, README).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xxhash

from app.core.align import align, covered, densest, find_sequence, longest_run, runs
from app.core.signatures import rolling_hashes, token_hashes
from app.core.text import tokenize, tokenize_spans
from app.core.types import BenchmarkItem, Status

SCORED_ROLES = ("question", "choices", "answer")
QUESTION, CHOICES, ANSWER = 0, 1, 2
MATCH_N = 3  # tokens per gram when checking what a document holds of an item (edits break few)
COMPETITOR_MAX_ITEMS = 256  # grams in more items are a template: they name no competitor
COMPETITOR_CANDIDATES = 8
PRESENCE_MAX_ITEMS = 64  # grams in at most this many items say which item a region holds
ANSWER_WINDOW = 16  # tokens after the question where a repeated choice must appear to be "the answer"


@dataclass(frozen=True)
class Thresholds:
    """Decision thresholds (request parameters); sources and calibration in the README."""

    contaminated_coverage: float = 0.8  # Llama 2's "dirty" bound, applied to the item's own text
    suspicious_coverage: float = 0.4  # the null stays under this (bench/calibrate.py, README)
    longest_match: int = 13  # GPT-3 (Brown et al. 2020): a shared 13-token run
    max_df: int = 10  # GPT-3: n-grams in more than ~10 documents are boilerplate
    template_min_items: int = 2  # text in this many items of the benchmark is shared, not the item's own
    passage_tokens: int = 20  # a shared run this long found alone is a passage
    passage_max_items: int = 10  # text in more items than this is a template, not a passage
    min_bits: float = 16.0  # information a match must carry to be evidence (app.core.surprise)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _ids(tokens: Sequence[str]) -> np.ndarray:
    return token_hashes(tokens).view(np.int64)


def weak_ngrams(tokens: Sequence[str], m: int) -> np.ndarray:
    """Per n-gram position: fewer than half of its tokens are informative (2+ chars or non-ASCII)."""
    if m <= 0:
        return np.zeros(0, dtype=bool)
    n = len(tokens) - m + 1
    info = np.fromiter((len(t) >= 2 or not t.isascii() for t in tokens), dtype=np.int32, count=len(tokens))
    return np.convolve(info, np.ones(n, dtype=np.int32), mode="valid")[:m] * 2 < n


@dataclass
class PreparedItem:
    """An item's scored text as token ids, with its n-grams (see the module doc, step 1)."""

    item: BenchmarkItem
    ids: np.ndarray  # int64 token id per scored token
    role: np.ndarray  # int8 role code per token: QUESTION, CHOICES or ANSWER
    whole: np.ndarray  # bool: the token is a one-token field
    grams: np.ndarray  # int64 n-gram hashes, field by field
    gram_pos: np.ndarray  # token index where each n-gram starts
    weak: np.ndarray  # bool per n-gram: low information
    short_fields: list[tuple[int, int, int]]  # (start, end, key) of fields shorter than n
    mgrams: np.ndarray  # int64 MATCH_N-gram hashes, field by field: what a document must hold
    mgram_pos: np.ndarray
    tiny_fields: list[tuple[int, int, int]]  # (start, end, key) of fields shorter than MATCH_N
    fields: list[tuple[int, int, int]]  # (start, end, role code) of every field
    stem: int  # the question's text, hashed: items asking the same question share it
    answer_ids: np.ndarray  # a multiple-choice answer's tokens, searched after the question
    passage_grams: np.ndarray
    passage_tokens: int
    key: int  # identical scored text, identical key

    @property
    def n_tokens(self) -> int:
        return len(self.ids)


def prepare(item: BenchmarkItem, n: int) -> PreparedItem:
    fields: list[tuple[int, list[str]]] = [(QUESTION, tokenize(t)) for t in item.segments("question")]
    choices = [tokenize(c) for c in item.segments("choices")]
    fields += [(CHOICES, c) for c in choices]
    answer = tokenize(item.answer) if item.answer else []
    answer_is_choice = bool(answer) and answer in choices
    if answer and not answer_is_choice:
        fields.append((ANSWER, answer))
    ids, role, whole, grams, gram_pos, weak, short = [], [], [], [], [], [], []
    mgrams, mgram_pos, tiny, spans = [], [], [], []
    start = 0
    for code, toks in fields:
        if not toks:
            continue
        tid = _ids(toks)
        ids.append(tid)
        role.append(np.full(len(toks), code, dtype=np.int8))
        whole.append(np.full(len(toks), len(toks) == 1, dtype=bool))
        g = rolling_hashes(tid.view(np.uint64), n).view(np.int64)
        grams.append(g)
        gram_pos.append(np.arange(start, start + len(g), dtype=np.int64))
        weak.append(weak_ngrams(toks, len(g)))
        key = xxhash.xxh3_64_intdigest(tid.tobytes())
        if len(toks) < n:
            short.append((start, start + len(toks), key))
        mg = rolling_hashes(tid.view(np.uint64), MATCH_N).view(np.int64)
        mgrams.append(mg)
        mgram_pos.append(np.arange(start, start + len(mg), dtype=np.int64))
        if len(toks) < MATCH_N:
            tiny.append((start, start + len(toks), key))
        spans.append((start, start + len(toks), code))
        start += len(toks)

    def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)

    all_ids = cat(ids, np.int64)
    a_ids = _ids(answer) if answer_is_choice else np.zeros(0, dtype=np.int64)
    p_toks = tokenize(item.passage) if item.passage else []
    p_grams = rolling_hashes(_ids(p_toks).view(np.uint64), n).view(np.int64) if p_toks else np.zeros(0, np.int64)
    return PreparedItem(
        item=item, ids=all_ids, role=cat(role, np.int8), whole=cat(whole, bool), grams=cat(grams, np.int64),
        gram_pos=cat(gram_pos, np.int64), weak=cat(weak, bool), short_fields=short,
        mgrams=cat(mgrams, np.int64), mgram_pos=cat(mgram_pos, np.int64), tiny_fields=tiny, fields=spans,
        answer_ids=a_ids,
        passage_grams=p_grams, passage_tokens=len(p_toks),
        key=xxhash.xxh3_64_intdigest(all_ids.tobytes() + b"|" + a_ids.tobytes()),
        stem=xxhash.xxh3_64_intdigest(all_ids[cat(role, np.int8) == QUESTION].tobytes()),
    )


class _GramTable:
    """gram hash -> the groups of items holding it."""

    def __init__(self, grams: Sequence[np.ndarray], groups: Sequence[int]) -> None:
        pairs = [np.stack([g, np.full(len(g), grp)], axis=1) for g, grp in zip(grams, groups, strict=True) if len(g)]
        table = np.unique(np.concatenate(pairs), axis=0) if pairs else np.zeros((0, 2), dtype=np.int64)
        self.keys, self.start, self.count = np.unique(table[:, 0], return_index=True, return_counts=True)
        self.groups_by_gram = table[:, 1]

    def freq(self, grams: np.ndarray) -> np.ndarray:
        """Groups holding each gram (0 for grams not in the benchmark)."""
        if len(self.keys) == 0 or len(grams) == 0:
            return np.zeros(len(grams), dtype=np.int64)
        idx = np.clip(np.searchsorted(self.keys, grams), 0, len(self.keys) - 1)
        return np.where(self.keys[idx] == grams, self.count[idx], 0)

    def groups_of(self, grams: np.ndarray, max_items: int) -> np.ndarray:
        """Every group holding one of `grams` (with repeats, one per gram), skipping grams in
        more than `max_items` groups."""
        if len(self.keys) == 0 or len(grams) == 0:
            return np.zeros(0, dtype=np.int64)
        idx = np.clip(np.searchsorted(self.keys, grams), 0, len(self.keys) - 1)
        ok = (self.keys[idx] == grams) & (self.count[idx] <= max_items)
        parts = [self.groups_by_gram[s : s + c] for s, c in zip(self.start[idx[ok]], self.count[idx[ok]], strict=True)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


class SharedText:
    """Which grams (and short fields) each item shares with other items of the benchmark, for
    the index n-grams and for the MATCH_N-grams.

    Identical items (same scored text) form one group and count once: a duplicate is the same
    item, not a competitor.
    """

    def __init__(self, items: Sequence[PreparedItem]) -> None:
        keys: dict[int, int] = {}
        self.group = np.array([keys.setdefault(p.key, len(keys)) for p in items], dtype=np.int64)
        self.members: dict[int, int] = {}  # group -> first item of it
        for i, g in enumerate(self.group.tolist()):
            self.members.setdefault(g, i)
        groups = self.group.tolist()
        self.ngrams = _GramTable([p.grams for p in items], groups)
        self.mgrams = _GramTable([p.mgrams for p in items], groups)
        fields: dict[int, set[int]] = {}
        for p, g in zip(items, groups, strict=True):
            for _s, _e, k in {*p.short_fields, *p.tiny_fields}:
                fields.setdefault(k, set()).add(g)
        self.field_count = {k: len(v) for k, v in fields.items()}
        stems: dict[int, dict[int, set[int]]] = {}  # question -> answer -> groups
        for p, g in zip(items, groups, strict=True):
            stems.setdefault(p.stem, {}).setdefault(hash(_answer_ids(p).tobytes()), set()).add(g)
        self.stems = stems

    def stem_answer_tells(self, p: PreparedItem) -> bool:
        """Other items ask the same question, and only this one (and its duplicates) has this
        answer: the question and answer together identify the item."""
        answers = self.stems.get(p.stem, {})
        mine = answers.get(hash(_answer_ids(p).tobytes()), set())
        return len(answers) > 1 and len(mine) == 1

    def freq(self, grams: np.ndarray) -> np.ndarray:
        return self.ngrams.freq(grams)


@dataclass
class ItemStats:
    """What the benchmark and the corpus say about an item's grams, before any document."""

    freq: np.ndarray  # groups of the benchmark holding each index n-gram
    df: np.ndarray  # corpus documents holding each index n-gram
    common: np.ndarray  # bool per n-gram: boilerplate or low information
    mfreq: np.ndarray  # groups holding each MATCH_N-gram
    passage_tok: np.ndarray  # bool per token: inside a run of >= passage_tokens shared verbatim with one other item
    common_tok: np.ndarray  # bool per token: covered by common n-grams only
    bits: np.ndarray  # surprisal of each token under the rest of the benchmark (app.core.surprise)

    @property
    def eligible(self) -> np.ndarray:
        return ~self.common


def item_stats(p: PreparedItem, group: int, shared: SharedText, df: Mapping[int, int], n: int, th: Thresholds,
               bits: np.ndarray | None = None) -> ItemStats:
    freq = shared.freq(p.grams)
    dfs = np.fromiter((df.get(h, 0) for h in p.grams.tolist()), dtype=np.int64, count=len(p.grams))
    common = (dfs > th.max_df) | p.weak
    mfreq = shared.mgrams.freq(p.mgrams)
    passage_tok = _passage_tokens(p, group, shared, freq, n, th)
    in_gram = _tokens_of(p, p.gram_pos, n)
    common_tok = in_gram & ~_tokens_of(p, p.gram_pos[~common], n)
    if bits is None:
        bits = np.full(p.n_tokens, np.inf)
    return ItemStats(freq, dfs, common, mfreq, passage_tok, common_tok, bits)


def _passage_tokens(p: PreparedItem, me: int, shared: SharedText, freq: np.ndarray, n: int,
                    th: Thresholds) -> np.ndarray:
    """bool per token: inside a span of at least passage_tokens tokens that the item shares,
    word for word, with one other item (a passage, a schema, a shared preamble): such text says
    which group of items a document holds, not which item."""
    out = np.zeros(p.n_tokens, dtype=bool)
    sel = (freq >= th.template_min_items) & (freq <= COMPETITOR_MAX_ITEMS)
    if not sel.any():
        return out
    pos = p.gram_pos[sel]
    idx = np.clip(np.searchsorted(shared.ngrams.keys, p.grams[sel]), 0, len(shared.ngrams.keys) - 1)
    groups = [shared.ngrams.groups_by_gram[s : s + c] for s, c in
              zip(shared.ngrams.start[idx], shared.ngrams.count[idx], strict=True)]
    pairs = np.concatenate([np.stack([g, np.full(len(g), q)], axis=1) for g, q in zip(groups, pos.tolist(),
                                                                                   strict=True)])
    pairs = pairs[pairs[:, 0] != me]
    pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    need = max(1, th.passage_tokens - n + 1)  # consecutive shared n-grams that span passage_tokens tokens
    brk = np.flatnonzero((np.diff(pairs[:, 0]) != 0) | (np.diff(pairs[:, 1]) != 1)) + 1
    for run in np.split(pairs[:, 1], brk):
        if len(run) >= need:
            out[run[0] : run[-1] + n] = True
    return out


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
    near_window: int | None = None
    shared_run: int = 0  # longest verbatim run of text shared with other items
    shared_items: int = 0  # how many items hold that run (this one included)
    competitor_found: bool = False  # the region holds some other item's own text, in its order
    matched_bits: float = 0.0  # information in what the region holds of the item
    own_bits: float = 0.0  # information in the own text it holds
    own_bits_total: float = 0.0  # information in all of the item's own text here
    bits_total: float = 0.0

    @property
    def own_total(self) -> int:
        return int(self.own.sum())

    @property
    def own_matched(self) -> int:
        return int(self.own_hit.sum())

    @property
    def own_coverage(self) -> float:
        return self.own_matched / self.own_total if self.own_total else 0.0

    @property
    def coverage(self) -> float:
        return float(self.matched.mean()) if len(self.matched) else 0.0

    @property
    def longest_own(self) -> int:
        return longest_run(self.own_hit)

    def role_coverage(self, p: PreparedItem, code: int) -> float:
        """Share of a field's tokens the document holds."""
        sel = p.role == code
        return float(self.matched[sel].mean()) if sel.any() else 0.0

    def own_role_coverage(self, p: PreparedItem, code: int) -> float | None:
        """Share of a field's own tokens the document holds (None: none of it is own here)."""
        sel = (p.role == code) & self.own
        return float(self.own_hit[sel].mean()) if sel.any() else None


@dataclass
class DocTokens:
    """A document as the scorer sees it: token ids and gram hashes by position."""

    ids: np.ndarray  # int64
    grams: np.ndarray  # int64 index n-grams, len(ids) - n + 1 values
    mgrams: np.ndarray  # int64 MATCH_N-grams

    @classmethod
    def of(cls, ids: np.ndarray, n: int) -> DocTokens:
        u = ids.view(np.uint64)
        return cls(ids.view(np.int64), rolling_hashes(u, n).view(np.int64), rolling_hashes(u, MATCH_N).view(np.int64))


def region_for(p: PreparedItem, doc: DocTokens, n: int, window: tuple[int, int] | None) -> tuple[int, int]:
    """The bounded document range to align: the densest cluster of the item's n-grams (or the
    near-duplicate window), padded by the item's length on both sides."""
    length = max(p.n_tokens, n)
    grams = np.concatenate([p.grams, p.passage_grams]) if len(p.passage_grams) else p.grams
    pos = np.flatnonzero(np.isin(doc.grams, grams)) if len(grams) and len(doc.grams) else np.zeros(0, np.int64)
    if len(pos):
        lo, hi = densest(pos, 2 * length)
        hi += n
    elif window is not None:
        lo, hi = window
    else:
        lo, hi = 0, length
    return max(0, lo - length), min(len(doc.ids), hi + length)


def _tokens_of(p: PreparedItem, starts: np.ndarray, width: int) -> np.ndarray:
    """bool per item token: inside a gram of `width` tokens starting at one of `starts`."""
    pos = np.zeros(p.n_tokens, dtype=bool)
    pos[starts] = True
    return covered(pos, width, p.n_tokens)


def held(p: PreparedItem, region_ids: np.ndarray, region_mgrams: np.ndarray,
         select: np.ndarray | None = None, tiny_select: Sequence[bool] | None = None) -> np.ndarray:
    """bool per item token: inside one of the item's MATCH_N-grams (those `select`ed) that the
    region holds; a field shorter than MATCH_N counts when the region holds it whole."""
    present = np.isin(p.mgrams, region_mgrams)
    if select is not None:
        present &= select
    out = _tokens_of(p, p.mgram_pos[present], MATCH_N)
    for k, (s, e, _key) in enumerate(p.tiny_fields):
        if (tiny_select is None or tiny_select[k]) and find_sequence(region_ids, p.ids[s:e]) >= 0:
            out[s:e] = True
    return out


def match_document(
    i: int, items: Sequence[PreparedItem], stats: ItemStats, shared: SharedText, doc_id: int, doc: DocTokens,
    n: int, th: Thresholds, window: tuple[int, int] | None = None,
) -> DocMatch:
    """What one document holds of item `i`, and which of that is the item's own text there."""
    p = items[i]
    lo, hi = region_for(p, doc, n, window)
    region = doc.ids[lo:hi]
    region_grams = doc.grams[lo : max(lo, hi - n + 1)]
    region_mgrams = doc.mgrams[lo : max(lo, hi - MATCH_N + 1)]
    al = align(p.ids.tolist(), region.tolist(), p.whole)
    in_order = al.matched  # held in the item's order: text recombined from scattered pieces is not the item
    matched = held(p, region, region_mgrams) & in_order
    own = ~stats.passage_tok & ~stats.common_tok
    own_hit = matched & own
    competitor, competitor_found = None, False
    best_share = float(matched.mean()) if p.n_tokens else 0.0
    for j in _competitors(i, items, stats, shared, region_mgrams, th):
        other = items[j]
        if not other.n_tokens:
            continue
        in_theirs = align(other.ids.tolist(), region.tolist(), other.whole).matched
        theirs_g = ~np.isin(other.mgrams, p.mgrams)
        theirs = held(other, region, region_mgrams) & in_theirs
        competitor_found |= bool((held(other, region, region_mgrams, theirs_g) & in_theirs).any())
        if theirs.mean() >= best_share:  # holds at least as large a share of that item as of item i
            competitor, best_share = j, float(theirs.mean())
    if competitor is not None:  # the region is at least as much another item's copy: credit only what it lacks
        other = items[competitor]
        own_g = ~np.isin(p.mgrams, other.mgrams)
        their_tiny = {key for *_se, key in other.tiny_fields}
        own_tiny = [key not in their_tiny for *_se, key in p.tiny_fields]
        own = _tokens_of(p, p.mgram_pos[own_g], MATCH_N)
        for (s, e, _key), flag in zip(p.tiny_fields, own_tiny, strict=True):
            own[s:e] = flag
        own &= ~stats.common_tok
        own_hit = held(p, region, region_mgrams, own_g, own_tiny) & own & in_order
    passage = 0.0
    if len(p.passage_grams):
        passage_hit = np.isin(p.passage_grams, region_grams)
        passage = float(covered(passage_hit, n, p.passage_tokens).mean()) if p.passage_tokens else 0.0
    shared_run, shared_items = _shared_run(p, stats, al.blocks, own, n)
    answer_found = _answer_found(p, al, matched, region)
    return DocMatch(doc=doc_id, matched=matched, own=own, own_hit=own_hit, competitor=competitor, region=(lo, hi),
                    blocks=[(a, lo + b, s) for a, b, s in al.blocks], answer_found=answer_found,
                    passage_coverage=passage, near_window=window[0] if window else None,
                    shared_run=shared_run, shared_items=shared_items, competitor_found=competitor_found,
                    matched_bits=float(stats.bits[matched].sum()),
                    own_bits=float(stats.bits[own_hit].sum()), own_bits_total=float(stats.bits[own].sum()),
                    bits_total=float(stats.bits.sum()))


def _competitors(i: int, items: Sequence[PreparedItem], stats: ItemStats, shared: SharedText,
                 region_mgrams: np.ndarray, th: Thresholds) -> list[int]:
    """Other items that could explain what the region holds of item i (module doc, step 4):
    those sharing most of the MATCH_N-grams of item i that the region holds, and those most
    present in the region (their grams in at most PRESENCE_MAX_ITEMS items).

    The caller measures how much of each the region holds, as it does for item i: if one holds
    at least as large a share of itself, the region is (at least as much) its copy, and item i
    is credited only with the text that one lacks. Otherwise item i explains the region best,
    and its own text is all but what it shares word for word with another item as a passage."""
    p = items[i]
    me = int(shared.group[i])
    sharing = np.isin(p.mgrams, region_mgrams) & (stats.mfreq >= th.template_min_items)
    if not sharing.any():
        return []
    overlap = shared.mgrams.groups_of(p.mgrams[sharing], COMPETITOR_MAX_ITEMS)
    overlap = overlap[overlap != me]
    if not len(overlap):
        return []  # only template grams are shared: no one item explains them
    groups, counts = np.unique(overlap, return_counts=True)
    candidates = groups[np.argsort(-counts, kind="stable")[:COMPETITOR_CANDIDATES]].tolist()
    present = shared.mgrams.groups_of(np.unique(region_mgrams), PRESENCE_MAX_ITEMS)
    present = present[present != me]
    if len(present):
        pg, pc = np.unique(present, return_counts=True)
        candidates += pg[np.argsort(-pc, kind="stable")[:COMPETITOR_CANDIDATES]].tolist()
    return [shared.members[g] for g in dict.fromkeys(candidates)]


def _answer_ids(p: PreparedItem) -> np.ndarray:
    return p.answer_ids if len(p.answer_ids) else p.ids[p.role == ANSWER]


def _answer_found(p: PreparedItem, al: Any, matched: np.ndarray, region: np.ndarray) -> bool:
    """The answer follows the question in the document.

    A long free-text answer must be at least half held. A short one (a number, a word, a
    repeated choice) must appear exactly within a few tokens after the question (after the
    choices, if they are listed); a repeated choice must appear twice when the other choices
    are listed too, once as a choice and once as the answer.
    """
    answer_sel = p.role == ANSWER
    if len(p.answer_ids) == 0 and not answer_sel.any():
        return False
    if answer_sel.sum() > 8:
        return bool(matched[answer_sel].mean() >= 0.5)
    asked = (p.role == QUESTION) & al.matched
    if not asked.any():
        return False
    q_end = int(al.doc_pos[asked].max()) + 1
    needle = p.answer_ids if len(p.answer_ids) else p.ids[answer_sel]
    choices = [p.ids[s:e] for s, e, code in p.fields if code == CHOICES]
    width = ANSWER_WINDOW + 2 * len(needle) + sum(len(c) + 2 for c in choices)
    window = region[q_end : q_end + width]
    hits, at = 0, 0
    while (k := find_sequence(window[at:], needle)) >= 0:
        hits, at = hits + 1, at + k + len(needle)
    others = [c for c in choices if not np.array_equal(c, needle)]
    listed = bool(others) and sum(find_sequence(window, c) >= 0 for c in others) * 2 >= len(others)
    return hits >= (2 if listed and len(p.answer_ids) else 1)


def _shared_run(p: PreparedItem, stats: ItemStats, blocks: Sequence[tuple[int, int, int]], own: np.ndarray,
                n: int) -> tuple[int, int]:
    """Longest verbatim run (one aligned block) of text the item shares with other items, and
    how many items hold all of it."""
    best, items = 0, 0
    for a, _b, size in blocks:
        for s, e in runs(~own[a : a + size]):
            s, e = s + a, e + a
            inside = (p.gram_pos >= s) & (p.gram_pos + n <= e)
            if e - s > best and inside.any():
                best, items = e - s, int(stats.freq[inside].min())
    return best, items


@dataclass
class RoleScore:
    tokens: int = 0
    ngrams: int = 0
    eligible_ngrams: int = 0
    found_ngrams: int = 0
    shared_ngrams: int = 0
    common_ngrams: int = 0
    coverage: float = 0.0  # share of the role's tokens found in the best document
    found: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "coverage": round(self.coverage, 4)}


@dataclass
class ItemScore:
    status: Status
    reason: str
    tokens: int
    own_tokens: int = 0  # the item's own text in the best document's terms
    own_coverage: float = 0.0  # share of it found there: what decides
    coverage: float = 0.0  # share of all the item's scored tokens found there
    longest_match: int = 0  # longest run of own tokens found contiguously
    own_bits: float = 0.0  # information (bits) in the own text found there
    matched_bits: float = 0.0  # information in all that was found there
    own_bits_total: float = 0.0
    bits_total: float = 0.0
    ngram_overlap: float = 0.0  # eligible n-grams found anywhere in the corpus
    shared_match: int = 0  # longest run of shared text (template, passage) found
    shared_items: int = 0
    question_found: bool = False
    answer_found: bool | None = None  # None: no answer field
    answer_with_question: bool = False
    passage_found: bool = False
    best_doc: int | None = None
    roles: dict[str, RoleScore] = field(default_factory=dict)
    # per candidate document, best first: (doc, own coverage, coverage, own bits, matched bits, longest own run)
    doc_ranking: list[tuple[int, float, float, float, float, int]] = field(default_factory=list)

    @property
    def score(self) -> float:
        return 0.0 if self.status == Status.TOO_SHORT else self.own_coverage

    @property
    def longest_match_share(self) -> float:
        return min(1.0, self.longest_match / self.tokens) if self.tokens else 0.0


_SEVERITY = {Status.CONTAMINATED: 2, Status.SUSPICIOUS: 1, Status.CLEAN: 0}


def verdict(p: PreparedItem, m: DocMatch, n: int, th: Thresholds, stem_tells: bool = False) -> tuple[Status, str]:
    """What one document says about the item (module doc, step 5). stem_tells: the question is
    shared word for word with other items whose answers differ (SharedText.stem_answer_tells).
    A partial match must include a run of more than n own tokens in a row (two chained n-grams):
    one n-gram of ordinary prose recurs by chance, two in a row rarely do (bench/calibrate.py)."""
    q_own = m.own_role_coverage(p, QUESTION)
    if m.own_total and m.own_coverage >= th.contaminated_coverage and m.coverage >= th.contaminated_coverage \
            and m.matched_bits >= th.min_bits:
        return Status.CONTAMINATED, (f"one document holds {m.own_coverage:.0%} of the item's own text "
                                     f"({m.own_total} tokens)")
    q_asked = (q_own is not None and q_own >= th.contaminated_coverage) or (
        stem_tells and m.role_coverage(p, QUESTION) >= th.contaminated_coverage)
    if q_asked and m.answer_found and m.matched_bits >= th.min_bits:
        return Status.CONTAMINATED, "question and answer found together in one document"
    if (q_own or 0.0) >= th.contaminated_coverage and m.own_bits >= th.min_bits:
        return Status.SUSPICIOUS, "the question is in one document, without its answer"
    if m.own_total and m.own_coverage >= th.suspicious_coverage and m.own_bits >= th.min_bits \
            and m.longest_own > n:
        return Status.SUSPICIOUS, (f"one document holds {m.own_coverage:.0%} of the item's own text "
                                   f"({m.own_total} tokens)")
    if m.longest_own >= th.longest_match and m.own_bits >= th.min_bits:
        return Status.SUSPICIOUS, f"a {m.longest_own}-token run of its own text matches one document"
    if m.shared_run >= th.passage_tokens and not m.competitor_found and 0 < m.shared_items <= th.passage_max_items + 1:
        return Status.SUSPICIOUS, (f"a {m.shared_run}-token passage it shares with {m.shared_items - 1} other "
                                   "item(s) was found, but not this item's own text")
    if m.own_coverage >= th.suspicious_coverage:
        return Status.CLEAN, (f"one document holds {m.own_coverage:.0%} of its own text, but only "
                              f"{m.own_bits:.0f} bits: too little to tell from chance")
    if m.competitor is not None and m.own_total == 0 and m.coverage >= 0.5:
        return Status.CLEAN, "only text shared with other items of the benchmark was found"
    return Status.CLEAN, "no substantial overlap found"


def rank(p: PreparedItem, matches: Sequence[DocMatch], n: int, th: Thresholds,
         stem_tells: bool = False) -> list[tuple[DocMatch, Status, str]]:
    """Documents with their verdicts, strongest first (then most own text, most text)."""
    judged = [(m, *verdict(p, m, n, th, stem_tells)) for m in matches]
    return sorted(judged, key=lambda x: (-_SEVERITY[x[1]], -x[0].own_coverage, -x[0].coverage, x[0].doc))


def assess(p: PreparedItem, stats: ItemStats, matches: Sequence[DocMatch], n: int, th: Thresholds,
           stem_tells: bool = False) -> ItemScore:
    """Status and metrics of one item from its aligned candidate documents (module doc, step 5)."""
    ranked = rank(p, matches, n, th, stem_tells)
    best = ranked[0][0] if ranked else None
    score = ItemScore(status=Status.CLEAN, reason="no substantial overlap found", tokens=p.n_tokens,
                      roles=_roles(p, stats, best, th),
                      doc_ranking=[(m.doc, round(m.own_coverage, 4), round(m.coverage, 4), round(m.own_bits, 1),
                                    round(m.matched_bits, 1), m.longest_own) for m, _s, _r in ranked])
    eligible = stats.eligible
    score.ngram_overlap = float((stats.df[eligible] > 0).mean()) if eligible.any() else 0.0
    score.answer_found = False if p.item.answer else None
    if best is not None:
        score.status, score.reason = ranked[0][1], ranked[0][2]
        score.best_doc = best.doc
        score.own_tokens, score.own_coverage, score.coverage = best.own_total, best.own_coverage, best.coverage
        score.longest_match = best.longest_own
        score.own_bits, score.matched_bits = best.own_bits, best.matched_bits
        score.own_bits_total, score.bits_total = best.own_bits_total, best.bits_total
        q_own = best.own_role_coverage(p, QUESTION)
        q_cov = q_own if q_own is not None else best.role_coverage(p, QUESTION)
        score.question_found = q_cov >= th.suspicious_coverage
        score.answer_found = bool(best.answer_found) if p.item.answer else None
        score.answer_with_question = bool(best.answer_found and score.question_found)
        score.shared_match, score.shared_items = best.shared_run, best.shared_items
        score.passage_found = any(m.passage_coverage >= th.suspicious_coverage for m in matches) or \
            "passage" in score.reason
    if not eligible.any() and not _widespread(p, stats, n, th):
        score.status = Status.TOO_SHORT
        score.reason = (f"{p.n_tokens} tokens: fewer than n={n}, so no n-gram can be looked up" if len(p.grams) == 0
                        else "every n-gram is common in the corpus or low in information: chance cannot be ruled out")
    elif score.status != Status.CONTAMINATED and _widespread(p, stats, n, th):
        score.status, score.reason = Status.CONTAMINATED, "the item's own text is in many documents (widespread copy)"
    return score


def _widespread(p: PreparedItem, stats: ItemStats, n: int, th: Thresholds) -> bool:
    """The item's own text (at least longest_match tokens, so not a phrase) is found in the
    corpus, much of it in more than max_df documents: a widely copied item, not boilerplate."""
    own = (stats.freq < th.template_min_items) & ~p.weak
    if not own.any() or not (stats.df[own] > th.max_df).any():
        return False

    def tokens_of(gram_mask: np.ndarray) -> np.ndarray:
        pos = np.zeros(p.n_tokens, dtype=bool)
        pos[p.gram_pos[gram_mask]] = True
        return covered(pos, n, p.n_tokens)

    own_tok = tokens_of(own)
    found = tokens_of(own & (stats.df > 0))
    total = int(own_tok.sum())
    return total >= th.longest_match and found.sum() >= th.contaminated_coverage * total


def _roles(p: PreparedItem, stats: ItemStats, best: DocMatch | None, th: Thresholds) -> dict[str, RoleScore]:
    out: dict[str, RoleScore] = {}
    gram_role = p.role[p.gram_pos] if len(p.gram_pos) else np.zeros(0, np.int8)
    for code, name in enumerate(SCORED_ROLES):
        sel = p.role == code
        if not sel.any():
            continue
        g = gram_role == code
        rs = RoleScore(tokens=int(sel.sum()), ngrams=int(g.sum()))
        rs.shared_ngrams = int((g & (stats.freq >= th.template_min_items)).sum())
        rs.common_ngrams = int((g & stats.common).sum())
        rs.eligible_ngrams = int((g & ~stats.common).sum())
        rs.found_ngrams = int((g & ~stats.common & (stats.df > 0)).sum())
        if best is not None:
            rs.coverage = best.role_coverage(p, code)
            rs.found = rs.coverage >= th.suspicious_coverage
        out[name] = rs
    return out


def shared_spans(text: str, other: str) -> list[tuple[int, int]]:
    """Character spans of `text` whose tokens align with `other` in blocks (merged).

    Used to highlight, on the benchmark item's side, what the training text shares with it.
    """
    toks = tokenize_spans(text)
    if not len(toks):
        return []
    al = align(_ids(toks.tokens).tolist(), _ids(tokenize(other)).tolist(),
               np.full(len(toks), len(toks) == 1, dtype=bool))
    spans: list[tuple[int, int]] = []
    for i in np.flatnonzero(al.matched).tolist():
        s, e = toks.starts[i], toks.ends[i]
        if spans and s - spans[-1][1] <= 3 and not text[spans[-1][1] : s].strip(" \t,.;:!?\"'()[]*-"):
            spans[-1] = (spans[-1][0], e)
        else:
            spans.append((s, e))
    return spans


def split_marked(text: str, spans: Sequence[Sequence[int]]) -> list[tuple[str, bool]]:
    """Text cut into (piece, highlighted) runs for rendering; spans are [start, end) offsets."""
    out: list[tuple[str, bool]] = []
    pos = 0
    for s, e in sorted((max(0, int(a)), min(len(text), int(b))) for a, b in spans):
        if s < pos:
            s = pos
        if s >= e:
            continue
        if s > pos:
            out.append((text[pos:s], False))
        out.append((text[s:e], True))
        pos = e
    if pos < len(text):
        out.append((text[pos:], False))
    return out
