"""Indexing speed, memory and size, SQLite and PostgreSQL side by side.

Usage: python bench/index_speed.py [CORPUS_PATH ...] [--repeat 3] [--workers 2] [--pg URL]
                                   [--variants K] [--backends sqlite,postgresql]
                                   [--segment-rows N,M] [--merge-fanout F,G] [--scan FILE]... [--merge-after F]
Without a path it indexes the shared evaluation corpus if present (../shared/eval/corpus),
else a corpus made from this machine's Python standard library sources.
--scan FILE times `contam scan` of a benchmark against the first SQLite index, and --merge-after F
then merges its segments and times the scan again (look-ups visit every segment).
--variants K adds K rewritten copies of every JSONL file (each document's words reversed or
rotated, so every n-gram is new) to see how the rate holds as the index grows.
Prints per backend: median MB/s of text, documents/s, peak RSS (MB), database bytes per token,
and the files' own rates over the first and the last third of the run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
from sqlalchemy import text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CONTAM = [sys.executable, "-m", "contam.indexer.cli"]  # the `contam` command of this checkout

from contam.app.readers.corpus import find_files  # noqa: E402
from contam.app.store.db import make_engine, upgrade  # noqa: E402


def stdlib_corpus(out: Path) -> Path:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    with gzip.open(out, "wt") as f:
        for p in sorted(stdlib.rglob("*.py")):
            f.write(json.dumps({"id": str(p.relative_to(stdlib)), "text": p.read_text(errors="replace")}) + "\n")
    return out


def variants(paths: list[str], k: int, out: Path) -> list[str]:
    """k copies of every JSONL(.gz) file under `paths` with each document's words reordered."""
    made = []
    for j in range(1, k + 1):
        for i, p in enumerate(find_files([Path(x) for x in paths])):
            if not p.name.endswith((".jsonl", ".jsonl.gz")):
                continue
            target = out / f"variant{j}-{i:04d}.jsonl.gz"
            opener = gzip.open if p.suffix == ".gz" else open
            with opener(p, "rt") as src, gzip.open(target, "wt", compresslevel=1) as dst:
                for line in src:
                    d = json.loads(line)
                    words = str(d.get("text", "")).split()
                    cut = len(words) * j // (k + 1)
                    words = words[cut:] + words[:cut]
                    dst.write(
                        json.dumps({"id": f"v{j}-{d.get('id')}", "text": " ".join(words[::-1] if j % 2 else words)})
                        + "\n"
                    )
            made.append(str(target))
    return made


# Runs a command and prints the peak resident set of its largest process (this run's alone).
_PEAK = (
    "import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:]).returncode; "
    "print(f'maxrss {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}', file=sys.stderr); sys.exit(rc)"
)


def run_once(url: str, paths: list[str], workers: int, segment_rows: int | None, fanout: int | None) -> dict:
    upgrade(url)
    extra = ["--segment-rows", str(segment_rows)] if segment_rows else []
    extra += ["--merge-fanout", str(fanout)] if fanout is not None else []
    t0 = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _PEAK,
            *CONTAM,
            "index",
            "--corpus",
            "bench",
            "--db",
            url,
            "--workers",
            str(workers),
            "--progress",
            "log",
            *extra,
            *paths,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    summary = json.loads(proc.stdout)
    peak = int(proc.stderr.rsplit("maxrss ", 1)[1]) / 1024
    rates = [  # the run's rate as each file's line gives it ("the run so far: X MB at Y MB/s")
        float(m[1]) for m in re.finditer(r"^done \[.*the run so far: [\d.]+ MB at ([\d.]+) MB/s", proc.stderr, re.M)
    ]
    return {"wall": wall, "summary": summary, "peak_mb": peak, "file_rates": rates}


def scan_after(url: str, paths: list[str], benchmarks: list[str], merge_fanout: int) -> str:
    """Time `contam scan` of the benchmarks against the index just built; with merge_fanout,
    merge its segments (`contam index` again: every file is unchanged) and time it again."""

    def segments() -> int:
        eng = make_engine(url)
        with eng.connect() as conn:
            n = int(conn.execute(text("SELECT count(*) FROM segment")).scalar_one())
        eng.dispose()
        return n

    def scan() -> float:
        t0 = time.perf_counter()
        for b in benchmarks:
            subprocess.run(
                [*CONTAM, "scan", b, "--db", url, "--format", "json"],
                capture_output=True,
                text=True,
                cwd=ROOT,
                check=True,
            )
        return time.perf_counter() - t0

    out = f"scan of {', '.join(Path(b).name for b in benchmarks)}: {scan():.1f} s over {segments()} segments"
    if merge_fanout:
        t0 = time.perf_counter()
        subprocess.run(
            [
                *CONTAM,
                "index",
                "--corpus",
                "bench",
                "--db",
                url,
                "--merge-fanout",
                str(merge_fanout),
                "--progress",
                "none",
                *paths,
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        )
        merged = time.perf_counter() - t0
        out += f"; merged at fan-out {merge_fanout} in {merged:.0f} s: {scan():.1f} s over {segments()} segments"
    return out


def db_bytes(url: str) -> int:
    if url.startswith("sqlite"):
        path = url.split("///", 1)[1]
        return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
    with psycopg.connect(url.replace("+psycopg", "")) as c:
        return int(c.execute("SELECT pg_database_size(current_database())").fetchone()[0])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    ap.add_argument("--variants", type=int, default=0)
    ap.add_argument("--backends", default="sqlite,postgresql")
    ap.add_argument(
        "--segment-rows", default="", help="comma-separated posting rows per segment to compare (default: the CLI's)"
    )
    ap.add_argument("--merge-fanout", default="", help="comma-separated values to compare (default: the CLI's)")
    ap.add_argument("--scan", action="append", default=[], help="a benchmark file to scan after the first run")
    ap.add_argument(
        "--merge-after", type=int, default=0, help="after that scan, merge the segments at this fan-out and scan again"
    )
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    paths = args.paths
    if not paths:
        shared = ROOT.parent / "shared" / "eval" / "corpus"
        paths = [str(shared)] if shared.exists() else [str(stdlib_corpus(Path(tmp.name) / "stdlib.jsonl.gz"))]
        if not shared.exists():  # figures of another corpus: they do not compare with the README's
            print(f"no evaluation corpus at {shared}: indexing this Python's standard library instead", flush=True)
    if args.variants:
        paths = paths + variants(paths, args.variants, Path(tmp.name))
    segs = [int(float(x)) for x in args.segment_rows.split(",") if x] or [None]
    fanouts = [int(x) for x in args.merge_fanout.split(",") if x] or [None]
    results: dict[tuple[str, int | None, int | None], list[dict]] = {
        (b, n, f): [] for b in args.backends.split(",") for n in segs for f in fanouts
    }
    for i in range(args.repeat):
        for backend, seg_rows, fanout in results:  # alternate configurations so machine noise hits all alike
            if backend == "sqlite":
                url = f"sqlite:///{tmp.name}/bench-{i}.db"
                r = run_once(url, paths, args.workers, seg_rows, fanout)
                r["bytes"] = db_bytes(url)
                if args.scan and i == 0:
                    r["scan"] = scan_after(url, paths, args.scan, args.merge_after)
                os.remove(url.split("///", 1)[1])
            else:
                name = f"contam_bench_{uuid.uuid4().hex[:8]}"
                admin = args.pg.replace("+psycopg", "")
                with psycopg.connect(admin, autocommit=True) as c:
                    c.execute(f'CREATE DATABASE "{name}"')
                url = args.pg.rsplit("/", 1)[0] + "/" + name
                try:
                    r = run_once(url, paths, args.workers, seg_rows, fanout)
                    r["bytes"] = db_bytes(url)
                finally:
                    with psycopg.connect(admin, autocommit=True) as c:
                        c.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            results[(backend, seg_rows, fanout)].append(r)
    for (backend, seg_rows, fanout), runs in results.items():
        s = runs[0]["summary"]
        mbs = statistics.median(r["summary"]["text_mb"] / r["summary"]["seconds"] for r in runs)
        docs = statistics.median(r["summary"]["documents"] / r["summary"]["seconds"] for r in runs)
        peak = max(r["peak_mb"] for r in runs)
        label = backend + (f", segments of {seg_rows / 1e6:g} M rows" if seg_rows else "")
        label += f", merge fan-out {fanout}" if fanout is not None else ""
        print(
            f"{label} {s['text_mb']:.1f} MB text, {s['documents']} docs, {s['tokens']} tokens: "
            f"{mbs:.2f} MB/s, {docs:.0f} docs/s (median of {len(runs)}), peak RSS {peak:.0f} MB, "
            f"{statistics.median(r['bytes'] for r in runs) / s['tokens']:.1f} DB bytes/token"
        )
        if "scan" in runs[0]:
            print(f"{'':10s} {runs[0]['scan']}")
        rates = runs[0]["file_rates"]
        if len(rates) >= 3:
            third = len(rates) // 3
            print(
                f"{'':10s} the run's MB/s as its files finished (first run): first third median "
                f"{statistics.median(rates[:third]):.1f}, last third median {statistics.median(rates[-third:]):.1f}"
            )


if __name__ == "__main__":
    main()
