"""Small corpus builders shared by the tests (the indexing itself: the `index_corpus` fixture),
and `snapshot`, an index's content independent of internal ids."""

from __future__ import annotations

import gzip
import json
import random
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Connection, Engine, select

from contam.app.core.types import BenchmarkItem
from contam.app.services.reports import ReportService
from contam.app.services.scanning import Scanner
from contam.app.store import repo
from contam.app.store.db import make_engine
from contam.app.store.schema import corpus_file, document

VOCAB = [f"w{i}" for i in range(5000)]


def make_docs(n: int, words: int, seed: int, prefix: str) -> list[dict[str, Any]]:
    """n documents of `words` random words each, ids prefix0, prefix1, ..."""
    rng = random.Random(seed)
    return [{"id": f"{prefix}{i}", "text": " ".join(rng.choices(VOCAB, k=words))} for i in range(n)]


def write_jsonl(path: Path, docs: list[dict[str, Any]], gz: bool = False) -> Path:
    data = "".join(json.dumps(d) + "\n" for d in docs).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def stdlib_stand_in(path: Path) -> Path:
    """A stand-in for the demo's Python standard library corpus (indexer/demo.stdlib_corpus), written
    to `path`: one gzipped module whose source holds a quiz question."""
    question = "Which river flows through the ancient city of Baghdad and joins the Euphrates near Basra?"
    with gzip.open(path, "wt") as f:
        f.write(json.dumps({"id": "m.py", "text": f"def f():\n    return '{question}'\n"}) + "\n")
    return path


def report_by_content(target: Engine | str, corpus: str, items: list[BenchmarkItem]) -> list[tuple[str, dict, list]]:
    """A scan of `corpus`: per item, its score and evidence, with the index's own document ids
    (which differ between indexes of the same documents) given as the documents' names."""
    eng = make_engine(target) if isinstance(target, str) else target
    with eng.connect() as conn:
        ext = dict(conn.execute(select(document.c.id, document.c.external_id)).all())
    out = []
    for r in Scanner(eng, [corpus]).scan(items):
        evidence = [{**asdict(e), "corpus": None, "document": ext[e.document]} for e in r.evidence]
        score = asdict(r.score)
        score["best_doc"] = ext.get(score["best_doc"])
        score["doc_ranking"] = [(ext[d], *rest) for d, *rest in score["doc_ranking"]]
        out.append((r.item.item_id, score, evidence))
    if isinstance(target, str):
        eng.dispose()
    return out


def tied_pages(root: Path, sizes: tuple[int, int] = (40, 40)) -> tuple[list[Path], BenchmarkItem]:
    """Two files of three pages each, every page holding the same half of an item (returned):
    equally good documents, tied for the scanner's four candidates' places and for the best one.
    sizes: words of filler before the half in each file's pages."""
    words = "the lighthouse keeper counted ninety seven gulls circling above the northern breakwater at dawn"
    question = f"{words} before the storm reached the harbour and every fishing boat was tied down twice"
    root.mkdir(parents=True, exist_ok=True)
    files = []
    for f, size in enumerate(sizes):
        pages = [
            {"id": f"page{f}{i}", "text": f"{' '.join(f'f{f}{i}w{k}' for k in range(size))} {words} closing{f}{i}"}
            for i in range(3)
        ]
        files.append(root / f"a{f}.jsonl")
        files[-1].write_text("".join(json.dumps(d) + "\n" for d in pages))
    return files, BenchmarkItem("tied", 0, question=question)


def snapshot(url: str) -> dict:
    """The index content, independent of internal ids."""
    eng = make_engine(url)
    with eng.connect() as conn:
        ext = dict(conn.execute(select(document.c.id, document.c.external_id)).all())
        docs = sorted(conn.execute(select(document.c.external_id, document.c.n_tokens, document.c.text_hash)).all())
        grams = sorted((h, ext[d]) for _, h, d in repo.postings(conn, "ngram"))
        bands = sorted((k, ext[d], w) for _, k, d, w in repo.postings(conn, "band"))
        files = sorted(conn.execute(select(corpus_file.c.path, corpus_file.c.status, corpus_file.c.n_docs)).all())
    eng.dispose()
    return {"docs": docs, "grams": grams, "bands": bands, "files": files}


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def descendants(pid: int) -> set[int]:
    """Every process below `pid` (children, theirs, ...), from /proc."""
    tree, found, todo = _children(), set(), [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        state = (Path(f"/proc/{pid}") / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def only_thread(seconds: float = 30.0) -> list[str]:
    """Wait (up to `seconds`) until this thread is the process's only one, as a scan that forks its
    workers needs: threads earlier tests started (an idle AnyIO worker, a report job finishing)
    end on their own, at a time the test order decides (a full run failed on one left running).
    The names of the threads still running (empty: none)."""
    import threading
    import time

    deadline = time.monotonic() + seconds
    while threading.active_count() > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    return [t.name for t in threading.enumerate() if t is not threading.current_thread()]


FINISHED = ("done", "failed")


def wait_for_report(
    reports: TestClient | ReportService,
    report_id: str,
    seconds: float = 30.0,
    headers: dict[str, str] | None = None,
    passing: tuple[type[Exception], ...] = (),
) -> dict[str, Any]:
    """The report once it is done or failed, read through the API (a TestClient; `headers` sent
    with each read) or the service. The test fails, naming the status last read, if it has not
    finished within `seconds`. `passing`: errors a read may meet meanwhile and that are read
    through (the database away during an outage)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            rep = _read_report(reports, report_id, headers)
            status = rep["status"]
        except passing as exc:
            status = f"unreadable: {exc}"
        else:
            if status in FINISHED:
                return rep
        if time.monotonic() > deadline:
            pytest.fail(f"report {report_id} did not finish within {seconds} s: {status}")
        time.sleep(0.05)


def _read_report(reports: TestClient | ReportService, report_id: str, headers: dict[str, str] | None) -> dict[str, Any]:
    if isinstance(reports, ReportService):
        return reports.get(report_id)
    r = reports.get(f"/api/v1/reports/{report_id}", headers=headers)
    assert r.status_code == 200, r.text
    rep: dict[str, Any] = r.json()
    return rep


def delete_at_progress_step(monkeypatch: pytest.MonkeyPatch, svc: ReportService, step: int) -> list[int]:
    """A DELETE of the report arriving while its job runs: at the job's `step`-th progress write
    (rrepo.set_progress), `svc` deletes the report, then the write goes on. The items done at each
    write, as the writes come."""
    from contam.app.store import reports as rrepo

    steps: list[int] = []
    real = rrepo.set_progress

    def deleted_at_the_step(conn: Connection, report_id: str, done: int, owner: str | None = None) -> bool:
        steps.append(done)
        if len(steps) == step:
            svc.delete(report_id)
        return real(conn, report_id, done, owner)

    monkeypatch.setattr(rrepo, "set_progress", deleted_at_the_step)
    return steps
