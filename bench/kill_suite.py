"""kill -9 the indexer at random points, then let it finish: the index must equal an
uninterrupted run's (nothing lost, nothing twice), on SQLite or PostgreSQL.

Usage: python bench/kill_suite.py [--kills 10] [--files 24] [--docs 1500] [--pg ADMIN_URL] [--seed 1]
                                  [--executor ray --lease 3]

--pg takes a PostgreSQL URL of a database to connect to for CREATE/DROP DATABASE (for example
postgresql://postgres@127.0.0.1:5432/postgres); two scratch databases are made and dropped.
Compared: the documents (external id and text hash), the files recorded as done, the number of
n-gram and band postings, and the worker processes left behind by each kill.

--executor ray (needs --pg) indexes the killed database with `contam index --executor ray` on a
local Ray cluster of 2 CPUs started for the suite (by a process of its own, ended at the end;
its claim leases are --lease seconds), against a reference made by the local executor; every
kill but the last is of the driver, the last of a Ray worker in the middle of a task
(`ray::IndexWorker`, one per worker for the run), whose run then finishes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from sqlalchemy import text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CONTAM = [sys.executable, "-m", "contam.indexer.cli"]

from contam.app.store import repo  # noqa: E402
from contam.app.store.db import make_engine  # noqa: E402

WORDS = [
    "river",
    "tide",
    "moon",
    "sun",
    "city",
    "basra",
    "euphrates",
    "tigris",
    "ocean",
    "gravity",
    "quiz",
    "night",
    "answer",
    "ancient",
]


def build_corpus(out: Path, files: int, docs: int, seed: int) -> list[Path]:
    rng = random.Random(seed)
    paths = []
    for f in range(files):
        p = out / f"part-{f:03d}.jsonl"
        with p.open("w") as fh:
            for d in range(docs):
                words = " ".join(rng.choice(WORDS) + str(rng.randrange(500)) for _ in range(rng.randrange(50, 300)))
                fh.write(json.dumps({"id": f"{f}-{d}", "text": words}) + "\n")
        paths.append(p)
    return paths


def fingerprint(url: str) -> dict[str, object]:
    engine = make_engine(url)
    with engine.connect() as conn:
        docs = conn.execute(text("SELECT external_id, text_hash FROM document ORDER BY external_id")).all()
        files = conn.execute(text("SELECT count(*) FROM corpus_file WHERE status = 'done'")).scalar_one()
        ngrams = repo.posting_count(conn, "ngram")  # records in blocks, on both backends
        bands = repo.posting_count(conn, "band")
    engine.dispose()
    digest = hashlib.sha256(repr([tuple(r) for r in docs]).encode()).hexdigest()[:16]
    return {"documents": len(docs), "documents_sha": digest, "files": files, "ngrams": ngrams, "bands": bands}


def descendants(pid: int) -> set[int]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            tree.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


RAY: dict[str, str] = {}  # with --executor ray: "address" and "lease"

# A process that starts a local Ray cluster of 2 CPUs, prints its address and holds it until
# it is sent SIGTERM (ray.init's handler exits; at exit Ray stops the processes it started).
_HOLD = (
    "import logging, sys, time, ray; "
    "ray.init(address='local', num_cpus=2, include_dashboard=False, logging_level=logging.WARNING); "
    "print(ray.get_runtime_context().gcs_address, flush=True); time.sleep(1e6)"
)


def index_cmd(url: str, corpus: Path, ray: bool = False) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "CONTAM_DATABASE_URL": url}
    cmd = [*CONTAM, "index", "--corpus", "web", "--workers", "2", "--commit-mb", "2", "--progress", "none"]
    if ray:
        cmd += ["--executor", "ray", "--address", RAY["address"]]
        env |= {"RAY_AUTH_MODE": "token", "CONTAM_CLAIM_LEASE_SECONDS": RAY["lease"]}
    return [*cmd, str(corpus)], env


def ray_workers() -> list[int]:
    """The indexer's Ray workers (actors) running now."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(b"ray::IndexWorker"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def killed_ray_run(url: str, corpus: Path, after: float, worker: bool) -> tuple[bool, int]:
    """Start a Ray run, kill -9 its driver or (`worker`) one of its busy workers after `after` s
    of work (a worker's run then finishes: its file is taken over when the lease lapses);
    (something was killed, the indexer's Ray workers still running 15 s later)."""
    cmd, env = index_cmd(url, corpus, ray=True)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not ray_workers() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # the job's workers start
    time.sleep(after)
    killed = False
    if worker and (busy := ray_workers()):
        os.kill(random.choice(busy), signal.SIGKILL)
        killed = True
        proc.wait()
    elif proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
        killed = True
        proc.wait()
    deadline = time.monotonic() + 15  # a dead driver's tasks are ended by Ray
    while ray_workers() and time.monotonic() < deadline:
        time.sleep(0.2)
    return killed, len(ray_workers())


def run_to_end(url: str, corpus: Path, ray: bool = False) -> float:
    cmd, env = index_cmd(url, corpus, ray)
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def killed_run(url: str, corpus: Path, after: float) -> tuple[bool, int]:
    """Start the indexer, kill -9 it after `after` s; (it was still running, workers left 3 s later)."""
    cmd, env = index_cmd(url, corpus)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    time.sleep(after)
    children = descendants(proc.pid)
    running = proc.poll() is None
    if running:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(3)
    left = [p for p in children if alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    return running, len(left)


@contextmanager
def databases(pg_admin: str | None, tmp: Path) -> Iterator[tuple[str, str]]:
    if pg_admin is None:
        yield f"sqlite:///{tmp / 'reference.db'}", f"sqlite:///{tmp / 'killed.db'}"
        return
    names = [f"contam_kill_{uuid.uuid4().hex[:8]}" for _ in range(2)]
    admin = pg_admin.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(admin, autocommit=True) as conn:
        for n in names:
            conn.execute(f'CREATE DATABASE "{n}"')
    base = admin.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://")
    try:
        yield f"{base}/{names[0]}", f"{base}/{names[1]}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            for n in names:
                conn.execute(f'DROP DATABASE IF EXISTS "{n}" WITH (FORCE)')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--files", type=int, default=24)
    ap.add_argument("--docs", type=int, default=1500)
    ap.add_argument("--pg", default=None)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--executor", default="local", choices=["local", "ray"])
    ap.add_argument("--lease", default="3")
    args = ap.parse_args()
    if args.executor == "ray":
        if args.pg is None:
            raise SystemExit("--executor ray needs --pg")
        holder = subprocess.Popen([sys.executable, "-c", _HOLD], stdout=subprocess.PIPE, text=True)
        assert holder.stdout is not None
        RAY.update(address=holder.stdout.readline().strip(), lease=args.lease)
        try:
            suite(args)
        finally:
            holder.terminate()
            holder.wait(60)
        return
    suite(args)


def suite(args: argparse.Namespace) -> None:
    ray = args.executor == "ray"
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        corpus = tmp / "corpus"
        corpus.mkdir()
        build_corpus(corpus, args.files, args.docs, args.seed)
        with databases(args.pg, tmp) as (reference, killed):
            for url in (reference, killed):
                subprocess.run([*CONTAM, "db", "upgrade", "--db", url], cwd=ROOT, check=True, capture_output=True)
            seconds = run_to_end(reference, corpus)
            print(f"uninterrupted: {seconds:.1f} s, {fingerprint(reference)}")
            kills = leftovers = 0
            for k in range(args.kills):  # each resumes where the last stopped: kill within its share of the work
                after = rng.uniform(0.3, max(0.6, 2 * seconds / args.kills))
                if ray:
                    running, left = killed_ray_run(killed, corpus, after, worker=k == args.kills - 1)
                else:
                    running, left = killed_run(killed, corpus, after)
                kills += running
                leftovers += left
            run_to_end(killed, corpus, ray)
            same = fingerprint(killed) == fingerprint(reference)
            print(f"after {kills} kill -9s and a run to the end: {fingerprint(killed)}")
            print(f"index equal to the uninterrupted run: {same}; worker processes left behind: {leftovers}")
            if not same or leftovers:
                raise SystemExit(1)


if __name__ == "__main__":
    main()
