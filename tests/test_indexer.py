"""The indexer against real SQLite and PostgreSQL databases."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import select, text
from typer.testing import CliRunner

from app.core.config import SignatureConfig
from app.errors import FingerprintMismatch, SettingsConflict
from app.store import repo
from app.store.db import make_engine
from app.store.schema import band, corpus_file, document, ngram
from indexer.cli import app as cli
from indexer.job import IndexJob, IndexOptions

VOCAB = [f"w{i}" for i in range(5000)]


def make_docs(n: int, words: int, seed: int, prefix: str) -> list[dict]:
    import random

    rng = random.Random(seed)
    return [{"id": f"{prefix}{i}", "text": " ".join(rng.choices(VOCAB, k=words))} for i in range(n)]


def write_jsonl(path: Path, docs: list[dict], gz: bool = False) -> Path:
    data = "".join(json.dumps(d) + "\n" for d in docs).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def snapshot(url: str) -> dict:
    """The index content, independent of internal ids."""
    eng = make_engine(url)
    with eng.connect() as conn:
        ext = dict(conn.execute(select(document.c.id, document.c.external_id)).all())
        docs = sorted(conn.execute(select(document.c.external_id, document.c.n_tokens, document.c.text_hash)).all())
        grams = sorted((h, ext[d]) for h, d in conn.execute(select(ngram.c.hash, ngram.c.doc_id)).all())
        bands = sorted((k, ext[d], w) for k, d, w in conn.execute(select(band.c.key, band.c.doc_id, band.c.win)).all())
        files = sorted(conn.execute(select(corpus_file.c.path, corpus_file.c.status, corpus_file.c.n_docs)).all())
    eng.dispose()
    return {"docs": docs, "grams": grams, "bands": bands, "files": files}


def run_index(url: str, paths: list[Path], name: str = "c", cfg: SignatureConfig | None = None, **opts):
    eng = make_engine(url)
    try:
        with IndexJob(eng, name, cfg or SignatureConfig(), IndexOptions(**opts)) as job:
            return job.run(paths)
    finally:
        eng.dispose()


def test_index_counts_and_rerun_is_idempotent(migrated_url: str, tmp_path: Path) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", make_docs(30, 120, 1, "a"))
    b = write_jsonl(tmp_path / "b.jsonl.gz", make_docs(20, 80, 2, "b"), gz=True)
    s = run_index(migrated_url, [tmp_path], batch_size=7)
    d = s.as_dict()
    assert (d["files_indexed"], d["documents"], d["tokens"]) == (2, 50, 30 * 120 + 20 * 80)
    assert d["windows"] > 50 and d["ngrams"] > 0.95 * (30 * 113 + 20 * 73)
    first = snapshot(migrated_url)
    assert len(first["grams"]) == d["ngrams"]
    if migrated_url.startswith("postgresql"):  # planner statistics refreshed after the bulk load
        eng = make_engine(migrated_url)
        with eng.connect() as conn:
            analyzed = conn.execute(text("SELECT last_analyze FROM pg_stat_user_tables WHERE relname = 'ngram'"))
            assert analyzed.scalar_one() is not None
        eng.dispose()
    again = run_index(migrated_url, [a, b])
    assert again.as_dict()["files_unchanged"] == 2 and again.as_dict()["documents"] == 0
    assert snapshot(migrated_url) == first
    # the same content under another path is the same file
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "a2.jsonl").write_bytes(a.read_bytes())
    assert run_index(migrated_url, [tmp_path / "copy"]).as_dict()["files_unchanged"] == 1


def test_parallel_workers_give_the_same_index(db_url: str, tmp_path: Path) -> None:
    from app.store.db import upgrade

    write_jsonl(tmp_path / "a.jsonl", make_docs(40, 200, 3, "a"))
    write_jsonl(tmp_path / "b.jsonl", make_docs(40, 50, 4, "b"))
    upgrade(db_url)
    run_index(db_url, [tmp_path], workers=2, batch_size=5)
    parallel = snapshot(db_url)
    other = tmp_path / "serial.db"
    serial_url = f"sqlite:///{other}"
    upgrade(serial_url)
    run_index(serial_url, [tmp_path], workers=1, batch_size=1000)
    assert snapshot(serial_url) == parallel


def test_mismatched_settings_are_refused(migrated_url: str, tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "a.jsonl", make_docs(3, 50, 1, "a"))
    run_index(migrated_url, [f])
    g = write_jsonl(tmp_path / "b.jsonl", make_docs(3, 50, 2, "b"))
    with pytest.raises(FingerprintMismatch, match="ngram_n: index has 8, requested 13"):
        run_index(migrated_url, [g], cfg=SignatureConfig(ngram_n=13))
    # a different corpus name may use other settings
    assert run_index(migrated_url, [g], name="other", cfg=SignatureConfig(ngram_n=13)).as_dict()["documents"] == 3


def test_keeping_text_or_not_is_a_settings_conflict(migrated_url: str, tmp_path: Path) -> None:
    """store_text is fixed per corpus; asking otherwise is a conflict (the API's 409), not bad input."""
    run_index(migrated_url, [write_jsonl(tmp_path / "a.jsonl", make_docs(3, 50, 1, "a"))])
    with pytest.raises(SettingsConflict, match="store_text=True; keep it the same"):
        run_index(migrated_url, [write_jsonl(tmp_path / "b.jsonl", make_docs(3, 50, 2, "b"))], store_text=False)


def test_corrupt_file_fails_alone_and_exit_code(migrated_url: str, tmp_path: Path) -> None:
    write_jsonl(tmp_path / "good.jsonl", make_docs(5, 40, 1, "g"))
    blob = gzip.compress("".join(json.dumps(d) + "\n" for d in make_docs(400, 60, 2, "x")).encode())
    (tmp_path / "broken.jsonl.gz").write_bytes(blob[: len(blob) // 2])
    bad_lines = tmp_path / "messy.jsonl"
    bad_lines.write_bytes(b'{"id": 1, "text": "fine text here"}\nnot json\n{"id": 2, "text": 7}\n{"id": 3}\n')
    result = CliRunner().invoke(
        cli, ["index", "--corpus", "c", "--db", migrated_url, "--workers", "1", "--progress", "none", str(tmp_path)]
    )
    assert result.exit_code == 1, result.output
    assert "broken.jsonl.gz" in result.output and "cannot read to the end" in result.output
    eng = make_engine(migrated_url)
    with eng.connect() as conn:
        row = repo.get_corpus(conn, "c")
        assert row is not None
        health = repo.corpus_health(conn, row["id"])
        # nothing of the broken file was kept
        n_docs = conn.execute(text("SELECT count(*) FROM document")).scalar_one()
    eng.dispose()
    assert n_docs == 6
    assert health["documents"] == 6 and health["files"] == 2
    assert health["skipped"] == {"malformed_json": 1, "missing_text": 1, "non_string_text": 1}
    assert [f["path"].endswith("broken.jsonl.gz") for f in health["failed_files"]] == [True]
    # `contam corpora NAME` shows it; a rerun retries the failed file (and fails again)
    shown = CliRunner().invoke(cli, ["corpora", "c", "--db", migrated_url])
    assert shown.exit_code == 0 and '"failed_files"' in shown.output and "broken.jsonl.gz" in shown.output
    listed = CliRunner().invoke(cli, ["corpora", "--db", migrated_url])
    assert "c: 2 files (1 failed), 6 documents" in listed.output
    rerun = CliRunner().invoke(
        cli, ["index", "--corpus", "c", "--db", migrated_url, "--workers", "1", "--progress", "none", str(tmp_path)]
    )
    assert rerun.exit_code == 1 and '"files_unchanged": 2' in rerun.output


def test_corrupt_file_inside_a_group_leaves_the_rest_indexed_once(db_url: str, tmp_path: Path) -> None:
    """Files share a transaction; a corrupt one rolls back its group, whose good files are redone."""
    from app.store.db import upgrade

    mixed, clean = tmp_path / "mixed", tmp_path / "clean"
    mixed.mkdir()
    clean.mkdir()
    for d in (mixed, clean):
        write_jsonl(d / "a.jsonl", make_docs(40, 90, 1, "a"))
        write_jsonl(d / "c.jsonl.gz", make_docs(30, 70, 3, "c"), gz=True)
    blob = gzip.compress("".join(json.dumps(d) + "\n" for d in make_docs(300, 60, 2, "b")).encode())
    (mixed / "b-broken.jsonl.gz").write_bytes(blob[: len(blob) // 2])
    upgrade(db_url)
    s = run_index(db_url, [mixed], batch_size=25)  # default grouping: a and b share a transaction
    assert [(Path(f.path).name, f.status) for f in s.files] == [
        ("a.jsonl", "done"),
        ("b-broken.jsonl.gz", "failed"),
        ("c.jsonl.gz", "done"),
    ]
    assert s.as_dict()["documents"] == 70
    fresh_url = f"sqlite:///{tmp_path / 'fresh.db'}"
    upgrade(fresh_url)
    run_index(fresh_url, [clean], batch_size=25)
    got, want = snapshot(db_url), snapshot(fresh_url)
    assert got["docs"] == want["docs"] and got["grams"] == want["grams"] and got["bands"] == want["bands"]
    assert [(Path(p).name, st, n) for p, st, n in got["files"]] == [
        ("a.jsonl", "done", 40),
        ("b-broken.jsonl.gz", "failed", 0),
        ("c.jsonl.gz", "done", 30),
    ]


def _bulk_insert_round_trip(url: str, param_limit: int | None = None) -> None:
    import sqlite3

    import numpy as np

    from app.store.db import upgrade

    upgrade(url)
    rng = np.random.default_rng(1)
    h = np.sort(rng.integers(-(2**63), 2**63 - 1, 2503, dtype=np.int64))
    d = rng.integers(1, 50, 2503).astype(np.int32)
    keys = np.sort(rng.integers(-(2**63), 2**63 - 1, 1001, dtype=np.int64))
    eng = make_engine(url)
    with eng.begin() as conn:
        if param_limit is not None:
            conn.connection.driver_connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, param_limit)
        repo.insert_ngrams(conn, 3, h, d)
        repo.insert_bands(conn, 3, keys, np.full(1001, 7, np.int32), np.arange(1001, dtype=np.int32))
    with eng.connect() as conn:
        got = sorted(conn.execute(select(ngram.c.seg, ngram.c.hash, ngram.c.doc_id)).all())
        bands = sorted(conn.execute(select(band.c.seg, band.c.key, band.c.doc_id, band.c.win)).all())
    eng.dispose()
    assert got == sorted((3, a, b) for a, b in zip(h.tolist(), d.tolist(), strict=True))
    assert bands == [(3, k, 7, w) for w, k in enumerate(keys.tolist())]


def test_bulk_insert_keeps_every_row(db_url: str) -> None:
    """Multi-row statements and their remainder insert exactly the rows given."""
    _bulk_insert_round_trip(db_url)


def test_bulk_insert_fits_an_old_sqlite_parameter_limit(tmp_path: Path) -> None:
    """SQLite before 3.32 binds at most 999 parameters: statements shrink to fit."""
    _bulk_insert_round_trip(f"sqlite:///{tmp_path / 'old.db'}", param_limit=999)


def test_an_error_while_reading_stops_the_run_and_keeps_no_part_of_it(
    migrated_url: str, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """An unexpected error (or Ctrl-C) in the middle of a file ends the run promptly, never hangs,
    and leaves only what was committed before it: here nothing, as the files share a group."""
    import threading

    import indexer.job as job_module

    write_jsonl(tmp_path / "a.jsonl", make_docs(30, 50, 1, "a"))
    write_jsonl(tmp_path / "b.jsonl", make_docs(30, 50, 2, "b"))
    real = job_module.read_documents

    def failing(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        for i, doc in enumerate(real(path, *args, **kwargs)):
            if path.name == "b.jsonl" and i == 20:
                raise PermissionError(f"{path}: lost access")
            yield doc

    monkeypatch.setattr(job_module, "read_documents", failing)
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            run_index(migrated_url, [tmp_path], batch_size=5)
        except BaseException as exc:
            outcome.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "the indexer hung after an error in the main thread"
    assert len(outcome) == 1 and isinstance(outcome[0], PermissionError)
    assert snapshot(migrated_url)["docs"] == []


class _Events:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def run_started(self, files: list[Path]) -> None:
        pass

    def file_started(self, path: str, size: int) -> None:
        self.seen.append("start " + Path(path).name)

    def advanced(self, documents: int, nbytes: int) -> None:
        pass

    def file_finished(self, report) -> None:  # type: ignore[no-untyped-def]
        self.seen.append("done " + Path(report.path).name)


@pytest.mark.parametrize(
    ("opts", "order"),
    [
        ({}, ["start a.jsonl", "start b.jsonl", "done a.jsonl", "done b.jsonl"]),
        ({"commit_bytes": 0}, ["start a.jsonl", "done a.jsonl", "start b.jsonl", "done b.jsonl"]),
        ({"commit_seconds": 0.0}, ["start a.jsonl", "done a.jsonl", "start b.jsonl", "done b.jsonl"]),
    ],
    ids=["grouped", "by-size", "by-time"],
)
def test_a_group_commits_at_its_size_or_time_limit(
    migrated_url: str, tmp_path: Path, opts: dict, order: list[str]
) -> None:
    """Files are reported done when their transaction commits."""
    write_jsonl(tmp_path / "a.jsonl", make_docs(5, 40, 1, "a"))
    write_jsonl(tmp_path / "b.jsonl", make_docs(5, 40, 2, "b"))
    events = _Events()
    eng = make_engine(migrated_url)
    with IndexJob(eng, "c", SignatureConfig(), IndexOptions(**opts), events) as job:
        job.run([tmp_path])
    eng.dispose()
    assert events.seen == order


def test_health_reports_duplicates_and_lengths(migrated_url: str, tmp_path: Path) -> None:
    docs = make_docs(4, 30, 1, "a") + [{"id": "dup", "text": make_docs(1, 30, 1, "a")[0]["text"]}]
    write_jsonl(tmp_path / "a.jsonl", docs)
    run_index(migrated_url, [tmp_path])
    eng = make_engine(migrated_url)
    with eng.connect() as conn:
        row = repo.get_corpus(conn, "c")
        assert row is not None
        h = repo.corpus_health(conn, row["id"])
    eng.dispose()
    assert h["duplicate_documents"] == 1
    assert h["tokens_per_document"]["p50"] == 30 and h["documents"] == 5 and h["segments"] == 1


def test_pointer_only_corpus_keeps_no_text(migrated_url: str, tmp_path: Path) -> None:
    write_jsonl(tmp_path / "a.jsonl", make_docs(3, 30, 1, "a"))
    run_index(migrated_url, [tmp_path], store_text=False)
    eng = make_engine(migrated_url)
    with eng.connect() as conn:
        assert conn.execute(select(document.c.text)).scalars().all() == [None, None, None]
        assert conn.execute(select(document.c.position)).scalars().all() == [1, 2, 3]
    eng.dispose()


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "indexer.cli", *args]


@pytest.mark.parametrize("commit_mb", ["0", "256"], ids=["commit-per-file", "commit-per-group"])
def test_killed_run_resumes_to_the_same_index(db_url: str, tmp_path: Path, commit_mb: str) -> None:
    """SIGKILL the indexer in the middle of a file, rerun, compare with an uninterrupted run.

    With a commit per file the first file survives the kill; with the default grouping the
    three small-to-medium files share one transaction and nothing survives. Either way the
    rerun ends with exactly the index of a run that was never interrupted.
    """
    from app.store.db import upgrade

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write_jsonl(corpus / "a-small.jsonl", make_docs(50, 100, 1, "a"))
    write_jsonl(corpus / "b-big.jsonl", make_docs(12000, 120, 2, "b"))
    write_jsonl(corpus / "c-small.jsonl.gz", make_docs(50, 100, 3, "c"), gz=True)
    upgrade(db_url)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    args = _cli(
        "index",
        "--corpus",
        "c",
        "--db",
        db_url,
        "--workers",
        "1",
        "--batch-size",
        "200",
        "--commit-mb",
        commit_mb,
        "--progress",
        "log",
        str(corpus),
    )
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("indexing [2/3]"):
            break
    time.sleep(0.3)  # well inside the big file, which takes over a second
    assert proc.poll() is None, "indexer finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = snapshot(db_url)
    survived = 1 if commit_mb == "0" else 0
    assert [f[0].endswith("a-small.jsonl") for f in partial["files"]] == [True] * survived
    assert len(partial["docs"]) == 50 * survived  # nothing of a file in progress
    done = subprocess.run(args, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert f'"files_unchanged": {survived}' in done.stdout and f'"files_indexed": {3 - survived}' in done.stdout
    resumed = snapshot(db_url)
    fresh_url = f"sqlite:///{tmp_path / 'fresh.db'}"
    upgrade(fresh_url)
    run_index(fresh_url, [corpus], batch_size=200)
    fresh = snapshot(fresh_url)
    assert resumed["docs"] == fresh["docs"] and len(fresh["docs"]) == 12100
    assert resumed["grams"] == fresh["grams"]
    assert resumed["bands"] == fresh["bands"]
    assert resumed["files"] == fresh["files"]


def test_segments_fill_to_their_size_then_rotate(engine) -> None:  # type: ignore[no-untyped-def]
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
    from conftest import drop_pg_database, make_pg_database

    from app.store.db import upgrade

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


def test_posting_buffer_merges_batches_into_key_order() -> None:
    """Runs sorted per batch, with increasing document ids, come out in (key, doc, win) order:
    SQLite inserts out of order rows several times slower (a missed sort once cost a third)."""
    import numpy as np

    from indexer.postings import merge_runs

    rng = np.random.default_rng(3)
    runs, doc = [], 0
    for _ in range(4):
        k = rng.integers(0, 50, 300)  # repeated keys across batches
        d = rng.integers(doc, doc + 20, 300).astype(np.int32)
        w = rng.integers(0, 5, 300).astype(np.int32)
        o = np.lexsort((w, d, k))
        runs.append((k[o], d[o], w[o]))
        doc += 20
    k, d, w = merge_runs(list(runs))
    o = np.lexsort((w, d, k))
    assert (k == k[o]).all() and (d == d[o]).all() and (w == w[o]).all()
    assert len(k) == 1200


def test_plan_merge_is_size_tiered() -> None:
    from app.services.segments import plan_merge

    assert plan_merge([(1, 10), (2, 10), (3, 5)], 10, 3) == [1, 2, 3]  # three of tier 0 (<= 10 rows)
    assert plan_merge([(1, 30), (2, 10), (3, 10)], 10, 3) == []  # one of tier 1, two of tier 0
    assert plan_merge([(1, 30), (2, 30), (4, 10), (3, 25)], 10, 3) == [1, 2, 3]  # tier 1: 11..30 rows


def test_interrupted_merge_keeps_every_row_once_and_is_finished_later(migrated_url: str, tmp_path: Path) -> None:
    """A merge moves rows one key range per transaction. Stopped half way (a killed run), every
    posting is still found exactly once; the next run finishes the merge."""
    from app.store.schema import segment

    write_jsonl(tmp_path / "a.jsonl", make_docs(40, 60, 1, "a"))
    run_index(migrated_url, [tmp_path / "a.jsonl"], batch_size=5, segment_rows=400, merge_fanout=0)
    eng = make_engine(migrated_url)
    with eng.connect() as conn:
        cid = repo.get_corpus(conn, "c")["id"]  # type: ignore[index]
        sources = repo.segments(conn, [cid])
        hashes = [h for (h,) in conn.execute(select(ngram.c.hash)).all()]
        keys = [k for (k,) in conn.execute(select(band.c.key)).all()]
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
    run_index(migrated_url, [tmp_path / "b.jsonl"], segment_rows=400, merge_fanout=0)  # finishes the merge
    with eng.connect() as conn:
        assert repo.unfinished_merges(conn, cid) == []
        segs = conn.execute(select(segment.c.id, segment.c.rows, segment.c.merging_into)).all()
        assert target in [s for s, _, _ in segs] and not set(sources) & {s for s, _, _ in segs}
        assert all(m is None for _, _, m in segs)
        table_rows = len(conn.execute(select(ngram.c.seg)).all()) + len(conn.execute(select(band.c.seg)).all())
        after = repo.ngram_df(conn, hashes, [cid])
    eng.dispose()
    assert after == before[0]
    assert sum(n for _, n, _ in segs) == table_rows  # the per-segment counts stayed right
