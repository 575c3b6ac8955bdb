"""A benchmark's items as the scorer sees them (pure): token ids per field, n-grams for the
index, MATCH_N-grams for matching, and what each item shares with the others.

Each item is tokenised per field (question, each choice, a free-text answer); grams never cross
fields. A multiple-choice answer that repeats a choice is kept apart: the document lists the
choices anyway, so it is looked for again after the question (app.core.matching). Identical
items form one group and count once: a duplicate is the same item, not a competitor.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import xxhash

from contam.app.core import _native
from contam.app.core.align import covered, find_sequence
from contam.app.core.arrays import distinct, find_sorted, key_directory, member, stable_order, top_groups
from contam.app.core.config import Thresholds
from contam.app.core.signatures import rolling_hashes, token_hashes
from contam.app.core.text import tokenize, tokenize_spans, words_in
from contam.app.core.types import BenchmarkItem

SCORED_ROLES = ("question", "choices", "answer", "solution")
FOUND_ROLES = (*SCORED_ROLES, "passage")  # what a report's items are filtered by: a passage field is looked for apart
QUESTION, CHOICES, ANSWER, SOLUTION = 0, 1, 2, 3
MATCH_N = 3  # tokens per gram when checking what a document holds of an item (edits break few)
COMPETITOR_MAX_ITEMS = 256  # grams in more items are a template: they name no competitor


def _ids(tokens: Sequence[str]) -> np.ndarray:
    return token_hashes(tokens).view(np.int64)


@dataclass
class PreparedItem:
    """An item's scored text as token ids, with its n-grams (see the module doc, step 1)."""

    item: BenchmarkItem
    ids: np.ndarray  # int64 token id per scored token
    role: np.ndarray  # int8 role code per token: QUESTION, CHOICES, ANSWER or SOLUTION
    whole: np.ndarray  # bool: the token is a one-token field
    grams: np.ndarray  # int64 n-gram hashes, field by field
    gram_pos: np.ndarray  # token index where each n-gram starts
    weak: np.ndarray  # bool per n-gram: low information
    short_fields: list[tuple[int, int, int]]  # (start, end, key) of fields shorter than n
    mgrams: np.ndarray  # int64 MATCH_N-gram hashes, field by field: what a document must hold
    mgram_pos: np.ndarray
    umgrams: np.ndarray  # the MATCH_N-grams sorted, without repeats
    tiny_fields: list[tuple[int, int, int]]  # (start, end, key) of fields shorter than MATCH_N
    fields: list[tuple[int, int, int]]  # (start, end, role code) of every field
    stem: int  # the question's text, hashed: items asking the same question share it
    answer_ids: np.ndarray  # a multiple-choice answer's tokens, searched after the question
    passage_grams: np.ndarray
    passage_tokens: int
    passage_key: int  # the passage field's text hashed (0: none)
    key: int  # identical scored text, identical key
    # the short channel's n-grams (SignatureConfig.short_n tokens, inside fields) and where they
    # start; empty when the index has no short channel or the item does not need it (prepare)
    sgrams: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sgram_pos: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # (id, first token, tokens) of every run of tokens written with only punctuation between them
    # ("3.14", "1,500", "x^8+4x^6", "is_palindrome(s)"), as the one token a copy with that
    # punctuation dropped holds ("314"): app.core.matching reads such a token as the run
    glued: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.int64))
    # bool per token: inside an n-gram of the item that its passage field holds (what a question
    # quotes of its passage, found in any copy of it); None without a passage field
    quoted: np.ndarray | None = None
    # the scored text's length in words of a spaced script (text.words_in): its tokens, unless
    # some are CJK characters, a token each; 0.0: not worked out (its tokens)
    words: float = 0.0

    @property
    def n_tokens(self) -> int:
        return len(self.ids)

    @property
    def tokens_per_word(self) -> float:
        """How many of the item's tokens make a word (1.0 but for CJK text): the scale of a rule's
        length in tokens, which is a length in words of a spaced script (scoring._in_words)."""
        return max(1.0, self.n_tokens / self.words) if self.words else 1.0

    @cached_property
    def alternative_ids(self) -> list[np.ndarray]:
        """The token ids of each of the item's other accepted answers (item.alternatives)."""
        return [_ids(t) for t in map(tokenize, self.item.alternatives) if t]

    @cached_property
    def glued_ids(self) -> np.ndarray:
        """The ids of `glued`, sorted, without repeats."""
        return distinct(self.glued[:, 0])

    @cached_property
    def field_starts(self) -> np.ndarray:
        """Where each field starts (int64, ascending, as `fields` lists them)."""
        return np.array([s for s, _e, _r in self.fields], dtype=np.int64)

    @cached_property
    def uids(self) -> np.ndarray:
        """The item's token ids, sorted, without repeats."""
        return distinct(self.ids)

    @cached_property
    def text_key(self) -> int:
        """A hash of the scored tokens and which are one-token fields: what align() reads of an item."""
        return xxhash.xxh3_64_intdigest(self.ids.tobytes() + np.packbits(self.whole).tobytes())

    @cached_property
    def umgram_key(self) -> int:
        """A hash of `umgrams`: items with equal keys hold the same MATCH_N-grams."""
        return xxhash.xxh3_64_intdigest(self.umgrams.tobytes())


# An item this short (scored tokens) is also looked up in the short channel: an edited copy of a
# longer one keeps runs of n tokens (under 30% of words changed, a run of 5 survives at a sixth of
# the positions, two or more of them from about 16 tokens on), and the short channel's 3-grams
# would only add documents that share a phrase with it.
SHORT_ITEM_TOKENS = 32


def _passage_grams(
    passage: str,
    n: int,
    grams: np.ndarray,
    gram_pos: np.ndarray,
    ids: np.ndarray,
    spans: Sequence[tuple[int, int, int]],
) -> tuple[np.ndarray, int, np.ndarray | None]:
    """A passage field's n-grams, its number of tokens, and which of the item's tokens (`ids`,
    fields at `spans`) the passage quotes: those inside its n-grams (`grams` at `gram_pos`) that
    the passage holds, and a free-text answer the passage holds whole, however short (an
    extractive answer, SQuAD's "10th and 11th centuries", is in every copy of the passage)."""
    toks = tokenize(passage) if passage else []
    if not toks:
        return np.zeros(0, np.int64), 0, None
    p_ids = _ids(toks)
    p_grams = rolling_hashes(p_ids.view(np.uint64), n).view(np.int64)
    quoted = np.zeros(len(ids), dtype=bool)
    quoted[gram_pos[member(grams, distinct(p_grams))]] = True
    quoted = covered(quoted, n, len(ids))
    for s, e, code in spans:
        if code == ANSWER and find_sequence(p_ids, ids[s:e]) >= 0:
            quoted[s:e] = True
    return p_grams, len(toks), quoted


def prepare(item: BenchmarkItem, n: int, short_n: int = 0, glue: bool = True, passage: bool = True) -> PreparedItem:
    """An item's scored text as token ids, n-grams and MATCH_N-grams (module doc); short_n: the short channel (0:
    none), glue: work out PreparedItem.glued, passage: the passage field's n-grams (SharedText needs its key only)."""
    texts: list[tuple[int, str]] = [(QUESTION, t) for t in item.segments("question")]
    texts += [(CHOICES, c) for c in item.segments("choices")]
    choices = [tokenize(c) for _code, c in texts if _code == CHOICES]
    answer = tokenize(item.answer) if item.answer else []
    answer_is_choice = bool(answer) and answer in choices
    if answer and not answer_is_choice:
        texts.append((ANSWER, item.answer))
    texts += [(SOLUTION, t) for t in item.segments("solution")]
    fields: list[tuple[int, list[str]]] = [(code, tokenize(t)) for code, t in texts]
    # the whole item at once: ids, then every field's grams from one rolling hash (a gram stays inside its field)
    texts = [ct for ct, (_code, toks) in zip(texts, fields, strict=True) if toks]
    fields = [(code, toks) for code, toks in fields if toks]
    lens = np.array([len(toks) for _code, toks in fields], dtype=np.int64)
    bounds = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    all_toks = [t for _code, toks in fields for t in toks]
    all_ids = _ids(all_toks) if all_toks else np.zeros(0, dtype=np.int64)
    field_end = np.repeat(bounds[1:], lens)
    grams, gram_pos = _grams_inside(all_ids, field_end, n)
    mgrams, mgram_pos = _grams_inside(all_ids, field_end, MATCH_N)
    weak = _weak(all_toks, gram_pos, n)
    spans = [(s, e, code) for (code, _t), s, e in zip(fields, bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)]
    short, tiny = _short_fields(all_ids, spans, n)
    role = np.repeat(np.array([code for code, _toks in fields], dtype=np.int8), lens)
    if short_n and len(all_ids) < SHORT_ITEM_TOKENS:  # short_n is MATCH_N (SignatureConfig checks)
        sgrams, sgram_pos = mgrams, mgram_pos
    else:
        sgrams = sgram_pos = np.zeros(0, dtype=np.int64)
    a_ids = _ids(answer) if answer_is_choice else np.zeros(0, dtype=np.int64)
    p_grams, p_len, quoted = _passage_grams(item.passage if passage else "", n, grams, gram_pos, all_ids, spans)
    return PreparedItem(
        item=item,
        ids=all_ids,
        role=role,
        whole=np.repeat(lens == 1, lens),
        grams=grams,
        gram_pos=gram_pos,
        weak=weak,
        short_fields=short,
        mgrams=mgrams,
        mgram_pos=mgram_pos,
        umgrams=distinct(mgrams),
        tiny_fields=tiny,
        fields=spans,
        answer_ids=a_ids,
        passage_grams=p_grams,
        passage_tokens=p_len,
        quoted=quoted,
        passage_key=xxhash.xxh3_64_intdigest(item.passage.encode("utf-8", "replace")) if item.passage else 0,
        key=xxhash.xxh3_64_intdigest(all_ids.tobytes() + b"|" + a_ids.tobytes()),
        stem=xxhash.xxh3_64_intdigest(all_ids[role == QUESTION].tobytes()),
        sgrams=sgrams,
        sgram_pos=sgram_pos,
        glued=_glued([t for _code, t in texts], bounds[:-1].tolist()) if glue else np.zeros((0, 3), np.int64),
        words=words_in(all_toks),
    )


def _weak(tokens: Sequence[str], gram_pos: np.ndarray, n: int) -> np.ndarray:
    """bool per n-gram (starting at `gram_pos`): fewer than half of its tokens informative (two
    characters or more, or not ASCII)."""
    informative = np.fromiter((len(t) >= 2 or not t.isascii() for t in tokens), dtype=np.int64, count=len(tokens))
    sums = np.concatenate(([0], np.cumsum(informative)))
    weak: np.ndarray = (sums[gram_pos + n] - sums[gram_pos]) * 2 < n
    return weak


GLUE_MAX = 12  # tokens of one glued run looked for (a formula's, a number's, an identifier's)
GLUE_MIN_CHARS = 3  # "a3" glued from "a^3" is as often a name of its own ("x2", "b3" in code)
_GLUE = re.compile(r"\w[^\w\s]+\w")  # a field where punctuation alone parts two tokens


_ASCII_SPACE = np.array([chr(c).isspace() for c in range(256)], dtype=bool)  # by byte (only ASCII's are asked)


def _joined(text: str, ends: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """bool per pair of neighbouring tokens (one ends at `ends[i]`, the next starts at
    `starts[i]`): something parts them and none of it is space. For ASCII text from a count of
    spaces per character (a Python test of each separator took a tenth of preparing a news
    article); for other text, separator by separator."""
    if text.isascii():
        space = _ASCII_SPACE[np.frombuffer(text.encode("ascii"), dtype=np.uint8)]
        before = np.concatenate(([0], np.cumsum(space, dtype=np.int64)))  # spaces before each character
        joined: np.ndarray = (starts > ends) & (before[starts] == before[ends])
        return joined
    seps = [text[e:s] for e, s in zip(ends.tolist(), starts.tolist(), strict=True)]
    return np.array([bool(sep) and not any(c.isspace() for c in sep) for sep in seps], dtype=bool)


def _glued(texts: Sequence[str], starts: Sequence[int]) -> np.ndarray:
    """PreparedItem.glued of fields `texts`, whose first tokens are at `starts` of the item:
    every run of 2 to GLUE_MAX tokens inside a chain of tokens parted by punctuation alone, of
    GLUE_MIN_CHARS characters or more: (token hash of the run's tokens laid end to end, first token
    in the item, tokens), in order of field, first token, length. The runs in C (_native.glued;
    a test holds it to the loop it replaced)."""
    parts: list[np.ndarray] = []
    for text, first in zip(texts, starts, strict=True):
        if not _GLUE.search(text):
            continue
        toks = tokenize_spans(text)
        joined = np.ascontiguousarray(_joined(text, toks.ends[:-1], toks.starts[1:]), dtype=bool)
        h, at, size = _native.glued(toks.tokens, joined, GLUE_MAX, GLUE_MIN_CHARS, first)
        if h:
            parts.append(np.column_stack([np.frombuffer(b, dtype=np.int64) for b in (h, at, size)]))
    if not parts:
        return np.zeros((0, 3), dtype=np.int64)
    return np.concatenate(parts)


def _grams_inside(ids: np.ndarray, field_end: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(hash, start) of every gram of `width` tokens that ends inside its field (field_end: per
    token, where its field ends), from one rolling hash over all fields."""
    h = rolling_hashes(ids.view(np.uint64), width).view(np.int64)
    pos = np.arange(len(h), dtype=np.int64)
    inside = pos + width <= field_end[: len(h)]
    return h[inside], pos[inside]


def _short_fields(
    ids: np.ndarray, spans: list[tuple[int, int, int]], n: int
) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """(start, end, key) of the fields shorter than n, and of those shorter than MATCH_N."""
    short, tiny = [], []
    for s, e, _code in spans:
        if e - s < max(n, MATCH_N):
            key = xxhash.xxh3_64_intdigest(ids[s:e].tobytes())
            if e - s < n:
                short.append((s, e, key))
            if e - s < MATCH_N:
                tiny.append((s, e, key))
    return short, tiny


def _unique_pairs(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The distinct rows (first, second), sorted by first then second: np.unique(axis=0) of the
    stacked columns, as np.lexsort((second, first)) orders them: a stable sort by the second,
    then the C stable sort by the first (hashes, spread by their top bits: 0.57x the lexsort's
    time on a 10,000-item benchmark's 700,000 rows, in pass 1)."""
    if first.dtype == np.int64:
        by_second = np.argsort(second, kind="stable")
        order = by_second[stable_order(first[by_second])]
    else:
        order = np.lexsort((second, first))
    a, b = first[order], second[order]
    keep = np.ones(len(a), dtype=bool)
    keep[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    return np.stack([a[keep], b[keep]], axis=1)


class _GramTable:
    """gram hash -> the groups of items holding it."""

    def __init__(self, grams: Sequence[np.ndarray], groups: Sequence[int]) -> None:
        table = _unique_pairs(
            np.concatenate([np.asarray(g, dtype=np.int64) for g in grams]) if len(grams) else np.zeros(0, np.int64),
            np.repeat(np.asarray(groups, dtype=np.int64), [len(g) for g in grams]),
        )
        self.keys, self.start, self.count = np.unique(table[:, 0], return_index=True, return_counts=True)
        self.groups_by_gram = np.ascontiguousarray(table[:, 1])  # workers map it from a file (services.scanning)
        self.directory = key_directory(self.keys)  # (its size is the table's: see key_directory)

    def find(self, grams: np.ndarray) -> np.ndarray:
        """Row of each gram in `keys`, -1 for a gram no item holds."""
        return find_sorted(self.keys, self.directory, grams)

    def freq(self, grams: np.ndarray) -> np.ndarray:
        """Groups holding each gram (0 for grams not in the benchmark)."""
        if len(self.keys) == 0 or len(grams) == 0:
            return np.zeros(len(grams), dtype=np.int64)
        idx = self.find(grams)
        return np.where(idx >= 0, self.count[idx], 0)

    def top_groups(self, grams: np.ndarray, max_items: int, exclude: int, k: int) -> list[int]:
        """The k groups holding most of `grams` (each gram counting once per time it is given,
        for every group holding it, unless more than `max_items` groups do), the most first,
        equal counts in ascending order of group; group `exclude` left out. In C (native
        top_groups): the competitor search asks it three times per candidate document."""
        table = (self.keys, self.directory, self.start, self.count, self.groups_by_gram)
        return top_groups(table, grams, max_items, exclude, k)


def _answer_key(p: PreparedItem) -> int:
    return xxhash.xxh3_64_intdigest(answer_ids(p).tobytes())


class SharedText:
    """Which grams each item shares with other items of the benchmark, for the index n-grams
    and for the MATCH_N-grams, and which questions are asked by several items.

    Identical items (same scored text) form one group and count once: a duplicate is the same
    item, not a competitor. `items` are read once, in order, and not kept (a generator will
    do); `each`, if given, is called with every item as it is read.
    """

    def __init__(self, items: Iterable[PreparedItem], each: Callable[[PreparedItem], None] | None = None) -> None:
        keys: dict[int, int] = {}
        group: list[int] = []
        grams: list[np.ndarray] = []
        mgrams: list[np.ndarray] = []
        asked: list[tuple[int, int, int]] = []  # (question, answer, group) of every item
        passage_keys: list[int] = []
        mgram_sets: dict[int, np.ndarray] = {}  # group -> its MATCH_N-grams, for groups with a passage field
        for p in items:
            g = keys.setdefault(p.key, len(keys))
            group.append(g)
            grams.append(p.grams)
            mgrams.append(p.mgrams)
            asked.append((p.stem, _answer_key(p), g))
            passage_keys.append(p.passage_key)
            if p.passage_key:
                mgram_sets.setdefault(g, p.umgrams)
            if each is not None:
                each(p)
        del keys
        self.group = np.array(group, dtype=np.int64)
        self.members: dict[int, int] = {}  # group -> first item of it
        for i, g in enumerate(group):
            self.members.setdefault(g, i)
        self.ngrams = _GramTable(grams, group)
        del grams
        self.mgrams = _GramTable(mgrams, group)
        del mgrams
        stems: dict[int, dict[int, set[int]]] = {}  # question -> answer -> groups
        for stem, answer, g in asked:
            stems.setdefault(stem, {}).setdefault(answer, set()).add(g)
        # only questions several items ask, with more than one answer, can tell an item apart
        self.answers = {stem: len(a) for stem, a in stems.items() if len(a) > 1}
        self.lone = {
            (stem, answer) for stem, a in stems.items() if len(a) > 1 for answer, gs in a.items() if len(gs) == 1
        }
        # groups of items with the same scored text (question, choices, answer) and passage fields
        # of their own that differ: told apart only by the passage
        passages: dict[int, set[int]] = {}
        for g, key in zip(group, passage_keys, strict=True):
            if key:
                passages.setdefault(g, set()).add(key)
        self.crowded = {g for g, keys in passages.items() if len(keys) > 1}
        self.lone_mgrams = _lone_mgrams(passage_keys, group, mgram_sets)

    def lone_question(self, p: PreparedItem, grams: np.ndarray) -> np.ndarray:
        """Of an item's MATCH_N-grams, those no other item asking of its passage field holds (of
        another group: a duplicate of the item is the item): all of them where no other does."""
        lone = self.lone_mgrams.get(p.passage_key)
        return grams if lone is None else grams[member(grams, lone)]

    def passage_tells(self, p: PreparedItem, group: int) -> bool:
        """The item (of `group`) has a passage field of its own, and other items have the same
        scored text (DROP asks "How many yards was the shortest field goal?" of several
        passages, with the same answer): only its passage, scored apart, tells which item a copy
        of that text is."""
        return len(p.passage_grams) > 0 and group in self.crowded

    def stem_answer_tells(self, p: PreparedItem) -> bool:
        """Other items ask the same question, and only this one (and its duplicates) has this
        answer: the question and answer together identify the item."""
        return p.stem in self.answers and (p.stem, _answer_key(p)) in self.lone

    def freq(self, grams: np.ndarray) -> np.ndarray:
        return self.ngrams.freq(grams)


def _lone_mgrams(
    passage_keys: Sequence[int], group: Sequence[int], mgram_sets: Mapping[int, np.ndarray]
) -> dict[int, np.ndarray]:
    """Per passage field that several groups of items ask of: the MATCH_N-grams (sorted) that one
    group alone holds. Worked out once per passage, in one pass over its groups' grams (per item
    and document, a union of every sibling's grams was quadratic in the items sharing a passage:
    a chat benchmark's system prompt is every item's passage, 1,600 items took 5x as long: a review)."""
    groups: dict[int, set[int]] = {}
    for key, g in zip(passage_keys, group, strict=True):
        if key:
            groups.setdefault(key, set()).add(g)
    out = {}
    for key, gs in groups.items():
        if len(gs) > 1:
            grams, held_by = np.unique(np.concatenate([mgram_sets[g] for g in sorted(gs)]), return_counts=True)
            out[key] = grams[held_by == 1]
    return out


@dataclass
class ItemStats:
    """What the benchmark and the corpus say about an item's grams, before any document."""

    item: PreparedItem
    group: int
    shared: SharedText
    freq: np.ndarray  # groups of the benchmark holding each index n-gram
    df: np.ndarray  # corpus documents holding each index n-gram
    common: np.ndarray  # bool per n-gram: boilerplate or low information
    mfreq: np.ndarray  # groups holding each MATCH_N-gram
    common_tok: np.ndarray  # bool per token: covered by common n-grams only
    bits: np.ndarray  # surprisal of each token under the rest of the benchmark (app.core.surprise)
    n: int
    th: Thresholds
    _passage_tok: np.ndarray | None = None
    sdf: np.ndarray | None = None  # corpus documents holding each short-channel n-gram (p.sgrams)
    # keys (sorted) of the grams that several documents hold, each of them the same text (a page and
    # its exact copies, in one corpus or several): one text for "no other document holds it"
    one_text: np.ndarray | None = None

    @property
    def eligible(self) -> np.ndarray:
        return ~self.common

    @property
    def passage_tok(self) -> np.ndarray:
        """bool per token: inside a run of >= passage_tokens shared verbatim with one other item
        (computed when first asked: only documents that hold no other item's text need it)."""
        if self._passage_tok is None:
            self._passage_tok = _passage_tokens(self.item, self.group, self.shared, self.freq, self.n, self.th)
        return self._passage_tok


def item_stats(
    p: PreparedItem,
    group: int,
    shared: SharedText,
    dfs: np.ndarray,
    n: int,
    th: Thresholds,
    bits: np.ndarray | None = None,
    freq: np.ndarray | None = None,
    mfreq: np.ndarray | None = None,
    sdf: np.ndarray | None = None,
) -> ItemStats:
    """dfs: corpus document frequency of each of the item's n-grams (p.grams order); freq and
    mfreq: shared.freq(p.grams) and shared.mgrams.freq(p.mgrams), if known (benchmark_stats
    looks them up for all items at once); sdf: that of each short-channel n-gram (p.sgrams)."""
    freq = shared.freq(p.grams) if freq is None else freq
    common = (dfs > th.max_df) | p.weak
    mfreq = shared.mgrams.freq(p.mgrams) if mfreq is None else mfreq
    in_gram = tokens_of(p, p.gram_pos, n)
    common_tok = in_gram & ~tokens_of(p, p.gram_pos[~common], n)
    if bits is None:
        bits = np.full(p.n_tokens, np.inf)
    return ItemStats(p, group, shared, freq, dfs, common, mfreq, common_tok, bits, n, th, sdf=sdf)


def lookup(keys: np.ndarray, table: Mapping[int, int]) -> np.ndarray:
    """table[key] for every key (0 where absent), for many keys at once."""
    if not table or len(keys) == 0:
        return np.zeros(len(keys), dtype=np.int64)
    known = np.fromiter(table.keys(), dtype=np.int64, count=len(table))
    values = np.fromiter(table.values(), dtype=np.int64, count=len(table))
    order = np.argsort(known)
    known, values = known[order], values[order]
    idx = np.minimum(np.searchsorted(known, keys), len(known) - 1)
    return np.where(known[idx] == keys, values[idx], 0)


def _passage_tokens(
    p: PreparedItem, me: int, shared: SharedText, freq: np.ndarray, n: int, th: Thresholds
) -> np.ndarray:
    """bool per token: inside a span of at least passage_tokens tokens that the item shares,
    word for word, with one other item (a passage, a schema, a shared preamble): such text says
    which group of items a document holds, not which item."""
    out = np.zeros(p.n_tokens, dtype=bool)
    sel = (freq >= th.template_min_items) & (freq <= COMPETITOR_MAX_ITEMS)
    if not sel.any():
        return out
    pos = p.gram_pos[sel]
    idx = np.clip(np.searchsorted(shared.ngrams.keys, p.grams[sel]), 0, len(shared.ngrams.keys) - 1)
    starts, counts = shared.ngrams.start[idx], shared.ngrams.count[idx]
    ends = np.cumsum(counts)  # the table rows of each gram's groups, concatenated
    rows = np.arange(int(ends[-1])) + np.repeat(starts - (ends - counts), counts)
    pairs = np.stack([shared.ngrams.groups_by_gram[rows], np.repeat(pos, counts)], axis=1)
    pairs = pairs[pairs[:, 0] != me]
    pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    need = max(1, th.passage_tokens - n + 1)  # consecutive shared n-grams that span passage_tokens tokens
    # runs of consecutive n-gram positions shared with one group; each long enough one marks the
    # tokens from its first n-gram to the end of its last (a difference array, not a loop of slices)
    brk = np.flatnonzero((np.diff(pairs[:, 0]) != 0) | (np.diff(pairs[:, 1]) != 1)) + 1
    first = np.concatenate(([0], brk))
    last = np.concatenate((brk, [len(pairs)])) - 1
    long = (last - first + 1) >= need
    if long.any():
        edges = np.zeros(p.n_tokens + 1, dtype=np.int64)
        np.add.at(edges, pairs[first[long], 1], 1)
        np.add.at(edges, pairs[last[long], 1] + n, -1)
        out = np.cumsum(edges[:-1]) > 0
    return out


def answer_ids(p: PreparedItem) -> np.ndarray:
    return p.answer_ids if len(p.answer_ids) else p.ids[p.role == ANSWER]


def tokens_of(p: PreparedItem, starts: np.ndarray, width: int) -> np.ndarray:
    """bool per item token: inside a gram of `width` tokens starting at one of `starts`."""
    pos = np.zeros(p.n_tokens, dtype=bool)
    pos[starts] = True
    return covered(pos, width, p.n_tokens)
