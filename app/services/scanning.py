"""Check benchmark items against indexed corpora: look-ups, near-duplicate candidates,
verification on bounded regions, scores and evidence."""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import zstandard
from rapidfuzz import fuzz
from sqlalchemy import Engine

from app.core.config import SignatureConfig, library_versions
from app.core.scoring import (
    SCORED_ROLES,
    ItemScore,
    PreparedItem,
    Segment,
    Thresholds,
    score_item,
    shared_hashes,
)
from app.core.signatures import (
    band_keys,
    ngram_hashes,
    rolling_hashes,
    to_signed,
    token_hashes,
    window_minhashes,
)
from app.core.text import Tokens, tokenize, tokenize_spans
from app.core.types import BenchmarkItem
from app.errors import FingerprintMismatch, NotFoundError
from app.readers.corpus import read_documents
from app.store import repo

EXCERPT_PAD = 200  # characters of context either side of a matched region


@dataclass
class ItemResult:
    item: BenchmarkItem
    score: ItemScore
    evidence: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        s = self.score
        return {
            "item_id": self.item.item_id,
            "row": self.item.row,
            "status": s.status,
            "reason": s.reason,
            "score": round(s.score, 4),
            "metrics": {
                "tokens": s.tokens,
                "ngram_overlap": round(s.ngram_overlap, 4),
                "coverage": round(s.coverage, 4),
                "best_doc_coverage": round(s.best_doc_coverage, 4),
                "longest_match": s.longest_match,
                "longest_match_share": round(s.longest_match_share, 4),
                "near_similarity": round(s.near_similarity, 4),
            },
            "question_found": s.question_found,
            "answer_found": s.answer_found,
            "answer_with_question": s.answer_with_question,
            "passage_found": s.passage_found,
            "fields": {role: rs.as_dict() for role, rs in s.roles.items()},
            "evidence": self.evidence,
        }


@dataclass
class _Doc:
    meta: dict[str, Any]
    text: str
    toks: Tokens
    hashes: np.ndarray  # signed n-gram hashes by position


class Scanner:
    """Scores items against one or more corpora indexed with one set of signature settings."""

    def __init__(self, engine: Engine, corpora: Sequence[str] | None = None,
                 thresholds: Thresholds | None = None, evidence_k: int = 3) -> None:
        self.engine = engine
        self.th = thresholds or Thresholds()
        self.k = evidence_k
        with engine.connect() as conn:
            rows = all_rows = repo.list_corpora(conn)
        if corpora:
            missing = sorted(set(corpora) - {r["name"] for r in rows})
            if missing:
                raise NotFoundError(f"no corpus named {', '.join(map(repr, missing))}")
            rows = [r for r in rows if r["name"] in set(corpora)]
        if not rows:
            raise NotFoundError("no corpus is indexed yet: run `contam index` first")
        prints = {r["fingerprint"] for r in rows}
        if len(prints) > 1:
            raise FingerprintMismatch(
                "the selected corpora were indexed with different signature settings "
                f"({', '.join(r['name'] + '=' + r['fingerprint'] for r in rows)}); check them separately"
            )
        self.corpora = rows
        self.cfg = SignatureConfig.from_dict(rows[0]["config"])
        here = SignatureConfig(**{**self.cfg.to_dict(), "libraries": library_versions(),
                                  "normalizer_version": SignatureConfig().normalizer_version,
                                  "hash_scheme": SignatureConfig().hash_scheme,
                                  "minhash_scheme": SignatureConfig().minhash_scheme})
        diffs = self.cfg.differences(here)
        if diffs:
            listing = "; ".join(f"{k}: index has {a!r}, this scorer has {b!r}" for k, (a, b) in diffs.items())
            raise FingerprintMismatch(
                f"corpus {rows[0]['name']!r} was indexed with settings this scorer cannot reproduce ({listing}); "
                "re-index it with this version", {k: list(v) for k, v in diffs.items()})
        self.fingerprint = rows[0]["fingerprint"]
        # no corpus filter (and no join) when every corpus is selected
        self.corpus_ids: list[int] | None = None if len(rows) == len(all_rows) else [int(r["id"]) for r in rows]
        self._docs: OrderedDict[int, _Doc] = OrderedDict()
        self._dctx = zstandard.ZstdDecompressor()

    # ------------------------------------------------------------ preparation

    def prepare(self, item: BenchmarkItem) -> PreparedItem:
        n = self.cfg.ngram_n
        segs = []
        for role in item.roles():
            for text in item.segments(role):
                toks = tokenize(text)
                segs.append(Segment(role, toks, to_signed(ngram_hashes(toks, n))))
        return PreparedItem(item, segs)

    # ------------------------------------------------------------ documents

    def _doc(self, conn: Any, doc_id: int, meta: dict[str, Any] | None = None) -> _Doc | None:
        if doc_id in self._docs:
            self._docs.move_to_end(doc_id)
            return self._docs[doc_id]
        if meta is None:
            meta = repo.documents_meta(conn, [doc_id]).get(doc_id)
            if meta is None:
                return None
        if meta["text"] is not None:
            text = self._dctx.decompress(meta["text"]).decode("utf-8", "surrogatepass")
        else:
            text = self._text_from_source(meta)
        toks = tokenize_spans(text)
        hashes = to_signed(rolling_hashes(token_hashes(toks.tokens), self.cfg.ngram_n))
        doc = _Doc({k: v for k, v in meta.items() if k != "text"}, text, toks, hashes)
        self._docs[doc_id] = doc
        if len(self._docs) > 512:
            self._docs.popitem(last=False)
        return doc

    @staticmethod
    def _text_from_source(meta: dict[str, Any]) -> str:
        """Text of a pointer-only document, re-read from its source file."""
        from collections import Counter

        path = Path(meta["source_file"])
        if not path.exists():
            return ""
        for d in read_documents(path, Counter()):
            if d.position == meta["position"]:
                return d.text
        return ""

    # ------------------------------------------------------------ scanning

    def scan(self, items: Sequence[BenchmarkItem],
             progress: Callable[[int, int], None] | None = None) -> list[ItemResult]:
        cfg, th = self.cfg, self.th
        prepared = [self.prepare(it) for it in items]
        shared = shared_hashes(prepared, th.template_min_items)
        all_hashes = {int(h) for p in prepared for s in p.segments for h in s.hashes} - shared
        if cfg.sample_mod > 1:
            all_hashes = {h for h in all_hashes if (h % (1 << 64)) % cfg.sample_mod == 0}
        near_keys = [self._near_keys(p) for p in prepared]
        with self.engine.connect() as conn:
            df = repo.ngram_df(conn, list(all_hashes), self.corpus_ids)
            rare = [h for h, c in df.items() if c <= th.max_df]
            postings = repo.ngram_postings(conn, rare, self.corpus_ids)
            hits = repo.band_hits(conn, sorted({k for ks in near_keys for k, _ in ks}), self.corpus_ids)
            results = []
            for i, p in enumerate(prepared):
                results.append(self._score_one(conn, p, df, postings, shared, near_keys[i], hits))
                if progress and (i % 200 == 0 or i == len(prepared) - 1):
                    progress(i + 1, len(prepared))
        return results

    def _near_keys(self, p: PreparedItem) -> list[tuple[int, int]]:
        """(band key, query window) of the item's scored text, windows at half the index stride."""
        toks = [t for s in p.segments if s.role in SCORED_ROLES for t in s.tokens]
        if len(toks) < self.cfg.shingle:
            return []
        th = token_hashes(toks)
        last = max(len(toks) - self.cfg.window, 0)
        step = max(1, self.cfg.stride // 2)
        starts = np.unique(np.append(np.arange(0, last + 1, step), last)).astype(np.int64)
        sigs = window_minhashes(th, self.cfg, starts)
        keys = band_keys(sigs, self.cfg)
        return [(int(k), int(w)) for w in range(len(starts)) for k in keys[w]]

    def _score_one(self, conn: Any, p: PreparedItem, df: dict[int, int], postings: dict[int, list[int]],
                   shared: set[int], keys: list[tuple[int, int]],
                   hits: dict[int, list[tuple[int, int]]]) -> ItemResult:
        th = self.th
        first = score_item(p, self.cfg.ngram_n, df, postings, shared, th)
        # near-channel candidates: windows sharing most bands with the item
        votes: dict[tuple[int, int], int] = defaultdict(int)
        for k, _w in keys:
            for dw in hits.get(k, ()):
                votes[dw] += 1
        near = sorted(votes.items(), key=lambda x: -x[1])[: self.k]
        candidates: dict[int, int | None] = {d: None for d, _c, _l in first.doc_ranking[: self.k]}
        for (d, w), _v in near:
            candidates.setdefault(d, w)
        if not candidates:
            return ItemResult(p.item, first)
        q_toks = [t for s in p.segments if s.role in SCORED_ROLES for t in s.tokens]
        found_set = {int(h) for s in p.segments for h in s.hashes if int(h) in postings}
        found = np.fromiter(found_set, dtype=np.int64, count=len(found_set))
        answer_toks = tokenize(p.item.answer) if p.item.answer else []
        metas = repo.documents_meta(conn, [d for d in candidates if d not in self._docs])
        evidence, sims, answer_in = [], {}, {}
        for d, win in candidates.items():
            doc = self._doc(conn, d, metas.get(d))
            if doc is None:
                continue
            ev = self._verify(doc, q_toks, found, win, answer_toks)
            sims[d] = ev["similarity"]
            answer_in[d] = ev.pop("_answer_in_region")
            ranked = next((x for x in first.doc_ranking if x[0] == d), None)
            ev["coverage"] = round(ranked[1], 4) if ranked else 0.0
            ev["longest_match"] = ranked[2] if ranked else 0
            evidence.append(ev)
        best_sim = max(sims.values(), default=0.0)
        final = score_item(p, self.cfg.ngram_n, df, postings, shared, th, answer_in, best_sim)
        evidence.sort(key=lambda e: (-e["coverage"], -e["similarity"]))
        return ItemResult(p.item, final, evidence[: self.k])

    def _verify(self, doc: _Doc, q_toks: list[str], found: np.ndarray, win: int | None,
                answer_toks: list[str]) -> dict[str, Any]:
        """Align the item with a bounded region of the document (never the whole document)."""
        n, L = self.cfg.ngram_n, len(q_toks)
        T = len(doc.toks)
        matched = np.flatnonzero(np.isin(doc.hashes, found)) if len(found) and len(doc.hashes) \
            else np.empty(0, dtype=np.int64)
        if len(matched):
            # the densest cluster: most matched positions inside a span of 2 item lengths
            span = 2 * max(L, n)
            ends = np.searchsorted(matched, matched + span, side="right")
            best = int(np.argmax(ends - np.arange(len(matched))))
            lo, hi = int(matched[best]), int(matched[ends[best] - 1]) + n
        elif win is not None:
            lo = win * self.cfg.stride
            hi = min(T, lo + self.cfg.window)
        else:
            lo, hi = 0, min(T, L)
        pad = max(L // 2, 8)
        # The region must hold the whole item: partial_ratio aligns the shorter string inside the
        # longer one, so a region shorter than the item would be "found" inside the item instead.
        want = L + 2 * pad
        r_lo, r_hi = max(0, lo - pad), min(T, hi + pad)
        if r_hi - r_lo < want:
            grow = want - (r_hi - r_lo)
            r_lo = max(0, r_lo - grow // 2)
            r_hi = min(T, r_lo + want)
            r_lo = max(0, r_hi - want)
        region = doc.toks.tokens[r_lo:r_hi]
        sim = 0.0
        if region and q_toks:
            a, b = " ".join(q_toks), " ".join(region)
            # needle in a bounded haystack; a document shorter than the item is compared whole
            sim = (fuzz.partial_ratio(a, b) if len(b) >= len(a) else fuzz.ratio(a, b)) / 100.0
        answer_in = False
        if answer_toks and len(answer_toks) <= len(region):
            m = len(answer_toks)
            answer_in = any(region[i : i + m] == answer_toks for i in range(len(region) - m + 1))
        # evidence: the matched region of the original text, matched tokens highlighted
        c_lo = doc.toks.starts[lo] if lo < T else len(doc.text)
        c_hi = doc.toks.ends[min(hi, T) - 1] if T and hi > 0 else c_lo
        x_lo, x_hi = max(0, c_lo - EXCERPT_PAD), min(len(doc.text), c_hi + EXCERPT_PAD)
        spans: list[list[int]] = []
        for pos in matched.tolist():
            if pos < lo or pos > hi:
                continue
            s, e = doc.toks.starts[pos] - x_lo, doc.toks.ends[min(pos + n, T) - 1] - x_lo
            if spans and s <= spans[-1][1]:
                spans[-1][1] = max(spans[-1][1], e)
            else:
                spans.append([s, e])
        meta = doc.meta
        return {
            "corpus": meta["corpus"],
            "document_id": meta["external_id"],
            "document": int(meta["id"]),
            "source_file": meta["source_file"],
            "position": int(meta["position"]),
            "char_start": int(c_lo),
            "char_end": int(c_hi),
            "excerpt_start": int(x_lo),
            "excerpt": doc.text[x_lo:x_hi],
            "highlights": spans,
            "similarity": round(sim, 4),
            "near_window": win,
            "_answer_in_region": answer_in,
        }
