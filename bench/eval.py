"""Detection quality on a labelled evaluation set, through the real code path.

Usage: python bench/eval.py EVAL_DIR [--db URL] [--workers N]
Indexes EVAL_DIR/corpus into a fresh database (default: a temporary SQLite file), scans every
benchmark in EVAL_DIR/benchmarks and prints, per benchmark and overall: the share of items
flagged (suspicious or contaminated) per planted kind, the false-positive rate on clean items,
precision, and how many items were reported too short. Labels: EVAL_DIR/labels.jsonl.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.core.config import SignatureConfig  # noqa: E402
from app.readers.benchmark import read_benchmark  # noqa: E402
from app.services.scanning import Scanner  # noqa: E402
from app.store.db import make_engine, upgrade  # noqa: E402
from indexer.job import IndexJob, IndexOptions  # noqa: E402

KINDS = ["verbatim", "embedded", "reformatted", "light_edit", "heavy_edit", "question_only", "partial", "sibling",
         "clean"]
FLAGGED = ("suspicious", "contaminated")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("eval_dir", type=Path)
    ap.add_argument("--db", default=None)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    url = args.db or f"sqlite:///{tmp.name}/eval.db"
    upgrade(url)
    engine = make_engine(url)
    t0 = time.perf_counter()
    with IndexJob(engine, "eval", SignatureConfig(), IndexOptions(workers=args.workers)) as job:
        summary = job.run([args.eval_dir / "corpus"]).as_dict()
    t_index = time.perf_counter() - t0
    lines = (args.eval_dir / "labels.jsonl").read_text().splitlines()
    labels = {(r["benchmark"], r["id"]): r for r in map(json.loads, lines)}
    scanner = Scanner(engine)
    table: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    t1 = time.perf_counter()
    n_items = 0
    sibling_contaminated = 0
    for path in sorted((args.eval_dir / "benchmarks").glob("*.jsonl")):
        bench = path.name[: -len(".jsonl")]
        items, _ = read_benchmark(path.read_bytes(), path.name)
        for r in scanner.scan(items):
            kind = labels[(bench, r.item.item_id)]["kind"]
            for key in (bench, "ALL"):
                table[key][kind][r.score.status] += 1
            sibling_contaminated += kind == "sibling" and r.score.status == "contaminated"
            n_items += 1
    t_scan = time.perf_counter() - t1
    print(f"indexed {summary['documents']} documents ({summary['text_mb']} MB) in {t_index:.1f} s; "
          f"scanned {n_items} items in {t_scan:.1f} s")
    header = f"{'benchmark':22s} " + " ".join(f"{k[:11]:>11s}" for k in KINDS) + "   FPR  precision too_short"
    print(header)
    for bench in sorted(table, key=lambda b: (b == "ALL", b)):
        row = table[bench]
        cells = []
        for k in KINDS:
            c = row.get(k)
            cells.append(f"{sum(c[s] for s in FLAGGED) / sum(c.values()):11.3f}" if c else f"{'-':>11s}")
        flagged_planted = sum(sum(row[k][s] for s in FLAGGED) for k in KINDS if k not in ("clean", "sibling"))
        fp = sum(row["clean"][s] for s in FLAGGED)
        clean_n = sum(row["clean"].values())
        precision = flagged_planted / (flagged_planted + fp) if flagged_planted + fp else 0.0
        too_short = sum(row[k]["too_short"] for k in row)
        print(f"{bench:22s} " + " ".join(cells) + f" {fp / clean_n if clean_n else 0:.4f} {precision:9.3f} "
              f"{too_short:9d}")
    contaminated = {k: table["ALL"][k]["contaminated"] / max(1, sum(table["ALL"][k].values())) for k in KINDS}
    print("share reported contaminated (not just suspicious): "
          + ", ".join(f"{k}={v:.3f}" for k, v in contaminated.items()))
    print(f"siblings reported contaminated: {sibling_contaminated}")
    engine.dispose()


if __name__ == "__main__":
    main()
