"""Calibrate the detection thresholds from the null: items against text they are not in.

Usage: python bench/calibrate.py [--eval-dir DIR] [--mb 60] [--plant 0.05] [--db URL] [--out FILE]

What it builds (no labels of any evaluation set are read):
  * a corpus of real text from this machine (Python sources, C headers, /usr/share/doc), split
    by file into two pools: pool A is the corpus, pool B only ever feeds benchmark items, so
    no item is in the corpus by construction;
  * benchmarks: every file in DIR/benchmarks (items only, if --eval-dir is given) and six
    synthetic ones built from pool B, one per shape of benchmark that is hard for a detector:
      - templated: "On <month> <year>, the following claim was made: <sentence> Q: Was this
        claim true or false?" (a frame around a one-sentence claim);
      - passage: one passage, three questions each (reading comprehension);
      - schema: one long code block, eight questions each, a line of it the answer (a shared
        schema, as text-to-SQL benchmarks have);
      - short_qa: questions of 5-9 words with a one-word answer (open-domain QA);
      - long: paragraphs of 150-400 words with their first sentence as the answer (news
        summaries);
      - word_problems: arithmetic problems from a handful of frames with names, objects and
        numbers changed (maths benchmarks: items that differ in a few tokens);
  * plants: a share of each benchmark's items (--plant) is rendered (question, lettered choices,
    answer, in one of several layouts) and put into corpus documents verbatim, with light edits
    (8% of words replaced), heavy edits (30%), or only the first half. Their siblings (items
    sharing a template or passage with a planted item) are the hard part of the null.

It scans every benchmark once, keeps every item's aligned documents, and judges them again under
each (suspicious_coverage, min_bits) pair: per benchmark it prints, for the items that were NOT
planted and share no 20-word run with a planted item (the null), the share each pair flags, and
for the planted ones the share found per plant kind. A threshold is chosen where the null rate is
at most 0.1% on every benchmark; the README explains the defaults with this output.
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

from contam.app.core import scoring  # noqa: E402
from contam.app.core.config import SignatureConfig, Thresholds  # noqa: E402
from contam.app.core.text import tokenize  # noqa: E402
from contam.app.core.types import BenchmarkItem  # noqa: E402
from contam.app.readers.benchmark import read_benchmark  # noqa: E402
from contam.app.services import scanning  # noqa: E402
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


NAMES = ["Ana", "Ben", "Chloe", "Dev", "Emma", "Farid", "Grace", "Hugo", "Iris", "Jonas", "Kemal", "Lena", "Mateo"]
OBJECTS = ["apples", "marbles", "stamps", "pencils", "shells", "coins", "books", "stickers", "cards", "beads"]
PROBLEMS = [
    "{a} has {x} {o}. {b} gives {a} {y} more {o}. How many {o} does {a} have now?",
    "{a} buys {x} packs of {o} with {y} {o} in each pack. How many {o} does {a} buy?",
    "{a} had {x} {o} and lost {y} of them on the way home. How many {o} are left?",
    "{a} and {b} share {x} {o} equally. How many {o} does each of them get?",
    "{a} collects {x} {o} every day for {y} days. How many {o} has {a} collected?",
    "A box holds {x} {o}. {a} fills {y} boxes and gives one box to {b}. How many {o} does {a} keep?",
]


def synthetic(pool_b: list[str], rng: random.Random) -> dict[str, list[BenchmarkItem]]:
    """Six benchmarks from disjoint parts of pool B (no text of one is in another); see the module doc."""
    part = [pool_b[k::6] for k in range(6)]
    claims = sentences(part[0], rng, 600)
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
    paras = [p for t in part[1] for p in re.split(r"\n\s*\n", t) if 60 <= len(p.split()) <= 200]
    rng.shuffle(paras)
    qs = sentences(part[1], rng, 900, 6, 16)
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
    blocks = [b for t in part[2] for b in re.split(r"\n\s*\n", t) if 40 <= len(b.split()) <= 250 and "\n" in b]
    rng.shuffle(blocks)
    asks = sentences(part[2], rng, 800, 6, 14)
    schema = []
    for k, block in enumerate(blocks[:100]):
        lines = [ln for ln in block.splitlines() if len(ln.split()) >= 3]
        for j in range(8):
            if not asks or not lines:
                break
            schema.append(
                BenchmarkItem(
                    f"schema/{k}/{j}",
                    len(schema),
                    question=f"Schema:\n{block}\nQuestion: {asks.pop().rstrip('.')}?",
                    answer=rng.choice(lines).strip(),
                )
            )
    short_qa = []
    for i, q in enumerate(sentences(part[3], rng, 700, 5, 9)):
        words = q.rstrip(".!?").split()
        short_qa.append(BenchmarkItem(f"qa/{i}", i, question=" ".join(words[:-1]) + "?", answer=words[-1]))
    paras = [" ".join(p.split()) for t in part[4] for p in re.split(r"\n\s*\n", t) if 150 <= len(p.split()) <= 400]
    rng.shuffle(paras)
    long = [
        BenchmarkItem(f"long/{i}", i, question=p, answer=re.split(r"(?<=[.!?])\s+", p)[0])
        for i, p in enumerate(paras[:300])
    ]
    problems = []
    for i in range(600):
        a, b = rng.sample(NAMES, 2)
        x, y = rng.randint(2, 60), rng.randint(2, 12)
        frame = rng.choice(PROBLEMS)
        problems.append(
            BenchmarkItem(
                f"problem/{i}", i, question=frame.format(a=a, b=b, x=x, y=y, o=rng.choice(OBJECTS)), answer=str(x + y)
            )
        )
    return {
        "synthetic_templated": templated,
        "synthetic_passage": passage,
        "synthetic_schema": schema,
        "synthetic_short_qa": short_qa,
        "synthetic_long": long,
        "synthetic_word_problems": problems,
    }


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
    """The n-token runs of `text` as the scorer tokenises it (identifiers split at "_", markup
    dropped): a pool-B paragraph sharing no 6-run with pool A this way shares none the scorer
    could find (a regex's \\w+ kept snake_case names whole and let such runs through)."""
    words = tokenize(text)
    return {hash(tuple(words[i : i + n])) for i in range(len(words) - n + 1)}


def siblings(items: list[BenchmarkItem], planted: set[str]) -> set[str]:
    """Items that share a 20-word run with a planted item (a long frame or a passage)."""
    grams = [gram_set(f"{it.question} {' '.join(it.choices)}") for it in items]
    seen: set[int] = set().union(*(g for it, g in zip(items, grams, strict=True) if it.item_id in planted))
    return {it.item_id for it, g in zip(items, grams, strict=True) if it.item_id not in planted and g & seen}


class Kept:
    """Every scanned item's aligned documents, kept by wrapping the scanner's judge (same process,
    workers=1), so each can be judged again under other thresholds (a verdict depends on the
    document match and the thresholds only)."""

    def __init__(self) -> None:
        self.matches: dict[str, tuple[Any, list[Any], bool, int]] = {}
        # the scanner's status of each item, and whether the item alone decided it (too short, a
        # common phrase, a widespread copy: scoring.assess), whatever its documents say
        self.items: dict[str, tuple[str, bool]] = {}
        self._judge = scanning.judge

        def judge(
            i: int, prepared: Any, stats: Any, shared: Any, docs: Any, n: int, th: Thresholds, cache: Any = None
        ) -> Any:
            score, ranked = self._judge(i, prepared, stats, shared, docs, n, th, cache)
            p = prepared[i]
            self.matches[p.item.item_id] = (p, [m for m, _status in ranked], shared.stem_answer_tells(p), n)
            s = stats[i]
            fixed = scoring._judged(p, s, n, th) is not None or scoring._widespread(p, s, n, th)
            self.items[p.item.item_id] = (str(score.status), fixed)
            return score, ranked

        scanning.judge = judge  # type: ignore[assignment]

    def measures(self, item_id: str) -> dict[str, Any]:
        """The scanner's status of the item, whether the item alone decided it, and what each
        aligned document measured of it with the verdict of the defaults."""
        status, fixed = self.items.get(item_id, ("clean", False))
        if item_id not in self.matches:
            return {"item_id": item_id, "status": status, "fixed": fixed, "docs": []}
        p, ranked, tells, n = self.matches[item_id]
        docs = [
            {
                "own_total": m.own_total,
                "own_matched": m.own_matched,
                "own_coverage": round(m.own_coverage, 4),
                "coverage": round(m.coverage, 4),
                "own_bits": round(m.own_bits, 2),
                "own_bits_total": round(m.own_bits_total, 2),
                "matched_bits": round(m.matched_bits, 2),
                "longest_own": m.longest_own,
                "rare_run": m.rare_run,
                "opening": m.opening,
                "pieces": len(m.blocks),
                "status": str(verdict),
            }
            for m, verdict, _reason in scoring.rank(p, ranked, n, Thresholds(), tells)
        ]
        return {"item_id": item_id, "status": status, "fixed": fixed, "tokens": p.n_tokens, "docs": docs}

    def flagged(self, item_id: str, th: Thresholds) -> bool:
        p, ranked, tells, n = self.matches[item_id]
        judged = scoring.rank(p, ranked, n, th, tells)
        return bool(judged) and str(judged[0][1]) in ("suspicious", "contaminated")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--eval-dir", type=Path, default=None)
    ap.add_argument("--mb", type=float, default=60)
    ap.add_argument("--plant", type=float, default=0.05)
    ap.add_argument("--db", default=None)
    ap.add_argument("--out", type=Path, default=None, help="per-item results as JSON lines")
    ap.add_argument(
        "--matches-out",
        type=Path,
        default=None,
        help="every aligned document's measures, per item, as JSON lines (to study a rule on the null)",
    )
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
    kept = Kept()
    scanner = Scanner(engine, thresholds=Thresholds(), workers=1)
    out = args.out.open("w") if args.out else None
    matches_out = args.matches_out.open("w") if args.matches_out else None
    rows: dict[str, dict[str, Any]] = {}
    for bench, items in benchmarks.items():
        kept.matches.clear()
        kept.items.clear()
        res = scanner.scan(items)
        sibling = siblings(items, {i for b, i in kinds if b == bench})
        # an item identical to a planted one (benchmarks hold duplicates) is in the corpus too
        texts = {(it.question, it.choices, it.answer) for it in items if (bench, it.item_id) in kinds}
        same = {
            it.item_id
            for it in items
            if (bench, it.item_id) not in kinds and (it.question, it.choices, it.answer) in texts
        }
        sibling -= same
        null = [
            r
            for r in res
            if (bench, r.item.item_id) not in kinds and r.item.item_id not in sibling and r.item.item_id not in same
        ]
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
                            "text": r.item.display_text()[:200] + " ... " + r.item.display_text()[-300:],
                            "reason": r.score.reason,
                            "evidence": [(e.document_id, e.excerpt[:600]) for e in r.evidence[:1]],
                            "status": str(r.score.status),
                            "ranking": r.score.doc_ranking,
                        }
                    )
                    + "\n"
                )
        if matches_out:
            for r in res:
                k = kinds.get((bench, r.item.item_id)) or ("sibling" if r.item.item_id in sibling else None)
                k = k or ("same" if r.item.item_id in same else "null")
                matches_out.write(json.dumps({"benchmark": bench, "kind": k, **kept.measures(r.item.item_id)}) + "\n")
        grid = {}
        for cov in COVERAGES:
            for bits in BITS:
                th = Thresholds(suspicious_coverage=cov, min_bits=bits)
                grid[cov, bits] = (
                    sum(kept.flagged(r.item.item_id, th) for r in null),
                    {k: sum(kept.flagged(r.item.item_id, th) for r in planted.get(k, [])) for k in KINDS},
                )
        rows[bench] = {
            "null": null,
            "planted": planted,
            "n": len(items),
            "siblings": [r for r in res if r.item.item_id in sibling],
            "grid": grid,
        }
    print(
        "\nnull items (neither planted nor sharing 20 words with a planted item) flagged, per "
        "(suspicious_coverage, min_bits), per benchmark; planted copies found at each coverage with min_bits 16"
    )
    for cov in COVERAGES:
        print(f"\nsuspicious_coverage = {cov}")
        print(
            f"{'benchmark':28s} {'null n':>7s} "
            + " ".join(f"bits>={b:<5.0f}" for b in BITS)
            + "   found at bits>=16: "
            + " ".join(f"{k[:10]:>10s}" for k in KINDS)
        )
        for bench, row in rows.items():
            rates = [row["grid"][cov, b][0] / max(1, len(row["null"])) for b in BITS]
            found = [f"{row['grid'][cov, 16.0][1][k]}/{len(row['planted'].get(k, []))}" for k in KINDS]
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
    for f in (out, matches_out):
        if f:
            f.close()
    engine.dispose()


if __name__ == "__main__":
    main()
