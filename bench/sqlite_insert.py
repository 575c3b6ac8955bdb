"""Ways of bulk-inserting (hash, doc) postings into a SQLite WITHOUT ROWID table, side by side.

Usage: python bench/sqlite_insert.py [--files 8] [--rows-per-file 1050000] [--repeat 3]

Each variant loads the same rows (8 files of random 64-bit hashes, each file sorted, as the
indexer's writer sees them) into a fresh database and prints the median rows/s:
- the SQLite library: the stdlib's sqlite3, and pysqlite3 (a newer SQLite) if installed: with
  multi-row statements and large pages it gains nothing, so the project does not depend on it;
- page size 4 KiB and 64 KiB;
- one row per statement (executemany) and 1000 rows per multi-row INSERT;
- a commit per file and one transaction for all files.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

DDL = "CREATE TABLE ngram (hash INTEGER NOT NULL, doc_id INTEGER NOT NULL, PRIMARY KEY (hash, doc_id)) WITHOUT ROWID"


def one_row(con: Any, h: np.ndarray, d: np.ndarray) -> None:
    con.executemany("INSERT INTO ngram VALUES (?,?)", zip(h.tolist(), d.tolist(), strict=True))


def multi_row(con: Any, h: np.ndarray, d: np.ndarray, per: int = 1000) -> None:
    full = len(h) - len(h) % per
    flat = np.column_stack([h[:full], d[:full]]).reshape(-1, 2 * per)
    sql = "INSERT INTO ngram VALUES " + ",".join(["(?,?)"] * per)
    for i in range(0, len(flat), 100):
        con.executemany(sql, flat[i : i + 100].tolist())
    one_row(con, h[full:], d[full:])


def load(
    mod: ModuleType, page: int, insert: Callable[..., None], per_file: bool, files: list[tuple[np.ndarray, np.ndarray]]
) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        con = mod.connect(f"{tmp}/x.db", isolation_level=None)
        for p in (
            f"page_size={page}",
            "journal_mode=WAL",
            "synchronous=NORMAL",
            "cache_size=-262144",
            "wal_autocheckpoint=0",
        ):
            con.execute(f"PRAGMA {p}")
        con.execute(DDL)
        t0 = time.perf_counter()
        con.execute("BEGIN")
        for i, (h, d) in enumerate(files):
            insert(con, h, d)
            if per_file and i < len(files) - 1:
                con.execute("COMMIT")
                con.execute("BEGIN")
        con.execute("COMMIT")
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        dt = time.perf_counter() - t0
        con.close()
    return sum(len(h) for h, _ in files) / dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--rows-per-file", type=int, default=1_050_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    files, doc = [], 1
    for _ in range(args.files):
        h = rng.integers(-(2**63), 2**63 - 1, args.rows_per_file, dtype=np.int64)
        d = rng.integers(doc, doc + 740, args.rows_per_file, dtype=np.int64)
        doc += 740
        o = np.lexsort((d, h))
        files.append((h[o], d[o]))
    mods: list[ModuleType] = [sqlite3]
    with contextlib.suppress(ImportError):
        mods.append(importlib.import_module("pysqlite3.dbapi2"))
    variants = [
        (mod, page, name, fn, per_file)
        for mod in mods
        for page in (4096, 65536)
        for name, fn in (("one row/statement", one_row), ("1000 rows/statement", multi_row))
        for per_file in (True, False)
    ]
    results: dict[int, list[float]] = {i: [] for i in range(len(variants))}
    for _ in range(args.repeat):  # interleaved, so machine noise hits every variant alike
        for i, (mod, page, _name, fn, per_file) in enumerate(variants):
            results[i].append(load(mod, page, fn, per_file, files))
    n = args.files * args.rows_per_file
    print(f"{n:,} rows in {args.files} sorted files; median of {args.repeat}")
    for i, (mod, page, name, _fn, per_file) in enumerate(variants):
        commit = "commit per file" if per_file else "one transaction"
        print(
            f"SQLite {mod.sqlite_version:7s} page {page // 1024:2d} KiB  {name:20s} {commit:16s} "
            f"{statistics.median(results[i]) / 1e6:5.2f} M rows/s"
        )


if __name__ == "__main__":
    main()
