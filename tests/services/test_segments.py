"""Segment maintenance: which segments merge, and a merge interrupted half way."""

from __future__ import annotations

from pathlib import Path

from conftest import IndexCorpus
from helpers import make_docs, write_jsonl
from sqlalchemy import select

from contam.app.services.segments import plan_merge
from contam.app.store import repo
from contam.app.store.db import make_engine
from contam.app.store.schema import segment


def test_plan_merge_is_size_tiered() -> None:
    assert plan_merge([(1, 10), (2, 10), (3, 5)], 10, 3) == [1, 2, 3]  # three of tier 0 (<= 10 rows)
    assert plan_merge([(1, 30), (2, 10), (3, 10)], 10, 3) == []  # one of tier 1, two of tier 0
    assert plan_merge([(1, 30), (2, 30), (4, 10), (3, 25)], 10, 3) == [1, 2, 3]  # tier 1: 11..30 rows


def test_interrupted_merge_keeps_every_row_once_and_is_finished_later(
    migrated_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """A merge moves rows one key range per transaction. Stopped half way (a killed run), every
    posting is still found exactly once; the next run finishes the merge."""
    write_jsonl(tmp_path / "a.jsonl", make_docs(40, 60, 1, "a"))
    index_corpus(migrated_url, [tmp_path / "a.jsonl"], "c", batch_size=5, segment_rows=400, merge_fanout=0)
    eng = make_engine(migrated_url)
    with eng.connect() as conn:
        cid = repo.get_corpus(conn, "c")["id"]  # type: ignore[index]
        sources = repo.segments(conn, [cid])
        hashes = [r[1] for r in repo.postings(conn, "ngram")]
        keys = [r[1] for r in repo.postings(conn, "band")]
        before = (
            repo.ngram_df(conn, hashes, [cid]),
            repo.ngram_postings(conn, hashes, [cid]),
            repo.band_hits(conn, keys, [cid], max_per_key=10**6),
        )
        total = sum(n for _, n in repo.segment_sizes(conn, cid))
    assert len(sources) > 3
    with eng.begin() as conn:
        target = repo.start_merge(conn, cid, sources)
    with eng.begin() as conn:  # the first of two key ranges, then the "kill"
        repo.move_postings(conn, target, sources, -(2**63), 0)
    with eng.connect() as conn:
        sizes = dict(repo.segment_sizes(conn, cid))
        assert 0 < sizes[target] < total and sum(sizes.values()) == total
        assert repo.open_segment(conn, cid, 1, 10**9) not in [target, *sources]  # none takes new rows
        conn.rollback()
        mid = (
            repo.ngram_df(conn, hashes, [cid]),
            repo.ngram_postings(conn, hashes, [cid]),
            repo.band_hits(conn, keys, [cid], max_per_key=10**6),
        )

    def normalise(t: tuple) -> tuple:
        return t[0], {h: sorted(d) for h, d in t[1].items()}, {k: sorted(v) for k, v in t[2].items()}

    assert normalise(mid) == normalise(before)
    write_jsonl(tmp_path / "b.jsonl", make_docs(2, 60, 2, "b"))
    index_corpus(migrated_url, [tmp_path / "b.jsonl"], "c", segment_rows=400, merge_fanout=0)  # finishes the merge
    with eng.connect() as conn:
        assert repo.unfinished_merges(conn, cid) == []
        segs = conn.execute(select(segment.c.id, segment.c.rows, segment.c.merging_into)).all()
        assert target in [s for s, _, _ in segs] and not set(sources) & {s for s, _, _ in segs}
        assert all(m is None for _, _, m in segs)
        table_rows = len(repo.postings(conn, "ngram")) + len(repo.postings(conn, "band"))
        after = repo.ngram_df(conn, hashes, [cid])
    eng.dispose()
    assert after == before[0]
    assert sum(n for _, n, _ in segs) == table_rows  # the per-segment counts stayed right
