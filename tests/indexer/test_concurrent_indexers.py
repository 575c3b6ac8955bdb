"""Two indexers on the same files at once, on both databases: the second waits for each file
the first holds, then skips it; nothing fails, nothing is indexed twice."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from conftest import IndexCorpus
from sqlalchemy import text

from contam.app.store.db import make_engine
from contam.indexer.summary import IndexSummary


def test_two_indexers_on_the_same_files(migrated_url: str, tmp_path: Path, index_corpus: IndexCorpus) -> None:
    files = []
    for f in range(16):
        p = tmp_path / f"f{f}.jsonl"
        docs = [{"id": f"{f}-{d}", "text": f"file {f} document {d} words " * 30} for d in range(40)]
        p.write_text("".join(json.dumps(d) + "\n" for d in docs))
        files.append(p)
    index_corpus(migrated_url, files[:1], "web")  # the corpus exists before both start
    results: list[IndexSummary] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(index_corpus(migrated_url, files, "web", commit_bytes=0))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    statuses = [f.status for r in results for f in r.files]
    assert statuses.count("done") == 15 and statuses.count("failed") == 0  # each file indexed by one of them
    engine = make_engine(migrated_url)
    with engine.connect() as conn:
        docs = conn.execute(text("SELECT count(*), count(DISTINCT external_id) FROM document")).one()
        files_done = conn.execute(text("SELECT count(*) FROM corpus_file WHERE status = 'done'")).scalar_one()
    engine.dispose()
    assert tuple(docs) == (640, 640) and files_done == 16
