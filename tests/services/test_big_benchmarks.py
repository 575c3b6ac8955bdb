"""Big benchmarks: read and scored as a stream (memory bounded by a chunk, not the file),
progress from the first items, results as before (issue 11, point 4)."""

from __future__ import annotations

import functools
import json
import random
import subprocess
import sys
import textwrap
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import IndexCorpus
from helpers import delete_at_progress_step, make_docs, only_thread
from sqlalchemy import Engine, event, text

from contam.app.core.types import BenchmarkItem
from contam.app.errors import InputError
from contam.app.limits import Limits
from contam.app.readers.benchmark import iter_benchmark, read_benchmark
from contam.app.services import scanning
from contam.app.services.checking import CheckService
from contam.app.services.reports import ReportService
from contam.app.services.scanning import Scanner
from contam.app.store.db import make_engine, upgrade

ROOT = Path(__file__).resolve().parents[2]
VOCAB = [f"w{i}" for i in range(3000)]


def _reading_set(path: Path, n: int, docs: list[dict[str, str]]) -> None:
    """n items of a ~6 kB passage and a short question, one in ten copied from a document."""
    rng = random.Random(1)
    with path.open("w") as f:
        for i in range(n):
            question = docs[i % len(docs)]["text"][:200] if i % 10 == 0 else " ".join(rng.choices(VOCAB, k=15))
            rec = {"id": f"b{i}", "context": " ".join(rng.choices(VOCAB, k=1000)), "question": question}
            f.write(json.dumps(rec) + "\n")


PEAK = textwrap.dedent(
    """
    import json, resource, sys
    from pathlib import Path
    import contam.app.services.scanning as scanning
    from contam.app.services.checking import CheckService
    from contam.app.store.db import make_engine

    scanning.CHUNK = 100
    svc = CheckService(make_engine(sys.argv[1]), workers=1)
    svc.path(Path(sys.argv[3]))  # imports and caches warmed by a one-item file
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    checked = svc.path(Path(sys.argv[2]), keep_text=False)
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    print(json.dumps({"grown_mb": grown, "items": len(checked.results), "counts": checked.summary["counts"]}))
    """
)


def _peak(script: str, tmp_path: Path, index_corpus: IndexCorpus) -> dict:
    """What `script` prints, run in a process of its own on 1,000 reading-comprehension items
    (one in ten copied from an indexed document), after a one-item warm-up."""
    url = f"sqlite:///{tmp_path}/big.db"
    upgrade(url)
    docs = make_docs(20, 300, 3, "d")
    index_corpus(url, docs)
    bench, one = tmp_path / "big.jsonl", tmp_path / "one.jsonl"
    _reading_set(bench, 1000, docs)
    one.write_text(json.dumps({"question": "a warm-up item of a few words"}) + "\n")
    out = subprocess.run(
        [sys.executable, "-c", script, url, str(bench), str(one)], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_scanning_a_benchmark_file_holds_chunks_not_the_file(tmp_path: Path, index_corpus: IndexCorpus) -> None:
    """A 6 MB reading-comprehension file (1,000 items of a long passage and a short question)
    grew a process by 173 MB: every item, its record, its passage's n-grams (as a set of Python
    ints) and every result were held at once. Read and scored as a stream, chunk by chunk, the
    process grows by what one chunk takes, whatever the file's size."""
    measured = _peak(PEAK, tmp_path, index_corpus)
    assert measured["items"] == 1000 and measured["counts"]["suspicious"] + measured["counts"]["contaminated"] == 100
    assert measured["grown_mb"] < 80, measured  # 173 MB before


PEAK_JOB = textwrap.dedent(
    """
    import json, resource, sys
    from pathlib import Path
    import contam.app.services.scanning as scanning
    from contam.app.services.reports import ReportService
    from contam.app.store.db import make_engine

    scanning.CHUNK = 100
    svc = ReportService(make_engine(sys.argv[1]), 1 << 30, scan_workers=1)
    svc.submit(Path(sys.argv[3]), "one.jsonl", background=False)  # imports and caches warmed
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rid = svc.submit(Path(sys.argv[2]), "big.jsonl", background=False)
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    rep = svc.get(rid)
    print(json.dumps({"grown_mb": grown, "done": rep["done_items"], "counts": rep["summary"]["counts"]}))
    """
)


def test_a_report_job_holds_chunks_not_the_upload(tmp_path: Path, index_corpus: IndexCorpus) -> None:
    """The server's path, as an upload takes it: stored, then scored by a report job (a 191 MB
    upload once took the server to 10.3 GB). The server process grows by what a chunk takes,
    not by the file: the upload is spooled, pass 1 runs in a process of its own, and each
    chunk's results are written as it is scored."""
    measured = _peak(PEAK_JOB, tmp_path, index_corpus)
    assert measured["done"] == 1000 and measured["counts"]["suspicious"] + measured["counts"]["contaminated"] == 100
    assert measured["grown_mb"] < 60, measured  # 23 MB measured


def test_the_report_shows_progress_before_the_first_full_chunk_is_scored(
    engine: Engine, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job once showed 0 done until its first chunk of 500 items was scored; the first chunks
    are now small, so progress moves after the first ten items."""
    index_corpus(engine, make_docs(3, 60, 1, "a"), "web")
    steps: list[int] = []
    from contam.app.store import reports as rrepo

    real = rrepo.set_progress

    def recorded(conn, report_id, done, owner=None):  # type: ignore[no-untyped-def]
        steps.append(done)
        return real(conn, report_id, done, owner)

    monkeypatch.setattr(rrepo, "set_progress", recorded)
    data = "".join(json.dumps({"id": f"q{i}", "question": f"question {i} about rivers"}) + "\n" for i in range(600))
    rid = ReportService(engine, 1 << 22).submit(data.encode(), "b.jsonl", background=False)
    assert steps[0] == 10 and steps[-1] == 600 and steps == sorted(steps)
    assert ReportService(engine, 1 << 22).get(rid)["done_items"] == 600


def test_streamed_chunks_give_the_results_of_one_pass(
    engine: Engine, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Items scored a chunk at a time (each chunk reading the benchmark-wide tables built in a
    first pass) score exactly as in one chunk: shared text, duplicates and bits alike."""
    from test_scanning import CORPUS, ITEMS

    index_corpus(engine, CORPUS)
    scanner = Scanner(engine)
    items = [*ITEMS, *ITEMS, BenchmarkItem("x", 99, question=ITEMS[0].question + " and one more clause")]
    items = [BenchmarkItem(f"i{k}", k, it.question, it.passage, it.choices, it.answer) for k, it in enumerate(items)]
    whole = [r.as_dict() for r in scanner.scan(items)]
    monkeypatch.setattr(scanning, "FIRST_CHUNKS", (1, 2))
    monkeypatch.setattr(scanning, "CHUNK", 3)
    parts = list(scanner.scan_stream(lambda: iter(items)))
    assert [len(p) for p in parts][:3] == [1, 2, 3]
    assert [r.as_dict() for p in parts for r in p] == whole


def test_a_benchmark_file_is_read_as_a_stream(tmp_path: Path) -> None:
    """iter_benchmark yields the first item before reading the rest of the file: a broken line
    far down is only met when reading gets there (the whole file was parsed first)."""
    path = tmp_path / "b.jsonl"
    path.write_text(json.dumps({"question": "first item here"}) + "\n" + "x" * 10 + "\n")
    items = iter_benchmark(path, "b.jsonl")
    assert next(items).question == "first item here"
    with pytest.raises(InputError, match="line 2 is not valid JSON"):
        next(items)
    table = pa.table({"question": [f"q {i}" for i in range(2500)]})
    pq.write_table(table, tmp_path / "b.parquet", row_group_size=500)
    streamed = list(iter_benchmark(tmp_path / "b.parquet", "b.parquet"))
    assert [i.question for i in streamed] == [
        i.question for i in read_benchmark((tmp_path / "b.parquet").read_bytes(), "b.parquet")[0]
    ]
    assert len(streamed) == 2500


def test_a_check_of_a_file_keeps_only_figures_when_asked(
    engine: Engine, index_corpus: IndexCorpus, tmp_path: Path
) -> None:
    index_corpus(engine, make_docs(3, 60, 1, "a"), "web")
    path = tmp_path / "b.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"q{i}", "question": f"question {i} of rivers"}) + "\n" for i in range(5))
    )
    full = CheckService(engine).path(path)
    lean = CheckService(engine).path(path, keep_text=False)
    assert [r.as_dict() for r in lean.results] == [r.as_dict() for r in full.results]
    assert lean.summary == full.summary and lean.mapping == full.mapping == {"question": "question", "id": "id"}
    assert lean.results[0].item.question == "" and full.results[0].item.question == "question 0 of rivers"


def test_deleting_a_report_stops_a_job_scored_by_worker_processes(
    engine: Engine, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With chunks in flight in worker processes, a DELETE stops the job at its next progress
    step (the chunks not started are dropped) and leaves neither report nor items."""
    import threading

    from sqlalchemy import func, select

    from contam.app.store.schema import report, report_item

    index_corpus(engine, make_docs(3, 60, 1, "a"), "web")
    monkeypatch.setattr(scanning, "CHUNK", 2)
    monkeypatch.setattr(scanning, "FIRST_CHUNKS", ())
    svc = ReportService(engine, 1 << 20, scan_workers=2)
    steps = delete_at_progress_step(monkeypatch, svc, 2)
    keep_alive = threading.Event()  # a second thread, as in the server: workers start from a fork server
    threading.Thread(target=keep_alive.wait, daemon=True).start()
    data = "".join(json.dumps({"id": f"q{i}", "question": f"question {i} about rivers"}) + "\n" for i in range(40))
    svc.submit(data.encode(), "b.jsonl", background=False)
    keep_alive.set()
    assert steps == [2, 4]  # of twenty chunks
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(report)).scalar_one() == 0
        assert conn.execute(select(func.count()).select_from(report_item)).scalar_one() == 0


PASS1 = textwrap.dedent(
    """
    import functools, json, resource, sys
    from pathlib import Path
    from contam.app.limits import Limits
    from contam.app.readers.benchmark import iter_benchmark
    from contam.app.services.scanning import Scanner
    from contam.app.store.db import make_engine

    scanner = Scanner(make_engine(sys.argv[1]), workers=2)
    warm = functools.partial(iter_benchmark, Path(sys.argv[3]), "one.jsonl", None, Limits(), keep_raw=False)
    list(scanner.scan_stream(warm))  # imports and caches warmed by a one-item file
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    source = functools.partial(iter_benchmark, Path(sys.argv[2]), "big.jsonl", None, Limits(), keep_raw=False)
    read = []
    stream = scanner.scan_stream(source, reading=read.append)
    first = next(stream)
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    stream.close()
    print(json.dumps({"grown_mb": grown, "first": len(first), "read": read}))
    """
)


def test_the_first_pass_runs_in_a_process_that_gives_its_memory_back(tmp_path: Path, index_corpus: IndexCorpus) -> None:
    """Pass 1 (the benchmark-wide tables) took a Python object per item in the process that ran
    the scan, and the allocator kept what they took: a 200 MB upload left the server about 400
    MB larger for the rest of its life. Pass 1 now runs in a process of its own that exits
    (the tables come back as files, mapped): the scanning process does not grow by its peak,
    and the items read are reported as they are read."""
    url = f"sqlite:///{tmp_path}/big.db"
    upgrade(url)
    index_corpus(url, make_docs(5, 100, 1, "d"))
    rng = random.Random(2)
    bench, one = tmp_path / "big.jsonl", tmp_path / "one.jsonl"
    with bench.open("w") as f:  # 4,000 items of ~170 scored tokens: the process grew by 185 MB before
        for i in range(4000):
            rec = {"id": f"b{i}", "question": " ".join(rng.choices(VOCAB, k=150)), "choices": ["a b c d e"] * 4}
            f.write(json.dumps(rec) + "\n")
    one.write_text(json.dumps({"question": "a warm-up item of a few words"}) + "\n")
    out = subprocess.run(
        [sys.executable, "-c", PASS1, url, str(bench), str(one)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    measured = json.loads(out.stdout)
    assert measured["first"] == 10
    assert measured["read"] == sorted(measured["read"]) and measured["read"][-1] == 4000, measured["read"]
    assert measured["grown_mb"] < 30, measured


def test_a_report_shows_items_read_before_any_is_scored(
    engine: Engine, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first progress a 200 MB upload showed came after pass 1 had read every item (2 to 9
    minutes): the job now records the items read as pass 1 goes (phase 'reading'), and the
    report, its API record and its page show them; then the items scored (phase 'scoring')."""
    from fastapi.testclient import TestClient

    from contam.app.api.main import create_app
    from contam.app.settings import Settings
    from contam.app.store import reports as rrepo

    index_corpus(engine, make_docs(3, 60, 1, "a"), "web")
    monkeypatch.setattr(scanning, "READ_POLL", 0.001)
    monkeypatch.setattr(scanning, "READ_EVERY", 10)
    steps: list[tuple[str, int, str]] = []
    real_read, real_done = rrepo.set_read, rrepo.set_progress
    svc = ReportService(engine, 1 << 24)

    def read(conn, report_id, n, owner=None):  # type: ignore[no-untyped-def]
        ok = real_read(conn, report_id, n, owner)
        steps.append(("read", n, rrepo.get(conn, report_id)["phase"]))
        return ok

    def done(conn, report_id, n, owner=None):  # type: ignore[no-untyped-def]
        steps.append(("done", n, ""))
        return real_done(conn, report_id, n, owner)

    monkeypatch.setattr(rrepo, "set_read", read)
    monkeypatch.setattr(rrepo, "set_progress", done)
    rng = random.Random(3)
    data = "".join(
        json.dumps({"id": f"q{i}", "question": " ".join(rng.choices(VOCAB, k=60))}) + "\n" for i in range(3000)
    )
    rid = svc.submit(data.encode(), "b.jsonl", background=False)
    reads = [n for kind, n, _ in steps if kind == "read"]
    first_done = next(k for k, (kind, _n, _p) in enumerate(steps) if kind == "done")
    assert all(kind == "read" for kind, _n, _p in steps[:first_done])  # every read before any score
    assert reads == sorted(reads) and reads[-1] == 3000
    assert any(0 < n < 3000 for n in reads), reads  # from the first items, not only at the end
    assert [p for kind, n, p in steps if kind == "read" and n < 3000] == ["reading"] * (len(reads) - 1)
    assert svc.get(rid)["read_items"] == 3000 and svc.get(rid)["phase"] == "done"
    # a job half-way through reading, as the API and the dashboard show it
    with TestClient(create_app(Settings(database_url=engine.url.render_as_string(hide_password=False)))) as c:
        with engine.begin() as conn:  # once the app has started (it would resume a running job)
            rrepo.set_status(conn, rid, "running", done_items=0, read_items=1200)
        rec = c.get(f"/api/v1/reports/{rid}").json()
        assert (rec["phase"], rec["read_items"], rec["done_items"]) == ("reading", 1200, 0)
        said = "reading items</strong> (first pass, before scoring), 1,200 of 3,000 read"
        assert said in c.get(f"/reports/{rid}").text


def test_the_document_cache_is_bounded_by_bytes(
    engine: Engine, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache of tokenised documents was bounded by a count (4,096 documents whatever their
    length: a GB of long web pages in every scan worker); it now holds DOC_CACHE_BYTES, and
    what it evicts is read again, to the same results."""
    docs = make_docs(40, 400, 5, "d")  # ~400 tokens each, ~25 kB tokenised
    index_corpus(engine, docs, "web")
    items = [BenchmarkItem(f"i{k}", k, question=" ".join(d["text"].split()[20:60])) for k, d in enumerate(docs)]
    whole = [r.as_dict() for r in Scanner(engine).scan(items)]
    monkeypatch.setattr(scanning, "DOC_CACHE_BYTES", 100_000)
    small = Scanner(engine)
    assert [r.as_dict() for r in small.scan(items)] == whole
    assert 0 < small._cached <= 100_000 and 1 < len(small._docs) < 40
    assert small._cached == sum(d.nbytes for d in small._docs.values())


_NOTED: dict[str, Any] = {}  # the file _noting_chunk writes to, and the chunk function it calls


def _noting_chunk(lo: int, items: list[BenchmarkItem]) -> Any:
    """scanning._forked_chunk, noting first how many filter parts the worker holds (a function of
    this module: the pool sends it by name)."""
    from contam.app.store import repo

    seen, chunk = _NOTED["to"]
    with seen.open("a") as f:
        f.write(f"{len(repo._filters)}\n")
    return chunk(lo, items)


def test_the_key_filters_are_read_while_pass_1_runs(
    tmp_path: Path, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each scan worker read every key filter of the index for its first chunk (95 MB from
    PostgreSQL for a 200 MB corpus), after pass 1. The scanning process reads them while pass 1
    runs in its own, so the workers it forks hold them when their first chunk starts; a server
    (threads: workers from a fork server) does not; filters larger than half the cache are left
    to the look-ups."""
    import threading

    from contam.app.store import repo

    url = f"sqlite:///{tmp_path}/f.db"
    upgrade(url)
    index_corpus(url, make_docs(5, 100, 1, "d"))
    bench = tmp_path / "b.jsonl"
    bench.write_text(
        "".join(json.dumps({"id": f"b{i}", "question": f"question {i} about rivers"}) + "\n" for i in range(40))
    )
    source = functools.partial(iter_benchmark, bench, "b.jsonl", None, Limits(), keep_raw=False)
    scanner = Scanner(make_engine(url), workers=2)
    with scanner.engine.connect() as conn:
        parts = conn.execute(text("SELECT count(*) FROM key_filter")).scalar_one()
    assert parts == 2  # one per posting table
    seen = tmp_path / "seen"
    monkeypatch.setitem(_NOTED, "to", (seen, scanning._forked_chunk))
    monkeypatch.setattr(scanning, "_forked_chunk", _noting_chunk)
    monkeypatch.setattr(repo, "_filters", OrderedDict())
    monkeypatch.setattr(repo, "_filters_size", 0)
    assert not only_thread(), threading.enumerate()  # so the scan forks its workers
    assert sum(len(r) for r in scanner.scan_stream(source)) == 40
    noted = seen.read_text().split()  # one line per chunk, each scored by a worker
    assert len(noted) >= 2 and set(noted) == {str(parts)}, noted
    # a process running threads (the server) starts its workers from a fork server: they would
    # not inherit the filters, so it does not read them for them
    monkeypatch.setattr(scanning, "_forked_chunk", _NOTED["to"][1])  # sent to a fresh process by name
    monkeypatch.setattr(repo, "_filters", OrderedDict())
    stop = threading.Event()
    threading.Thread(target=stop.wait, daemon=True).start()
    try:
        assert sum(len(r) for r in scanner.scan_stream(source)) == 40
    finally:
        stop.set()
    assert not repo._filters
    monkeypatch.setattr(repo, "_filters", OrderedDict())
    monkeypatch.setattr(repo, "FILTER_CACHE_BYTES", 2 * repo._filters_size - 2)
    with scanner.engine.connect() as conn:
        assert repo.read_filters(conn, None) == 0
    assert not repo._filters


def test_threads_reading_one_filter_count_it_once(tmp_path: Path, index_corpus: IndexCorpus) -> None:
    """Threads of a server (a report job's scan, /check requests) that miss the same filter part
    at once each read it, but the cache holds it once and counts its bytes once: counted twice,
    the cache would stay that much fuller than it is and drop parts early for good."""
    from concurrent.futures import ThreadPoolExecutor

    from contam.app.store import repo

    url = f"sqlite:///{tmp_path}/t.db"
    upgrade(url)
    index_corpus(url, make_docs(5, 100, 1, "d"))
    engine = make_engine(url)
    fetched = threading.Barrier(4, timeout=30)

    @event.listens_for(engine, "before_cursor_execute")
    def together(_conn: Any, _cur: Any, statement: str, *_rest: Any) -> None:
        if statement.startswith("SELECT bits FROM key_filter"):
            fetched.wait()  # each part is read by all four threads: every one of them missed it

    def one() -> int:
        with engine.connect() as conn:
            return repo.read_filters(conn, None)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(repo, "_filters", OrderedDict())
        mp.setattr(repo, "_filters_size", 0)
        with ThreadPoolExecutor(4) as pool:
            sizes = list(pool.map(lambda _k: one(), range(4)))
        assert repo._filters_size == sum(len(b) for b in repo._filters.values()) == sizes[0] > 0
