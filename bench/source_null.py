"""The null of real questions written from text the corpus holds: their sources indexed, the questions not.

Usage: python bench/source_null.py EVAL_DIR [--db URL] [--plant 0.05] [--out DIR]

Crowd workers wrote DROP's questions reading a passage, and StrategyQA's annotators wrote, for
each question, the facts that answer it. A training corpus holds such sources (an encyclopedia),
never the questions. So this indexes EVAL_DIR's corpus without the documents it planted copies in,
plus every DROP passage and every StrategyQA fact paragraph as documents of their own, and scans
the questions alone with their answers (DROP's passage and StrategyQA's facts left out of the
items; only the items the evaluation set planted nowhere). No item was copied: each flag is a
false positive of a question that shares phrases with its source, the answer beside them. A share
`--plant` of the questions is also written, whole, with its answer, into its source's document (a
positive control, reported apart).

Prints, per benchmark: clean items flagged (suspicious / contaminated), planted ones found, and
each flag's reason.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _drop(eval_dir: Path) -> list[tuple[str, str, str, str]]:
    """(id, source, question, answer) of each DROP item."""
    out = []
    for line in (eval_dir / "benchmarks" / "bigbench_drop.jsonl").read_text().splitlines():
        d = json.loads(line)
        passage, question = d["input"].rsplit("Question:", 1)
        question = question.split("Answer type:")[0].strip()
        answer = d["target"][0] if isinstance(d["target"], list) else d["target"]
        out.append((d["id"], passage.replace("Passage:", "", 1).strip(), question, str(answer).rstrip(".")))
    return out


def _strategyqa(eval_dir: Path) -> list[tuple[str, str, str, str]]:
    """(id, facts, question, Yes or No) of each StrategyQA item."""
    out = []
    for line in (eval_dir / "benchmarks" / "bigbench_strategyqa.jsonl").read_text().splitlines():
        d = json.loads(line)
        answer, _, facts = d["target"].partition(". ")
        if facts:
            out.append((d["id"], facts.strip(), d["input"].strip(), answer.strip()))
    return out


def _labels(eval_dir: Path) -> tuple[set[str], set[str]]:
    """(items the evaluation set planted nowhere, documents holding a planted copy): labels.jsonl.
    Copies are embedded in documents of every source, not only its `page-` ones, and a DROP
    question is often another passage's too ("How many field goals were made in the first half?")."""
    rows = [json.loads(line) for line in (eval_dir / "labels.jsonl").read_text().splitlines()]
    return {r["id"] for r in rows if r["kind"] == "clean"}, {r["doc_id"] for r in rows if r.get("doc_id")}


def build(eval_dir: Path, out: Path, plant: float, seed: int = 7) -> dict[str, set[str]]:
    """Corpus shards and benchmarks under `out` (the evaluation set's clean items only); returns
    each benchmark's planted ids."""
    rng = random.Random(seed)
    clean, copies = _labels(eval_dir)
    out.mkdir(parents=True, exist_ok=True)
    with gzip.open(out / "background.jsonl.gz", "wt") as w:
        for path in sorted((eval_dir / "corpus").glob("*.jsonl.gz")):
            with gzip.open(path, "rt") as f:
                for line in f:
                    if json.loads(line)["id"] not in copies:
                        w.write(line)
    planted: dict[str, set[str]] = {}
    for name, rows in (("drop_questions", _drop(eval_dir)), ("strategyqa_questions", _strategyqa(eval_dir))):
        sources: dict[str, list[str]] = {}
        planted[name] = set()
        with (out / f"{name}.jsonl").open("w") as b:
            for item_id, source, question, answer in rows:
                if item_id not in clean:
                    continue
                b.write(json.dumps({"id": item_id, "question": question, "answer": answer}) + "\n")
                extra = sources.setdefault(source, [])
                if rng.random() < plant:
                    planted[name].add(item_id)
                    extra.append(f"{question} {answer}.")
        with gzip.open(out / f"{name}-sources.jsonl.gz", "wt") as w:
            for k, (source, extra) in enumerate(sources.items()):
                w.write(json.dumps({"id": f"{name}-source-{k}", "text": "\n\n".join([source, *extra])}) + "\n")
    return planted


def _contam(*args: str) -> str:
    cmd = [sys.executable, "-m", "contam.indexer.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT).stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("eval_dir", type=Path)
    ap.add_argument("--db", help="a database URL to index into (default: a new SQLite file in the work directory)")
    ap.add_argument("--plant", type=float, default=0.05, help="share of questions copied into their source")
    ap.add_argument("--out", type=Path, help="the work directory, kept (default: a temporary one)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.out or Path(tmp)
        planted = build(args.eval_dir, work, args.plant)
        db = args.db or f"sqlite:///{work / 'source_null.db'}"
        _contam("db", "upgrade", "--db", db)
        _contam("index", "--corpus", "sources", "--db", db, "--progress", "none", *map(str, sorted(work.glob("*.gz"))))
        for name, plants in planted.items():
            results = json.loads(_contam("scan", str(work / f"{name}.jsonl"), "--db", db, "--format", "json"))
            clean = [r for r in results["results"] if r["item_id"] not in plants]
            found = [r for r in results["results"] if r["item_id"] in plants]
            by = collections.Counter(r["status"] for r in clean)
            flags = [r for r in clean if r["status"] in ("suspicious", "contaminated")]
            hits = collections.Counter(r["status"] for r in found)
            share = 100 * len(flags) / max(len(clean), 1)
            print(
                f"{name}: {len(clean)} clean items, {len(flags)} flagged ({share:.2f}%: "
                f"{by['suspicious']} suspicious, {by['contaminated']} contaminated); "
                f"planted {len(found)}: {dict(sorted(hits.items()))}",
                flush=True,
            )
            for r in flags:
                print(f"  {r['item_id']}: {r['status']}, {r['reason']}")


if __name__ == "__main__":
    main()
