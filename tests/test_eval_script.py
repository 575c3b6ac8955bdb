"""`make eval` (bench/eval.py) on a small labelled set laid out as ../shared/eval is: every
benchmark it can read is measured, one it cannot map is named, not a crash of the whole run
(an evaluation set of benchmarks "as published" holds layouts the reader may not know), and a
mappings file maps it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "which ancient river city on the northern plain was famous for its floating lantern market"
ARTICLE = "the council of the northern plain voted on tuesday to rebuild the old stone bridge over the river delta"


def _eval_set(root: Path) -> Path:
    (root / "benchmarks").mkdir(parents=True)
    (root / "corpus").mkdir()
    filler = " ".join(f"word{i}" for i in range(300))
    docs = [
        {"id": "d0", "text": f"{filler} Question: {QUESTION}? Answer: Hoi An. {filler}"},
        {"id": "d1", "text": filler},
    ]
    (root / "corpus" / "shard-0.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    qa = [
        {"id": "q0", "question": QUESTION, "answer": "Hoi An"},
        {"id": "q1", "question": "who painted the ceiling", "answer": "x"},
    ]
    (root / "benchmarks" / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in qa))
    # a layout no role is detected in: a story and a list of questions (CoQA's)
    (root / "benchmarks" / "stories.jsonl").write_text(
        json.dumps({"id": "s0", "tale": ARTICLE, "asks": ["when?"]}) + "\n"
    )
    labels = [("qa", "q0", "verbatim"), ("qa", "q1", "clean"), ("stories", "s0", "clean")]
    (root / "labels.jsonl").write_text(
        "".join(json.dumps({"benchmark": b, "id": i, "kind": k}) + "\n" for b, i, k in labels)
    )
    return root


def _run(eval_dir: Path, db: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(ROOT / "bench" / "eval.py"), str(eval_dir), "--db", f"sqlite:///{db}", "--workers", "1"]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_eval_measures_what_it_can_read_and_names_the_rest(tmp_path: Path) -> None:
    eval_dir = _eval_set(tmp_path / "set")
    # a CSV benchmark whose ids are numbers in the labels (as JSON gives them): measured too
    (eval_dir / "benchmarks" / "nums.csv").write_text(f"id,question,answer\n7,{QUESTION},Hoi An\n")
    with (eval_dir / "labels.jsonl").open("a") as f:
        f.write(json.dumps({"benchmark": "nums", "id": 7, "kind": "verbatim"}) + "\n")
    done = _run(eval_dir, tmp_path / "a.db")
    # every table is printed, and the run says it measured less than it was given
    assert done.returncode == 1 and "not measured: stories" in done.stdout, done.stdout + done.stderr
    rows = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines() if line.startswith(("qa ", "nums "))}
    assert rows["qa"][0] == "1.000" and rows["qa"][8] == "0.000", done.stdout  # the copy found, the clean item clean
    assert rows["nums"][0] == "1.000", done.stdout
    assert "NOT READ" in done.stdout and "stories" in done.stdout.split("NOT READ")[-1]
    # a mappings file maps it, and it is measured
    (eval_dir / "mappings.json").write_text(json.dumps({"stories": {"question": "tale"}, "typo": {}}))
    done = _run(eval_dir, tmp_path / "b.db")
    assert done.returncode == 0 and "NOT READ" not in done.stdout, done.stdout + done.stderr
    assert any(line.startswith("stories ") for line in done.stdout.splitlines()), done.stdout
    assert "no benchmark named 'typo'" in done.stdout
    (eval_dir / "mappings.json").write_text(json.dumps({"stories": "tale"}))  # not an object of mappings
    done = _run(eval_dir, tmp_path / "c.db")
    assert done.returncode == 1 and "mappings.json: give" in done.stderr, done.stderr
