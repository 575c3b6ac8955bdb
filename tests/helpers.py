"""Small corpus builders shared by the tests (the indexing itself: the `index_corpus` fixture),
and `snapshot`, an index's content independent of internal ids."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

from sqlalchemy import select

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
