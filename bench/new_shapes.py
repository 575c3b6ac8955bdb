"""Six real benchmarks of shapes real_benchmarks.py has not tried, copies of a tenth of their items planted.

Usage: python bench/new_shapes.py --work DIR [--mb 100] [--seed 0] [--show-missed 4]

Shapes (all from PyPI wheels, fetched with `pip download --no-deps` as bench/real_benchmarks.py does:
openai `evals==3.0.1.post1`, whose registry holds the data, and `inspect-evals==0.28.0`):

- sales_chat: the registry's `qa` set, a needle-in-a-haystack chat: one sales-call transcript (customer
  and sales rep, ~2,900 words, 75 turns) with "French fries is my favorite dish." put in one place or
  another (or not), asked "Does the customer mention their favorite dish?"; written as a chat, a
  `messages` list of {role, content} (the question a system message, the customer `user`, the rep
  `assistant`) with a separate `answer`. 100 distinct items (the file's 133 rows hold 33 exact repeats, left out),
  all one transcript: every unplanted item is a sibling.
- nl2bash: AgentBench OS (inspect-evals), a one-sentence shell task and its example solution, a shell
  one-liner (`grep "Alice | Sell" /home/agent/stock.log | wc -l`), written in MBPP's layout (`text`,
  `code`): code generation from a description, the code the answer.
- heart_disease: 918 structured patient records ("Age: 40 years, Sex: Male, Chest pain type: ...,
  Resting blood pressure: 140 mm Hg, ..."), label 0/1: one frame for every item, only values differ
  (table-row / structured-data QA).
- uk_cloze: Ukrainian GEC fill-in-the-blank (ukraine_gec, 18 files): a sentence of Ukrainian prose
  with a blank `_______`, two choices, one a calque; 1000 sampled (cloze from book text, Cyrillic).
- translation: translation pairs, source sentence and reference: Belarusian round-trip
  (belarusian_russian_translation, reference often the source itself), Chinese -> English
  (chinese_hard_translations) and Urdu poetry -> English (iqbal-poetry-translation).
- finance_calc: 96 numeric word problems from a few frames that differ only in their numbers
  ("In the beginning of 2023 I had $67. Assume I got a 7% interest rate ..."), answer "[2030]".

Background: this machine's text (bench/real_benchmarks.background, --mb MB: /usr/share/doc, English
man pages, licences, the Python standard library and the site-packages of the interpreter running
this). Plants: real_benchmarks.choose_plants / plant (verbatim, light_edit, heavy_edit, question_only,
partial; a tenth of each benchmark's items), then near_siblings. A chat's copy is its turns' text one
per line (no speaker names). Index and scan with the CLI (`.venv/bin/contam`).

Prints per benchmark and label "items:flagged/contaminated", the clean items' flagged share and the
too_short count; then every false positive (clean or sibling item flagged) with its reason and its
best evidence's excerpt; then the missed plants per benchmark and kind with reasons, and a sample of
them (--show-missed per benchmark) with the planted text's start.

First run (--mb 100, seed 0, 102 MB, 23 s in all): clean items flagged 1 of 1,709 (heart_disease-639,
`suspicious` by the rule for a passage found alone: a 20-token stretch of frame and values that five
records share, on a page holding another record's copy), one sibling the same way (heart_disease-71);
verbatim copies found 48 of 49 (the miss a too_short cloze). The qa file's 33 exact repeats, kept in a
first try, were "contaminated" by their twins' copies, as identical items are one item by design.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import real_benchmarks as rb  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CLI = ROOT / ".venv" / "bin" / "contam"
AGENTBENCH = "inspect_evals/agent_bench/data/agent_bench_os_test.json"
FLAG = rb.FLAG


# --- benchmarks ----------------------------------------------------------------------------------


def sales_chat(rows: list[dict]) -> list[dict]:
    """Transcripts "<instruction line>\\nJane\\n<turn>\\nJohn\\n<turn>..." as chats; `turns` keeps the roles."""
    items, seen = [], set()
    for i, r in enumerate(rows):
        text = r["input"][0]["content"]
        if text in seen:  # 33 of the 133 rows repeat another row exactly (same needle place)
            continue
        seen.add(text)
        head, body = text.split("\n", 1)
        m = re.search(r"customer named (\w+) and a sales rep named (\w+)", head)
        customer, rep = m.group(1), m.group(2)
        # a speaker line starts a new turn, its text the lines up to the next speaker line
        turns2, who = [], None
        for line in body.split("\n"):
            s = line.strip()
            if s in (customer, rep):
                who = "user" if s == customer else "assistant"
                turns2.append([who, ""])
                continue
            if s and turns2:
                turns2[-1][1] = (turns2[-1][1] + " " + s).strip()
        turns2 = [t for t in turns2 if t[1]]
        messages = [{"role": "system", "content": head.strip()}] + [{"role": w, "content": c} for w, c in turns2]
        question = "\n".join(m["content"] for m in messages)
        items.append(
            {"id": f"sales_chat-{i}", "question": question, "answer": rb.ideal_text(r), "messages": messages}
            | {"group": "one transcript"}
        )
    return items


def nl2bash(inspect: zipfile.ZipFile) -> list[dict]:
    rows = json.loads(inspect.read(AGENTBENCH))
    items, seen = [], set()
    for r in rows:
        code = (r.get("evaluation") or {}).get("example")
        code = code.get("code") if isinstance(code, dict) else code  # a string, or {"code": ...} ({"file"}: none)
        if not code or not r.get("description") or r["description"].strip() in seen:
            continue
        seen.add(r["description"].strip())
        items.append({"id": f"nl2bash-{r['id']}", "question": r["description"].strip(), "answer": code.strip()})
    return items


def uk_cloze(evals: zipfile.ZipFile, rng: random.Random) -> list[dict]:
    items, seen = [], set()
    paths = sorted(n for n in evals.namelist() if n.startswith(rb.REGISTRY + "ukraine_gec/") and n.endswith(".jsonl"))
    k = 0
    for path in paths:
        for r in rb.registry_rows(evals, path.removeprefix(rb.REGISTRY)):
            k += 1
            text = rb.user(r).strip()
            m = re.match(r"(.*?)\n\n1 - (.*?)\n2 - (.*?)$", text, re.S)
            if not m or m.group(1).strip() in seen:
                continue
            seen.add(m.group(1).strip())
            choices = [m.group(2).strip(), m.group(3).strip()]
            ideal = rb.ideal_text(r)
            answer = choices[int(ideal.strip()[0]) - 1] if ideal.strip()[:1] in "12" else ideal
            items.append({"id": f"uk_cloze-{k}", "question": m.group(1).strip(), "choices": choices, "answer": answer})
    return rb.sample(items, 1000, rng)


def benchmarks(evals: zipfile.ZipFile, inspect: zipfile.ZipFile, seed: int) -> dict[str, list[dict]]:
    rng = random.Random(70 + seed)
    translation = []
    for k, path in enumerate(
        (
            "belarusian_russian_translation/samples.jsonl",
            "chinese_hard_translations/samples.jsonl",
            "iqbal-poetry-translation/samples.jsonl",
        )
    ):
        translation += rb.plain(rb.registry_rows(evals, path), "translation", 1000 * k)
    made = {
        "sales_chat": sales_chat(rb.registry_rows(evals, "qa/q_and_a.jsonl")),
        "nl2bash": nl2bash(inspect),
        "heart_disease": rb.plain(rb.registry_rows(evals, "heart-disease/samples.jsonl"), "heart_disease"),
        "uk_cloze": uk_cloze(evals, rng),
        "translation": translation,
        "finance_calc": rb.plain(rb.registry_rows(evals, "finance_calc/samples.jsonl"), "finance_calc"),
    }
    for name, items in made.items():
        ids = [it["id"] for it in items]
        assert len(ids) == len(set(ids)), name
    return made


def scan_row(name: str, item: dict) -> dict:
    """The item as its benchmark distributes it."""
    if name == "sales_chat":
        return {"id": item["id"], "messages": item["messages"], "answer": item["answer"]}
    if name == "nl2bash":
        return {"task_id": item["id"], "text": item["question"], "code": item["answer"]}
    return {k: v for k, v in item.items() if k != "group"}


# --- run -----------------------------------------------------------------------------------------


def contam(*args: str) -> str:
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, check=True, cwd=ROOT).stdout


def snippet(ev: dict, width: int = 160) -> str:
    ex = ev.get("excerpt") or ""
    hl = ev.get("highlights") or []
    if hl:
        a, b = hl[0][0], hl[-1][1]
        ex = ex[max(0, a - 30) : min(len(ex), max(b, a + width))]
    return re.sub(r"\s+", " ", ex)[: width + 60]


def run_probe(
    work: Path,
    benches: dict[str, list[dict]],
    scans: dict[str, list[dict]],
    rng: random.Random,
    mb: float,
    db_name: str,
) -> tuple[dict[str, list[dict]], dict[str, dict], dict[str, list[dict]]]:
    """The probe's run under `work`: a background of `mb` MB of this machine's text with copies of
    a tenth of each benchmark planted (real_benchmarks' helpers, `rng` choosing), indexed anew
    into SQLite (`db_name`.db), and each of `scans` (name -> the rows of a benchmark file, in the
    order of benches[name], or of the benchmark it is another layout of) scanned with the CLI.
    Prints the timings. Returns (results per scan, each row's item_id the benchmark's id for the
    row at its place; labels; the corpus shards)."""
    t0 = time.perf_counter()
    for name, items in benches.items():
        print(f"benchmark {name}: {len(items)} items", file=sys.stderr)
    shards = rb.background(mb)
    plants, labels = rb.choose_plants(benches, rng)
    for items in benches.values():
        rb.near_siblings(items, labels)
    rb.plant(shards, plants, labels, rng)
    files = rb.write_corpus(work, shards)
    for name, rows in scans.items():
        rb.write_jsonl(work / "scan" / f"{name}.jsonl", rows)
    rb.write_jsonl(work / "labels.jsonl", list(labels.values()))
    db_path = work / f"{db_name}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    db = f"sqlite:///{db_path}"
    t1 = time.perf_counter()
    contam("db", "upgrade", "--db", db)
    s = json.loads(contam("index", "--corpus", "machine", "--db", db, "--progress", "none", *map(str, files)))
    t2 = time.perf_counter()
    results: dict[str, list[dict]] = {}
    for name in scans:
        out = contam("scan", str(work / "scan" / f"{name}.jsonl"), "--db", db, "--format", "json", "--progress", "none")
        (work / "out" / f"{name}.json").write_text(out)
        scanned = json.loads(out)["results"]
        items = benches.get(name) or benches[name.split("_")[0]]  # a layout of another benchmark
        for r, it in zip(scanned, items, strict=True):  # ids as the benchmark has them (a layout may rename the field)
            r["item_id"] = it["id"]
        results[name] = scanned
    t3 = time.perf_counter()
    print(
        f"corpus: {len(files)} files, {s['documents']} documents, {s['text_mb']:.1f} MB of text; "
        f"build {t1 - t0:.0f} s, index {t2 - t1:.0f} s, scans {t3 - t2:.0f} s\n"
    )
    return results, labels, shards


def probe_args(**extra: float) -> argparse.Namespace:
    """The probes' options: --work DIR, --mb (background), --seed, --show-missed, and `extra` floats
    (name: default, e.g. extra_mb=40 for --extra-mb)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--mb", type=float, default=100)
    for name, default in extra.items():
        ap.add_argument(f"--{name.replace('_', '-')}", type=float, default=default)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show-missed", type=int, default=4)
    return ap.parse_args()


def false_positives(results: dict[str, list[dict]], labels: dict[str, dict]) -> list[tuple[str, dict]]:
    """(benchmark, result) of every clean or sibling item flagged, printed under a heading."""
    fps = [
        (name, r) for name, rows in results.items() for r in rows
        if labels[r["item_id"]]["kind"] in ("clean", "sibling") and r["status"] in FLAG
    ]  # fmt: skip
    print(f"\n=== FALSE POSITIVES (clean or sibling items flagged): {len(fps)}")
    return fps


def main() -> None:
    args = probe_args()
    work = args.work.resolve()
    evals, inspect = rb.download(work / "downloads")
    benches = benchmarks(evals, inspect, args.seed)
    scans = {name: [scan_row(name, it) for it in items] for name, items in benches.items()}
    results, labels, _shards = run_probe(work, benches, scans, random.Random(7070 + args.seed), args.mb, "new_shapes")
    rb.table(results, labels)
    items_by_id = {it["id"]: it for items in benches.values() for it in items}
    fps = false_positives(results, labels)
    for name, r in fps:
        it = items_by_id[r["item_id"]]
        ev = r["evidence"][0] if r["evidence"] else {}
        print(f"[{name}] {r['item_id']} {labels[r['item_id']]['kind']} {r['status']} score={r.get('score')}")
        print(f"    item: {re.sub(chr(92) + 's+', ' ', it['question'])[:200]!r} -> {it['answer'][:60]!r}")
        print(f"    reason: {r['reason']}")
        print(f"    evidence: {ev.get('document_id', '-')}: {snippet(ev)!r}" if ev else "    evidence: -")
    rb.missed(results, labels, args.show_missed)


if __name__ == "__main__":
    main()
