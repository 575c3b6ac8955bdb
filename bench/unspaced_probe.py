"""One-line benchmarks in many languages, from this machine's interface messages: what is found, what
is flagged wrongly, what is too short. Short, formulaic text whose domain the corpus shares: a hard
null for short items, in every script.

Usage: python bench/unspaced_probe.py [--langs th,km] [--work DIR] [--tree CHECKOUT] [--words PYTHON]
       python bench/unspaced_probe.py --words-per-token

The gettext catalogues of each language (/usr/share/locale/LANG/LC_MESSAGES/*.mo; `en`: the English
originals of the German ones) give the text: 70% of the catalogues (by a hash of the file name) are
the corpus, their messages joined into documents of 300-3,000 characters; the items are 1,500
messages of at least 12 characters mostly in the language's script, from the other 30%. Of the
items, 150 are planted verbatim inside a document and 75 with two characters replaced, written into
the text around them with a space either side, or none in scripts written without spaces (Thai,
Lao, Khmer, Burmese, Chinese, Japanese). An item whose tokens a corpus document holds in a row (case,
quotes and spacing aside) is `in_corpus`, truly there; the rest are `clean`, split by whether a
corpus catalogue translates the same English message (`clean_related`: the same message translated
otherwise, which may share most of its words). Each language's work directory keeps the scan's JSON
(scan.json) and the labels (labels.json).

The tokeniser cuts text at spaces and punctuation and gives each CJK character a token, but does
not cut Thai, Lao, Khmer or Burmese into words: a sentence of them is a token or two.
--words-per-token prints how many CJK characters make an English word, over the same messages in
English and in Chinese or Japanese (text.HAN_PER_WORD, KANA_PER_WORD).
--tree runs another checkout's `contam` (its native module built), to compare a tokeniser change
on the same data: session 43 gave each letter of these scripts a token of its own, as CJK
characters have (their ranges added to text._CJK_RANGES), and measured it with this.
--words PYTHON cuts the Thai corpus and items into words before indexing, a space between two,
with pythainlp's dictionary segmenter (newmm) run by PYTHON, an interpreter that has pythainlp
(`python3 -m venv V && V/bin/pip install pythainlp`; its dictionary ships in the wheel): what a
segmenter in the tokeniser would give (th only).
Prints, per language and kind: items, flagged (suspicious or contaminated), contaminated, too_short.
"""

from __future__ import annotations

import argparse
import collections
import gettext
import hashlib
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = {"th": (0x0E00, 0x0E7F), "lo": (0x0E80, 0x0EFF), "km": (0x1780, 0x17FF), "my": (0x1000, 0x109F)}
UNSPACED = {"th", "lo", "km", "my", "zh_CN", "zh_TW", "ja"}  # written into a document without a space
LATIN, CYRILLIC = (0x0041, 0x024F), (0x0400, 0x04FF)
SCRIPTS |= dict.fromkeys(["en", "de", "fr", "es", "it", "pl", "tr", "pt_BR", "nl", "sv", "cs"], LATIN)
SCRIPTS |= dict.fromkeys(["ru", "uk", "bg"], CYRILLIC)
SCRIPTS |= {"zh_CN": (0x4E00, 0x9FFF), "zh_TW": (0x4E00, 0x9FFF), "ja": (0x3040, 0x9FFF), "ko": (0xAC00, 0xD7AF)}
SCRIPTS |= {"ar": (0x0600, 0x06FF), "he": (0x0590, 0x05FF), "hi": (0x0900, 0x097F), "el": (0x0370, 0x03FF)}
SEGMENT = """import json, sys
from pythainlp.tokenize import word_tokenize
for path in sys.argv[1:]:
    rows = [json.loads(line) for line in open(path)]
    for r in rows:
        k = "text" if "text" in r else "question"
        r[k] = " ".join(word_tokenize(r[k], engine="newmm", keep_whitespace=False))
    with open(path, "w") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False) + "\\n" for r in rows)
"""
RUN_TREE = """import sys
tree = sys.argv.pop(1)
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f)]
sys.path.insert(0, tree)
from contam.indexer.cli import main
sys.argv[0] = "contam"
main()
"""


def messages(lang: str) -> list[tuple[str, str, str]]:
    """(catalogue file, English message, translation) of every message of the language's catalogues."""
    out = []
    if lang == "en":  # the English originals, as the German catalogues hold them: a control
        return [(f, k, k) for f, k, _v in messages("de")]
    for f in sorted(Path(f"/usr/share/locale/{lang}/LC_MESSAGES").glob("*.mo")):
        try:
            with f.open("rb") as fh:
                catalog = gettext.GNUTranslations(fh)._catalog  # type: ignore[attr-defined]
        except (UnicodeDecodeError, OSError):  # a catalogue in a legacy charset: left out
            continue
        for key, value in catalog.items():
            msgid = key[0] if isinstance(key, tuple) else key
            if isinstance(value, str) and value.strip() and isinstance(msgid, str) and msgid:
                out.append((f.name, msgid, value.strip()))
    return out


def _token_text(docs: list[str]) -> str:
    """The documents as the index sees them: their tokens (app.core.text.tokenize), a space between
    two and one around each document, so that an item the corpus holds but for case, quotes, spacing
    or a line break ("impossible de renommer %s en %s" in "Impossible de renommer « %s » en « %s »",
    a sed option's help wrapped onto a second line) counts as held."""
    from contam.app.core.text import tokenize

    return "".join(f" {' '.join(tokenize(d))} \n" for d in docs)


def _holds(token_text: str, text: str) -> bool:
    from contam.app.core.text import tokenize

    return f" {' '.join(tokenize(text))} " in token_text


def build(lang: str, work: Path) -> dict[str, dict[str, str]]:
    """Write work/corpus.jsonl and work/bench.jsonl; the labels by item id."""
    lo, hi = SCRIPTS[lang]
    rng = random.Random(0)
    entries = messages(lang)
    held = {f for f, _k, _v in entries if int(hashlib.md5(f.encode()).hexdigest(), 16) % 10 < 3}
    docs: list[str] = []
    cur: list[str] = []
    for f, _k, v in entries:
        if f not in held:
            cur.append(v)
            if sum(map(len, cur)) > rng.randint(300, 3000):
                docs.append("\n".join(cur))
                cur = []
    docs += ["\n".join(cur)] if cur else []
    corpus_ids = {k for f, k, _v in entries if f not in held}
    candidates: dict[str, str] = {}
    for f, k, v in entries:
        if f in held and len(v) >= 12 and 2 * sum(lo <= ord(c) <= hi for c in v) >= len(v):
            candidates.setdefault(v, k)
    chosen = list(candidates.items())
    held_text = _token_text(docs)
    rng.shuffle(chosen)
    labels, items = {}, []
    for i, (text, msgid) in enumerate(chosen[:1500]):
        kind = "verbatim" if i < 150 else "edited" if i < 225 else "clean"
        if kind != "clean":
            copy = text
            if kind == "edited":
                j = rng.randrange(len(text) // 3, max(len(text) // 3 + 1, 2 * len(text) // 3))
                copy = text[:j] + "".join(chr(rng.randint(lo + 1, lo + 0x2F)) for _ in range(2)) + text[j + 2 :]
            d = rng.randrange(len(docs))
            at = rng.randrange(len(docs[d]) // 4, 3 * len(docs[d]) // 4 + 1)
            gap = "" if lang in UNSPACED else " "  # as the script is written
            docs[d] = docs[d][:at] + gap + copy + gap + docs[d][at:]
        elif _holds(held_text, text):
            kind = "in_corpus"
        elif msgid in corpus_ids:
            kind = "clean_related"
        labels[f"{lang}-{i}"] = {"kind": kind, "msgid": msgid}
        items.append({"id": f"{lang}-{i}", "question": text})
    with (work / "corpus.jsonl").open("w") as fh:
        fh.writelines(json.dumps({"id": f"d{n}", "text": t}, ensure_ascii=False) + "\n" for n, t in enumerate(docs))
    with (work / "bench.jsonl").open("w") as fh:
        fh.writelines(json.dumps(it, ensure_ascii=False) + "\n" for it in items)
    return labels


def scan(lang: str, work: Path, tree: Path | None) -> list[dict[str, Any]]:
    """Index the corpus into a new SQLite file and scan the benchmark with `contam` (of `tree`)."""
    runner = work / "run_tree.py"
    runner.write_text(RUN_TREE)
    contam = [sys.executable, str(runner), str(tree)] if tree else [sys.executable, "-m", "contam.indexer.cli"]
    db = f"sqlite:///{work / 'index.db'}"
    (work / "index.db").unlink(missing_ok=True)
    subprocess.run([*contam, "db", "upgrade", "--db", db], check=True, capture_output=True)
    corpus = str(work / "corpus.jsonl")
    subprocess.run(
        [*contam, "index", "--corpus", lang, "--db", db, "--progress", "none", corpus], check=True, capture_output=True
    )
    args = ["scan", "--db", db, "--format", "json", "--progress", "none", str(work / "bench.jsonl")]
    out = subprocess.run([*contam, *args], check=True, capture_output=True, text=True)
    (work / "scan.json").write_text(out.stdout)  # kept, to read the evidence of a flag
    results: list[dict[str, Any]] = json.loads(out.stdout)["results"]
    return results


def words_per_token() -> None:
    """How many CJK characters make an English word, over the same messages in English and in
    Chinese and Japanese (each message of 3 tokens or more in both): text.HAN_PER_WORD and
    KANA_PER_WORD. Chinese gives the ideographs' figure; Japanese, its ideographs counted so, the
    kana's (its other tokens, Latin words and numbers, count one word each)."""
    from contam.app.core.text import _CJK_CHAR, _KANA, tokenize

    han_per_word = []
    for lang in ("zh_CN", "zh_TW", "ja"):
        han = kana = other = english = 0
        for _f, msgid, text in messages(lang):
            a, b = tokenize(msgid), tokenize(text)
            if len(a) < 3 or len(b) < 3:
                continue
            english += len(a)
            for t in b:
                cjk = bool(_CJK_CHAR.match(t))
                kana += cjk and bool(_KANA.match(t))
                han += cjk and not _KANA.match(t)
                other += not cjk
        if lang != "ja":
            han_per_word.append(han / (english - other))
            print(f"{lang}: {han_per_word[-1]:.2f} ideographs per English word ({han:,} over {english - other:,})")
        else:
            mean = sum(han_per_word) / len(han_per_word)
            per = kana / (english - other - han / mean)
            counts = f"{kana:,} kana, {han:,} ideographs"
            print(f"ja: {per:.2f} kana per English word, ideographs at {mean:.2f} per word ({counts})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--langs", default="th,km")
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--tree", type=Path, default=None, help="another checkout whose contam runs")
    ap.add_argument("--words", default=None, help="a Python with pythainlp: Thai cut into words first")
    ap.add_argument("--words-per-token", action="store_true", help="print how many CJK characters make a word")
    args = ap.parse_args()
    if args.words_per_token:
        words_per_token()
        return
    base = args.work or Path(tempfile.mkdtemp(prefix="unspaced-"))
    print(f"{'lang':5s} {'kind':14s} {'items':>6s} {'flagged':>8s} {'contaminated':>13s} {'too_short':>10s}")
    for lang in args.langs.split(","):
        work = base / lang
        work.mkdir(parents=True, exist_ok=True)
        labels = build(lang, work)
        (work / "labels.json").write_text(json.dumps(labels, ensure_ascii=False))
        if args.words and lang == "th":
            (work / "segment.py").write_text(SEGMENT)
            files = [str(work / "segment.py"), str(work / "corpus.jsonl"), str(work / "bench.jsonl")]
            subprocess.run([args.words, *files], check=True)
        results = scan(lang, work, args.tree)
        counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        for r in results:
            c = counts[str(labels[r["item_id"]]["kind"])]
            c["items"] += 1
            c["flagged"] += r["status"] in ("suspicious", "contaminated")
            c["contaminated"] += r["status"] == "contaminated"
            c["too_short"] += r["status"] == "too_short"
        for kind, c in sorted(counts.items()):
            print(
                f"{lang:5s} {kind:14s} {c['items']:6d} {c['flagged']:8d} {c['contaminated']:13d} {c['too_short']:10d}"
            )
    print(f"(work files in {base})")


if __name__ == "__main__":
    main()
