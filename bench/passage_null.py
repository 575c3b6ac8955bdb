"""The null of reading comprehension on web text: questions about passages whose source the corpus holds.

Usage: python bench/passage_null.py EVAL_DIR --db URL [--items 1200] [--out F]

Reading-comprehension benchmarks (SQuAD, DROP, BoolQ) take their passages from text a training
corpus holds too (an encyclopedia), and their questions quote phrases of the passage. None of
these items was copied: a flag is a false positive. This writes such items from EVAL_DIR's
corpus documents (not its planted pages): a 60-140-word stretch of a document as the `passage`
field, three questions each quoting a 5-9-word span of it ("Why <span>?", "<span>: true or
false?"), an answer word from the passage; then scans them with `contam scan` against URL (the
index of that corpus, as `python bench/eval.py EVAL_DIR --db URL` leaves it) and prints the
statuses and how many items the document holding the passage was found for (`passage_found`).
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
ASKED = ["Why", "When", "Where", "How", "Who said that", "What happened after", "Is it true that", "In which year"]


def items(eval_dir: Path, n: int, seed: int = 3) -> list[dict[str, str]]:
    rng = random.Random(seed)
    docs = []
    for path in sorted((eval_dir / "corpus").glob("*.jsonl.gz")):
        with gzip.open(path, "rt") as f:
            for line in f:
                d = json.loads(line)
                words = d["text"].split()
                prose = sum(c.isalpha() for c in d["text"][:2000]) > 1400
                if not d["id"].startswith("page-") and len(words) > 600 and prose:  # page-: planted copies
                    docs.append(words)
    rng.shuffle(docs)
    out: list[dict[str, str]] = []
    for words in docs:
        start = rng.randrange(100, len(words) - 300)
        passage = words[start : start + rng.randrange(60, 140)]
        for _ in range(3):
            k = rng.randrange(0, len(passage) - 10)
            span = " ".join(passage[k : k + rng.randrange(5, 10)]).strip('.,;:"')
            form = rng.random()
            if form < 0.5:
                question = f"{rng.choice(ASKED)} {span}?"
            elif form < 0.8:
                question = f"{rng.choice(ASKED)} {span} according to the author?"
            else:
                question = f"{span}: true or false?"
            answer = rng.choice([w for w in passage if len(w) > 4] or passage).strip('.,;:"')
            out.append({"id": f"rc{len(out)}", "passage": " ".join(passage), "question": question, "answer": answer})
        if len(out) >= n:
            return out[:n]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("eval_dir", type=Path)
    ap.add_argument("--db", required=True)
    ap.add_argument("--items", type=int, default=1200)
    ap.add_argument("--out", type=Path, help="keep the scan's JSON here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bench = Path(tmp) / "passage_null.jsonl"
        bench.write_text("".join(json.dumps(x) + "\n" for x in items(args.eval_dir, args.items)))
        cmd = [sys.executable, "-m", "contam.indexer.cli", "scan", str(bench), "--db", args.db, "--format", "json"]
        done = subprocess.run([*cmd, "--progress", "none"], capture_output=True, text=True, check=True, cwd=ROOT)
    results = json.loads(done.stdout)["results"]
    if args.out:
        args.out.write_text(done.stdout)
    statuses = collections.Counter(r["status"] for r in results)
    print(f"{len(results)} items, none copied: {dict(sorted(statuses.items()))}")
    print(f"passage found: {sum(r['passage_found'] for r in results)}")
    for r in results:
        if r["status"] in ("suspicious", "contaminated"):
            print(f"  flagged {r['item_id']}: {r['status']}, {r['reason']}")


if __name__ == "__main__":
    main()
