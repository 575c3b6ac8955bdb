"""Big uploads: a generated benchmark of --mb MB (default 200, the upload limit's size) uploaded
to a server started in a subprocess against a small indexed corpus; prints the peak RSS of the
server and its scan worker processes (RSS and PSS, summed, sampled every 0.1 s from /proc), the time to the
first progress the report shows, and the total time.

Usage: python bench/big_upload.py [--mb 200] [--scan-workers 2] [--cli]
--cli also times `contam scan` on the same file and samples its RSS the same way.

The benchmark is shaped like a reading-comprehension set (SQuAD, RACE): a ~2.8 kB passage, a
question, choices and an answer per item, three questions per passage; one passage in 50 is
copied from the corpus (contaminated), the rest is fresh text from the same vocabulary.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
CONTAM = [sys.executable, "-m", "contam.indexer.cli"]  # the `contam` command of this checkout
VOCAB = [f"{a}{b}{c}{d}" for a in "bcdfghjklmnprstvwz" for b in "aeiou" for c in "nrstlmkp" for d in "aeiouy"]


def words(rng: random.Random, k: int) -> str:
    return " ".join(rng.choices(VOCAB, k=k))


def build(tmp: Path, mb: float) -> tuple[Path, Path, int]:
    """(corpus file, benchmark file, items)."""
    rng = random.Random(0)
    docs = [{"id": f"d{i}", "text": words(rng, 600)} for i in range(2000)]
    corpus = tmp / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs))
    bench = tmp / "big.jsonl"
    n, written, budget = 0, 0, mb * 1e6
    with bench.open("w") as out:
        while written < budget:
            copied = n % 150 == 0
            passage = docs[n % len(docs)]["text"] if copied else words(rng, 600)
            for q in range(3):
                question = " ".join(passage.split()[q * 20 : q * 20 + 18]) if copied else words(rng, 18)
                rec = {
                    "id": f"b{n}",
                    "context": passage,
                    "question": question,
                    "choices": [words(rng, 3) for _ in range(4)],
                    "answer": q % 4,
                }
                line = json.dumps(rec) + "\n"
                out.write(line)
                written += len(line)
                n += 1
    return corpus, bench, n


def tree_memory(pid: int, parts: list[int] | None = None) -> tuple[int, int]:
    """(RSS, PSS) in bytes of a process and all its descendants, summed (each one's RSS appended
    to `parts`, the process first). RSS counts a page shared by several of them (the scan
    tables workers map from one file, a forked child's inherited pages) once per process; PSS
    divides it between them."""
    rss, pss, todo = 0, 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                if parts is not None:
                    parts.append(0)
                for line in f:
                    if line.startswith(("Rss:", "Pss:")):
                        kb = int(line.split()[1]) * 1024
                        rss, pss = (rss + kb, pss) if line.startswith("Rss:") else (rss, pss + kb)
                        if parts is not None and line.startswith("Rss:"):
                            parts[-1] = kb
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return rss, pss


class Sampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.peak_pss, self.stop = pid, 0, 0, threading.Event()
        self.parts: list[int] = []  # each process's RSS at the peak of the sum

    def run(self) -> None:
        while not self.stop.is_set():
            parts: list[int] = []
            rss, pss = tree_memory(self.pid, parts)
            if rss > self.peak:
                self.peak, self.parts = rss, [p for p in parts if p > 32 << 20]  # not the fork server
            self.peak_pss = max(self.peak_pss, pss)
            time.sleep(0.1)

    def shares(self) -> str:
        return " + ".join(f"{p / 2**20:,.0f}" for p in self.parts)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def upload(url: str, bench: Path, scan_workers: int, n: int) -> None:
    port = free_port()
    env = {
        **os.environ,
        "CONTAM_DATABASE_URL": url,
        "CONTAM_DEMO": "false",
        "CONTAM_SCAN_WORKERS": str(scan_workers),
    }
    server = subprocess.Popen(
        [*CONTAM, "serve", "--port", str(port)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        sampler = Sampler(server.pid)
        sampler.start()
        t0 = time.monotonic()
        with bench.open("rb") as f:
            r = httpx.post(base + "/api/v1/benchmarks", files={"file": (bench.name, f)}, timeout=3600)
        if r.status_code != 202:
            raise SystemExit(f"upload refused: {r.status_code} {r.text}")
        rid = r.json()["id"]
        t_upload = time.monotonic() - t0
        first = first_read = None
        while True:
            rep = httpx.get(f"{base}/api/v1/reports/{rid}", timeout=60).json()
            if first_read is None and rep.get("read_items", 0) > 0:
                first_read = time.monotonic() - t0
            if first is None and rep["done_items"] > 0:
                first = time.monotonic() - t0
            if rep["status"] in ("done", "failed"):
                break
            time.sleep(0.2)
        total = time.monotonic() - t0
        sampler.stop.set()
        sampler.join()
        print(
            f"server: {bench.stat().st_size / 1e6:.0f} MB, {n:,} items, {scan_workers} scan workers: "
            f"{rep['status']} {rep['error'] or ''}; peak RSS {sampler.peak / 2**20:,.0f} MiB, peak PSS "
            f"{sampler.peak_pss / 2**20:,.0f} MiB (server and workers, summed; RSS at the peak, server first: "
            f"{sampler.shares()} MiB); "
            f"upload answered in {t_upload:.1f} s; first items read shown after "
            f"{first_read if first_read is not None else float('nan'):.1f} s, first scored after "
            f"{first if first is not None else float('nan'):.1f} s; done after {total:.1f} s; "
            f"counts {(rep['summary'] or {}).get('counts')}",
            flush=True,
        )
    finally:
        server.terminate()
        server.wait(30)


def cli(url: str, bench: Path, scan_workers: int, n: int) -> None:
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [*CONTAM, "scan", str(bench), "--db", url, "--format", "json", "--workers", str(scan_workers)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    sampler = Sampler(proc.pid)
    sampler.start()
    out, _ = proc.communicate()
    sampler.stop.set()
    sampler.join()
    counts = json.loads(out)["summary"]["counts"] if proc.returncode in (0, 1) else None
    print(
        f"contam scan: {bench.stat().st_size / 1e6:.0f} MB, {n:,} items, {scan_workers} workers: exit "
        f"{proc.returncode}; peak RSS {sampler.peak / 2**20:,.0f} MiB, peak PSS {sampler.peak_pss / 2**20:,.0f} MiB "
        f"(summed over its workers); {time.monotonic() - t0:.1f} s; {counts}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=200.0, help="benchmark size in MB (1e6 bytes)")
    ap.add_argument("--scan-workers", type=int, default=2, help="CONTAM_SCAN_WORKERS of the server")
    ap.add_argument("--cli", action="store_true", help="also run `contam scan` on the file")
    ap.add_argument("--no-server", action="store_true", help="skip the upload")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        corpus, bench, n = build(tmp, args.mb)
        url = f"sqlite:///{tmp}/bench.db"
        subprocess.run([*CONTAM, "db", "upgrade", "--db", url], cwd=ROOT, check=True, stderr=subprocess.DEVNULL)
        subprocess.run(
            [*CONTAM, "index", "--corpus", "web", "--db", url, "--progress", "none", str(corpus)],
            cwd=ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        if not args.no_server:
            upload(url, bench, args.scan_workers, n)
        if args.cli:
            cli(url, bench, args.scan_workers, n)


if __name__ == "__main__":
    main()
