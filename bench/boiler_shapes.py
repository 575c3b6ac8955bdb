"""Six real benchmarks full of boilerplate (stock choices, templated stems, issue templates), copies of a tenth planted.

Usage: python bench/boiler_shapes.py --work DIR [--mb 100] [--extra-mb 40] [--seed 0] [--show-missed 4]

The shape most likely to give false positives on an unseen corpus: items whose text is common in real
corpora or built from a few templates. Shapes (PyPI wheels fetched with `pip download --no-deps` as
bench/real_benchmarks.py does; openai `evals==3.0.1.post1`'s registry and `inspect-evals==0.28.0`; none
named by real_benchmarks.py, new_shapes.py or twin_shapes.py):

- fcc_extra: the FCC Amateur Extra question pool (591 questions, four choices; stock choices "All of
  these choices are correct", numbers and units as choices: "14.070 MHz").
- tort_law: 340 US tort-law bar-exam questions (long fact patterns in standard legal phrasing: "In an
  action by the pedestrian against the driver, will the pedestrian prevail?", choices "Yes, because ..."
  / "No, because ...").
- cert_mc: certification multiple choice with stock choices: CISSP study questions (143), Utah real-estate
  licence questions (120), ATPL aviation questions (15).
- malware_mc: CyberSecEval 4 malware analysis (609 items, 461 distinct question stems: "Based on the
  Hybrid Analysis report, which of the following ...? (Select all that apply)", stock options "None of the
  above"); one item per question and options.
- swe_issues: SWE-Lancer's GitHub issues (366 distinct; Expensify's issue template: "Version Number:",
  "Reproducible in staging?:", "## Action Performed:", "## Expected Result:", the platforms checklist and
  the Upwork block), title and body as the question, no answer.
- math_stems: maths problems with stock stems: AIME ("... m/n, where m and n are relatively prime
  positive integers. Find m + n"), Project Euler (15), "Find derivative of function ... with respect to
  x." (31), "solve the linear equation Ax = b for the vector x where A = ..." (200) and 300 of the
  2000 recurrences "T(n) = aT(n/b) + O(n^k)".

Background: bench/real_benchmarks.background (--mb MB of this machine's docs, man pages, licences, the
Python standard library and the venv's site-packages as far as its share goes) plus --extra-mb MB of
tutorial and Q&A-like text: GNU info manuals, Perl POD (perlfaq among them), every package README in the
venv's dist-info METADATA, HTML manuals under /usr outside /usr/share/doc, and the docstrings and docs of
the venv's packages from "n" on (numpy, scipy, sqlalchemy, pydantic, ray, rich, ...), which
real_benchmarks' share does not reach. Plants and labels as new_shapes.run_probe makes them
(real_benchmarks.choose_plants / plant / near_siblings). Index and scan with the CLI.

Prints the table (per benchmark and label "items:flagged/contaminated"), every false positive with its
reason, best evidence's excerpt, the planted item whose copy is in that document (if any) and the longest
run of the item's own words that document holds; the missed plants per kind with reasons, and a sample.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
import sys
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import new_shapes as ns  # noqa: E402
import real_benchmarks as rb  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FLAG = rb.FLAG
WORD = re.compile(r"\w+")
MALWARE = "inspect_evals/cyberseceval_4/malware_analysis/questions.json"
SWELANCER = "inspect_evals/swe_lancer/data/all_swelancer_tasks.csv"
MC = re.compile(
    r"(.*?)\n\s*A[.:)]\s*(.*?)\n\s*B[.:)]\s*(.*?)\n\s*C[.:)]\s*(.*?)\n\s*D[.:)]\s*(.*?)\s*(?:\nAnswer:)?\s*$", re.S
)
MC_INLINE = re.compile(r"(.*?)\s+A\)\s*(.*?)\s+B\)\s*(.*?)\s+C\)\s*(.*?)\s+D\)\s*(.*?)\s*$", re.S)


# --- benchmarks ----------------------------------------------------------------------------------


def words(text: str) -> list[str]:
    return WORD.findall(text.casefold())


def mc(rows: list[dict], name: str, start: int = 0) -> list[dict]:
    """Lettered four-choice questions ("A. ..", "A: ..", "A) .." on lines or inline); the ideal's letter
    picks the answer. Rows that do not parse are kept with their whole text as the question."""
    items, seen = [], set()
    for i, r in enumerate(rows):
        text = rb.user(r).strip()
        m = MC.match(text) or MC_INLINE.match(text)
        ideal = rb.ideal_text(r)
        if m:
            question, *choices = [x.strip() for x in m.groups()]
            letter = ideal.strip()[:1]
            answer = choices["ABCD".index(letter)] if letter in "ABCD" and letter else ideal
            item = {"id": f"{name}-{start + i}", "question": question, "choices": choices, "answer": answer}
        else:
            item = {"id": f"{name}-{start + i}", "question": text, "answer": ideal}
        key = (tuple(words(item["question"])), tuple(item.get("choices") or ()))
        if key not in seen:
            seen.add(key)
            items.append(item)
    return items


def malware_mc(inspect: zipfile.ZipFile) -> list[dict]:
    rows = json.loads(inspect.read(MALWARE))
    items, seen = [], set()
    for i, r in enumerate(rows):
        choices = [re.sub(r"^[A-Z][.)]\s*", "", o).strip() for o in r["options"]]
        key = (r["question"].strip(), tuple(choices))
        if key in seen:
            continue
        seen.add(key)
        correct = [choices[ord(c) - 65] for c in r["correct_options"] if 0 <= ord(c) - 65 < len(choices)]
        if correct:  # one row names no correct option
            item = {"id": f"malware_mc-{i}", "question": r["question"].strip(), "choices": choices}
            items.append(item | {"answer": correct[0]})
    return items


def swe_issues(inspect: zipfile.ZipFile) -> list[dict]:
    csv.field_size_limit(10**9)
    rows = list(csv.DictReader(io.StringIO(inspect.read(SWELANCER).decode())))
    items, seen = [], set()
    for i, r in enumerate(rows):
        body = r["description"].replace("\\n", "\n").strip()
        if not body or body in seen:
            continue
        seen.add(body)
        items.append({"id": f"swe_issues-{i}", "question": f"{r['title'].strip()}\n{body}", "answer": ""})
    return items


def benchmarks(evals: zipfile.ZipFile, inspect: zipfile.ZipFile, seed: int) -> dict[str, list[dict]]:
    rng = random.Random(90 + seed)
    rows = lambda path: rb.registry_rows(evals, path)  # noqa: E731
    recurrences = rb.plain(rows("recurrence-relation/samples.jsonl"), "math_stems", 4000)
    made = {
        "fcc_extra": mc(rows("fcc_amateur_extra/samples.jsonl"), "fcc_extra"),
        "tort_law": mc(rows("us_tort_law/samples.jsonl"), "tort_law"),
        "cert_mc": mc(rows("cissp-study-questions/samples.jsonl"), "cert_mc")
        + mc(rows("utah_real_estate/samples.jsonl"), "cert_mc", 1000)
        + mc(rows("atpl_exams/samples.jsonl"), "cert_mc", 2000),
        "malware_mc": malware_mc(inspect),
        "swe_issues": swe_issues(inspect),
        "math_stems": rb.plain(rows("aime_evaluation/samples.jsonl"), "math_stems")
        + rb.plain(rows("euler_problems/euler_problems.jsonl"), "math_stems", 1000)
        + rb.plain(rows("math-derivatives/questions.jsonl"), "math_stems", 2000)
        + rb.plain(rows("linear_equations/samples.jsonl"), "math_stems", 3000)
        + rb.sample(recurrences, 300, rng),
    }
    for name, items in made.items():
        ids = [it["id"] for it in items]
        assert len(ids) == len(set(ids)), name
    return made


def render(item: dict, with_answer: bool = True) -> str:
    """real_benchmarks.render with letters past D (malware_mc has up to 10 options); the same text for 4."""
    parts = [item["passage"]] if item.get("passage") else []
    parts.append(("Question: " if item.get("choices") else "Q: ") + item["question"])
    parts += [f"({'ABCDEFGHIJKL'[k]}) {c}" for k, c in enumerate(item.get("choices") or [])]
    if with_answer:
        parts.append(f"Answer: {item['answer']}")
    return "\n".join(parts)


# --- background: tutorial and Q&A-like text besides real_benchmarks' ---------------------------


def extra_background(mb: float) -> dict[str, list[dict]]:
    purelib = Path(rb.sysconfig.get_paths()["purelib"])
    first = ["scipy", "numpy", "sqlalchemy", "pydantic", "requests", "rich", "ray", "pygments", "pip"]
    late = first + sorted(
        p.name
        for p in purelib.iterdir()
        if p.is_dir() and p.name[:1] >= "n" and "." not in p.name and p.name not in first
    )
    sources: list = [  # name, root, extensions, skipped, share of mb (None: the late packages)
        ("info", "/usr/share/info", None, (), 0.15),
        ("pod", "/usr/share/perl", {".pod", ".pm"}, (), 0.1),
        ("readme", str(purelib), {""}, (), 0.15),  # dist-info METADATA (no extension)
        ("html", "/usr", {".html", ".htm"}, ("/share/doc", "/local", "/lib/python3"), 0.1),
    ] + [(f"late-{p}", str(purelib / p), {".py", ".md", ".rst", ".txt"}, ("__pycache__", "/tests"), None) for p in late]
    shards: dict[str, list[dict]] = {}
    late_budget = 0.5 * mb * 1e6
    for name, root, exts, skip, share in sources:
        size, docs = 0, []
        cap = share * mb * 1e6 if share is not None else min(late_budget, 0.15 * mb * 1e6)
        walk = rb.walk(root, name, exts, skip)
        for doc in walk:
            if name == "readme" and not doc["id"].split("#")[0].endswith("METADATA"):
                continue
            docs.append(doc)
            size += len(doc["text"])
            if size > cap:
                break
        if share is None:
            late_budget -= size
        for k in range(0, len(docs), rb.SHARD):
            shards[f"x{name}-{k // rb.SHARD}"] = docs[k : k + rb.SHARD]
        if docs:
            print(f"background {name}: {len(docs)} documents, {size / 1e6:.1f} MB", file=sys.stderr)
        if late_budget <= 0 and share is None:
            break
    return shards


# --- what a false positive's document holds --------------------------------------------------------


def text_of(item: dict) -> str:
    parts = [item.get("passage", ""), item["question"], *(item.get("choices") or [])]
    return " ".join(p for p in parts if p)


def longest_run(item_words: list[str], doc_words: list[str]) -> tuple[int, str]:
    """The longest run of the item's words that the document holds word for word."""
    pos: dict[str, list[int]] = {}
    for j, w in enumerate(doc_words):
        pos.setdefault(w, []).append(j)
    best, at = 0, 0
    prev: dict[int, int] = {}
    for i, w in enumerate(item_words):
        cur = {}
        for j in pos.get(w, ()):
            cur[j] = prev.get(j - 1, 0) + 1
            if cur[j] > best:
                best, at = cur[j], i - cur[j] + 1
        prev = cur
    return best, " ".join(item_words[at : at + best])


def main() -> None:
    args = ns.probe_args(extra_mb=40)
    work = args.work.resolve()
    t0 = time.perf_counter()
    evals, inspect = rb.download(work / "downloads")
    benches = benchmarks(evals, inspect, args.seed)
    scans = {name: [{k: v for k, v in it.items() if k != "group"} for it in items] for name, items in benches.items()}
    base = rb.background
    rb.render = render
    rb.background = lambda mb: dict(sorted((base(mb) | extra_background(args.extra_mb)).items()))
    results, labels, shards = ns.run_probe(
        work, benches, scans, random.Random(9090 + args.seed), args.mb, "boiler_shapes"
    )
    rb.background = base
    rb.table(results, labels)

    items_by_id = {it["id"]: it for items in benches.values() for it in items}
    planted_in = {lab["doc"]: lab["id"] for lab in labels.values() if "doc" in lab}
    docs = {d["id"]: d["text"] for ds in shards.values() for d in ds}
    fps = ns.false_positives(results, labels)
    for name, r in fps:
        it = items_by_id[r["item_id"]]
        ev = r["evidence"][0] if r["evidence"] else {}
        iw = words(text_of(it))
        print(f"[{name}] {r['item_id']} {labels[r['item_id']]['kind']} {r['status']} score={r.get('score')}")
        flat = re.sub(r"\s+", " ", text_of(it))
        print(f"    item ({len(iw)} words): {flat[:240]!r} -> {it['answer'][:60]!r}")
        print(f"    reason: {r['reason']}")
        print(f"    evidence: {ev.get('document_id', '-')}: {ns.snippet(ev)!r}" if ev else "    evidence: -")
        doc_id = ev.get("document_id")
        if doc_id in docs:
            n, run = longest_run(iw, words(docs[doc_id]))
            twin = planted_in.get(doc_id)
            if twin:
                print(f"    document holds {twin}'s {labels[twin]['kind']} copy: {labels[twin]['planted'][:160]!r}")
            print(f"    longest run of the item's words in that document: {n} of {len(iw)}: {run[:200]!r}")
    rb.missed(results, labels, args.show_missed)
    print(f"\nall done in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
