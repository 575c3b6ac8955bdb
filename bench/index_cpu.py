"""CPU of one indexing run, the worker processes included, and of the PostgreSQL server.

Usage: python bench/index_cpu.py [--root TREE] [--backend sqlite|postgresql] [--pg URL] [CORPUS_PATH]
Indexes the corpus (default: the shared evaluation corpus) with `--workers 2` into a new database
of the checkout TREE (default: this one; an older commit unpacked with `git archive` compares
code), dropped afterwards, and prints the wall time, the CPU seconds of the indexer's whole
process tree and per MB of text, its MB/s, and (PostgreSQL) the CPU of the server processes
serving that database. The workers are children of multiprocessing's forkserver, which the
indexer does not wait for, so this process makes itself a subreaper (prctl
PR_SET_CHILD_SUBREAPER, Linux): they are reparented to it, reaped, and counted by
getrusage(RUSAGE_CHILDREN). The server's CPU is read from /proc while the run goes on (the same
machine only). CPU per MB is steadier than MB/s on a shared machine.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]


def server_cpu(admin: str, name: str, running: subprocess.Popen[str], seen: dict[int, float]) -> None:
    """Until `running` ends: the CPU seconds of each server process connected to database `name`."""
    tick = os.sysconf("SC_CLK_TCK")
    with psycopg.connect(admin, autocommit=True) as c:
        while running.poll() is None:
            for (pid,) in c.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", (name,)).fetchall():
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                seen[pid] = (int(fields[11]) + int(fields[12])) / tick
            time.sleep(0.2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("path", nargs="?", default=str(ROOT.parent / "shared" / "eval" / "corpus"))
    ap.add_argument("--root", default=str(ROOT), help="the checkout whose indexer runs")
    ap.add_argument("--backend", default="postgresql", choices=["sqlite", "postgresql"])
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = ap.parse_args()
    name = "contam_cpu_" + uuid.uuid4().hex[:8]
    if args.backend == "postgresql":
        with psycopg.connect(args.pg, autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{name}"')
        url = args.pg.replace("postgresql://", "postgresql+psycopg://").rsplit("/", 1)[0] + "/" + name
    else:
        url = f"sqlite:////tmp/{name}.db"
    cli = [sys.executable, "-m", "contam.indexer.cli"]
    try:
        subprocess.run([*cli, "db", "upgrade", "--db", url], cwd=args.root, check=True, capture_output=True)
        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        run = subprocess.Popen(
            [*cli, "index", "--corpus", "bench", "--db", url, "--workers", "2", args.path],
            cwd=args.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        seen: dict[int, float] = {}
        if args.backend == "postgresql":
            threading.Thread(target=server_cpu, args=(args.pg, name, run, seen), daemon=True).start()
        out, err = run.communicate()
        wall = time.perf_counter() - t0
        while True:  # the forkserver and the workers, reparented here
            try:
                os.wait()
            except ChildProcessError:
                break
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if run.returncode != 0:
            raise SystemExit(err)
        summary = json.loads(out)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        server = f", server CPU {sum(seen.values()):.1f} s" if args.backend == "postgresql" else ""
        print(
            f"{args.root} {args.backend}: wall {wall:.1f} s, indexer CPU {cpu:.1f} s "
            f"({cpu / summary['text_mb']:.3f} s/MB), {summary['mb_per_s']} MB/s{server}"
        )
    finally:
        if args.backend == "postgresql":
            with psycopg.connect(args.pg, autocommit=True) as c:
                c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        else:
            for suffix in ("", "-wal", "-shm"):
                Path(f"/tmp/{name}.db{suffix}").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
