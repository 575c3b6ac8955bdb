"""Real benchmarks, copies of a tenth of their items planted in real text: what is found, what is flagged wrongly.

Usage: python bench/real_benchmarks.py --work DIR [--db URL] [--mb 140] [--seed 0] [--eval-dir ../shared/eval]

The evaluation set (../shared/eval) and bench/calibrate.py's synthetic benchmarks are shapes we
chose. This takes seven real benchmarks as they are shipped in PyPI wheels (`pip download --no-deps`
of openai's `evals` 3.0.1.post1, whose registry holds the data, and of `inspect-evals` 0.28.0):
LogiQA (passages shared by up to 12 questions), MedMCQA, QuaRTz (short two-choice questions),
JEEBench maths (LaTeX), CREPE (procedures whose contexts are nested prefixes of each other, three
answers shared by all), ToMi (templated stories, 6 questions each, the story as a `passage` field)
and FreshQA (short open questions); ToMi is scanned a second time with the story written into the
question, as BIG-bench-style files give it ("tomi_inline"). Seven more, of shapes those lack:
Spider (text-to-SQL: a question, its database schema as a `schema` field shared by the questions on
that database, the SQL as `query`), Corr2Cause (NLI, "Premise: ... Hypothesis: ..." in one `input`
field, 21 templated premises), EXAMS in Bulgarian (Cyrillic, four choices), manga speech bubbles
(Japanese, no spaces between words, their English the answer), abstract2title (an abstract as
`article`, its title as `summary`: summarisation), News Headlines sarcasm (one-line headlines, answer
"0"/"1") and WritingBench (long writing requests, 443 of 1000 in Chinese, no reference answer); their
plants go in after the first seven's, from a random generator of their own, so the seven's numbers
are what they were. Eight more (session 41), planted after those from a generator of their own, so the
fourteen are planted as they were: MMLU (1000 questions as the sandbagging eval ships them, four
choices), lyrics (Guess the Singer: a song's first ten words, three singers to choose from; 1500 of 3637
distinct openings), mathword (190 maths word problems, numbers in the text, from seven small registry
sets: probability_questions, multistep, 5th-grader, tricky, algebra, probabilities and Dudeney's
arithmetical puzzles), aba_truefalse (110 true/false claims about the ABA Model Rules), born_first (113
templated claims, "Was X born before Y? Answer Y or N."), bias_news (284 sentences of news articles,
labelled fact, claim, quote, ...), consensus_summary (358 questions on 263 sets of research claims, a
summary the answer, as `article` and `summary`; the claims are the group; in these eight, a clean item
sharing a 20-word run that at most 11 items hold with a planted item is its sibling too) and
infiniteloop (101 one-line C, Python, JavaScript and PowerShell snippets: does it loop forever?). Edits
of mostly-CJK text replace characters, not words. The background corpus is this machine's text
(/usr/share/doc, English man pages, licences, the Python standard library and the site-packages of the
interpreter running this, about --mb MB) plus the evaluation set's corpus (--eval-dir, default
../shared/eval beside the checkout) when it is there.
Into it go copies of 10% of each benchmark's items, one kind in five each: verbatim; light_edit (1-2
words of the question replaced); heavy_edit (30% of the words of question, passage and long
choices replaced); question_only (no answer); partial (the passage and half the question, or the
first half of the rendered item). Items sharing a passage, story or CREPE goal with a planted item
are labelled siblings, the rest clean: a flag on either is a false positive.

DIR holds the downloads (reused when there) and everything built: corpus/ (the background with the
copies in it), scan/ (the benchmark files scanned), out/ (each scan's JSON), labels.jsonl and, without
--db, the SQLite index real_benchmarks.db (made anew each run). All of it is built the same way
from the same files and --seed; only the machine's text can differ from one machine to another.

Prints, per benchmark and label, "items:flagged/contaminated" (flagged: suspicious or contaminated),
the false-positive rate on clean items and the too_short count; then each false positive (item,
label, status, reason, the evidence's document); then the missed plants counted per benchmark and
kind, with the planted copies' lengths in words and their reasons (numbers written N).
"""

from __future__ import annotations

import argparse
import collections
import csv
import gzip
import io
import json
import os
import random
import re
import subprocess
import sys
import sysconfig
import time
import unicodedata
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WHEELS = {"evals": "evals==3.0.1.post1", "inspect-evals": "inspect-evals==0.28.0"}
REGISTRY = "evals/registry/data/"
FRESHQA = "inspect_evals/abstention_bench/data/freshqa/FreshQA_v12182024.csv"
WRITINGBENCH = "inspect_evals/writingbench/benchmark_all.jsonl"
FIRST = ("crepe", "freshqa", "jeemath", "logiqa", "medmcqa", "quartz", "tomi")  # planted first, as before the rest
# planted last, from a generator of their own, so the fourteen before them are planted as they were
THIRD = ("aba_truefalse", "bias_news", "born_first", "consensus_summary", "infiniteloop", "lyrics", "mathword", "mmlu")
MATHWORD = (  # small word-problem sets of the registry, one shape, scanned as one benchmark
    "probability_questions/probability_questions.jsonl",
    "multistep-word-problems/samples.jsonl",
    "math_for_5th-grader/samples.jsonl",
    "tricky-word-problems/samples.jsonl",
    "algebra_word_problems/samples.jsonl",
    "probabilities-word-problems/samples.jsonl",
    "arithmetical_puzzles/arithmetical_puzzles.jsonl",
)
# a benchmark's scan file under its own field names, as it is distributed (the others: id, question, passage,
# choices, answer)
LAYOUT = {
    "spider": {"passage": "schema", "answer": "query"},
    "abstract2title": {"question": "article", "answer": "summary"},
    "corr2cause": {"question": "input", "answer": "label"},
    "consensus_summary": {"question": "article", "answer": "summary"},
}
MAXDOC = 200_000  # longer files are cut into documents of at most this many characters, at line ends
SHARD = 3000  # documents per background corpus file
KINDS = ["verbatim", "light_edit", "heavy_edit", "question_only", "partial"]
LABELS = [*KINDS, "sibling", "clean"]
FLAG = {"suspicious", "contaminated"}
# fmt: off
FILLERS = ["river", "window", "quietly", "seven", "garden", "paper", "silver", "morning", "basket", "engine", "yellow",
           "coffee", "rapid", "hollow", "letter", "market", "thunder", "pencil", "simple", "orange", "candle", "forest"]
# fmt: on
FILLER_CJK = "山川花雨風森紙鳥"
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]")

Item = dict  # id, question, answer, [choices], [passage], [group]


# --- downloads -----------------------------------------------------------------------------------


def download(dl: Path) -> tuple[zipfile.ZipFile, zipfile.ZipFile]:
    """The two wheels, fetched with pip unless DIR/downloads has them already."""
    wheels = []
    for name, spec in WHEELS.items():
        where = dl / name
        if not sorted(where.glob("*.whl")):
            where.mkdir(parents=True, exist_ok=True)
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(where), spec]
            subprocess.run(cmd, check=True)
        wheels.append(zipfile.ZipFile(sorted(where.glob("*.whl"))[0]))
    return wheels[0], wheels[1]


def registry_rows(evals: zipfile.ZipFile, path: str) -> list[dict]:
    with io.TextIOWrapper(evals.open(REGISTRY + path), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def user(row: dict) -> str:
    return row["input"][-1]["content"]


# --- benchmarks ----------------------------------------------------------------------------------


def logiqa(rows: list[dict]) -> list[Item]:
    """Passage, question, four choices; a passage is shared by up to 12 questions (their group)."""
    items, seen = [], set()
    form = r"Passage:\s*(.*?)Question:\s*(.*?)\nA\.\s*(.*?)\nB\.\s*(.*?)\nC\.\s*(.*?)\nD\.\s*(.*?)\nAnswer:"
    for i, r in enumerate(rows):
        m = re.match(form, user(r).strip(), re.S)
        if not m:
            continue
        passage, question, *choices = [x.strip() for x in m.groups()]
        choices = [re.sub(r"^[A-D]\.", "", x).strip() for x in choices]
        key = (passage, question, tuple(choices))
        if key in seen:
            continue
        seen.add(key)
        answer = choices["ABCD".index(r["ideal"].strip()[0])]
        item = {"id": f"logiqa-{i}", "passage": passage, "question": question, "choices": choices, "answer": answer}
        items.append(item | {"group": passage[:200]})
    return items


def medmcqa(rows: list[dict]) -> list[Item]:
    items = []
    for i, r in enumerate(rows):
        parts = re.split(r"\n\s*([a-d])\) ", "\n" + user(r).split("\n\n", 1)[1].strip())
        choices = [parts[k].strip() for k in range(2, len(parts), 2)]
        answer = re.sub(r"^[a-d]\)\s*", "", r["ideal"]).strip()
        items.append({"id": f"medmcqa-{i}", "question": parts[0].strip(), "choices": choices, "answer": answer})
    return items


def quartz(rows: list[dict], rng: random.Random) -> list[Item]:
    """1500 of the distinct questions, two choices each."""
    items, seen = [], set()
    for i, r in enumerate(rows):
        m = re.match(r"(.*?)\n\s*A: (.*?)\n\s*B: (.*)$", user(r), re.S)
        if not m or m.group(1).strip() in seen:
            continue
        seen.add(m.group(1).strip())
        choices = [m.group(2).strip(), m.group(3).strip()]
        answer = choices["AB".index(r["ideal"].strip()[0])]
        items.append({"id": f"quartz-{i}", "question": m.group(1).strip(), "choices": choices, "answer": answer})
    rng.shuffle(items)
    return sorted(items[:1500], key=number)


def jeemath(rows: list[dict]) -> list[Item]:
    items = []
    for i, r in enumerate(rows):
        m = re.match(r"(.*?)\n\(A\)(.*?)\n\(B\)(.*?)\n\(C\)(.*?)\n\(D\)(.*)$", user(r).strip(), re.S)
        if not m:
            continue
        question, *choices = [x.strip() for x in m.groups()]
        ideal = r["ideal"][0] if isinstance(r["ideal"], list) else r["ideal"]
        letter = re.search(r"\(([A-D])\)", ideal).group(1)
        items.append(
            {"id": f"jee-{i}", "question": question, "choices": choices, "answer": choices["ABCD".index(letter)]}
        )
    return items


def crepe(rows: list[dict], rng: random.Random) -> list[Item]:
    """1000 items. Their group is the goal sentence ("I'm trying to cook bbq ribs"): the contexts of one
    procedure are nested prefixes of each other ("I'm trying to X. First, ... Then, ..."), so an item
    whose goal sentence is a planted item's shares the planted copy's leading context and counts as its
    sibling, not as a clean item, when a flag on it is scored."""
    items = []
    for i, r in enumerate(rows):
        question = user(r).strip()
        items.append(
            {"id": f"crepe-{i}", "question": question, "answer": r["ideal"].strip()} | {"group": goal(question)}
        )
    rng.shuffle(items)
    return sorted(items[:1000], key=number)


def goal(question: str) -> str:
    return question.split(".")[0]


def freshqa(inspect: zipfile.ZipFile) -> list[Item]:
    lines = inspect.read(FRESHQA).decode().splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("id,split"))
    items = []
    for r in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        if r["question"].strip():
            answer = (r["answer_0"] or "").strip()
            items.append({"id": f"freshqa-{r['id']}", "question": r["question"].strip(), "answer": answer})
    return items


def spider(rows: list[dict]) -> list[Item]:
    """Spider text-to-SQL: the question, its database's schema (the passage, shared by the questions on
    that database: their group) and the SQL the answer."""
    items = []
    for i, r in enumerate(rows):
        text = r["input"][0]["content"]
        head, question = text.split("\n\nQuestion:", 1)
        schema = head.split("Use only the following tables and columns:\n", 1)[1].strip()
        item = {"id": f"spider-{i}", "passage": schema, "question": question.strip(), "answer": r["ideal"].strip()}
        items.append(item | {"group": schema})
    return items


def corr2cause(rows: list[dict]) -> list[Item]:
    """The distinct NLI items (1522 of the 2246 rows), "Premise: ... Hypothesis: ..." in one field as the
    dataset gives them; the premise (21 of them, a template of variables and their correlations) is the group."""
    items, seen = [], set()
    for i, r in enumerate(rows):
        text = user(r).strip()
        if text in seen:
            continue
        seen.add(text)
        premise = re.match(r"Premise: (.*?) Hypothesis: ", text, re.S).group(1)
        answer = r["ideal"].removeprefix("Answer:").strip()
        items.append({"id": f"corr2cause-{i}", "question": text, "answer": answer} | {"group": premise})
    return items


def exams(rows: list[dict], name: str) -> list[Item]:
    """A language's EXAMS questions (school exams), four choices each."""
    items = []
    for i, r in enumerate(rows):
        m = re.match(r"(.*?)\nA\. (.*?)\nB\. (.*?)\nC\. (.*?)\nD\. (.*?)\nAnswer:$", user(r).strip(), re.S)
        if not m:
            continue
        question, *choices = [x.strip() for x in m.groups()]
        answer = choices["ABCD".index(r["ideal"].strip("[] "))]
        items.append({"id": f"{name}-{i}", "question": question, "choices": choices, "answer": answer})
    return items


def distinct(rows: list[dict], name: str) -> list[Item]:
    """One item per distinct user message (punctuation, case and width aside: the manga file has "おっおい!!"
    and "おっおい", both "hey!"), its ideal the answer (manga speech bubbles and their English, abstracts and
    their titles, headlines and their sarcasm label)."""
    items, seen = [], set()
    for i, r in enumerate(rows):
        question = user(r).strip()
        key = re.sub(r"[\W_]+", "", unicodedata.normalize("NFKC", question).casefold())
        if key and key not in seen:
            seen.add(key)
            ideal = r["ideal"][0] if isinstance(r["ideal"], list) else r["ideal"]
            items.append({"id": f"{name}-{i}", "question": question, "answer": ideal.strip()})
    return items


def ideal_text(r: dict) -> str:
    """The row's ideal answer as text: the first of a list, without the brackets some evals ask for."""
    ideal = r["ideal"][0] if isinstance(r["ideal"], list) else r["ideal"]
    return re.sub(r"^[\[{](.*)[\]}]$", r"\1", str(ideal).strip(), flags=re.S).strip()


def plain(rows: list[dict], name: str, start: int = 0, group: Callable[[str], str] | None = None) -> list[Item]:
    """One item per distinct user message (its whole text the question), its ideal the answer: word
    problems, true/false claims, news sentences, code snippets, claims to summarise; `group` gives the
    text an item shares with its siblings (consensus_summary's claims, 1-6 questions asked of each set)."""
    items, seen = [], set()
    for i, r in enumerate(rows):
        question = user(r).strip()
        if question and question not in seen:
            seen.add(question)
            item = {"id": f"{name}-{start + i}", "question": question, "answer": ideal_text(r)}
            items.append(item | ({"group": group(question)} if group else {}))
    return items


def claims(question: str) -> str:
    return question.rsplit("\nquestion:", 1)[0]


def mathword(evals: zipfile.ZipFile) -> list[Item]:
    """The registry's maths word problems (numbers in the text, a number the answer), seven small sets."""
    items: list[Item] = []
    for k, path in enumerate(MATHWORD):
        items += plain(registry_rows(evals, path), "mathword", 1000 * k)
    return items


def mmlu(rows: list[dict]) -> list[Item]:
    """MMLU questions as the sandbagging eval ships them ("...\nA. ...\nD. ...\nAnswer:"), four choices."""
    items = []
    for i, r in enumerate(rows):
        m = re.match(r"(.*?)\nA\. (.*?)\nB\. (.*?)\nC\. (.*?)\nD\. (.*?)\nAnswer:$", r["question"].strip(), re.S)
        if not m:
            continue
        question, *choices = [x.strip() for x in m.groups()]
        answer = choices["ABCD".index(r["answer"].strip())]
        items.append({"id": f"mmlu-{i}", "question": question, "choices": choices, "answer": answer})
    return items


def lyrics(rows: list[dict]) -> list[Item]:
    """Guess the singer: a song's first ten words, three singers to choose from; one item per lyric."""
    items, seen = [], set()
    for i, r in enumerate(rows):
        m = re.match(r"Text: (.*?)\s*\nChoices: (.*)$", user(r).strip(), re.S)
        if not m or m.group(1).strip() in seen:
            continue
        seen.add(m.group(1).strip())
        choices = [c.strip() for c in m.group(2).split(",")]
        items.append({"id": f"lyrics-{i}", "question": m.group(1).strip(), "choices": choices, "answer": ideal_text(r)})
    return items


def sample(items: list[Item], k: int, rng: random.Random) -> list[Item]:
    rng.shuffle(items)
    return sorted(items[:k], key=number)


def writingbench(inspect: zipfile.ZipFile) -> list[Item]:
    """WritingBench's 1000 writing requests (443 in Chinese), many with long reference material in
    them; no reference answer (the answer is empty)."""
    rows = [json.loads(line) for line in inspect.read(WRITINGBENCH).decode().splitlines() if line.strip()]
    return [{"id": f"writingbench-{r['index']}", "question": r["query"].strip(), "answer": ""} for r in rows]


def tomi(rows: list[dict], rng: random.Random) -> list[Item]:
    """The questions of 170 of the stories (6 each); the story is the passage and the group."""
    by_story: dict[str, list[Item]] = {}
    for i, r in enumerate(rows):
        text = user(r).strip()
        k = text.rfind(". ") + 1
        story, question = text[:k].strip(), text[k:].strip()
        item = {"id": f"tomi-{i}", "passage": story, "question": question, "answer": r["ideal"].strip()}
        by_story.setdefault(story, []).append(item | {"group": story})
    stories = sorted(by_story)
    rng.shuffle(stories)
    return sorted((it for s in stories[:170] for it in by_story[s]), key=number)


def number(item: Item) -> int:
    return int(item["id"].rsplit("-", 1)[1])


def benchmarks(evals: zipfile.ZipFile, inspect: zipfile.ZipFile, seed: int) -> dict[str, list[Item]]:
    rng = random.Random(40 + seed)  # drawn from in this order: quartz, crepe, tomi
    made = {
        "logiqa": logiqa(registry_rows(evals, "logiqa/logiqa.jsonl")),
        "medmcqa": medmcqa(registry_rows(evals, "medmcqa/samples.jsonl")),
        "quartz": quartz(registry_rows(evals, "quartz/samples.jsonl"), rng),
        "jeemath": jeemath(registry_rows(evals, "jee-math/samples.jsonl")),
        "crepe": crepe(registry_rows(evals, "crepe/samples.jsonl"), rng),
        "freshqa": freshqa(inspect),
        "tomi": tomi(registry_rows(evals, "theory_of_mind/tomi/test.jsonl"), rng),
    }
    rng = random.Random(50 + seed)  # the benchmarks added since, drawn from in this order
    made |= {
        "spider": spider(registry_rows(evals, "sql/spider_sql.jsonl")),
        "corr2cause": sample(corr2cause(registry_rows(evals, "corr2cause/corr2cause.jsonl")), 1000, rng),
        "exams_bg": sample(exams(registry_rows(evals, "bulgarian-exams-qa/samples.jsonl"), "exams_bg"), 1000, rng),
        "manga": distinct(registry_rows(evals, "manga-translation/bubbles.jsonl"), "manga"),
        "abstract2title": distinct(registry_rows(evals, "abstract2title/samples.jsonl"), "abstract2title"),
        "sarcasm": sample(distinct(registry_rows(evals, "sarcasm/samples.jsonl"), "sarcasm"), 1500, rng),
        "writingbench": writingbench(inspect),
    }
    rng = random.Random(60 + seed)  # the third group: maths, general knowledge, lyrics, claims, news, code
    made |= {
        "mathword": mathword(evals),
        "mmlu": mmlu(registry_rows(evals, "sandbagging/samples-all-large.jsonl")),
        "lyrics": sample(lyrics(registry_rows(evals, "guess_the_singer/samples.jsonl")), 1500, rng),
        "aba_truefalse": plain(registry_rows(evals, "aba_mrpc_true_false/samples.jsonl"), "aba_truefalse"),
        "born_first": plain(registry_rows(evals, "born_first/born_first.jsonl"), "born_first"),
        "bias_news": plain(registry_rows(evals, "bias_detection/samples.jsonl"), "bias_news"),
        "consensus_summary": plain(
            registry_rows(evals, "consensus_summary/samples.jsonl"), "consensus_summary", group=claims
        ),
        "infiniteloop": plain(registry_rows(evals, "infiniteloop-match/infiniteloop-match.jsonl"), "infiniteloop"),
    }
    return dict(sorted(made.items()))


# --- background corpus ---------------------------------------------------------------------------


def read_text(path: str) -> str | None:
    try:
        with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
            data = f.read(5_000_000)
    except (OSError, EOFError):
        return None
    if b"\x00" in data[:4096]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def sections(text: str) -> Iterator[str]:
    if len(text) <= MAXDOC:
        yield text
        return
    i = 0
    while i < len(text):
        j = min(len(text), i + MAXDOC)
        k = text.rfind("\n", i + MAXDOC // 2, j) if j < len(text) else j
        k = j if k <= i else k
        yield text[i:k]
        i = k


def walk(root: str, name: str, exts: set[str] | None, skip: tuple[str, ...]) -> Iterator[dict]:
    """Documents {id, text} of the UTF-8 text files under root, in sorted order; a directory is left
    out when "/" + its path below root contains one of `skip`."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if any(s in "/" + os.path.relpath(dirpath, root) for s in skip):
            continue
        for fn in sorted(filenames):
            path = os.path.join(dirpath, fn)
            if exts is not None and os.path.splitext(fn.removesuffix(".gz"))[1] not in exts or os.path.islink(path):
                continue
            text = read_text(path)
            if not text or len(text.strip()) < 200:
                continue
            for n, s in enumerate(sections(text)):
                yield {"id": f"{name}:{os.path.relpath(path, root)}#{n}", "text": s}


def background(mb: float) -> dict[str, list[dict]]:
    """Shard name -> documents: this machine's text, each source up to its share of `mb`."""
    paths = sysconfig.get_paths()
    langs = "ar be bg ca cs da de el eo es fi fr hr hu id it ja ko lt lv nb nl pl pt ro ru sk sl sr sv ta tr uk vi zh"
    sources = [  # name, root, extensions (None: all), skipped directories, MB at --mb 140
        ("doc", "/usr/share/doc", None, (), 60),
        ("man", "/usr/share/man", None, tuple("/" + x for x in langs.split()), 40),  # English pages only
        ("lic", "/usr/share/common-licenses", None, (), 1),
        ("pystd", paths["stdlib"], {".py", ".txt", ".rst"}, ("site-packages", "test", "__pycache__"), 30),
        ("site", paths["purelib"], {".py", ".md", ".rst", ".txt"}, ("__pycache__", "/contam"), 25),
    ]
    shards: dict[str, list[dict]] = {}
    for name, root, exts, skip, share in sources:
        size, docs = 0, []
        for doc in walk(root, name, exts, skip):
            docs.append(doc)
            size += len(doc["text"])
            if size > share * 1e6 * mb / 140:
                break
        for k in range(0, len(docs), SHARD):
            shards[f"{name}-{k // SHARD}"] = docs[k : k + SHARD]
        print(f"background {name}: {len(docs)} documents, {size / 1e6:.1f} MB", file=sys.stderr)
    return dict(sorted(shards.items()))


# --- plants --------------------------------------------------------------------------------------


def render(item: Item, with_answer: bool = True) -> str:
    parts = [item["passage"]] if item.get("passage") else []
    parts.append(("Question: " if item.get("choices") else "Q: ") + item["question"])
    parts += [f"({'ABCD'[k]}) {c}" for k, c in enumerate(item.get("choices") or [])]
    if with_answer:
        parts.append(f"Answer: {item['answer']}")
    return "\n".join(parts)


def edit_words(text: str, rng: random.Random, n: int | None = None, frac: float = 0.0) -> str:
    """`n` (or a share `frac`) of the words of 4+ letters replaced by filler words; in a text mostly of
    CJK characters (no spaces between words), `n` (or `frac`) of those characters replaced instead."""
    if mostly_cjk(text):
        return edit_chars(text, rng, n, frac)
    toks = text.split(" ")
    idx = [i for i, t in enumerate(toks) if re.fullmatch(r"[^\W\d_]{4,}[,.]?", t)]
    idx = idx or [i for i, t in enumerate(toks) if t]
    k = n if n is not None else max(1, round(frac * len(toks)))
    for i in rng.sample(idx, min(k, len(idx))):
        tail = toks[i][-1] if toks[i][-1] in ",." else ""
        toks[i] = rng.choice(FILLERS) + tail
    return " ".join(toks)


def mostly_cjk(text: str) -> bool:
    """Most of its letters CJK ideographs or kana, its words not separated by spaces."""
    return len(CJK.findall(text)) > len(re.findall(r"[^\W\d_]", text)) / 2


def edit_chars(text: str, rng: random.Random, n: int | None, frac: float) -> str:
    idx = [m.start() for m in CJK.finditer(text)]
    chars = list(text)
    for i in rng.sample(idx, min(n if n is not None else max(1, round(frac * len(idx))), len(idx))):
        chars[i] = rng.choice(FILLER_CJK)
    return "".join(chars)


def make_copy(item: Item, kind: str, rng: random.Random) -> str:
    if kind == "verbatim":
        return render(item)
    if kind == "question_only":
        return render(item, with_answer=False)
    if kind == "light_edit":
        return render(item | {"question": edit_words(item["question"], rng, n=rng.choice([1, 2]))})
    if kind == "heavy_edit":
        edited = item | {"question": edit_words(item["question"], rng, frac=0.3)}
        if item.get("passage"):
            edited["passage"] = edit_words(item["passage"], rng, frac=0.3)
        if item.get("choices"):
            edited["choices"] = [edit_words(c, rng, frac=0.3) if len(c.split()) > 3 else c for c in item["choices"]]
        return render(edited)
    if item.get("passage"):  # partial: the passage and the first half of the question
        words = item["question"].split()
        return item["passage"] + "\n" + " ".join(words[: max(1, len(words) // 2)])
    text = render(item, with_answer=False)  # partial: the first half of the item (of its characters in CJK)
    if mostly_cjk(text):
        return text[: len(text) // 2]
    words = text.split(" ")
    return " ".join(words[: max(1, len(words) // 2)])


def choose_plants(benches: dict[str, list[Item]], rng: random.Random) -> tuple[list, dict[str, dict]]:
    """A tenth of each benchmark's items, a kind each in turn, and their copies; every item's label."""
    plants, labels = [], {}
    for name, items in benches.items():
        chosen = rng.sample(items, max(1, round(0.1 * len(items))))
        groups = {it["group"] for it in chosen if it.get("group")}
        for k, it in enumerate(chosen):
            kind = KINDS[k % len(KINDS)]
            plants.append((it, make_copy(it, kind, rng)))
            labels[it["id"]] = {"id": it["id"], "bench": name, "kind": kind}
        for it in items:
            if it["id"] not in labels:
                kind = "sibling" if it.get("group") in groups else "clean"
                labels[it["id"]] = {"id": it["id"], "bench": name, "kind": kind}
    return plants, labels


def near_siblings(items: list[Item], labels: dict[str, dict], n: int = 20, most: int = 11) -> None:
    """A clean item sharing a run of `n` words with a planted item, a run that at most `most` items hold
    (a passage, not a template: the scanner's passage_tokens and passage_max_items + 1), is its sibling:
    two infinite-loop snippets of one PowerShell function, two questions asked of one set of claims."""

    def runs(item: Item) -> set[tuple[str, ...]]:
        words = render(item, with_answer=False).casefold().split()
        return {tuple(words[k : k + n]) for k in range(len(words) - n + 1)}

    held: dict[tuple[str, ...], int] = collections.Counter(r for it in items for r in runs(it))
    planted = {r for it in items if labels[it["id"]]["kind"] in KINDS for r in runs(it) if held[r] <= most}
    for it in items:
        if labels[it["id"]]["kind"] == "clean" and runs(it) & planted:
            labels[it["id"]]["kind"] = "sibling"


def plant(shards: dict[str, list[dict]], plants: list, labels: dict[str, dict], rng: random.Random) -> None:
    """Each copy into its own document of 2-150 KB, at a paragraph break (one no earlier copy is in)."""
    taken = {label["doc"] for label in labels.values() if "doc" in label}
    hosts = [
        d for docs in shards.values() for d in docs
        if 2000 < len(d["text"]) < 150_000 and "\n\n" in d["text"] and d["id"] not in taken
    ]  # fmt: skip
    for (item, text), doc in zip(plants, rng.sample(hosts, len(plants)), strict=True):
        at = rng.choice([m.end() for m in re.finditer(r"\n\n", doc["text"])])
        doc["text"] = doc["text"][:at] + text + "\n\n" + doc["text"][at:]
        labels[item["id"]].update(doc=doc["id"], planted=text, chars=len(text), words=len(text.split()))


def write_jsonl(path: Path, rows: list[dict]) -> None:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def write_corpus(work: Path, shards: dict[str, list[dict]]) -> list[Path]:
    """Empty (or make) `work`'s corpus, scan and out folders; the shards written as corpus files."""
    for sub in ("corpus", "scan", "out"):
        (work / sub).mkdir(parents=True, exist_ok=True)
        for old in (work / sub).iterdir():
            old.unlink()
    files = []
    for name, docs in shards.items():
        files.append(work / "corpus" / f"{name}.jsonl.gz")
        write_jsonl(files[-1], docs)
    return files


def build(work: Path, mb: float, seed: int, eval_dir: Path | None) -> tuple[list[Path], dict[str, dict]]:
    """Benchmarks, background and plants under `work`; returns the files to index and the labels."""
    evals, inspect = download(work / "downloads")
    benches = benchmarks(evals, inspect, seed)
    for name, items in benches.items():
        print(f"benchmark {name}: {len(items)} items", file=sys.stderr)
    shards = background(mb)
    labels: dict[str, dict] = {}
    second = tuple(sorted(set(benches) - set(FIRST) - set(THIRD)))
    for part, base in ((FIRST, 4040), (second, 5050), (THIRD, 6060)):  # each group planted as before the next
        rng = random.Random(base + seed)
        plants, part_labels = choose_plants({name: benches[name] for name in part}, rng)
        if part == THIRD:  # (the fourteen before keep their labels as they were)
            for name in part:
                near_siblings(benches[name], part_labels)
        labels |= part_labels
        plant(shards, plants, labels, rng)
    files = write_corpus(work, shards)
    for name, items in benches.items():
        names = LAYOUT.get(name, {})
        rows = [{names.get(k, k): v for k, v in it.items() if k != "group"} for it in items]
        write_jsonl(work / "scan" / f"{name}.jsonl", rows)
    # ToMi again with the story inside the question (no passage field), as BIG-bench-style files give it
    inline = [
        {"id": it["id"], "question": it["passage"] + " " + it["question"], "answer": it["answer"]}
        for it in benches["tomi"]
    ]
    write_jsonl(work / "scan" / "tomi_inline.jsonl", inline)
    write_jsonl(work / "labels.jsonl", list(labels.values()))
    extra = sorted((eval_dir / "corpus").glob("*.jsonl.gz")) if eval_dir is not None else []
    print(f"background from {eval_dir}/corpus: {len(extra)} files", file=sys.stderr)
    return files + extra, labels


# --- index, scan, report -------------------------------------------------------------------------


def contam(*args: str) -> str:
    cmd = [sys.executable, "-m", "contam.indexer.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT).stdout


def table(results: dict[str, list[dict]], labels: dict[str, dict]) -> None:
    print(f"{'bench':12} " + " ".join(f"{k:>16}" for k in LABELS) + "   FPR(clean)     too_short")
    for name, rows in results.items():
        cells: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
        for r in rows:
            cell = cells[labels[r["item_id"]]["kind"]]
            cell[0] += 1
            cell[1] += r["status"] in FLAG
            cell[2] += r["status"] == "contaminated"
        row = " ".join(f"{f'{c[0]}:{c[1]}/{c[2]}' if (c := cells[k])[0] else '-':>16}" for k in LABELS)
        n, flagged = cells["clean"][0], cells["clean"][1]
        too_short = sum(r["status"] == "too_short" for r in rows)
        print(f"{name:12} {row}   {flagged}/{n}={flagged / max(1, n):.4f}   {too_short}")
    print("\ncell = items:flagged/contaminated (flagged: suspicious or contaminated)")


def false_positives(results: dict[str, list[dict]], labels: dict[str, dict]) -> None:
    fps = [
        (name, r) for name, rows in results.items() for r in rows
        if labels[r["item_id"]]["kind"] in ("clean", "sibling") and r["status"] in FLAG
    ]  # fmt: skip
    print(f"\n=== FALSE POSITIVES (clean or sibling items flagged): {len(fps)}")
    for name, r in fps:
        doc = r["evidence"][0]["document_id"] if r["evidence"] else "-"
        print(f"[{name}] {r['item_id']} {labels[r['item_id']]['kind']} {r['status']}: {r['reason']} | evidence: {doc}")


def missed(results: dict[str, list[dict]], labels: dict[str, dict], sample: int = 0) -> None:
    """The planted items not flagged, counted per benchmark and kind with their reasons; and up to
    `sample` of them per benchmark shown, what was planted beside why it was not flagged."""
    agg: dict[tuple[str, str], list] = collections.defaultdict(lambda: [0, [], collections.Counter()])
    for name, rows in results.items():
        for r in rows:
            label = labels[r["item_id"]]
            if label["kind"] in KINDS and r["status"] not in FLAG:
                a = agg[(name, label["kind"])]
                a[0] += 1
                a[1].append(label["words"])
                a[2][re.sub(r"\d+", "N", r["reason"].split(":")[0])[:90]] += 1
    print(f"\n=== MISSED PLANTS: {sum(a[0] for a in agg.values())}")
    for (name, kind), (n, words, reasons) in sorted(agg.items()):
        words.sort()
        print(f"{name:12} {kind:14} missed={n:3} words={words[0]}-{words[-1]} (median {words[len(words) // 2]})")
        for reason, c in reasons.most_common():
            print(f"      {c:3} x {reason}")
    if not sample:
        return
    print(f"\n=== SAMPLE OF MISSED PLANTS (up to {sample} per benchmark)")
    for name, rows in results.items():
        miss = [r for r in rows if labels[r["item_id"]]["kind"] in KINDS and r["status"] not in FLAG]
        for r in miss[:sample]:
            lab = labels[r["item_id"]]
            print(f"[{name}] {r['item_id']} {lab['kind']} {r['status']} ({lab['words']} words planted)")
            planted = re.sub(r"\s+", " ", lab["planted"])
            print(f"    planted: {planted[:200]!r}")
            print(f"    reason: {r['reason']}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, required=True, help="downloads and outputs (created if missing)")
    ap.add_argument("--db", help="a database URL to index into (default: a new SQLite file in the work directory)")
    ap.add_argument("--mb", type=float, default=140, help="about this many MB of this machine's text as background")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval", help="its corpus indexed too")
    args = ap.parse_args()
    work = args.work.resolve()
    t0 = time.perf_counter()
    files, labels = build(work, args.mb, args.seed, args.eval_dir)
    db = args.db or f"sqlite:///{work / 'real_benchmarks.db'}"
    if not args.db:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{work / 'real_benchmarks.db'}{suffix}").unlink(missing_ok=True)
    t1 = time.perf_counter()
    contam("db", "upgrade", "--db", db)
    summary = contam("index", "--corpus", "real", "--db", db, "--progress", "none", *map(str, files))
    (work / "index.json").write_text(summary)
    s = json.loads(summary)
    t2 = time.perf_counter()
    results = {}
    for path in sorted((work / "scan").glob("*.jsonl")):
        out = contam("scan", str(path), "--db", db, "--format", "json", "--progress", "none")
        (work / "out" / f"{path.stem}.json").write_text(out)
        results[path.stem] = json.loads(out)["results"]
    t3 = time.perf_counter()
    print(
        f"corpus: {len(files)} files, {s['documents']} documents, {s['text_mb']:.1f} MB of text; "
        f"build {t1 - t0:.0f} s, index {t2 - t1:.0f} s, scans {t3 - t2:.0f} s\n"
    )
    table(results, labels)
    false_positives(results, labels)
    missed(results, labels)


if __name__ == "__main__":
    main()
