"""Segments' key filters (app.store.blocks): a look-up fetches a segment's blocks only for the keys
its filter may hold, and a filter never hides a key that was written into its segment."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, text

from contam.app.core.config import SignatureConfig
from contam.app.store import blocks, repo
from contam.app.store.db import make_engine, upgrade

INT64 = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=200, deadline=None)
@given(
    keys=st.lists(INT64, min_size=1, max_size=400),
    cuts=st.lists(st.integers(0, 400), max_size=6),
    capacity=st.integers(1, 2000),
    absent=st.lists(INT64, max_size=50),
)
def test_a_filter_never_hides_a_key(keys: list[int], cuts: list[int], capacity: int, absent: list[int]) -> None:
    """Keys added in any batches, into parts of any size (overloaded ones too), are always found;
    the answer for other keys is allowed to be either."""
    arr = np.array(keys, dtype=np.int64)
    bounds = sorted({0, len(arr), *[c % (len(arr) + 1) for c in cuts]})
    parts = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        bits = bytearray(blocks.filter_bytes(capacity))
        blocks.filter_add(bits, np.sort(arr[a:b]))  # sorted, as segments are written
        parts.append(bits)
    assert blocks.may_hold(parts, arr).all()
    assert blocks.may_hold(parts, arr[::-1]).all()  # in any order asked
    asked = np.array(absent + keys, dtype=np.int64)
    assert blocks.may_hold(parts, asked)[len(absent) :].all()
    assert not blocks.may_hold([], asked).any()  # no part: nothing held


def test_absent_keys_pass_at_about_the_design_rate() -> None:
    rng = np.random.default_rng(11)
    held = np.sort(rng.integers(-(2**63), 2**63 - 1, 200_000, dtype=np.int64))
    bits = bytearray(blocks.filter_bytes(len(held)))
    blocks.filter_add(bits, held)
    other = rng.integers(-(2**63), 2**63 - 1, 200_000, dtype=np.int64)
    rate = float(blocks.may_hold([bits], other).mean())
    assert rate < 1.5 * blocks.FILTER_FALSE_RATE
    # keys that differ in a few low bits only (n-gram hashes are not that, but the bits must not
    # come from the low bits alone). Such a key falls in the block of the key it is near, which
    # holds at least that one: a block fuller than most, so it passes about 1.3 times as often
    # (0.17% against 0.13% at 16 bits a key, over 20 seeds); bits taken from the low bits alone
    # would pass it nearly always. All 200,000 of them: 50,000 left the rate's noise at 0.02%.
    near = held ^ np.int64(1)
    assert blocks.may_hold([bits], near).mean() < 1.5 * blocks.FILTER_FALSE_RATE


def _brute(
    rows: list[tuple[int, int, int]], asked: list[int], max_df: int
) -> tuple[dict[int, int], dict[int, list[int]]]:
    """ngram_lookup's answer worked out from every posting (seg, key, doc)."""
    want = set(asked)
    docs: dict[int, list[int]] = {}
    for _s, k, d in sorted(rows, key=lambda r: (r[1], r[2])):
        if k in want:
            docs.setdefault(k, []).append(d)
    return {k: len(v) for k, v in docs.items()}, {k: v for k, v in docs.items() if len(v) <= max_df}


@pytest.fixture()
def fetched(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The number of buckets each block fetch of the look-ups asked for."""
    asked: list[int] = []
    real = repo._fetch_buckets

    def counting(conn: Any, table: str, wanted: dict[int, np.ndarray]) -> list[bytes]:
        asked.append(sum(len(b) for b in wanted.values()))
        return real(conn, table, wanted)

    monkeypatch.setattr(repo, "_fetch_buckets", counting)
    yield asked


def _write(conn: Any, cid: int, rng: np.random.Generator, n: int, room: int) -> list[tuple[int, int, int]]:
    seg = repo.open_segment(conn, cid, n, room)
    h = np.sort(rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64))
    d = rng.integers(1, 40, n).astype(np.int32)
    order = np.lexsort((d, h))
    h, d = h[order], d[order]
    repo.insert_ngrams(conn, seg, h, d)
    return [(seg, int(a), int(b)) for a, b in zip(h, d, strict=True)]


def test_lookups_through_filters_answer_as_every_posting_says(
    engine: Engine, fetched: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Segments written whole, appended to (a part with room, then one without: a new part), and
    merged: every look-up answer equals the brute-force answer from all postings, while keys in
    no segment fetch (almost) nothing."""
    monkeypatch.setattr(blocks, "FILTER_MIN_KEYS", 300)  # small parts, so appends fill one
    rng = np.random.default_rng(2)
    rows: list[tuple[int, int, int]] = []
    with engine.begin() as conn:
        cid = repo.create_corpus(conn, "c", SignatureConfig(), True)
        for n in (2000, 150, 100, 400, 2500):  # segments of 3000 rows: 2000+150+100+400, then 2500
            rows += _write(conn, cid, rng, n, 3000)
        segs = sorted({s for s, _k, _d in rows})
        assert len(segs) == 2
        parts = conn.execute(text("SELECT seg, count(*) FROM key_filter WHERE tbl = 'ngram' GROUP BY seg")).all()
        assert dict(parts)[segs[0]] >= 2  # the appends outgrew the first part
    with engine.connect() as conn:
        present = [k for _s, k, _d in rows[::3]]
        absent = rng.integers(-(2**63), 2**63 - 1, 3000, dtype=np.int64).tolist()
        asked = present + absent
        assert repo.ngram_lookup(conn, asked, None, 2) == _brute(rows, asked, 2)
        fetched.clear()
        repo.ngram_lookup(conn, absent, None, 2)
        assert sum(fetched) < 0.05 * 2 * len(absent)  # without filters: every key in both segments
    with engine.begin() as conn:  # a merge step moves a key range into a new segment
        target = repo.start_merge(conn, cid, segs)
        repo.move_postings(conn, target, segs, -(2**62), 2**62)
        rows = [((target if -(2**62) <= k < 2**62 else s), k, d) for s, k, d in rows]
    with engine.connect() as conn:
        assert sorted(repo.postings(conn, "ngram")) == sorted(rows)
        assert repo.ngram_lookup(conn, asked, None, 2) == _brute(rows, asked, 2)


def test_a_cached_filter_is_read_again_once_its_segment_grows(engine: Engine) -> None:
    """Filters are kept in memory between look-ups, by a stamp that every write changes: keys
    appended to a segment after a look-up read its filter are found by the next look-up."""
    rng = np.random.default_rng(4)
    with engine.begin() as conn:
        cid = repo.create_corpus(conn, "c", SignatureConfig(), True)
        rows = _write(conn, cid, rng, 500, 10**6)
    later = rng.integers(-(2**63), 2**63 - 1, 200, dtype=np.int64).tolist()
    with engine.connect() as conn:
        assert repo.ngram_lookup(conn, later, None, 5) == ({}, {})
    with engine.begin() as conn:
        seg = repo.open_segment(conn, cid, 200, 10**6)
        assert seg == rows[0][0]  # the same segment, its last part with room: the same part
        repo.insert_ngrams(conn, seg, np.sort(np.array(later, dtype=np.int64)), np.full(200, 9, np.int32))
        assert conn.execute(text("SELECT count(*) FROM key_filter WHERE tbl = 'ngram'")).scalar() == 1
    with engine.connect() as conn:
        df, docs = repo.ngram_lookup(conn, later, None, 5)
    assert df == dict.fromkeys(later, 1) and docs == {k: [9] for k in later}


def test_a_segment_written_without_a_filter_is_probed_in_full_then_given_one(engine: Engine) -> None:
    """A segment with blocks but no filter (written before filters were kept) is probed for every
    key; the next write into it first gives it a filter of everything it holds."""
    rng = np.random.default_rng(6)
    with engine.begin() as conn:
        cid = repo.create_corpus(conn, "c", SignatureConfig(), True)
        rows = _write(conn, cid, rng, 800, 10**6)
        conn.execute(text("DELETE FROM key_filter"))
    asked = [k for _s, k, _d in rows[::2]]
    with engine.connect() as conn:
        assert repo.ngram_lookup(conn, asked, None, 3) == _brute(rows, asked, 3)
    with engine.begin() as conn:
        rows += _write(conn, cid, rng, 100, 10**6)
    with engine.connect() as conn:
        everything = [k for _s, k, _d in rows]
        assert repo.ngram_lookup(conn, everything, None, 3) == _brute(rows, everything, 3)


def test_the_migration_gives_existing_segments_their_filters(tmp_path: Path, fetched: list[int]) -> None:
    """0011 builds a filter for every segment of an index written without them: the same answers,
    and keys in no segment fetch (almost) nothing."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    upgrade(url, "0010_sqlite_blocks")
    rng = np.random.default_rng(9)
    rows: list[tuple[int, int, int]] = []
    eng = make_engine(url)
    with eng.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO corpus (id, name, fingerprint, config, store_text, created_at) "
                "VALUES (1, 'a', 'f', '{}', 1, CURRENT_TIMESTAMP)"
            )
        )
        for seg in (1, 2):
            conn.execute(text("INSERT INTO segment (id, corpus_id, rows) VALUES (:s, 1, 0)"), {"s": seg})
            h = np.sort(rng.integers(-(2**63), 2**63 - 1, 3000, dtype=np.int64))
            d = rng.integers(1, 50, 3000).astype(np.int32)
            flat = blocks.block_rows([h, d])
            conn.execute(
                text("INSERT INTO ngram_block (seg, bucket, data) VALUES (:s, :b, :d)"),
                [{"s": seg, "b": b, "d": x} for b, x in zip(flat[0::2], flat[1::2], strict=True)],
            )
            rows += [(seg, int(a), int(b)) for a, b in zip(h, d, strict=True)]
    eng.dispose()
    upgrade(url)
    eng = make_engine(url)
    try:
        with eng.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM key_filter WHERE tbl = 'ngram'")).scalar() == 2
            present = [k for _s, k, _d in rows[::5]]
            absent = rng.integers(-(2**63), 2**63 - 1, 2000, dtype=np.int64).tolist()
            assert repo.ngram_lookup(conn, present + absent, None, 9) == _brute(rows, present + absent, 9)
            fetched.clear()
            repo.ngram_lookup(conn, absent, None, 9)
            assert sum(fetched) < 0.05 * 2 * len(absent)
    finally:
        eng.dispose()
