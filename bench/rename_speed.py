"""Renaming a corpus that a 100,000-item report names: how long the rename's rewrite of the
report takes (its corpora, summary, and every item's evidence and corpora found).

Usage: python bench/rename_speed.py [URL]   (default: a new SQLite file; for PostgreSQL, the URL
of an empty database the bench may fill)
"""

from __future__ import annotations

import datetime
import json
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import insert

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from contam.app.store import reports  # noqa: E402
from contam.app.store.db import make_engine, upgrade  # noqa: E402
from contam.app.store.schema import report, report_item  # noqa: E402

ITEMS = 100_000


def main() -> None:
    url = sys.argv[1] if len(sys.argv) > 1 else f"sqlite:///{tempfile.mkdtemp()}/rename.db"
    upgrade(url)
    engine = make_engine(url)
    now = datetime.datetime.now(datetime.UTC)
    evidence = [{"corpus": "docs", "document_id": f"d{k}", "excerpt": "some text " * 40} for k in range(3)]
    with engine.begin() as conn:
        conn.execute(
            insert(report).values(
                id="r1", name="bench", filename="b.jsonl", file_hash="h", status="done", total_items=ITEMS,
                done_items=ITEMS, corpora=json.dumps(["docs"]), mapping="{}", thresholds="{}", fingerprint="f",
                config="{}", software_version="0", summary=json.dumps({"per_corpus": {"docs": {}}}), upload=b"x",
                created_at=now,
            )
        )  # fmt: skip
        item = json.dumps({"evidence": evidence, "metrics": {}})
        rows = [
            {"report_id": "r1", "idx": i, "item_id": f"i{i}", "status": "suspicious", "score": 0.5, "text": "t",
             "search": "t", "roles_found": ",question,", "corpora_found": ",docs,", "data": item}
            for i in range(ITEMS)
        ]  # fmt: skip
        conn.execute(insert(report_item), rows)
    t0 = time.perf_counter()
    with engine.begin() as conn:
        reports.rename_corpus(conn, "docs", "usrdocs", now - datetime.timedelta(days=1))
    print(f"{url.split(':')[0]}: {ITEMS:,} items renamed in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
