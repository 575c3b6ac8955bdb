"""Pass 1 of a scan, timed in this process: reading a benchmark's items, then building the
benchmark-wide tables (shared text, the token model) that the scan builds on one core before it
scores any item.

Usage: python bench/pass1_speed.py BENCHMARK [--repeat 3]
Prints the import time, the time to read the items alone, and each pass 1's time with the median.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("benchmark", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    t0 = time.perf_counter()
    from contam.app.readers.benchmark import iter_benchmark
    from contam.app.services.scanning import _Bench

    t1 = time.perf_counter()
    items = functools.partial(iter_benchmark, args.benchmark, args.benchmark.name, None, keep_raw=False)
    n = sum(1 for _ in items())
    t2 = time.perf_counter()
    runs = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        _Bench.of(items(), 5)
        runs.append(time.perf_counter() - t)
    print(
        f"import {t1 - t0:.2f} s; reading {n} items {t2 - t1:.2f} s; pass 1 "
        f"{', '.join(f'{r:.2f}' for r in runs)} s (median {statistics.median(runs):.2f})"
    )


if __name__ == "__main__":
    main()
