"""How the posting insert rate holds as the index grows: one B-tree against capped segments.

Usage: python bench/segments.py [--batches 25] [--batch-rows 4000000] [--caps 0,4000000,16000000]

Each variant inserts the same batches of sorted random (hash, doc) rows into a fresh SQLite
database with the indexer's pragmas (64 KiB pages, 256 MiB cache, WAL checkpointed after each
batch) and prints the rate of the first, middle and last thirds of the batches.
- cap 0: one table keyed on (hash, doc), as before segments: each sorted batch lands all over
  the tree, so once the tree is several times the page cache every batch rewrites most pages;
- cap C: keyed on (seg, hash, doc); rows go to the newest segment until it holds C rows, so
  inserts only touch one segment's pages whatever the total size.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time

import numpy as np


def run(cap: int, batches: int, rows: int) -> list[float]:
    rng = np.random.default_rng(0)
    rates = []
    with tempfile.TemporaryDirectory() as tmp:
        con = sqlite3.connect(f"{tmp}/x.db", isolation_level=None)
        for p in (
            "page_size=65536",
            "journal_mode=WAL",
            "synchronous=NORMAL",
            "cache_size=-262144",
            "wal_autocheckpoint=0",
        ):
            con.execute(f"PRAGMA {p}")
        if cap:
            con.execute(
                "CREATE TABLE ngram (seg INTEGER NOT NULL, hash INTEGER NOT NULL, doc_id INTEGER NOT NULL,"
                " PRIMARY KEY (seg, hash, doc_id)) WITHOUT ROWID"
            )
        else:
            con.execute(
                "CREATE TABLE ngram (hash INTEGER NOT NULL, doc_id INTEGER NOT NULL,"
                " PRIMARY KEY (hash, doc_id)) WITHOUT ROWID"
            )
        seg, in_seg, doc = 1, 0, 1
        per = 1000
        for _ in range(batches):
            h = rng.integers(-(2**63), 2**63 - 1, rows, dtype=np.int64)
            d = rng.integers(doc, doc + 3000, rows, dtype=np.int64)
            doc += 3000
            o = np.lexsort((d, h))
            cols = [h[o], d[o]]
            if cap:
                if in_seg >= cap:
                    seg, in_seg = seg + 1, 0
                in_seg += rows
                cols = [np.full(rows, seg, dtype=np.int64), *cols]
            nc = len(cols)
            t0 = time.perf_counter()
            con.execute("BEGIN")
            full = rows - rows % per
            flat = np.column_stack([c[:full] for c in cols]).reshape(-1, nc * per)
            sql = "INSERT INTO ngram VALUES " + ",".join(["(" + ",".join("?" * nc) + ")"] * per)
            for i in range(0, len(flat), 100):
                con.executemany(sql, flat[i : i + 100].tolist())
            con.executemany(
                "INSERT INTO ngram VALUES (" + ",".join("?" * nc) + ")",
                zip(*(c[full:].tolist() for c in cols), strict=True),
            )
            con.execute("COMMIT")
            con.execute("PRAGMA wal_checkpoint(PASSIVE)")
            rates.append(rows / (time.perf_counter() - t0))
        con.close()
    return rates


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=25)
    ap.add_argument("--batch-rows", type=int, default=4_000_000)
    ap.add_argument("--caps", default="0,4000000,16000000")
    args = ap.parse_args()
    print(f"{args.batches} batches of {args.batch_rows:,} sorted rows ({args.batches * args.batch_rows:,} in all)")
    for cap in (int(c) for c in args.caps.split(",")):
        rates = run(cap, args.batches, args.batch_rows)
        k = max(1, len(rates) // 3)
        thirds = [statistics.median(rates[:k]), statistics.median(rates[k:-k] or rates), statistics.median(rates[-k:])]
        label = "one tree" if cap == 0 else f"segments of {cap / 1e6:.0f} M rows"
        print(
            f"{label:24s} first/middle/last third: " + " / ".join(f"{r / 1e6:4.2f}" for r in thirds) + " M rows/s",
            flush=True,
        )


if __name__ == "__main__":
    main()
