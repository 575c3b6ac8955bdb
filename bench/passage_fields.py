"""An evaluation set's reading-comprehension items with their passage as a field of its own.

Usage: python bench/passage_fields.py EVAL_DIR OUT_DIR
then:  python bench/eval.py OUT_DIR --db sqlite:///F [--reuse]

Writes OUT_DIR/benchmarks/NAME.jsonl for each benchmark of EVAL_DIR whose items read
"Passage: ... Question: ..." in one field (BIG-bench's DROP), as {"id", "passage", "question",
"answer"}: the layout of SQuAD, DROP and BoolQ on Hugging Face. OUT_DIR/corpus and
OUT_DIR/labels.jsonl link to EVAL_DIR's, so the same planted copies (the passage, then the
question) are scored as items of that layout.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

SPLIT = re.compile(r"Passage:\s*(.*?)\s*Question:\s*(.*)$", re.S)


def main() -> None:
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    (out / "benchmarks").mkdir(parents=True, exist_ok=True)
    for name in ("corpus", "labels.jsonl"):
        if not (out / name).exists():
            (out / name).symlink_to((src / name).resolve())
    for path in sorted((src / "benchmarks").glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        split = [SPLIT.match(str(r.get("input", ""))) for r in rows]
        if not rows or not all(split):
            continue
        target = [r.get("target") for r in rows]
        items = [
            {
                "id": r["id"],
                "passage": m.group(1),
                "question": m.group(2),
                "answer": (t[0] if isinstance(t, list) and t else t) or "",
            }
            for r, m, t in zip(rows, split, target, strict=True)
            if m is not None
        ]
        (out / "benchmarks" / path.name).write_text("".join(json.dumps(x) + "\n" for x in items))
        print(f"{path.name}: {len(items)} items with a passage field")


if __name__ == "__main__":
    main()
