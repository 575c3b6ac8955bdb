"""What is kept of scanned items: each item's stored row, and a run's summary.

Both read an ItemResult through `as_dict()` and its score, so the shape of a stored item is
decided in one place (services.scanning) and only laid out here."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from contam.app.core.config import Thresholds
from contam.app.core.text import natural_key, search_folded
from contam.app.core.types import SEVERITY, Status
from contam.app.services.scanning import ItemResult
from contam.app.store.reports import listed

LONGEST_EDGES = [0, 6, 13, 20, 30, 50, 100]  # tokens; 13 is GPT-3's rule, 6 the shortest partial match counted

SHOWN_CHARS = 4000  # of an item's text, kept with its result: the list's snippet, the CSV's text column


def _share(k: int, n: int) -> float:
    return round(k / n, 4) if n else 0.0


def summarize(results: list[ItemResult], th: Thresholds, corpora: Sequence[str] = ()) -> dict[str, Any]:
    """Counts per status; contaminated share overall, per field (and the passage field, found as
    `passage_found` says) and per corpus (every corpus of `corpora`, those that hold nothing of the
    benchmark too); histograms."""
    return Summary(corpora).add(results).as_dict()


class Summary:
    """summarize(), built a chunk of results at a time (nothing of an item is kept)."""

    def __init__(self, corpora: Sequence[str] = ()) -> None:
        """corpora: the corpora scanned, each listed per corpus even where it holds nothing."""
        self.n = 0
        self.counts: Counter[Status] = Counter()
        self.cov_bins = [0] * 10
        self.longest_bins = [0] * len(LONGEST_EDGES)
        self.answer_with_question = 0
        self.by_role: dict[str, Counter[str]] = {}
        self.by_corpus: dict[str, Counter[Status]] = {name: Counter() for name in corpora}

    def add(self, results: list[ItemResult]) -> Summary:
        for r in results:
            status = Status(r.score.status)
            self.n += 1
            self.counts[status] += 1
            self.answer_with_question += r.score.answer_with_question
            if status != Status.TOO_SHORT:  # histograms: own text found in tenths, the longest own run
                self.cov_bins[min(9, int(r.score.score * 10))] += 1  # a widely copied item's: the corpora's
                self.longest_bins[max(i for i, e in enumerate(LONGEST_EDGES) if r.score.longest_match >= e)] += 1
            for role, rs in r.score.roles.items():
                c = self.by_role.setdefault(role, Counter())
                c["items"] += 1
                c["found"] += int(rs.found)
            if r.item.passage:  # a passage field is looked for apart (passage_found), never scored
                c = self.by_role.setdefault("passage", Counter())
                c["items"] += 1
                c["found"] += int(r.score.passage_found)
            for corpus, said in _per_corpus(r, status).items():
                self.by_corpus.setdefault(corpus, Counter())[said] += 1
        return self

    def as_dict(self) -> dict[str, Any]:
        counts, n = self.counts, self.n
        return {
            "items": n,
            "counts": {s.value: counts[s] for s in Status},
            "histograms": {
                "own_coverage": {"edges": [round(i / 10, 1) for i in range(11)], "counts": list(self.cov_bins)},
                "longest_match": {"edges": LONGEST_EDGES, "counts": list(self.longest_bins)},
            },
            "contaminated_share": _share(counts[Status.CONTAMINATED], n),
            "flagged_share": _share(sum(counts[s] for s in Status if s.flagged), n),
            "answer_with_question": self.answer_with_question,
            "per_field": {
                role: {"items": c["items"], "found": c["found"], "found_share": _share(c["found"], c["items"])}
                for role, c in sorted(self.by_role.items())
            },
            "per_corpus": {
                name: {
                    Status.CONTAMINATED.value: c[Status.CONTAMINATED],
                    Status.SUSPICIOUS.value: c[Status.SUSPICIOUS],
                    "contaminated_share": _share(c[Status.CONTAMINATED], n),
                }
                for name, c in sorted(self.by_corpus.items())
            },
        }


def _per_corpus(r: ItemResult, status: Status) -> dict[str, Status]:
    """What each corpus holding evidence of the item says of it: the most severe verdict of its
    own documents (a five-word phrase in one corpus is not that corpus's contamination because
    another corpus holds the whole item). An item flagged by no single document (its own text
    in more documents than max_df: a widely copied item) is that status in each of them. No
    corpus says more than the item's own status: a too_short item's document that holds all of
    it counted the item contaminated in its corpus, and the corpus's share passed the report's."""
    said: dict[str, Status] = {}
    for e in r.evidence:
        verdict = Status(e.status) if SEVERITY[Status(e.status)] <= SEVERITY[status] else status
        if e.corpus not in said or SEVERITY[verdict] > SEVERITY[said[e.corpus]]:
            said[e.corpus] = verdict
    if status.flagged and not any(v.flagged for v in said.values()):
        return dict.fromkeys(said, status)
    return said


def item_row(r: ItemResult, th: Thresholds) -> dict[str, Any]:
    """The stored row of one item: the columns the item list filters and sorts on, and `data`,
    the rest of its result (with the item's own text) for the store to keep as JSON."""
    d = r.as_dict()
    roles = [role for role, rs in r.score.roles.items() if rs.found] + (["passage"] if r.score.passage_found else [])
    corpora = sorted({e.corpus for e in r.evidence})
    data = {k: v for k, v in d.items() if k not in ("item_id", "row", "status", "score")}
    data["item"] = {
        "question": r.item.question,
        "passage": r.item.passage,
        "choices": list(r.item.choices),
        "answer": r.item.answer,
        "solution": r.item.solution,
    }
    return {
        "idx": r.item.row,
        "item_id": r.item.item_id,
        "id_order": natural_key(r.item.item_id),
        "status": r.score.status,
        "score": float(d["score"]),
        "text": (shown := r.item.display_text())[:SHOWN_CHARS],
        "search": search_folded(shown),
        "roles_found": listed(roles),
        "corpora_found": listed(corpora),
        "data": data,
    }
