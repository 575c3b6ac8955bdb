"""/api/v1/check and warm-scan speed against an index that already exists (issue 10).

Usage: python bench/check_speed.py MODE --db URL [--eval-dir DIR] [--requests N] [--items N]
                                   [--clients N] [--seconds S] [--dump FILE]
MODE:
  inprocess   N one-item checks through CheckService.items (one service, as the server keeps it)
  testclient  the same through FastAPI's test client (routing, validation, JSON included)
  server      `contam serve` of this checkout, --clients concurrent clients for --seconds
              (bench/scan_speed.py's check_rps), one DROP question a request
  scan        a warm scan in this process of --items evaluation items (one process), after a
              50-item scan that opens connections and fills caches; --dump writes each result's
              as_dict() as JSON lines, to compare two checkouts byte for byte
Items are the evaluation benchmarks' (EVAL_DIR/benchmarks, default ../shared/eval), the same
ones on every run (a fixed seed). Prints the median latency (or the scan's time) and the CPU
seconds this process used; run two checkouts alternately to compare them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from contam.app.core.types import BenchmarkItem  # noqa: E402
from contam.app.readers.benchmark import read_benchmark  # noqa: E402
from contam.app.store.db import make_engine  # noqa: E402


def evaluation_items(eval_dir: Path) -> list[BenchmarkItem]:
    items: list[BenchmarkItem] = []
    for f in sorted((eval_dir / "benchmarks").glob("*.jsonl")):
        items += read_benchmark(f.read_bytes(), f.name)[0]
    return items


def timed_checks(send: object, texts: list[str]) -> tuple[float, float]:
    """(median seconds a request, CPU seconds a request) of send(text) for each text."""
    assert callable(send)
    send(texts[0])
    times = []
    cpu = time.process_time()
    for t in texts:
        t0 = time.perf_counter()
        send(t)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), (time.process_time() - cpu) / len(texts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("inprocess", "testclient", "server", "scan"))
    ap.add_argument("--db", required=True)
    ap.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval")
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--dump", type=Path)
    ap.add_argument("--job", type=int, default=0, help="server mode: a report job of N items runs meanwhile")
    ap.add_argument("--load", choices=("python", "wrk"), default="python", help="server mode: the load generator")
    ap.add_argument(
        "--texts",
        choices=("drop", "mixed"),
        default="drop",
        help="server mode: DROP's first 2,000 questions (passage and question, ~250 words), "
        "or 2,000 drawn from every benchmark",
    )
    args = ap.parse_args()
    items = evaluation_items(args.eval_dir)
    rng = random.Random(0)
    if args.mode == "scan":
        from contam.app.services.scanning import Scanner

        rng.shuffle(items)
        sample = [dataclasses.replace(it, row=k) for k, it in enumerate(items[: args.items])]
        scanner = Scanner(make_engine(args.db), workers=1)
        scanner.scan(sample[:50])
        cpu, t0 = time.process_time(), time.perf_counter()
        results = scanner.scan(sample)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu
        print(f"scan of {len(sample)} items, one process: {wall:.2f} s, CPU {cpu:.2f} s", flush=True)
        if args.dump:
            with args.dump.open("w") as out:
                for r in results:
                    out.write(json.dumps(r.as_dict(), sort_keys=True) + "\n")
        return
    if args.mode == "server":
        import scan_speed

        if args.texts == "drop":  # as scan_speed.py: its benchmark's first 2,000
            questions = [it.question for it in items][:2000]
        else:
            questions = [it.question for it in random.Random(1).sample(items, 2000)]
        job = None
        if args.job:  # a report job of that many evaluation questions, running while the clients check
            picked = [rng.choice(items).question for _ in range(args.job)]
            job = "".join(json.dumps({"id": f"j{k}", "question": q}) + "\n" for k, q in enumerate(picked)).encode()
        said: dict = {}
        rps, p50, p95 = scan_speed.check_rps(args.db, args.clients, args.seconds, questions, job, said, args.load)
        during = f" while a {args.job:,}-item report job ran ({said})" if args.job else ""
        print(
            f"/api/v1/check ({args.texts} texts), {args.clients} {args.load} clients{during}: {rps:.0f} requests/s, "
            f"p50 {p50:.0f} ms, p95 {p95:.0f} ms"
        )
        return
    texts = [rng.choice(items).question for _ in range(args.requests)]
    if args.mode == "inprocess":
        from contam.app.services.checking import CheckService

        svc = CheckService(make_engine(args.db))
        median, cpu = timed_checks(lambda t: svc.items([BenchmarkItem("0", 0, question=t)]), texts)
    else:
        from fastapi.testclient import TestClient

        from contam.app.api.main import create_app
        from contam.app.settings import Settings

        os.environ["CONTAM_DEMO"] = "false"
        with TestClient(create_app(Settings(database_url=args.db))) as client:
            median, cpu = timed_checks(
                lambda t: client.post("/api/v1/check", json={"texts": [t]}).raise_for_status(), texts
            )
    print(f"{args.mode}: {len(texts)} one-item checks, median {median * 1000:.2f} ms, CPU {cpu * 1000:.2f} ms each")


if __name__ == "__main__":
    main()
