"""Calibrate the detection thresholds from the null: items against text they are not in.

Usage: python bench/calibrate.py [--eval-dir DIR] [--mb 60] [--plant 0.05] [--db URL] [--out FILE]

What it builds (no labels of any evaluation set are read):
  * a corpus of real text from this machine (Python sources, C headers, /usr/share/doc), split
    by file into two pools: pool A is the corpus, pool B only ever feeds benchmark items, so
    no item is in the corpus by construction;
  * benchmarks: every file in DIR/benchmarks (items only, if --eval-dir is given) and two
    synthetic ones built from pool B: a templated claim benchmark ("On <month> <year>, the
    following claim was made: <sentence> Q: Was this claim true or false?") and a
    shared-passage benchmark (one passage, three questions each);
  * plants: a share of each benchmark's items (--plant) is rendered (question, lettered choices,
    answer, in one of several layouts) and put into corpus documents verbatim, with light edits
    (8% of words replaced), heavy edits (30%), or only the first half. Their siblings (items
    sharing a template or passage with a planted item) are the hard part of the null.

It scans every benchmark and prints, per benchmark, for the items that were NOT planted (the
null), the share that each (suspicious_coverage, min_bits) pair would flag as suspicious, and
for the planted ones the share found, per plant kind. A threshold is chosen where the null
rate is at most 0.1% on every benchmark; the README explains the defaults with this output.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
import sysconfig
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contam.app.core.config import SignatureConfig, Thresholds  # noqa: E402
from contam.app.core.types import BenchmarkItem  # noqa: E402
from contam.app.readers.benchmark import read_benchmark  # noqa: E402
from contam.app.services.scanning import Scanner  # noqa: E402
from contam.app.store.db import make_engine, upgrade  # noqa: E402
from contam.indexer.job import IndexJob, IndexOptions  # noqa: E402

SUFFIXES = {".py", ".txt", ".md", ".rst", ".h", ".html"}
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
COVERAGES = [0.25, 0.3, 0.35, 0.4, 0.45, 0.5]
BITS = [8.0, 12.0, 16.0, 20.0, 24.0]
KINDS = ["verbatim", "light_edit", "heavy_edit", "partial"]


def machine_text(mb: float) -> list[tuple[str, str]]:
    """(path, text) of text files on this machine, about `mb` MB, in a fixed order."""
    roots = [
        Path(sysconfig.get_paths()["stdlib"]),
        Path("/usr/include"),
        Path("/usr/share/doc"),
        Path(sysconfig.get_paths()["purelib"]),
    ]
    out, total, seen = [], 0, set()
    for root in roots:
        for p in sorted(root.rglob("*")) if root.exists() else []:
            if total >= mb * 1e6:
                return out
            if p.suffix not in SUFFIXES or not p.is_file() or "eval" in p.parts or p.stat().st_size > 1_000_000:
                continue
            try:
                text = p.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            if len(text) < 300 or text in seen:
                continue
            seen.add(text)
            out.append((str(p), text))
            total += len(text)
    return out


def sentences(texts: list[str], rng: random.Random, n: int, lo: int = 8, hi: int = 30) -> list[str]:
    pool = []
    for t in texts:
        for s in re.split(r"(?<=[.!?])\s+", t):
            words = s.split()
            if lo <= len(words) <= hi and sum(w.isalpha() for w in words) >= 0.8 * len(words):
                pool.append(" ".join(words))
    rng.shuffle(pool)
    return list(dict.fromkeys(pool))[:n]


def synthetic(pool_b: list[str], rng: random.Random) -> dict[str, list[BenchmarkItem]]:
    """Two benchmarks from disjoint halves of pool B (no text of one is in the other)."""
    half = len(pool_b) // 2
    claims = sentences(pool_b[:half], rng, 600)
    pool_b = pool_b[half:]
    templated = [
        BenchmarkItem(
            f"claim/{i}",
            i,
            question=f"On {rng.choice(MONTHS)} {rng.randrange(2010, 2024)}, "
            f"the following claim was made: {c} Q: Was this claim true or false?",
            choices=("True", "False"),
            answer=rng.choice(["True", "False"]),
        )
        for i, c in enumerate(claims)
    ]
    paras = [p for t in pool_b for p in re.split(r"\n\s*\n", t) if 60 <= len(p.split()) <= 200]
    rng.shuffle(paras)
    qs = sentences(pool_b, rng, 900, 6, 16)
    passage = []
    for k, para in enumerate(paras[:300]):
        for j in range(3):
            if not qs:
                break
            q = qs.pop()
            passage.append(
                BenchmarkItem(
                    f"passage/{k}/{j}",
                    len(passage),
                    question=f"Passage: {' '.join(para.split())}\nQuestion: {q.rstrip('.')}?",
                    answer=q.split()[-1].strip("."),
                )
            )
    return {"synthetic_templated": templated, "synthetic_passage": passage}


def render(item: BenchmarkItem, rng: random.Random) -> str:
    letters = "ABCDEFGHIJ"
    choices = "\n".join(f"{letters[i]}. {c}" for i, c in enumerate(item.choices[:10]))
    layouts = [
        f"Question: {item.question}\n{choices}\nAnswer: {item.answer}",
        f"Q: {item.question}\nA: {item.answer}",
        f"{item.question}\n{choices}\nThe correct answer is {item.answer}.",
        f'<div class="post"><p>{item.question}</p><p>{choices}</p><p>Answer: {item.answer}</p></div>',
    ]
    return rng.choice(layouts).strip()


def edit(text: str, rate: float, vocab: list[str], rng: random.Random) -> str:
    words = text.split()
    out = []
    for w in words:
        r = rng.random()
        if r < rate / 3:
            continue
        if r < 2 * rate / 3:
            out.append(rng.choice(vocab))
        elif r < rate:
            out += [w, rng.choice(vocab)]
        else:
            out.append(w)
    return " ".join(out)


def plant(
    benchmarks: dict[str, list[BenchmarkItem]], docs: list[dict[str, Any]], share: float, rng: random.Random
) -> dict[tuple[str, str], str]:
    """Put rendered items into documents; returns (benchmark, item id) -> plant kind."""
    vocab = [w for d in docs[:200] for w in d["text"].split()[:200] if w.isalpha()]
    kinds: dict[tuple[str, str], str] = {}
    for bench, items in benchmarks.items():
        for it in rng.sample(items, max(4, int(len(items) * share))):
            kind = KINDS[len(kinds) % len(KINDS)]
            text = render(it, rng)
            if kind == "light_edit":
                text = edit(text, 0.08, vocab, rng)
            elif kind == "heavy_edit":
                text = edit(text, 0.30, vocab, rng)
            elif kind == "partial":
                text = text[: len(text) // 2]
            doc = rng.choice(docs)
            cut = rng.randrange(0, max(1, len(doc["text"])))
            doc["text"] = doc["text"][:cut] + "\n\n" + text + "\n\n" + doc["text"][cut:]
            kinds[(bench, it.item_id)] = kind
    return kinds


def gram_set(text: str, n: int = 20) -> set[int]:
    words = re.findall(r"\w+", text.lower())
    return {hash(tuple(words[i : i + n])) for i in range(len(words) - n + 1)}


def siblings(items: list[BenchmarkItem], planted: set[str]) -> set[str]:
    """Items that share a 20-word run with a planted item (a long frame or a passage)."""
    grams = [gram_set(f"{it.question} {' '.join(it.choices)}") for it in items]
    seen: set[int] = set().union(*(g for it, g in zip(items, grams, strict=True) if it.item_id in planted))
    return {it.item_id for it, g in zip(items, grams, strict=True) if it.item_id not in planted and g & seen}


def flagged(ranking: list[tuple[int, float, float, float, float, int]], cov: float, bits: float, run: int = 6) -> bool:
    return any(own >= cov and own_bits >= bits and longest >= run for _d, own, _c, own_bits, _m, longest in ranking)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--eval-dir", type=Path, default=None)
    ap.add_argument("--mb", type=float, default=60)
    ap.add_argument("--plant", type=float, default=0.05)
    ap.add_argument("--db", default=None)
    ap.add_argument("--out", type=Path, default=None, help="per-item results as JSON lines")
    args = ap.parse_args()
    rng = random.Random(7)
    files = machine_text(args.mb * 1.5)
    pool_a = [(p, t) for k, (p, t) in enumerate(files) if k % 3]
    pool_b = [t for k, (_p, t) in enumerate(files) if not k % 3]
    in_a = set().union(*(gram_set(t, 6) for _p, t in pool_a))
    pool_b = ["\n\n".join(p for p in re.split(r"\n\s*\n", t) if not gram_set(p, 6) & in_a) for t in pool_b]
    benchmarks = synthetic(pool_b, rng)
    if args.eval_dir:
        for f in sorted((args.eval_dir / "benchmarks").glob("*.jsonl")):
            benchmarks[f.stem] = read_benchmark(f.read_bytes(), f.name)[0]
    docs = [{"id": p, "text": t} for p, t in pool_a]
    kinds = plant(benchmarks, docs, args.plant, rng)
    tmp = tempfile.TemporaryDirectory()
    corpus = Path(tmp.name) / "null.jsonl.gz"
    # mtime=0: the same corpus gives the same bytes, so a rerun with --db finds the file indexed
    # (a new gzip timestamp made it a new file, and each rerun added the corpus again)
    with open(corpus, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0) as gz:
        for d in docs:
            gz.write((json.dumps(d) + "\n").encode())
    url = args.db or f"sqlite:///{tmp.name}/calibrate.db"
    upgrade(url)
    engine = make_engine(url)
    t0 = time.perf_counter()
    with IndexJob(engine, "null", SignatureConfig(), IndexOptions()) as job:
        summary = job.run([corpus]).as_dict()
    print(
        f"corpus: {summary['documents']} documents, {summary['text_mb']} MB, indexed in "
        f"{time.perf_counter() - t0:.0f} s; {len(kinds)} items planted into it"
    )
    scanner = Scanner(engine, thresholds=Thresholds())
    out = args.out.open("w") if args.out else None
    print(
        "\nnull items (neither planted nor sharing 20 words with a planted item) flagged as suspicious, per "
        "(suspicious_coverage, min_bits), per benchmark"
    )
    rows: dict[str, dict[str, Any]] = {}
    for bench, items in benchmarks.items():
        res = scanner.scan(items)
        sibling = siblings(items, {i for b, i in kinds if b == bench})
        null = [r for r in res if (bench, r.item.item_id) not in kinds and r.item.item_id not in sibling]
        planted = defaultdict(list)
        for r in res:
            k = kinds.get((bench, r.item.item_id))
            if k:
                planted[k].append(r)
            k = k or ("sibling" if r.item.item_id in sibling else None)
            if out:
                out.write(
                    json.dumps(
                        {
                            "benchmark": bench,
                            "item_id": r.item.item_id,
                            "kind": k or "null",
                            "text": r.item.display_text()[:300],
                            "reason": r.score.reason,
                            "evidence": [(e.document_id, e.excerpt[:600]) for e in r.evidence[:1]],
                            "status": str(r.score.status),
                            "ranking": r.score.doc_ranking,
                        }
                    )
                    + "\n"
                )
        rows[bench] = {
            "null": null,
            "planted": planted,
            "n": len(items),
            "siblings": [r for r in res if r.item.item_id in sibling],
        }
    for cov in COVERAGES:
        print(f"\nsuspicious_coverage = {cov}")
        print(
            f"{'benchmark':28s} {'null n':>7s} "
            + " ".join(f"bits>={b:<5.0f}" for b in BITS)
            + "   found at bits>=16: "
            + " ".join(f"{k[:10]:>10s}" for k in KINDS)
        )
        for bench, row in rows.items():
            rates = [
                sum(flagged(r.score.doc_ranking, cov, b) for r in row["null"]) / max(1, len(row["null"])) for b in BITS
            ]
            found = []
            for k in KINDS:
                rs = row["planted"].get(k, [])
                found.append(f"{sum(flagged(r.score.doc_ranking, cov, 16.0) for r in rs)}/{len(rs)}")
            print(
                f"{bench:28s} {len(row['null']):7d} "
                + " ".join(f"{x:10.4f}" for x in rates)
                + "   "
                + " ".join(f"{f:>10s}" for f in found)
            )
    print("\nwith the default thresholds, flagged / items:")
    for b, row in rows.items():

        def count(rs: list[Any], statuses: tuple[str, ...] = ("suspicious", "contaminated")) -> str:
            return f"{sum(str(r.score.status) in statuses for r in rs)}/{len(rs)}"

        print(
            f"  {b:28s} null {count(row['null']):>10s}   siblings {count(row['siblings']):>8s} (contaminated "
            f"{count(row['siblings'], ('contaminated',))})   planted: "
            + " ".join(f"{k}={count(row['planted'].get(k, []))}" for k in KINDS)
        )
    if out:
        out.close()
    engine.dispose()


if __name__ == "__main__":
    main()
