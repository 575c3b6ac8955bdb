"""Detection quality on a labelled evaluation set, through the real code path.

Usage: python bench/eval.py EVAL_DIR [--db URL] [--reuse] [--workers N] [--ngram N] [--sample K] [--items-out FILE]
Indexes EVAL_DIR/corpus into a fresh database (default: a temporary SQLite file; --reuse scans
an index --db already holds, migrated to this version's schema first), scans every benchmark
in EVAL_DIR/benchmarks and prints, per benchmark and pooled:
  * the share of items flagged (suspicious or contaminated) per planted kind; for `clean`
    items that is the false-positive rate;
  * the share reported `contaminated` per kind;
  * too_short counts, siblings reported contaminated, question_only items with answer_found;
and names the worst benchmark for each kind. Labels: EVAL_DIR/labels.jsonl (benchmark, id,
kind). An unplanted item whose text (question, choices, answer) is identical to a planted item's
of the same benchmark is truly in the corpus: it is counted apart, as `duplicate`, and left
out of the false-positive rate. --items-out writes every item's status, reason, metrics and
label as JSON lines. Fields are mapped to roles as `contam scan` maps them; EVAL_DIR/mappings.json
(or --mappings FILE), {"benchmark name": {"question": "field", ...}}, gives a benchmark's mapping.
A benchmark that cannot be read is named at the end and the others are measured; items whose
id is not in the labels are counted and left out.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contam.app.core.config import SignatureConfig  # noqa: E402
from contam.app.errors import InputError  # noqa: E402
from contam.app.readers.benchmark import COMPRESSIONS, benchmark_format, read_benchmark  # noqa: E402
from contam.app.services.scanning import Scanner  # noqa: E402
from contam.app.store.db import make_engine, upgrade  # noqa: E402
from contam.indexer.job import IndexJob, IndexOptions  # noqa: E402

KINDS = [
    "verbatim",
    "embedded",
    "reformatted",
    "light_edit",
    "heavy_edit",
    "question_only",
    "partial",
    "sibling",
    "clean",
    "duplicate",
]
PLANTED = {"verbatim", "embedded", "reformatted", "light_edit", "heavy_edit", "question_only", "partial"}
FLAGGED = ("suspicious", "contaminated")


def share(c: Counter[str], statuses: tuple[str, ...]) -> float | None:
    total = sum(c.values())
    return sum(c[s] for s in statuses) / total if total else None


def table(title: str, rows: dict[str, dict[str, Counter[str]]], statuses: tuple[str, ...]) -> None:
    print(f"\n{title}")
    print(f"{'benchmark':28s} " + " ".join(f"{k[:11]:>11s}" for k in KINDS) + f" {'too_short':>9s}")
    benches = sorted(rows, key=lambda b: (b == "ALL", b))
    for bench in benches:
        cells = []
        for k in KINDS:
            v = share(rows[bench][k], statuses)
            cells.append(f"{v:11.3f}" if v is not None else f"{'-':>11s}")
        too_short = sum(rows[bench][k]["too_short"] for k in rows[bench])
        print(f"{bench:28s} " + " ".join(cells) + f" {too_short:9d}")
    worst = []
    for k in KINDS:
        vals = [(v, b) for b in benches if b != "ALL" and (v := share(rows[b][k], statuses)) is not None]
        if vals:
            v, b = max(vals) if k in ("clean", "duplicate") else min(vals)
            worst.append(f"{k}={b} ({v:.3f})")
    print("worst: " + ", ".join(worst))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("eval_dir", type=Path)
    ap.add_argument("--db", default=None)
    ap.add_argument("--reuse", action="store_true", help="scan the index --db already holds")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--ngram", type=int, default=None, help="n-gram size of a fresh index")
    ap.add_argument("--sample", type=int, default=1, help="a fresh index keeps n-grams with hash %% K == 0")
    ap.add_argument("--items-out", type=Path, default=None)
    ap.add_argument(
        "--mappings",
        type=Path,
        default=None,
        help="JSON: benchmark name -> field mapping (default: EVAL_DIR/mappings.json if present)",
    )
    args = ap.parse_args()
    mappings_path = args.mappings or args.eval_dir / "mappings.json"
    mappings = _mappings(mappings_path)
    if not (args.eval_dir / "benchmarks").is_dir() or not (args.reuse or (args.eval_dir / "corpus").is_dir()):
        raise SystemExit(f"error: {args.eval_dir} is not an evaluation set (benchmarks/ and corpus/): give its path")
    tmp = tempfile.TemporaryDirectory()
    url = args.db or f"sqlite:///{tmp.name}/eval.db"
    upgrade(url)  # a reused index made by an older version is migrated first (as the server does)
    engine = make_engine(url) if args.reuse else None
    t_index = 0.0
    if engine is None:
        engine = make_engine(url)
        cfg = SignatureConfig(sample_mod=args.sample, **({"ngram_n": args.ngram} if args.ngram else {}))
        t0 = time.perf_counter()
        with IndexJob(engine, "eval", cfg, IndexOptions(workers=args.workers)) as job:
            summary = job.run([args.eval_dir / "corpus"]).as_dict()
        t_index = time.perf_counter() - t0
        print(f"indexed {summary['documents']} documents ({summary['text_mb']} MB) in {t_index:.1f} s")
    lines = (args.eval_dir / "labels.jsonl").read_text().splitlines()
    labels = {(r["benchmark"], str(r["id"])): r for r in map(json.loads, lines)}  # ids as the reader gives them
    scanner = Scanner(engine, workers=args.workers)
    rows: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    answers: Counter[str] = Counter()
    out = args.items_out.open("w") if args.items_out else None
    t1 = time.perf_counter()
    n_items = 0
    unread: list[str] = []
    unlabelled: Counter[str] = Counter()
    files = {bench: path for path in sorted((args.eval_dir / "benchmarks").iterdir()) if (bench := _name(path))}
    for bench in sorted(set(mappings) - set(files)):
        print(f"{mappings_path}: no benchmark named {bench!r} (benchmarks: {', '.join(sorted(files))})")
    for bench, path in files.items():
        try:
            items, used = read_benchmark(path.read_bytes(), path.name, mappings.get(bench))
        except InputError as exc:  # one benchmark the reader cannot map: said, and the others measured
            unread.append(f"{bench}: {exc.message}")
            print(f"{bench}: NOT READ: {exc.message}", file=sys.stderr)
            continue
        print(f"{bench}: {len(items)} items, fields {used}", file=sys.stderr)
        unlabelled[bench] = sum((bench, it.item_id) not in labels for it in items)
        items = [it for it in items if (bench, it.item_id) in labels]
        text = {it.item_id: (it.question, it.choices, it.answer) for it in items}
        planted = {text[it.item_id] for it in items if labels[(bench, it.item_id)]["kind"] in PLANTED}
        for r in scanner.scan(items) if items else []:
            kind = labels[(bench, r.item.item_id)]["kind"]
            if kind in ("clean", "sibling") and text[r.item.item_id] in planted:
                kind = "duplicate"
            status = str(r.score.status)
            for key in (bench, "ALL"):
                rows[key][kind][status] += 1
            if kind == "question_only":
                answers["items"] += 1
                answers["answer_found"] += bool(r.score.answer_found)
            if out:
                d = r.as_dict()
                out.write(
                    json.dumps(
                        {
                            "benchmark": bench,
                            "kind": kind,
                            **{
                                k: d[k]
                                for k in ("item_id", "status", "reason", "metrics", "question_found", "answer_found")
                            },
                            "evidence": [e["document_id"] for e in d["evidence"]],
                            "doc_id": labels[(bench, r.item.item_id)].get("doc_id"),
                        }
                    )
                    + "\n"
                )
            n_items += 1
    t_scan = time.perf_counter() - t1
    if out:
        out.close()
    print(f"scanned {n_items} items in {t_scan:.1f} s")
    table("share flagged (suspicious or contaminated); clean = false-positive rate", rows, FLAGGED)
    table("share reported contaminated", rows, ("contaminated",))
    sib = sum(rows["ALL"]["sibling"]["contaminated"] for _ in [0])
    print(
        f"\nsiblings reported contaminated: {sib}; question_only with answer_found: "
        f"{answers['answer_found']} of {answers['items']}"
    )
    for bench, n in sorted(unlabelled.items()):
        if n:  # an id the reader took from another field than the labels' (or a row number)
            print(f"{bench}: {n} items with no label (their ids are not in labels.jsonl), left out")
    for line in unread:
        print(f"NOT READ (give it a field mapping in {mappings_path} to measure it): {line}")
    engine.dispose()
    unmeasured = [b for b in files if not any(rows[b][k].total() for k in rows[b])]
    if unmeasured:  # every table is printed; the run still says it measured less than it was given
        print(f"not measured: {', '.join(unmeasured)}")
        raise SystemExit(1)


def _name(path: Path) -> str | None:
    """A benchmark file's name as labels.jsonl gives it (qa.jsonl.gz: "qa"); None for a file of
    a type the reader does not take (said)."""
    try:
        benchmark_format(path.name)
    except InputError:
        if not path.name.startswith("."):
            print(f"{path}: not a benchmark file, left out", file=sys.stderr)
        return None
    name = path.name
    for suffix, _kind in COMPRESSIONS:
        name = name.removesuffix(suffix)
    return name.rsplit(".", 1)[0] if path.is_file() else None


def _mappings(path: Path) -> dict[str, dict[str, Any]]:
    """EVAL_DIR/mappings.json: benchmark name -> {role: field or [fields]}, checked."""
    if not path.is_file():
        return {}
    try:
        found = json.loads(path.read_text())
    except ValueError as exc:
        raise SystemExit(f"error: {path}: not JSON ({exc})") from None
    if not (isinstance(found, dict) and all(isinstance(m, dict) for m in found.values())):
        raise SystemExit(f'error: {path}: give {{"benchmark name": {{"question": "field", ...}}, ...}}')
    return found


if __name__ == "__main__":
    main()
