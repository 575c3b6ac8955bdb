"""Metrics on small annotated cases, through index + scan on real databases."""

from __future__ import annotations

import json
import random
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import IndexCorpus
from helpers import make_docs, only_thread, report_by_content, tied_pages
from sqlalchemy import Engine, func, select, update

from contam.app.core.config import SignatureConfig, Thresholds
from contam.app.core.signatures import sign_text
from contam.app.core.text import tokenize
from contam.app.core.types import BenchmarkItem
from contam.app.errors import CorruptFileError, FingerprintMismatch, NotFoundError, StateError
from contam.app.services import scanning
from contam.app.services.corpora import CorpusService
from contam.app.services.results import summarize
from contam.app.services.scanning import Evidence, Scanner
from contam.app.store.schema import corpus_file, document, segment

FILLER = " ".join(f"filler{i} word{i % 7} text{i % 13}" for i in range(1500))  # ~4500 unrelated tokens
Q_VERBATIM = "Which river flows through the ancient city of Baghdad and joins the Euphrates near Basra?"
A_VERBATIM = "The Tigris river which merges with the Euphrates to form the Shatt al-Arab waterway"
Q_EMBEDDED = (
    "What is the name of the process by which green plants convert sunlight water and carbon dioxide into sugar?"
)
Q_EDITED_SRC = (
    "In the novel the old fisherman sails far out into the gulf stream and hooks a giant marlin that "
    "drags his small skiff for three days and nights before he finally kills it"
)
Q_EDITED = (
    "In the novel the old fisherman sails far out into the gulf stream and catches a giant marlin that "
    "pulls his small skiff for three days and nights before he finally kills it"
)
Q_QONLY = "Why do migrating birds fly in a V shaped formation over long distances during autumn months?"
A_QONLY = "Flying in formation reduces air drag for the birds that follow the leader"
CJK = "机器学习是人工智能的一个分支它使计算机能够从数据中学习"
CODE_IN_CORPUS = "def add_numbers(first, second):\n    total = first + second\n    return total * multiplier_value\n"
CODE_ITEM = "def add_numbers(first,second):\n\ttotal=first+second\n\treturn total*multiplier_value"
TEMPLATE = "Answer the following question with one of the options given below please"

CORPUS = [
    {"id": "verbatim", "text": f"{Q_VERBATIM}\nA. Nile\nB. Tigris\nAnswer: {A_VERBATIM}"},
    {"id": "embedded", "text": f"{FILLER} <p><b>{Q_EMBEDDED}</b></p> {FILLER}"},  # inside a long web page
    {"id": "edited", "text": f"{FILLER} {Q_EDITED_SRC} {FILLER}"},
    {"id": "qonly", "text": f"Forum post: {Q_QONLY} I never knew."},
    {"id": "cjk", "text": f"新闻：{CJK}。"},
    {"id": "code", "text": CODE_IN_CORPUS},
] + [{"id": f"tmpl{i}", "text": f"{TEMPLATE} number {i} of many."} for i in range(30)]  # boilerplate

ITEMS = [
    BenchmarkItem("verbatim", 0, question=Q_VERBATIM, choices=("Nile", "Tigris"), answer=A_VERBATIM),
    BenchmarkItem("embedded", 1, question=Q_EMBEDDED, answer="photosynthesis"),
    BenchmarkItem("edited", 2, question=Q_EDITED),
    BenchmarkItem("qonly", 3, question=Q_QONLY, answer=A_QONLY),
    BenchmarkItem("short", 4, question="Is ice cold?", answer="Yes"),
    BenchmarkItem("cjk", 5, question=CJK),
    BenchmarkItem("code", 6, question=CODE_ITEM),
    BenchmarkItem("template", 7, question=f"{TEMPLATE}: what colour is the clear daytime sky on a sunny day"),
    BenchmarkItem("clean", 8, question="Tides on the open ocean are driven mostly by the gravity of the moon"),
]


@pytest.fixture
def scanner(engine: Engine, index_corpus: IndexCorpus) -> Scanner:
    index_corpus(engine, CORPUS)
    return Scanner(engine)


def test_annotated_cases(scanner: Scanner) -> None:
    res = {r.item.item_id: r for r in scanner.scan(ITEMS)}
    s = {k: r.score for k, r in res.items()}
    # verbatim: everything found, answer with the question
    assert s["verbatim"].status == "contaminated"
    assert s["verbatim"].own_coverage == 1.0 and s["verbatim"].answer_with_question
    # embedded in a 9,000-token page and wrapped in markup: containment, not Jaccard
    assert s["embedded"].status == "contaminated" and s["embedded"].longest_match >= 19
    assert s["embedded"].answer_found is False
    ev = res["embedded"].evidence[0]
    assert ev.document_id == "embedded" and ev.corpus == "web"
    marked = "".join(ev.excerpt[a:b] for a, b in ev.highlights)
    assert "Which" not in marked and "photosynthesis" not in marked and "green plants convert" in marked
    assert ev.excerpt_start + ev.excerpt.find("What is") == CORPUS[1]["text"].find("What is")
    # two words changed: not everything matches, still found
    assert s["edited"].status in ("suspicious", "contaminated")
    assert 0.8 < s["edited"].own_coverage < 1.0
    # question without its answer
    assert s["qonly"].question_found and s["qonly"].answer_found is False and not s["qonly"].answer_with_question
    assert s["qonly"].status == "suspicious"
    # too short for n=5: never called clean
    assert s["short"].status == "too_short" and "no field has 4 tokens" in res["short"].score.reason
    # CJK: one token per ideograph, found
    assert s["cjk"].status == "contaminated"
    # code re-indented and re-spaced still matches
    assert s["code"].status == "contaminated"
    # boilerplate in 30 documents is left out: the item is not flagged on it
    assert s["template"].status == "clean" and s["template"].roles["question"].common_ngrams > 0
    assert s["clean"].status == "clean" and res["clean"].evidence == []


Q_HIDDEN = "Which metal has the highest melting point of all the elements in the periodic table?"
A_HIDDEN = "Tungsten melts at about three thousand four hundred degrees"


def test_a_copy_between_angle_brackets_that_are_no_tag_is_found(engine: Engine, index_corpus: IndexCorpus) -> None:
    """A new user's trial: a copy inside an HTML comment, or in code between a "<" and a ">"
    (`if n<limit: ... x>0`), or in a Markdown autolink was clean with no evidence: the tokeniser
    blanked every comment and any `<name ...>` of up to 400 characters. A tag's attributes are
    now read as HTML writes them (a tag without values holds one at most), a comment's text
    stays, and each copy is found."""
    pages = {
        "comment": f"<html><body><!-- {Q_HIDDEN} Answer: {A_HIDDEN} --><p>Hello</p></body></html>",
        "code": f"if count<limit:\n    print('{Q_HIDDEN} Answer: {A_HIDDEN}')  # value>0\n",
        "autolink": f"See <{Q_HIDDEN} Answer: {A_HIDDEN}> for details.",
        "tagged": f'<div class="q" data-x=1><b>{Q_HIDDEN}</b> <i title="a>b">Answer:</i> {A_HIDDEN}</div>',
        # words alone between "<" and ">" are no tag (a probe: a one-sentence item in an autolink was lost)
        "words": f"See <{Q_HIDDEN.rstrip('?')}> and <{A_HIDDEN}> for details.",
    }
    items = [BenchmarkItem("hidden", 0, question=Q_HIDDEN, answer=A_HIDDEN)]
    for name, text in pages.items():
        index_corpus(engine, [{"id": name, "text": text}], name)
        (r,) = Scanner(engine, corpora=[name]).scan(items)
        assert r.score.status == "contaminated", (name, r.score.reason)
        assert r.score.own_coverage == 1.0 and r.score.answer_found, name
        ev = r.evidence[0]
        marked = "".join(ev.excerpt[a:b] for a, b in ev.highlights)
        assert "highest melting point" in marked and "class" not in marked and "title" not in marked, name


def test_template_shared_by_items_is_left_out(scanner: Scanner) -> None:
    prefix = "Read the question carefully and choose the single best answer from the list"
    items = [
        BenchmarkItem(f"t{i}", i, question=f"{prefix} item number {i} about topic {i * 7} today") for i in range(3)
    ]
    res = scanner.scan(items)
    assert all(r.score.roles["question"].shared_ngrams > 0 for r in res)


def test_thresholds_are_parameters(scanner: Scanner, engine) -> None:  # type: ignore[no-untyped-def]
    strict = Scanner(
        engine,
        thresholds=Thresholds(
            contaminated_coverage=1.01, suspicious_coverage=1.01, longest_match=10_000, opening_run=10_000
        ),
    )
    r = strict.scan([ITEMS[0]])[0]
    assert r.score.status == "clean" and r.score.own_coverage == 1.0


def test_unknown_corpus_and_mismatched_settings(scanner: Scanner, engine: Engine, index_corpus: IndexCorpus) -> None:
    with pytest.raises(NotFoundError):
        Scanner(engine, ["nope"])
    index_corpus(engine, [{"id": "x", "text": "other corpus text here"}], "other", cfg=SignatureConfig(ngram_n=13))
    with pytest.raises(FingerprintMismatch, match="different signature settings"):
        Scanner(engine)
    assert Scanner(engine, ["other"]).cfg.ngram_n == 13


def test_pointer_only_corpus_reads_evidence_from_source(engine: Engine, index_corpus: IndexCorpus) -> None:
    index_corpus(engine, CORPUS, "ptr", store_text=False)
    r = Scanner(engine, ["ptr"]).scan([ITEMS[0]])[0]
    assert r.score.status == "contaminated" and Q_VERBATIM[:30] in r.evidence[0].excerpt


def test_a_moved_file_indexed_again_where_it_is_now_is_read_from_there(
    engine: Engine, index_corpus: IndexCorpus, tmp_path: Path
) -> None:
    """A corpus that keeps no text, its file moved: the scan says the file is gone and to index it
    again where it is now. Indexing the moved file found its content indexed already and changed
    nothing, so the scan failed again (a trial). The record follows a file whose recorded path is
    gone; a copy beside a file still there is indexed once, under the first path, as before."""
    src = tmp_path / "pages.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in CORPUS))
    index_corpus(engine, [src], "ptr", store_text=False)
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(src.read_bytes())
    twin = index_corpus(engine, [copy], "ptr", store_text=False).files[0]
    assert twin.status == "unchanged" and twin.indexed_as == str(src)
    moved = tmp_path / "moved" / "pages.jsonl"
    moved.parent.mkdir()
    src.rename(moved)
    copy.unlink()
    with pytest.raises(StateError, match=r"the file is gone; .* index it again where it is now"):
        Scanner(engine, ["ptr"]).scan([ITEMS[0]])
    later = moved.parent / "z-copy.jsonl"  # a copy of it in the same run, after it: its twin, not a second move
    later.write_bytes(moved.read_bytes())
    again = {f.path: f for f in index_corpus(engine, [moved.parent], "ptr", store_text=False).files}
    assert (again[str(moved)].status, again[str(moved)].indexed_as) == ("unchanged", str(moved))
    assert (again[str(later)].status, again[str(later)].indexed_as) == ("unchanged", str(moved))
    assert Scanner(engine, ["ptr"]).scan([ITEMS[0]])[0].score.status == "contaminated"
    later.unlink()  # the record is the moved file's: with its copy gone, it is still read
    assert Scanner(engine, ["ptr"]).scan([ITEMS[0]])[0].score.status == "contaminated"


def test_pointer_only_text_is_read_from_its_field_or_the_scan_says_why_not(
    engine: Engine, index_corpus: IndexCorpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A corpus that keeps no text reads a candidate document again from its file: from the
    field the file was indexed from (it read "text" whatever the field, found nothing, and the
    verbatim copy came out clean), and only while the file holds the text indexed: a file moved
    or edited since is an error naming it, never a verdict of clean. A file is read once for the
    documents a chunk asks of it (it was read from its start for each: 272 items against a 25 MB
    file took 14 s, 0.85 s read once)."""
    src = tmp_path / "pages.jsonl"
    src.write_text("".join(json.dumps({"id": d["id"], "content": d["text"]}) + "\n" for d in CORPUS))
    index_corpus(engine, [src], "ptr", store_text=False, text_field="content")
    reads = []
    read_documents = scanning.read_documents
    monkeypatch.setattr(scanning, "read_documents", lambda *a: reads.append(a[0]) or read_documents(*a))
    results = {r.item.item_id: r for r in Scanner(engine, ["ptr"], workers=1).scan(ITEMS)}
    r = results["verbatim"]
    assert r.score.status == "contaminated" and Q_VERBATIM[:30] in r.evidence[0].excerpt
    flagged = [i for i, r in results.items() if r.score.status != "clean"]
    assert len(flagged) >= 3 and reads == [src]  # the file read once for all its documents, not once each
    monkeypatch.undo()

    original = src.read_text()
    src.write_text('{"id": "new", "content": "a line added at the top"}\n' + original)  # every position moves
    with pytest.raises(StateError, match=r"'ptr' keeps no text.*'verbatim'.*pages.jsonl: the file changed since"):
        Scanner(engine, ["ptr"]).scan([ITEMS[0]])
    src.unlink()
    with pytest.raises(StateError, match=r"pages.jsonl: the file is gone; put the file back"):
        Scanner(engine, ["ptr"]).scan([ITEMS[0]])
    src.write_text(original)
    broken = CorruptFileError(f"{src}: cannot read to the end (EOFError)")
    monkeypatch.setattr(scanning, "read_documents", lambda *a: (_ for _ in ()).throw(broken))
    with pytest.raises(
        StateError, match=r"pages.jsonl: .*pages.jsonl: cannot read to the end \(EOFError\); put the file"
    ):
        Scanner(engine, ["ptr"], workers=1).scan([ITEMS[0]])
    monkeypatch.undo()
    assert Scanner(engine, ["ptr"]).scan([ITEMS[0]])[0].score.status == "contaminated"  # put back: read again
    with engine.begin() as conn:  # as a file indexed before the field was kept (migration 0015)
        conn.execute(update(corpus_file).values(text_field=None))
    with pytest.raises(StateError, match=r"indexed before contam kept which field a file's text came from"):
        Scanner(engine, ["ptr"]).scan([ITEMS[0]])


def test_a_corpus_without_its_text_keeps_only_the_current_version_of_a_file(
    engine: Engine, index_corpus: IndexCorpus, tmp_path: Path
) -> None:
    """A file changed and indexed again, as the error says to do: its older version's documents
    stayed and pointed at the new file, so every scan that met one failed, whatever was indexed
    after (a review). A corpus that keeps no text can never read them again: they go."""
    src = tmp_path / "pages.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in CORPUS))
    index_corpus(engine, [src], "ptr", store_text=False)
    assert Scanner(engine, ["ptr"]).scan([ITEMS[0]])[0].score.status == "contaminated"
    src.write_text(src.read_text().replace("Answer: The Tigris", "Answer: the Tigris"))
    with pytest.raises(StateError, match="the file changed since it was indexed"):
        Scanner(engine, ["ptr"]).scan([ITEMS[0]])
    summary = index_corpus(engine, [src], "ptr", store_text=False)
    assert summary.as_dict()["files_indexed"] == 1 and summary.as_dict()["paths_with_older_versions"] == []
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(document)).scalar_one() == len(CORPUS)
    assert Scanner(engine, ["ptr"]).scan([ITEMS[0]])[0].score.status == "contaminated"
    index_corpus(engine, [src], "kept")  # a corpus that keeps its text keeps both versions, as before
    src.write_text(src.read_text().replace("Answer: the Tigris", "Answer: THE Tigris"))
    again = index_corpus(engine, [src], "kept")
    assert again.as_dict()["paths_with_older_versions"] == [str(src)]


def test_the_answer_found_after_the_question_is_highlighted(engine: Engine, index_corpus: IndexCorpus) -> None:
    """answer_found said yes, and the training text marked the question and a choice aligned with
    it ("Scott") but not the answer where it was found ("Amundsen"; a new user's trial)."""
    q = "Which Norwegian explorer led the first expedition to reach the geographic South Pole in December 1911?"
    page = f"Trivia night. {q} The answer is Amundsen, who beat Scott by five weeks. Next round."
    index_corpus(engine, [{"id": "trivia", "text": page}])
    item = BenchmarkItem("pole", 0, question=q, choices=("Scott", "Amundsen", "Shackleton", "Peary"), answer="Amundsen")
    r = Scanner(engine).scan([item])[0]
    assert r.score.status == "contaminated" and r.score.answer_found
    ev = r.evidence[0]
    marked = [ev.excerpt[a:b] for a, b in ev.highlights]
    assert any("Amundsen" in m for m in marked), marked
    # an answer given as one of the choices has no field of its own: the per-field figures and
    # the `field=answer` filter left it out while answer_found said yes (a careful user's check)
    assert list(r.score.roles) == ["question", "choices", "answer"] and r.score.roles["answer"].found
    assert summarize([r], Thresholds())["per_field"]["answer"] == {"items": 1, "found": 1, "found_share": 1.0}


def test_an_answer_given_as_the_letter_of_its_choice_is_found(engine: Engine, index_corpus: IndexCorpus) -> None:
    """Exam pages and evaluation prompts list the choices under letters and give the answer as
    one ("Answer: C"): answer_found said no, so such a copy read as the question without its
    answer (two helpers' trials, MMLU and ARC layouts). The letter counts when the page lists
    every choice under consecutive letters and names the right one after them; not a wrong letter,
    not a letter that starts the next question, not one the item uses as a word ("a")."""
    q = "Which metal stays liquid at room temperature and was once used in most clinical thermometers?"
    choices = ("Sodium", "Mercury", "Gallium", "Tin")
    listed = "A. Sodium\nB. Mercury\nC. Gallium\nD. Tin"
    pages = {
        "key": f"Chemistry quiz, part two.\n{q}\n{listed}\nAnswer: B\n\nNext: the noble gases.",
        "wrong": f"Chemistry quiz, part two.\n{q}\n{listed}\nAnswer: C\n\nNext: the noble gases.",
        "none": f"Chemistry quiz, part two.\n{q}\n{listed}\n\nNext: the noble gases.",
        "next": f"Chemistry quiz, part two.\n{q}\n{listed}\nB vitamins are the next topic of the course.",
        # the next question read as a key (a review): after its number
        "numbered": f"Chemistry quiz, part two.\n1. {q}\n{listed}\n\n2. B cells mature in which organ of the body?",
    }
    found = {}
    for name, page in pages.items():
        index_corpus(engine, [{"id": name, "text": page}], name)
        r = Scanner(engine, [name]).scan([BenchmarkItem("hg", 0, question=q, choices=choices, answer="Mercury")])[0]
        found[name] = (r.score.answer_found, r.score.roles["answer"].found, r.score.status)
        if name == "key":
            ev = r.evidence[0]
            assert any(ev.excerpt[a - 8 : b] == "Answer: B" for a, b in ev.highlights), ev.highlights
    assert found["key"] == (True, True, "contaminated"), found
    assert not any(found[name][0] or found[name][1] for name in ("wrong", "none", "next", "numbered")), {
        k: v[:2] for k, v in found.items()
    }
    # "A" is a word of this item ("a liquid"): after the choices it may be prose, never a label
    q2 = "Which metal is a liquid at room temperature and was once used in most clinical thermometers?"
    page = f"Quiz.\n{q2}\nA. Mercury\nB. Sodium\nC. Gallium\nD. Tin\nAnswer: A"
    index_corpus(engine, [{"id": "own", "text": page}], "own")
    item = BenchmarkItem("hg2", 0, question=q2, choices=("Mercury", "Sodium", "Gallium", "Tin"), answer="Mercury")
    assert not Scanner(engine, ["own"]).scan([item])[0].score.answer_found


def test_a_key_beside_one_wrong_choice_edited_is_found(engine: Engine, index_corpus: IndexCorpus) -> None:
    """A trial: a page listing the choices with one wrong choice edited ("D. Argon" for "D.
    Helium") and then "Answer: C" had the answer not found, where the same page with D as in the
    item had it. Of four choices or more, one wrong one may be another text under its letter,
    its letter where it would stand; not the right one, not a letter out of place. (With two
    edited, fewer than half the others are listed, and the right choice's words after the
    question are the answer given, as in prose.)"""
    q = "Which gas do green plants take in from the air to make their food by photosynthesis?"
    choices = ("Oxygen", "Nitrogen", "Carbon dioxide", "Helium")
    pages = {
        "last": (q + "\nA. Oxygen\nB. Nitrogen\nC. Carbon dioxide\nD. Argon\nAnswer: C\n\nNext: roots.", True),
        "middle": (q + "\nA. Oxygen\nB. Hydrogen\nC. Carbon dioxide\nD. Helium\nAnswer: C\n\nNext: roots.", True),
        "right": (q + "\nA. Oxygen\nB. Nitrogen\nC. Carbon gas\nD. Helium\nAnswer: C\n\nNext: roots.", False),
        # the edited choice's letter is not where it would stand: no list of the item's choices
        "skipped": (q + "\nA. Oxygen\nB. Nitrogen\nC. Carbon dioxide\nAnswer: C\n\nNext: roots.", False),
        # the last choice's text goes on past the words any choice has: the letter is prose
        "prose": (
            q + "\nA. Oxygen\nB. Nitrogen\nC. Carbon dioxide\nD. Argon and a few other gases "
            "that the lamps of the old street held, as C says",
            False,
        ),
        # a fifth choice's letter, the next list's letter, and (answer Oxygen) the next sentence's
        # article after the edited last choice are no keys (a review)
        "fifth": (q + "\nA. Oxygen\nB. Nitrogen\nC. Carbon dioxide\nD. Argon\nE. C and O only", False),
        "next list": (q + "\nA. Oxygen\nB. Nitrogen\nC. Carbon dioxide\nD. Water C. Carbon monoxide", False),
        "article": (q + "\nA. Oxygen\nB. Nitrogen\nC. Carbon dioxide\nD. Argon\nA leaf is green.", False),
    }
    for name, (page, found) in pages.items():
        index_corpus(engine, [{"id": name, "text": f"Biology quiz, part one.\n{page}"}], name.replace(" ", "-"))
        answer = "Oxygen" if name == "article" else "Carbon dioxide"
        item = BenchmarkItem("co2", 0, question=q, choices=choices, answer=answer)
        r = Scanner(engine, [name.replace(" ", "-")]).scan([item])[0]
        assert (r.score.answer_found, r.score.roles["answer"].found) == (found, found), (name, r.score.reason)
    # of three choices, one edited is a third of the list: no list of them
    three = BenchmarkItem("t3", 0, question=q, choices=("Oxygen", "Carbon dioxide", "Helium"), answer="Carbon dioxide")
    page = f"Quiz.\n{q}\nA. Oxygen\nB. Carbon dioxide\nC. Argon\nAnswer: B"
    index_corpus(engine, [{"id": "three", "text": page}], "three")
    assert not Scanner(engine, ["three"]).scan([three])[0].score.answer_found


def test_a_chinese_pages_answer_label_is_one_word_of_two_characters(engine: Engine, index_corpus: IndexCorpus) -> None:
    """Lengths are words: "答案" (answer) is one word of two characters, a token each, and a page
    giving the key as "答案：B" had its answer not found where "答：B" and "Answer: B" had it (a
    trial). Two characters and then a letter are no key in English text ("What is a ..." after the
    choices), so the label is as long as a word of the item's own script."""
    q = "下列哪一种金属在室温下是液态的，并且曾经被广泛用于制造体温计？"
    choices = ("钠", "汞", "镓", "锡")
    listed = "A. 钠\nB. 汞\nC. 镓\nD. 锡"
    for name, key, found in [("zh", "答案：B", True), ("zh1", "答：B", True), ("zhc", "答案：C", False)]:
        index_corpus(
            engine, [{"id": name, "text": f"化学测验第二部分。\n{q}\n{listed}\n{key}\n\n下一节：惰性气体。"}], name
        )
        r = Scanner(engine, [name]).scan([BenchmarkItem("hg", 0, question=q, choices=choices, answer="汞")])[0]
        assert (r.score.answer_found, r.score.roles["answer"].found) == (found, found), (name, r.score.reason)
    # a kana-heavy item's words average 4 tokens, its label no more than 2: three kana and a letter
    # are the text going on (a review: "つぎに C" was read as the key C)
    kq = "つぎの うちで へやの なかで いちばん おおきな どうぶつは どれですか ひとつ えらんで ください"
    kana = ("いぬ", "ねこ", "ぞう", "ねずみ")
    klisted = "A. いぬ\nB. ねこ\nC. ぞう\nD. ねずみ"
    for name, key, found in [("ja", "答え C", True), ("ja3", "つぎに C さんの はなし", False)]:
        index_corpus(engine, [{"id": name, "text": f"もんだい\n{kq}\n{klisted}\n{key}\n"}], name)
        r = Scanner(engine, [name]).scan([BenchmarkItem("k", 0, question=kq, choices=kana, answer="ぞう")])[0]
        assert r.score.answer_found is found, (name, r.score.reason)
    # an English item's label stays one token: two words, then its letter, are the next question
    q2 = "Which metal stays liquid at room temperature and was once used in most clinical thermometers?"
    page = f"Quiz.\n{q2}\nA. Sodium\nB. Mercury\nC. Gallium\nD. Tin\nWhat is B12 and why?"
    index_corpus(engine, [{"id": "en", "text": page.replace("What is B12", "Say it: B")}], "en")
    item = BenchmarkItem("hg2", 0, question=q2, choices=("Sodium", "Mercury", "Gallium", "Tin"), answer="Mercury")
    assert not Scanner(engine, ["en"]).scan([item])[0].score.answer_found


def test_a_chat_prompt_without_its_reply_is_the_question_without_its_answer(
    engine: Engine, index_corpus: IndexCorpus, tmp_path: Path
) -> None:
    """A chat benchmark's reference reply, its last message, is its answer (the reader): a page
    holding the prompt alone is the question without its answer, where the reply read as part of
    the question left it clean; a page holding both has its answer found."""
    from contam.app.readers.benchmark import read_benchmark

    prompt = "Explain why the lighthouse keepers of Stroma left the island in nineteen sixty two"
    reply = "The island's school closed and the ferry stopped, so the last families moved to Caithness"
    row = {"id": "a", "messages": [{"role": "user", "content": prompt}, {"role": "assistant", "content": reply}]}
    (item,), _mapping = read_benchmark((json.dumps(row) + "\n").encode(), "chat.jsonl")
    index_corpus(engine, [{"id": "ask", "text": f"Forum post. {prompt}? Any ideas welcome."}], "asked")
    index_corpus(engine, [{"id": "qa", "text": f"Q: {prompt}\nA: {reply}."}], "answered")
    asked = Scanner(engine, ["asked"]).scan([item])[0].score
    assert (asked.status, asked.reason, asked.answer_found) == (
        "suspicious",
        "the question is in one document, without its answer",
        False,
    )
    answered = Scanner(engine, ["answered"]).scan([item])[0].score
    assert answered.status == "contaminated" and answered.answer_found and answered.roles["answer"].found


def test_a_frame_shared_with_the_item_copied_is_not_this_item_s_question(
    engine: Engine, index_corpus: IndexCorpus
) -> None:
    """48 chats share one question frame ("... what X is for and when I would use it?"); a page
    holds one item's question alone, and a phrase of another's reply ("can be used to") nearby.
    The three candidates measured were the frame's items with the shortest replies (the largest
    shares of their text held), none of them the copy, so the other item kept the frame as its own
    text and was "the question ... in one document" (a probe: a clean item `suspicious`). The item
    holding most text the other lacks there is measured too: the copy."""
    import random

    vocabulary = (
        "the keeper lamp tower island ferry harbour storm pier boat light oil bread winter summer night watch "
        "relief crew engine signal fog horn rock cliff wave tide chart log book station supply coal paraffin "
        "lens mirror clock bell rope ladder door stair window roof wall garden sheep cow goat hen egg milk "
        "butter cheese flour salt sugar tea coffee letter post parcel doctor priest teacher school child wife "
        "husband brother sister mother father friend visitor stranger sailor fisher trawler net hook line catch "
        "market price money shilling pound week month year day morning evening noon dusk dawn"
    )
    words = vocabulary.split()
    rng = random.Random(5)
    frame = "I am new to Linux. Could you tell me what {} is for and when I would use it?"
    tools = [f"tool{k}" for k in range(48)]
    tools[30] = "deb-substvars"  # its copy's two-word name: four of its 3-grams there the other lacks
    sizes = [50, 36, 41, 23, 20, 50, 75, 27, 23, 54, 56, 22, 36, 55, 23, 66, 21, 28, 53, 39, 35, 33, 38, 24]
    sizes += [40, 22, 63, 57, 20, 53, 40, 40, 34, 66, 34, 28, 73, 26, 27, 35, 26, 73, 45, 28, 42, 21, 25, 45]
    replies = [" ".join(rng.choice(words) for _ in range(k)) + "." for k in sizes]
    replies[5] = replies[5][:-1] + " and it can be used to sign files."
    items = [
        BenchmarkItem(f"i{k}", k, question=frame.format(t), answer=a)
        for k, (t, a) in enumerate(zip(tools, replies, strict=True))
    ]
    page = (
        "The arguments in this group can be used to specify the attributes of this resource. Some attributes "
        f"are not given arguments in this group but can be set in other ways.\n\n{frame.format(tools[30])}\n\n"
        "Provide the argument on the command line with a fully specified name, or set the property core/project."
    )
    index_corpus(engine, [{"id": "page", "text": page}])
    flagged = {r.item.item_id: r.score.status for r in Scanner(engine).scan(items) if r.score.status != "clean"}
    assert flagged == {"i30": "suspicious"}, flagged


def test_a_short_answer_s_words_elsewhere_are_not_the_answer_field_found(
    engine: Engine, index_corpus: IndexCorpus
) -> None:
    """A probe of TriviaQA-style questions about manual pages: the page of another subcommand
    holds most of a short answer's words after the question ("gcloud alpha compute
    target-http-proxies describe" for "... list"), and the result said both "its answer was not
    found with it" and, for the answer field, found. A short answer's field is found where the
    answer is given, as answer_found says; its coverage still says what the page holds."""
    q = "Which command prints every target HTTP proxy of the current project in a table?"
    answer = "gcloud compute target-http-proxies list"
    pages = {
        "other": f"{FILLER[:600]} {q} Run gcloud alpha compute target-http-proxies describe NAME. {FILLER[-200:]}",
        "given": f"{FILLER[:600]} {q} Answer: {answer}. {FILLER[-200:]}",
    }
    got = {}
    for name, page in pages.items():
        index_corpus(engine, [{"id": name, "text": page}], name)
        got[name] = Scanner(engine, [name]).scan([BenchmarkItem("t", 0, question=q, answer=answer)])[0].score
    other, given = got["other"], got["given"]
    assert not other.answer_found and other.roles["answer"].coverage >= 0.4, other.roles
    assert not other.roles["answer"].found, (other.reason, other.roles)
    assert given.answer_found and given.roles["answer"].found and given.status == "contaminated", given.reason


def test_a_short_answer_after_the_worked_solution_is_the_answer_field_found(
    engine: Engine, index_corpus: IndexCorpus
) -> None:
    """A page gives the question, the worked steps, then the final number: answer_found said
    yes (the solution gives it away) but the answer field said not found, the alignment keeping
    the item's order (question, answer, solution), and the evidence did not mark the number (a
    new user's trial with a GSM8K layout)."""
    q = "A baker sells 48 muffins on Monday and half as many on Tuesday. How many muffins does she sell in all?"
    steps = "On Tuesday she sells 48 / 2 = 24 muffins. In all she sells 48 + 24 muffins over the two days."
    page = f"Worksheet 3.\n{q}\n{steps}\nFinal answer: 72\n\nWorksheet 4 starts here."
    index_corpus(engine, [{"id": "ws", "text": page}])
    r = Scanner(engine).scan([BenchmarkItem("m", 0, question=q, solution=steps, answer="72")])[0]
    assert r.score.status == "contaminated" and r.score.answer_found
    assert r.score.roles["answer"].found, r.score.roles
    ev = r.evidence[0]
    assert any(ev.excerpt[a:b] == "72" for a, b in ev.highlights), [ev.excerpt[a:b] for a, b in ev.highlights]
    # the answer given first, the steps after it (a review: the field read not found)
    page = f"Worksheet 3.\n{q}\nAnswer: 72. Explanation: {steps}\n\nWorksheet 4 starts here."
    index_corpus(engine, [{"id": "first", "text": page}], "first")
    r = Scanner(engine, ["first"]).scan([BenchmarkItem("m", 0, question=q, solution=steps, answer="72")])[0]
    assert r.score.answer_found and r.score.roles["answer"].found, r.score.roles
    # the number further on is chance (a review: "Next problem: a train runs 72 miles")
    page = f"Worksheet 3.\n{q}\n{steps}\n\nNext problem: a train runs 72 miles in two hours."
    index_corpus(engine, [{"id": "ws2", "text": page}], "later")
    r = Scanner(engine, ["later"]).scan([BenchmarkItem("m", 0, question=q, solution=steps, answer="72")])[0]
    assert r.score.answer_found and not r.score.roles["answer"].found, r.score.roles


def test_a_copy_in_other_unicode_forms_and_broken_lines_is_found(engine: Engine, index_corpus: IndexCorpus) -> None:
    """The same words in decomposed form (NFD: accents written apart), with soft hyphens and
    zero-width spaces inside words, and hyphenated at line ends as text from PDF is: a probe
    found each scored clean or suspicious, the tokeniser cutting words at the invisible marks."""
    import unicodedata

    q = (
        "Quelle théorie générale célèbre, élaborée entre mille neuf cent sept et mille neuf cent quinze, "
        "décrit la gravitation comme une déformation géométrique de l'espace-temps à quatre dimensions?"
    )
    copy = unicodedata.normalize("NFD", q)
    copy = copy.replace("gravitation", "gravi\u00adta\u00adtion").replace("espace", "es\u200bpace")
    copy = copy.replace("déformation ", "dé-\n  formation ").replace("géométrique", "géomé-\r\ntrique")
    page = f"Notes de cours, chapitre trois.\n{copy}\nRéponse : la relativité générale d'Einstein."
    index_corpus(engine, [{"id": "cours", "text": page}, {"id": "autre", "text": "Une page sans rapport. " * 40}])
    r = Scanner(engine).scan([BenchmarkItem("q", 0, question=q, answer="la relativité générale")])[0]
    assert r.score.status == "contaminated" and r.score.own_coverage == 1.0, (r.score.status, r.score.reason)
    ev = r.evidence[0]
    assert page[ev.char_start : ev.char_end].startswith(copy[:20]) and copy[-12:] in page[ev.char_start : ev.char_end]


def test_the_evidence_holds_the_copy_not_an_earlier_repeat_of_its_opening(
    engine: Engine, index_corpus: IndexCorpus
) -> None:
    """The item's first words also end the sentence before the copy: the alignment took them
    there, so the evidence's span began in that sentence and its highlight marked them there,
    not in the copy (a probe of the evidence)."""
    q = "In the city of Bath which Roman goddess was worshipped at the sacred hot spring beside the great temple?"
    before = "The festival is held every summer in the city of Bath and draws many visitors."
    page = f"{before}\n\n{q} Answer: Sulis Minerva."
    index_corpus(engine, [{"id": "bath", "text": page}])
    r = Scanner(engine).scan([BenchmarkItem("bath", 0, question=q, answer="Sulis Minerva")])[0]
    assert r.score.status == "contaminated"
    ev = r.evidence[0]
    assert ev.char_start == page.index(q), page[ev.char_start : ev.char_end]
    marked = [ev.excerpt[a:b] for a, b in ev.highlights]
    assert marked[0].startswith("In the city of Bath which"), marked


def test_a_scan_reads_only_the_corpora_it_began_with(engine: Engine, index_corpus: IndexCorpus) -> None:
    """A corpus indexed while a scan runs is none of the scan's: when the scan's corpora were
    every corpus there was, it was read unfiltered, and a scan of `--corpus web` cited the new
    corpus's copies (88% contaminated where 16% was right; a probe of concurrent use)."""
    index_corpus(engine, [{"id": "unrelated", "text": FILLER * 3}], "web")
    chosen, every = Scanner(engine, ["web"]), Scanner(engine)
    index_corpus(engine, CORPUS, "planted")  # indexed after the scans began
    for scanner in (chosen, every):
        results = scanner.scan(ITEMS)
        assert {r.score.status for r in results} <= {"clean", "too_short"}, [r.score.reason for r in results]
        assert not [e for r in results for e in r.evidence if e.corpus == "planted"]
    assert Scanner(engine).scan(ITEMS[:1])[0].score.status == "contaminated"  # a scan begun now reads it


def test_a_scan_whose_corpus_is_deleted_meanwhile_fails(engine: Engine, index_corpus: IndexCorpus) -> None:
    """`contam corpora delete` while a `contam scan` read the corpus: the scan went on, its later
    items clean, and exited 0 (a CI gate passed on a corpus that was no longer there). A corpus
    made again under the deleted one's name is not the one the scan began with either."""
    index_corpus(engine, CORPUS, "web")
    scanner = Scanner(engine)
    CorpusService(engine).delete("web")
    with pytest.raises(StateError, match="corpus 'web' was deleted while this scan read it"):
        scanner.scan(ITEMS)
    index_corpus(engine, CORPUS, "web")
    with pytest.raises(StateError, match="deleted while this scan read it"):
        scanner.scan(ITEMS)
    assert Scanner(engine).scan(ITEMS[:1])[0].score.status == "contaminated"


def test_a_corpus_deleted_after_the_last_chunk_read_it_fails_the_scan(
    engine: Engine, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each chunk asks whether its corpora are there after it has read them; the scan asks once
    more before its last results go out, for a corpus deleted after the last chunk asked."""
    index_corpus(engine, CORPUS, "web")
    scanner = Scanner(engine)
    chunk_read = Scanner._load_checked

    def then_deleted(self: Scanner, candidates: Any) -> Any:
        docs = chunk_read(self, candidates)
        CorpusService(engine).delete("web")
        return docs

    monkeypatch.setattr(Scanner, "_load_checked", then_deleted)
    with pytest.raises(StateError, match="deleted while this scan read it"):
        scanner.scan(ITEMS[:2])


def test_the_answer_marked_is_the_first_after_the_question(engine: Engine, index_corpus: IndexCorpus) -> None:
    """A free-text answer named again in the next paragraph: the evidence's span ran on to that
    repeat and marked the answer twice (a probe of the evidence); the answer is where it is first
    given after the question."""
    q = "Which Scottish engineer improved the Newcomen steam engine with a separate condenser for efficiency?"
    page = f"Quiz. {q} Answer: James Watt.\n\nJames Watt was born in Greenock in 1736 and died in 1819 at Handsworth."
    index_corpus(engine, [{"id": "quiz", "text": page}])
    r = Scanner(engine).scan([BenchmarkItem("watt", 0, question=q, answer="James Watt")])[0]
    assert r.score.status == "contaminated" and r.score.answer_found
    ev = r.evidence[0]
    assert page[ev.char_start : ev.char_end].endswith("Answer: James Watt"), page[ev.char_start : ev.char_end]
    marked = [ev.excerpt[a:b] for a, b in ev.highlights]
    assert sum("James Watt" in m for m in marked) == 1, marked


def test_a_too_short_item_is_no_corpus_s_contamination(engine: Engine, index_corpus: IndexCorpus) -> None:
    """A too_short item held whole by a document had that document's evidence say "contaminated",
    and the corpus's per-corpus figures counted it: one corpus, and its share passed the report's
    (a careful user's check)."""
    index_corpus(engine, [{"id": "d-tiny", "text": "Capital of Peru? Lima."}])
    r = Scanner(engine).scan([BenchmarkItem("tiny", 0, question="Capital of Peru?", answer="Lima")])[0]
    assert r.score.status == "too_short" and r.evidence and {e.status for e in r.evidence} == {"too_short"}
    summary = summarize([r], Thresholds())
    assert summary["counts"]["contaminated"] == 0 and summary["per_corpus"]["web"]["contaminated"] == 0


WIDESPREAD = "Name the largest moon of the planet Saturn which has a thick nitrogen atmosphere and methane lakes"


def test_widespread_copy_is_contaminated_not_boilerplate(engine: Engine, index_corpus: IndexCorpus) -> None:
    """An item copied into more documents than max_df must not vanish as boilerplate."""
    docs = [{"id": f"mirror{i}", "text": f"Mirror site {i}: {WIDESPREAD}? Answer: Titan."} for i in range(15)]
    index_corpus(engine, docs)
    r = Scanner(engine).scan([BenchmarkItem("w", 0, question=WIDESPREAD, answer="Titan")])[0]
    assert r.score.roles["question"].common_ngrams > 0  # every n-gram is above max_df
    assert r.score.status == "contaminated" and "widespread" in r.score.reason
    assert r.evidence and "none is listed" not in r.score.reason
    # each copy is marked one (a new user's trial: the only document listed read `clean`)
    assert {e.status for e in r.evidence} == {"contaminated"}, [(e.document_id, e.status) for e in r.evidence]


WIDE_PAGES = [
    {
        "id": f"page{i}",
        "text": f"{' '.join(f'w{i}x{j}' for j in range(60))} {WIDESPREAD}? {' '.join(f'v{i}y{j}' for j in range(60))}",
    }
    for i in range(15)
]


def test_a_widespread_copy_lists_documents_holding_it(engine: Engine, index_corpus: IndexCorpus) -> None:
    """A new user's trial: an edited item whose text fifteen pages hold was `contaminated`
    ("widespread copy") with no evidence at all, and the dashboard said "No training text matched
    this item": the look-up names no documents for n-grams in more than max_df of them, and an
    edited copy matches no near-duplicate window. The documents holding most of its common n-grams
    are looked up apart and listed, marked as the copies they are (one document alone calls a
    copy's common text a phrase)."""
    index_corpus(engine, WIDE_PAGES, "pages")
    edited = WIDESPREAD.replace("methane lakes", "hydrocarbon seas")
    r = Scanner(engine, corpora=["pages"]).scan([BenchmarkItem("e", 0, question=edited, answer="Titan")])[0]
    assert (r.score.status, r.score.reason) == ("contaminated", scanning.WIDESPREAD)
    assert len(r.evidence) == scanning.WIDESPREAD_LISTED, r.evidence
    assert all(e.document_id.startswith("page") and e.status == "contaminated" for e in r.evidence)


def test_a_page_holding_a_siblings_copy_is_no_copy_of_a_widespread_item(
    engine: Engine, index_corpus: IndexCorpus
) -> None:
    """A review: a widespread copy's evidence was marked `contaminated` by its share of the whole
    item, frame included, so a page holding the frame with a sibling's question was marked a
    copy, and, the item then having evidence, its real copies were never looked up. A document
    is its copy where it holds the item's common own n-grams."""
    long = (
        f"{WIDESPREAD} and whose surface was first seen through the haze by a probe that landed in the winter of 2005"
    )
    pages = [
        {
            "id": f"page{i}",
            "text": f"{' '.join(f'w{i}x{j}' for j in range(60))} {long}. {' '.join(f'v{i}y{j}' for j in range(60))}",
        }
        for i in range(15)
    ]
    frame = " ".join(f"frame{j} rule{j % 5}" for j in range(40))
    sibling_q = f"{frame} Which alpha loads beta before gamma starts delta?"
    index_corpus(
        engine, [*pages, {"id": "sibling", "text": f"intro words here {sibling_q} outro words there"}], "pages"
    )
    items = [
        BenchmarkItem("a", 0, question=f"{frame} {long.replace('winter of 2005', 'spring of 2006')}", answer="Titan"),
        BenchmarkItem("b", 1, question=sibling_q, answer="yes"),
    ]
    r = Scanner(engine, corpora=["pages"]).scan(items)[0]
    assert r.score.status == "contaminated" and r.score.reason == scanning.WIDESPREAD, r.score.reason
    said = {e.document_id: e.status for e in r.evidence}
    assert said.get("sibling") in (None, "clean", "suspicious"), said
    assert any(d.startswith("page") and v == "contaminated" for d, v in said.items()), said


def test_a_widespread_copy_without_listed_documents_says_why(
    engine: Engine, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no document holding a widespread copy can be listed after all (the documents
    deleted between the look-ups), the reason says that none is listed, and why."""
    index_corpus(engine, WIDE_PAGES, "pages")
    monkeypatch.setattr(Scanner, "_widespread_copies", lambda self, wide: {})
    edited = WIDESPREAD.replace("methane lakes", "hydrocarbon seas")
    r = Scanner(engine, corpora=["pages"]).scan([BenchmarkItem("e", 0, question=edited, answer="Titan")])[0]
    assert r.score.status == "contaminated" and not r.evidence
    assert r.score.reason.endswith(
        "none is listed: the index names no documents for n-grams in more than max_df (10) of them"
    )


def test_a_widely_copied_item_scores_what_the_corpora_hold(
    engine: Engine, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new user's trial: a widespread copy whose best document held none of its own text was
    `contaminated` with score 0.00, sorted last among contaminated items, counted in the report's
    0-10% bar and left out by a minimum-score filter. Its score is the share of its own text the
    corpora hold, the measure its verdict rests on; an item scored by a document keeps that
    document's share."""
    index_corpus(engine, WIDE_PAGES, "pages")
    monkeypatch.setattr(Scanner, "_widespread_copies", lambda self, wide: {})
    edited = WIDESPREAD.replace("methane lakes", "hydrocarbon seas")
    items = [BenchmarkItem("e", 0, question=edited, answer="Titan"), BenchmarkItem("c", 1, question=Q_HIDDEN)]
    wide, clean = Scanner(engine, corpora=["pages"]).scan(items)
    assert wide.score.status == "contaminated" and not wide.evidence and wide.score.own_coverage == 0.0
    assert Thresholds().contaminated_coverage <= wide.score.score == wide.score.spread < 1.0
    assert wide.as_dict()["score"] == round(wide.score.spread, 4)
    summary = summarize([wide, clean], Thresholds(), ["pages"])
    assert summary["histograms"]["own_coverage"]["counts"][int(wide.score.score * 10)] == 1
    assert clean.score.spread == 0.0 and clean.score.score == clean.score.own_coverage


def test_duplicate_items_keep_their_exact_match(scanner: Scanner) -> None:
    """Identical items in one benchmark are one item: a verbatim copy contaminates both, and a
    short duplicate found verbatim is not cleared either."""
    twins = [BenchmarkItem(f"twin{i}", i, question=Q_VERBATIM, answer=A_VERBATIM) for i in range(2)]
    twins += [BenchmarkItem(f"cjk{i}", 2 + i, question=CJK) for i in range(2)]
    for r in scanner.scan(twins):
        assert r.score.status == "contaminated", r.score.reason
        assert r.score.own_coverage == 1.0 and r.evidence[0].document_id in ("verbatim", "cjk")


def test_short_document_is_not_a_near_duplicate_of_a_long_item(engine: Engine, index_corpus: IndexCorpus) -> None:
    """A document holding a few words of a long item must not score as a near copy of it
    (partial_ratio would otherwise align the short text inside the item). Those words are the
    item's opening, as a truncated copy holds it: suspicious, with that reason, never more."""
    item = (
        "A farmer plants forty rows of corn and each row holds thirty stalks so how many stalks of corn "
        "does the farmer have in the whole field when the harvest finally begins this year"
    )
    index_corpus(engine, [{"id": "fragment", "text": "A farmer plants forty rows of corn and each row"}])
    r = Scanner(engine).scan([BenchmarkItem("q", 0, question=item)])[0]
    assert r.evidence and r.evidence[0].document_id == "fragment"
    assert r.score.status == "suspicious" and "opening" in r.score.reason and r.score.own_coverage < 0.4


def test_many_segments_score_like_one(engine: Engine, tmp_path: Path, index_corpus: IndexCorpus) -> None:
    """Postings spread over many segments (and beside another corpus), or merged from many
    segments into few, give the same scores and evidence as postings in one segment: document
    frequencies add up across segments, and a scan of one corpus reads only its segments."""
    mirrors = [{"id": f"mirror{i}", "text": f"Mirror site {i}: {WIDESPREAD}? Answer: Titan."} for i in range(15)]
    docs = CORPUS + mirrors
    paths = []
    for i in range(0, len(docs), 10):
        paths.append(tmp_path / f"part{i}.jsonl")
        paths[-1].write_text("".join(json.dumps(d) + "\n" for d in docs[i : i + 10]))
    for name, opts in (
        ("one", {}),
        ("many", {"batch_size": 3, "segment_rows": 50, "merge_fanout": 0}),
        ("merged", {"batch_size": 3, "segment_rows": 50, "merge_fanout": 2}),
    ):
        index_corpus(engine, paths, name, **opts)
    with engine.connect() as conn:
        counts = dict(conn.execute(select(segment.c.corpus_id, func.count()).group_by(segment.c.corpus_id)).all())
    one, many, merged = (counts[i] for i in sorted(counts))
    assert one == 1 and many > 10 and 1 < merged < 8
    items = [*ITEMS, BenchmarkItem("w", 9, question=WIDESPREAD, answer="Titan")]

    many = report_by_content(engine, "many", items)
    assert many == report_by_content(engine, "one", items) == report_by_content(engine, "merged", items)
    assert {i: s["status"] for i, s, _ in many}["w"] == "contaminated"


def test_the_order_documents_were_indexed_in_changes_no_report(
    engine: Engine, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """Six pages hold the same half of an item, three in each of two files: equally good, they
    tie for the four candidates' places and for the best document. Ties were broken by the lower
    document id, which says in what order the files were indexed: the same files indexed the
    other way round (as the Ray executor's workers number them) gave other candidates, another
    best document and other evidence. Now by what the documents are (scanning.content_key)."""
    (first, second), tied = tied_pages(tmp_path)
    for name, files in (("ab", (first, second)), ("ba", (second, first))):
        for f in files:  # one run a file: a run takes its files in the order of their paths
            index_corpus(engine, [f], name)
    items = [tied, BenchmarkItem("other", 1, question="an unrelated item here")]
    ab = report_by_content(engine, "ab", items)
    assert len(ab[0][2]) == 3 and len(ab[0][1]["doc_ranking"]) == 4  # four of the six aligned, three listed
    assert ab == report_by_content(engine, "ba", items)


def test_the_order_documents_were_indexed_in_changes_no_near_duplicate_candidate(
    engine: Engine, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """Six pages of two files hold a whole 90-word item after 40 words of their own: tied for the
    exact channel's four places and for the near-duplicate channel's two (as many band keys in
    common). The exact channel takes four by content_key (these texts' hashes leave two pages of
    the second file out); the near channel broke its tie by the lower id, and took the first file
    indexed's pages: none more here, those two left-out pages when the files were indexed the
    other way round (six candidates, not four). By content_key, the same four either way."""
    words = make_docs(1, 90, 7, "q")[0]["text"]
    files = []
    for f in range(2):
        own = [" ".join(f"f{f}{i}w{k}" for k in range(40)) for i in range(3)]
        pages = [{"id": f"page{f}{i}", "text": f"{own[i]} {words} closing{f}{i}"} for i in range(3)]
        files.append(tmp_path / f"near{f}.jsonl")
        files[-1].write_text("".join(json.dumps(d) + "\n" for d in pages))
    for name, order in (("ab", files), ("ba", files[::-1])):
        for path in order:  # one run a file: a run takes its files in the order of their paths
            index_corpus(engine, [path], name)
    item = BenchmarkItem("near", 0, question=words)
    ab = report_by_content(engine, "ab", [item])
    assert ab[0][1]["status"] == "contaminated"
    assert {d for d, *_ in ab[0][1]["doc_ranking"]} == {"page00", "page01", "page02", "page12"}
    assert ab == report_by_content(engine, "ba", [item])


def test_the_order_documents_were_indexed_in_changes_no_widespread_copys_documents(
    engine: Engine, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """A widespread copy's documents are looked up apart (_widespread_copies): fifteen pages of two
    files hold the edited item's common n-grams equally, and three are listed. Those three were the
    lowest ids, another three when the files were indexed the other way round; now by what the
    pages are (scanning.content_key), as the candidates' ties."""
    files = []
    for f in range(2):
        pages = [{**page, "id": f"page{f}{i}"} for i, page in enumerate(WIDE_PAGES[8 * f : 8 * f + 8])]
        files.append(tmp_path / f"wide{f}.jsonl")
        files[-1].write_text("".join(json.dumps(d) + "\n" for d in pages))
    for name, order in (("ab", files), ("ba", files[::-1])):
        for path in order:  # one run a file: a run takes its files in the order of their paths
            index_corpus(engine, [path], name)
    edited = BenchmarkItem("e", 0, question=WIDESPREAD.replace("methane lakes", "hydrocarbon seas"), answer="Titan")
    ab = report_by_content(engine, "ab", [edited])
    assert (ab[0][1]["status"], ab[0][1]["reason"]) == ("contaminated", scanning.WIDESPREAD)
    assert len(ab[0][2]) == scanning.WIDESPREAD_LISTED
    assert ab == report_by_content(engine, "ba", [edited])


def test_workers_give_the_same_results_in_input_order(scanner: Scanner, monkeypatch: pytest.MonkeyPatch) -> None:
    """A benchmark split over forked worker processes (chunks of 2 items here) gives the same
    report as one process, in input order, with progress after each chunk."""
    import contam.app.services.scanning as scanning

    monkeypatch.setattr(scanning, "CHUNK", 2)
    items = [*ITEMS, *(BenchmarkItem(f"copy{i}", 9 + i, question=Q_VERBATIM, answer=A_VERBATIM) for i in range(4))]
    progress: list[tuple[int, int]] = []
    forked = scanner.scan(items, progress=lambda done, total: progress.append((done, total)), workers=2)
    alone = scanner.scan(items, workers=1)
    assert [r.item.item_id for r in forked] == [it.item_id for it in items]
    assert [r.as_dict() for r in forked] == [r.as_dict() for r in alone]
    assert progress[-1] == (len(items), len(items)) and len(progress) == -(-len(items) // 2)
    assert {r.item.item_id: r.score.status for r in forked}["verbatim"] == "contaminated"


def test_the_last_chunks_are_cut_so_the_workers_finish_together() -> None:
    """1,000 items on two workers were chunks of 10, 50, 200, 500 and 240: one worker scored
    550 items, the other 450, and the scan waited for the first (news-length items: 0.87x the
    wall time once cut, bench/MEASUREMENTS.md). Alone, a worker keeps whole chunks."""
    import contam.app.services.scanning as scanning

    items = [BenchmarkItem(f"i{k}", k, question="q") for k in range(1000)]

    def chunks(workers: int) -> list[tuple[int, int]]:
        return [(lo, len(c)) for lo, c in scanning._chunks(items, len(items), workers)]

    assert [size for _lo, size in chunks(1)] == [10, 50, 200, 500, 240]
    # after the first chunks, what is left over twice the workers (two chunks a worker in
    # flight), never under TAIL_CHUNK: a remainder under it joins the chunk before
    two = chunks(2)
    assert [size for _lo, size in two] == [10, 50, 200, 185, 139, 104, 78, 59, 50, 50, 75]
    assert [lo for lo, _size in two] == [0, *np.cumsum([size for _lo, size in two])[:-1].tolist()]
    assert [size for _lo, size in chunks(8)] == [10, 50, 200, *[50] * 13, 90]


def test_a_scan_on_one_worker_per_core_cuts_its_tail_and_gives_one_process_s_results(
    scanner: Scanner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """workers=0 (one per core, the default) reaches the chunking as the core count, and chunks
    of uneven sizes scored by worker processes give one process's results, in order."""
    import contam.app.services.scanning as scanning

    monkeypatch.setattr(scanning, "FIRST_CHUNKS", (1,))
    monkeypatch.setattr(scanning, "TAIL_CHUNK", 1)
    monkeypatch.setattr(scanning, "CHUNK", 6)
    monkeypatch.setattr(scanning.os, "sched_getaffinity", lambda _pid: {0, 1})  # two cores
    items = [*ITEMS, *(BenchmarkItem(f"copy{i}", 9 + i, question=Q_VERBATIM, answer=A_VERBATIM) for i in range(8))]
    sizes: list[int] = []
    real = scanning._chunks

    def seen(*args: Any) -> Any:
        for lo, chunk in real(*args):
            sizes.append(len(chunk))
            yield lo, chunk

    monkeypatch.setattr(scanning, "_chunks", seen)
    progress: list[tuple[int, int]] = []
    forked = scanner.scan(items, progress=lambda done, total: progress.append((done, total)), workers=0)
    total = len(items)
    expected, lo = [1], 1
    while lo < total:  # what is left over four, at least one
        expected.append(min(6, -(-(total - lo) // 4)))
        lo += expected[-1]
    assert sizes == expected and len(set(sizes[1:])) > 1  # uneven: the tail was cut
    assert [r.as_dict() for r in forked] == [r.as_dict() for r in scanner.scan(items, workers=1)]
    assert progress[-1] == (total, total) and len(progress) == len(expected)


def test_a_small_document_cache_changes_nothing(scanner: Scanner, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk holds the documents it scores: a cache too small for them once evicted one in the
    middle of a chunk, and its item was scored without it (clean, no evidence)."""
    import contam.app.services.scanning as scanning

    full = [r.as_dict() for r in scanner.scan(ITEMS)]
    monkeypatch.setattr(scanning, "DOC_CACHE_BYTES", 1)  # one document kept at most
    monkeypatch.setattr(scanning, "CHUNK", 3)
    assert [r.as_dict() for r in Scanner(scanner.engine).scan(ITEMS)] == full


def test_a_worker_that_dies_fails_the_scan_instead_of_hanging_it(
    scanner: Scanner, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    from concurrent.futures.process import BrokenProcessPool

    import contam.app.services.scanning as scanning

    monkeypatch.setattr(scanning, "CHUNK", 2)
    real = Scanner._scan_chunk

    def dies_on_the_second_chunk(self, work, lo, hi):  # type: ignore[no-untyped-def]
        if lo == 2:
            os._exit(9)  # as if killed (out of memory, kill -9)
        return real(self, work, lo, hi)

    monkeypatch.setattr(Scanner, "_scan_chunk", dies_on_the_second_chunk)
    assert not only_thread()  # forked workers, which the patch reaches (a fork server's would not)
    with pytest.raises(BrokenProcessPool):
        scanner.scan(ITEMS, workers=2)


def test_a_sampled_index_finds_a_short_item_by_its_one_kept_ngram(engine: Engine, index_corpus: IndexCorpus) -> None:
    """With --sample 4 a seven-word sentence keeps on average under one of its three n-grams in
    the index: a document holding the one kept n-gram is aligned, and the copy is found."""
    cfg = SignatureConfig(sample_mod=4)
    sentences = [f"Striker{i} Velasquez{i} curled a free kick past keeper{i}" for i in range(200)]
    one_kept = [s for s in sentences if len(sign_text(tokenize(s), cfg).ngrams) == 1][:3]
    assert len(one_kept) == 3
    index_corpus(
        engine, [{"id": f"match{k}", "text": f"{FILLER} {s}. {FILLER}"} for k, s in enumerate(one_kept)], cfg=cfg
    )
    items = [
        BenchmarkItem(f"s{k}", k, question=s, choices=("plausible", "implausible")) for k, s in enumerate(one_kept)
    ]
    results = Scanner(engine).scan(items)
    assert [r.score.status for r in results] == ["contaminated"] * 3, [r.score.reason for r in results]


def test_the_document_holding_most_of_the_question_is_aligned_even_when_the_answer_draws_more(
    engine: Engine, index_corpus: IndexCorpus
) -> None:
    """A maths item with a long worked solution: five documents each quote a different part of
    the solution (more n-grams than the question has), and one page holds the question with its
    final answer. Ranked by all n-grams, the page is fifth or worse and was never aligned; the
    question names the item, so the document holding most of it is aligned too."""
    steps = [
        f"step {k} of the argument takes the residue class number {k} and shows by induction on the "
        f"number of digits that the carry pattern number {k} leaves the digit sum unchanged modulo nine"
        for k in range(5)
    ]
    item = BenchmarkItem(
        "m1",
        0,
        question="Let Q(n) be the digit sum of n. If Q(n)=Q(2n), what are the possible values of n mod 9?",
        solution=" ".join(steps),
        answer="0 is the only possible value",
    )
    docs = [{"id": f"notes{k}", "text": f"{FILLER} {step} {FILLER}"} for k, step in enumerate(steps)]
    docs.append({"id": "page", "text": f"{FILLER} Q: {item.question} A: {item.answer}. {FILLER}"})
    index_corpus(engine, docs)
    r = Scanner(engine).scan([item, BenchmarkItem("m2", 1, question="How many primes below one hundred end in 7?")])[0]
    assert r.score.status == "contaminated" and r.evidence[0].document_id == "page", r.score.reason


def test_check_requests_share_documents_and_answer_as_a_fresh_scanner(
    engine: Engine, index_corpus: IndexCorpus
) -> None:
    """/check keeps tokenised documents between requests (SharedDocs): every answer equals a
    fresh scanner's, also after the corpus is renamed (the evidence names the new one) and after
    it is deleted and other texts indexed, whose documents may take the old ids."""
    from contam.app.services.checking import CheckService
    from contam.app.services.corpora import CorpusService

    def checked(svc: CheckService) -> list[dict]:  # type: ignore[type-arg]
        # one request per item, as the API's clients send them
        return [svc.items([it]).results[0].as_dict() for it in ITEMS]

    def by_item(results: list[dict]) -> dict[str, dict]:  # type: ignore[type-arg]
        # a request of one item is a benchmark of one item: compare with a scan of each alone
        return {r["item_id"]: r for r in results}

    index_corpus(engine, CORPUS)
    svc = CheckService(engine)
    alone = {it.item_id: Scanner(engine).scan([it])[0].as_dict() for it in ITEMS}
    assert by_item(checked(svc)) == alone and len(svc.docs) > 0
    assert by_item(checked(svc)) == alone  # now from the cache
    CorpusService(engine).rename("web", "renamed")
    renamed = by_item(checked(svc))
    assert {e["corpus"] for r in renamed.values() for e in r["evidence"]} == {"renamed"}
    assert renamed == {
        k: {**r, "evidence": [{**e, "corpus": "renamed"} for e in r["evidence"]]} for k, r in alone.items()
    }
    CorpusService(engine).delete("renamed")
    other = [{"id": d["id"], "text": d["text"][::-1] if d["id"] == "verbatim" else d["text"]} for d in CORPUS]
    index_corpus(engine, list(reversed(other)), "again")
    again = by_item(checked(svc))
    assert again == {it.item_id: Scanner(engine).scan([it])[0].as_dict() for it in ITEMS}
    assert again["verbatim"]["status"] != "contaminated"


SPORTS_ITEMS = [
    "Freddie Freeman scored a bicycle kick",
    "Max Pacioretty skated backwards",
    "Daniel Jones threw a touchdown pass",
    "Kris Bryant got a base hit",
]


@pytest.mark.parametrize("short_n", [3, 0])
def test_the_short_channel_finds_edited_and_four_word_items_through_the_index(
    engine: Engine, index_corpus: IndexCorpus, short_n: int
) -> None:
    """Through a real index: a six-word item with a word deleted, and a four-word item verbatim,
    are found through the short channel's 3-grams (SignatureConfig.short_n); an index built
    without the channel (short_n=0, as before it existed) still scans, and misses both."""
    docs = [
        {
            "id": "edit",
            "text": f"{FILLER} Freddie Freeman scored a kick\nA. plausible\nB. implausible\nAnswer: implausible",
        },
        {"id": "four", "text": f"Q: Max Pacioretty skated backwards\nA: plausible\n{FILLER}"},
    ]
    index_corpus(engine, docs, cfg=SignatureConfig(short_n=short_n))
    items = [
        BenchmarkItem(f"s{i}", i, question=t, choices=("plausible", "implausible"), answer=a)
        for i, (t, a) in enumerate(
            zip(SPORTS_ITEMS, ["implausible", "plausible", "plausible", "plausible"], strict=True)
        )
    ]
    res = {r.item.item_id: r for r in Scanner(engine).scan(items)}
    if short_n:
        assert res["s0"].score.status in ("suspicious", "contaminated"), res["s0"].score.reason
        assert res["s0"].evidence and res["s0"].evidence[0].document_id == "edit"
        assert res["s1"].score.status == "contaminated" and res["s1"].evidence[0].document_id == "four"
    else:
        assert res["s0"].score.status == "clean" and res["s1"].score.status == "too_short"
    assert res["s2"].score.status == res["s3"].score.status == "clean"


def test_a_seven_word_item_with_its_middle_word_changed_is_found_through_the_index(
    engine: Engine, index_corpus: IndexCorpus
) -> None:
    """One word changed in the middle of a seven-word item leaves two of its 3-grams, one on each
    side: not in a row, but a pair on either side of the changed word (native SHORT_PAIR_GAP), so the
    page is a candidate, and the copy, first word to last at the item's length, is found. (A new
    user's trial: "no substantial overlap found" for a page holding six of the seven words.)"""
    docs = [{"id": "edit", "text": f"{FILLER} Purple beetles gathered quietly under rotten logs {FILLER}"}]
    index_corpus(engine, docs)
    items = [
        BenchmarkItem("m", 0, question="Purple beetles gathered slowly under rotten logs"),
        BenchmarkItem("o", 1, question="Green herons waded across the shallow marsh"),
    ]
    res = {r.item.item_id: r for r in Scanner(engine).scan(items)}
    assert res["m"].score.status in ("suspicious", "contaminated"), res["m"].score.reason
    assert res["m"].evidence and res["m"].evidence[0].document_id == "edit"
    assert res["o"].score.status == "clean"


def test_each_corpus_is_credited_with_what_its_own_documents_hold(engine: Engine, index_corpus: IndexCorpus) -> None:
    """The summary per corpus takes each corpus's own documents' word: an item copied whole in
    one corpus is not the other corpus's contamination because that one holds a phrase of it
    (it was: every corpus with any evidence got the item's status). Each piece of evidence says
    what its document alone makes of the item; an item flagged by no single document keeps its
    status in every corpus that holds evidence of it."""
    phrase = " ".join(Q_VERBATIM.split()[2:9])  # seven words of the question: two 5-grams, no copy
    index_corpus(engine, [{"id": "copy", "text": f"{Q_VERBATIM}\nAnswer: {A_VERBATIM}"}], name="crawl")
    index_corpus(engine, [{"id": "phrase", "text": f"{FILLER} notes: {phrase} {FILLER}"}], name="books")
    item = BenchmarkItem("q", 0, question=Q_VERBATIM, answer=A_VERBATIM)
    r = Scanner(engine).scan([item])[0]
    assert r.score.status == "contaminated"
    said = {e.corpus: e.status for e in r.evidence}
    assert said == {"crawl": "contaminated", "books": "clean"}, said
    per_corpus = summarize([r], Thresholds())["per_corpus"]
    assert per_corpus["crawl"]["contaminated"] == 1
    assert per_corpus.get("books", {}).get("contaminated", 0) == 0 and per_corpus["books"]["suspicious"] == 0

    # flagged by no single document (a widely copied item's own text is in too many documents for
    # any one to be a candidate): the item's status, in each corpus holding evidence
    unclaimed = replace(r, evidence=[replace(e, status="clean") for e in r.evidence])
    per_corpus = summarize([unclaimed], Thresholds())["per_corpus"]
    assert per_corpus["crawl"]["contaminated"] == per_corpus["books"]["contaminated"] == 1

    # every corpus scanned is listed, one that holds nothing of the benchmark too (it was left
    # out, so a scan of three corpora listed two: a new user's trial)
    index_corpus(engine, [{"id": "other", "text": f"{FILLER} and nothing else"}], name="news")
    from contam.app.services.checking import CheckService

    checked = CheckService(engine).items([item], None, Thresholds())
    assert set(checked.summary["per_corpus"]) == {"books", "crawl", "news"}
    assert checked.summary["per_corpus"]["news"] == {"contaminated": 0, "suspicious": 0, "contaminated_share": 0.0}


def test_evidence_serialises_as_its_fields_with_highlights_of_its_own() -> None:
    """Evidence.as_dict is dataclasses.asdict made directly: every field, and highlight spans
    that are copies (a caller editing the report's spans leaves the evidence as it was)."""
    e = Evidence(
        "c", "doc-7", 7, "f.jsonl", 3, 10, 40, 0, "some text", [[1, 4], [6, 9]], 0.9, 0.8, 12, None, "suspicious"
    )
    d = e.as_dict()
    assert d == asdict(e) and list(d) == list(asdict(e))
    d["highlights"][0][0] = 99
    d["highlights"].append([0, 1])
    assert e.highlights == [[1, 4], [6, 9]]


PHRASE_ITEMS = [  # short items of a manual-page benchmark, each opening with an everyday phrase of manuals
    "The number of seconds to wait for events to finish.",
    "Do not print a header line with the show option.",
    "You must be a superuser to use this command.",
]
PHRASES = ["The number of seconds to wait for", "Do not print a header line", "You must be a superuser to use"]


def test_one_choice_found_alone_is_not_the_item(engine: Engine, index_corpus: IndexCorpus) -> None:
    """A probe of a COPA-like benchmark written from manual pages: a wrong choice that one page
    says word for word ("Returns the operating system's default directory for temporary files
    as a string") made its item `suspicious`, "neither its question nor its answer was found". One
    option alone is a sentence of its own; the premise beside it, or several options, still count."""
    choice = "Returns the operating system's default directory for temporary files as a string"
    premise = "The module was asked where scratch data should be written on this host."
    other = "The caller received an empty list of mount points and a warning"
    item = BenchmarkItem("c", 0, question=premise, choices=(choice, other), answer="1")
    pages = {
        "alone": f"{FILLER[:900]} gettempdir() {choice}. {FILLER[-300:]}",
        "with_premise": f"{FILLER[:900]} {premise} {choice}. {FILLER[-300:]}",
        "both_choices": f"{FILLER[:900]} Either: {choice}. Or: {other}. {FILLER[-300:]}",
    }
    for name, text in pages.items():
        index_corpus(engine, [{"id": name, "text": text}], name)
    alone = Scanner(engine, corpora=["alone"]).scan([item])[0].score
    assert alone.status == "clean" and alone.reason.startswith("only one of its choices was found"), alone.reason
    for name in ("with_premise", "both_choices"):
        got = Scanner(engine, corpora=[name]).scan([item])[0].score
        assert got.status != "clean", (name, got.reason)
    # a review: choices kept as one string, every option listed on a page, is no "one choice alone"
    listed = "(A) the river froze over completely (B) the ferry kept its winter timetable"
    one_field = BenchmarkItem("s", 0, question=premise, choices=(listed,), answer=listed)
    index_corpus(engine, [{"id": "key", "text": f"{FILLER[:900]} {listed}. Answer: A {FILLER[-300:]}"}], "key")
    got = Scanner(engine, corpora=["key"]).scan([one_field])[0].score
    assert not got.reason.startswith("only one of its choices"), got.reason
    # nor the right choice beside a passage the question field carries, shared with other items
    passage = (
        "The lighthouse on the northern cape was kept by one family from 1881 until 1921, when the lamp was "
        "automated and the keepers moved to the harbour town below the cliffs"
    )
    asked = ["How long did the family keep the light?", "Where did the keepers move?", "When was the lamp automated?"]
    right = "for four whole decades of service at the point"
    items = [
        BenchmarkItem(
            f"p{k}", k, question=f"{passage} {q}", choices=(right if k == 0 else f"answer {k}", "nobody knows")
        )
        for k, q in enumerate(asked)
    ]
    items = [replace(it, answer=it.choices[0]) for it in items]
    index_corpus(engine, [{"id": "pa", "text": f"{FILLER[:900]} {passage}. Answer: {right} {FILLER[-300:]}"}], "pa")
    got = Scanner(engine, corpora=["pa"]).scan(items)[0].score
    assert got.status != "clean", got.reason


def test_a_phrase_that_several_documents_hold_is_no_copy_of_a_short_item(
    engine: Engine, index_corpus: IndexCorpus
) -> None:
    """Two probes of benchmarks built from this machine's manuals and docstrings: a short item
    whose opening phrase ("Do not print a header line") two unrelated manual pages hold, or whose
    six words "can be overridden in subclasses to" one source file holds, was `suspicious` ("one
    document holds 50% of the item's own text"): half of a short item is a phrase's length. A run
    counts when no other document holds it and the document holds opening_run (8) own tokens, or
    when it is 2n tokens long wherever else it is."""
    pages = [
        {"id": f"{k}-{s}", "text": f"{FILLER[: 400 * (s + 1)]} {phrase} {tail}. {FILLER[-300:]}"}
        for k, phrase in enumerate(PHRASES)
        for s, tail in enumerate(["in the listing below", "unless asked to by the caller"])
    ]
    index_corpus(engine, pages, "man")
    items = [BenchmarkItem(f"i{k}", k, question=q, answer="true") for k, q in enumerate(PHRASE_ITEMS)]
    for r in Scanner(engine).scan(items):
        assert r.score.status == "clean", (r.item.item_id, r.score.reason)
        assert "lies in n-grams that no other text of the corpora checked holds" in r.score.reason, r.score.reason
    # one document only: six or seven words are still a phrase's length
    once = [*(p for p in pages if p["id"].endswith("-0")), {"id": "py", "text": SUBCLASS_SOURCE}]
    index_corpus(engine, once, "once")
    asked = [*items, BenchmarkItem("py", 3, question="A factory method which can be overridden in subclasses to what?")]
    for r in Scanner(engine, corpora=["once"]).scan(asked):
        assert r.score.status == "clean", (r.item.item_id, r.score.reason)
        assert "of its tokens (fewer than 8): a phrase's length" in r.score.reason, r.score.reason
    # eight own tokens in a run no other document holds: as much as a truncated copy's opening
    item = "The number of seconds to wait for events to finish before the daemon gives up on them."
    index_corpus(engine, [{"id": "w", "text": f"{FILLER[:900]} {item[:40]} now. {FILLER[-200:]}"}], "eight")
    r = Scanner(engine, corpora=["eight"]).scan([BenchmarkItem("w", 0, question=item)])[0]
    assert r.score.status == "suspicious" and r.score.longest_match == 8, r.score.reason
    # enough own text (13 tokens) whose one run of more than n (9 tokens) another document holds too:
    # a phrase and a few words; the same page alone in its corpus is a copy's run
    item3 = "A kernel setting: the number of seconds to wait for the daemon before the socket is closed again."
    held = "the number of seconds to wait for the daemon; later the socket is closed again."
    page = f"{FILLER[:700]} {held} {FILLER[-250:]}"
    other = f"{FILLER[:300]} Sets the number of seconds to wait for the daemon to start. {FILLER[-150:]}"
    index_corpus(engine, [{"id": "a", "text": page}, {"id": "b", "text": other}], "both")
    index_corpus(engine, [{"id": "a", "text": page}], "alone")
    both = Scanner(engine, corpora=["both"]).scan([BenchmarkItem("d", 0, question=item3)])[0].score
    alone = Scanner(engine, corpora=["alone"]).scan([BenchmarkItem("d", 0, question=item3)])[0].score
    assert both.status == "clean" and both.longest_match == 9 and "(the longest 9)" in both.reason, both.reason
    assert alone.status == "suspicious", alone.reason
    # a run of 2n tokens or more (12 here) held by two documents: longer than chance gives, a copy's run
    run = "you must be a superuser to use this command on every host"
    twice = [{"id": f"l{s}", "text": f"{FILLER[: 500 * (s + 1)]} Then {run} now. {FILLER[-200:]}"} for s in (0, 1)]
    index_corpus(engine, twice, "long")
    # (to the item's end: a run inside it, its own words after it, is what a question quoting the page holds, and
    # flags nothing shorter than longest_match: scoring._quoted_by_question)
    item2 = BenchmarkItem("l", 0, question=f"After the upgrade, note that {run}.")
    r = Scanner(engine, corpora=["long"]).scan([item2])[0]
    assert r.score.status == "suspicious" and r.score.longest_match == 12, r.score.reason


def test_an_opening_that_other_documents_hold_is_no_truncated_copy(engine: Engine, index_corpus: IndexCorpus) -> None:
    """A probe of benchmarks built from manual pages: a 383-token paragraph opening with a
    sentence several X11 pages share ("The value-mask and value-list specify which attributes
    are to be explicitly initialized") was `suspicious`, "one document holds the item's opening in
    one run, as a truncated copy does". Boilerplate opens many texts; a truncated copy's opening
    lies in n-grams that only its document holds (as _not_a_phrase asks of a partial match)."""
    opening = "The value mask and value list name which attributes are set"
    rest = (
        "for the window being created here; the border pixel and the background pixmap are kept from the "
        "parent unless the caller names them, and the cursor is reset once the window is mapped on screen"
    )
    item = BenchmarkItem("x", 0, question=f"{opening} {rest}.")
    pages = [
        {"id": f"x{s}", "text": f"{FILLER[: 450 * (s + 1)]} {opening}. {tail} {FILLER[-250:]}"}
        for s, tail in enumerate(["Each bit set names one.", "The list follows in bit order."])
    ]
    index_corpus(engine, pages, "boiler")
    index_corpus(engine, pages[:1], "once")
    both = Scanner(engine, corpora=["boiler"]).scan([item])[0].score
    once = Scanner(engine, corpora=["once"]).scan([item])[0].score
    assert both.status == "clean", both.reason
    assert once.status == "suspicious" and "opening in one run" in once.reason, once.reason


def test_a_question_s_words_found_only_inside_its_passage_s_copy_are_the_passage_s(
    engine: Engine, index_corpus: IndexCorpus
) -> None:
    """A probe of fill-in-the-blank questions on a shared passage field (the question a sentence of
    the passage with words left out): a page holding only the passage, or a sibling's copy of it,
    made each question `contaminated` ("one document holds 100% of the item's own text"). What the
    question quotes of its passage is not its own text, but the 3-4 words beside the blank are
    (no n-gram of the passage spans the gap), and every copy of the passage holds them, with the
    answer between. Own text counts where the document holds it apart from the passage's copy; a
    copy of the item itself (the passage, then the question; or the passage with the blank in
    place) still holds it there."""
    passage = (
        "Version 3.4 changed the handshake. This may lead to incompatibility with very old servers. "
        "Corrected a bug in parameter handling which could cause unexpected crashes on start. "
        "Corrected a compilation issue when the library was installed in a non standard directory."
    )
    questions = [
        ("Corrected a bug in parameter handling _____ cause unexpected crashes on start.", "which could"),
        ("Corrected a compilation issue when the library was installed in a _____ directory.", "non standard"),
        ("This may lead to _____ with very old servers.", "incompatibility"),
    ]
    items = [BenchmarkItem(f"c{k}", k, passage=passage, question=q, answer=a) for k, (q, a) in enumerate(questions)]
    index_corpus(engine, [{"id": "page", "text": f"{FILLER[:900]} {passage} {FILLER[-300:]}"}], "passage")
    alone = Scanner(engine, corpora=["passage"]).scan(items)
    for r in alone:
        assert r.score.status != "contaminated", (r.item.item_id, r.score.reason)
        assert r.score.passage_found, r.item.item_id
    # the report counts passages found beside the fields (a new user's trial found passage_found
    # in no summary, table or page), for the items that have one
    plain = Scanner(engine, corpora=["passage"]).scan([BenchmarkItem("q", 3, question=questions[0][0])])
    per_field = summarize(alone + plain, Thresholds())["per_field"]
    assert per_field["passage"] == {"items": 3, "found": 3, "found_share": 1.0}, per_field
    q, a = questions[2]
    copy = f"{FILLER[:600]} {passage}\n\nQuestion: {q}\nAnswer: {a}\n {FILLER[-300:]}"
    index_corpus(engine, [{"id": "copy", "text": copy}], "copy")
    r = Scanner(engine, corpora=["copy"]).scan(items)[2]
    assert r.score.status == "contaminated" and r.score.own_coverage == 1.0, r.score.reason
    # an exam page giving the passage with the blank in place (a review): the n-grams spanning the
    # blank are the item's, not the passage's
    exam = f"{FILLER[:900]} Fill in the blank. {passage.replace(a, '_____')} {FILLER[-300:]}"
    index_corpus(engine, [{"id": "exam", "text": exam}], "exam")
    r = Scanner(engine, corpora=["exam"]).scan(items)[2]
    assert r.score.status == "contaminated" and r.score.own_coverage == 1.0, r.score.reason


KEEPER = (
    "The lighthouse keeper rowed out at dawn to mend the broken lamp, carrying oil, a spare wick and "
    "a tin of biscuits, while gulls circled the rocks and the tide ran fast toward the harbour wall."
)
KEEPER_Q = "What did the keeper carry besides the oil and the spare wick when he rowed out at dawn?"


def _passage_marked(engine: Engine, index_corpus: IndexCorpus, item: BenchmarkItem, text: str) -> str:
    """The highlighted text of the item's best evidence in a corpus of one page, `text` (the item's
    passage found there)."""
    index_corpus(engine, [{"id": "page", "text": text}], "keeper")
    r = Scanner(engine, corpora=["keeper"]).scan([item])[0]
    assert r.score.passage_found and r.evidence, r.score.reason
    return " ".join(r.evidence[0].excerpt[a:b] for a, b in r.evidence[0].highlights)


def test_the_evidence_shows_where_the_passage_is(engine: Engine, index_corpus: IndexCorpus) -> None:
    """A new user's trial: an item's page said "Passage found: yes", and the training text beside
    it highlighted only the answer's words, the passage nowhere marked. The evidence highlights
    the passage's copy too, where the document holds the item's passage field."""
    item = BenchmarkItem("k", 0, passage=KEEPER, question=KEEPER_Q, answer="a tin of biscuits")
    text = f"{FILLER[:600]} {KEEPER}\n\nQ: {KEEPER_Q}\nA: a tin of biscuits\n{FILLER[-300:]}"
    marked = _passage_marked(engine, index_corpus, item, text)
    assert "gulls circled the rocks and the tide ran fast" in marked, marked
    assert FILLER[:40] not in marked  # the text around the copy is not
    # a document without the passage highlights only the item's text, as before
    index_corpus(engine, [{"id": "bare", "text": f"{FILLER[:600]} Q: {KEEPER_Q}\n{FILLER[-300:]}"}], "bare")
    bare = Scanner(engine, corpora=["bare"]).scan([item])[0]
    assert not bare.score.passage_found and bare.evidence
    assert "gulls" not in " ".join(bare.evidence[0].excerpt[a:b] for a, b in bare.evidence[0].highlights)


def test_the_evidence_shows_the_passage_s_copy_beside_the_item(engine: Engine, index_corpus: IndexCorpus) -> None:
    """A review: a page holding the passage whole far from the item and half of it just before the
    item's question highlighted neither: the passage's place was its fullest copy alone, over
    PASSAGE_SHOWN tokens away. The copy beside the item is highlighted where it holds
    suspicious_coverage of the passage."""
    passage = f"{KEEPER} He reached the rocks when the sun rose over the harbour and the gulls fell silent at last."
    item = BenchmarkItem("k", 0, passage=passage, question=KEEPER_Q, answer="a tin of biscuits")
    half = " ".join(passage.split()[:25])  # 45% of the passage's tokens
    text = f"{passage}\n{FILLER[:6000]} {half}\nQ: {KEEPER_Q}\nA: a tin of biscuits\n{FILLER[-300:]}"
    marked = _passage_marked(engine, index_corpus, item, text)
    assert "carrying oil, a spare wick" in marked, marked
    assert FILLER[-300:-250] not in marked


def test_a_claim_copied_without_its_frame_is_measured_on_its_own_text(
    engine: Engine, index_corpus: IndexCorpus
) -> None:
    """A probe's templated claims ("On <date>, the following claim was made: <claim> Q: Was this
    claim true or false? A:"): a page holding one claim alone, the frame nowhere near, was clean,
    "no substantial overlap found": with no other item explaining the page, the frame, in every
    item, counted as the item's own text, and the claim was a third of it. A template is no item's
    own text, found or not (principle 1); the claim and its date are."""
    claims = ["Add lintian overrides and an override for the hardening checker"]  # copied alone below
    claims += [f"alpha{k} loads beta{k} before gamma{k} starts delta{k} and epsilon{k}" for k in range(1, 15)]
    items = [
        BenchmarkItem(
            f"c{k}",
            k,
            question=f"On June {k + 1}, {1990 + k}, the following claim was made: {claim}. {FRAME_END}",
            answer="true",
        )
        for k, claim in enumerate(claims)
    ]
    page = f"{FILLER[:900]} * {claims[0]}. {FILLER[-300:]}"
    index_corpus(engine, [{"id": "changelog", "text": page}], "log")
    results = Scanner(engine, corpora=["log"]).scan(items)
    assert results[0].score.status == "suspicious", results[0].score.reason
    assert all(r.score.status == "clean" for r in results[1:]), [r.score.reason for r in results[1:]]


def test_an_item_without_an_answer_found_without_its_frame_says_what_is_missing(
    engine: Engine, index_corpus: IndexCorpus
) -> None:
    """A probe of instruction prompts with no answer field ("Summarize the following text in
    three bullet points. Do not use commas. Text: <paragraph>", the frame shared by many items):
    a page holding one paragraph alone, the frame nowhere, was `suspicious` with "one document
    holds 100% of the item's own text (29 tokens)", which reads as a copy and does not say why
    the item is not `contaminated`. The status holds (a copy of the item would hold its frame
    too: the page may be the paragraph's source); the reason says how little of the whole item
    the page holds. (A longer frame, taken as a passage the items share, gives the reason of a
    question found alone: tests/core/test_scoring.py.)"""
    frame = "Summarize the following text in exactly three bullet points and do not use any commas. Text:"
    paragraphs = [
        "The resolver walks each configured search domain in turn and stops at the first answer "
        "that carries an address record, caching negative replies for the interval the zone allows."
    ]
    paragraphs += [
        f"alpha{k} loads beta{k} before gamma{k} starts delta{k} and epsilon{k} zeta{k}" for k in range(1, 15)
    ]
    items = [BenchmarkItem(f"p{k}", k, question=f"{frame} {text}") for k, text in enumerate(paragraphs)]
    page = f"{FILLER[:900]} {paragraphs[0]} {FILLER[-300:]}"
    index_corpus(engine, [{"id": "manual", "text": page}], "docs")
    r = Scanner(engine, corpora=["docs"]).scan(items)[0]
    assert r.score.status == "suspicious", r.score.reason
    assert r.score.reason.startswith("one document holds 100% of the item's own text"), r.score.reason
    assert r.score.reason.endswith("but only 67% of the whole item"), r.score.reason


def test_a_question_copied_without_the_schema_written_into_it_is_found(
    engine: Engine, index_corpus: IndexCorpus
) -> None:
    """A probe of text-to-SQL items with the schema written into the question field ("Schema:
    CREATE TABLE ... Question: ..."): a page holding one question alone was clean. "The question
    is in one document" asked for the question field as a whole, schema included (as it must for
    a twin's one distinct word amid shared words); a passage the question shares with other items
    is not the question: it counts apart from it, as it does for the own text."""
    schema = (
        "Schema: CREATE TABLE tstable (ts0 timestamp NOT NULL DEFAULT current_timestamp() "
        "ON UPDATE current_timestamp(), ts6 timestamp(6) NOT NULL DEFAULT '0000-00-00');"
    )
    asks = [  # seven tokens: fewer than opening_run, so only the whole question found tells
        ("Which distinct ts0 values does tstable hold?", "ts0"),
        ("What is the latest ts6 stamp recorded in tstable?", "ts6"),
        ("How many tstable rows have a ts6 before 2001?", "ts0"),
    ]
    items = [
        BenchmarkItem(
            f"s{k}",
            k,
            question=f"{schema}\nQuestion: {q}",
            answer=f"SELECT DISTINCT {col} FROM tstable WHERE {col} IS NOT NULL ORDER BY {col} DESC LIMIT {k + 3};",
        )
        for k, (q, col) in enumerate(asks)
    ]
    page = f"{FILLER[:900]} Q: {asks[0][0]} {FILLER[-300:]}"
    index_corpus(engine, [{"id": "forum", "text": page}], "forum")
    r = Scanner(engine, corpora=["forum"]).scan(items)[0]
    assert r.score.status == "suspicious" and r.score.reason.startswith("the question is in one document"), (
        r.score.reason
    )
    # a question of n tokens or fewer besides the schema, copied with its answer (a review): the
    # answer's run is no phrase, so question and answer are found together
    short = [*items[:2], BenchmarkItem("s3", 3, question=f"{schema}\nQuestion: How many tstable rows?", answer=SQL)]
    index_corpus(
        engine, [{"id": "qa", "text": f"{FILLER[:900]} Q: How many tstable rows? A: {SQL} {FILLER[-300:]}"}], "qa"
    )
    r = Scanner(engine, corpora=["qa"]).scan(short)[2]
    assert r.score.status == "contaminated", r.score.reason


SYNONYMS = [
    ("cheerful", "joyful"), ("rapid", "swift"), ("huge", "enormous"), ("tiny", "minute"), ("angry", "irate"),
    ("brave", "valiant"), ("calm", "serene"), ("clever", "astute"), ("dirty", "filthy"), ("eager", "keen"),
    ("famous", "renowned"), ("gloomy", "dismal"), ("honest", "candid"), ("lazy", "idle"), ("noisy", "loud"),
]  # fmt: skip
OTHER_TAIL = "gamma{0} starts delta{0} and epsilon{0}".format
TWIN_STEM = (
    "My grandmother tried to pack the heavy silver trophy from the village fair into the old wooden box, "
    "but it would not fit because the box was far too"
)


def test_a_run_of_the_item_is_one_stretch_of_the_document(engine: Engine, index_corpus: IndexCorpus) -> None:
    """A probe's false positives: "Returns a Set view of the keys contained in this map" was
    `suspicious` as "the item's opening in one run (10 tokens)" against a page holding "Returns a
    set view of the keys (ie the index values) of the CompositeData values (ie the rows) contained
    in this": held in the item's order, the ten tokens are two places of the page. A run is one
    stretch of the document, a word inserted by an edit aside; the copy itself is still found."""
    q = (
        "Returns a Set view of the keys contained in this map. Implement public Set keySet for the hash "
        "table backed by an array of buckets with separate chaining."
    )
    doc = (
        "Returns a set view of the keys (ie the index values) of the CompositeData values (ie the rows) "
        "contained in this TabularData instance, in the order the rows were added to it."
    )
    index_corpus(engine, [{"id": "tabular", "text": f"{FILLER[:700]} {doc} {FILLER[-400:]}"}], "apart")
    item = BenchmarkItem("ks", 0, question=q, answer="return keys")
    r = Scanner(engine, ["apart"]).scan([item])[0]
    assert r.score.status == "clean", (r.score.status, r.score.reason)
    # the same words in one stretch, one word inserted: the opening's run holds
    copy = q.replace("keys contained", "keys currently contained")
    index_corpus(engine, [{"id": "copy", "text": f"{FILLER[:700]} {copy} {FILLER[-400:]}"}], "copy")
    r = Scanner(engine, ["copy"]).scan([item])[0]
    assert r.score.status in ("suspicious", "contaminated") and r.score.longest_match >= 10, r.score.reason
    # a copy of its first 16 words after a page quotes some of them: LCS took those from the
    # quote, and the run is still one stretch of the page (a review: it was cut, the copy clean)
    text = (
        "the committee of nine farmers voted quietly to plant barley instead of wheat on the northern "
        "fields after the long drought of the previous summer had ruined every orchard in the valley"
    )
    w = text.split()
    long_item = BenchmarkItem("farm", 1, question=" ".join(w))
    quoted = f"{' '.join(w[:4])} and {' '.join(w[4:9])} are in it. {' '.join(w[:16])}"
    edited = f"{' '.join(w[:5])} said someone. {' '.join(w[:5] + ['very'] + w[5:16])}"
    for name, text in (("quoted", quoted), ("edited", edited)):
        index_corpus(engine, [{"id": name, "text": f"{FILLER[:700]} {text} {FILLER[-400:]}"}], name)
        r = Scanner(engine, [name]).scan([long_item])[0]
        assert r.score.status == "suspicious" and r.score.longest_match >= 16, (name, r.score.longest_match)


def test_a_template_slot_word_in_a_phrase_with_the_answer_is_no_question_found(
    engine: Engine, index_corpus: IndexCorpus
) -> None:
    """A review: with a template no item's own text (the claim test above), an item of 15 sharing
    a frame has one own question word; a page holding it in a phrase, the answer word a few tokens
    on ("the word cheerful ...; a synonym is joyful"), was "question and answer found together",
    `contaminated`. The question is told by its own text when that is more than n tokens, or when
    the question is there as a whole."""
    items = [
        BenchmarkItem(
            f"s{k}",
            k,
            question=f"Give a synonym for the word {w} as it is used in everyday English speech today.",
            answer=a,
        )
        for k, (w, a) in enumerate(SYNONYMS)
    ]
    page = f"{FILLER[:900]} Consider the word cheerful as it appears in the poem; a synonym is joyful. {FILLER[-300:]}"
    index_corpus(engine, [{"id": "poem-notes", "text": page}], "web")
    assert [r.score.status for r in Scanner(engine, corpora=["web"]).scan(items)] == ["clean"] * len(items)


def test_a_long_twin_s_word_in_a_phrase_is_no_question_found(engine: Engine, index_corpus: IndexCorpus) -> None:
    """A review: twins sharing a run of 28 tokens (a passage's length, ItemStats.passage_tok), one
    word apart; a page holding the last words of one ("because the box was far too small") was
    "the question is in one document" once the question's coverage left out the shared run, as it
    does for a schema written into the question. It does so only where more than n tokens of the
    question remain; a copy of the other twin beside the phrase is that twin's."""
    items = [
        BenchmarkItem("small", 0, question=f"{TWIN_STEM} small.", answer="box"),
        BenchmarkItem("large", 1, question=f"{TWIN_STEM} large.", answer="trophy"),
    ]
    items += [  # the rest of a benchmark (its size sets how many bits an unseen word carries)
        BenchmarkItem(f"o{k}", 2 + k, question=f"alpha{k} loads beta{k} before {OTHER_TAIL(k)}", answer=f"zeta{k}")
        for k in range(1200)
    ]
    phrase = f"{FILLER[:900]} We tried again later, but it did not work because the box was far too small for it. "
    twin = f"{FILLER[:900]} {TWIN_STEM} large. Reply: no, I think it was far too small. {FILLER[-300:]}"
    index_corpus(engine, [{"id": "story", "text": phrase + FILLER[-300:]}], "story")
    index_corpus(engine, [{"id": "forum", "text": twin}], "forum")
    for corpus in ("story", "forum"):
        r = Scanner(engine, corpora=[corpus]).scan(items)[0]
        assert r.score.status == "clean", (corpus, r.score.reason)


FRAME_END = "Q: Was this claim true or false? A:"
SQL = "SELECT count(*) FROM tstable WHERE ts0 IS NOT NULL AND ts6 IS NOT NULL;"

SUBCLASS_SOURCE = (
    "class Protocol:\n    # These can be overridden in subclasses to provide protocol-specific implementations.\n"
    "    def connection_made(self, transport):\n        pass\n"
)


def test_a_frame_and_a_common_answer_word_do_not_make_question_and_answer_found(
    engine: Engine, index_corpus: IndexCorpus
) -> None:
    """A fill-in-the-blank benchmark (a probe): an item's frame, shared with its siblings, was in
    a page quizzing another sentence, followed a few words later by "also", the item's answer, and
    the item was `contaminated`, "question and answer found together", on the frame's
    information (34 bits) while its own text held 14. What tells the item is its own text."""
    frame = 'According to the passage, which word belongs in the blank: "'
    rows = [  # (passage, the sentence with its blank, answer, the other choices)
        (
            "The device-mapper statistics facility allows separate performance counters to be maintained for "
            "arbitrary regions of devices. In this case a summary value for the entire region is also available "
            "for use in reports.",
            "In this case a summary value for the entire region is _____ available for use in reports.",
            "also",
            ("performance", "allows", "region"),
        ),
        (
            "Causes all forward searches to start just after the target line. This was the default behavior in "
            "less versions prior to 441.",
            "This was the default _____ in less versions prior to 441.",
            "behavior",
            ("target", "forward", "line"),
        ),
        (
            "Note that using the CMAKE_SOURCE_DIR variable inside a toolchain file is typically undesirable.",
            "Note that using the CMAKE_SOURCE_DIR variable inside a toolchain file is typically _____.",
            "undesirable",
            ("toolchain", "variable", "file"),
        ),
    ]
    page = (
        f'{frame}In this case an explicit close with SSL_no_shutdown set to true should be done in the parent _____." '
        "Answer: process. A union can also be emulated using FFI_TYPE_STRUCT."
    )
    index_corpus(engine, [{"id": "page", "text": page}])
    items = [
        BenchmarkItem(f"b{k}", k, passage=passage, question=f'{frame}{q}"', choices=(a, *others), answer=a)
        for k, (passage, q, a, others) in enumerate(rows)
    ]
    res = Scanner(engine).scan(items)
    assert [r.score.status for r in res] == ["clean"] * 3, [r.score.reason for r in res]
    assert "only 14 bits: too little to tell from chance" in res[0].score.reason, res[0].score.reason


def test_a_twin_s_distinct_word_in_a_phrase_is_not_its_question_found(
    engine: Engine, index_corpus: IndexCorpus
) -> None:
    """A docstring probe (fixtures/docstring_questions.jsonl: 60 of its questions, two of them twins,
    "The line/column number of the end of the text where the what?"): the column twin was
    `suspicious`, "the question is in one document", where a page held "the column number of the
    current position": its four own tokens, none of the question around them. The question must
    be there as a whole."""
    page = (
        "=item current_line\n\nReturns the line number of the current position of the parse.\n\n"
        "=item current_column\n\nReturns the column number of the current position of the parse."
    )
    index_corpus(engine, [{"id": "pod", "text": page}])
    rows = [json.loads(line) for line in (Path(__file__).parent / "fixtures" / "docstring_questions.jsonl").open()]
    items = [BenchmarkItem(r["id"], k, question=r["question"], answer=r["answer"]) for k, r in enumerate(rows)]
    res = {r.item.item_id: r.score for r in Scanner(engine).scan(items)}
    assert res["column"].status == "clean", res["column"].reason
    assert all(s.status == "clean" for s in res.values())


def test_exact_copies_of_a_page_hold_a_run_as_one_page(engine: Engine, index_corpus: IndexCorpus) -> None:
    """A review: with "no other document holds the run", a partial copy on a page the corpus holds
    twice (a mirror), or on a page in each of two corpora scanned together (two crawls), went clean.
    Documents of one text are one place; another page holding the phrase is still another place."""
    item = "A kernel setting: the number of seconds to wait for the daemon before the socket is closed again."
    held = "the number of seconds to wait for the daemon; later the socket is closed again."
    page = f"{FILLER[:700]} {held} {FILLER[-250:]}"
    index_corpus(engine, [{"id": "a", "text": page}, {"id": "a-mirror", "text": page}], "mirrored")
    index_corpus(engine, [{"id": "a", "text": page}], "crawl2")
    asked = [BenchmarkItem("d", 0, question=item)]
    for corpora in (["mirrored"], ["mirrored", "crawl2"]):
        r = Scanner(engine, corpora=corpora).scan(asked)[0].score
        assert r.status == "suspicious", (corpora, r.reason)


def test_one_text_keys_are_the_keys_whose_documents_are_all_read_and_alike() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        keys = np.sort(rng.integers(-5, 5, rng.integers(0, 30)))
        docs = rng.integers(0, 8, len(keys))
        postings = scanning.Postings.of(keys, docs) if len(keys) else scanning.Postings.of(keys, docs)
        read = {
            int(d): scanning._Doc({"text_hash": int(rng.integers(-2, 2))}, "", np.zeros(0), np.zeros(0), None)  # type: ignore[arg-type]
            for d in rng.choice(8, rng.integers(0, 8), replace=False)
        }
        want = []
        for k in sorted(set(keys.tolist())):
            held = [int(d) for kk, d in zip(keys.tolist(), docs.tolist(), strict=True) if kk == k]
            if len(held) > 1 and all(d in read for d in held) and len({read[d].meta["text_hash"] for d in held}) == 1:
                want.append(k)
        assert scanning.one_text_keys(postings, read).tolist() == want


MMLU_HEADER = "The following are multiple choice questions (with answers) about computer documentation."
HEADER_WORDS = [
    "library",
    "file",
    "names",
    "prepend",
    "directory",
    "built",
    "option",
    "header",
    "module",
    "function",
    "returns",
    "value",
    "error",
    "buffer",
    "session",
    "element",
    "docs",
    "steps",
    "report",
    "support",
    "network",
    "socket",
    "thread",
    "memory",
    "parser",
    "token",
]


def test_a_header_every_item_carries_is_no_items_own_text_beside_a_competitor(
    engine: Engine, index_corpus: IndexCorpus
) -> None:
    """A trial's MMLU items, each question after the header lm-evaluation-harness writes ("The
    following are multiple choice questions (with answers) about ..."), copied in pages without
    the header: 43 of 100 copies were `suspicious`, "75% of the item's own text (44 tokens)".
    Where another item was a candidate copy and none was the better one, the header, in every
    item, was counted as the item's own text (with no candidate it was not). A template is no
    item's own text (principle 1): every copy is `contaminated`, the items not copied clean."""
    rng = random.Random(3)
    items, pages = [], []
    for k in range(30):
        q = " ".join(rng.choice(HEADER_WORDS) for _ in range(14)) + f" case{k}"
        choices = [" ".join(rng.choice(HEADER_WORDS) for _ in range(3)) + f" opt{k}{c}" for c in "abcd"]
        items.append(
            BenchmarkItem(f"q{k}", k, question=f"{MMLU_HEADER} {q}", choices=tuple(choices), answer=choices[k % 4])
        )
        if k < 10:
            body = "\n".join(f"{'ABCD'[j]}. {c}" for j, c in enumerate(choices))
            page = f"Practice test.\n{q}\n{body}\nAnswer: {'ABCD'[k % 4]}\n\nNext question follows."
            pages.append({"id": f"p{k}", "text": f"{FILLER[k * 40 : k * 40 + 400]} {page} {FILLER[-300:]}"})
    index_corpus(engine, pages, "web")
    results = Scanner(engine, corpora=["web"]).scan(items)
    assert [r.score.status for r in results[:10]] == ["contaminated"] * 10, [r.score.reason for r in results[:10]]
    assert all(r.score.own_tokens < r.score.tokens for r in results[:10])  # the header is not its own
    assert all(r.score.status == "clean" for r in results[10:])


def test_an_item_whose_text_is_common_says_so_not_no_overlap(engine: Engine, index_corpus: IndexCorpus) -> None:
    """An edited copy of a paragraph twelve README files hold: its n-grams are each in more than
    max_df documents, which the index lists no documents for, and the edits break every run of
    them short of a widespread copy's. It said "no substantial overlap found" (a new user's
    trial); it says why nothing was found."""
    para = (
        "For general discussion about the Debian toolchain use the debian toolchain mailing list and for specific "
        "things about the compiler packages use the bug tracker of each package when in doubt use the list"
    )
    docs = [{"id": f"readme{k}", "text": f"Package number {k} of the archive, notes. {para}. End."} for k in range(12)]
    index_corpus(engine, docs, "docs")
    edited = para.replace("general", "broad").replace("specific things", "specific matters").replace("when", "if")
    item = BenchmarkItem("q", 0, question="Where should Debian toolchain discussion go?", answer=edited)
    [r] = Scanner(engine, ["docs"]).scan([item])
    assert r.score.status == "clean" and "more than max_df (10) documents" in r.score.reason, r.score.reason


def test_a_moved_file_after_a_new_one_in_one_run_is_recorded_without_waiting(
    index_corpus: IndexCorpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review 40: file_indexed moves the record of a moved file with a write of its own, from the
    process that hands files to the writer. On SQLite that writer holds the write lock while its
    commit group is open (a new file before the moved one, in one run), and waits for the next
    file: the move waited the busy timeout (60 s) and the run failed, "the database is
    unavailable: database is locked"."""
    from contam.app.store import db as store_db

    monkeypatch.setattr(store_db, "SQLITE_BUSY_MS", 3_000)  # fail in 3 s, not 60
    url = f"sqlite:///{tmp_path / 'moved.db'}"
    store_db.upgrade(url)
    eng = store_db.make_engine(url)
    try:
        src = tmp_path / "src" / "pages.jsonl"
        src.parent.mkdir()
        src.write_text("".join(json.dumps(d) + "\n" for d in CORPUS))
        index_corpus(eng, [src], "ptr", store_text=False)
        run = tmp_path / "run"
        run.mkdir()
        new = run / "a_new.jsonl"  # sorted first: its group is open when the moved file comes
        new.write_text(
            "".join(json.dumps({"id": f"n{k}", "text": f"other page {k} of the run {k}"}) + "\n" for k in range(9))
        )
        moved = run / "b_moved.jsonl"
        src.rename(moved)
        files = {r.path: r for r in index_corpus(eng, [new, moved], "ptr", store_text=False).files}
        assert files[str(moved)].status == "unchanged" and files[str(moved)].indexed_as == str(moved)
        assert files[str(new)].status == "done"
    finally:
        eng.dispose()


def test_votes_equal_but_for_the_order_of_their_sums_tie() -> None:
    """1 + 1/2 + 1/6 and 1/6 + 1/2 + 1 differ in the last bit: the document with the larger sum
    took the place, where a tie is broken by what the documents are (a review)."""
    a, b = 1 + 1 / 2 + 1 / 6, 1 / 6 + 1 / 2 + 1
    assert a != b
    sure, tied = scanning.by_votes(np.array([3, 7]), np.array([a, b]), 1)
    assert sure.tolist() == [] and tied.tolist() == [3, 7]


SPORTS = "Joao Moutinho caught the screen pass in the NFC championship"


def test_exact_copies_of_one_page_count_once_in_document_frequency(engine: Engine, index_corpus: IndexCorpus) -> None:
    """A short item (under longest_match tokens: no widespread copy) on a page that the corpus
    holds twelve times over, byte for byte (mirrors, re-crawls), was `clean` as "a phrase this
    common": each copy counted as a document, so its n-grams were over max_df (session 48's
    note). Exact copies of a page are one text, and say no more than one page does; the same
    words in twelve different pages are still a common phrase, and so are documents that are each
    the short text alone (forty questions "What is the capital city of France?" written alike:
    a review). Each corpus holding the page keeps a copy, the first by name and place."""
    page = (
        f"Weekly sports quiz, question four, from the archive of the club's newsletter. {SPORTS}. "
        "Plausible or not? Think about the sport each name plays before you answer. Answer: no."
    )
    mirrors = [{"id": f"mirror{k}", "text": page} for k in range(12)]
    index_corpus(engine, mirrors, "mirrors")
    item = BenchmarkItem("s", 0, question=SPORTS, choices=("plausible", "implausible"), answer="implausible")
    [r] = Scanner(engine, ["mirrors"]).scan([item])
    assert r.score.status == "contaminated", r.score.reason
    assert [e.document_id for e in r.evidence][:1] == ["mirror0"], r.evidence
    spread = [
        {"id": f"page{k}", "text": f"Page {k} of another site, {k * 7} words on. {SPORTS}. Closing {k}."}
        for k in range(12)
    ]
    index_corpus(engine, spread, "spread")
    [common] = Scanner(engine, ["spread"]).scan([item])
    assert common.score.status == "clean" and "common" in common.score.reason, common.score.reason
    index_corpus(engine, [{"id": f"q{k}", "text": f"{SPORTS}."} for k in range(12)], "alone")
    [alone] = Scanner(engine, ["alone"]).scan([item])
    assert alone.score.status == "clean" and "common" in alone.score.reason, alone.score.reason
    # the page in two corpora, indexed in either order: each corpus credited with its copy
    index_corpus(engine, [{"id": f"z{k}", "text": page} for k in range(6)], "zeta")
    index_corpus(engine, [{"id": f"b{k}", "text": page} for k in range(6)], "beta")
    [both] = Scanner(engine, ["beta", "zeta"]).scan([item])
    assert both.score.status == "contaminated", both.score.reason
    assert {(e.corpus, e.document_id) for e in both.evidence} >= {("beta", "b0"), ("zeta", "z0")}, both.evidence
