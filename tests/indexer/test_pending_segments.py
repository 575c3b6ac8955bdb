"""PostgreSQL writes full segments on a second connection while the commit group goes on: such a
segment is pending, invisible to look-ups, until its group commits; a group that rolls back
drops it, and what a killed indexer left pending is dropped by the next writer (migration 0012)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import IndexCorpus, drop_pg_database, make_pg_database
from sqlalchemy import Engine, text

from contam.app.core.config import SignatureConfig
from contam.app.services.indexing import CorpusWriter
from contam.app.store import repo
from contam.app.store.db import make_engine, upgrade

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def pg(pg_available: bool) -> Iterator[tuple[str, Engine]]:
    name, url = make_pg_database()
    upgrade(url)
    eng = make_engine(url)
    try:
        yield url, eng
    finally:
        eng.dispose()
        drop_pg_database(name)


def _columns(seed: int, n: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    keys = np.sort(rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64))
    docs = np.full(n, 1, np.int32)
    return [keys, docs], [keys.copy(), docs.copy(), np.arange(n, dtype=np.int32)]


def _pending(eng: Engine) -> list[tuple[int, bool]]:
    with eng.connect() as conn:
        return [(int(i), bool(p)) for i, p in conn.execute(text("SELECT id, pending FROM segment ORDER BY id"))]


def _block_segs(eng: Engine) -> set[int]:
    with eng.connect() as conn:
        q = "SELECT seg FROM ngram_block UNION SELECT seg FROM band_block UNION SELECT seg FROM key_filter"
        return {int(s) for s in conn.exec_driver_sql(q).scalars()}


def test_a_pending_segment_is_invisible_until_its_group_commits(pg: tuple[str, Engine]) -> None:
    _, eng = pg
    with eng.begin() as conn:
        cid = repo.create_corpus(conn, "c", SignatureConfig(), True)
    ng, bd = _columns(1, 5000)
    asked = ng[0][::50].tolist()
    with CorpusWriter(eng, cid) as store:
        store.begin()
        assert store.stage_segment(10_000, lambda: ng, lambda: bd)
        assert store._stager is not None
        store._stager.wait()  # written and committed on the stager's connection
        [(seg, pending)] = _pending(eng)
        assert pending and _block_segs(eng) == {seg}
        with eng.connect() as conn:
            assert repo.segments(conn, None) == [] and repo.ngram_postings(conn, asked, None) == {}
            assert repo.band_hits(conn, bd[0][:10].tolist(), None) == {}
        with CorpusWriter(eng, cid):  # another writer's clean-up leaves a live writer's segment alone
            pass
        assert _pending(eng) == [(seg, True)]
        store.rollback()  # the group rolls back: its segment goes
        assert _pending(eng) == [] and _block_segs(eng) == set()

        store.begin()
        store.stage_segment(10_000, lambda: ng, lambda: bd)
        store.commit()
    [(seg, pending)] = _pending(eng)
    assert not pending
    with eng.connect() as conn:
        assert repo.segments(conn, None) == [seg]
        assert repo.ngram_postings(conn, asked, None) == {k: [1] for k in asked}


def test_a_staged_segment_s_blocks_are_sized_for_what_it_is_made_to_hold(pg: tuple[str, Engine]) -> None:
    """A commit's tail staged as a segment of its own (indexer.postings.TAIL_SHARE) is made to
    hold half a segment: its blocks are sized for that, so small writes that fill it later make
    blocks at most twice their size; every row of it is found."""
    from contam.app.store import blocks

    _, eng = pg
    with eng.begin() as conn:
        cid = repo.create_corpus(conn, "c", SignatureConfig(), True)
    ng, bd = _columns(2, 5000)
    with CorpusWriter(eng, cid) as store:
        store.begin()
        assert store.stage_segment(10_000, lambda: ng, lambda: bd, hold=4_000_000)
        store.commit()
    with eng.connect() as conn:
        [(seg, bits)] = conn.execute(text("SELECT id, block_bits FROM segment")).all()
        assert bits == blocks.bits_for(4_000_000) > blocks.bits_for(10_000)
        asked = ng[0][::25].tolist()
        assert repo.ngram_postings(conn, asked, None) == {k: [1] for k in asked}
        assert repo.segments(conn, None) == [seg]


_KILL_AFTER_STAGING = """
import os, signal, sys
from pathlib import Path
from contam.app.core.config import SignatureConfig
from contam.app.services import indexing
from contam.app.store.db import make_engine
from contam.indexer.job import IndexJob
from contam.indexer.options import IndexOptions

write = indexing.SegmentStager._write
def write_then_die(self, *args):
    seg = write(self, *args)  # committed on the stager's connection, still pending
    if seg >= 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return seg
indexing.SegmentStager._write = write_then_die
opts = IndexOptions(workers=1, batch_size=20, segment_rows=4000)
with IndexJob(make_engine(sys.argv[1]), "web", SignatureConfig(), opts) as job:
    job.run([Path(sys.argv[2])])
"""


def _postings_by_document(eng: Engine) -> tuple[Counter[tuple[int, str]], Counter[tuple[int, str, int]]]:
    """The published postings with documents named by their external ids (ids differ between runs)."""
    with eng.connect() as conn:
        names = {int(i): e for i, e in conn.exec_driver_sql("SELECT id, external_id FROM document")}
        segs = repo.segments(conn, None)
        ngrams = Counter((k, names[d]) for _, k, d in repo.postings(conn, "ngram", segs))
        bands = Counter((k, names[d], w) for _, k, d, w in repo.postings(conn, "band", segs))
    return ngrams, bands


def test_a_killed_indexer_leaves_no_visible_segment(
    pg: tuple[str, Engine], tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """Killed (-9) after two full segments were written outside its group: nothing of the run
    is visible (no segment, no posting, no file), and the rerun drops what it left and indexes
    the same postings as an uninterrupted run."""
    url, eng = pg
    corpus = tmp_path / "corpus.jsonl"
    words = [f"w{i}" for i in range(400)]
    rng = np.random.default_rng(3)
    docs = [{"id": f"d{i}", "text": " ".join(rng.choice(words, 120))} for i in range(300)]
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs))
    run = subprocess.run(
        [sys.executable, "-c", _KILL_AFTER_STAGING, url, str(corpus)], cwd=ROOT, env=os.environ, capture_output=True
    )
    assert run.returncode == -signal.SIGKILL, run.stderr.decode()[-2000:]
    left = _pending(eng)
    assert len(left) >= 2 and all(p for _, p in left) and _block_segs(eng) >= {s for s, _ in left}
    with eng.connect() as conn:
        assert repo.segments(conn, None) == []
        assert conn.exec_driver_sql("SELECT count(*) FROM corpus_file").scalar_one() == 0
        assert repo.band_hits(conn, repo.postings(conn, "band")[0][1:2], None) == {}

    index_corpus(eng, corpus, workers=1, batch_size=20, segment_rows=4000)
    assert all(not p for _, p in _pending(eng))
    assert _block_segs(eng) == {s for s, _ in _pending(eng)}  # the killed run's blocks are gone
    name, ref_url = make_pg_database()
    try:
        upgrade(ref_url)
        ref = make_engine(ref_url)
        index_corpus(ref, corpus, workers=1, batch_size=20, segment_rows=4000)
        assert _postings_by_document(eng) == _postings_by_document(ref)
        ref.dispose()
    finally:
        drop_pg_database(name)


def test_a_file_another_indexer_committed_meanwhile_names_its_path(pg: tuple[str, Engine]) -> None:
    """start_file of a content another indexer committed while this one waited for its claim: the
    path it was committed under (the writer reports the file `unchanged`, naming it; a review)."""
    _, eng = pg
    with eng.begin() as conn:
        cid = repo.create_corpus(conn, "c", SignatureConfig(), True)
    with CorpusWriter(eng, cid) as first:
        first.begin()
        file_id = first.start_file("/data/a.jsonl", 10, "h1")
        assert isinstance(file_id, int)
        first.commit()
    with CorpusWriter(eng, cid) as second:
        second.begin()
        assert second.start_file("/data/copy/a.jsonl", 10, "h1") == "/data/a.jsonl"
        second.rollback()
