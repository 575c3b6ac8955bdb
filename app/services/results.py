"""What is kept of scanned items: each item's stored row, and a run's summary.

Both read an ItemResult through `as_dict()` and its score, so the shape of a stored item is
decided in one place (services.scanning) and only laid out here."""

from __future__ import annotations

from collections import Counter
from typing import Any

from contam.app.core.config import Thresholds
from contam.app.core.types import Status
from contam.app.services.scanning import ItemResult

LONGEST_EDGES = [0, 6, 13, 20, 30, 50, 100]  # tokens; 13 is GPT-3's rule, 6 the shortest partial match counted


def _share(k: int, n: int) -> float:
    return round(k / n, 4) if n else 0.0


def summarize(results: list[ItemResult], th: Thresholds) -> dict[str, Any]:
    """Counts per status; contaminated share overall, per field and per corpus; histograms."""
    counts = Counter(Status(r.score.status) for r in results)
    n = len(results)
    return {
        "items": n,
        "counts": {s.value: counts[s] for s in Status},
        "histograms": _histograms(results),
        "contaminated_share": _share(counts[Status.CONTAMINATED], n),
        "flagged_share": _share(sum(counts[s] for s in Status if s.flagged), n),
        "answer_with_question": sum(r.score.answer_with_question for r in results),
        "per_field": _per_field(results, th),
        "per_corpus": _per_corpus(results),
    }


def _histograms(results: list[ItemResult]) -> dict[str, Any]:
    """Own text found in the best document, in tenths, and the longest own run by LONGEST_EDGES
    (too-short items left out)."""
    cov_bins = [0] * 10
    longest_bins = [0] * len(LONGEST_EDGES)
    for r in results:
        if r.score.status == Status.TOO_SHORT:
            continue
        cov_bins[min(9, int(r.score.own_coverage * 10))] += 1
        longest_bins[max(i for i, e in enumerate(LONGEST_EDGES) if r.score.longest_match >= e)] += 1
    return {
        "own_coverage": {"edges": [round(i / 10, 1) for i in range(11)], "counts": cov_bins},
        "longest_match": {"edges": LONGEST_EDGES, "counts": longest_bins},
    }


def _per_field(results: list[ItemResult], th: Thresholds) -> dict[str, Any]:
    by_role: dict[str, Counter[str]] = {}
    for r in results:
        for role, rs in r.score.roles.items():
            c = by_role.setdefault(role, Counter())
            c["items"] += 1
            c["found"] += int(rs.found)
    return {
        role: {"items": c["items"], "found": c["found"], "found_share": _share(c["found"], c["items"])}
        for role, c in sorted(by_role.items())
    }


def _per_corpus(results: list[ItemResult]) -> dict[str, Any]:
    by_corpus: dict[str, Counter[Status]] = {}
    for r in results:
        for corpus in {e.corpus for e in r.evidence}:
            by_corpus.setdefault(corpus, Counter())[Status(r.score.status)] += 1
    n = len(results)
    return {
        name: {
            Status.CONTAMINATED.value: c[Status.CONTAMINATED],
            Status.SUSPICIOUS.value: c[Status.SUSPICIOUS],
            "contaminated_share": _share(c[Status.CONTAMINATED], n),
        }
        for name, c in sorted(by_corpus.items())
    }


def item_row(r: ItemResult, th: Thresholds) -> dict[str, Any]:
    """The stored row of one item: the columns the item list filters and sorts on, and `data`,
    the rest of its result (with the item's own text) for the store to keep as JSON."""
    d = r.as_dict()
    roles = [role for role, rs in r.score.roles.items() if rs.found]
    corpora = sorted({e.corpus for e in r.evidence})
    data = {k: v for k, v in d.items() if k not in ("item_id", "row", "status", "score")}
    data["item"] = {
        "question": r.item.question,
        "passage": r.item.passage,
        "choices": list(r.item.choices),
        "answer": r.item.answer,
    }
    return {
        "idx": r.item.row,
        "item_id": r.item.item_id,
        "status": r.score.status,
        "score": float(d["score"]),
        "text": r.item.display_text()[:4000],
        "roles_found": "," + ",".join(roles) + ",",
        "corpora_found": "," + ",".join(corpora) + ",",
        "data": data,
    }
