"""Item-centric contamination scoring (pure: no database; look-up results come in as values).

For every item and role (question / passage / choices / answer), n-grams are taken inside each
text segment only (never across fields or choices, DESIGN.md item 4). Each n-gram position is:
  shared    - occurs in >= template_min_items items of the same benchmark (template text or a
              passage shared by siblings): left out of the scores and counted separately;
  common    - in more than max_df corpus documents (boilerplate, GPT-3's rule), or low in
              information (fewer than half of its tokens are words of 2+ characters or CJK, as in
              `a^3+b^3+c^3`: maths identities recur everywhere): left out and counted;
  eligible  - everything else; found if some selected document contains it.
Metrics (DESIGN.md item 5), over the item's scored roles (question, choices, answer; a
reading passage is reported but does not decide the status):
  ngram_overlap       found eligible n-grams / eligible n-grams
  coverage            eligible tokens inside some found n-gram / eligible tokens (Llama 2)
  best_doc_coverage   the same, counting only one document's n-grams: the best document
  longest_match       longest run of tokens matched contiguously in one document
Status, with defaults from published rules (all overridable, see Thresholds):
  too_short     no eligible n-gram: fewer than n tokens. An item whose n-grams are all shared
                with other items is scored on the shared text instead, capped at suspicious
                (the match may belong to its sibling); so is an item whose own n-grams are
                under a quarter of all its n-grams.
  contaminated  best_doc_coverage >= 0.8 (Llama 2's "dirty" bound), or the question found
                (>= 0.8) together with its answer in the same document
  suspicious    best_doc_coverage >= 0.2 (Llama 2's "clean" bound) or longest_match >= 13
                tokens (GPT-3's 13-gram rule) or a verified near-duplicate region with
                similarity >= 0.75 (rapidfuzz partial_ratio of the item inside a region that
                holds all of it: chance alignments of unrelated text score well below)
  clean         otherwise
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.core.types import BenchmarkItem

SCORED_ROLES = ("question", "choices", "answer")


@dataclass(frozen=True)
class Thresholds:
    contaminated_coverage: float = 0.8  # Llama 2 (Touvron et al. 2023): > 80% token coverage is dirty
    suspicious_coverage: float = 0.2  # Llama 2: < 20% token coverage is clean
    longest_match: int = 13  # GPT-3 (Brown et al. 2020): any shared 13-gram
    near_similarity: float = 0.75  # rapidfuzz partial_ratio / 100, item inside a region that holds all of it
    max_df: int = 10  # GPT-3: n-grams in more than ~10 documents are boilerplate
    template_min_items: int = 2  # an n-gram in this many items of the benchmark is shared text

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Segment:
    """One text segment's tokens and n-gram hashes (int64, one per position)."""

    role: str
    tokens: list[str]
    hashes: np.ndarray
    weak: np.ndarray | None = None  # per position: low-information n-gram

    def __post_init__(self) -> None:
        if self.weak is None:
            self.weak = weak_ngrams(self.tokens, len(self.hashes))


def weak_ngrams(tokens: Sequence[str], m: int) -> np.ndarray:
    """Per n-gram position: fewer than half of its tokens are informative (2+ chars or non-ASCII)."""
    if m <= 0:
        return np.zeros(0, dtype=bool)
    n = len(tokens) - m + 1
    info = np.fromiter((len(t) >= 2 or not t.isascii() for t in tokens), dtype=np.int32, count=len(tokens))
    counts = np.convolve(info, np.ones(n, dtype=np.int32), mode="valid")[:m]
    return counts * 2 < n


@dataclass
class PreparedItem:
    item: BenchmarkItem
    segments: list[Segment]


@dataclass
class RoleScore:
    tokens: int = 0
    ngrams: int = 0
    eligible_ngrams: int = 0
    found_ngrams: int = 0
    shared_ngrams: int = 0
    common_ngrams: int = 0
    eligible_tokens: int = 0
    covered_tokens: int = 0
    best_doc_covered: int = 0
    longest_match: int = 0

    @property
    def coverage(self) -> float:
        return self.covered_tokens / self.eligible_tokens if self.eligible_tokens else 0.0

    @property
    def best_doc_coverage(self) -> float:
        return self.best_doc_covered / self.eligible_tokens if self.eligible_tokens else 0.0

    def found(self, th: Thresholds) -> bool:
        """The field counts as found in the corpus under the same rules as an item's status."""
        return self.best_doc_coverage >= th.suspicious_coverage or self.longest_match >= th.longest_match

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["coverage"] = round(self.coverage, 4)
        d["best_doc_coverage"] = round(self.best_doc_coverage, 4)
        return d


@dataclass
class ItemScore:
    status: str
    reason: str
    tokens: int
    ngram_overlap: float
    coverage: float
    best_doc: int | None
    best_doc_coverage: float
    longest_match: int
    longest_match_share: float
    question_found: bool
    answer_found: bool | None  # None: no answer field
    answer_with_question: bool
    passage_found: bool
    near_similarity: float = 0.0
    roles: dict[str, RoleScore] = field(default_factory=dict)
    doc_ranking: list[tuple[int, float, int]] = field(default_factory=list)  # (doc, coverage, longest)

    @property
    def score(self) -> float:
        return max(self.best_doc_coverage, self.near_similarity if self.status != "too_short" else 0.0)


def covered(mask: np.ndarray, n: int, length: int) -> np.ndarray:
    """Token mask: token i is covered if some n-gram starting in [i-n+1, i] is in `mask`."""
    if length == 0:
        return np.zeros(0, dtype=bool)
    if len(mask) == 0:
        return np.zeros(length, dtype=bool)
    return np.convolve(mask.astype(np.int32), np.ones(n, dtype=np.int32))[:length] > 0


def longest_run(mask: np.ndarray) -> int:
    """Length of the longest run of True values."""
    if not mask.any():
        return 0
    padded = np.concatenate(([0], mask.astype(np.int8), [0]))
    edges = np.flatnonzero(np.diff(padded))
    return int((edges[1::2] - edges[0::2]).max())


def shared_hashes(items: Sequence[PreparedItem], min_items: int) -> set[int]:
    """n-gram hashes that occur in at least `min_items` different items (template text)."""
    if min_items <= 1:
        return set()
    seen: dict[int, int] = defaultdict(int)
    for it in items:
        for h in {int(x) for s in it.segments for x in s.hashes}:
            seen[h] += 1
    return {h for h, c in seen.items() if c >= min_items}


def score_item(
    prepared: PreparedItem,
    n: int,
    df: Mapping[int, int],
    postings: Mapping[int, Sequence[int]],
    shared: set[int],
    th: Thresholds,
    answer_in_doc: Mapping[int, bool] | None = None,
    near_similarity: float = 0.0,
) -> ItemScore:
    """Score one item (see the module doc); falls back to shared text, capped at suspicious."""
    own = _score(prepared, n, df, postings, shared, th, answer_in_doc, near_similarity)
    all_ngrams = sum(r.ngrams for k, r in own.roles.items() if k in SCORED_ROLES)
    own_ngrams = sum(r.eligible_ngrams + r.common_ngrams for k, r in own.roles.items() if k in SCORED_ROLES)
    mostly_shared = all_ngrams > 0 and own_ngrams * 4 < all_ngrams
    if not mostly_shared:
        return own
    fallback = _score(prepared, n, df, postings, set(), th, answer_in_doc, near_similarity)
    best = fallback if own.status == "too_short" else own
    if best.status == "contaminated" or (best is fallback and best.status == "suspicious"):
        best.status = "suspicious"
        best.reason = (f"{best.reason}, but most of the item's text is shared with other items of the "
                       "benchmark, so the match may belong to one of them")
    elif best is fallback and best.status in ("clean", "too_short"):
        best.reason = "only text shared with other items of the benchmark; " + best.reason
    return best


def _score(
    prepared: PreparedItem,
    n: int,
    df: Mapping[int, int],
    postings: Mapping[int, Sequence[int]],
    shared: set[int],
    th: Thresholds,
    answer_in_doc: Mapping[int, bool] | None = None,
    near_similarity: float = 0.0,
) -> ItemScore:
    """Score one item from look-up results.

    df: hash -> number of corpus documents holding it (absent: not found).
    postings: hash -> documents holding it (given for hashes with df <= max_df).
    answer_in_doc: document -> whether the item's answer text occurs near the question there
        (checked by the caller on the document text; used for short answers).
    """
    roles: dict[str, RoleScore] = {}
    per_doc_cov: dict[int, int] = defaultdict(int)  # scored roles: tokens covered by one doc
    per_doc_role: dict[tuple[int, str], int] = defaultdict(int)
    per_doc_longest: dict[int, int] = defaultdict(int)
    widespread_covered = 0
    for seg in prepared.segments:
        rs = roles.setdefault(seg.role, RoleScore())
        L, m = len(seg.tokens), len(seg.hashes)
        rs.tokens += L
        rs.ngrams += m
        if m == 0:
            continue
        hs = seg.hashes.tolist()
        is_shared = np.array([h in shared for h in hs], dtype=bool)
        dfs = np.array([df.get(h, 0) for h in hs], dtype=np.int64)
        assert seg.weak is not None
        is_common = ((dfs > th.max_df) | seg.weak) & ~is_shared
        eligible = ~is_shared & ~is_common
        found = eligible & (dfs > 0)
        rs.shared_ngrams += int(is_shared.sum())
        rs.common_ngrams += int(is_common.sum())
        rs.eligible_ngrams += int(eligible.sum())
        rs.found_ngrams += int(found.sum())
        rs.eligible_tokens += int(covered(eligible, n, L).sum())
        rs.covered_tokens += int(covered(found, n, L).sum())
        if seg.role in SCORED_ROLES:
            widespread_covered += int(covered((dfs > 0) & ~is_shared & ~seg.weak, n, L).sum())
        docs_here: dict[int, list[int]] = defaultdict(list)
        for pos in np.flatnonzero(found).tolist():
            for d in postings.get(hs[pos], ()):
                docs_here[d].append(pos)
        for d, positions in docs_here.items():
            mask = np.zeros(m, dtype=bool)
            mask[positions] = True
            c = int(covered(mask, n, L).sum())
            per_doc_role[(d, seg.role)] += c
            if seg.role in SCORED_ROLES:
                per_doc_cov[d] += c
                per_doc_longest[d] = max(per_doc_longest[d], longest_run(mask) + n - 1)
    for (d, role), c in per_doc_role.items():
        rs = roles[role]
        rs.best_doc_covered = max(rs.best_doc_covered, c)
        if role in SCORED_ROLES:
            rs.longest_match = max(rs.longest_match, per_doc_longest[d])

    scored = [roles[r] for r in SCORED_ROLES if r in roles]
    eligible_tokens = sum(r.eligible_tokens for r in scored)
    total_tokens = sum(r.tokens for r in scored)
    eligible_ngrams = sum(r.eligible_ngrams for r in scored)
    ranking = sorted(
        ((d, per_doc_cov[d] / eligible_tokens if eligible_tokens else 0.0, per_doc_longest[d]) for d in per_doc_cov),
        key=lambda x: (-x[1], -x[2], x[0]),
    )
    best_doc, best_cov, longest = (ranking[0] if ranking else (None, 0.0, 0))
    q = roles.get("question")
    q_cov = q.best_doc_coverage if q and q.eligible_tokens else best_cov
    question_found = q_cov >= th.suspicious_coverage or (q is not None and q.longest_match >= th.longest_match)
    a = roles.get("answer")
    answer_found: bool | None = None
    answer_with_question = False
    if prepared.item.answer:
        # answer n-grams in the question's best document, or (short answers) the caller's check
        if a is not None and a.eligible_tokens:
            answer_found = a.coverage >= 0.5
            if best_doc is not None:
                answer_with_question = per_doc_role.get((best_doc, "answer"), 0) / a.eligible_tokens >= 0.5
        if answer_in_doc and best_doc is not None and answer_in_doc.get(best_doc):
            answer_found = True
            answer_with_question = True
        answer_found = bool(answer_found)
        answer_with_question = answer_with_question and question_found
    passage = roles.get("passage")
    passage_found = bool(passage and passage.coverage >= th.suspicious_coverage)
    coverage = sum(r.covered_tokens for r in scored) / eligible_tokens if eligible_tokens else 0.0
    overlap = sum(r.found_ngrams for r in scored) / eligible_ngrams if eligible_ngrams else 0.0
    widespread = total_tokens > 0 and widespread_covered / max(total_tokens, 1) >= th.contaminated_coverage

    if eligible_ngrams == 0 and not widespread:
        status = "too_short"
        if total_tokens < n:
            reason = f"{total_tokens} tokens: fewer than n={n}, so no n-gram can be checked"
        else:
            reason = "no n-gram of its own: all are shared with other items or too common to count"
    elif best_cov >= th.contaminated_coverage:
        status, reason = "contaminated", f"one document covers {best_cov:.0%} of the item"
    elif widespread:
        status, reason = "contaminated", "the item's n-grams are in many documents (widespread copy)"
    elif q_cov >= th.contaminated_coverage and answer_with_question:
        status, reason = "contaminated", "question and answer found together in one document"
    elif best_cov >= th.suspicious_coverage:
        status, reason = "suspicious", f"one document covers {best_cov:.0%} of the item"
    elif longest >= th.longest_match:
        status, reason = "suspicious", f"a {longest}-token run matches one document"
    elif near_similarity >= th.near_similarity:
        status, reason = "suspicious", f"near-duplicate region, similarity {near_similarity:.2f}"
    else:
        status, reason = "clean", "no substantial overlap found"
    return ItemScore(
        status=status,
        reason=reason,
        tokens=total_tokens,
        ngram_overlap=overlap,
        coverage=coverage,
        best_doc=best_doc,
        best_doc_coverage=best_cov,
        longest_match=longest,
        longest_match_share=min(1.0, longest / total_tokens) if total_tokens else 0.0,
        question_found=question_found,
        answer_found=answer_found,
        answer_with_question=answer_with_question,
        passage_found=passage_found,
        near_similarity=near_similarity,
        roles=roles,
        doc_ranking=ranking,
    )


def shared_spans(text: str, other: str, n: int) -> list[tuple[int, int]]:
    """Character spans of `text` covered by word n-grams that also occur in `other` (merged).

    Used to highlight, on the benchmark item's side, what the training text shares with it.
    """
    from app.core.signatures import ngram_hashes
    from app.core.text import tokenize, tokenize_spans

    toks = tokenize_spans(text)
    ha = ngram_hashes(toks.tokens, n)
    hb = ngram_hashes(tokenize(other), n)
    if len(ha) == 0 or len(hb) == 0:
        return []
    mask = covered(np.isin(ha, hb), n, len(toks))
    spans: list[tuple[int, int]] = []
    for i in np.flatnonzero(mask).tolist():
        s, e = toks.starts[i], toks.ends[i]
        if spans and s - spans[-1][1] <= 3 and not text[spans[-1][1] : s].strip(" \t,.;:!?\"'()[]*_-"):
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
