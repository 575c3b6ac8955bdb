"""Six real benchmarks whose items are near-duplicates of each other, copies of a tenth of their items planted.

Usage: python bench/twin_shapes.py --work DIR [--mb 100] [--seed 0] [--show-missed 4]

The scorer has to tell one item's copy from its twin's: an item that differs from another by a word, a
number, a name or a clause. Shapes (PyPI wheels fetched with `pip download --no-deps` as
bench/real_benchmarks.py does; all from openai `evals==3.0.1.post1`'s registry, none used by
real_benchmarks.py or new_shapes.py):

- diversion: irrelevant-negative-diversion, 136 yes/no questions, each story asked eight or so ways that
  differ by one connective ("However," / "But," / "Unfortunately," / "Sadly," ...) or by the diverting
  clause, after a fixed instruction line (PAWS-like one-word twins: 93% of an item's 3-grams are its
  nearest twin's).
- moral_except: MoralExceptQA, 148 scenarios ("Imagine that a stranger tells Hank to break all the
  windows in his neighbor's house without his neighbor's permission. If Hank refuses, the stranger will
  shoot and kill Hank's son. ..."), a contrast set: the same act with another reason, the same reason
  with another act, "one thousand dollars" / "one hundred dollars"; choices Yes / No.
- pararule: PARARULE-Plus, 2000 true/false questions on 1006 templated rule passages (up to 6 questions
  a passage, the passage a `passage` field and the group); passages are one template with names and
  adjectives swapped, questions differ by "not" ("Fiona is big." / "Fiona is not big."); 97% of an
  item's 3-grams are its nearest twin's. Scanned a second time with the passage written into the
  question ("pararule_inline", one field, as the registry gives it).
- minimal_pairs: Winograd-style pairs (ambiguous-sentences, 60: "... refused the demonstrators a permit
  because they feared / advocated violence.. Who ...?") and Russian-English homonym contexts (50: the
  same sign read in spring or in summer).
- ph_calc: 101 distinct pH problems from a few frames that differ in the concentration and dissociation
  degree ("A chemist has prepared a 0.001 M solution of monoprotic acid (HR). The dissociation degree
  is 1. ..."): numeric variants of one problem (GSM-Symbolic-like).
- countries_area: 100 "which of these countries is largest" questions whose lists are sliding windows
  of one ranking ("Russia, Canada, United States, Brazil" / "Canada, United States, Brazil, Australia"):
  entity-swapped templated items, 88% of each one's 3-grams its neighbour's.

Items the tokeniser cannot tell apart (the same words, punctuation or case aside) are one item and kept
once. Background: this machine's text (bench/real_benchmarks.background, --mb MB). Plants:
real_benchmarks.choose_plants / plant (verbatim, light_edit, heavy_edit, question_only, partial; a
tenth of each benchmark's items), then near_siblings (a clean item sharing a 20-word run, held by at
most 11 items, with a planted item is a sibling) besides pararule's passage groups. Index and scan with
the CLI (`.venv/bin/contam`).

Prints per benchmark and label "items:flagged/contaminated", the clean items' flagged share and the
too_short count; then every false positive (clean or sibling item flagged) with its reason, its best
evidence's excerpt, the planted item whose copy is in that document and the words that tell the two
apart (the item's own words: held by the document or not); then the missed plants per benchmark and
kind with reasons, and a sample of them (--show-missed per benchmark).

First run (--mb 100, seed 0, 102 MB, 41 s in all, commit 8500c63's scorer): no clean item flagged (0 of
1,209); 4 pararule_inline siblings reported `contaminated`, each by the half copy (passage and "Gary is")
of a twin on the same passage whose question is one token longer ("Gary is not wealthy." / "Charlie is
quiet."): neither's distinct 3-grams are there, the whole-share tie goes to the shorter item, no
competitor is kept, and the template pieces of the shared passage (5-grams in more than 256 items break
it into runs shorter than passage_tokens) count as the item's own text. 87 more siblings `suspicious`
(a passage found alone) and 2 in pararule (its 4-token question inside another passage's copy).
pararule with its passage as a field: 426 of 2000 too_short (3-token questions), 13 of 40 verbatim
copies among them.
"""

from __future__ import annotations

import difflib
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


# --- benchmarks ----------------------------------------------------------------------------------


def words(text: str) -> list[str]:
    return WORD.findall(text.casefold())


def dedupe(items: list[dict]) -> list[dict]:
    """One item per distinct token sequence of question, passage and choices (the scanner's view)."""
    out, seen = [], set()
    for it in items:
        key = (tuple(words(it.get("passage", ""))), tuple(words(it["question"])), tuple(it.get("choices") or ()))
        if key not in seen:
            seen.add(key)
            out.append(it)
    return out


def moral_except(rows: list[dict]) -> list[dict]:
    items = []
    for i, r in enumerate(rows):
        text = rb.user(r).strip()
        m = re.match(r"(.*?)\s*\nYes\nNo\nAnswer:$", text, re.S)
        question = m.group(1).strip() if m else text
        items.append(
            {"id": f"moral_except-{i}", "question": question, "choices": ["Yes", "No"], "answer": rb.ideal_text(r)}
        )
    return items


def pararule(rows: list[dict]) -> list[dict]:
    """Passage and question apart; the passage (shared by up to 6 questions) is the group."""
    items = []
    for i, r in enumerate(rows):
        m = re.match(r"\s*Passage:\s*(.*?)\s*Question:\s*(.*?)\s*Answer:\s*$", rb.user(r), re.S)
        passage, question = m.group(1).strip(), m.group(2).strip()
        item = {"id": f"pararule-{i}", "passage": passage, "question": question, "answer": rb.ideal_text(r)}
        items.append(item | {"group": passage})
    return items


def benchmarks(evals: zipfile.ZipFile) -> dict[str, list[dict]]:
    rows = lambda path: rb.registry_rows(evals, path)  # noqa: E731
    made = {
        "diversion": rb.plain(rows("irrelevant-negative-diversion/irrelevant-negative-diversion.jsonl"), "diversion"),
        "moral_except": moral_except(rows("moral_exceptQA/samples.jsonl")),
        "pararule": pararule(
            rows("pararule-plus-multi-step-deductive-reasoning/pararule-plus-multi-step-deductive-reasoning.jsonl")
        ),
        "minimal_pairs": rb.plain(rows("ambiguous-sentences/samples.jsonl"), "minimal_pairs")
        + rb.plain(rows("russian-english-homonym-context-resolution/samples.jsonl"), "minimal_pairs", 1000),
        "ph_calc": rb.plain(rows("ph_calculation/samples.jsonl"), "ph_calc"),
        "countries_area": rb.plain(rows("compare-countries-area/samples.jsonl"), "countries_area"),
    }
    for name, items in made.items():
        made[name] = dedupe(items)
        ids = [it["id"] for it in made[name]]
        assert len(ids) == len(set(ids)), name
    return made


def scan_row(item: dict) -> dict:
    return {k: v for k, v in item.items() if k != "group"}


def inline_row(item: dict) -> dict:
    """pararule as the registry gives it: passage and question in one field."""
    return {"id": item["id"], "question": f"{item['passage']} Question: {item['question']}", "answer": item["answer"]}


# --- what tells an item from the planted twin whose copy is in the evidence ----------------------


def text_of(item: dict) -> str:
    parts = [item.get("passage", ""), item["question"], *(item.get("choices") or [])]
    return " ".join(p for p in parts if p)


def own_words(item: dict, twin: dict) -> list[str]:
    """The runs of the item's words that its twin lacks (difflib's opcodes on words), a few words of context each."""
    a, b = words(text_of(item)), words(text_of(twin))
    out = []
    for op, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op in ("replace", "delete"):
            out.append(" ".join(a[max(0, i1 - 2) : i1]) + " [" + " ".join(a[i1:i2]) + "] " + " ".join(a[i2 : i2 + 2]))
    return out


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def held(fragment: str, doc_words: str) -> bool:
    """The bracketed words, with their context, in the document's word stream."""
    return " " + fragment.replace("[", "").replace("]", "").strip() + " " in doc_words


# --- run -----------------------------------------------------------------------------------------


def main() -> None:
    args = ns.probe_args()
    work = args.work.resolve()
    t0 = time.perf_counter()
    evals, _inspect = rb.download(work / "downloads")
    benches = benchmarks(evals)
    scans = {name: [scan_row(it) for it in items] for name, items in benches.items()}
    scans["pararule_inline"] = [inline_row(it) for it in benches["pararule"]]
    results, labels, shards = ns.run_probe(
        work, benches, scans, random.Random(8080 + args.seed), args.mb, "twin_shapes"
    )
    rb.table(results, labels)

    items_by_id = {it["id"]: it for items in benches.values() for it in items}
    planted_in = {lab["doc"]: lab["id"] for lab in labels.values() if "doc" in lab}
    docs_text = {d["id"]: d["text"] for docs in shards.values() for d in docs if d["id"] in planted_in}
    fps = ns.false_positives(results, labels)
    for name, r in fps:
        it = items_by_id[r["item_id"]]
        ev = r["evidence"][0] if r["evidence"] else {}
        print(f"[{name}] {r['item_id']} {labels[r['item_id']]['kind']} {r['status']} score={r.get('score')}")
        print(f"    item: {flat(text_of(it))[-240:]!r} -> {it['answer'][:60]!r}")
        print(f"    reason: {r['reason']}")
        print(f"    evidence: {ev.get('document_id', '-')}: {ns.snippet(ev)!r}" if ev else "    evidence: -")
        twin_id = planted_in.get(ev.get("document_id"))
        if twin_id:
            twin, lab = items_by_id[twin_id], labels[twin_id]
            doc_words = " " + " ".join(words(docs_text[ev["document_id"]])) + " "
            own = own_words(it, twin)
            print(f"    document holds {twin_id}'s {lab['kind']} copy: {flat(lab['planted'])[-240:]!r}")
            marks = [f"{w!r}:{'HELD' if held(w, doc_words) else 'absent'}" for w in own[:6]]
            more = " ..." if len(own) > 6 else ""
            print("    item's own words vs that twin (held by the document?): " + "; ".join(marks) + more)
    rb.missed(results, labels, args.show_missed)
    print(f"\nall done in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
