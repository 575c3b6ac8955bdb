"""Item-centric contamination scoring (pure: no database; look-up results come in as values).

What decides is the item's *own* text, found in one document (DESIGN.md items 2-5, 11-13):

1. An item is tokenised per field (question, each choice, a free-text answer); n-grams never
   cross fields. A multiple-choice answer that repeats a choice is searched for separately,
   right after the question, because the document lists the choices anyway.
2. Look-ups give each n-gram its corpus document frequency (df). n-grams in more than
   `max_df` documents, or made mostly of one-character tokens, are *common*: boilerplate or
   maths identities, never evidence. An item under 32 tokens is also looked up by its 3-grams
   (the short channel). An item whose every field has fewer than 4 tokens cannot be judged
   (`too_short`), unless it has a passage field (passage_tokens or more) to be found beside; one
   whose every n-gram is common is `clean`.
3. Candidate documents (rare n-grams and near-duplicate windows) are aligned with the item
   token by token (app.core.align): a token is matched inside a block of two or more tokens
   found in the same order in a bounded region of the document; each block is grown over the
   equal tokens beside it, within its field (LCS may match a copy's first words to earlier
   repeats of them in repetitive text).
4. Text the item shares with other items of its benchmark (a template, a frame, a passage,
   shared choices) is not its own. Which part is shared depends on the document: the other
   item that best explains what the document holds (more of its distinct text found there than
   of this item's, the text the two do not share; on a tie, a larger share of it found) is the
   *competitor* (a longer item measured on its own region of the document; on a tie, also the
   other item if its alignment accounts for more of the stretch holding this item's match), and
   the item's own text is what the item does not share with it, nor with any other item whose
   copy the region holds where this item's match is. So a twin that differs by one word is told
   apart by that word; a puzzle asked five ways by the words of its question; a templated claim
   by the claim. With no competitor, own text is all but the passages the item shares (a
   template counts: docs/scoring.md, "4. Own text"). Common text is never
   own.
5. Information: a match counts only with at least `min_bits` bits under a language model of the
   rest of the benchmark (app.core.surprise), less, for each piece after the first that a
   field's match is in, the bits of placing it: 1 + log2(1 + g) for a piece resuming g tokens on,
   at most log2(region length) (app.core.matching.breaks): an edited copy's pieces cost little,
   pieces of siblings' copies that happen to hold an item's words do not add up to evidence.
6. Status, from the best document (the highest share of own text found):
     contaminated  own text >= contaminated_coverage found, and as much of the whole item;
                   or the question's own text with its answer right after it
     suspicious    own text >= suspicious_coverage, or a run of >= longest_match own tokens
                   (GPT-3's 13-gram rule) that is longest_share of the own text or more, or
                   twice longest_match long (run_needed); or a passage shared with 1 to
                   passage_max_items other items found as a run of >= passage_tokens tokens
                   not common in the corpus, with none of the item's own text and no copy
                   there of an item sharing it (the reason says so); or the item's
                   opening in one run of >= opening_run own tokens; or rare short runs
                   (docs/scoring.md, "6. Status", lists every rule with its reason)
     clean         otherwise
   Thresholds come from the score distribution of unrelated text (bench/calibrate.py, README).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from contam.app.core.align import align, covered, find_sequence, longest_run
from contam.app.core.arrays import count, share
from contam.app.core.config import Thresholds
from contam.app.core.items import (
    ANSWER,
    CHOICES,
    MATCH_N,
    QUESTION,
    SCORED_ROLES,
    SOLUTION,
    ItemStats,
    PreparedItem,
    SharedText,
    item_stats,
    lookup,
)
from contam.app.core.matching import LONG_ANSWER, DocMatch, DocTokens, MatchCache, match_document, run_length, unshared
from contam.app.core.signatures import token_hashes
from contam.app.core.surprise import token_bits
from contam.app.core.text import tokenize, tokenize_spans
from contam.app.core.types import SEVERITY, Status

__all__ = [
    "ItemScore",
    "RoleScore",
    "Thresholds",
    "assess",
    "benchmark_stats",
    "judge",
    "rank",
    "shared_spans",
    "split_marked",
    "verdict",
]


def _ids(tokens: Sequence[str]) -> np.ndarray:
    return token_hashes(tokens).view(np.int64)


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
    coverage: float = 0.0  # share of all the item's scored tokens found there (those counted_tokens counts)
    # the tokens `coverage` counts: all, or all but a worked solution the best document does not
    # give beside the final answer it gives (matching._counted); None: all (no document matched)
    counted_tokens: int | None = None
    longest_match: int = 0  # longest run of own tokens found contiguously
    own_bits: float = 0.0  # information (bits) in the own text found there
    matched_bits: float = 0.0  # information in all that was found there
    own_bits_total: float = 0.0
    bits_total: float = 0.0
    ngram_overlap: float = 0.0  # eligible n-grams found anywhere in the corpus
    shared_match: int = 0  # longest run of shared text (template, passage) found
    shared_items: int = 0
    question_found: bool = False
    # a widely copied item's own text that the corpora hold, the share of it (its verdict's measure:
    # no one document holds what the index lists none for); 0 for any other item
    spread: float = 0.0
    answer_found: bool | None = None  # None: no answer field
    answer_with_question: bool = False
    passage_found: bool = False
    best_doc: int | None = None
    roles: dict[str, RoleScore] = field(default_factory=dict)
    # per candidate document, best first: (doc, own coverage, coverage, own bits, matched bits, longest own run)
    doc_ranking: list[tuple[int, float, float, float, float, int]] = field(default_factory=list)

    @property
    def score(self) -> float:
        """What orders items within a status: the share of the item's own text its best document
        holds, or for a widely copied item the share the corpora hold (a trial: its best document
        held none of it, and a contaminated item scored 0.00, sorted last and fell out of a
        minimum-score filter); 0 for too_short."""
        return 0.0 if self.status == Status.TOO_SHORT else max(self.own_coverage, self.spread)

    @property
    def longest_match_share(self) -> float:
        return min(1.0, self.longest_match / self.tokens) if self.tokens else 0.0


# A field shorter than this cannot be told from chance at all: with no field this long, too_short
# (with a short channel; without one, no field of n tokens means no n-gram to look up)
MIN_TOKENS = 4


def verdict(
    p: PreparedItem, m: DocMatch, n: int, th: Thresholds, stem_tells: bool = False, passage_tells: bool = False
) -> tuple[Status, str]:
    """What one document says about the item (module doc, step 5). stem_tells: the question is
    shared word for word with other items whose answers differ (SharedText.stem_answer_tells).
    passage_tells: only the item's passage field tells it from other items with the same scored
    text (SharedText.passage_tells): without the passage, the document's copy may be theirs, so
    it is at most suspicious."""
    status, reason = _verdict(p, m, n, th, stem_tells)
    if (told := _with_its_passage(p, m, th)) is not None and SEVERITY[told[0]] > SEVERITY[status]:
        status, reason = told
    if passage_tells and status is Status.CONTAMINATED and m.passage_near < th.suspicious_coverage:
        return Status.SUSPICIOUS, (
            f"{reason}, but not its passage: other items have the same text about other passages"
        )
    return status, reason


def _verdict(p: PreparedItem, m: DocMatch, n: int, th: Thresholds, stem_tells: bool) -> tuple[Status, str]:
    """verdict() but for the passage. A partial match must include a run of more than n own
    tokens in a row (two chained n-grams): one n-gram of ordinary prose recurs by chance, two in
    a row rarely do (bench/calibrate.py). Lengths are words: in CJK text, more tokens (_in_words)."""
    in_words = n, th
    n, th, per_word = _in_words(p, n, th)
    quoted = _quoted_by_question(p, m)
    if (most := _most_of_it(p, m, th)) and not (quoted and most[0] is Status.SUSPICIOUS):
        return most
    q_own = m.own_role_coverage(p, QUESTION)
    q_there = m.question_there >= th.contaminated_coverage
    q_told = _question_told(p, m, n, th, q_own, q_there)
    q_asked = q_told or _stem_asked(p, m, th, stem_tells)
    # what tells the item: its own text when its question has some (a frame shared with other
    # items, and a common answer word such as "also" after it, say nothing of which item the
    # document holds), else the question it shares with items of other answers, with the answer
    if q_asked and m.answer_found and (m.own_bits if q_told else m.matched_bits) >= th.min_bits:
        return Status.CONTAMINATED, "question and answer found together in one document"
    alone = _question_alone(p, m, n, th, q_own, q_there)
    if alone and not quoted:
        return Status.SUSPICIOUS, alone
    if _one_choice_alone(p, m, th):
        return (
            Status.CLEAN,
            "only one of its choices was found, without its question: a sentence of its own, not the item",
        )
    # a clause or two a question quotes from the document flags it by none of these (_quoted_by_question)
    held = bool(m.own_total and m.own_coverage >= th.suspicious_coverage and m.own_bits >= th.min_bits)
    if (held := held and _unlikely(m, n, th, per_word)) and not quoted:
        return Status.SUSPICIOUS, (
            f"one document holds {m.own_coverage:.0%} of the item's own text ({_own_tokens(m)})"
            f"{_short_of_whole(m, th)}{_missing(p, m)}"
        )
    if m.longest_own >= run_needed(m.own_total, th) and m.own_bits >= th.min_bits:
        return Status.SUSPICIOUS, f"a {m.longest_own}-token run of its own text matches one document"
    if (opened := m.opening >= th.opening_run and m.opening_unique > n and m.own_bits >= th.min_bits) and not quoted:
        return Status.SUSPICIOUS, (
            f"one document holds the item's opening in one run ({m.opening} tokens of its own text), "
            "as a truncated copy does"
        )
    if m.shared_run >= th.passage_tokens and not m.competitor_found and 1 < m.shared_items <= th.passage_max_items + 1:
        return Status.SUSPICIOUS, (
            f"a {m.shared_run}-token passage it shares with {m.shared_items - 1} other "
            "item(s) was found, but not this item's own text"
        )
    scale = _scale_note(per_word, *in_words, n, th)
    return Status.CLEAN, _clean_reason(m, th, n, quoted and bool(most or alone or held or opened), scale)


def _stem_asked(p: PreparedItem, m: DocMatch, th: Thresholds, stem_tells: bool) -> bool:
    """Whether the document asks the item's question where the question is shared word for word
    with items of other answers (stem_tells), which tells the item by its answer: the question
    there, and not only another item's copy. On a page holding another item's copy and under
    suspicious_coverage of this item's own text, the answer may be one of that item's choices (a
    probe's malware-analysis items, one stem, "Writes data to a remote process" the answer of one
    and a choice of another whose answer is "All of the above": 17 clean items `contaminated`,
    bench/boiler_shapes.py); turned off on any other item's copy, it lost an embedded copy of a
    logical_deduction puzzle whose own text, held whole, is a few bits (`bench/scan_speed.py`'s
    benchmark). Left: a quiz page giving two such items' answers without their choices tells
    neither (a review)."""
    elsewhere = m.competitor_found and m.own_coverage < th.suspicious_coverage  # another's copy, little of its own
    return stem_tells and not elsewhere and m.role_coverage(p, QUESTION) >= th.contaminated_coverage


def _unlikely(m: DocMatch, n: int, th: Thresholds, per_word: float) -> bool:
    """Whether the own text found is more than chance gives, held in part: not a phrase
    (_not_a_phrase). Or, with the short channel, runs of short-channel n-grams that no other
    document holds: three in a row (MATCH_N + 2 tokens), those runs holding more than half of the
    own text, with opening_run own tokens found in all (_not_a_phrase says why); or two in a row
    with the item's answer after the question's end (DocMatch.question_tail: fewer than MATCH_N
    of its last tokens missing; a question written from a page's sentence shares a phrase with it
    and has the answer beside that phrase, not after its own last words: a probe, 28 of 360 such
    questions flagged, 5 so). Two rare 3-grams in a row alone (four words) are what a name or a
    title gives by chance (bench/calibrate.py)."""
    return (
        _not_a_phrase(m, n, th)
        or (
            m.rare_run >= round((MATCH_N + 2) * per_word)
            and 2 * m.rare_tokens > m.own_total
            and m.own_matched >= th.opening_run
        )
        or (m.rare_run >= round((MATCH_N + 1) * per_word) and m.answer_found and m.question_tail < MATCH_N * per_word)
    )


# A question written from a text quotes at most this many of its spans, in the runs the document holds
QUOTED_RUNS = 2


def _quoted_by_question(p: PreparedItem, m: DocMatch) -> bool:
    """Whether all the document holds of the item is what a question written from it holds: a
    clause or two of it quoted inside the question, its own words around them. An annotator
    reading a passage asks of it in words of their own around the words it says ("How many years
    after [the Forest Cantons negotiated a ten-month truce with the Habsburgs] was it before the
    Battle of Sempach?"), so the passage's source, which a web corpus holds, shares 40-80% of the
    question's own text with it. So: the item's tokens held lie in the question only, none in
    another field, in one run followed by own words of the question the document lacks, or in
    two runs (at most QUOTED_RUNS) that the document holds apart; the question's first word is
    not held. A copy of the item holds the question from its first word (whole, cut short after
    it, reformatted); one without its opening or its frame holds the question's own text to its
    end (a claim found without "On <date>, the following claim was made:"); an edited copy holds
    the question in more pieces, or the two runs at the distance the item has them, a word or two
    changed between (_at_its_distance), or the item's other fields. Such a document is no
    evidence by the share of own text held, a run of it from the own text's first word, or the
    question held without its answer (bench/source_null.py: DROP and StrategyQA questions against
    the passages and facts they were written from). A run of `longest_match` own tokens still is
    (run_needed): GPT-3's length of a copy."""
    q = np.flatnonzero(p.role == QUESTION)
    held = m.matched | m.own_hit
    if not len(q) or held[q[0]] or not m.own_hit.any() or (held & (p.role != QUESTION)).any():
        return False
    own = np.flatnonzero(m.own & (p.role == QUESTION))
    runs = np.insert(held, m.cuts, False) if len(m.cuts) else held
    n_runs = int(np.count_nonzero(runs[1:] & ~runs[:-1])) + bool(runs[0])
    if n_runs == 1:
        return not m.own_hit[own[-1]]  # the question goes on after the clause, in words of its own
    at = np.flatnonzero(held)
    gaps = np.flatnonzero(np.diff(at) > 1)
    return n_runs <= QUOTED_RUNS and not (
        len(gaps) == 1 and _at_its_distance(m, int(at[gaps[0]]), int(at[gaps[0] + 1]))
    )


def _at_its_distance(m: DocMatch, end: int, start: int) -> bool:
    """Whether the document holds item tokens `end` and `start` (the last of one held run, the
    first of the next) as far apart as the item does, plus two tokens per item token between them
    that it lacks (a word replaced by two): one stretch with a word or two changed, an edit (as
    _spanned measures it), not two clauses quoted from different places."""
    first, last = _in_the_document(m, end), _in_the_document(m, start)
    if first is None or last is None:
        return False
    return 0 < last - first <= (start - end) + 2 * (start - end - 1)


def _in_words(p: PreparedItem, n: int, th: Thresholds) -> tuple[int, Thresholds, float]:
    """n and the thresholds that are lengths in tokens (opening_run, longest_match, passage_tokens),
    for this item: as many of its tokens as make that many words (PreparedItem.tokens_per_word),
    and that scale. The rules' lengths were set on the null of text a token of which is a word
    (bench/calibrate.py); a CJK character is a token of its own and a fraction of a word
    (text.words_in), so seven of them are a phrase, not a copy's run. 1.0 for other text."""
    per_word = p.tokens_per_word
    if per_word == 1.0:
        return n, th, 1.0
    lengths = {k: round(getattr(th, k) * per_word) for k in ("opening_run", "longest_match", "passage_tokens")}
    return round(n * per_word), replace(th, **lengths), per_word


def run_needed(own_total: int, th: Thresholds) -> float:
    """Own tokens in one run that make an item suspicious alone: longest_match, or longest_share
    of a long item's own text, up to twice longest_match. In an item of 300-460 tokens, one
    sentence of 13-24 tokens that another page of the same documentation also holds is a passage
    of the item, not a copy of it, and a long item has many sentences to share (a probe of 243
    clean long items: 52 flagged, 18 of them by one such run alone, now clean, none of the
    probe's planted copies changed; the evaluation set's partial copies
    flagged by a run alone hold runs of 25-34% of their items' own text: bench/MEASUREMENTS.md,
    session 37). Two sentences' length in a row is more than a passage documents share by
    chance, whatever the item's length (a review: a 190-token copy in a 2,000-token item went
    unflagged). An item of at most 130 own tokens is judged as before."""
    return max(th.longest_match, min(th.longest_share * own_total, 2 * th.longest_match))


def _question_alone(
    p: PreparedItem, m: DocMatch, n: int, th: Thresholds, q_own: float | None, q_there: bool
) -> str | None:
    """The reason a document holding the question without its answer gives, or None: most of the
    question's own text, or, for a question of fewer than 2n own tokens, all of it (four words of
    a five-word question are a phrase's length: they recur by chance), and the question there as a
    whole, not only its own words (a twin's one distinct word with a phrase around it, "the column
    number of the", is not the question)."""
    q_whole = 1.0 if m.own_role_tokens(p, QUESTION) < 2 * n else th.contaminated_coverage
    if (q_own or 0.0) < q_whole or m.own_bits < th.min_bits or not q_there:
        return None
    if not (p.item.answer or p.item.solution):
        whole = _pct_below(m.coverage, th.contaminated_coverage)
        return f"one document holds the question's own text, {whole} of the whole item (it has no answer)"
    part = _answer_part(p, m)
    return "the question is in one document, " + (
        f"with {part:.0%} of its answer (half of a long answer counts as found)" if part else "without its answer"
    )


def _one_choice_alone(p: PreparedItem, m: DocMatch, th: Thresholds) -> bool:
    """Whether all the own text the document holds lies in one of the item's choices, and of its
    question none of the own text and less than `suspicious_coverage` of all its text: one option
    of a multiple-choice item, found alone, is a sentence the item's author may have taken from
    anywhere, and says nothing of the item (a probe of a COPA-like benchmark from manual pages: a
    wrong choice that a page says word for word made the item `suspicious`). A page listing
    several of the choices, or one beside the question or beside a passage the question field
    carries, still counts; so does an item whose choices are one field (a review: "(A) ... (B)
    ..." in one string, every option listed on a page, read as one choice alone)."""
    choices = [(s, e) for s, e, code in p.fields if code == CHOICES]
    if len(choices) < 2 or not m.own_role_tokens(p, QUESTION) or m.own_role_coverage(p, QUESTION) != 0.0:
        return False
    if m.role_coverage(p, QUESTION) >= th.suspicious_coverage:
        return False
    held = m.own_hit
    found = [(s, e) for s, e in choices if held[s:e].any()]
    return len(found) == 1 and count(held) == count(held[found[0][0] : found[0][1]])


def _with_its_passage(p: PreparedItem, m: DocMatch, th: Thresholds) -> tuple[Status, str] | None:
    """The verdict of a document holding the item's passage field (`passage_tokens` or more) and,
    near it and apart from it, its question as a whole (`contaminated_coverage` of each): the
    question asked of that passage is the item, whatever text it shares with other items (issue
    9's principle 2). ToMi's questions and one-word answers are all template, their stories a
    field apart, so a page holding a story with its question and answer was clean (a probe: 5 of
    21 such copies); the story alone, or with a sibling's question, tells nothing of the item."""
    if (
        p.passage_tokens < th.passage_tokens
        or m.passage_near < th.contaminated_coverage
        or m.question_apart < th.contaminated_coverage
    ):
        return None
    if m.answer_found:
        return Status.CONTAMINATED, "its passage, its question and its answer found together in one document"
    if p.item.answer or p.item.solution:
        return Status.SUSPICIOUS, "its passage and its question found together in one document, without its answer"
    return Status.CONTAMINATED, "its passage and its question found together in one document (it has no answer)"


def _most_of_it(p: PreparedItem, m: DocMatch, th: Thresholds) -> tuple[Status, str] | None:
    """The verdict of a document holding `contaminated_coverage` of the item's own text and of the
    whole item, more than a short answer of its own, with `min_bits`: `contaminated` with the answer
    or as much of the text as a copy without it holds (_copy_without_answer), else `suspicious`.
    Held in part, the own text found must be more than a phrase's length (_more_than_a_phrase)."""
    if (
        m.own_total > _short_answer_own(p, m)
        and m.own_coverage >= th.contaminated_coverage
        and _more_than_a_phrase(p, m, th)
        and m.coverage >= th.contaminated_coverage
        and m.matched_bits >= th.min_bits
    ):
        copy = m.answer_found or _copy_without_answer(p, m, th)
        return Status.CONTAMINATED if copy else Status.SUSPICIOUS, (
            f"one document holds {m.own_coverage:.0%} of the item's own text ({_own_tokens(m)}){_missing(p, m)}"
        )
    return None


def _more_than_a_phrase(p: PreparedItem, m: DocMatch, th: Thresholds) -> bool:
    """Whether the item's own text the document holds is more than chance gives a short item:
    `opening_run` own tokens; or, of its question's own text (all of its own text, if the question
    has none), the whole, or all but a few words changed inside it (_spanned): a copy may give the
    answer alone, not every choice (navigate's "A: True" without "False"), or no answer. A phrase inside a
    short item, four words of five or six of seven, is what unrelated text of the item's domain
    holds by chance ("de fin de ligne" for "erreur de fin de ligne", a French UI message against
    other programs' catalogues: 16 of 1,005 such messages were `contaminated` so, `python
    bench/unspaced_probe.py --langs fr`); on the null, 6-7 own tokens of a one-sentence item turn
    up in one document for 1-4% of items, 8 for none (bench/MEASUREMENTS.md, "Session 29"). Chance
    seldom gives two phrases of one short item at the distance the item has them; an edited copy
    does. Whether a copy lacking its answer is `contaminated` is _copy_without_answer's to say."""
    if m.own_matched >= min(m.own_total, th.opening_run):
        return True
    own = m.own if m.counted is None else m.own & m.counted
    asked = own & (p.role == QUESTION)
    return _spanned(m, asked if asked.any() else own)


def _spanned(m: DocMatch, own: np.ndarray) -> bool:
    """Whether the document holds these own tokens (bool per item token): all of them, or the first
    and the last, no further apart there than in the item plus two tokens per own token between
    them it lacks (a word replaced by two, or inserted), as the alignment's blocks place them."""
    at = np.flatnonzero(own)
    if not len(at) or not (m.own_hit[at[0]] and m.own_hit[at[-1]]):
        return False
    missing = count(own & ~m.own_hit)
    if not missing:
        return True
    first, last = _in_the_document(m, int(at[0])), _in_the_document(m, int(at[-1]))
    if first is None or last is None:
        return False
    return 0 <= last - first <= int(at[-1] - at[0]) + 2 * missing


def _in_the_document(m: DocMatch, k: int) -> int | None:
    """Where the document holds item token k, by the alignment's block that holds it (blocks lie in
    item order, apart, and hold every matched token); None outside them. A block's size is its
    length in the document, which is shorter than in the item where a copy glued tokens ("314" for
    "3.14", matching._unglued): a token past that length is placed at the block's last token."""
    i = bisect_right(m.blocks, k, key=lambda blk: blk[0]) - 1
    if i < 0 or not m.matched[k]:
        return None
    a, b, size = m.blocks[i]
    return b + min(k - a, size - 1)


# Without its answer, a copy holds all of the item's own text but one token in twenty (one at least),
# or all of it but the answer's, or longest_match tokens of it; see _copy_without_answer
WHOLE_MISSING = 0.05


def _copy_without_answer(p: PreparedItem, m: DocMatch, th: Thresholds) -> bool:
    """Whether a match that lacks the item's answer holds enough of its own text to be `contaminated`
    on that alone (an item with no answer or solution: contaminated_coverage, as with one): all of
    it but max(1, WHOLE_MISSING of it) tokens; or all of it but the answer's (the question whole,
    whatever the answer's length: counted with a two-word answer, "... the Australian state of
    Victoria?" without "Melbourne, Victoria" was 85%, a review); or `longest_match` tokens of it
    (GPT-3's length of a copy: an edited copy of a longer item, its answer not found, the README's
    q3, holds 26 of 30). A question written from the page it asks about quotes the page's phrases
    and adds the asking words ("Was Hillary Clinton's deputy chief of staff in 2009 baptised?"
    against "Huma Abedin was Hillary Clinton's deputy chief of staff in 2009."): 9-10 own tokens of
    11-12, 82-83%, which the 80% rule reported `contaminated` (bench/source_null.py: real DROP and
    StrategyQA questions against the text they were written from, 3 of 3,079), where the evaluation
    set's verbatim, embedded and reformatted copies lacking their answer miss one token at most.
    Held less, the item is `suspicious`."""
    if not (p.item.answer or p.item.solution) or m.own_matched >= th.longest_match:
        return True
    if m.own_total - m.own_matched <= max(1.0, WHOLE_MISSING * m.own_total):
        return True
    rest = m.own & (p.role != ANSWER) & (p.role != SOLUTION)
    if m.counted is not None:
        rest &= m.counted
    return bool(rest.any()) and not (rest & ~m.own_hit).any()


def _short_answer_own(p: PreparedItem, m: DocMatch) -> int:
    """How many own tokens of a match are a short answer's (LONG_ANSWER tokens or fewer): own text
    that is only that is no copy of the item (an NLI hypothesis quoting its premise, not repeated,
    is no own text, and a page holding the premise with the word "entailment" near it held "100%
    of the item's own text (1 tokens)": `contaminated`, a review)."""
    answer = count(p.role == ANSWER)
    return m.own_role_tokens(p, ANSWER) if 0 < answer <= LONG_ANSWER else 0


def _missing(p: PreparedItem, m: DocMatch) -> str:
    """What a reason counting the own text found adds: that the answer was not found with the
    question, that the question was not (none of its own text held: a solution's code copied
    into a source file alone, which a probe found reported as the whole item; an edited question,
    part of it held, is not "not found"), or neither (a page listing the choices alone)."""
    no_answer = bool(p.item.answer or p.item.solution) and not m.answer_found
    no_question = m.own_role_coverage(p, QUESTION) == 0.0  # own question text there is, none of it held
    # a short answer counts as found only after the question; its text there alone was said to be
    # missing ("neither its question nor its answer", a probe's SQL query held whole)
    apart = 0 < count(p.role == ANSWER) <= LONG_ANSWER and m.role_coverage(p, ANSWER) >= 0.5
    if no_answer and no_question and not apart:
        return " (neither its question nor its answer was found with it)"
    if no_answer and not no_question:
        part = _answer_part(p, m)
        return f" (only {part:.0%} of its answer was found with it)" if part else " (its answer was not found with it)"
    return " (its question was not found with it)" if no_question else ""


def _own_tokens(m: DocMatch) -> str:
    """The own tokens a reason counts: "20 tokens" when the document holds them all, else "16 of
    its 20 tokens" ("80% of the item's own text (20 tokens)" read as 20 found: a new user's trial)."""
    return f"{m.own_total} tokens" if m.own_matched == m.own_total else f"{m.own_matched} of its {m.own_total} tokens"


def _short_of_whole(m: DocMatch, th: Thresholds) -> str:
    """What a reason adds when the own text found would make the item `contaminated` but the whole
    item found would not (a copy of the item holds its frame too; the page may be its source): a
    probe of instruction prompts without answers, a paragraph found alone, said only "100% of the
    item's own text", which reads as a copy."""
    if m.own_coverage >= th.contaminated_coverage and m.coverage < th.contaminated_coverage:
        return f", but only {_pct_below(m.coverage, th.contaminated_coverage)} of the whole item"
    return ""


def _pct_below(share: float, limit: float) -> str:
    """A share as a percentage, never rounded up to `limit` from below it (79.6% of an item,
    below 80%, is "79%"; 66.7% is "67%"; 81.2% is "81%")."""
    pct = round(share * 100)
    if share >= limit:  # at or above it: as it is (a review: 81.2% was said "79%")
        return f"{pct}%"
    return f"{min(pct, math.ceil(round(limit * 100, 6)) - 1)}%"  # round(): 0.56 * 100 is 56.000000000000014


def _answer_part(p: PreparedItem, m: DocMatch) -> float:
    """The share of a long free-text answer held beside the question, not enough to count as found
    (half of it must be): a reason saying "without its answer" overstated a copy holding 45% of it
    (a probe of long-form answers: every half copy said so); 0 for any other answer."""
    if m.answer_found or count(p.role == ANSWER) <= LONG_ANSWER:
        return 0.0
    held = m.role_coverage(p, ANSWER)
    return held if held >= 0.1 else 0.0  # a phrase of it or two is chance


def _question_told(p: PreparedItem, m: DocMatch, n: int, th: Thresholds, q_own: float | None, q_there: bool) -> bool:
    """Whether the question's own text tells the item here: `contaminated_coverage` of it found,
    and it more than n tokens with a run of more than n of them, or the question there as a whole,
    or the own text found no phrase (a short question and its long answer). One own word (a
    template's slot, a twin's word) held in a phrase, the answer word near, is no question found;
    nor are a sentence's phrases a question was strung together from, its answer beside them (a
    probe: "... gentlemen adieu I will, and things and married?" against the Shakespeare it was
    written from, `contaminated` in runs of 4 and 3)."""
    if q_own is None or q_own < th.contaminated_coverage:
        return False
    if m.own_role_tokens(p, QUESTION) > n and run_length(m.own_hit & (p.role == QUESTION), m.cuts) > n:
        return True
    return q_there or _not_a_phrase(m, n, th)


def _not_a_phrase(m: DocMatch, n: int, th: Thresholds) -> bool:
    """More of the item's own text than a phrase: a run of 2n own tokens wherever else it is, or
    one of more than n (two n-grams in a row) that no other document of the corpora checked
    holds, with opening_run own tokens found in all (as much as a truncated copy's opening). On
    the null (unrelated items' best documents) a run of more than n own tokens came by chance to
    1.2% of the evaluation set's clean items and 3.6% of a manual-page probe's, one of 2n tokens
    to 0.013% and 0.35%; and 6 or 7 own tokens of a one-sentence item found in one document to
    1-4% of two probes' one-sentence benchmarks, 8 to none of their 925 items (bench/MEASUREMENTS.md,
    session 29): "the number of seconds to wait for" is in several manual pages, "can be
    overridden in subclasses to" in one source file, and each was the copy of no item."""
    return m.longest_own >= 2 * n or (m.unique_run > n and m.own_matched >= th.opening_run)


def _scale_note(per_word: float, n_words: int, th_words: Thresholds, n: int, th: Thresholds) -> str:
    """What a phrase reason of a CJK item adds (_in_words: n and th are n_words and th_words scaled
    to its tokens): its lengths in tokens are the rules' lengths in words scaled, so "7 of its
    tokens (fewer than 14)" says why 14 (a trial: "24 of its tokens (fewer than 29)" of a
    28-character message read as a bar no copy of it could pass)."""
    if per_word == 1.0:
        return ""
    return (
        f" (counted in words: {per_word:.1f} of this item's tokens make a word, so "
        f"{th_words.opening_run} words are {th.opening_run} tokens here and {n_words} words (n) are {n})"
    )


def _clean_reason(m: DocMatch, th: Thresholds, n: int, quoted: bool = False, scale: str = "") -> str:
    """Why a document that does not flag the item says it is clean (quoted: it would, but for
    _quoted_by_question; scale: _scale_note, after a reason that gives lengths in tokens)."""
    if quoted:
        return (
            f"one document holds {m.own_coverage:.0%} of its own text, but only as a clause or two inside its "
            "question, without the question's first word: a question written from that text quotes it so"
        )
    if m.longest_own >= th.longest_match and m.own_bits >= th.min_bits and m.own_coverage < th.suspicious_coverage:
        return (  # the run rule failed on longest_share alone
            f"a {m.longest_own}-token run of its own text matches one document, but that is "
            f"{_pct_below(m.longest_own / m.own_total, th.longest_share)} of its {m.own_total} own tokens: "
            "a passage of it, not a copy of the item"
        )
    if m.own_coverage >= th.suspicious_coverage and m.own_bits < th.min_bits:
        return (
            f"one document holds {m.own_coverage:.0%} of its own text, but only "
            f"{m.own_bits:.0f} bits: too little to tell from chance"
        )
    if m.own_coverage >= th.suspicious_coverage and m.longest_own > n and m.unique_run > n:
        return (  # _not_a_phrase failed on the count alone
            f"one document holds {m.own_coverage:.0%} of its own text, but {m.own_matched} of its tokens "
            f"(fewer than {th.opening_run}): a phrase's length, not a copy's{scale}"
        )
    if m.own_coverage >= th.suspicious_coverage and m.longest_own > n:
        return (
            f"one document holds {m.own_coverage:.0%} of its own text, but none of its runs of more than {n} "
            f"tokens (the longest {m.longest_own}) lies in n-grams that no other text of the corpora "
            f"checked holds, nor is {2 * n} long: a phrase, not a copy{scale}"
        )
    if m.own_coverage >= th.suspicious_coverage:
        return (
            f"one document holds {m.own_coverage:.0%} of its own text, but in runs of at most "
            f"{m.longest_own} tokens: a phrase's length, not a copy's{scale}"
        )
    if m.competitor is not None and m.own_total == 0 and m.coverage >= 0.5:
        return "only text shared with other items of the benchmark was found"
    if m.coverage >= th.suspicious_coverage:
        return (
            f"one document holds {m.coverage:.0%} of the item but only {m.own_coverage:.0%} of its own "
            "text: the rest is text it shares with other items of the benchmark or common text"
        )
    return "no substantial overlap found"


def rank(
    p: PreparedItem,
    matches: Sequence[DocMatch],
    n: int,
    th: Thresholds,
    stem_tells: bool = False,
    passage_tells: bool = False,
) -> list[tuple[DocMatch, Status, str]]:
    """Documents with their verdicts, strongest first (then most own text, most text, then in the
    order given: the scanner gives them by what they are, not by id)."""
    judged = [(m, *verdict(p, m, n, th, stem_tells, passage_tells)) for m in matches]
    return sorted(judged, key=lambda x: (-SEVERITY[x[1]], -x[0].own_coverage, -x[0].coverage))


def assess(
    p: PreparedItem, stats: ItemStats, ranked: Sequence[tuple[DocMatch, Status, str]], n: int, th: Thresholds
) -> ItemScore:
    """Status and metrics of one item from its aligned candidate documents, as rank() orders
    them with their verdicts (module doc, step 5)."""
    best = ranked[0][0] if ranked else None
    score = ItemScore(
        status=Status.CLEAN,
        reason="no substantial overlap found",
        tokens=p.n_tokens,
        roles=_roles(p, stats, best, th),
        doc_ranking=[
            (
                m.doc,
                round(m.own_coverage, 4),
                round(m.coverage, 4),
                round(m.own_bits, 1),
                round(m.matched_bits, 1),
                m.longest_own,
            )
            for m, _s, _r in ranked
        ],
    )
    score.ngram_overlap = share(stats.df[stats.eligible] > 0)
    score.answer_found = False if p.item.answer or p.item.solution else None
    if best is None:
        _nothing_found(p, stats, score, th)
    else:
        score.status, score.reason = ranked[0][1], ranked[0][2]
        score.best_doc = best.doc
        score.own_tokens, score.own_coverage, score.coverage = best.own_total, best.own_coverage, best.coverage
        score.counted_tokens = int(best.counted.sum()) if best.counted is not None else None
        score.longest_match = best.longest_own
        score.own_bits, score.matched_bits = best.own_bits, best.matched_bits
        score.own_bits_total, score.bits_total = best.own_bits_total, best.bits_total
        q_own = best.own_role_coverage(p, QUESTION)
        q_cov = q_own if q_own is not None else best.role_coverage(p, QUESTION)
        score.question_found = q_cov >= th.suspicious_coverage
        score.answer_found = bool(best.answer_found) if p.item.answer or p.item.solution else None
        score.answer_with_question = bool(best.answer_found and score.question_found)
        score.shared_match, score.shared_items = best.shared_run, best.shared_items
        score.passage_found = _passage_found(ranked, th)
    if (whole := _of_the_whole_item(p, stats, ranked, n, th)) is not None:
        score.status, score.reason, score.spread = whole
    if score.status in (Status.CLEAN, Status.TOO_SHORT):
        # what a document that is no evidence holds is chance: it finds neither the question nor
        # the answer ("true" a few words after a navigation frame met in a Go file)
        score.question_found = score.answer_with_question = False
        score.answer_found = False if score.answer_found is not None else None
        for rs in score.roles.values():  # each field's coverage stays: what the best document holds
            rs.found = False
    if score.status is Status.CLEAN and score.passage_found:  # said, beside evidence that shows it (a trial)
        found = (
            "its passage was found, which alone decides nothing (a passage is no item's own text)"
            if p.item.passage  # one written into the items' text: the reason before says why it is no evidence here
            else "the passage it shares with other items was found"
        )
        score.reason = found if score.reason == "no substantial overlap found" else f"{score.reason}; {found}"
    return score


def _nothing_found(p: PreparedItem, stats: ItemStats, score: ItemScore, th: Thresholds) -> None:
    """assess() of an item no document was aligned with: its own text and information are its
    own, not zero, and the reason says why nothing was found where its text is in the corpora."""
    own = unshared(p, stats, th)
    score.own_tokens, score.own_bits_total = count(own), float(stats.bits[own].sum())
    score.bits_total = float(stats.bits.sum())
    if not score.own_tokens and score.ngram_overlap:
        score.reason = _none_its_own(stats, score.ngram_overlap)
    elif common := count(_own_common(p, stats, th)):
        score.reason = _common_only(common, _in_words(p, 0, th)[1])  # its run's length as _widespread's


def _common_only(common: int, th: Thresholds) -> str:
    """The reason of an item no document was found for, `common` of whose own n-grams are each in
    more than max_df documents: it said "no substantial overlap found" of an edited copy of a
    paragraph that 17 README files hold (a new user's trial; verbatim, it is a widespread copy)."""
    return (
        f"no document was found for it; {common:,} of its own n-grams are each in more than max_df "
        f"({th.max_df}) documents of the corpora, which the index lists no documents for (boilerplate, or text "
        f"copied widely), and none of them in an unbroken run of {th.longest_match} tokens, as a widespread "
        "copy of it would be"
    )


def _none_its_own(stats: ItemStats, overlap: float) -> str:
    """The reason of an item whose text the corpora hold (`overlap` of its n-grams) but none of
    which is its own: it said "no substantial overlap found" beside an n-gram overlap of 100% (a
    trial: a licence sentence that 120 other items of the benchmark share all but a word of)."""
    others = int(stats.mfreq.max(initial=1)) - 1  # by the grams that decide what is its own (unshared)
    return (
        f"none of its text is its own: each part of it is in other items of the benchmark too (up to {others:,}) "
        f"or common in the corpora, so the {overlap:.0%} of its n-grams the corpora hold tell no item apart"
    )


def _of_the_whole_item(
    p: PreparedItem, stats: ItemStats, ranked: Sequence[tuple[DocMatch, Status, str]], n: int, th: Thresholds
) -> tuple[Status, str, float] | None:
    """The verdict the item's statistics over the whole corpus give, over any one document's, and
    the share of its own text the corpora hold (ItemScore.spread): a widespread copy (most of its
    text is common only because it was copied so often), else _judged's, with 0; None: the best
    document's stands."""
    spread = _widespread(p, stats, n, th)
    if spread is None:
        judged = _judged(p, stats, n, th)
        return None if judged is None else (*judged, 0.0)
    if any(m.matched.any() for m, _s, _r in ranked):
        return Status.CONTAMINATED, WIDESPREAD, spread
    # a new user's trial: "contaminated", no evidence, no word why
    listed = f"none is listed: the index names no documents for n-grams in more than max_df ({th.max_df}) of them"
    return Status.CONTAMINATED, f"{WIDESPREAD}; {listed}", spread


def _passage_found(ranked: Sequence[tuple[DocMatch, Status, str]], th: Thresholds) -> bool:
    """A document holds the passage field, or a passage written into the text of the item and of
    other items (_suspicious's run of `passage_tokens` held by at most `passage_max_items` other
    items; the status that rule gives is one case of it), whatever the status (the API's word
    for the field): a page holding the passage beside another item's question said
    `passage_found` false, where the passage found alone said true (a new user's trial)."""
    return any(
        m.passage_coverage >= th.suspicious_coverage
        or (m.shared_run >= th.passage_tokens and 1 < m.shared_items <= th.passage_max_items + 1)
        for m, _s, _r in ranked
    )


def _judged(p: PreparedItem, stats: ItemStats, n: int, th: Thresholds) -> tuple[Status, str] | None:
    """too_short, or clean as a common phrase, for an item whose text cannot be evidence of a
    copy at all; None for one that can (the short channel judges a short item by its 3-grams
    that are rare, and a question of three words asked of a passage field is judged by the
    passage beside it: the passage alone, or the words elsewhere, leave it clean)."""
    short_ok = stats.sdf is not None and bool((stats.sdf <= th.max_df).any())
    longest = max((e - s for s, e, _r in p.fields), default=0)
    shortest = n if stats.sdf is None else MIN_TOKENS
    # a passage field to be found beside: the item's fields together as long as one field must be,
    # one of them long enough to hold a gram of the index (MATCH_N tokens in the short channel's,
    # n without it); an item with none has nothing to look up, too_short, not a common phrase
    gram = n if stats.sdf is None else MATCH_N
    beside = (
        p.passage_tokens >= th.passage_tokens and longest >= gram and sum(e - s for s, e, _r in p.fields) >= shortest
    )
    if longest < shortest and not beside:
        return Status.TOO_SHORT, (
            f"no field has {shortest} tokens (the longest has {longest}): too little text to tell a copy from chance"
        )
    if not stats.eligible.any() and not short_ok:  # a common phrase: met by chance in many documents
        return Status.CLEAN, (
            f"every n-gram of its text is in more than {th.max_df} documents or low in information: "
            "a phrase this common is no evidence of a copy"
        )
    return None


WIDESPREAD = "the item's own text is in many documents (widespread copy)"  # the reason of _widespread


def widespread_grams(p: PreparedItem, stats: ItemStats, th: Thresholds) -> np.ndarray:
    """The item's own n-grams held by more than max_df documents each (the index names no
    documents for them): where a widespread copy's documents are to be found."""
    return np.asarray(p.grams[_own_common(p, stats, th)])


def _own_common(p: PreparedItem, stats: ItemStats, th: Thresholds) -> np.ndarray:
    return (stats.freq < th.template_min_items) & ~p.weak & (stats.df > th.max_df)


def _widespread(p: PreparedItem, stats: ItemStats, n: int, th: Thresholds) -> float | None:
    """The share of the item's own tokens inside n-grams the corpora hold, if that is at least
    contaminated_coverage and an unbroken run of at least longest_match of its tokens (not a
    phrase) is made of n-grams each in more than max_df documents: a widely copied item, not
    boilerplate; else None. Common n-grams scattered over the item do not make one: the chain must
    be unbroken, as a copy's is. Its lengths are words, as a verdict's (_in_words): 13 tokens of
    Japanese, a phrase of four words that many pages hold, are no copy of the item."""
    th = _in_words(p, n, th)[1]  # n stays the n-grams' width
    own = (stats.freq < th.template_min_items) & ~p.weak
    common = _own_common(p, stats, th)
    if not common.any():
        return None

    def tokens_of(gram_mask: np.ndarray) -> np.ndarray:
        pos = np.zeros(p.n_tokens, dtype=bool)
        pos[p.gram_pos[gram_mask]] = True
        return covered(pos, n, p.n_tokens)

    own_tok = tokens_of(own)
    found = tokens_of(own & (stats.df > 0))
    total = count(own_tok)
    if total < th.longest_match or count(found) < th.contaminated_coverage * total:
        return None
    # n-grams at consecutive positions of one field, each common: their tokens form one run
    pos = np.zeros(p.n_tokens, dtype=bool)
    pos[p.gram_pos[common]] = True
    return count(found) / total if longest_run(pos) + n - 1 >= th.longest_match else None


def _roles(p: PreparedItem, stats: ItemStats, best: DocMatch | None, th: Thresholds) -> dict[str, RoleScore]:
    out: dict[str, RoleScore] = {}
    gram_role = p.role[p.gram_pos] if len(p.gram_pos) else np.zeros(0, np.int8)
    for code, name in enumerate(SCORED_ROLES):
        sel = p.role == code
        if not sel.any():
            continue
        g = gram_role == code
        rs = RoleScore(tokens=count(sel), ngrams=count(g))
        rs.shared_ngrams = count(g & (stats.freq >= th.template_min_items))
        rs.common_ngrams = count(g & stats.common)
        rs.eligible_ngrams = count(g & ~stats.common)
        rs.found_ngrams = count(g & ~stats.common & (stats.df > 0))
        if best is not None:
            rs.coverage = best.role_coverage(p, code)
            # a short answer is found where it is given (after the question or the worked
            # solution), which the alignment, keeping the fields in the item's order, may not hold;
            # its words elsewhere in the region are not it (a probe: a command's name on the page of
            # another of its subcommands read "answer found" beside "its answer was not found")
            short = code == ANSWER and rs.tokens <= LONG_ANSWER
            rs.found = best.answer_at is not None if short else rs.coverage >= th.suspicious_coverage
        out[name] = rs
    if "answer" not in out and len(p.answer_ids):  # the answer is one of the choices: found as answer_found says
        found = best is not None and bool(best.answer_found)
        out["answer"] = RoleScore(tokens=len(p.answer_ids), coverage=float(found), found=found)
    return {name: out[name] for name in SCORED_ROLES if name in out}


def shared_spans(text: str, other: str | Sequence[str]) -> list[tuple[int, int]]:
    """Character spans of `text` whose tokens align with `other` (a text, or pieces of text read
    as one) in blocks (merged); all of it if a piece holds it whole, word for word.

    Used to highlight, on the benchmark item's side, what the training text shares with it. A
    text held whole is marked whole: aligned, "his boots" against the choices "his telescope his
    boots his fiddle" took "his" from "his telescope", and a choice the page held was not marked
    (a new user's trial). Otherwise the alignment, which takes each run of `other` once and in
    order: marked by word pairs or runs found anywhere, every "of the river" of a passage lit up
    where the matched text held the phrase elsewhere (a review)."""
    toks = tokenize_spans(text)
    if not len(toks):
        return []
    mine = _ids(toks.tokens)
    each = [_ids(tokenize(piece)) for piece in ([other] if isinstance(other, str) else other)]
    if any(find_sequence(ids, mine) >= 0 for ids in each):
        hit = np.ones(len(mine), dtype=bool)
    else:  # the pieces apart: -1 between them (as a token hash, a 2**-64 chance), so no block runs across
        theirs = np.concatenate([x for ids in each for x in (ids, np.array([-1], dtype=ids.dtype))] or [mine[:0]])
        hit = align(mine, theirs, np.full(len(toks), len(toks) == 1, dtype=bool)).matched
    spans: list[tuple[int, int]] = []
    for i in np.flatnonzero(hit).tolist():
        s, e = int(toks.starts[i]), int(toks.ends[i])
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


def benchmark_stats(
    prepared: Sequence[PreparedItem],
    shared: SharedText,
    df: Mapping[int, int],
    n: int,
    th: Thresholds,
    short: bool = False,
) -> list[ItemStats]:
    """What the benchmark and the corpus say about each item before any document: n-gram
    frequencies, passages, boilerplate, and each token's information (app.core.surprise).
    df: documents per n-gram of either channel; short: the index has a short channel (the
    items were prepared with it)."""
    groups = shared.group.tolist()
    bits = token_bits([p.ids for p in prepared], [p.fields for p in prepared], groups)
    if not prepared:
        return []
    # each table is searched once for every item's grams: one call per item cost more than the
    # search (the tables are large, the calls many)
    sizes = np.cumsum([len(p.grams) for p in prepared])[:-1]
    msizes = np.cumsum([len(p.mgrams) for p in prepared])[:-1]
    grams = np.concatenate([p.grams for p in prepared])
    dfs = np.split(lookup(grams, df), sizes)
    freqs = np.split(shared.freq(grams), sizes)
    mfreqs = np.split(shared.mgrams.freq(np.concatenate([p.mgrams for p in prepared])), msizes)
    ssizes = np.cumsum([len(p.sgrams) for p in prepared])[:-1]
    sdfs: list[Any] = (
        np.split(lookup(np.concatenate([p.sgrams for p in prepared]), df), ssizes) if short else [None] * len(prepared)
    )
    return [
        item_stats(p, g, shared, d, n, th, b, f, mf, sd)
        for p, g, d, b, f, mf, sd in zip(prepared, groups, dfs, bits, freqs, mfreqs, sdfs, strict=True)
    ]


def judge(
    i: int,
    prepared: Sequence[PreparedItem],
    stats: Sequence[ItemStats],
    shared: SharedText,
    docs: Mapping[int, tuple[DocTokens, tuple[int, int] | None]],
    n: int,
    th: Thresholds,
    cache: MatchCache | None = None,
) -> tuple[ItemScore, list[tuple[DocMatch, Status]]]:
    """Item i against its candidate documents (document id -> tokens and the near-duplicate
    window that nominated it, if any): its score, and the documents best first, each with what
    it alone says of the item (verdict). cache: kept by the caller for the other items it
    judges against the same documents (matching.MatchCache)."""
    p = prepared[i]
    cache = MatchCache() if cache is None else cache
    matches = [
        match_document(i, prepared, stats[i], shared, d, doc, n, th, win, cache) for d, (doc, win) in docs.items()
    ]
    ranked = rank(p, matches, n, th, shared.stem_answer_tells(p), shared.passage_tells(p, stats[i].group))
    score = assess(p, stats[i], ranked, n, th)
    return score, [(m, status) for m, status, _reason in ranked]
