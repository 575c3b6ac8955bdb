"""A 10,000-item scan against a corpus of about 1 GB of text, PostgreSQL (or SQLite).

Usage: python bench/scan_1gb.py [--gb 1.0] [--items 10000] [--backend postgresql] [--pg URL]
                                [--workers 2] [--keep DIR]

The corpus is the shared evaluation corpus (../shared/eval/corpus, 81 MB of text) and as many
rewritten copies of it as reach --gb (each document's words rotated and, in every other copy,
reversed, as `bench/index_speed.py --variants` makes them: the same vocabulary and document
sizes, every n-gram new), so look-ups meet a 1 GB index of natural text. Without the shared
corpus the copies are of this machine's Python standard library sources. The benchmark is
`bench/scan_speed.py`'s: the evaluation benchmarks (if present), passages cut from the corpus
(contaminated) and shuffled words (clean), 10,000 items in all.

Prints: the corpus (MB of text, files), the index run (seconds, MB/s, documents, segments,
database size, bytes per token), then the scan (`contam scan --format json`, process start
included): seconds, items/s, the status counts and the scanning process's peak RSS. Takes
about 5-15 minutes on a 2-core machine; not part of the tests.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
CONTAM = [sys.executable, "-m", "contam.indexer.cli"]  # the `contam` command of this checkout

from index_speed import db_bytes, stdlib_corpus, variants  # noqa: E402
from scan_speed import build_benchmark, segment_count  # noqa: E402

from contam.app.readers.corpus import find_files, read_documents  # noqa: E402
from contam.app.store.db import upgrade  # noqa: E402


def build_corpus(out: Path, gb: float) -> tuple[list[str], list[str]]:
    """Corpus files reaching about `gb` GB of text, and passages of the original documents."""
    shared = ROOT.parent / "shared" / "eval" / "corpus"
    base = [str(p) for p in sorted(shared.glob("*.jsonl.gz"))] or [str(stdlib_corpus(out / "stdlib.jsonl.gz"))]
    rng = random.Random(0)
    passages: list[str] = []
    base_chars = 0
    for path in find_files([Path(p) for p in base]):
        for d in read_documents(path, Counter(), "text", "id", None):
            base_chars += len(d.text)
            words = d.text.split()
            if len(words) > 80 and rng.random() < 0.05:
                s = rng.randrange(0, len(words) - 60)
                passages.append(" ".join(words[s : s + rng.randrange(20, 60)]))
    copies = max(0, round(gb * 1e9 / base_chars) - 1)
    return base + variants(base, copies, out), passages


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--backend", default="postgresql", choices=["postgresql", "sqlite"])
    ap.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep", help="build the corpus here and keep it (default: a temporary folder)")
    args = ap.parse_args()
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="contam-1gb-"))
    tmp.mkdir(parents=True, exist_ok=True)
    admin, name = args.pg.replace("+psycopg", ""), f"contam_bench_{uuid.uuid4().hex[:8]}"
    try:
        t0 = time.perf_counter()
        files, passages = build_corpus(tmp, args.gb)
        bench = tmp / "bench.jsonl"
        build_benchmark(bench, args.items, passages)
        print(f"corpus: {len(files)} files, built in {time.perf_counter() - t0:.0f} s", flush=True)
        if args.backend == "sqlite":
            url = f"sqlite:///{tmp}/index.db"
        else:
            with psycopg.connect(admin, autocommit=True) as c:
                c.execute(f'CREATE DATABASE "{name}"')
            url = args.pg.rsplit("/", 1)[0] + "/" + name
        upgrade(url)
        index = [*CONTAM, "index", "--corpus", "bench", "--db", url, "--workers", str(args.workers)]
        t0 = time.perf_counter()
        proc = subprocess.run([*index, "--progress", "none", *files], capture_output=True, text=True, cwd=ROOT)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(proc.stderr)
        s = json.loads(proc.stdout)
        size = db_bytes(url)
        print(
            f"index ({args.backend}, --workers {args.workers}): {s['text_mb']:.0f} MB of text, {s['documents']} "
            f"documents, {s['tokens']} tokens in {wall:.0f} s ({s['text_mb'] / wall:.2f} MB/s wall, "
            f"{s['mb_per_s']:.2f} MB/s run); {segment_count(url)} segments; database {size / 1e9:.2f} GB "
            f"({size / s['tokens']:.1f} bytes/token)",
            flush=True,
        )
        t0 = time.perf_counter()
        scan = subprocess.run(
            [*CONTAM, "scan", str(bench), "--db", url, "--format", "json"], capture_output=True, text=True, cwd=ROOT
        )
        took = time.perf_counter() - t0
        if scan.returncode not in (0, 1):  # 1: contaminated items were found
            raise SystemExit(scan.stderr)
        counts = json.loads(scan.stdout)["summary"]["counts"]
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # the largest child: index or scan
        print(
            f"scan of {args.items} items: {took:.1f} s ({args.items / took:.0f} items/s, process start included); "
            f"{counts}; peak RSS of the largest process {peak:.0f} MB",
            flush=True,
        )
    finally:
        if args.backend == "postgresql":
            with psycopg.connect(admin, autocommit=True) as c:
                c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
