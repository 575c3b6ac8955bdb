"""Compare ways of bulk-inserting (hash, doc) postings into a SQLite WITHOUT ROWID table.

Usage: python bench/sqlite_insert.py [rows]   (prints rows/s per method, median of 3)
"""

from __future__ import annotations

import sqlite3
import statistics
import sys
import tempfile
import time

import numpy as np


def setup(path: str) -> sqlite3.Connection:
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    con.execute("PRAGMA cache_size=-262144")
    con.execute(
        "CREATE TABLE ngram (hash INTEGER NOT NULL, doc_id INTEGER NOT NULL, PRIMARY KEY (hash, doc_id)) WITHOUT ROWID"
    )
    return con


def executemany(con: sqlite3.Connection, h: np.ndarray, d: np.ndarray) -> None:
    con.executemany("INSERT INTO ngram VALUES (?,?)", zip(h.tolist(), d.tolist(), strict=True))


def json_each(con: sqlite3.Connection, h: np.ndarray, d: np.ndarray) -> None:
    step = 200_000
    for i in range(0, len(h), step):
        pairs = np.stack([h[i : i + step], d[i : i + step]], axis=1)
        con.execute(
            "INSERT INTO ngram SELECT value ->> 0, value ->> 1 FROM json_each(?)",
            (str(pairs.tolist()),),
        )


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
    rng = np.random.default_rng(0)
    results: dict[str, list[float]] = {"executemany": [], "json_each": []}
    for _ in range(3):
        for name, fn in (("executemany", executemany), ("json_each", json_each)):
            with tempfile.TemporaryDirectory() as tmp:
                con = setup(f"{tmp}/x.db")
                # pre-fill so inserts land in a tree of realistic size
                pre_h = rng.integers(-2**63, 2**63 - 1, 2_000_000, dtype=np.int64)
                o = np.argsort(pre_h)
                con.execute("BEGIN")
                executemany(con, pre_h[o], np.arange(len(pre_h))[o] % 100000)
                con.execute("COMMIT")
                h = rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64)
                d = rng.integers(0, 1_000_000, n, dtype=np.int64) + 200000
                o = np.lexsort((d, h))
                h, d = h[o], d[o]
                t0 = time.perf_counter()
                con.execute("BEGIN")
                fn(con, h, d)
                con.execute("COMMIT")
                results[name].append(n / (time.perf_counter() - t0))
                con.close()
    for name, v in results.items():
        print(f"{name:12s} {statistics.median(v) / 1e6:.2f} M rows/s (median of {len(v)})")


if __name__ == "__main__":
    main()
