"""The Ray executor (`contam index --executor ray`) on a local Ray cluster of 2 CPUs, started
once for this module and stopped after it, against the PostgreSQL server: the same index as
the local executor, row for row; a worker killed mid-file loses and duplicates nothing; two
runs that overlap share the files, each indexed once; claims lapse and are taken over; SQLite
is refused."""

from __future__ import annotations

import contextlib
import gzip
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray
from conftest import IndexCorpus
from helpers import make_docs, report_by_content, snapshot, tied_pages, write_jsonl
from ray.core.generated.common_pb2 import ActorDiedErrorContext
from sqlalchemy import Engine, text
from typer.testing import CliRunner, Result

import contam
from contam.app.core.config import SignatureConfig
from contam.app.core.types import BenchmarkItem
from contam.app.errors import ConfigError, ContamError, NotStarted
from contam.app.store import repo
from contam.app.store.db import make_engine, upgrade
from contam.indexer import cluster
from contam.indexer.cli import app as cli
from contam.indexer.cluster import KILL_MARKER, RayJob, require_ray_head
from contam.indexer.options import IndexOptions
from contam.indexer.summary import IndexSummary

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.ray  # run last: tests/conftest.py


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A local Ray cluster of 2 CPUs (its address) and the kill hook's marker file path."""
    marker = tmp_path_factory.mktemp("ray") / "kill-marker"
    os.environ[KILL_MARKER] = str(marker)  # before ray.init: the workers inherit it
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    try:
        yield ray.get_runtime_context().gcs_address, marker
    finally:
        ray.shutdown()
        os.environ.pop(KILL_MARKER, None)


def ray_index(url: str, paths: list[Path], **kw: object) -> IndexSummary:
    engine = make_engine(url)
    opts = {k: kw.pop(k) for k in list(kw) if k in IndexOptions.__dataclass_fields__}
    try:
        with RayJob(engine, "web", SignatureConfig(), IndexOptions(**opts), **kw) as job:  # type: ignore[arg-type]
            return job.run(paths)
    finally:
        engine.dispose()


def corpus_files(root: Path, n: int, docs: int = 30, words: int = 150) -> list[Path]:
    root.mkdir(exist_ok=True)
    return [write_jsonl(root / f"f{i:02d}.jsonl", make_docs(docs, words, 100 + i, f"f{i}-")) for i in range(n)]


def counts(url: str) -> tuple[int, int, int, int]:
    """documents, distinct external ids, files done, claims left."""
    eng = make_engine(url)
    with eng.connect() as conn:
        docs, distinct = conn.execute(text("SELECT count(*), count(DISTINCT external_id) FROM document")).one()
        done = conn.execute(text("SELECT count(*) FROM corpus_file WHERE status = 'done'")).scalar_one()
        claims = conn.execute(text("SELECT count(*) FROM file_claim")).scalar_one()
    eng.dispose()
    return int(docs), int(distinct), int(done), int(claims)


def test_ray_index_equals_local_index(
    ray_cluster: tuple[str, Path], pg_url: str, other_pg_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """Row for row: documents, n-gram and band postings, file records (a failed one too)."""
    files = corpus_files(tmp_path / "c", 5)
    write_jsonl(tmp_path / "c" / "g.jsonl.gz", make_docs(20, 400, 7, "g"), gz=True)
    blob = gzip.compress("".join(json.dumps(d) + "\n" for d in make_docs(300, 60, 8, "x")).encode())
    (tmp_path / "c" / "broken.jsonl.gz").write_bytes(blob[: len(blob) // 2])
    (tmp_path / "c" / "gone.jsonl").symlink_to(tmp_path / "nowhere.jsonl")  # fails alone, unrecorded
    local = index_corpus(pg_url, [tmp_path / "c"], "web", workers=2, batch_size=7)
    # one task at a time: groups of half the corpus, the first holding the broken file (rolled
    # back, recorded as failed, its companions indexed again)
    ours = ray_index(other_pg_url, [tmp_path / "c"], batch_size=7, tasks=1)
    assert ours.as_dict() | {"seconds": 0, "mb_per_s": 0} == local.as_dict() | {"seconds": 0, "mb_per_s": 0}
    assert [(f.path, f.status) for f in ours.files] == [(f.path, f.status) for f in local.files]
    assert ours.as_dict()["files_failed"] == 2 and ours.as_dict()["files_indexed"] == len(files) + 1
    gone = next(f for f in ours.files if f.path.endswith("gone.jsonl"))
    assert gone.status == "failed"
    # the machine named: on a cluster, the driver's machine may see a path its workers' do not
    where = f"on {socket.gethostname()}, where its Ray worker runs"
    assert gone.error == f"{tmp_path / 'c' / 'gone.jsonl'}: cannot be read {where} (No such file or directory)"
    assert snapshot(other_pg_url) == snapshot(pg_url)
    again = ray_index(other_pg_url, [tmp_path / "c"])  # the failed file is tried again, the rest unchanged
    assert (again.as_dict()["files_unchanged"], again.as_dict()["files_failed"]) == (len(files) + 1, 2)
    assert snapshot(other_pg_url) == snapshot(pg_url) and counts(other_pg_url)[3] == 0
    # a file holding an indexed file's content names that file, as the local executor's does
    (tmp_path / "t").mkdir()
    (twin := tmp_path / "t" / "twin.jsonl").write_bytes(files[0].read_bytes())
    assert [(f.status, f.same_as) for f in ray_index(other_pg_url, [twin]).files] == [("unchanged", str(files[0]))]


def test_a_scan_of_the_ray_index_reports_as_a_scan_of_the_local_one(
    ray_cluster: tuple[str, Path], pg_url: str, other_pg_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """The same documents under other ids (Ray's two workers take the largest files first and
    number their batches as they write them; the local executor takes the paths in order) give
    the same report, evidence and its order included: a scan breaks ties by what documents are,
    not by id (131 of the evaluation set's items had other metrics, 662 another evidence order)."""
    pages, tied = tied_pages(tmp_path / "c", sizes=(40, 90))  # the second file first on Ray
    files = [*pages, *corpus_files(tmp_path / "c", 3, docs=20)]
    index_corpus(pg_url, files, "web", workers=2, batch_size=2)
    ray_index(other_pg_url, files, batch_size=2, tasks=2)
    assert snapshot(other_pg_url) == snapshot(pg_url)
    with make_engine(pg_url).connect() as a, make_engine(other_pg_url).connect() as b:
        order = "SELECT external_id FROM document ORDER BY id"
        assert a.execute(text(order)).scalars().all() != b.execute(text(order)).scalars().all()  # other ids
    items = [tied, BenchmarkItem("doc", 1, question=" ".join(make_docs(1, 150, 100, "f0-")[0]["text"].split()[:40]))]
    local = report_by_content(pg_url, "web", items)
    assert local[0][2] and local[1][1]["status"] == "contaminated"
    assert report_by_content(other_pg_url, "web", items) == local


def _groups_sent(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The groups of files the driver sends, in order, as take_group makes them (filled as a run goes)."""
    sent: list[list[str]] = []
    take = cluster.take_group

    def recorded(*args: object) -> list[str]:
        group = take(*args)  # type: ignore[arg-type]
        sent.append(group)
        return group

    monkeypatch.setattr(cluster, "take_group", recorded)
    return sent


def test_groups_shrink_so_the_workers_finish_together(
    ray_cluster: tuple[str, Path], pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each call takes a 2 x workers-th of what is left to send: large groups first, single
    files at the end (with a fixed share of the corpus, 9 equal files went out as 4 pairs and one,
    and one worker indexed its last pair while the other waited)."""
    files = corpus_files(tmp_path / "c", 9, docs=8, words=60)  # the first call's cap: 2.25 files
    on_disk = [f.stat().st_size for f in files]
    assert max(on_disk) < 1.2 * min(on_disk)  # about equal
    sent = _groups_sent(monkeypatch)
    summary = ray_index(pg_url, files, tasks=2)
    assert ray.is_initialized()  # a job that found this process connected leaves it connected
    assert summary.as_dict()["files_indexed"] == 9
    largest_first = sorted(files, key=lambda f: -f.stat().st_size)  # stable: equal sizes in the given order
    assert [p for g in sent for p in g] == [str(f) for f in largest_first]  # each once
    sizes = [len(g) for g in sent]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > 1 and sizes[-3:] == [1, 1, 1], sizes


def test_the_largest_files_go_first_so_no_worker_ends_alone_on_one(
    ray_cluster: tuple[str, Path], pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A corpus whose large files come last in the order given (session 36's bench corpus: eight
    MB shards, then five of 25 MB): sent in that order, the last large file went to one worker
    while the other, done, waited seconds for it. Largest first, the last calls are small."""
    small = corpus_files(tmp_path / "c", 6, docs=8, words=60)
    large = [write_jsonl(tmp_path / "c" / f"z{i}.jsonl", make_docs(60, 60, 200 + i, f"z{i}-")) for i in range(2)]
    assert min(f.stat().st_size for f in large) > 5 * max(f.stat().st_size for f in small)
    groups = _groups_sent(monkeypatch)
    summary = ray_index(pg_url, [*small, *large], tasks=2)
    sent = [path for group in groups for path in group]
    largest_first = sorted(large, key=lambda f: -f.stat().st_size)
    assert sent[:2] == [str(f) for f in largest_first] and sorted(sent[2:]) == sorted(str(f) for f in small)
    assert [f.path for f in summary.files] == [str(f) for f in [*small, *large]]  # reported in the order given


def test_files_of_one_content_are_indexed_once_under_the_first_path_without_waiting(
    ray_cluster: tuple[str, Path], pg_url: str, other_pg_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """Copies of one file sort side by side (a review of the largest-first order): sent to both
    workers at once, either could claim the content, and the other waited out a third of the
    lease. Apart, then taken up by the holder, the content is indexed under the first path in
    the order given, as the local executor does; a copy in the holder's own open group (one
    worker, one group) is its twin at once, where its own claim made it wait as "busy"."""
    (c := tmp_path / "c").mkdir()
    big = make_docs(60, 60, 300, "big-")
    first, copy = write_jsonl(c / "a-big.jsonl", big), write_jsonl(c / "z-big.jsonl", big)
    small = [write_jsonl(c / f"m{i}.jsonl", make_docs(8, 60, 310 + i, f"m{i}-")) for i in range(4)]
    lease = 60.0  # a wait would be 20 s
    for url, tasks in ((pg_url, 2), (other_pg_url, 1)):
        t0 = time.perf_counter()
        summary = ray_index(url, [c], tasks=tasks, lease=lease)
        took = time.perf_counter() - t0
        reports = {f.path: f for f in summary.files}
        assert (reports[str(first)].status, reports[str(first)].same_as) == ("done", ""), tasks
        assert (reports[str(copy)].status, reports[str(copy)].same_as) == ("unchanged", str(first)), tasks
        assert all(reports[str(f)].status == "done" for f in small)
        assert took < lease / 3, (tasks, took)
    upgrade(local_url := f"sqlite:///{tmp_path / 'local.db'}")
    local = index_corpus(local_url, [c], "web")
    assert [(f.path, f.status, f.same_as) for f in local.files] == [
        (f.path, f.status, f.same_as) for f in summary.files
    ]


def test_a_moved_file_is_recorded_where_it_is_now(ray_cluster: tuple[str, Path], pg_url: str, tmp_path: Path) -> None:
    """As with the local executor (a trial): a file whose recorded path is gone, indexed again where
    it is now, is `unchanged` and recorded there; a new file in the same run is indexed."""
    (c := tmp_path / "c").mkdir()
    old = write_jsonl(c / "old.jsonl", make_docs(8, 60, 400, "old-"))
    assert ray_index(pg_url, [old], tasks=1).files[0].status == "done"
    (d := tmp_path / "d").mkdir()
    new = write_jsonl(d / "a-new.jsonl", make_docs(8, 60, 401, "new-"))
    old.rename(here := d / "b-moved.jsonl")
    reports = {f.path: f for f in ray_index(pg_url, [d], tasks=1).files}
    assert (reports[str(here)].status, reports[str(here)].indexed_as) == ("unchanged", str(here))
    assert reports[str(new)].status == "done"
    with make_engine(pg_url).connect() as conn:
        assert sorted(conn.execute(text("SELECT path FROM corpus_file")).scalars()) == sorted([str(new), str(here)])


def test_a_file_read_again_into_the_same_documents_is_unchanged_on_ray(
    ray_cluster: tuple[str, Path], pg_url: str, tmp_path: Path
) -> None:
    """As with the local executor (a trial): other settings that give the very documents a version
    at that path holds (`--text-field text,content` where every record has `text`) leave the file
    unchanged; it stored them twice."""
    f = write_jsonl(tmp_path / "a.jsonl", make_docs(8, 60, 402, "a-"))
    assert ray_index(pg_url, [f], tasks=1).files[0].status == "done"
    copy = tmp_path / "b-copy.jsonl"  # the same bytes under another name: indexed once, as f
    copy.write_bytes(f.read_bytes())
    again = ray_index(pg_url, [f, copy], tasks=1, text_field="text,content").files
    assert [(r.status, r.indexed_as) for r in again] == [("unchanged", str(f))] * 2
    assert counts(pg_url)[:3] == (8, 8, 1)


def test_a_file_changed_while_it_is_read_fails_on_ray(
    ray_cluster: tuple[str, Path], pg_url: str, tmp_path: Path
) -> None:
    """As with the local executor (a trial): a file appended to as it was read was recorded at its
    old size and hash with some of the new records; it fails now, saying so, and keeps nothing."""
    _address, marker = ray_cluster
    f = write_jsonl(tmp_path / "g-grow.jsonl", make_docs(12, 40, 403, "g-"))
    marker.write_text("grow:g-grow")
    try:
        report = ray_index(pg_url, [f], tasks=1, batch_size=4).files[0]
    finally:
        marker.unlink(missing_ok=True)
    assert report.status == "failed" and "changed while it was read" in (report.error or ""), report
    assert counts(pg_url)[:3] == (0, 0, 0)
    again = ray_index(pg_url, [f], tasks=1).files[0]
    assert again.status == "done" and counts(pg_url)[:3] == (13, 13, 1)


def test_files_are_ordered_by_the_text_they_hold(ray_cluster: tuple[str, Path], pg_url: str, tmp_path: Path) -> None:
    """Largest first by text, not bytes on disk (a review): a gzip file's trailer gives its
    length, another compressed file counts four times its size, a plain one its size."""
    import bz2

    docs = make_docs(200, 60, 500, "t-")
    plain = write_jsonl(tmp_path / "plain.jsonl", docs[:100])
    gz = write_jsonl(tmp_path / "more.jsonl.gz", docs, gz=True)
    data = "".join(json.dumps(d) + "\n" for d in docs[:20]).encode()
    (bz := tmp_path / "less.jsonl.bz2").write_bytes(bz2.compress(data))
    assert gz.stat().st_size < plain.stat().st_size
    assert cluster._text_size(gz, gz.stat().st_size) == len(gzip.decompress(gz.read_bytes()))
    assert cluster._text_size(bz, bz.stat().st_size) == 4 * bz.stat().st_size
    assert cluster._text_size(plain, plain.stat().st_size) == plain.stat().st_size
    assert cluster._text_size(tmp_path / "gone.jsonl", 0) == 0
    job = RayJob(make_engine(pg_url), "web", SignatureConfig(), IndexOptions())
    sched = cluster._Scheduler(job, 1, [plain, bz, gz])
    assert list(sched.largest_first(map(str, [bz, plain, gz]))) == [str(gz), str(plain), str(bz)]


def test_a_copy_of_a_file_another_worker_holds_waits_for_it(
    ray_cluster: tuple[str, Path], pg_url: str, tmp_path: Path
) -> None:
    """The holder of a file takes up its copies: one that only another worker could take waits
    (a full run once sent the copy to the other worker, idle with nothing else left, before the
    holder had claimed the first: the copy's path was indexed); a file of the same size and
    other content (equal-sized shards) does not wait."""
    docs = make_docs(40, 60, 600, "t-")
    first, copy = write_jsonl(tmp_path / "a.jsonl", docs), write_jsonl(tmp_path / "z.jsonl", docs)
    other = write_jsonl(tmp_path / "o.jsonl", [{**d, "id": d["id"].replace("t", "u")} for d in docs])
    small = write_jsonl(tmp_path / "s.jsonl", docs[:3])
    assert first.stat().st_size == copy.stat().st_size == other.stat().st_size
    job = RayJob(make_engine(pg_url), "web", SignatureConfig(), IndexOptions())
    sched = cluster._Scheduler(job, 1, [first, copy, other, small])
    sched.held = {"A": {str(first)}, "B": set()}
    assert not sched._twins_apart("B", pending := deque([str(copy)]))  # B waits
    assert sched._twins_apart("B", pending := deque([str(copy), str(small)])) and pending[0] == str(small)
    assert sched._twins_apart("B", pending := deque([str(copy), str(other)])) and pending[0] == str(other)
    assert sched._twins_apart("A", pending := deque([str(copy)])) and pending[0] == str(copy)  # the holder takes it


def test_files_handed_back_go_where_their_size_puts_them(
    ray_cluster: tuple[str, Path], pg_url: str, tmp_path: Path
) -> None:
    """A group rolled back (a corrupt file among them, a claim lost) hands its files back: they
    were the largest, sent first, and appended to the queue they were sent last (a review)."""
    files = [
        write_jsonl(tmp_path / f"f{i}.jsonl", make_docs(n, 60, 400 + i, f"f{i}-")) for i, n in enumerate((40, 4, 2, 20))
    ]
    job = RayJob(make_engine(pg_url), "web", SignatureConfig(), IndexOptions())
    sched = cluster._Scheduler(job, 1, files)
    pending = deque([str(files[1]), str(files[2])])
    sched.later = [(0.0, str(files[0]), ""), (0.0, str(files[3]), "")]
    sched._due(pending)
    assert list(pending) == [str(files[i]) for i in (0, 3, 1, 2)]


def test_killed_worker_loses_and_duplicates_nothing(
    ray_cluster: tuple[str, Path], pg_url: str, other_pg_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """A worker that dies (-9) with half a file written: its transaction is gone with it, its
    claim lapses after the lease and the retried task takes the file over."""
    _, marker = ray_cluster
    files = corpus_files(tmp_path / "c", 4, docs=40)
    marker.write_text("f02.jsonl")  # the worker indexing f02 kills itself after its first batch
    t0 = time.monotonic()
    summary = ray_index(other_pg_url, files, batch_size=10, lease=1.5, tasks=2)
    assert not marker.exists(), "no worker was killed"
    assert time.monotonic() - t0 >= 1.0  # f02 waited for the dead worker's lease
    assert [f.status for f in summary.files] == ["done"] * 4
    assert counts(other_pg_url) == (160, 160, 4, 0)
    index_corpus(pg_url, files, "web", batch_size=10)
    assert snapshot(other_pg_url) == snapshot(pg_url)
    rerun = ray_index(other_pg_url, files, lease=1.5)
    assert rerun.as_dict()["files_unchanged"] == 4 and snapshot(other_pg_url) == snapshot(pg_url)


_DRIVER = """
import sys
from pathlib import Path
from contam.app.core.config import SignatureConfig
from contam.app.store.db import make_engine
from contam.indexer.cluster import RayJob
from contam.indexer.options import IndexOptions
with RayJob(make_engine(sys.argv[1]), "web", SignatureConfig(), IndexOptions(commit_bytes=1),
            address=sys.argv[2], tasks=2, lease=float(sys.argv[3])) as job:
    job.run([Path(p) for p in sys.argv[4:]])
"""


def test_killed_driver_leaves_a_rerun_to_finish_the_index_once(
    ray_cluster: tuple[str, Path], pg_url: str, other_pg_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """The driver killed (-9) with some files committed and others in its workers' open groups:
    Ray ends its workers, their transactions roll back, their claims lapse, and a rerun indexes
    what is left, each file once: the same index as a run never interrupted."""
    address, marker = ray_cluster
    files = corpus_files(tmp_path / "c", 8, docs=20)
    marker.write_text("slow:0.4")  # each file takes 0.4 s more: the kill lands mid-run
    lease = 2.0
    cmd = [sys.executable, "-c", _DRIVER, other_pg_url, address, str(lease), *map(str, files)]
    log = (tmp_path / "driver.log").open("w")  # its stderr, for a failure's message (a pipe nobody read could fill)
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 60
        # until a group (one file a call: commit_bytes=1) has committed and another holds its
        # claim: a dead worker's open group, whose claim the rerun waits for, then takes over
        while (seen := counts(other_pg_url))[2] == 0 or seen[3] == 0:
            alive = proc.poll() is None and time.monotonic() < deadline
            assert alive, (
                f"the driver finished before it could be killed: {(tmp_path / 'driver.log').read_text()[-2000:]}"
            )
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        proc.kill()
        log.close()
        marker.unlink(missing_ok=True)
    done_before = counts(other_pg_url)[2]
    print(f"killed with {seen[2]} files committed and {seen[3]} claimed; {done_before} committed after")
    assert 0 < done_before < len(files)
    rerun = ray_index(other_pg_url, files, lease=lease, tasks=2)
    assert rerun.as_dict()["files_unchanged"] >= done_before
    assert [f.status in ("done", "unchanged") for f in rerun.files] == [True] * len(files)
    assert rerun.as_dict()["files_indexed"] + rerun.as_dict()["files_unchanged"] == len(files)
    assert counts(other_pg_url) == (20 * len(files), 20 * len(files), len(files), 0)
    index_corpus(pg_url, files, "web")
    assert snapshot(other_pg_url) == snapshot(pg_url)


def test_an_interrupted_run_lets_go_of_its_claims(
    ray_cluster: tuple[str, Path], pg_url: str, other_pg_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """A new user's trial: Ctrl-C mid-run said "nothing half-written is kept" and freed the corpus,
    but left its workers' claims on the files of their open groups, so the rerun waited out the
    lease (30 s) for them. The interrupted run drops them as it stops: the rerun takes them at
    once, and ends with the index of a run never interrupted."""
    address, marker = ray_cluster
    files = corpus_files(tmp_path / "c", 6, docs=20)
    marker.write_text("slow:0.5")  # each file takes 0.5 s more: the interrupt lands mid-run
    env = {k: v for k, v in os.environ.items() if k != KILL_MARKER}
    env["CONTAM_SEGMENT_ROWS"] = "2000"  # segments staged mid-group, pending until the group commits
    cmd = [sys.executable, "-m", "contam.indexer.cli", "index", "--corpus", "web", "--db", other_pg_url]
    cmd += ["--executor", "ray", "--address", address, "--workers", "2", *map(str, files)]
    log = (tmp_path / "driver.log").open("w")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while counts(other_pg_url)[3] == 0:  # a worker holds a file's claim
            alive = proc.poll() is None and time.monotonic() < deadline
            assert alive, f"the run ended before it was interrupted: {(tmp_path / 'driver.log').read_text()[-2000:]}"
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 130
    finally:
        proc.kill()
        log.close()
        marker.unlink(missing_ok=True)
    assert "error: interrupted" in (tmp_path / "driver.log").read_text()
    assert counts(other_pg_url)[3] == 0, "the interrupted run left claims"
    # nor its workers' staged postings: pending segments stayed until the next run (a trial)
    eng = make_engine(other_pg_url)
    with eng.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM segment WHERE pending")).scalar_one() == 0
    eng.dispose()
    t0 = time.monotonic()
    rerun = ray_index(other_pg_url, files, lease=30.0, tasks=2)
    assert time.monotonic() - t0 < 20, "the rerun waited for the interrupted run's claims"
    assert [f.status in ("done", "unchanged") for f in rerun.files] == [True] * len(files)
    assert counts(other_pg_url) == (20 * len(files), 20 * len(files), len(files), 0)
    index_corpus(pg_url, files, "web")
    assert snapshot(other_pg_url) == snapshot(pg_url)


_TWO_RUNS = """
import sys
from pathlib import Path
import ray
from contam.app.core.config import SignatureConfig
from contam.app.store.db import make_engine
from contam.indexer.cluster import RayJob
from contam.indexer.options import IndexOptions
with RayJob(make_engine(sys.argv[1]), "web", SignatureConfig(), IndexOptions(), address=sys.argv[2]) as job:
    for path in sys.argv[3:]:
        summary = job.run([Path(path)]).as_dict()
        print(summary["files_indexed"], ray.is_initialized())
"""


def test_a_run_lets_go_of_the_cluster_it_connected_to_before_it_returns(
    ray_cluster: tuple[str, Path], pg_url: str, tmp_path: Path
) -> None:
    """The run's last step (merges, statistics) needs no cluster: a job that connected itself
    disconnects while the database finishes (Ray's shutdown, about 0.3 s, then costs no wall
    time), and a second run of the same job connects again."""
    address, _marker = ray_cluster
    files = corpus_files(tmp_path / "c", 2, docs=10)
    cmd = [sys.executable, "-c", _TWO_RUNS, pg_url, address, *map(str, files)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["1 False", "1 False"]
    assert counts(pg_url) == (20, 20, 2, 0)


def test_two_overlapping_runs_share_the_files(ray_cluster: tuple[str, Path], pg_url: str, tmp_path: Path) -> None:
    """A second driver (the CLI, --address) on the same cluster and files while the first runs:
    every file is indexed by exactly one of them, both do some."""
    address, marker = ray_cluster
    files = corpus_files(tmp_path / "c", 16, docs=60, words=400)
    ray_index(pg_url, files[:1])  # the corpus exists before both start
    # each file takes 0.5 s more, so the first driver cannot finish alone before the second starts
    # (on a busy machine, unpaced, one driver once took every file)
    marker.write_text("slow:0.5")
    env = {k: v for k, v in os.environ.items() if k != KILL_MARKER}
    cmd = [sys.executable, "-m", "contam.indexer.cli", "index", "--corpus", "web", "--db", pg_url, "--executor", "ray"]
    cmd += ["--address", address, "--workers", "1", "--progress", "log", *map(str, files)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:  # the other driver has started its first file
        if line.startswith("indexing"):
            break
    ours: list[IndexSummary] = []
    thread = threading.Thread(target=lambda: ours.append(ray_index(pg_url, files, tasks=1)))
    thread.start()
    out, err = proc.communicate(timeout=120)
    thread.join(120)
    marker.unlink(missing_ok=True)
    assert proc.returncode == 0, err
    theirs = set(_done_paths_from_log(err))
    mine = {f.path for f in ours[0].files if f.status == "done"}
    assert mine and theirs and not (mine & theirs), (mine, theirs)
    assert mine | theirs == {str(p) for p in files[1:]}
    assert counts(pg_url) == (16 * 60, 16 * 60, 16, 0)
    assert json.loads(out)["files_indexed"] == len(theirs)


def test_python_api_indexes_on_ray(
    ray_cluster: tuple[str, Path], pg_url: str, other_pg_url: str, tmp_path: Path
) -> None:
    """`contam.Index.add(executor="ray", address=...)`, from a process of its own that reaches
    the cluster by its address (as `contam index --executor ray --address` does): the same
    index as the API's local executor, row for row."""
    address, _ = ray_cluster
    files = corpus_files(tmp_path / "c", 3)
    with contam.Index(pg_url) as index:
        local = index.add("web", files, workers=2)
    script = (
        "import json, sys, contam\n"
        "with contam.Index(sys.argv[1]) as index:\n"
        "    s = index.add('web', sys.argv[3:], executor='ray', address=sys.argv[2], workers=2)\n"
        "print(json.dumps(s.as_dict()))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != KILL_MARKER}
    run = subprocess.run(
        [sys.executable, "-c", script, other_pg_url, address, *map(str, files)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    ours = json.loads(run.stdout.strip().splitlines()[-1])
    assert ours["files_indexed"] == 3 and ours["documents"] == local.as_dict()["documents"] == 90
    assert snapshot(other_pg_url) == snapshot(pg_url) and counts(other_pg_url)[3] == 0


def _done_paths_from_log(log: str) -> list[str]:
    """The files a `--progress log` run committed (lines `done [i/n] PATH: ...`)."""
    return [ln.split("] ", 1)[1].split(": ", 1)[0] for ln in log.splitlines() if ln.startswith("done [")]


def test_claims_lapse_and_are_taken_over(pg_url: str) -> None:
    """A claim holds a file for its lease: another owner is told how long, takes it over once it
    lapses, and the first owner can neither renew nor release (commit) it any more."""
    eng: Engine = make_engine(pg_url)
    try:
        with eng.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO corpus (id, name, fingerprint, config, store_text, created_at) "
                    "VALUES (1, 'web', 'f', '{}', true, now())"
                )
            )
        with eng.begin() as conn:
            assert repo.take_claim(conn, 1, "h", "p", "a", 0.5) == 0.0
        with eng.begin() as conn:
            assert 0.0 < repo.take_claim(conn, 1, "h", "p", "b", 0.5) <= 0.5
            assert repo.renew_claims(conn, 1, "a", 0.5) == 1
        time.sleep(0.6)
        with eng.begin() as conn:
            assert repo.take_claim(conn, 1, "h", "p", "b", 5.0) == 0.0
            assert repo.renew_claims(conn, 1, "a", 0.5) == 0
            assert repo.release_claims(conn, 1, "a", ["h"]) == 0
            takeovers = conn.execute(text("SELECT takeovers FROM file_claim")).scalar_one()
            assert takeovers == 1 and repo.release_claims(conn, 1, "b", ["h"]) == 1
    finally:
        eng.dispose()


def test_a_worker_with_other_contam_code_than_the_driver_is_refused(
    ray_cluster: tuple[str, Path], pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cluster machine with another install of contam (another version, another checkout)
    would sign with other code into the same index, and nothing would say so: the worker refuses
    the run's first call, and the driver says why, as the worker said it, with nothing written."""
    monkeypatch.setattr(cluster, "code_fingerprint", lambda: "the driver's other install")
    with pytest.raises(ContamError, match="runs other contam code than the driver"):
        ray_index(pg_url, corpus_files(tmp_path / "c", 2))
    assert counts(pg_url) == (0, 0, 0, 0)


@pytest.mark.parametrize(
    ("hook", "said"),
    [
        # an error in the worker's creation, as a checkout not built in the driver's directory gives
        ("start:raise", "Ray says: ImportError: cannot import name '_native' from 'contam.app.core'"),
        # a worker gone without a word, as RAY_AUTH_MODE=token against a cluster without it leaves
        # (Ray's reason said, not its first line, the same for every death)
        ("start:kill", "Ray says: The actor is dead because its worker process has died"),
    ],
)
def test_workers_that_die_before_they_start_stop_the_run_saying_why(
    ray_cluster: tuple[str, Path], pg_url: str, tmp_path: Path, hook: str, said: str
) -> None:
    """A new user's trial: every worker died as it started, and each file was reported failed
    ("its Ray worker died 4 times", "run it again"), a good file among them. The run now stops
    after START_FAILURES such workers in a row, with what Ray said and the likely causes, and
    no file is called failed or recorded; a worker that started and then died is retried as
    before (test_killed_worker_loses_and_duplicates_nothing)."""
    _, marker = ray_cluster
    files = corpus_files(tmp_path / "c", 3, docs=5)
    marker.write_text(hook)
    try:
        with pytest.raises(NotStarted, match=r"died before they started \(4 in a row\)") as caught:
            ray_index(pg_url, files, tasks=2)
    finally:
        marker.unlink()
    assert said in caught.value.message and "workers' logs" in caught.value.message
    assert "Some common causes" not in caught.value.message
    assert counts(pg_url) == (0, 0, 0, 0)
    assert [f.status for f in ray_index(pg_url, files, tasks=2).files] == ["done"] * 3


def test_a_worker_ray_will_not_kill_leaves_the_runs_error_said(
    ray_cluster: tuple[str, Path], pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ray may refuse to kill a worker whose creation it cancelled ("System error: Actor creation
    cancelled"), one that died before it started (now and then, RAY_AUTH_MODE=token against a
    cluster without it): the run said that, with "the files reported done are kept", not why its
    workers died, and left the workers after it in its list alive."""
    _, marker = ray_cluster
    files = corpus_files(tmp_path / "c", 2, docs=5)
    kill, killed = ray.kill, []

    def refusing(actor: object, **kw: object) -> None:
        kill(actor, **kw)  # type: ignore[arg-type]
        killed.append(actor)
        raise ray.exceptions.RaySystemError("Actor creation cancelled.")

    monkeypatch.setattr(ray, "kill", refusing)
    marker.write_text("start:kill")
    try:
        with pytest.raises(NotStarted, match=r"died before they started \(4 in a row\)"):
            ray_index(pg_url, files, tasks=2)
    finally:
        marker.unlink()
    assert len(killed) == 3 + 2  # the three replaced, then the run's two


def test_a_file_that_kills_every_worker_fails_alone_after_its_retries(
    ray_cluster: tuple[str, Path], pg_url: str, tmp_path: Path
) -> None:
    """A worker that started and then died counts against the files it held, however soon it
    died (here in its first call): the file that kills every worker is reported failed after
    CRASH_RETRIES retries, the run goes on; it is not taken for workers that never started."""
    _, marker = ray_cluster
    files = corpus_files(tmp_path / "c", 2, docs=5)
    poison = write_jsonl(tmp_path / "c" / "poison.jsonl", make_docs(40, 150, 7, "p-"))  # the largest: sent alone
    marker.write_text("always:poison.jsonl")
    try:
        summary = ray_index(pg_url, [poison, *files], batch_size=10, lease=1.0, tasks=1)
    finally:
        marker.unlink()
    status = {Path(f.path).name: (f.status, f.error) for f in summary.files}
    assert status == {
        "f00.jsonl": ("done", None),
        "f01.jsonl": ("done", None),
        "poison.jsonl": ("failed", f"{poison}: its Ray worker died 4 times (ActorDiedError)"),
    }


def test_more_workers_than_the_cluster_has_cpus_index_every_file(
    ray_cluster: tuple[str, Path], pg_url: str, tmp_path: Path
) -> None:
    """--workers 4 on a cluster of 2 CPUs: the two workers Ray could not place got files, which
    waited for them for ever (the run never ended). Files go to workers that have started."""
    address, _ = ray_cluster
    files = corpus_files(tmp_path / "c", 8, docs=5)
    cmd = [sys.executable, "-m", "contam.indexer.cli", "index", "--corpus", "web", "--db", pg_url]
    cmd += ["--executor", "ray", "--address", address, "--workers", "4", *map(str, files)]
    env = {k: v for k, v in os.environ.items() if k != KILL_MARKER}
    try:
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail("the run never ended: files sent to workers the cluster cannot place")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["files_indexed"] == len(files)
    assert counts(pg_url) == (5 * len(files), 5 * len(files), len(files), 0)


def test_a_run_none_of_whose_workers_can_start_says_so_while_it_waits(
    ray_cluster: tuple[str, Path], pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers the cluster has no CPUs for are not started, and Ray waits without a word: so did
    the run (a review). After START_NOTICE_SECONDS it says so, once, and goes on waiting; here the
    notice stops it, the workers asked for more CPUs than the cluster has."""
    said: list[str] = []

    class Stop(Exception):
        pass

    def warning(message: str) -> None:
        said.append(message)
        raise Stop

    init = cluster._Scheduler.__init__

    def greedy(self: cluster._Scheduler, *args: object) -> None:
        init(self, *args)  # type: ignore[arg-type]
        self.actor_class = ray.remote(cluster.IndexWorker).options(num_cpus=64)  # more than the cluster has

    monkeypatch.setattr(cluster, "START_NOTICE_SECONDS", 0.5)
    monkeypatch.setattr(cluster._Scheduler, "__init__", greedy)
    monkeypatch.setattr(cluster.log, "warning", warning)
    with pytest.raises(Stop):
        ray_index(pg_url, corpus_files(tmp_path / "c", 2, docs=5), tasks=2)
    assert len(said) == 1 and said[0].startswith("no Ray worker has started in 0 s (2 asked for"), said
    assert "the cluster has 2 CPUs, 2 free" in said[0] and counts(pg_url) == (0, 0, 0, 0)


def test_a_run_stopped_for_workers_that_never_start_keeps_what_started_ones_wrote() -> None:
    """Stopped for workers that never start after another worker had started, a run may have
    written groups whose answers never came: it is not said to have written nothing (NotStarted,
    no "files reported done are kept"), whatever it has reported (a review)."""
    sched = object.__new__(cluster._Scheduler)
    sched.started, sched.held, sched.reports = set(), {"w": set()}, []
    died = ray.exceptions.ActorDiedError()
    for ever, kind in ((False, NotStarted), (True, ContamError)):
        sched.failed_starts, sched.ever_started = cluster.START_FAILURES - 1, ever
        with pytest.raises(ContamError, match="died before they started") as caught:
            sched._lost("w", died)
        assert type(caught.value) is kind


def test_workers_that_never_start_beside_working_ones_are_no_longer_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine of the cluster that cannot start workers took each new one: its deaths in a row
    stopped a run the other workers were doing (a review). With a worker at work, the run goes on
    with it: the one that never started is not replaced, and a warning says why."""
    said: list[str] = []
    monkeypatch.setattr(cluster.log, "warning", lambda fmt, *args: said.append(fmt % args))
    monkeypatch.setattr(cluster, "_kill", lambda _w: None)
    sched = object.__new__(cluster._Scheduler)
    sched.started, sched.workers, sched.held, sched.reports = {"a"}, ["a", "w"], {"a": {"f1"}, "w": set()}, []
    sched.failed_starts, sched.ever_started = cluster.START_FAILURES - 1, True
    sched._lost("w", ray.exceptions.ActorDiedError())
    assert sched.workers == ["a"] and sched.held == {"a": {"f1"}}
    assert len(said) == 1 and said[0].endswith("the run goes on with the 1 worker(s) that started"), said


def test_what_stops_a_run_whose_workers_never_start_names_the_likely_cause() -> None:
    """The authentication hint only where RAY_AUTH_MODE=token is set and the worker did not run
    its creation; an import error names the checkout; another error in the creation the database."""
    died = ray.exceptions.ActorDiedError()
    assert "RAY_AUTH_MODE=token is set here" in cluster.not_started(4, died, "token")
    assert "RAY_AUTH_MODE" not in cluster.not_started(4, died, None)
    generic = "Ray says: The actor died unexpectedly before finishing this task. Likely"
    assert generic in cluster.not_started(4, died, None)
    # a death Ray knows more of: its reason said, after its fields, without its list of common causes
    reason = "The actor is dead because all references to the actor were removed including lineage ref count."
    context = ActorDiedErrorContext(class_name="IndexWorker", actor_id=b"\1" * 16, error_message=reason)
    said = cluster.not_started(4, ray.exceptions.ActorDiedError(context), "token")
    assert f"Ray says: {reason[:-1]}. Likely: RAY_AUTH_MODE=token is set here" in said
    context.error_message = "The actor is dead because its worker process has died. Some common causes include: OOM"
    said = cluster.not_started(4, ray.exceptions.ActorDiedError(context), None)
    assert "Ray says: The actor is dead because its worker process has died. Likely" in said and "OOM" not in said
    init = ray.exceptions.ActorDiedError()
    init._actor_init_failed = True
    init.error_msg = "The actor died because of an error raised in its creation task\nTraceback ...\nOSError: refused"
    message = cluster.not_started(4, init, "token")
    assert "Ray says: OSError: refused" in message and "reach the database" in message
    assert "RAY_AUTH_MODE" not in message and "import" not in message
    init.error_msg = "creation task\nImportError: No module named 'contam'"
    assert "a checkout in the driver's working directory" in cluster.not_started(4, init, None)
    init.error_msg = "creation task\nValueError: an important setting is missing"  # no import error
    assert "checkout" not in cluster.not_started(4, init, None)


def test_ray_executor_refuses_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    upgrade(url)
    write_jsonl(tmp_path / "a.jsonl", make_docs(3, 20, 1, "a"))
    args = ["index", "--corpus", "c", "--db", url, "--progress", "none", str(tmp_path / "a.jsonl")]
    result = CliRunner().invoke(cli, [*args, "--executor", "ray"])
    assert result.exit_code == 2
    assert result.output.startswith("error: --executor ray needs a PostgreSQL database")
    assert len(result.output.strip().splitlines()) == 1
    wrong = CliRunner().invoke(cli, [*args, "--executor", "dask"])
    assert wrong.exit_code == 2 and "error: --executor must be local or ray" in wrong.output
    stray = CliRunner().invoke(cli, [*args, "--address", "head:6379"])
    assert stray.exit_code == 2 and "--address" in stray.output


def test_ray_executor_refuses_a_sqlite_file_not_made_yet_before_saying_to_make_it(tmp_path: Path) -> None:
    """A new user's trial: `--executor ray` with a SQLite file that does not exist yet (the
    default database too) said "no database at ...: run `contam db upgrade --db sqlite:///...`
    first"; done so, the run was refused for being SQLite. SQLite is refused first."""
    url = f"sqlite:///{tmp_path / 'new.db'}"
    write_jsonl(tmp_path / "a.jsonl", make_docs(3, 20, 1, "a"))
    args = ["index", "--corpus", "c", "--db", url, "--executor", "ray", str(tmp_path / "a.jsonl")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: --executor ray needs a PostgreSQL database"), result.output
    assert "db upgrade" not in result.output and not (tmp_path / "new.db").exists()


def test_connecting_keeps_the_sigterm_handler_of_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """ray.init sets a SIGTERM handler of its own (sys.exit(15)): `contam index --executor ray`
    killed by SIGTERM exited 15 without a word, where every other command ends as Ctrl-C does
    (130, "interrupted"). The handler the command had is put back after connecting."""
    import signal

    def ours(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    def init(**_kw: object) -> None:  # what ray.init does to the handler, without a cluster
        signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(signum))

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "shutdown", lambda: None)
    before = signal.signal(signal.SIGTERM, ours)
    try:
        engine = make_engine("postgresql+psycopg://nobody@127.0.0.1:1/none")  # never connected
        with RayJob(engine, "web", SignatureConfig(), IndexOptions()):
            assert signal.getsignal(signal.SIGTERM) is ours
    finally:
        signal.signal(signal.SIGTERM, before)


@contextlib.contextmanager
def _server(*pieces: bytes, listening: bool = True) -> Iterator[int]:
    """A server on a free port of every address of this machine (as Ray's head listens: Ray
    connects to the node's address for 127.0.0.1) that answers each connection with `pieces`,
    50 ms apart (none: it says nothing), or a port nothing listens on (`listening` False); its port."""
    if not listening:
        with socket.socket() as s:  # bound, then let go
            s.bind(("", 0))
            port = s.getsockname()[1]
        yield port
        return
    listener = socket.create_server(("", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # shut down
                return
            with conn:
                conn.recv(64)
                for k, piece in enumerate(pieces):
                    time.sleep(0.05 if k else 0)
                    conn.sendall(piece)
                if not pieces:
                    conn.recv(64)  # silent until the client goes

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.shutdown(socket.SHUT_RDWR)  # wakes accept(); a thread left behind made later scans fork-server ones
        listener.close()
        thread.join(10)
        assert not thread.is_alive()


GRPC_SETTINGS = bytes(
    [0, 0, 0, 4, 0, 0, 0, 0, 0]
)  # what a gRPC server (Ray's head) says first: an HTTP/2 SETTINGS frame


def _index_at(address: str, pg_url: str, tmp_path: Path) -> Result:
    files = corpus_files(tmp_path / "c", 1)
    args = ["index", "--corpus", "web", "--db", pg_url, "--executor", "ray", "--address", address]
    return CliRunner().invoke(cli, [*args, *map(str, files)])


def test_a_cluster_not_reached_is_not_said_to_keep_files(
    monkeypatch: pytest.MonkeyPatch, pg_url: str, tmp_path: Path
) -> None:
    """A new user's trial: a cluster with token authentication reached without RAY_AUTH_MODE
    ended "... set RAY_AUTH_MODE=token) (the files reported done are kept; run it again to index
    the rest)", where nothing had run and running it again as it was failed the same way."""

    def init(**_kw: object) -> None:
        raise ConnectionError("InvalidAuthToken")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    with _server(GRPC_SETTINGS) as port:  # a gRPC server answers there, as a cluster's head does
        result = _index_at(f"127.0.0.1:{port}", pg_url, tmp_path)
    assert result.exit_code == 3, result.output
    assert f"cannot reach the Ray cluster at 127.0.0.1:{port}: InvalidAuthToken" in result.output
    assert "set RAY_AUTH_MODE=token" in result.output and "files reported done are kept" not in result.output


@pytest.mark.parametrize(
    ("form", "pieces", "listening", "said"),
    [
        ("{}", (), False, "nothing answers at "),
        ("ray://{}", (), False, "nothing answers at 127.0.0.1:{} (Connection refused)"),
        # Redis on 6379, Ray's default port; PostgreSQL closes the connection on a preface it does not know
        ("{}", (b"-ERR unknown command 'PRI'\r\n",), True, "is not a Ray cluster's head"),
        ("{}", (b"",), True, "is not a Ray cluster's head"),
    ],
)
def test_an_address_no_cluster_answers_at_is_refused_at_once(
    monkeypatch: pytest.MonkeyPatch,
    pg_url: str,
    tmp_path: Path,
    form: str,
    pieces: tuple[bytes, ...],
    listening: bool,
    said: str,
) -> None:
    """ray.init given a closed port retried for 13 minutes, a warning every few seconds, and then
    suggested token authentication; given PostgreSQL's port, longer (session 35): the driver asks
    the address first, and says what is wrong there, before Ray is asked to connect."""

    def init(**_kw: object) -> None:
        raise AssertionError("ray.init is not reached")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    t0 = time.monotonic()
    with _server(*pieces, listening=listening) as port:
        address = form.format(f"127.0.0.1:{port}")
        result = _index_at(address, pg_url, tmp_path)
    assert time.monotonic() - t0 < 30
    assert result.exit_code == 3, result.output
    assert f"cannot reach the Ray cluster at {address}: " in result.output
    assert said.format(port) in result.output
    assert "RAY_AUTH_MODE" not in result.output and "files reported done are kept" not in result.output
    assert "web" not in CliRunner().invoke(cli, ["corpora", "--db", pg_url]).output  # nothing was started


@pytest.mark.parametrize("address", ["6391", "127.0.0.1:6391x", "127.0.0.1", "127.0.0.1:70000"])
def test_an_address_that_is_no_host_and_port_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, pg_url: str, tmp_path: Path, address: str
) -> None:
    """A new user's trial: `--address 6391` (the port alone) or a mistyped port ended "error:
    ValueError: Invalid address format: 6391 (run with --debug for the traceback) (the files
    reported done are kept; run it again to index the rest)", exit 3, as if a run had failed
    midway; it is a usage error, said before Ray is asked, and nothing is written."""

    def init(**_kw: object) -> None:
        raise AssertionError("ray.init is not reached")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    result = _index_at(address, pg_url, tmp_path)
    assert result.exit_code == 2, result.output
    assert f"error: the Ray address {address} is not HOST:PORT: give the address `ray start --head`" in result.output
    assert "ValueError" not in result.output and "files reported done are kept" not in result.output
    assert "web" not in CliRunner().invoke(cli, ["corpora", "--db", pg_url]).output  # nothing was started
    monkeypatch.setenv("RAY_ADDRESS", address)  # Ray's variable is named where it is the one taken
    with pytest.raises(ConfigError, match=rf"the Ray address {address} \(RAY_ADDRESS\) is not HOST:PORT"):
        require_ray_head(None)
    require_ray_head("ray://head")  # Ray's client has a default port: left to Ray


def test_what_cannot_be_told_of_an_address_is_left_to_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    """The address check refuses only what it can tell (a review): a head whose first frame comes
    in pieces, one that says nothing in time (a slow link: Ray may still reach it), a cluster with
    TLS (other first bytes), an http:// job-submission address, "local", and no address with
    RAY_ADDRESS unset all go on to Ray; RAY_ADDRESS is checked where it is what Ray takes (no
    address, or "auto"), and named so."""

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("RAY_USE_TLS", raising=False)
    with _server(GRPC_SETTINGS[:2], GRPC_SETTINGS[2:]) as port:
        require_ray_head(f"127.0.0.1:{port}", timeout=2)
    with _server() as port:
        t0 = time.monotonic()
        require_ray_head(f"127.0.0.1:{port}", timeout=0.3)
        assert time.monotonic() - t0 < 5
    with _server(b"HTTP/1.1 400 Bad Request\r\n\r\n") as port:
        with pytest.raises(NotStarted, match="is not a Ray cluster's head"):
            require_ray_head(f"127.0.0.1:{port}", timeout=2)
        monkeypatch.setenv("RAY_USE_TLS", "1")
        require_ray_head(f"127.0.0.1:{port}", timeout=2)
    monkeypatch.delenv("RAY_USE_TLS")
    with _server(listening=False) as port:
        require_ray_head(f"http://127.0.0.1:{port}", timeout=2)
        require_ray_head("local")
        require_ray_head(None)
        monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
        for address in (None, "auto"):
            with pytest.raises(NotStarted, match=rf"at 127.0.0.1:{port} \(RAY_ADDRESS\): nothing answers"):
                require_ray_head(address, timeout=2)


def test_an_interrupt_stops_the_runs_last_database_step(monkeypatch: pytest.MonkeyPatch, pg_url: str) -> None:
    """Ctrl-C (or SIGTERM, which the CLI turns into it) while the run's last step (merges,
    ANALYZE) runs: the statement is cancelled and the interrupt reaches the caller at once, the
    run's hold on the corpus ending only then; the driver's disconnect from the cluster, which
    overlaps that step on a thread of its own, is not what the interrupt waits for."""
    from contam.app.services.indexing import CorpusWriter
    from contam.indexer import cluster

    class NoScheduling:
        def __init__(self, *_a: object) -> None:
            pass

        def run(self, _files: object) -> list[object]:
            return []

    merging = threading.Event()

    def slow_merge(self: CorpusWriter, *_a: object) -> None:
        merging.set()
        self.conn.execute(text("SELECT pg_sleep(20)"))

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **_kw: None)
    monkeypatch.setattr(ray, "shutdown", lambda: time.sleep(0.3))
    monkeypatch.setattr(cluster, "_Scheduler", NoScheduling)
    monkeypatch.setattr(CorpusWriter, "merge_segments", slow_merge)
    main = threading.get_ident()

    def interrupt() -> None:
        if merging.wait(30):
            time.sleep(0.5)
            signal.pthread_kill(main, signal.SIGINT)

    engine = make_engine(pg_url)
    threading.Thread(target=interrupt, daemon=True).start()
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt), RayJob(engine, "web", SignatureConfig(), IndexOptions()) as job:
            job.run([])
        waited = time.monotonic() - t0
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM index_run")).scalar_one() == 0
            busy = "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%' AND state = 'active'"
            assert conn.execute(text(busy)).scalar_one() == 0
    finally:
        engine.dispose()
    assert merging.is_set() and waited < 10


def test_the_drivers_text_size_of_a_fifo_does_not_wait_for_a_writer(tmp_path: Path) -> None:
    """A review: the Ray driver opened every file to guess its text size before any worker saw it,
    and a FIFO named like a corpus file hung it there, waiting for a writer; its workers then fail
    it as not a regular file, as the local executor does."""
    import threading

    from contam.indexer.cluster import _text_size

    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    got: list[int] = []
    guess = threading.Thread(target=lambda: got.append(_text_size(fifo, 0)), daemon=True)
    guess.start()
    guess.join(10)
    assert got == [0], "the driver waited on the FIFO"
