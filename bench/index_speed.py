"""Indexing speed, memory and size, SQLite and PostgreSQL side by side.

Usage: python bench/index_speed.py [CORPUS_PATH ...] [--repeat 3] [--workers 2] [--pg URL]
Without a path it indexes the shared evaluation corpus if present (../shared/eval/corpus),
else a corpus made from this machine's Python standard library sources.
Prints per backend: median MB/s of text, documents/s, peak RSS (MB) and database bytes per token.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def stdlib_corpus(out: Path) -> Path:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    with gzip.open(out, "wt") as f:
        for p in sorted(stdlib.rglob("*.py")):
            f.write(json.dumps({"id": str(p.relative_to(stdlib)), "text": p.read_text(errors="replace")}) + "\n")
    return out


def run_once(url: str, paths: list[str], workers: int) -> dict:
    from app.store.db import upgrade

    upgrade(url)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "app.cli", "index", "--corpus", "bench", "--db", url, "--workers", str(workers),
         "--progress", "none", *paths], capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    summary = json.loads(proc.stdout)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"wall": wall, "summary": summary, "peak_mb": peak}


def db_bytes(url: str) -> int:
    if url.startswith("sqlite"):
        path = url.split("///", 1)[1]
        return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
    import psycopg

    with psycopg.connect(url.replace("+psycopg", "")) as c:
        return int(c.execute("SELECT pg_database_size(current_database())").fetchone()[0])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    paths = args.paths
    if not paths:
        shared = ROOT.parent / "shared" / "eval" / "corpus"
        paths = [str(shared)] if shared.exists() else [str(stdlib_corpus(Path(tmp.name) / "stdlib.jsonl.gz"))]
    import psycopg

    results: dict[str, list[dict]] = {"sqlite": [], "postgresql": []}
    for i in range(args.repeat):
        for backend in results:  # alternate backends so machine noise hits both alike
            if backend == "sqlite":
                url = f"sqlite:///{tmp.name}/bench-{i}.db"
                r = run_once(url, paths, args.workers)
                r["bytes"] = db_bytes(url)
            else:
                name = f"contam_bench_{uuid.uuid4().hex[:8]}"
                admin = args.pg.replace("+psycopg", "")
                with psycopg.connect(admin, autocommit=True) as c:
                    c.execute(f'CREATE DATABASE "{name}"')
                url = args.pg.rsplit("/", 1)[0] + "/" + name
                try:
                    r = run_once(url, paths, args.workers)
                    r["bytes"] = db_bytes(url)
                finally:
                    with psycopg.connect(admin, autocommit=True) as c:
                        c.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            results[backend].append(r)
    for backend, runs in results.items():
        s = runs[0]["summary"]
        mbs = statistics.median(r["summary"]["text_mb"] / r["summary"]["seconds"] for r in runs)
        docs = statistics.median(r["summary"]["documents"] / r["summary"]["seconds"] for r in runs)
        peak = max(r["peak_mb"] for r in runs)
        print(f"{backend:10s} {s['text_mb']:.1f} MB text, {s['documents']} docs, {s['tokens']} tokens: "
              f"{mbs:.2f} MB/s, {docs:.0f} docs/s (median of {len(runs)}), peak RSS {peak:.0f} MB, "
              f"{statistics.median(r['bytes'] for r in runs) / s['tokens']:.1f} DB bytes/token")


if __name__ == "__main__":
    main()
