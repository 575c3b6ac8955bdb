"""The store's bulk writes and posting segments, on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from conftest import drop_pg_database, make_pg_database
from sqlalchemy import Engine

from contam.app.core.config import SignatureConfig
from contam.app.errors import StateError
from contam.app.store import repo
from contam.app.store.db import make_engine, upgrade


def _bulk_insert_round_trip(url: str, param_limit: int | None = None) -> None:
    upgrade(url)
    rng = np.random.default_rng(1)
    h = np.sort(rng.integers(-(2**63), 2**63 - 1, 2503, dtype=np.int64))
    d = rng.integers(1, 50, 2503).astype(np.int32)
    keys = np.sort(rng.integers(-(2**63), 2**63 - 1, 1001, dtype=np.int64))
    eng = make_engine(url)
    with eng.begin() as conn:
        if param_limit is not None:
            conn.connection.driver_connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, param_limit)
        seg = repo.open_segment(conn, repo.create_corpus(conn, "c", SignatureConfig(), True), 3504, 10**6)
        repo.insert_ngrams(conn, seg, h, d)
        repo.insert_bands(conn, seg, keys, np.full(1001, 7, np.int32), np.arange(1001, dtype=np.int32))
    with eng.connect() as conn:
        got = repo.postings(conn, "ngram")
        bands = repo.postings(conn, "band")
    eng.dispose()
    assert got == sorted((seg, a, b) for a, b in zip(h.tolist(), d.tolist(), strict=True))
    assert bands == [(seg, k, 7, w) for w, k in enumerate(keys.tolist())]


def test_bulk_insert_keeps_every_row(db_url: str) -> None:
    """Multi-row statements and their remainder insert exactly the rows given."""
    _bulk_insert_round_trip(db_url)


def test_bulk_insert_fits_an_old_sqlite_parameter_limit(tmp_path: Path) -> None:
    """SQLite before 3.32 binds at most 999 parameters: statements shrink to fit."""
    _bulk_insert_round_trip(f"sqlite:///{tmp_path / 'old.db'}", param_limit=999)


def test_segments_fill_to_their_size_then_rotate(engine: Engine) -> None:
    with engine.begin() as conn:
        a = repo.create_corpus(conn, "a", SignatureConfig(), True)
        b = repo.create_corpus(conn, "b", SignatureConfig(), True)
        first = [repo.open_segment(conn, a, 10, 25) for _ in range(2)]  # 10, then 20 rows
        other = repo.open_segment(conn, b, 10, 25)
        nxt = repo.open_segment(conn, a, 10, 25)  # 30 would not fit
        assert repo.open_segment(conn, a, 15, 25) == nxt
        assert repo.open_segment(conn, a, 5, 25) == first[0]  # the newest with room
        last = repo.open_segment(conn, a, 1, 25)
    assert first == [first[0]] * 2 and len({first[0], other, nxt, last}) == 4
    with engine.connect() as conn:
        assert repo.segments(conn, [a]) == [first[0], nxt, last]
        assert repo.segments(conn, None) == sorted([first[0], other, nxt, last])


def test_concurrent_postgresql_indexers_fill_separate_segments(pg_available: bool) -> None:
    """A second indexer skips the segment the first is filling instead of waiting for its commit."""
    name, url = make_pg_database()
    eng = make_engine(url)
    try:
        upgrade(url)
        with eng.begin() as conn:
            cid = repo.create_corpus(conn, "c", SignatureConfig(), True)
            seg0 = repo.open_segment(conn, cid, 5, 100)
        with eng.connect() as one, eng.connect() as two:
            t1, t2 = one.begin(), two.begin()
            two.exec_driver_sql("SET LOCAL lock_timeout = '2s'")  # a wait would fail, not hang
            assert repo.open_segment(one, cid, 5, 100) == seg0
            seg2 = repo.open_segment(two, cid, 5, 100)
            assert seg2 != seg0
            t1.commit()
            t2.commit()
    finally:
        eng.dispose()
        drop_pg_database(name)


def test_a_merge_step_moves_exactly_its_key_range(db_url: str) -> None:
    """move_postings with range bounds inside a block (PostgreSQL keeps postings in blocks by
    the key's top bits): the range's rows go to the target, the rest of the edge blocks stay."""
    upgrade(db_url)
    rng = np.random.default_rng(5)
    eng = make_engine(db_url)
    rows: dict[int, list[tuple[int, ...]]] = {}
    with eng.begin() as conn:
        cid = repo.create_corpus(conn, "c", SignatureConfig(), True)
        sources = [repo.open_segment(conn, cid, 1, 1) for _ in range(2)]
        for i, seg in enumerate(sources):
            h = np.sort(rng.integers(-(2**63), 2**63 - 1, 3000, dtype=np.int64))
            h[:50] = np.arange(50) << 40  # many rows in the buckets around 0
            h = np.sort(h)
            d = np.full(len(h), i + 1, np.int32)
            repo.insert_ngrams(conn, seg, h, d)
            repo.insert_bands(conn, seg, h, d, np.arange(len(h), dtype=np.int32))
            conn.exec_driver_sql(f"UPDATE segment SET rows = {2 * len(h)} WHERE id = {seg}")
            rows[seg] = [(int(a), int(b)) for a, b in zip(h, d, strict=True)]
        target = repo.start_merge(conn, cid, sources)
    lo, hi = (7 << 40) + 3, (33 << 40) - 5  # not on a block boundary
    with eng.begin() as conn:
        repo.move_postings(conn, target, sources, lo, hi)
    with eng.connect() as conn:
        got = repo.postings(conn, "ngram")
        bands = repo.postings(conn, "band")
        sizes = dict(repo.segment_sizes(conn, cid))
    eng.dispose()
    expected = sorted((target if lo <= k < hi else seg, k, doc) for seg, pairs in rows.items() for k, doc in pairs)
    assert got == expected
    assert sorted((s, k, doc) for s, k, doc, _ in bands) == expected
    moved = sum(1 for pairs in rows.values() for k, _ in pairs if lo <= k < hi)
    assert moved > 0 and sizes[target] == 2 * moved
    assert sum(sizes.values()) == 2 * sum(len(p) for p in rows.values())


def test_sqlite_lookups_respect_the_bound_variable_limit(tmp_path: Path) -> None:
    """SQLite before 3.32 binds at most 999 values a statement: look-ups batch under whatever
    the connection allows."""
    url = f"sqlite:///{tmp_path / 'l.db'}"
    upgrade(url)
    eng = make_engine(url)
    keys = np.arange(5000, dtype=np.int64)
    with eng.begin() as conn:
        cid = repo.create_corpus(conn, "c", SignatureConfig(), True)
        seg = repo.open_segment(conn, cid, len(keys), 10**6)
        repo.insert_ngrams(conn, seg, keys, np.zeros(len(keys), dtype=np.int32))
    with eng.connect() as conn:
        raw = conn.connection.driver_connection
        assert raw is not None
        raw.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
        df = repo.ngram_df(conn, keys.tolist(), None)
        assert len(df) == 5000 and set(df.values()) == {1}
        assert repo.band_hits(conn, keys.tolist(), None) == {}
    eng.dispose()


def test_lookups_with_the_segment_list_read_once_answer_as_each_reading_it(engine: Engine) -> None:
    """A scan's chunk reads the segment list once (lookup_segments) for its three look-ups: the
    answers equal those of look-ups that read it themselves, for all corpora and for one."""
    rng = np.random.default_rng(3)
    with engine.begin() as conn:
        a = repo.create_corpus(conn, "a", SignatureConfig(), True)
        b = repo.create_corpus(conn, "b", SignatureConfig(), True)
        for cid in (a, a, b):  # two segments of a, one of b
            seg = repo.open_segment(conn, cid, 10**6, 10**6)
            pairs = sorted({(int(h), int(d)) for h, d in rng.integers(0, 300, (400, 2))})
            h, d = (np.array(c, dtype=t) for c, t in zip(zip(*pairs, strict=True), (np.int64, np.int32), strict=True))
            repo.insert_ngrams(conn, seg, h, d)
            k = np.unique(rng.integers(0, 300, 200, dtype=np.int64))
            repo.insert_bands(conn, seg, k, np.full(len(k), 5, np.int32), np.arange(len(k), dtype=np.int32))
    keys = list(range(0, 320, 3))
    for ids in (None, [a]):
        with engine.connect() as conn:
            segs = repo.lookup_segments(conn, ids)
            if engine.dialect.name == "sqlite":
                assert segs == repo.segments(conn, ids)
            else:
                assert segs is None  # each look-up reads the list it runs with
            shared = (
                repo.ngram_df(conn, keys, ids, segs=segs),
                repo.ngram_postings(conn, keys, ids, segs=segs),
                repo.band_hits(conn, keys, ids, segs=segs),
            )
        with engine.connect() as conn:
            alone = (
                repo.ngram_df(conn, keys, ids),
                repo.ngram_postings(conn, keys, ids),
                repo.band_hits(conn, keys, ids),
            )
        assert shared == alone and shared[0]


def test_segments_of_different_block_bits_answer_look_ups_alike(engine: Engine) -> None:
    """Each segment is cut into blocks by its own block_bits (18 for those written before
    migration 0014, bits_for(rows) since): look-ups over segments of 18, 16 and 4 bits find every
    posting, and nothing else, as one row per posting would; a merge of segments of other bits
    into one keeps every posting."""
    rng = np.random.default_rng(11)
    written: dict[int, set[int]] = {}
    with engine.begin() as conn:
        cid = repo.create_corpus(conn, "c", SignatureConfig(), True)
        segs = []
        for bits, doc in ((18, 1), (16, 2), (4, 3)):
            seg = repo.open_segment(conn, cid, 4000, 4000)  # full: the next is a new segment
            conn.exec_driver_sql(f"UPDATE segment SET block_bits = {bits}, rows = 4000 WHERE id = {seg}")
            h = np.unique(rng.integers(-(2**63), 2**63 - 1, 4000, dtype=np.int64))
            repo.insert_ngrams(conn, seg, h, np.full(len(h), doc, np.int32))
            for k in h.tolist():
                written.setdefault(k, set()).add(doc)
            segs.append(seg)
        assert repo.block_bits(conn, segs) == dict(zip(segs, (18, 16, 4), strict=True))
        with pytest.raises(StateError, match="not in the index"):  # never a guess at its bits
            repo.block_bits(conn, [max(segs) + 100])
    shared = list(written)[:300]
    absent = rng.integers(-(2**63), 2**63 - 1, 300, dtype=np.int64).tolist()
    with engine.connect() as conn:
        df, docs = repo.ngram_lookup(conn, list(written) + absent, [cid], max_df=10)
    assert df == {k: len(v) for k, v in written.items()}
    assert {k: set(v) for k, v in docs.items()} == written
    with engine.begin() as conn:
        target = repo.start_merge(conn, cid, segs)
        assert repo.block_bits(conn, [target])[target] == repo.blocks.bits_for(12_000)
        repo.move_postings(conn, target, segs, -(2**63), None)
    with engine.connect() as conn:
        assert {k for _s, k, _d in repo.postings(conn, "ngram", [target])} == set(written)
        df, _docs = repo.ngram_lookup(conn, shared, [cid], max_df=10)
    assert df == {k: len(written[k]) for k in shared}
