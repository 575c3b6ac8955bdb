"""Check benchmark items against indexed corpora: look-ups, candidate documents, token
alignment on bounded regions, scores and evidence (the maths is in app.core.scoring)."""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import itertools
import multiprocessing
import os
import pickle
import shutil
import tempfile
import threading
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import zstandard
from sqlalchemy import Engine

from contam.app.core.align import covered, runs
from contam.app.core.arrays import (
    Postings,
    Votes,
    candidate_votes,
    distinct,
    held_counts,
    member,
    share,
    top_k,
)
from contam.app.core.config import Thresholds, index_settings
from contam.app.core.items import (
    QUESTION,
    ItemStats,
    PreparedItem,
    SharedText,
    _GramTable,
    item_stats,
    lookup,
    prepare,
)
from contam.app.core.matching import DocMatch, DocTokens, MatchCache, passage_place
from contam.app.core.scoring import WIDESPREAD, ItemScore, judge, widespread_grams
from contam.app.core.signatures import band_keys, text_hashes, token_hash_spans, window_minhashes, window_span
from contam.app.core.surprise import flat_bits
from contam.app.core.text import without_surrogates
from contam.app.core.types import BenchmarkItem, Status
from contam.app.errors import ContamError, FingerprintMismatch, IncompatibleIndex, NotFoundError, StateError
from contam.app.processes import exit_with, quiet_on_interrupt, temp_prefix
from contam.app.readers.corpus import read_documents
from contam.app.services.corpora import no_corpus
from contam.app.services.database import retrying
from contam.app.store import repo
from contam.app.store.db import make_engine

EXCERPT_PAD = 200  # characters of context either side of a matched region
PASSAGE_SHOWN = 150  # tokens either side of the item's matched text within which its passage's copy is highlighted
MIN_GRAMS = 2  # rare n-grams a document must share with an item to be aligned with it
CANDIDATES = 4  # documents aligned per item from the exact channel (most shared n-grams, rarest first)
NEAR_CANDIDATES = 2  # and from the near-duplicate channel (most band keys in common)
# votes are sums of 1/f: 1 + 1/2 + 1/6 and 1/6 + 1/2 + 1 differ in the last bit, and a tie between
# them was decided by that bit, not by scanning.content_key (a review)
VOTE_DIGITS = 9
# tokenised documents kept between items, by the bytes they take (about 60 per token: text, spans,
# ids and gram tables): a count of documents bounded nothing, 4,096 web pages of 5,000 tokens
# being over a GB in every scan worker
DOC_CACHE_BYTES = 48 << 20
CHUNK = 500  # items scored together: their documents are loaded in one go
WORKER_NICENESS = 5  # scan worker processes yield the CPU to the serving process


@dataclass(frozen=True)
class Evidence:
    """One training document an item was found in: where, and the matched text."""

    corpus: str
    document_id: str  # the document's id in its source file
    document: int  # the index's own document id
    source_file: str
    position: int  # line or row in the source file
    char_start: int  # the matched region, in the document's characters
    char_end: int
    excerpt_start: int  # where `excerpt` starts in the document
    excerpt: str  # the matched region with EXCERPT_PAD characters either side
    highlights: list[list[int]]  # [start, end) spans of `excerpt` that match the item
    own_coverage: float  # share of the item's own text this document holds
    coverage: float  # share of all the item's tokens it holds
    longest_match: int  # longest run of own tokens held contiguously
    near_window: int | None  # the near-duplicate window that nominated it, if that channel did
    # what this document alone says of the item (scoring.verdict): the item's status is its best
    # document's, and a summary per corpus takes each corpus's own documents' word for it
    status: str = Status.CLEAN.value
    document_chars: int = 0  # the document's length in characters (0: not known, a report made before it was kept)

    def as_dict(self) -> dict[str, Any]:
        """What dataclasses.asdict gives, made directly: asdict copies each value recursively
        (1.5% of a 10,000-item scan, in the one process that writes the report at the end)."""
        out = dict(self.__dict__)
        out["highlights"] = [list(span) for span in self.highlights]
        return out


@dataclass
class ItemResult:
    """An item's result: the one record every transport and the store read, and its one
    serialisation, `as_dict()`."""

    item: BenchmarkItem
    score: ItemScore
    evidence: list[Evidence] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        s = self.score
        return {
            "item_id": self.item.item_id,
            "row": self.item.row,
            "status": str(s.status),
            "reason": s.reason,
            "score": round(s.score, 4),
            "metrics": {
                "tokens": s.tokens,
                "own_tokens": s.own_tokens,
                "own_coverage": round(s.own_coverage, 4),
                "coverage": round(s.coverage, 4),
                # the tokens coverage counts: a worked solution the document does not give is left out
                # ("100% of 51 tokens" read as the solution found too: a trial)
                "counted_tokens": s.tokens if s.counted_tokens is None else s.counted_tokens,
                "longest_match": s.longest_match,
                "longest_match_share": round(s.longest_match_share, 4),
                "ngram_overlap": round(s.ngram_overlap, 4),
                "own_bits": round(s.own_bits, 1),
                "matched_bits": round(s.matched_bits, 1),
                "item_bits": round(s.bits_total, 1),
                "shared_match": s.shared_match,
                "shared_items": s.shared_items,
            },
            "question_found": s.question_found,
            "answer_found": s.answer_found,
            "answer_with_question": s.answer_with_question,
            "passage_found": s.passage_found,
            "fields": {role: rs.as_dict() for role, rs in s.roles.items()},
            "evidence": [e.as_dict() for e in self.evidence],
        }


@dataclass
class _Doc:
    meta: dict[str, Any]
    text: str
    starts: np.ndarray  # character span of each token
    ends: np.ndarray
    tokens: DocTokens

    @property
    def nbytes(self) -> int:
        return len(self.text) + self.starts.nbytes + self.ends.nbytes + self.tokens.nbytes


def content_key(meta: Mapping[str, Any]) -> tuple[Any, ...]:
    """What orders equally good documents: what they are, not their ids, which say in what order
    they were indexed (the Ray executor's workers number the same documents in another order
    than the local executor, and a tie broken by the lower id gave another fourth candidate, or
    best document, to 131 of the evaluation set's 10,988 items, their metrics, and another
    evidence order to 662; statuses equal). The shorter document first (the same evidence in
    less text: the local executor's order lost no copy of the evaluation set this way, where the
    text hash first lost two navigate copies, which tie with pages of their frame), then its
    text, corpus, name, file and place."""
    m = meta
    return (m["n_tokens"], m["text_hash"], m["corpus"], m["external_id"], m["source_file"], m["position"])


@dataclass
class _Nominees:
    """An item's candidate documents before ties are broken (arrays.top_k per channel: those
    surely chosen and those tied for the places left): the n-gram votes' CANDIDATES, the
    question's one, and the near-duplicate channel's NEAR_CANDIDATES (document << 32 | window)."""

    exact: tuple[np.ndarray, np.ndarray]
    asked: tuple[np.ndarray, np.ndarray]
    near: tuple[np.ndarray, np.ndarray]

    def tied(self) -> set[int]:
        """The documents whose order by content_key decides which are chosen: those tied for
        fewer places than they are (where all fit, all are taken)."""
        ties = ((self.exact, CANDIDATES, 0), (self.asked, 1, 0), (self.near, NEAR_CANDIDATES, 32))
        return {d for nominees, k, shift in ties for d in (_over(nominees, k) >> shift).tolist()}

    def choose(self, keys: Mapping[int, tuple[Any, ...]]) -> dict[int, int | None]:
        """Document -> the window that nominated it (None: the exact channel's), ties broken by
        `keys` (content_key of every tied document)."""
        out: dict[int, int | None] = dict.fromkeys(_broken(self.exact, CANDIDATES, keys.__getitem__))
        for d in _broken(self.asked, 1, keys.__getitem__):
            out.setdefault(d, None)
        for dw in _broken(self.near, NEAR_CANDIDATES, lambda dw: (keys[dw >> 32], dw & 0xFFFFFFFF)):
            out.setdefault(dw >> 32, dw & 0xFFFFFFFF)
        return out


def by_votes(docs: np.ndarray, votes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """arrays.top_k of documents by their votes, taken to VOTE_DIGITS places."""
    return top_k(docs, np.round(votes, VOTE_DIGITS), k)


def _over(nominees: tuple[np.ndarray, np.ndarray], k: int) -> np.ndarray:
    """The tied ones, where they are more than the places left (else none: all are taken)."""
    sure, tied = nominees
    return tied if len(tied) > k - len(sure) else tied[:0]


def _broken(nominees: tuple[np.ndarray, np.ndarray], k: int, key: Callable[[int], Any]) -> list[int]:
    sure, tied = nominees
    if not len(_over(nominees, k)):  # room for all: nothing to break (their keys were not read)
        return [*sure.tolist(), *tied.tolist()]
    return [*sure.tolist(), *sorted(tied.tolist(), key=key)[: k - len(sure)]]


class Scanner:
    """Scores items against one or more corpora indexed with one set of signature settings."""

    def __init__(
        self,
        engine: Engine,
        corpora: Sequence[str] | None = None,
        thresholds: Thresholds | None = None,
        evidence_k: int = 3,
        workers: int = 1,
        listing: list[dict[str, Any]] | None = None,
        shared_docs: SharedDocs | None = None,
        retry_seconds: float = 0.0,
    ) -> None:
        """workers: processes that score a benchmark's chunks (0: one per core). listing: every
        corpus as repo.list_corpora gives it, if the caller has just read it (it is read here
        otherwise). shared_docs: tokenised documents kept across scanners (the API's /check
        builds a scanner per request), in place of this scanner's own cache. retry_seconds: how
        long a chunk's reads are tried again while the database cannot be reached (a report job's
        CONTAM_JOB_RETRY_SECONDS; 0: an UnavailableError at once, naming what was being read)."""
        self.engine = engine
        self.retry_seconds = retry_seconds
        self.th = thresholds or Thresholds()
        self.k = evidence_k
        self.workers = workers or len(os.sched_getaffinity(0))  # the cores this process may use
        if listing is None:
            with engine.connect() as conn:
                listing = repo.list_corpora(conn)
        rows = listing
        if corpora:
            missing = sorted(set(corpora) - {r["name"] for r in rows})
            if missing:
                raise no_corpus(missing, [r["name"] for r in rows])
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
        self.corpus_names = [r["name"] for r in rows]  # every corpus the scan reads, for its summary
        self.cfg, diffs = index_settings(rows[0]["config"])
        if diffs:
            raise _irreproducible([r["name"] for r in rows], diffs)
        self.fingerprint = rows[0]["fingerprint"]
        # the corpora read are those of this listing, even when it is every one: a corpus indexed
        # while the scan runs is none of them (unfiltered, its copies came into a scan of another)
        self.corpus_ids: list[int] = [int(r["id"]) for r in rows]
        self._docs: OrderedDict[int, _Doc] = OrderedDict()
        self._cached = 0  # bytes the cached documents take
        self._dctx = zstandard.ZstdDecompressor()
        self._shared = shared_docs

    # ------------------------------------------------------------ documents

    def _read(self, metas: Mapping[int, dict[str, Any]]) -> dict[int, _Doc]:
        """The documents of these rows, read and tokenised: stored text decompressed, a pointer-only
        document's text read again from its file, each file once (_texts_from_sources)."""
        pointed = _texts_from_sources([m for m in metas.values() if m["text"] is None])
        out = {}
        for d, meta in metas.items():
            stored = meta["text"]
            text = pointed[d] if stored is None else self._dctx.decompress(stored).decode("utf-8", "surrogatepass")
            hashes, starts, ends = token_hash_spans(text)
            row = {k: v for k, v in meta.items() if k != "text"}
            out[d] = _Doc(row, text, starts, ends, DocTokens.of(hashes, self.cfg.ngram_n))
        return out

    def __getstate__(self) -> dict[str, Any]:
        """For a worker process that was not forked: no engine (it opens its own from the URL),
        no document cache, no decompressor."""
        skip = ("engine", "_docs", "_cached", "_dctx", "_shared")
        state = {k: v for k, v in self.__dict__.items() if k not in skip}
        state["engine_url"] = self.engine.url.render_as_string(hide_password=False)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        url = state.pop("engine_url")
        self.__dict__.update(state)
        self.engine = make_engine(url, existing=True)
        self._docs = OrderedDict()
        self._cached = 0
        self._dctx = zstandard.ZstdDecompressor()
        self._shared = None

    def _keep(self, docs: dict[int, _Doc]) -> None:
        for doc_id, doc in docs.items():
            if doc_id not in self._docs:
                self._cached += doc.nbytes
            self._docs[doc_id] = doc
            self._docs.move_to_end(doc_id)
        while self._cached > DOC_CACHE_BYTES and len(self._docs) > 1:
            self._cached -= self._docs.popitem(last=False)[1].nbytes

    def _load(self, conn: Any, doc_ids: set[int]) -> dict[int, _Doc]:
        """The documents that exist, read and tokenised unless cached. The caller holds them
        while it scores, so the cache evicting one meanwhile cannot drop it from a verdict."""
        if self._shared is not None:
            return self._shared.load(conn, doc_ids, self._read)
        missing = [d for d in doc_ids if d not in self._docs]
        read = self._read(repo.documents_meta(conn, missing)) if missing else {}
        docs = {d: doc for d in doc_ids if (doc := self._docs.get(d) or read.get(d)) is not None}
        self._keep(docs)
        return docs

    # ------------------------------------------------------------ scanning

    def scan(
        self,
        items: Sequence[BenchmarkItem],
        progress: Callable[[int, int], None] | None = None,
        workers: int | None = None,
    ) -> list[ItemResult]:
        """Score every item, in input order (scan_stream, results gathered)."""
        return [r for part in self.scan_stream(lambda: iter(items), progress, workers) for r in part]

    def scan_stream(
        self,
        source: Callable[[], Iterable[BenchmarkItem]],
        progress: Callable[[int, int], None] | None = None,
        workers: int | None = None,
        reading: Callable[[int], None] | None = None,
    ) -> Iterator[list[ItemResult]]:
        """Score every item of `source` (called twice: each call gives the items again, from the
        first) and yield the results a chunk at a time, in input order; results are the same
        for any chunk size and number of workers.

        Pass 1 reads each item's scored text (not its passage) into what the whole benchmark
        says about every item: text shared between items, each token's information. Pass 2 reads
        the items again and scores them in chunks (CHUNK items; the first ones smaller, so
        progress shows at once, and with several workers the last ones too: _chunks), by
        `workers` processes (default: the scanner's own setting) with at most two chunks each
        in flight: memory holds the benchmark-wide tables and the chunks
        under way, never every item or every result.

        `reading(n)` is called during pass 1 with the items read so far (every READ_EVERY items,
        or every half second when pass 1 runs in a process of its own: see _Bench.build), so
        progress shows from the first items, not only once every item has been read."""
        # the filters are read ahead for workers that inherit them (forked: a process of one
        # thread, as _run decides) or for this process's own look-ups; a server's workers start
        # from a fork server and read their own, and the server would only hold a copy
        ahead = self._read_filters if threading.active_count() == 1 else None
        bench = _Bench.build(source, self.cfg.ngram_n, reading, ahead)
        try:
            total = len(bench)
            work = _Work(self, bench)
            done = 0
            workers = _workers(workers if workers is not None else self.workers)
            for part in _run(work, _chunks(source(), total, workers), workers):
                done += len(part)
                if done == total:  # the last chunk's corpora may have gone after its own check
                    retrying("checking the corpora are there", self._corpora_checked, self.retry_seconds)
                yield part
                if progress:
                    progress(done, total)
        finally:  # the folder of the tables, if they were written to one
            bench.close()

    def _load_checked(self, candidates: Mapping[int, Mapping[int, Any]]) -> dict[int, _Doc]:
        """The chunk's candidate documents (_load), its corpora checked to be there still."""
        with self.engine.connect() as conn:
            docs = self._load(conn, {d for c in candidates.values() for d in c})
            self._still_there(conn)
        return docs

    def _corpora_checked(self) -> None:
        with self.engine.connect() as conn:
            self._still_there(conn)

    def _still_there(self, conn: Any) -> None:
        """Refuse to go on if a corpus the scan reads was deleted (or deleted and made again)
        since the scan began: its chunks scored since then found none of its text, and their
        items read clean (a report job keeps its corpora from being deleted; a `contam scan`
        cannot). Asked after each chunk's look-ups and documents, and once more at the end."""
        gone = repo.corpora_gone(conn, {int(r["id"]): r["created_at"] for r in self.corpora})
        if gone:
            names = ", ".join(repr(r["name"]) for r in self.corpora if int(r["id"]) in gone)
            raise StateError(
                f"corpus {names} was deleted while this scan read it: its results are incomplete; scan again "
                "against the corpora there are now (`contam corpora`)"
            )

    def _read_filters(self) -> None:
        """The index's key filters read into this process's cache, for the workers it forks or
        its own look-ups (repo.read_filters): while pass 1 runs apart, it has nothing else to do."""

        def read() -> None:
            with self.engine.connect() as conn:
                repo.read_filters(conn, self.corpus_ids)

        retrying("reading the key filters", read, self.retry_seconds)

    def _scan_chunk(self, work: _Work, lo: int, items: list[BenchmarkItem]) -> list[ItemResult]:
        """Items lo..lo+len(items)-1: prepared in full (their passages too), looked up in the
        index, their candidate documents loaded, then each scored."""
        cfg, th, n = self.cfg, self.th, self.cfg.ngram_n
        bench = work.bench
        prepared = [prepare(it, n, cfg.short_n) for it in items]
        both = [g for p in prepared for g in (p.grams, p.passage_grams, p.sgrams)]
        grams = distinct(np.concatenate(both)) if both else np.zeros(0, np.int64)
        if cfg.sample_mod > 1:
            grams = grams[grams.view(np.uint64) % np.uint64(cfg.sample_mod) == 0]
        near_keys = self._near_keys(prepared)
        keys = distinct(np.concatenate([np.zeros(0, np.int64), *near_keys])).tolist()

        def look_up() -> tuple[dict[int, int], Postings, Postings]:
            with self.engine.connect() as conn:
                segs = repo.lookup_segments(conn, self.corpus_ids)
                df, postings = repo.ngram_table(conn, grams.tolist(), self.corpus_ids, th.max_df, segs=segs)
                return df, postings, repo.band_table(conn, keys, self.corpus_ids, segs=segs)

        df, postings, hits = retrying("looking up the index", look_up, self.retry_seconds)
        sizes = np.cumsum([len(p.grams) for p in prepared])[:-1]
        msizes = np.cumsum([len(p.mgrams) for p in prepared])[:-1]
        all_grams = np.concatenate([p.grams for p in prepared])
        dfs = np.split(lookup(all_grams, df), sizes)
        # the gram tables asked once for the chunk, not twice per item
        freqs = np.split(bench.shared.freq(all_grams), sizes)
        mfreqs = np.split(bench.shared.mgrams.freq(np.concatenate([p.mgrams for p in prepared])), msizes)
        ssizes = np.cumsum([len(p.sgrams) for p in prepared])[:-1]
        sdfs: list[Any] = (
            np.split(lookup(np.concatenate([p.sgrams for p in prepared]), df), ssizes)
            if cfg.short_n
            else [None] * len(prepared)
        )
        view = _ChunkView(bench, lo, prepared)
        shared = bench.shared
        stats = {
            lo + k: item_stats(p, int(shared.group[lo + k]), shared, d, n, th, bench.bits_of(lo + k), f, mf, sd)
            for k, (p, d, f, mf, sd) in enumerate(zip(prepared, dfs, freqs, mfreqs, sdfs, strict=True))
        }
        nominees = {
            lo + k: self._nominees(p, stats[lo + k], postings, near_keys[k], hits) for k, p in enumerate(prepared)
        }
        keys = self._content_keys(set().union(*(nom.tied() for nom in nominees.values())))
        candidates = {i: nom.choose(keys) for i, nom in nominees.items()}
        docs = retrying("reading candidate documents", lambda: self._load_checked(candidates), self.retry_seconds)
        one_text = one_text_keys(postings, docs)
        for st in stats.values():
            st.one_text = one_text
        cache = MatchCache()  # the chunk's items share documents and competitors
        results = [self._score_one(i, view, stats, candidates[i], docs, cache) for i in range(lo, lo + len(items))]
        return self._copies_listed(results, lo, view, stats, candidates, docs, cache)

    def _copies_listed(
        self,
        results: list[ItemResult],
        lo: int,
        view: _ChunkView,
        stats: Mapping[int, ItemStats],
        candidates: Mapping[int, dict[int, int | None]],
        docs: dict[int, _Doc],
        cache: MatchCache,
    ) -> list[ItemResult]:
        """The chunk's results, a widespread copy that lists no document scored again with the
        documents holding most of its common n-grams (rare: _widespread_copies)."""
        wide = {
            i: widespread_grams(view[i], stats[i], self.th)
            for i, r in enumerate(results, lo)
            if r.score.reason.startswith(WIDESPREAD) and Status.CONTAMINATED.value not in {e.status for e in r.evidence}
        }
        if not wide:
            return results
        found = self._widespread_copies(wide)
        docs |= retrying("reading candidate documents", lambda: self._load_checked(found), self.retry_seconds)
        again = {i: self._score_one(i, view, stats, candidates[i] | more, docs, cache) for i, more in found.items()}
        return [again.get(i, r) for i, r in enumerate(results, lo)]

    def _widespread_copies(self, wide: Mapping[int, np.ndarray]) -> dict[int, dict[int, int | None]]:
        """Per widespread copy (scoring.WIDESPREAD) that the look-up gave no document (it names
        none for n-grams in more than max_df documents, and an edited copy matches no
        near-duplicate window): the WIDESPREAD_LISTED documents holding most of WIDESPREAD_GRAMS
        of its common own n-grams, spread over them (a new user's trial: `contaminated`, no
        evidence). A second fetch of those n-grams' blocks, for these items only."""
        asked = {i: g[_spread(len(g), WIDESPREAD_GRAMS)] for i, g in wide.items()}
        grams = distinct(np.concatenate(list(asked.values())))

        def look_up() -> Postings:
            with self.engine.connect() as conn:
                segs = repo.lookup_segments(conn, self.corpus_ids)
                return repo.ngram_table(conn, grams.tolist(), self.corpus_ids, 2**62, segs=segs)[1]

        postings = retrying("looking up the index", look_up, self.retry_seconds)
        listed = {i: top_k(*held_counts(postings, g), WIDESPREAD_LISTED) for i, g in asked.items()}
        keys = self._content_keys({d for top in listed.values() for d in _over(top, WIDESPREAD_LISTED).tolist()})
        return {i: dict.fromkeys(_broken(top, WIDESPREAD_LISTED, keys.__getitem__)) for i, top in listed.items()}

    def _content_keys(self, doc_ids: set[int]) -> dict[int, tuple[Any, ...]]:
        """content_key of each of these documents (tied for a candidate's place; one query, none
        for none). A document deleted since the look-up sorts last."""
        if not doc_ids:
            return {}

        def read() -> dict[int, dict[str, Any]]:
            with self.engine.connect() as conn:
                return repo.documents_meta(conn, sorted(doc_ids), text=False)

        metas = retrying("reading candidate documents", read, self.retry_seconds)
        gone = (float("inf"),)
        return {d: content_key(metas[d]) if d in metas else gone for d in doc_ids}

    def _near_keys(self, prepared: Sequence[PreparedItem]) -> list[np.ndarray]:
        """Per item, the band keys (int64) of its scored text, window by window, windows at half
        the index stride. All items' texts are signed in one call, laid end to end, each window
        kept inside its own item (one call per item cost more than the hashing)."""
        cfg = self.cfg
        step = max(1, cfg.stride // 2)
        texts, starts, ends, counts = [], [], [], []
        offset = 0
        for p in prepared:
            if p.n_tokens < cfg.shingle:
                counts.append(0)
                continue
            last = max(p.n_tokens - cfg.window, 0)
            s = np.unique(np.append(np.arange(0, last + 1, step), last)).astype(np.int64)
            texts.append(p.ids)
            starts.append(s + offset)
            ends.append(np.minimum(s + cfg.window - cfg.shingle + 1, p.n_tokens - cfg.shingle + 1) + offset)
            counts.append(len(s))
            offset += p.n_tokens
        if not texts:
            return [np.zeros(0, dtype=np.int64) for _ in prepared]
        th = np.concatenate(texts).view(np.uint64)
        keys = band_keys(window_minhashes(th, cfg, np.concatenate(starts), np.concatenate(ends)), cfg)
        return [k.ravel() for k in np.split(keys, np.cumsum(counts)[:-1])]

    def _votes(self, p: PreparedItem, s: ItemStats, postings: Postings) -> Votes:
        """What the item's n-grams say of each document holding one (arrays.candidate_votes):
        the exact channel's n-grams, then the short channel's (short items only, see
        items.prepare: p.sgrams is p.mgrams, whose benchmark frequencies are s.mfreq), each
        distinct gram voting once, so a document holding the item's short runs is aligned too.
        Two rare 3-grams count as two hits only in a row (four words of the item) or on either side
        of one word (native SHORT_PAIR_GAP: a seven-word item with its middle word changed keeps
        those two alone), one of them the
        item's own (no other item has it; or any, when the index keeps one n-gram in k, where one
        kept gram may stand for a whole copy): scattered, or both a template's, they are what any
        document on the item's subject holds, and no run of own text a verdict needs can come of
        them. The passage's n-grams the item lacks add a hundredth of a vote each."""
        sfreq = s.mfreq[: len(p.sgrams)]
        own = (sfreq < self.th.template_min_items) | (self.cfg.sample_mod > 1)
        return candidate_votes(
            postings,
            (p.grams, s.freq, p.role[p.gram_pos] == QUESTION),
            (p.sgrams, sfreq, p.role[p.sgram_pos] == QUESTION, own, p.sgram_pos),
            np.setdiff1d(p.passage_grams, p.grams),
        )

    def _nominees(
        self,
        p: PreparedItem,
        s: ItemStats,
        postings: Postings,
        keys: np.ndarray,
        bands: Postings,
    ) -> _Nominees:
        """Documents to align: those holding most of the item's rare n-grams (an n-gram shared by
        f items weighs 1/f, so a template's copies rank below the item's own text), then those
        sharing most near-duplicate band keys, with the window they matched in; ties for the
        last places are broken by content_key (_Nominees.choose)."""
        v = self._votes(p, s, postings)
        sampled = self.cfg.sample_mod > 1
        # a document holding one n-gram of a longer item cannot show a run of n + 1 tokens, nor
        # most of the item: not worth aligning (bench/scan_speed.py measures what this saves);
        # unless the index keeps one n-gram in k (--sample), where one kept n-gram may stand for
        # a whole copy
        # (an item with one n-gram in all needs that one; the short channel counts only for an item
        # with no n-gram at all)
        grams = set(p.grams.tolist()) | set(p.passage_grams.tolist())
        need = 1 if sampled else min(MIN_GRAMS, len(grams) or len(set(p.sgrams.tolist())))
        ok = v.hits >= need  # the most votes first; votes equal but for the order of their sums are equal
        exact = by_votes(v.docs[ok], v.votes[ok], CANDIDATES)
        # the question names the item: the document holding most of it is aligned too, even when
        # a long answer or worked solution draws more votes to other documents
        ok &= v.has_asked
        asked = by_votes(v.docs[ok], v.asked[ok], 1)
        return _Nominees(exact, asked, top_k(*held_counts(bands, keys), NEAR_CANDIDATES))  # (document << 32 | window)

    def _score_one(
        self,
        i: int,
        items: Sequence[PreparedItem],
        stats: Mapping[int, ItemStats],
        candidates: dict[int, int | None],
        docs: dict[int, _Doc],
        cache: MatchCache,
    ) -> ItemResult:
        aligned: dict[int, tuple[DocTokens, tuple[int, int] | None]] = {}
        # in content_key's order: of equally good documents, the first is the best (scoring.rank)
        for d in sorted((d for d in candidates if d in docs), key=lambda d: content_key(docs[d].meta)):
            doc, win = docs[d], candidates[d]
            window = window_span(len(doc.tokens.ids), win, self.cfg) if win is not None else None
            aligned[d] = (doc.tokens, window)
        shared = stats[i].shared
        score, ranked = judge(i, items, stats, shared, aligned, self.cfg.ngram_n, self.th, cache)  # type: ignore[arg-type]
        # a too_short item is judged by no document: its evidence says so, not "contaminated"; a
        # widespread copy's documents that hold its common own n-grams are its copies (that text
        # is common only because it was copied so often: a document alone calls it a phrase); a
        # document holding only the frame it shares with other items is not (a review)
        short = score.status == Status.TOO_SHORT
        wide = widespread_grams(items[i], stats[i], self.th) if score.reason.startswith(WIDESPREAD) else None

        def said_of(m: DocMatch, status: Status) -> Status:
            if short:
                return Status.TOO_SHORT
            return Status.CONTAMINATED if wide is not None and self._holds(docs[m.doc], wide) else status

        said = [(m, said_of(m, status)) for m, status in ranked[: self.k] if m.matched.any()]
        evidence = [
            self._evidence(docs[m.doc], m, status, self._passage_at(items[i], docs[m.doc], m)) for m, status in said
        ]
        return ItemResult(items[i].item, score, evidence)

    def _holds(self, doc: _Doc, grams: np.ndarray) -> bool:
        """Whether the document holds `contaminated_coverage` of these (distinct) n-grams."""
        want = distinct(grams)
        return bool(len(want)) and share(member(want, distinct(doc.tokens.grams))) >= self.th.contaminated_coverage

    def _passage_at(self, p: PreparedItem, doc: _Doc, m: DocMatch) -> np.ndarray:
        """Where the document holds the item's passage field: the positions of the passage's
        n-grams in its fullest copy, and in the copy within the passage's length of the item's
        region (passage_near: a review's page held the passage whole far off and half of it beside
        the question), each where it holds suspicious_coverage of the passage (none else)."""
        shown, n = self.th.suspicious_coverage, self.cfg.ngram_n
        if max(m.passage_coverage, m.passage_near) < shown:
            return np.zeros(0, dtype=np.int64)
        pos = doc.tokens.positions(p.passage_grams)
        places = [passage_place(p, doc.tokens, n, pos)[1]] if m.passage_coverage >= shown else []
        if m.passage_near >= shown:
            places.append(passage_place(p, doc.tokens, n, pos, m.region)[1])
        return distinct(np.concatenate(places))

    def _evidence(self, doc: _Doc, m: DocMatch, status: Status, passage_at: np.ndarray | None = None) -> Evidence:
        """The aligned part of the training text, its matched tokens highlighted, and where the
        answer was found after the question when the document flags the item (a short answer is
        found apart from the alignment: a choice aligned there may be another one). passage_at:
        where the document holds the item's passage field (_passage_at), whose copy is highlighted
        too, up to PASSAGE_SHOWN tokens from the item's text (a trial: "Passage found: yes" beside
        an excerpt that showed none of it)."""
        n_tok = len(doc.starts)
        used = [(b, size) for _a, b, size in m.blocks]
        if m.answer_at is not None and status.flagged:
            used.append(m.answer_at)
        if passage_at is not None and len(passage_at) and used:
            lo_hi = min(b for b, _s in used), max(b + k for b, k in used)
            used += _passage_runs(passage_at, self.cfg.ngram_n, *lo_hi)
        lo = min((b for b, _s in used), default=m.region[0])
        hi = max((b + size for b, size in used), default=min(m.region[1], lo + 1))
        c_lo = int(doc.starts[lo]) if lo < n_tok else len(doc.text)
        c_hi = int(doc.ends[min(hi, n_tok) - 1]) if n_tok and hi > 0 else c_lo
        x_lo, x_hi = max(0, c_lo - EXCERPT_PAD), min(len(doc.text), c_hi + EXCERPT_PAD)
        spans: list[list[int]] = []
        for b, size in sorted(used):
            a, e = int(doc.starts[b]) - x_lo, int(doc.ends[b + size - 1]) - x_lo
            if spans and a <= spans[-1][1] + 1:
                spans[-1][1] = max(spans[-1][1], e)
            else:
                spans.append([a, e])
        meta = doc.meta
        return Evidence(
            corpus=meta["corpus"],
            document_id=meta["external_id"],
            document=int(meta["id"]),
            source_file=meta["source_file"],
            position=int(meta["position"]),
            char_start=int(c_lo),
            char_end=int(c_hi),
            excerpt_start=int(x_lo),
            excerpt=without_surrogates(doc.text[x_lo:x_hi]),  # an index made before its reader replaced them
            highlights=spans,
            own_coverage=round(m.own_coverage, 4),
            coverage=round(m.coverage, 4),
            longest_match=m.longest_own,
            near_window=m.near_window,
            status=status.value,
            document_chars=len(doc.text),
        )


def _spread(n: int, k: int) -> np.ndarray:
    """At most k positions of n, evenly spread from the first to the last."""
    return np.linspace(0, n - 1, min(n, k)).astype(np.int64)


def one_text_keys(postings: Postings, docs: Mapping[int, _Doc]) -> np.ndarray:
    """Keys (sorted) of the rare grams that several documents hold, every one of them read here (a
    candidate) and of one text hash: a page and its exact copies, which say no more than the page
    (matching._one_place). A document not read is taken for another text."""
    counts = np.diff(postings.start)
    multi = np.flatnonzero(counts > 1)
    if not len(multi) or not docs:
        return np.zeros(0, dtype=np.int64)
    ids = np.fromiter(docs.keys(), dtype=np.int64, count=len(docs))
    hashes = np.fromiter((int(d.meta["text_hash"]) for d in docs.values()), dtype=np.int64, count=len(docs))
    order = np.argsort(ids)
    ids, hashes = ids[order], hashes[order]
    sizes = counts[multi]
    first = np.repeat(postings.start[multi] - np.cumsum(np.concatenate(([0], sizes[:-1]))), sizes)
    held = postings.docs[first + np.arange(int(sizes.sum()))]  # the documents of each key, key by key
    at = np.minimum(np.searchsorted(ids, held), len(ids) - 1)
    read = ids[at] == held
    text = np.where(read, hashes[at], 0)
    bounds = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    same = (np.minimum.reduceat(text, bounds) == np.maximum.reduceat(text, bounds)) & np.logical_and.reduceat(
        read, bounds
    )
    keys: np.ndarray = postings.keys[multi[same]]
    return keys


def _irreproducible(names: list[str], diffs: dict[str, tuple[Any, Any]]) -> IncompatibleIndex:
    """The refusal of corpora (of one fingerprint: every one of them; it named the first alone)
    that code of another release indexed, with the way out."""
    said = "; ".join(f"{k}: index has {a!r}, this scorer has {b!r}" for k, (a, b) in diffs.items())
    return IncompatibleIndex(
        f"corpus {', '.join(map(repr, names))} {'was' if len(names) == 1 else 'were'} indexed with settings "
        f"this scorer cannot reproduce ({said}); re-index {'it' if len(names) == 1 else 'each'} with this version "
        f"(`contam corpora delete {names[0]}`, then `contam index --corpus {names[0]} PATH...` on its files)",
        {k: list(v) for k, v in diffs.items()},
    )


def _texts_from_sources(metas: Sequence[dict[str, Any]]) -> dict[int, str]:
    """The text of each pointer-only document (id -> text), read again from its source file: the
    record at its position, from the field the file was indexed from, and only if it is the text
    indexed (its hash); each file read once, to the last position asked of it (it was read from
    its start for every document). A file gone, unreadable or changed since is an error that
    names it: read as no text, or as another text, a copy it held was scored as no copy at all."""
    wanted: dict[tuple[str, str], dict[int, list[dict[str, Any]]]] = {}  # (file, field) -> position -> rows
    for m in metas:
        at = wanted.setdefault((m["source_file"], m.get("text_field") or "text"), {})
        at.setdefault(int(m["position"]), []).append(m)
    out: dict[int, str] = {}
    for (source, text_field), by_position in wanted.items():
        path, last = Path(source), max(by_position)
        if not path.is_file():
            raise _not_read_again(by_position, path, "the file is gone")
        try:
            for d in read_documents(path, Counter(), text_field):
                for m in by_position.get(d.position, ()):
                    if int(text_hashes([d.text.encode("utf-8", "surrogatepass")])[0]) == m["text_hash"]:
                        out[int(m["id"])] = d.text
                if d.position >= last:
                    break
        except (ContamError, OSError) as exc:
            raise _not_read_again(by_position, path, getattr(exc, "message", None) or str(exc)) from exc
        changed = {p: [m for m in ms if int(m["id"]) not in out] for p, ms in by_position.items()}
        if any(changed.values()):
            raise _not_read_again(
                {p: ms for p, ms in changed.items() if ms}, path, "the file changed since it was indexed"
            )
    return out


def _not_read_again(by_position: Mapping[int, list[dict[str, Any]]], path: Path, why: str) -> StateError:
    """The error of a pointer-only document that cannot be read again from its file: put the file
    back, or index the changed file again (the corpus then keeps only its new documents); a file
    indexed before contam kept the field it was read from may have been read from another."""
    meta = by_position[min(by_position)][0]
    before = (
        " (indexed before contam kept which field a file's text came from: if that was not 'text', delete "
        "the corpus and index it again)"
        if meta.get("text_field") is None
        else ""
    )
    return StateError(
        f"corpus {meta['corpus']!r} keeps no text (indexed with --no-store-text), and its document "
        f"{meta['external_id']!r} cannot be read again from {path}: {why}{before}; put the file back as it was "
        "indexed, or index it again where it is now (a moved file is recorded at its new path; of a changed one "
        "the corpus then keeps the new version's documents only)"
    )


class SharedDocs:
    """Tokenised documents kept between scanners, up to DOC_CACHE_BYTES, for threads to share:
    the API's /check builds a scanner per request, and read and tokenised each candidate
    document again (a fifth of a one-item request's time).

    Unlike a scanner's own cache, which lives for one scan, this one outlives changes to the
    index, so each load reads the documents' rows (not their text) and reuses a document only
    if its text hash and token count are those it was read with (a corpus deleted and indexed
    again may give its documents' ids to other texts); the names evidence shows (a renamed
    corpus) always come from the fresh row. Only documents whose text the index stores are
    kept: a pointer-only document is read from its source file each time, as before."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = DOC_CACHE_BYTES if limit is None else limit
        self._docs: OrderedDict[int, _Doc] = OrderedDict()
        self._cached = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._docs)

    def load(
        self, conn: Any, doc_ids: set[int], read: Callable[[Mapping[int, dict[str, Any]]], dict[int, _Doc]]
    ) -> dict[int, _Doc]:
        """The documents that exist (as Scanner._load), `read(rows)` reading those not kept."""
        rows = repo.documents_meta(conn, list(doc_ids), text=False)
        kept: dict[int, _Doc] = {}
        with self._lock:
            for d, row in rows.items():
                doc = self._docs.get(d)
                if doc is not None and (doc.meta["text_hash"], doc.meta["n_tokens"]) == (
                    row["text_hash"],
                    row["n_tokens"],
                ):
                    kept[d] = dataclasses.replace(doc, meta=row)
                    self._docs.move_to_end(d)
        need = [d for d in rows if d not in kept]
        metas = repo.documents_meta(conn, need) if need else {}
        fresh = read(metas)
        with self._lock:
            for d, doc in fresh.items():
                if metas[d]["text"] is None:
                    continue
                old = self._docs.pop(d, None)
                self._cached += doc.nbytes - (old.nbytes if old is not None else 0)
                self._docs[d] = doc
            while self._cached > self.limit and self._docs:
                self._cached -= self._docs.popitem(last=False)[1].nbytes
        return {d: doc for d in doc_ids if (doc := kept.get(d) or fresh.get(d)) is not None}


_EMPTY = np.zeros(0, dtype=np.int64)
# the tokens of the competitors' stand-ins a scanning process keeps (about 50 bytes a token, with
# what matching caches on them: about 25 MB at most)
STAND_IN_TOKENS_KEPT = 1 << 19
FIRST_CHUNKS = (10, 50, 200)  # items in the first chunks (at most CHUNK): progress shows from the first items
TAIL_CHUNK = 50  # the smallest the last chunks of a scan by several workers are cut to
WIDESPREAD_GRAMS = 8  # common n-grams of a widespread copy looked up for its documents
WIDESPREAD_LISTED = 3  # documents aligned for it: those holding most of them


class _Bench:
    """What the whole benchmark says about each of its items (pass 1 of Scanner.scan_stream):
    the shared-text tables, each token's bits, and, to stand in for an item another item is
    compared with, its scored text as flat arrays (no Python object per item)."""

    ARRAYS = ("bits", "tok_at", "ids", "whole", "m_at", "mgrams", "mgram_pos", "u_at", "umgrams", "t_at", "tiny")
    TABLES = ("keys", "start", "count", "groups_by_gram", "directory")  # of each of the shared-text gram tables

    def __init__(self, shared: SharedText, bits: np.ndarray, parts: dict[str, np.ndarray]) -> None:
        self.shared, self.bits = shared, bits
        self.tok_at = parts["tok_at"]  # item k's tokens are tok_at[k]:tok_at[k + 1] of ids, whole, bits
        self.ids, self.whole = parts["ids"], parts["whole"]
        self.m_at, self.mgrams, self.mgram_pos = parts["m_at"], parts["mgrams"], parts["mgram_pos"]
        self.u_at, self.umgrams = parts["u_at"], parts["umgrams"]
        self.t_at, self.tiny = parts["t_at"], parts["tiny"]  # (start, end, key) rows of tiny fields
        self.spill: str | None = None  # the folder the arrays were written to, for worker processes

    def __getstate__(self) -> dict[str, Any]:
        """For a worker started by the fork server: the arrays written once to a temporary
        folder (removed by `close`) and mapped by every worker from there, so the workers share
        one copy in the page cache and this process never holds a pickled copy."""
        if self.spill is None:
            self._spill_to(tempfile.mkdtemp(prefix=temp_prefix("scan")))
        small = {k: v for k, v in self.shared.__dict__.items() if k not in ("group", "ngrams", "mgrams")}
        return {"spill": self.spill, "shared": small}

    def _spill_to(self, folder: str) -> None:
        """The arrays written to `folder`, then mapped from there in place of this process's copy
        (this process scores nothing now, or scores from the page cache like its workers)."""
        tables = {"n": self.shared.ngrams, "m": self.shared.mgrams}
        self.spill = folder
        for name in self.ARRAYS:
            np.save(os.path.join(folder, name + ".npy"), getattr(self, name))
        for t, table in tables.items():
            for name in self.TABLES:
                np.save(os.path.join(folder, f"{t}.{name}.npy"), getattr(table, name))
        np.save(os.path.join(folder, "group.npy"), self.shared.group)
        small = {k: v for k, v in self.shared.__dict__.items() if k not in ("group", "ngrams", "mgrams")}
        self._map(folder, small)
        _trim()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._map(state["spill"], state["shared"])
        self.spill = None  # the process that wrote it removes it

    def _map(self, spill: str, small: dict[str, Any]) -> None:
        """The arrays mapped from the files in `spill` (read-only, shared through the page cache)."""

        def load(name: str) -> np.ndarray:
            # a plain array over the mapping: numpy.memmap's slices are memmaps too, each built
            # through Python code (__array_finalize__), 4% of a 10,000-item scan (py-spy)
            mapped: np.ndarray = np.load(os.path.join(spill, name + ".npy"), mmap_mode="r").view(np.ndarray)
            return mapped

        shared = SharedText.__new__(SharedText)
        shared.__dict__.update(small)
        shared.group = load("group")
        for t, attr in (("n", "ngrams"), ("m", "mgrams")):
            table = _GramTable.__new__(_GramTable)
            for name in self.TABLES:
                setattr(table, name, load(f"{t}.{name}"))
            setattr(shared, attr, table)
        self.shared = shared
        for name in self.ARRAYS:
            setattr(self, name, load(name))

    def close(self) -> None:
        if self.spill is not None:
            shutil.rmtree(self.spill, ignore_errors=True)
            self.spill = None

    def __len__(self) -> int:
        return len(self.tok_at) - 1

    @classmethod
    def build(
        cls,
        source: Callable[[], Iterable[BenchmarkItem]],
        n: int,
        reading: Callable[[int], None] | None = None,
        meanwhile: Callable[[], object] | None = None,
    ) -> _Bench:
        """Pass 1, in a process of its own when `source` can be sent to one (a reader's
        arguments, not a closure): building the tables takes a Python object per item, and the
        allocator keeps much of what they took once freed, in a process that lives on (a 200 MB
        upload left the server 400 MB larger, for good); a process that exits gives all of it
        back. It writes the tables to a temporary folder this process and its workers map
        (removed by `close`). `reading(n)`: items read so far (see Scanner.scan_stream).
        `meanwhile()`: work for this process while pass 1 runs in its own (not called when pass 1
        runs here)."""
        try:
            pickle.dumps(source)
        except (pickle.PicklingError, AttributeError, TypeError):  # a closure over items in memory
            return cls.of(source(), n, reading)
        # a process running threads must not fork (see _run)
        threads = threading.active_count() > 1
        ctx = multiprocessing.get_context("forkserver") if threads else multiprocessing.get_context("fork")
        count = ctx.Value("q", 0, lock=False)
        mine, theirs = ctx.Pipe(duplex=False)
        folder = tempfile.mkdtemp(prefix=temp_prefix("scan"))
        proc = ctx.Process(target=_pass1_apart, args=(source, n, folder, count, theirs), daemon=True)
        try:
            proc.start()
            theirs.close()
            if meanwhile is not None:
                meanwhile()
            seen = -1
            while not mine.poll(READ_POLL):
                if reading is not None and count.value != seen:
                    seen = count.value
                    reading(seen)
            try:
                ok, payload = mine.recv()
            except EOFError:
                proc.join()
                raise RuntimeError(f"the process reading the benchmark stopped (exit code {proc.exitcode})") from None
            if not ok:
                raise payload
            if reading is not None and count.value != seen:
                reading(count.value)
            bench = cls.__new__(cls)
            bench._map(folder, payload)
            bench.spill = folder
            return bench
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        finally:  # also when `reading` stops the scan (a report deleted while its items are read)
            if proc.is_alive():
                proc.terminate()
            if proc.pid is not None:
                proc.join()
            mine.close()

    @classmethod
    def of(cls, items: Iterable[BenchmarkItem], n: int, reading: Callable[[int], None] | None = None) -> _Bench:
        """Pass 1: each item's scored text prepared (its passage and record left out: they count
        for nothing here), read into the shared-text tables and flat arrays, then dropped;
        `reading(k)` every READ_EVERY items and at the end."""
        cols: dict[str, list[np.ndarray]] = {k: [] for k in ("ids", "whole", "mgrams", "mgram_pos", "umgrams")}
        cols |= {"tiny": [], "field_pos": []}

        def keep(p: PreparedItem) -> None:
            for k in ("ids", "whole", "mgrams", "mgram_pos", "umgrams"):
                cols[k].append(getattr(p, k))
            cols["tiny"].append(np.array(p.tiny_fields, dtype=np.uint64).reshape(-1, 3))
            pos = [np.arange(e - s) for s, e, _c in p.fields]
            cols["field_pos"].append(np.concatenate(pos) if pos else _EMPTY)
            if reading is not None and len(cols["ids"]) % READ_EVERY == 0:
                reading(len(cols["ids"]))

        shared = SharedText((prepare(_without_record(it), n, glue=False, passage=False) for it in items), keep)
        parts: dict[str, np.ndarray] = {}
        for k, dtype, offsets in (
            ("ids", np.int64, "tok_at"),
            ("whole", bool, None),
            ("field_pos", np.int64, None),
            ("mgrams", np.int64, "m_at"),
            ("mgram_pos", np.int64, None),
            ("umgrams", np.int64, "u_at"),
            ("tiny", np.uint64, "t_at"),
        ):
            arrays = cols.pop(k)
            if offsets is not None:
                parts[offsets] = np.concatenate(([0], np.cumsum([len(a) for a in arrays], dtype=np.int64)))
            parts[k] = np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)
            del arrays
        field_pos = parts.pop("field_pos")
        lengths = np.diff(parts["tok_at"])
        bits = flat_bits(parts["ids"], field_pos, lengths, np.asarray(shared.group, dtype=np.int64))
        del field_pos
        if len(lengths) > TRIM_ITEMS:
            _trim()
        if reading is not None:
            reading(len(lengths))
        return cls(shared, bits, parts)

    def bits_of(self, k: int) -> np.ndarray:
        return self.bits[self.tok_at[k] : self.tok_at[k + 1]]

    def stand_in(self, k: int) -> PreparedItem:
        """Item k as another item's competitor sees it: its scored tokens and MATCH_N-grams.
        Kept for the next chunk this process scores (an item is the competitor of items in many
        chunks, and matching caches what it derives from it on the stand-in)."""
        kept: dict[int, PreparedItem] = self.__dict__.setdefault("_stand_ins", {})
        p = kept.get(k)
        if p is None:
            tokens = int(self.tok_at[k + 1] - self.tok_at[k])
            held = self.__dict__.get("_stand_in_tokens", 0)
            if held + tokens > STAND_IN_TOKENS_KEPT:
                kept.clear()
                held = 0
            p = kept[k] = self._stand_in(k)
            self.__dict__["_stand_in_tokens"] = held + tokens
        return p

    def _stand_in(self, k: int) -> PreparedItem:
        t0, t1 = self.tok_at[k], self.tok_at[k + 1]
        m0, m1 = self.m_at[k], self.m_at[k + 1]
        tiny = [(int(s), int(e), int(key)) for s, e, key in self.tiny[self.t_at[k] : self.t_at[k + 1]].tolist()]
        return PreparedItem(
            item=BenchmarkItem("", k),
            ids=self.ids[t0:t1],
            role=_EMPTY,
            whole=self.whole[t0:t1],
            grams=_EMPTY,
            gram_pos=_EMPTY,
            weak=_EMPTY,
            short_fields=[],
            mgrams=self.mgrams[m0:m1],
            mgram_pos=self.mgram_pos[m0:m1],
            umgrams=self.umgrams[self.u_at[k] : self.u_at[k + 1]],
            tiny_fields=tiny,
            fields=[],
            stem=0,
            answer_ids=_EMPTY,
            passage_grams=_EMPTY,
            passage_tokens=0,
            passage_key=0,
            key=0,
        )


def _trim() -> None:
    """Give the memory pass 1 freed back to the system (glibc keeps freed small blocks in the
    process otherwise, and the peak of building the tables would stay the process's size)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


# pass 1 of at most this many items gives its memory back without malloc_trim: the tables of a
# /check (at most 1,000 items) take a few MB, and malloc_trim walks the whole heap under the
# allocator's lock (25 ms in a process holding 250 MB of small blocks), once per request
TRIM_ITEMS = 1000
READ_EVERY = 100  # items between two calls of pass 1's `reading` in this process
READ_POLL = 0.5  # seconds between two looks at the item count of pass 1 in a process of its own


def _pass1_apart(source: Callable[[], Iterable[BenchmarkItem]], n: int, folder: str, count: Any, out: Any) -> None:
    """Pass 1 in a process of its own (_Bench.build): the tables written to `folder`, then
    (True, what the parent maps them with) or (False, the exception) sent on `out`."""
    os.nice(WORKER_NICENESS)
    quiet_on_interrupt()  # Ctrl-C: the scan says so, this process ends without a word
    try:
        bench = _Bench.of(source(), n, lambda k: setattr(count, "value", k))
        bench._spill_to(folder)
        small = {k: v for k, v in bench.shared.__dict__.items() if k not in ("group", "ngrams", "mgrams")}
        out.send((True, small))
    except Exception as exc:  # the reader's error (bad input) becomes the scan's
        try:
            out.send((False, exc))
        except Exception:  # an exception that does not pickle: its text
            out.send((False, RuntimeError(f"{type(exc).__name__}: {exc}")))


class _ChunkView(Sequence[PreparedItem]):
    """The benchmark's items as a chunk's scoring reads them: its own items prepared in full,
    any other item as its stand-in."""

    def __init__(self, bench: _Bench, lo: int, prepared: list[PreparedItem]) -> None:
        self.bench, self.lo, self.prepared = bench, lo, prepared

    def __len__(self) -> int:
        return len(self.bench)

    def __getitem__(self, k: Any) -> Any:
        if self.lo <= k < self.lo + len(self.prepared):
            return self.prepared[k - self.lo]
        return self.bench.stand_in(k)


@dataclass
class _Work:
    """What every chunk of a scan reads: the scanner and the benchmark-wide tables."""

    scanner: Scanner
    bench: _Bench


def _without_record(item: BenchmarkItem) -> BenchmarkItem:
    """The item without its record (`raw`: scoring reads none of it); itself when it has none
    (a reader asked to keep none gives such items: a copy cost 7 us an item, twice a scan)."""
    return dataclasses.replace(item, raw={}) if item.raw else item


def _chunks(items: Iterable[BenchmarkItem], total: int, workers: int) -> Iterator[tuple[int, list[BenchmarkItem]]]:
    """(first item's position, items) of each chunk: FIRST_CHUNKS, then up to CHUNK items a
    chunk; with several workers, what is left over twice the workers (two chunks a worker in
    flight: a quarter of it on two workers), at least TAIL_CHUNK, and a remainder under
    TAIL_CHUNK joins the chunk before it, so the workers finish together rather than one scoring
    a whole chunk alone (1,000 items were chunks of 10, 50, 200, 500 and 240: 550 items for one
    of two workers, 450 for the other). `total`: the items there are."""
    first = iter(FIRST_CHUNKS)
    it, lo = iter(items), 0
    while True:
        size = next(first, None)
        if size is None:
            size = CHUNK
            if workers > 1:
                size = max(TAIL_CHUNK, -(-(total - lo) // (2 * workers)))
                size = total - lo if total - lo - size < TAIL_CHUNK else size
        chunk = [_without_record(x) for x in itertools.islice(it, min(size, CHUNK))]
        if not chunk:
            return
        yield lo, chunk
        lo += len(chunk)


_FORKED: list[_Work] = []  # the scan a worker process scores chunks of


def _run(work: _Work, chunks: Iterator[tuple[int, list[BenchmarkItem]]], workers: int) -> Iterator[list[ItemResult]]:
    """Chunk results in order: here, or in `workers` processes at lower priority than this one,
    so a server answering /api/v1/check beside a report job stays interactive, with at most two
    chunks a worker in flight. The benchmark-wide tables are built once, in this process. A
    single-threaded process (the CLI) forks its workers, which inherit `work`; one that runs
    threads (the server) must not fork (a lock another thread holds would stay held in the
    child), so its workers start from a fork server and receive `work` pickled, the scanner
    without its engine and cache (Scanner.__getstate__)."""
    head = list(itertools.islice(chunks, 2))
    chunks = itertools.chain(head, chunks)
    if workers <= 1 or len(head) < 2:  # one chunk: no process to start
        for lo, items in chunks:
            yield work.scanner._scan_chunk(work, lo, items)
        return
    if threading.active_count() > 1:
        pool = ProcessPoolExecutor(
            workers,
            multiprocessing.get_context("forkserver"),
            initializer=_worker_init,
            initargs=(os.getpid(), work),
        )
    else:
        _FORKED[:] = [work]
        pool = ProcessPoolExecutor(
            workers, multiprocessing.get_context("fork"), initializer=_worker_init, initargs=(os.getpid(),)
        )
    try:  # a worker that dies (killed, out of memory) fails the scan with BrokenProcessPool, never hangs it
        pending: deque[Future[list[ItemResult]]] = deque()
        for lo, items in chunks:
            pending.append(pool.submit(_forked_chunk, lo, items))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:  # also when the consumer stops early (a deleted report): chunks not started are dropped
        pool.shutdown(wait=True, cancel_futures=True)
        _FORKED.clear()
        work.bench.close()


def _workers(asked: int) -> int:
    """Scan worker processes: as asked, 0 for one per core."""
    return asked or len(os.sched_getaffinity(0))


def _worker_init(parent: int, work: _Work | None = None) -> None:
    """A scan worker: lower priority, gone with the process that scans (`parent`: a server
    stopped, or a CLI killed, mid-scan), and the scan it works for."""
    exit_with(parent)
    os.nice(WORKER_NICENESS)
    if work is not None:  # started by the fork server: the scan arrives pickled
        _FORKED[:] = [work]
    else:  # forked: the parent's pooled connections are not ours
        _FORKED[0].scanner.engine.dispose(close=False)


def _forked_chunk(lo: int, items: list[BenchmarkItem]) -> list[ItemResult]:
    work = _FORKED[0]
    return work.scanner._scan_chunk(work, lo, items)


def _passage_runs(at: np.ndarray, n: int, lo: int, hi: int) -> list[tuple[int, int]]:
    """(document token start, size) of each run of tokens inside the passage's n-grams at `at`
    (n tokens each) that lies within PASSAGE_SHOWN tokens of [lo, hi) (the item's matched text)."""
    at = at[(at + n > lo - PASSAGE_SHOWN) & (at < hi + PASSAGE_SHOWN)]
    if not len(at):
        return []
    first, length = int(at[0]), int(at[-1]) + n - int(at[0])  # the stretch the grams span
    starts = np.zeros(length, dtype=bool)
    starts[at - first] = True
    return [(first + a, b - a) for a, b in runs(covered(starts, n, length))]
