"""The detection principles on small annotated cases, without a database.

`scan` runs the same pure pipeline as the Scanner (prepare, share, stats, judge), with document
frequencies counted over the documents given and every document a candidate.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contam.app.core import matching
from contam.app.core.align import align, align_fields, densest, find_sequence
from contam.app.core.config import Thresholds
from contam.app.core.items import PreparedItem, SharedText, prepare
from contam.app.core.matching import DocMatch, DocTokens, match_document
from contam.app.core.scoring import ItemScore, benchmark_stats, judge, shared_spans, split_marked, verdict
from contam.app.core.signatures import token_hashes
from contam.app.core.surprise import flat_bits, token_bits
from contam.app.core.text import tokenize
from contam.app.core.types import BenchmarkItem, Status
from contam.app.readers.benchmark import read_benchmark

N = 5
FILLER = " ".join(f"alpha{i} beta{i % 7} gamma{i % 13}" for i in range(400))  # unrelated text


def scan(
    items: Sequence[BenchmarkItem], docs: Mapping[str, str], th: Thresholds | None = None, short: bool = True
) -> dict[str, ItemScore]:
    """short: the index has the short channel (3-grams beside the 5-grams), as by default."""
    th = th or Thresholds()
    prepared = [prepare(it, N, 3 if short else 0) for it in items]
    shared = SharedText(prepared)
    names = list(docs)
    tokens = {k: DocTokens.of(token_hashes(tokenize(docs[names[k]])), N) for k in range(len(names))}
    df = Counter(h for d in tokens.values() for h in set(d.grams.tolist()))
    if short:
        df.update(h for d in tokens.values() for h in set(d.mgrams.tolist()))
    stats = benchmark_stats(prepared, shared, df, N, th, short)
    out = {}
    cache = matching.MatchCache()  # shared by the items, as a chunk's are in the Scanner
    for i, p in enumerate(prepared):
        out[p.item.item_id] = judge(i, prepared, stats, shared, _candidates(p, tokens), N, th, cache)[0]
    return out


def _candidates(p: PreparedItem, tokens: Mapping[int, DocTokens]) -> dict[int, tuple[DocTokens, None]]:
    """Every document holding one of the item's n-grams, its passage's, or its short-channel grams."""
    return {
        k: (d, None)
        for k, d in tokens.items()
        if np.isin(p.grams, d.grams).any()
        or np.isin(p.passage_grams, d.grams).any()
        or np.isin(p.sgrams, d.mgrams).any()
    }


def flagged(s: ItemScore) -> bool:
    return s.status in (Status.SUSPICIOUS, Status.CONTAMINATED)


CLAIMS = [
    "the river thames flooded the lower town twice during the cold spring of that year",
    "a committee of nine farmers voted to plant barley instead of wheat on the northern fields",
    "the old lighthouse keeper recorded every passing ship in a green leather notebook",
    "three bakers on the high street agreed to sell bread at the same price all winter",
]


def templated(i: int, claim: str) -> BenchmarkItem:
    return BenchmarkItem(
        f"claim{i}",
        i,
        question=f"On June 2017, the following claim was made: {claim}. Q: Was this claim true or false?",
        choices=("True", "False"),
        answer="True",
    )


def test_a_template_only_match_is_clean() -> None:
    """Every item shares the frame; a planted copy of claim 0 holds the frame too. The other
    claims match it only through the frame, which is not their own text: clean."""
    items = [templated(i, c) for i, c in enumerate(CLAIMS)]
    planted = (
        f"{FILLER} On June 2017, the following claim was made: {CLAIMS[0]}. Q: Was this claim true or "
        f"false? A. True B. False Answer: True {FILLER}"
    )
    s = scan(items, {"page": planted})
    assert s["claim0"].status == Status.CONTAMINATED  # its own claim is there
    for k in ("claim1", "claim2", "claim3"):
        assert s[k].status == Status.CLEAN, s[k].reason  # the frame alone is not evidence
        assert s[k].own_coverage < 0.2


PASSAGE = (
    "The expedition left the coastal village at dawn with eleven mules, four guides and enough salted fish "
    "for a month. After crossing the salt flats they reached the ruined monastery on the ninth day, where "
    "two guides fell ill and the party rested until the rains stopped."
)


def test_a_cache_shared_by_the_items_changes_no_match() -> None:
    """A chunk's items share one MatchCache (document ranges, and other items aligned with a
    range): each item's matches with its documents are what they are with a cache of its own,
    and the cache serves repeats (the page's copy of question 1 competes for every sibling)."""
    asked = [
        "How many mules, guides and fish did the expedition take with it when it left the coastal village?",
        "On which day did the party reach the monastery?",
        "Where did the party rest until the rains stopped?",
        "How many guides fell ill?",
    ]
    items = [BenchmarkItem(f"q{k}", k, question=f"{PASSAGE} Question: {q}") for k, q in enumerate(asked)]
    pages = {
        "a": f"{FILLER[:900]} {items[0].question} {FILLER[900:1800]}",
        "b": f"{FILLER[:500]} {items[0].question} {FILLER[500:900]} {PASSAGE}",
    }
    prepared = [prepare(it, N, 3) for it in items]
    shared = SharedText(prepared)
    tokens = {k: DocTokens.of(token_hashes(tokenize(t)), N) for k, t in enumerate(pages.values())}
    df = Counter(h for d in tokens.values() for g in (d.grams, d.mgrams) for h in set(g.tolist()))
    th = Thresholds()
    stats = benchmark_stats(prepared, shared, df, N, th, True)
    cache = matching.MatchCache()
    calls: Counter[str] = Counter()
    real = matching.align

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["align"] += 1
        return real(*args, **kwargs)

    def matches(i: int, p: PreparedItem, cache: matching.MatchCache | None) -> tuple[list[DocMatch], int]:
        before = calls["align"]
        out = [
            match_document(i, prepared, stats[i], shared, d, doc, N, th, None, cache)
            for d, (doc, _w) in _candidates(p, tokens).items()
        ]
        return out, calls["align"] - before

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(matching, "align", counted)
        aligned = {"own": 0, "shared": 0, "again": 0}
        for i, p in enumerate(prepared):
            one, k1 = matches(i, p, None)
            both, k2 = matches(i, p, cache)
            again, k3 = matches(i, p, cache)
            aligned["own"] += k1
            aligned["shared"] += k2
            aligned["again"] += k3
            for a, b, c in zip(one, both, again, strict=True):
                assert repr(a) == repr(b) == repr(c)
                for name in ("matched", "own", "own_hit"):
                    assert (getattr(a, name) == getattr(b, name)).all() and (getattr(a, name) == getattr(c, name)).all()
    # siblings compete for each other: a shared cache aligns less, and nothing the second time
    assert aligned["own"] > aligned["shared"] > 0 and aligned["again"] == 0, aligned


def test_a_match_cache_tells_documents_ranges_and_readings_apart() -> None:
    """A MatchCache answers a repeat with what it worked out before, and never one document's
    range for another's with the same bounds, a range for another range, or a region read
    otherwise (_unglued's) for the plain one."""
    other = prepare(BenchmarkItem("o", 0, question="seven silver swans swam slowly across the frozen lake"), N)
    texts = ["seven silver swans swam slowly across the frozen lake", "a lake froze while seven swans slept"]
    docs = [DocTokens.of(token_hashes(tokenize(f"{FILLER[:200]} {t} {FILLER[:200]}")), N) for t in texts]
    cache = matching.MatchCache()
    lo, hi = 30, 90
    a, b = cache.region(docs[0], lo, hi, N), cache.region(docs[1], lo, hi, N)
    assert a is cache.region(docs[0], lo, hi, N) and a is not b
    assert cache.region(docs[0], lo, hi + 1, N) is not a and cache.region(docs[0], lo, hi, N + 1) is not a
    for region in (a, b, cache.region(docs[0], lo + 5, hi, N)):
        want = align(other.ids, region.ids, other.whole)
        got = cache.align(other, region)
        assert got is cache.align(other, region) and not got.matched.flags.writeable
        assert np.array_equal(got.matched, want.matched) and got.blocks == want.blocks
    assert cache.align(other, a).matched.sum() > cache.align(other, b).matched.sum()
    unkeyed = matching.Region(a.ids.copy(), a.mgrams, a.grams)  # as _unglued makes one
    assert cache.align(other, unkeyed) is not cache.align(other, unkeyed)


def test_a_shared_passage_with_the_items_own_question_is_contaminated() -> None:
    """Two questions on one passage. The document holds the passage and question 1: item 1 is
    contaminated, item 2 (its sibling) is at most suspicious, and the reason says why."""
    q1 = BenchmarkItem(
        "q1", 0, question=f"{PASSAGE} Question: How many mules did the expedition take with it?", answer="eleven"
    )
    q2 = BenchmarkItem(
        "q2", 1, question=f"{PASSAGE} Question: On which day did the party reach the monastery?", answer="the ninth"
    )
    s = scan([q1, q2], {"page": f"{FILLER} {q1.question} Answer: eleven. {FILLER}"})
    assert s["q1"].status == Status.CONTAMINATED
    assert s["q2"].status != Status.CONTAMINATED


def _record(rng: random.Random, shared: bool) -> str:
    """A patient record as a structured-data benchmark writes it: one frame, only values differ."""
    v = {
        "age": rng.randint(30, 77),
        "sex": rng.choice(["Male", "Female"]),
        "cp": rng.choice(["Typical Angina", "Atypical Angina", "Asymptomatic", "Non-Anginal Pain"]),
        "bp": rng.randint(94, 200),
        "chol": rng.randint(126, 400),
        "fbs": rng.choice(["<= 120", "> 120"]),
        "ecg": rng.choice(["Normal", "ST-T wave abnormality", "Left ventricular hypertrophy"]),
        "hr": rng.randint(71, 202),
        "ex": rng.choice(["Yes", "No"]),
        "op": rng.choice(["0", "0.2", "1.4", "2.5"]),
        "slope": rng.choice(["Upsloping", "Flat", "Downsloping"]),
    }
    if shared:  # these records have four values in a row in common
        v.update(chol=288, fbs="<= 120", ecg="Left ventricular hypertrophy", hr=159)
    return (
        "Age: {age} years, Sex: {sex}, Chest pain type: {cp}, Resting blood pressure: {bp} mm Hg, "
        "Serum cholesterol: {chol} mg/dl, Fasting blood sugar: {fbs} mg/dl, Resting ECG results: {ecg}, "
        "Max heart rate achieved: {hr}, Exercise induced angina: {ex}, Oldpeak: {op}, ST Slope: {slope}"
    ).format(**v)


def test_another_records_copy_is_no_passage_found_of_a_record_sharing_values_with_it() -> None:
    """300 records in one frame (more items than name a competitor, as a real table's 918 have),
    five of them with a run of four values in common: with the frame between them, a 25-token run
    that five items share. A page holds record 0's copy. The others' own values are nowhere, and the
    run is record 0's text there: clean, where one was `suspicious`, "a 25-token passage it shares
    with 7 other item(s) was found" (a probe of real structured records, bench/new_shapes.py)."""
    rng = random.Random(5)
    items = [BenchmarkItem(f"r{k}", k, question=_record(rng, k < 5), answer=str(k % 2)) for k in range(300)]
    s = scan(items, {"page": f"{FILLER} Q: {items[0].question} {FILLER}"})
    assert s["r0"].status == Status.CONTAMINATED, s["r0"].reason
    for k in range(1, 5):
        assert s[f"r{k}"].status == Status.CLEAN, (k, s[f"r{k}"].reason)
        assert "0% of its own text" in s[f"r{k}"].reason, s[f"r{k}"].reason


RULE_WORDS = [
    "big",
    "huge",
    "small",
    "short",
    "smart",
    "bad",
    "poor",
    "kind",
    "quiet",
    "rough",
    "nice",
    "wealthy",
    "strong",
    "dull",
    "sad",
    "thin",
]
RULE_NAMES = ["Anne", "Bob", "Charlie", "Dave", "Erin", "Fiona", "Gary", "Harry"]
RULES = [
    f"If someone is {a} then they are {b}."
    for a, b in [("kind", "quiet"), ("rough", "sad"), ("nice", "wealthy"), ("small", "thin"), ("strong", "big")]
]


def _rule_passage(rng: random.Random, keep: float = 0.9) -> str:
    """Facts and rules as PARARULE-Plus writes them: most items carry most of the same rules."""
    facts = [" ".join(f"{rng.choice(RULE_NAMES)} is {rng.choice(RULE_WORDS)}." for _ in range(2)) for _ in RULES]
    return " ".join(f"{f} {r if rng.random() < keep else ''}".strip() for f, r in zip(facts, RULES, strict=True))


def test_a_twins_half_copy_is_no_copy_of_an_item_sharing_its_passage_through_a_template() -> None:
    """Two items with one passage and other questions, the twin's a word longer ("not"), and 300
    more carrying the same rules (so the rules' n-grams, in more items than name a competitor, cut
    the passage into runs too short for one). A page holds the passage and the twin's first two
    words: neither question's own words are there, so the page is no more one item's than the
    other's, `suspicious` at most. The twin, a word longer, held a smaller share of itself, so it
    was not taken for the page's item, and the shorter one was credited with the passage they
    share: `contaminated`, "89% of the item's own text" (a probe of near-duplicate benchmarks,
    bench/twin_shapes.py)."""
    rng = random.Random(0)
    shared = _rule_passage(rng, keep=1.0)
    items = [
        BenchmarkItem("short", 0, question=f"{shared} Question: Charlie is quiet.", answer="true"),
        BenchmarkItem("long", 1, question=f"{shared} Question: Gary is not wealthy.", answer="false"),
    ]
    items += [
        BenchmarkItem(
            f"o{k}", k + 2, question=f"{_rule_passage(rng)} Question: Bob is {rng.choice(RULE_WORDS)}.", answer="true"
        )
        for k in range(300)
    ]
    s = scan(items, {"doc": f"{FILLER[:3000]}\n\n{shared}\nGary is\n\n{FILLER[3000:6000]}"})
    for k in ("short", "long"):
        assert s[k].status == Status.SUSPICIOUS, (k, s[k].reason)
        assert "passage it shares with 1 other item(s) was found, but not this item's own text" in s[k].reason


def test_a_wrong_option_several_items_share_found_alone_flags_none_of_them() -> None:
    """Shared choices are a template, not a passage: three quiz items offering the same long wrong
    option (a library's docstring), on a page holding only that docstring, were each `suspicious`,
    "a 28-token passage it shares with 2 other item(s) was found" (a trial); the item alone with
    that option was `clean`. A passage is what an item asks about: only the question's text
    makes one."""
    option = (
        "Log a message with severity 'INFO' on the root logger. If the logger has no handlers, call "
        "basicConfig() to add a console handler with a pre-defined format."
    )
    questions = [
        "Which standard library function would you call to compute the greatest common divisor of two integers?",
        "A developer needs to serialise a dictionary to a string of JSON text; which call does that most directly?",
        "To split a path into its directory and final component, which function from os.path is the usual choice?",
        "Which module offers a heap queue algorithm, also known as the priority queue algorithm, for plain lists?",
    ]
    items = [
        BenchmarkItem(
            f"t{k}", k, question=q, choices=(f"right answer number {k} here", option if k < 3 else f"other {k}")
        )
        for k, q in enumerate(questions)
    ]
    s = scan(items, {"doc": f"{FILLER[:3000]}\n\n{option}\n\n{FILLER[3000:6000]}"})
    assert all(s[f"t{k}"].status == Status.CLEAN for k in range(4)), {k: v.reason for k, v in s.items()}
    # the same run written into the questions is a passage: found alone, it flags them
    passage = [replace(it, question=f"{option} {it.question}", choices=()) for it in items[:3]]
    s = scan(passage, {"doc": f"{FILLER[:3000]}\n\n{option}\n\n{FILLER[3000:6000]}"})
    assert all(v.status == Status.SUSPICIOUS and "passage it shares with 2 other" in v.reason for v in s.values())


@pytest.mark.parametrize("walks", ["walks alongside", "walks beside"])
def test_an_items_question_and_answer_inside_another_items_context_are_its_copy(walks: str) -> None:
    """A HellaSwag item's context and answer are, word for word, the next item's context (the
    video goes on). A page holds the first item's question and its answer: its copy, though the
    other item holds as much of the page's text (the rule above for twins gives a page of shared
    text to neither; here the first item's question is there whole, with its answer). With a word
    of the question edited, the answer after it still makes it the first item's copy (a review:
    clean, where it had been `contaminated`)."""
    e1 = [
        "is running around the yard, jumping over the obstacle.",
        "is running in slow motion, watching for his step.",
        "instructs the boy on how to turn the mower and go around a small tree.",
        "ties a man's shoes.",
    ]
    e2 = [
        "shows the correct way to spin the pedals.",
        "continues walking and guiding the boy.",
        "then pushes the fourteen speed to speed up the motion.",
        "instructs the boy on how to start the mower.",
    ]
    mowing = "A man walks alongside a boy who is mowing the lawn."
    a = BenchmarkItem("a", 0, question=f"{mowing} he", choices=tuple(e1), answer=e1[2])
    b = BenchmarkItem("b", 1, question=f"{mowing} He {e1[2]} he", choices=tuple(e2), answer=e2[1])
    page = mowing.lower().replace("walks alongside", walks)
    s = scan([a, b], {"page": f"{FILLER} q: {page} he a: {e1[2]} {FILLER}"})
    assert s["a"].status == Status.CONTAMINATED, s["a"].reason
    assert s["b"].status == Status.CLEAN, s["b"].reason


def test_a_three_word_question_beside_its_passage_field_is_judged() -> None:
    """PARARULE-Plus gives rules and facts as a passage field and asks three words of them ("Anne
    is big."): every such item was `too_short` (426 of 2,000 in a probe, bench/twin_shapes.py, 13
    of its 14 missed verbatim copies), though the question beside its passage is a copy anyone can
    tell. With a passage field the item is judged: its passage, question and answer together are
    `contaminated`, without the answer `suspicious`; the passage alone, a sibling's copy (same
    passage, another question) and the three words met elsewhere leave it clean."""
    rng = random.Random(1)
    passages = [_rule_passage(rng, keep=1.0) for _ in range(60)]
    items = [
        BenchmarkItem(
            f"i{k}",
            k,
            question=f"{rng.choice(RULE_NAMES)} is {'not ' if rng.random() < 0.5 else ''}{rng.choice(RULE_WORDS)}.",
            passage=passages[k // 4],
            answer=rng.choice(["true", "false"]),
        )
        for k in range(240)
    ]
    item, sibling = items[0], items[1]
    pages = {
        "verbatim": (f"{item.passage} Question: {item.question} Answer: {item.answer}", Status.CONTAMINATED),
        "question": (f"{item.passage} {item.question}", Status.SUSPICIOUS),
        "passage": (item.passage, Status.CLEAN),
        "sibling": (f"{sibling.passage} Question: {sibling.question} Answer: {sibling.answer}", Status.CLEAN),
        "phrase": (f"we know that {item.question} and more", Status.CLEAN),
    }
    for name, (text, status) in pages.items():
        s = scan(items, {name: f"{FILLER} {text} {FILLER}"})
        assert s["i0"].status == status, (name, s["i0"].reason)
    assert scan(items, {"sibling": f"{FILLER} {pages['sibling'][0]} {FILLER}"})["i1"].status == Status.CONTAMINATED


def test_an_answer_among_another_items_choices_is_not_found_with_a_shared_question() -> None:
    """Two multiple-choice items ask one question (a malware report's "which behaviours are
    malicious?"); one's answer is one of the other's choices, whose own answer is "All of the
    above". A page holding the second item's copy holds the first's question and its answer's
    words, but as a choice listed there: clean, where it was `contaminated`, "question and answer
    found together" (a probe: 17 clean items of 529 so, bench/boiler_shapes.py). The first item's
    own copy still makes it `contaminated`."""
    stem = "Based on the provided report, which of the following behaviors are indicative of malicious activity?"
    remote = "Writes data to a remote process"
    a_choices = (
        "Writes files in a temp directory",
        "Loads modules at runtime",
        "Creates a thread in a self process",
        remote,
        "Opens file with deletion access rights",
    )
    b_choices = (
        remote,
        "Possibly tries to evade analysis by sleeping many times",
        "Drops executable files to the Windows system directory",
        "Imports suspicious APIs",
        "All of the above",
    )
    a = BenchmarkItem("a", 0, question=stem, choices=a_choices, answer=remote)
    b = BenchmarkItem("b", 1, question=stem, choices=b_choices, answer="All of the above")

    def page(it: BenchmarkItem) -> str:
        listed = "\n".join(f"({'ABCDE'[k]}) {c}" for k, c in enumerate(it.choices))
        return f"{FILLER[:600]}\n\nQuestion: {stem}\n{listed}\nAnswer: {it.answer}\n\n{FILLER[-600:]}"

    s = scan([a, b], {"b": page(b)})
    assert s["b"].status == Status.CONTAMINATED and s["a"].status == Status.CLEAN, s["a"].reason
    assert scan([a, b], {"a": page(a)})["a"].status == Status.CONTAMINATED


def test_a_page_of_two_items_asking_one_question_tells_the_first_by_its_answer() -> None:
    """Four items ask one question and differ by their answers. A page gives two of them, each
    with its answer: the first is `contaminated` by its own, though the page holds another item's copy
    too (a review: turned off on any other item's copy, the rule for a shared question made the
    first `suspicious`). (The second is not found: its region is placed on the first copy, which
    holds as much of its text; left.)"""
    stem = "Which city is the capital of the country described in the report below?"
    answers = ["Ouagadougou in Burkina Faso", "Antananarivo in Madagascar", "Ulaanbaatar in Mongolia", "Nouakchott"]
    items = [BenchmarkItem(f"t{k}", k, question=stem, answer=a) for k, a in enumerate(answers)]
    page = "\n\n".join(f"Question: {stem}\nAnswer: {a}" for a in answers[:2])
    s = scan(items, {"quiz": f"{FILLER[:600]}\n\n{page}\n\n{FILLER[-600:]}"})
    assert s["t0"].status == Status.CONTAMINATED, s["t0"].reason
    assert s["t2"].status != Status.CONTAMINATED and s["t3"].status != Status.CONTAMINATED


PARMA = (
    "The Parma trolleybus system forms part of the public transport network of the city and comune of Parma, in "
    "the region of Emilia-Romagna, northern Italy. In operation since 1953, the system presently comprises four "
    "urban routes and is run by the municipal company."
)


def test_a_question_of_a_word_with_a_passage_field_is_too_short_not_an_error() -> None:
    """A passage field with a one-word question and answer ("Why?", "yes"): too short to judge,
    and a page holding the passage with them is no error (it raised ValueError from numpy's
    sliding window over the item's quoted tokens, fewer than MATCH_N, and the whole scan failed)."""
    item = BenchmarkItem("why", 0, question="Why?", passage=PARMA, answer="yes")
    assert scan([item], {"page": f"{FILLER} {PARMA} Why? yes {FILLER}"})["why"].status == Status.TOO_SHORT


def test_a_clean_items_reason_says_its_passage_was_found() -> None:
    """A reading-comprehension item whose passage the corpus holds, its question not, is clean,
    as documented; its reason said "no substantial overlap found" beside evidence showing the
    passage (a trial)."""
    item = BenchmarkItem("parma", 0, question="How many urban routes does the system run today?", passage=PARMA)
    r = scan([item], {"page": f"{FILLER} {PARMA} {FILLER}"})["parma"]
    assert r.status == Status.CLEAN and r.passage_found, r.reason
    assert "its passage was found, which alone decides nothing" in r.reason, r.reason


def test_an_item_without_text_of_its_own_says_so_where_its_text_is_found() -> None:
    """A licence sentence that other items of the benchmark share all but a word of, the word in
    a third item's phrase too: its text is in the corpus (ngram_overlap 1.0), no document is a
    candidate, and its reason was "no substantial overlap found" (a trial). It says none of its
    text is its own, so a document holding it tells no item apart."""
    texts = [
        "You should have received a copy of the GNU General Public License along with this file.",
        "You should have received a copy of the GNU General Public License along with this program.",
        "A copy of the licence comes along with this file in the source tree of the project.",
    ]
    th = Thresholds()
    prepared = [prepare(BenchmarkItem(f"i{k}", k, question=t), N, 3) for k, t in enumerate(texts)]
    shared = SharedText(prepared)
    page = DocTokens.of(token_hashes(tokenize(f"{FILLER[:300]} {texts[0]} {FILLER[-300:]}")), N)
    df = Counter([*page.grams.tolist(), *page.mgrams.tolist()])
    stats = benchmark_stats(prepared, shared, df, N, th, True)
    score = judge(0, prepared, stats, shared, {}, N, th, matching.MatchCache())[0]
    assert score.status == Status.CLEAN and score.own_tokens == 0 and score.ngram_overlap == 1.0
    assert score.reason.startswith("none of its text is its own: each part of it is in other items"), score.reason
    assert score.reason.endswith(  # the other two items share its opening and its close
        "(up to 2) or common in the corpora, so the 100% of its n-grams the corpora hold tell no item apart"
    )
    # shared only in pieces shorter than an index n-gram (a review: "up to 0"): counted by the grams that decide
    w = [
        "alpha",
        "bravo",
        "charlie",
        "delta",
        "echo",
        "foxtrot",
        "golf",
        "hotel",
        "india",
        "juliet",
        "kilo",
        "lima",
        "mike",
        "november",
    ]
    pieces = [
        " ".join(w[k : k + 4]) + f" padding{k} words{k} here{k} more{k} stuff{k}" for k in range(0, len(w) - 2, 2)
    ]
    prepared = [prepare(BenchmarkItem(f"i{k}", k, question=t), N, 3) for k, t in enumerate([" ".join(w), *pieces])]
    shared = SharedText(prepared)
    page = DocTokens.of(token_hashes(tokenize(f"{FILLER[:300]} {' '.join(w)} {FILLER[-300:]}")), N)
    stats = benchmark_stats(prepared, shared, Counter([*page.grams.tolist(), *page.mgrams.tolist()]), N, th, True)
    score = judge(0, prepared, stats, shared, {}, N, th, matching.MatchCache())[0]
    assert score.own_tokens == 0 and "(up to 1) or common" in score.reason, score.reason


@pytest.mark.parametrize("order", ["passage first", "question first"])
def test_a_question_copied_beside_its_passage_field_is_contaminated(order: str) -> None:
    """Reading-comprehension items (SQuAD, BoolQ) give the passage as a field of its own, scored
    apart from the item's text. A page holding the passage, then the question and its answer,
    word for word, was clean ("runs of at most 4 tokens"): the range aligned was placed by the
    passage's n-grams with the item's, so it sat inside the passage, several times longer than
    the question, and the question after it was matched only through the words it shares with
    the passage. Placed by the item's own n-grams, the question is found on either side; the
    passage alone still leaves the item clean, its presence said by passage_found."""
    q = "How many urban routes does the Parma trolleybus system presently comprise?"
    item = BenchmarkItem("parma", 0, question=q, passage=PARMA, answer="four")
    other = BenchmarkItem(
        "champions",
        1,
        question="In what year was The Champions first broadcast?",
        passage="The Champions was a British espionage and science fiction adventure series first broadcast in 1968.",
        answer="1968",
    )
    copy = (
        f"{PARMA} Question: {q} Answer: four." if order == "passage first" else f"Question: {q} Answer: four. {PARMA}"
    )
    s = scan([item, other], {"page": f"{FILLER} {copy} {FILLER}"})["parma"]
    assert s.status == Status.CONTAMINATED and s.passage_found and s.answer_found, s.reason
    alone = scan([item, other], {"wiki": f"{FILLER} {PARMA} {FILLER}"})["parma"]
    assert alone.status == Status.CLEAN and alone.passage_found, alone.reason


def test_an_item_whose_text_others_have_with_other_passages_needs_its_own_passage() -> None:
    """DROP asks "How many yards was the shortest field goal?" of seven passages. With the passage
    a field of its own, two such items with the same answer have the same scored text, and a page
    holding one's passage, question and answer made both contaminated (0.55% of DROP's clean
    items in that layout). Only the passage tells them apart: without it the copy may be the
    other's, so it is at most suspicious; with it, contaminated, as before."""
    q = "How many yards was the shortest field goal of the game?"
    other_passage = "The Bears opened the scoring with a long drive that ended in a short field goal in the rain."
    a = BenchmarkItem("a", 0, question=q, passage=PARMA, answer="24")
    b = BenchmarkItem("b", 1, question=q, passage=other_passage, answer="24")
    s = scan([a, b], {"page": f"{FILLER} {PARMA} Question: {q} Answer: 24. {FILLER}"})
    assert s["a"].status == Status.CONTAMINATED and s["a"].passage_found, s["a"].reason
    assert s["b"].status == Status.SUSPICIOUS and not s["b"].passage_found, s["b"].reason
    assert "not its passage" in s["b"].reason


def test_what_a_question_quotes_of_its_passage_is_no_evidence() -> None:
    """SQuAD's questions quote their passage ("the system presently comprises four urban routes"):
    a page holding the passage alone (Wikipedia's, in any web corpus) held a six-word run of the
    question and made it suspicious. The quoted words are found wherever the passage is, so they
    are not the item's own text; the question copied whole is still contaminated."""
    q = "Which municipal company runs what forms part of the public transport network of the city and comune of Parma?"
    item = BenchmarkItem("parma", 0, question=q, passage=PARMA, answer="the municipal company")
    others = [BenchmarkItem(f"o{k}", 1 + k, question=c, answer="yes") for k, c in enumerate(CLAIMS)]
    alone = scan([item, *others], {"wiki": f"{FILLER} {PARMA} {FILLER}"})["parma"]
    assert alone.status == Status.CLEAN and alone.passage_found, alone.reason
    page = f"{FILLER} {PARMA} Question: {q} Answer: the municipal company. {FILLER}"
    copied = scan([item, *others], {"page": page})["parma"]
    assert copied.status == Status.CONTAMINATED and copied.answer_found, copied.reason


NORMANS = (
    "The Normans (Norman: Nourmands; French: Normands; Latin: Normanni) were the people who in the 10th and 11th "
    "centuries gave their name to Normandy, a region in France. They were descended from Norse raiders and pirates "
    "from Denmark, Iceland and Norway who, under their leader Rollo, agreed to swear fealty to King Charles III."
)


def test_an_answer_quoted_from_the_passage_is_no_evidence() -> None:
    """An extractive answer (SQuAD's) is a span of the passage, so every copy of the passage holds
    it, however short: a page holding the Normans passage alone held "10th and 11th centuries"
    (4 tokens, under an n-gram's length, so not counted as quoted) and "Normans" of the question,
    40% of the item's own text, and made it suspicious. The question copied with its answer is
    still contaminated, the answer found."""
    asked = [
        ("In what country is Normandy located?", "France"),
        ("When were the Normans in Normandy?", "10th and 11th centuries"),
        ("Who was the Norse leader?", "Rollo"),
    ]
    items = [BenchmarkItem(f"n{k}", k, question=q, passage=NORMANS, answer=a) for k, (q, a) in enumerate(asked)]
    items += [BenchmarkItem(f"o{k}", 10 + k, question=c, answer="yes") for k, c in enumerate(CLAIMS)]
    alone = scan(items, {"wiki": f"{FILLER} {NORMANS} {FILLER}"})
    assert all(alone[f"n{k}"].status == Status.CLEAN for k in range(3)), [alone[f"n{k}"].reason for k in range(3)]
    page = f"{FILLER} {NORMANS} Q: {asked[1][0]} A: {asked[1][1]}. {FILLER}"
    copied = scan(items, {"page": page})["n1"]
    assert copied.status == Status.CONTAMINATED and copied.answer_found, copied.reason


STROMA = (
    "The lighthouse keepers of Stroma rowed across the firth every Sunday to buy bread, lamp oil and "
    "newspapers in John o' Groats before the ferry service began."
)


def test_a_hypothesis_repeating_its_premise_is_found_beside_it() -> None:
    """An entailed hypothesis is often its premise's first words ("The lighthouse keepers of Stroma
    rowed across the firth."): every word of it is quoted from its passage field, so it had no own
    text and even a verbatim copy of premise, hypothesis and label was clean (a probe of an NLI
    benchmark: 28% of its verbatim copies). A copy holds the hypothesis again, apart from the
    premise: there it is the item's own text. Inside the premise's copy it is not, nor on a page
    holding a sibling's copy, nor beside a premise reworded around its first words (a sibling's
    edited copy), nor alone."""
    hyps = [
        ("The lighthouse keepers of Stroma rowed across the firth.", "entailment"),
        ("Nobody ever rowed from Stroma to the mainland on a Sunday.", "contradiction"),
        ("The keepers also bought tobacco and candles on those trips.", "neutral"),
    ]
    items = [BenchmarkItem(f"h{k}", k, question=h, passage=STROMA, answer=a) for k, (h, a) in enumerate(hyps)]
    items += [BenchmarkItem(f"o{k}", 10 + k, question=c, answer="yes") for k, c in enumerate(CLAIMS)]
    for layout in (
        f"Premise: {STROMA} Hypothesis: {hyps[0][0]} Label: entailment",
        f"{STROMA} {hyps[0][0]} entailment",
        f"Hypothesis: {hyps[0][0]} Premise: {STROMA} Label: entailment",
    ):
        r = scan(items, {"page": f"{FILLER} {layout} {FILLER}"})
        assert r["h0"].status == Status.CONTAMINATED, (layout, r["h0"].reason)
        assert r["h0"].answer_found == (not layout.startswith("H")), layout  # the label within reach of the hypothesis
        assert not flagged(r["h1"]), r["h1"].reason
    # a short premise: placed with the premise's n-grams, the region held its first words and the
    # hypothesis was aligned with them, so the label after its copy was not found (a new user)
    said = "The harbour master closed the northern pier."
    pier = f"{said[:-1]} on Friday morning after a storm cracked two of its oldest wooden pylons."
    short = BenchmarkItem("p", 5, question=said, passage=pier, answer="entailment")
    page = f"{FILLER} Premise: {pier}\nHypothesis: {said}\nLabel: entailment {FILLER}"
    r = scan([short, *items], {"page": page})["p"]
    assert r.status == Status.CONTAMINATED and r.answer_found, r.reason
    sibling = scan(items, {"page": f"{FILLER} {STROMA} {hyps[1][0]} contradiction {FILLER}"})
    assert sibling["h1"].status == Status.CONTAMINATED and not flagged(sibling["h0"]), sibling["h0"].reason
    edited = (
        "The lighthouse keepers of Stroma rowed across the firth each week to fetch meal, paraffin and "
        "letters from Wick until the steamer came. Nobody ever rowed from Stroma to the mainland on a Sunday."
    )
    for page in (STROMA, edited, hyps[0][0]):
        r = scan(items, {"page": f"{FILLER} {page} {FILLER}"})
        assert r["h0"].status != Status.CONTAMINATED, (page, r["h0"].reason)
    assert not flagged(scan(items, {"page": f"{FILLER} {edited} {FILLER}"})["h0"])


def test_the_passage_s_source_is_no_copy_of_a_question_quoting_it() -> None:
    """What a question quotes of its passage counts only where the document holds it again, beside
    the passage's copy (a review of the first version, which counted it wherever it stood apart
    from a chain of the passage's n-grams): the premise's own source with a clause inserted right
    after the quoted words, or split there, or reworded around them, or only one of its phrases
    beside the quoted words, holds them once and is no copy of the hypothesis; nor is a passage
    that repeats the quoted phrase itself, nor a sibling's question quoting the same words when
    the sibling is not among the items checked (its question's other words are not this one's)."""
    others = [BenchmarkItem(f"o{k}", 10 + k, question=c, answer="yes") for k, c in enumerate(CLAIMS)]
    premise = f"{STROMA[:-1]} at the end of the war."
    h0 = BenchmarkItem("h", 0, question="The lighthouse keepers of Stroma rowed across the firth.", passage=premise)
    sources = [
        premise.replace("the firth every", "the firth, a stretch of water famous for its tides and whirlpools, every"),
        premise.replace(
            "the firth every", "the firth. Advertisement: buy new boots and coats today at half price. Every"
        ),
        "The lighthouse keepers of Stroma rowed across the firth each week to fetch meal, paraffin and letters "
        "in John o' Groats before the ferry service began at the end of the war.",
        "The lighthouse keepers of Stroma rowed across the firth in a gale. They gave up at the end of the war.",
    ]
    for page in sources:
        r = scan([h0, *others], {"page": f"{FILLER} {page} {FILLER}"})["h"]
        assert r.status == Status.CLEAN, (page, r.reason)
    refrain = "the miners of the valley walked down to the harbour every morning at dawn with their sacks of coal"
    twice = f"{refrain} and sold it to the captains of the fleet. When the pits closed that winter {refrain} once more."
    miners = BenchmarkItem("m", 0, question=f"{refrain}.", passage=twice, answer="entailment")
    assert scan([miners, *others], {"page": f"{FILLER} {twice} {FILLER}"})["m"].status == Status.CLEAN
    copied = f"{FILLER} Premise: {twice} Hypothesis: {refrain}. Label: entailment {FILLER}"
    assert scan([miners, *others], {"page": copied})["m"].status == Status.CONTAMINATED
    game = (
        "The Ravens opened the scoring with a 32-yard field goal by Matt Stover. Baltimore extended the lead with a "
        "touchdown pass from Kyle Boller to Todd Heap after the interception by Ed Reed in the second quarter."
    )
    asked = "How many yards did the Ravens gain on the drive after the interception by Ed Reed in the second quarter?"
    item = BenchmarkItem("g", 0, question=asked, passage=game, answer="41")
    sibling = "Which player caught the touchdown pass after the interception by Ed Reed in the second quarter?"
    r = scan([item, *others], {"page": f"{FILLER} {game} Question: {sibling} Answer: Todd Heap {FILLER}"})["g"]
    assert r.status == Status.CLEAN, r.reason
    r = scan([item, *others], {"page": f"{FILLER} {game} Question: {asked} Answer: 41 {FILLER}"})["g"]
    assert r.status == Status.CONTAMINATED and r.answer_found, r.reason
    # two hypotheses quoting overlapping words of one premise: a copy of the one repeats part of
    # the other's quoted words, not most of them (the probe's NLI: a sibling `contaminated`)
    note = "It does not yet work completely, but may be used to list the keys of the archive."
    pair = [
        BenchmarkItem("e", 0, question="It does not yet work completely.", passage=note, answer="entailment"),
        BenchmarkItem("n", 1, question="Does not yet work completely, but may be.", passage=note, answer="neutral"),
    ]
    page = f"{FILLER} Premise: {note} Hypothesis: It does not yet work completely. {FILLER}"
    r = scan([*pair, *others], {"page": page})
    assert r["e"].status.flagged and r["n"].status == Status.CLEAN, (r["e"].reason, r["n"].reason)


def test_quoted_words_count_against_every_copy_of_the_passage() -> None:
    """A second review: the quoted words were counted again where the page held the passage twice
    (a dump giving a premise with each of its other hypotheses), and where the source repeated a
    phrase the question quotes twice. They count where the page holds them as often as every copy
    of the passage there and a copy of the question together. And a dump asking one question of
    two passages: the region placed apart from the passage's copy lost the passage's choice
    between the question's copies, and the first item's copy beside the second's passage was no
    one's."""
    others = [BenchmarkItem(f"o{k}", 10 + k, question=c, answer="yes") for k, c in enumerate(CLAIMS)]
    hyps = [
        ("The lighthouse keepers of Stroma rowed across the firth.", "entailment"),
        ("Nobody ever rowed from Stroma to the mainland on a Sunday.", "contradiction"),
        ("The keepers also bought tobacco and candles on those trips.", "neutral"),
    ]
    items = [BenchmarkItem(f"h{k}", k, question=h, passage=STROMA, answer=a) for k, (h, a) in enumerate(hyps)]
    rows = [f"Premise: {STROMA} Hypothesis: {h} Label: {a}\n" for h, a in hyps]
    for page in (f"{STROMA} {STROMA}", rows[1] + rows[2]):
        assert scan([*items, *others], {"page": f"{FILLER} {page} {FILLER}"})["h0"].status == Status.CLEAN, page
    r = scan([*items, *others], {"page": f"{FILLER} {''.join(rows)} {FILLER}"})
    assert all(r[f"h{k}"].status == Status.CONTAMINATED for k in range(3)) and r["h0"].answer_found
    weavers = "The weavers of the valley walked twelve miles each morning to the new factory beside the station."
    twice = "The weavers of the valley walked twelve miles, the weavers of the valley walked twelve miles."
    item = BenchmarkItem("w", 0, question=twice, passage=weavers, answer="entailment")
    source = f"{FILLER} {weavers} In winter the weavers of the valley walked twelve miles in the dark. {FILLER}"
    assert scan([item, *others], {"page": source})["w"].status == Status.CLEAN
    assert scan([item, *others], {"page": f"{FILLER} {weavers} {twice} entailment {FILLER}"})["w"].status.flagged
    first = (
        "The Ravens opened the scoring with a field goal by Matt Stover. Baltimore scored two touchdowns in the "
        "second quarter, a pass from Kyle Boller to Todd Heap and a run by Jamal Lewis, and led at the half."
    )
    second = (
        "Pittsburgh fell behind early when Jeff Reed missed from 41 yards. The Steelers scored three touchdowns "
        "in the second quarter, two runs by Jerome Bettis and a pass to Hines Ward, and never trailed again."
    )
    asked = "How many touchdowns in the second quarter did the team score?"
    games = [BenchmarkItem("a", 0, question=asked, passage=first, answer="2")]
    games += [BenchmarkItem("b", 1, question=asked, passage=second, answer="3")]
    dump = f"Passage: {second} Question: {asked} Answer: 3\n\nPassage: {first} Question: {asked} Answer: 2"
    r = scan([*games, *others], {"page": f"{FILLER} {dump} {FILLER}"})
    assert r["a"].status == r["b"].status == Status.CONTAMINATED and r["a"].answer_found and r["b"].answer_found


def test_a_chat_copied_without_its_system_prompt_is_contaminated() -> None:
    """A benchmark of five chats sharing one system prompt: read into the question, the prompt
    (in fewer items than a template is) counted as each item's own text, and a page holding one
    item's user and assistant turns held 74% of it: `suspicious` (a new user's trial). A system
    message is the chat's passage, which a copy of the turns need not hold."""
    system = {
        "role": "system",
        "content": "You are a careful assistant for the lighthouse service of the northern isles.",
    }
    turns = [
        ("Why did the keepers of Stroma row across the firth every Sunday?", "To buy bread, lamp oil and newspapers."),
        ("How often was the lamp on Muckle Flugga cleaned in winter storms?", "Every night, before the watch began."),
        (
            "Who relieved the keepers of Sule Skerry when the relief boat failed?",
            "A trawler from Stromness, in calm weather.",
        ),
        (
            "What did the keepers of the Flannan Isles record before they vanished?",
            "Nothing after the fifteenth of December.",
        ),
        (
            "Where were the spare lenses for the Pentland Skerries light kept?",
            "In the store room under the tower stairs.",
        ),
    ]
    rows = [
        {"id": f"c{k}", "messages": [system, {"role": "user", "content": q}, {"role": "assistant", "content": a}]}
        for k, (q, a) in enumerate(turns)
    ]
    items, _ = read_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), "chat.jsonl")
    page = f"{FILLER} User: {turns[0][0]} Assistant: {turns[0][1]} {FILLER}"
    r = scan(items, {"page": page})
    assert r["c0"].status == Status.CONTAMINATED and r["c0"].answer_found, r["c0"].reason
    assert r["c0"].own_coverage == 1.0 and not any(flagged(r[f"c{k}"]) for k in range(1, 5))


def test_a_short_answer_alone_is_no_copy_of_the_item() -> None:
    """An entailed hypothesis quoting its premise has no own text where the page does not hold it
    again, only its label: a page holding the premise with the word "entailment" near it held
    "100% of the item's own text (1 tokens)" and was `contaminated` (a review). Own text that is
    only a short answer is no copy of the item; a sibling's copy is still its own."""
    others = [BenchmarkItem(f"o{k}", 10 + k, question=c, answer="yes") for k, c in enumerate(CLAIMS)]
    hyps = [
        ("The lighthouse keepers of Stroma rowed across the firth.", "entailment"),
        ("People on Stroma depended on the mainland for supplies.", "entailment"),
    ]
    items = [BenchmarkItem(f"h{k}", k, question=h, passage=STROMA, answer=a) for k, (h, a) in enumerate(hyps)]
    for page in (f"{STROMA} entailment", f"Premise: {STROMA} Label: entailment"):
        r = scan([*items, *others], {"page": f"{FILLER} {page} {FILLER}"})
        assert not flagged(r["h0"]) and not flagged(r["h1"]), (page, r["h0"].reason)
    copied = f"{FILLER} Premise: {STROMA} Hypothesis: {hyps[1][0]} Label: entailment {FILLER}"
    r = scan([*items, *others], {"page": copied})
    assert r["h1"].status == Status.CONTAMINATED and not flagged(r["h0"]), r["h0"].reason


def test_a_short_question_is_found_apart_from_its_passage_and_a_phrase_is_not() -> None:
    """A probe of reading-comprehension layouts. A question of fewer than n tokens has no n-gram,
    so its region was placed by the passage's, inside the passage where its quoted words are, and
    a page giving the passage, then the question and its answer, was clean, while the question
    copied alone was found: it is placed by its MATCH_N-grams apart from the passage's copy. And a
    hypothesis that is one n-gram of its premise, all quoted, is a phrase the premise's source
    may say again ("To make a version of bc with a custom crossover point"): not its copy."""
    others = [BenchmarkItem(f"o{k}", 10 + k, question=c, answer="yes") for k, c in enumerate(CLAIMS)]
    context = (
        "The keepers of Stroma lit the lamp each evening and an unspecified number of boats passed the "
        "firth every night in winter, most of them trawlers bound for Wick and Scrabster."
    )
    item = BenchmarkItem("q", 0, question="Unspecified number of which?", passage=context, answer="boats")
    page = f"{FILLER} Context: {context} Question: Unspecified number of which? Answer: boats {FILLER}"
    r = scan([item, *others], {"page": page})["q"]
    assert r.status == Status.CONTAMINATED and r.answer_found, r.reason
    assert scan([item, *others], {"page": f"{FILLER} {context} {FILLER}"})["q"].status == Status.CLEAN
    readme = "This compiles a version of bc with fixed parameters and no readline support for small systems."
    bc = BenchmarkItem("b", 0, question="A version of bc with.", passage=readme, answer="entailment")
    source = f"{FILLER} {readme} To make a version of bc with a custom crossover point, edit the Makefile. {FILLER}"
    assert scan([bc, *others], {"page": source})["b"].status == Status.CLEAN
    # a review: with its label right after it, the phrase is the item's copy; and a question of
    # fewer than n tokens every 3-gram of which its passage holds is placed as before, by the
    # passage, its source saying the phrase again being no copy
    copied = f"{FILLER} Premise: {readme} Hypothesis: A version of bc with. Label: entailment {FILLER}"
    assert scan([bc, *others], {"page": copied})["b"].status == Status.CONTAMINATED
    boats = BenchmarkItem("z", 0, question="Boats passed the firth.", passage=context, answer="entailment")
    again = f"{FILLER} {context} Later, fewer boats passed the firth each year. {FILLER}"
    assert scan([boats, *others], {"page": again})["z"].status == Status.CLEAN


def test_a_long_answer_held_in_part_is_not_called_missing() -> None:
    """A long free-text answer counts as found when half of it is held beside the question; a page
    holding the question and 40% of it said "the question is in one document, without its answer"
    (a probe of long-form answers: every half copy). It says how much of the answer was there."""
    q = "Why did the lighthouse keepers of Stroma row across the firth every Sunday morning?"
    answer = (
        "They rowed across to buy bread, lamp oil and newspapers in John o' Groats, because the island "
        "had no shop of its own, and the keepers' wives sent lists of what the families needed for "
        "the week; the boat came back before dark with the post and sometimes a visitor from Wick."
    )
    items = [BenchmarkItem("s", 0, question=q, answer=answer)]
    items += [BenchmarkItem(f"o{k}", 10 + k, question=c, answer="yes") for k, c in enumerate(CLAIMS)]
    words = answer.split()
    part = " ".join(words[: int(len(words) * 0.4)])
    r = scan(items, {"page": f"{FILLER} {q} {part} {FILLER}"})["s"]
    assert not r.answer_found and "% of its answer" in r.reason, r.reason
    alone = scan(items, {"page": f"{FILLER} {q} {FILLER}"})["s"]
    assert "without its answer" in alone.reason or "its answer was not found" in alone.reason, alone.reason


def test_a_question_found_without_its_frame_of_an_item_without_an_answer_says_no_answer() -> None:
    """A probe of instruction prompts that have no answer field (a long frame shared by many
    items, then a paragraph): a page holding one paragraph alone read "the question is in one
    document, without its answer", of an item with no answer. It says that the page holds the
    question's own text, how much of the whole item that is, and that there is no answer; the
    status stays `suspicious` (the frame is not there: the page may be the paragraph's source,
    not a copy of the item). With choices and no answer, the choices missing are in the share."""
    frame = (
        "Summarize the following text in exactly three bullet points and do not use any commas "
        "at all or any semicolons please now. Text:"
    )
    paras = [
        "The resolver walks each configured search domain in turn and stops at the first answer that "
        "carries an address record, caching negative replies for the interval the zone allows."
    ]
    paras += [f"alpha{k} loads beta{k} before gamma{k} starts delta{k} and epsilon{k} zeta{k}" for k in range(1, 15)]
    items = [BenchmarkItem(f"p{k}", k, question=f"{frame} {text}") for k, text in enumerate(paras)]
    r = scan(items, {"page": f"{FILLER} {paras[0]} {FILLER}"})["p0"]
    assert r.status == Status.SUSPICIOUS, r.reason
    choices = ["the resolver", "the cache", "the zone", "the address"]
    mcq = [replace(it, choices=choices) for it in items]
    c = scan(mcq, {"page": f"{FILLER} {paras[0]} {FILLER}"})["p0"]
    assert c.status == Status.SUSPICIOUS and c.reason.endswith("of the whole item (it has no answer)"), c.reason
    assert int(c.reason.split("own text, ")[1].split("%")[0]) < 56, c.reason
    assert r.reason == "one document holds the question's own text, 56% of the whole item (it has no answer)", r.reason


def test_a_share_is_never_rounded_up_to_its_threshold() -> None:
    """A review: 0.796 of an item printed "80%" beside an 80% threshold it did not reach, 0.558
    "56%" beside 0.56 (0.56 * 100 is 56.000000000000014), and 0.812, above it, "79%"."""
    from contam.app.core.scoring import _pct_below

    assert _pct_below(0.796, 0.8) == "79%" and _pct_below(0.6667, 0.8) == "67%"
    assert _pct_below(0.558, 0.56) == "55%" and _pct_below(0.278, 0.28) == "27%"
    assert _pct_below(0.812, 0.8) == "81%" and _pct_below(0.8, 0.8) == "80%"


def test_passage_copies_are_chains_in_the_passages_order() -> None:
    """passage_copies: the premise's copy is one chain, an edited word or two inside it do not cut
    it, and the hypothesis repeated after it (the passage's first words again) is no part of it."""
    item = prepare(BenchmarkItem("h", 0, question="The lighthouse keepers of Stroma rowed.", passage=STROMA), N)
    words = STROMA.split()
    edited = " ".join(w if k not in (8, 9) else "changed" for k, w in enumerate(words))
    text = f"{FILLER} {edited} Hypothesis: The lighthouse keepers of Stroma rowed. {FILLER}"
    doc = DocTokens.of(token_hashes(tokenize(text)), N)
    starts, ends = matching.passage_copies(item, doc, doc.positions(item.passage_grams), N)
    begin = len(tokenize(FILLER))
    assert (starts.tolist(), ends.tolist()) == ([begin], [begin + len(tokenize(STROMA))])


def test_a_maths_final_answer_after_the_question_is_its_answer() -> None:
    """GSM8K's answer is a worked solution ending "#### 72": read whole as the answer, a page giving
    the question and "Answer: 72" was "the question ... without its answer" (the answer looked for
    was the whole solution). Read as a final answer beside its solution, that page is the question
    with its answer; the question alone is still told apart (answer_found false)."""
    q = (
        "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
        "How many clips did Natalia sell altogether in April and May?"
    )
    solution = "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips in all."
    other = {"question": "Weng earns $12 an hour for babysitting. How much did she earn for 50 minutes?"}
    rows = [
        {"question": q, "answer": f"{solution}\n#### 72"},
        {**other, "answer": "She earned 12/60*50 = 10.\n#### 10"},
    ]
    items, _ = read_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), "gsm8k.jsonl")
    with_answer = scan(items, {"page": f"{FILLER} Question: {q} Answer: 72 {FILLER}"})["0"]
    assert with_answer.status == Status.CONTAMINATED and with_answer.answer_found, with_answer.reason
    # the question alone is almost all of such an item's counted text (the solution counts only
    # where a page holds it), so it is contaminated, as a short-answer item's question is, its
    # reason saying the answer was not found
    alone = scan(items, {"page": f"{FILLER} {q} {FILLER}"})["0"]
    assert alone.status == Status.CONTAMINATED and not alone.answer_found, alone.reason
    assert alone.reason.endswith("(its answer was not found with it)")


@pytest.mark.parametrize("blank", ["____", "_", "[MASK]"])
def test_a_clozes_answer_in_its_blank_is_found(blank: str) -> None:
    """A cloze's source sentence holds the answer inside the question, in the blank: a page with
    "These functions are intended for ..." was "the question ... without its answer" for "These
    functions are ____ for ...", found only when the blank ended the sentence (a new user's
    trial). Another word in the blank, or the blank copied as it is, leaves the answer unfound."""
    sentence = (
        "These functions are intended for use by the allocator of the kernel and must never be called "
        "from an interrupt handler."
    )
    item = BenchmarkItem(
        "c",
        0,
        question=sentence.replace("intended", blank),
        choices=("intended", "forbidden", "written"),
        answer="intended",
    )
    filled = scan([item], {"page": f"{FILLER} {sentence} {FILLER}"})["c"]
    assert filled.status == Status.CONTAMINATED and filled.answer_found, filled.reason
    other = scan([item], {"page": f"{FILLER} {sentence.replace('intended', 'written')} {FILLER}"})["c"]
    assert other.status.flagged and not other.answer_found, other.reason
    kept = scan([item], {"page": f"{FILLER} {item.question} {FILLER}"})["c"]
    assert kept.status.flagged and not kept.answer_found, kept.reason


def test_a_word_an_edit_changed_into_the_answer_is_no_blank_filled() -> None:
    """Only a question with a blank has one to fill: in another, an edited copy whose changed
    word is the answer gave the answer away (a review: `suspicious` became `contaminated`)."""
    q = "Which gas do green plants take in from the air of the forest to make their food in sunlight?"
    item = BenchmarkItem("g", 0, question=q, choices=("oxygen", "carbon dioxide", "nitrogen"), answer="oxygen")
    edited = scan([item], {"page": f"{FILLER} {q.replace('green', 'oxygen')} {FILLER}"})["g"]
    assert not edited.answer_found and edited.status == Status.SUSPICIOUS, edited.reason


def _prose(k: int, seed: int) -> list[str]:
    """k words of made-up prose: every word its own, so any run of them is this text's alone."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ren", "tu", "sa", "vor", "en", "di", "pa", "shu", "gel"]
    return ["".join(rng.choice(syllables) for _ in range(3)) + str(i % 10) for i in range(k)]


def test_one_sentence_of_a_long_item_is_no_copy_of_it() -> None:
    """A run of longest_match own tokens flags an item only where it is longest_share of its own
    text or twice longest_match long: a probe's clean 300-460-token items were `suspicious` for
    one 13-24-token sentence that another page of the same documentation holds (18 of 243). A run
    that long in a shorter item, a longer run in a long one, and a run of 26 tokens in an item of
    any length (a review: a 190-token copy in a 2,000-token item went unflagged) still flag it."""
    text = _prose(600, 1)

    def run_in(item_tokens: int, start: int, size: int) -> ItemScore:
        item = BenchmarkItem("i", 0, question=" ".join(text[:item_tokens]))
        return scan([item], {"page": f"{FILLER} {' '.join(text[start : start + size])} {FILLER}"})["i"]

    one_sentence = run_in(320, 100, 18)
    assert one_sentence.status == Status.CLEAN and one_sentence.longest_match == 18, one_sentence.reason
    assert "18-token run" in one_sentence.reason and "not a copy of the item" in one_sentence.reason
    assert run_in(320, 100, 40).reason.startswith("a 40-token run")
    assert run_in(60, 20, 18).reason.startswith("a 18-token run")  # a tenth of 60 is under 13
    assert run_in(600, 300, 26).status == Status.SUSPICIOUS  # twice longest_match: flagged, however long the item
    below = run_in(260, 100, 25)  # 9.6% of 260 is said so, never rounded up to the threshold's 10%
    assert below.status == Status.CLEAN and "9% of its 260 own tokens" in below.reason, below.reason
    wide = scan(
        [BenchmarkItem("i", 0, question=" ".join(text[:320]))],
        {"page": f"{FILLER} {' '.join(text[100:118])} {FILLER}"},
        Thresholds(longest_share=0.05),
    )["i"]
    assert wide.status == Status.SUSPICIOUS, wide.reason  # a threshold like the others


def test_an_answer_found_without_its_question_says_so() -> None:
    """A code task's solution copied alone into a source file is flagged (the solution is in the
    training data) with "one document holds 81% of the item's own text": nothing said the question
    was not there, where a question without its answer says so (a probe of code tasks)."""
    code = (
        "int count = 0; for (Node node = head; node != null; node = node.next) { if (node.value == target) "
        "{ count++; } } return count; // walk the list once and count every node whose value equals the target"
    )
    item = BenchmarkItem("c", 0, question="Count the nodes of a linked list holding a value.", answer=code)
    r = scan([item], {"src": f"{FILLER} public int occurrences(int target) {{ {code} }} {FILLER}"})["c"]
    assert r.status.flagged and r.answer_found, r.reason
    assert r.reason.endswith("(its question was not found with it)"), r.reason
    # the choices listed without the question or the answer say so too (a review: "its answer was
    # not found with it" read as if the question had been)
    choices = (
        "a lighthouse keeper rowing supplies across the bay every winter morning",
        "a ferryman carrying the mail between the islands in heavy storms",
        "a fisherman mending nets on the harbour wall before the spring season",
        "a shepherd driving sheep over the mountain pass before the first snow",
    )
    mc = BenchmarkItem("mc", 1, question="Who is described in the story?", choices=choices, answer=choices[1])
    listed = " ".join(f"{k}. {c}" for k, c in zip("ABCD", choices, strict=True))
    r = scan([mc], {"list": f"{FILLER} {listed} {FILLER}"})["mc"]
    assert r.status.flagged and r.reason.endswith("(neither its question nor its answer was found with it)"), r.reason
    # a short answer held whole, without the question: its answer is there, only not after the
    # question, where a short one counts as given (a probe's SQL query: "neither ... was found")
    sql = BenchmarkItem(
        "q", 2, question="Produce the listing requested by the manager from the test1 data.",
        answer="SELECT a < ('foo' COLLATE \"fr_FR\") FROM test1",
    )  # fmt: skip
    docs = f"{FILLER} But in SELECT a < ('foo' COLLATE \"fr_FR\") FROM test1; fr_FR rules apply. {FILLER}"
    r = scan([sql], {"docs": docs})["q"]
    assert r.status.flagged and not r.answer_found and r.reason.endswith("(its question was not found with it)")


def test_a_frame_word_beside_the_answer_far_on_is_not_where_the_question_ends() -> None:
    """A templated true/false claim copied alone, the page going on about it: 20 words on, "a false"
    (the frame's last word "A:" and the answer) was aligned as one block, taken for the end of the
    question, and the answer right after it made the claim `contaminated` (a probe: 2 of 400
    claims copied alone). Where the question ends is where two or more of its words in a row are.
    (Within the answer's window after the claim itself, a "false" of the prose still counts: chance,
    for a few claims in a thousand, that a narrower window would trade for edited copies' answers.)"""
    frame = "On June 2017, the following claim was made: {}. Q: Was this claim true or false? A:"
    claims = CLAIMS + [" ".join(_prose(8, seed)) for seed in range(20)]  # the frame a template
    rows = [{"question": frame.format(c), "answer": "False"} for c in claims]
    items, _ = read_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), "claims.jsonl")
    on = " ".join(_prose(20, 3))  # past the answer's window after the claim
    alone = scan(items, {"page": f"{FILLER} {CLAIMS[0]}. {on} the whale wears a false brow to the world. {FILLER}"})
    assert alone["0"].status == Status.SUSPICIOUS and not alone["0"].answer_found, alone["0"].reason
    labelled = scan(items, {"page": f"{FILLER} {frame.format(CLAIMS[0])} False. {on} {FILLER}"})
    assert labelled["0"].status == Status.CONTAMINATED and labelled["0"].answer_found, labelled["0"].reason


def test_a_question_written_from_a_pages_sentence_is_no_copy_of_it() -> None:
    """A question written from a sentence of the corpus shares a phrase with it, and the answer
    stands beside that phrase there: "two rare 3-grams in a row with the answer after them" flagged
    28 of a probe's 360 such questions. A copy gives the answer after the question's end, so the
    rule asks for it there (fewer than MATCH_N of the question's last words missing); an edited
    copy that keeps the question's end is still found."""
    q = "Who is blamed for the state of outlawry and anarchy in the region during those years?"
    rows = [
        {"question": q, "answer": "Katanga"},
        {"question": "Which river did the surveyors cross before they reached the northern ridge?", "answer": "Tigris"},
        {"question": "What did the harbour master record about ships in the long winter months?", "answer": "All"},
    ]
    items, _ = read_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), "qa.jsonl")
    frame = "who is blamed for the state of the roads in the region during those years of war"  # common
    docs = {f"d{k}": f"{' '.join(_prose(20, 10 + k))} {frame}. {' '.join(_prose(20, 40 + k))}" for k in range(12)}
    source = "Yet this basic condition of outlawry and anarchy is not the work of Katanga."
    written_from = scan(items, {**docs, "page": f"{FILLER} {' '.join(_prose(30, 5))} {source} {FILLER}"})["0"]
    assert written_from.status == Status.CLEAN, written_from.reason
    edited = "Who got accused over some state of outlawry and anarchy across her land during those years? Katanga."
    copy = scan(items, {**docs, "page": f"{FILLER} {edited} {FILLER}"})["0"]
    assert copy.status == Status.SUSPICIOUS and copy.answer_found, copy.reason


def test_a_clause_a_question_quotes_from_its_source_is_no_copy_of_it() -> None:
    """An annotator reading a passage asks of it around a clause it says: "How many years after
    [the Forest Cantons negotiated a ten-month truce with the Habsburgs] was it before ...?". The
    passage's source holds 55% of the question's own text (the frame "How many years after the"
    is the benchmark's), in one run that starts where the own text does: it was `suspicious` by
    the share held and by "the item's opening in one run" (bench/source_null.py: 37 of 1,393 DROP
    questions). The document holds that clause alone, neither the question's first word nor the own
    words after the clause, so it is clean; a copy cut short holds the question from its first
    word, an edited copy holds it in more pieces with its answer, and both are still found."""
    frame = "How many years after the"  # the benchmark's: shared, no item's own text
    question = f"{frame} Forest Cantons negotiated a ten-month truce with the Habsburgs was it before Sempach?"
    rows = [
        {"question": question, "answer": "68"},
        {"question": f"{frame} harbour master recorded the long winter did the ridge flood?", "answer": "3"},
        {"question": f"{frame} surveyors crossed the river Tigris was the town rebuilt in stone?", "answer": "12"},
    ]
    items, _ = read_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), "qa.jsonl")
    source = (
        "In 1318 the Forest Cantons negotiated a ten-month truce with the Habsburgs, which was extended several "
        "times until the war resumed and ended with the Swiss victory at Sempach in 1386."
    )
    page = f"{FILLER} {' '.join(_prose(30, 5))} {source} {' '.join(_prose(30, 6))} {FILLER}"
    written_from = scan(items, {"page": page})["0"]
    assert written_from.status == Status.CLEAN, written_from.reason
    assert written_from.reason.startswith("one document holds 55% of its own text, but only as a clause"), (
        written_from.reason
    )
    half = "How many years after the Forest Cantons negotiated a ten-month truce"  # the question's opening
    truncated = scan(items, {"page": f"{FILLER} {half} {' '.join(_prose(30, 6))} {FILLER}"})["0"]
    assert truncated.status == Status.SUSPICIOUS, truncated.reason
    edited = (
        "How many years after the Forest Cantons agreed a ten-month truce with the Habsburgs was it before Sempach? 68."
    )
    assert scan(items, {"page": f"{FILLER} {edited} {FILLER}"})["0"].status == Status.CONTAMINATED


def test_a_question_stitched_from_a_sentences_phrases_is_not_told_by_them() -> None:
    """A question written from a sentence by stringing its phrases together ("gentlemen adieu I
    will", "and things and") holds most of its own words in the sentence, in runs of a phrase's
    length, and the answer is near: it was "question and answer found together", `contaminated`
    (a probe's open-QA item). Told by its own text, a question of more than n own tokens needs a
    run longer than n of it; the page was `suspicious`, and is clean since session 44: it holds
    two phrases of the question apart, as the text a question was written from does
    (_quoted_by_question); a copy is `contaminated`."""
    q = "What name appears in connection with gentlemen adieu I will, and things and married?"
    others = [f"What name appears in connection with {' '.join(_prose(6, 70 + k))}?" for k in range(14)]
    rows = [{"question": q, "answer": "Kate"}] + [{"question": o, "answer": f"Name{k}"} for k, o in enumerate(others)]
    items, _ = read_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), "qa.jsonl")
    source = (
        "Father, and wife, and gentlemen adieu, I will to Venice, sonday comes apace, We will haue rings, "
        "and things, and fine array, And kisse me Kate, we will be married a sonday."
    )
    stitched = scan(items, {"page": f"{FILLER} {' '.join(_prose(30, 5))} {source} {FILLER}"})["0"]
    assert stitched.status == Status.CLEAN and "a question written from that text" in stitched.reason, stitched.reason
    copied = scan(items, {"page": f"{FILLER} Q: {q} A: Kate {FILLER}"})["0"]
    assert copied.status == Status.CONTAMINATED and copied.answer_found, copied.reason
    # the run asked for is the question's own: a long answer held in one run does not tell it (a review)
    long = "Petruchio son of Antonio of Verona"
    rows[0]["answer"] = long
    items, _ = read_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), "qa.jsonl")
    page = source.replace("fine array,", f"fine array, thus spoke {long}, and")
    elsewhere = f"{' '.join(_prose(40, 9))} {long} {' '.join(_prose(40, 11))}"  # the answer's run no phrase
    stitched = scan(items, {"page": f"{FILLER} {' '.join(_prose(30, 5))} {page} {FILLER}", "other": elsewhere})["0"]
    assert stitched.status == Status.SUSPICIOUS, stitched.reason  # its answer is there: not only the question's phrases


def test_a_maths_frame_with_other_numbers_is_another_problem() -> None:
    """Word problems from frames, names and numbers changed: a page holding the item's frame (and
    name) with other numbers was its copy, the frame counted as its own text because other items
    share it and none of them is the page's copy either (a probe: 8 of 320 clean items flagged, 3
    `contaminated`). The region holding none of the numbers the item has beside the frame, the
    frame is the template's; the item copied with its numbers is still `contaminated`."""
    frames = [
        "{n} has {a} seashells. She gives {b} of them to a friend and then buys {c} more at the market. "
        "How many seashells does {n} have now?",
        "A baker makes {a} loaves on Monday and {b} loaves on Tuesday, then sells {c} of them to {n}. "
        "How many loaves are left?",
    ]
    names = ["Rosa", "Maria", "Ines", "Grace", "Sofia", "Lena", "Ava", "Mila", "Nora", "Ruth", "Vera", "Ida", "Zoe"]
    rng = random.Random(1)
    rows = []
    for frame in frames:  # each frame in 13 items of 26: a template, not text every item carries
        for name in names:
            a, b, c = rng.randint(40, 90), rng.randint(2, 19), rng.randint(2, 30)
            rows.append(
                {"question": frame.format(n=name, a=a, b=b, c=c), "answer": f"{a} - {b} + {c}.\n#### {a - b + c}"}
            )
    items, _ = read_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), "maths.jsonl")
    sibling = frames[0].format(n="Rosa", a=75, b=62, c=21) + " 75 - 62 + 21. #### 34"
    other = scan(items, {"page": f"{FILLER} {sibling} {FILLER}"})["0"]
    assert other.status == Status.CLEAN, other.reason
    copied = scan(items, {"page": f"{FILLER} {rows[0]['question']} {rows[0]['answer']} {FILLER}"})["0"]
    assert copied.status == Status.CONTAMINATED, copied.reason


def test_the_questions_end_is_its_own_texts_end_not_a_frame_a_copy_drops() -> None:
    """The answer after a rare phrase counts after the question's end, counted in its own text: a
    frame every item ends with ("Answer with one name only."), which a copy may leave out, is not
    its end (a review: counted, it hid an edited copy that kept the question's own last words)."""
    frame = " Answer with one name only."
    q = "Who is blamed for the state of outlawry and anarchy in the region during those years?"
    others = [{"question": " ".join(_prose(10, 90 + k)) + "?" + frame, "answer": f"Name{k}"} for k in range(13)]
    rows = [{"question": q + frame, "answer": "Katanga"}, *others]
    items, _ = read_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), "qa.jsonl")
    common = "who is blamed for the state of the roads in the region during those years of war"
    docs = {f"d{k}": f"{' '.join(_prose(20, 10 + k))} {common}. {' '.join(_prose(20, 40 + k))}" for k in range(12)}
    edited = "Who got accused over some state of outlawry and anarchy across her land during those years? Katanga."
    copy = scan(items, {**docs, "page": f"{FILLER} {edited} {FILLER}"})["0"]
    assert copy.status == Status.SUSPICIOUS and copy.answer_found, copy.reason


def test_a_one_word_questions_answer_after_it_is_found() -> None:
    """A question field of one token is aligned as a block of one: the answer search, which starts
    after two or more question tokens in a row, never started for it (a review: "ephemeral", then
    its definition, was "its answer was not found")."""
    words = [
        ("ephemeral", "lasting for a very short time indeed"),
        ("gregarious", "fond of the company of other people"),
        ("laconic", "using very few words when speaking"),
    ]
    items = [BenchmarkItem(f"w{k}", k, question=q, answer=a) for k, (q, a) in enumerate(words)]
    r = scan(items, {"page": f"{FILLER} Word of the day. ephemeral: lasting for a very short time indeed. {FILLER}"})
    assert r["w0"].status == Status.CONTAMINATED and r["w0"].answer_found, r["w0"].reason


def test_any_accepted_answer_after_the_question_is_its_answer() -> None:
    """A page gives one of an item's accepted answers: BoolQ's true as "yes", TriviaQA's alias
    "Sunset Blvd" for "Sunset Boulevard". Only the first was looked for, so such a copy was "the
    question ... without its answer". The other answers are never scored as the item's text."""
    rows = [
        {"question": "is the parma trolleybus system run by the municipal company", "passage": PARMA, "answer": True},
        {
            "question": "Which Lloyd Webber musical premiered in the US on 10th December 1993?",
            "answer": {"aliases": ["Sunset Blvd", "Sunset Boulevard"], "value": "Sunset Boulevard"},
        },
        *({"question": c, "answer": "yes"} for c in CLAIMS),
    ]
    items, _ = read_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), "qa.jsonl")
    boolq = f"{FILLER} {PARMA} Q: {rows[0]['question']}? A: Yes. {FILLER}"
    s = scan(items, {"page": boolq})["0"]
    assert s.answer_found and s.status == Status.CONTAMINATED, s.reason
    # a word as common as "yes" or "no" counts only right after the question: elsewhere near it,
    # chance puts it there ("no" is in 4-6% of 18-token windows of prose)
    chatter = f"{FILLER} {PARMA} Q: {rows[0]['question']}? I could not find yes or no in any guide. {FILLER}"
    assert not scan(items, {"page": chatter})["0"].answer_found
    trivia = f"{FILLER} Quiz night! {rows[1]['question']} Answer: Sunset Blvd. {FILLER}"
    s = scan(items, {"page": trivia})["1"]
    assert s.answer_found and s.status == Status.CONTAMINATED, s.reason
    assert items[1].answer == "Sunset Boulevard" and "blvd" not in " ".join(tokenize(items[1].display_text()))


def test_passage_fields_tell_apart_copies_on_one_page() -> None:
    """Three cases a review found. (1) The page holds the question alone, then the passage, the
    question and the answer: placed by the question's n-grams alone, the region went to the first
    copy (equal weight) and the item was clean; the passage's n-grams now break such ties. (2) The
    same item listed twice (same passage) is not told apart by its passage: a copy of its text
    without the passage stays contaminated. (3) Another item's passage elsewhere on the page is no
    passage of this item's copy: the passage is looked for beside the copy."""
    q = "How many yards was the shortest field goal of the game?"
    other_passage = "The Bears opened the scoring with a long drive that ended in a short field goal in the rain."
    a = BenchmarkItem("a", 0, question=q, passage=PARMA, answer="24")
    b = BenchmarkItem("b", 1, question=q, passage=other_passage, answer="31")
    others = [BenchmarkItem(f"o{k}", 2 + k, question=c, answer="yes") for k, c in enumerate(CLAIMS)]
    page = f"{FILLER} Question: {q} {FILLER} {PARMA} Question: {q} Answer: 24. {FILLER}"
    s = scan([a, b, *others], {"page": page})["a"]
    assert s.status == Status.CONTAMINATED and s.answer_found, s.reason
    twin = BenchmarkItem("a2", 1, question=q, passage=PARMA, answer="24")
    s = scan([a, twin, *others], {"page": f"{FILLER} Question: {q} Answer: 24. {FILLER}"})["a"]
    assert s.status == Status.CONTAMINATED, s.reason
    b24 = BenchmarkItem("b", 1, question=q, passage=other_passage, answer="24")
    page = f"{FILLER} {PARMA} Question: {q} Answer: 24. {FILLER} {other_passage} {FILLER}"
    s = scan([a, b24], {"page": page})["b"]
    assert s.status == Status.SUSPICIOUS and "not its passage" in s.reason, s.reason


def test_a_page_of_several_copies_does_not_make_the_passage_a_siblings_own_text() -> None:
    """A page holds an unrelated item's copy and, beside it, item 1's (its question lightly
    edited). Each explains part of what the page holds of item 2: the passage is item 1's, so
    item 2's own text is its question alone, which the page does not hold."""
    q1 = BenchmarkItem(
        "q1", 0, question=f"{PASSAGE} Question: How many mules did the expedition take with it?", answer="eleven"
    )
    q2 = BenchmarkItem(
        "q2", 1, question=f"{PASSAGE} Question: On which day did the party reach the monastery?", answer="the ninth"
    )
    other = BenchmarkItem("c", 2, question=CLAIMS[1] + " and " + CLAIMS[2], answer="True")
    edited = f"{PASSAGE} Question: How many mules did the expedition bring with it? Answer: eleven."
    s = scan([q1, q2, other], {"page": f"{FILLER} {other.question} Answer: True. {edited} {FILLER}"})
    assert s["c"].status == Status.CONTAMINATED
    assert s["q2"].status != Status.CONTAMINATED, s["q2"].reason
    # item 1 is judged by its own text, the edited question, as on a page without the other copy:
    # the unrelated copy beside it does not make the passage item 1's own
    alone = scan([q1, q2, other], {"page": f"{FILLER} {edited} {FILLER}"})["q1"]
    assert s["q1"].status == alone.status == Status.SUSPICIOUS and s["q1"].own_tokens == alone.own_tokens


@pytest.mark.parametrize("order", ["BCA", "CAB", "ABC"])
def test_copies_elsewhere_on_the_page_do_not_take_a_verbatim_copys_own_text(order: str) -> None:
    """Item A's two halves are each in another item (B holds the first, C the second); a page
    holds all three copies. A competitor's copy elsewhere on the page explains none of A's match:
    only the best competitor, and those whose copy is where A's match is, take text from A's own."""
    x = "The expedition left the coastal village at dawn with eleven mules and salted fish for a month."
    y = "After crossing the salt flats they reached the ruined monastery on the ninth day."
    u = "After crossing the river a storm scattered the mules and the cook deserted with the silver."
    v = "The pilgrims walked from the capital to the shrine carrying bread for a month."
    texts = {"A": f"{x} {y}", "B": f"{x} {u}", "C": f"{v} {y}"}
    items = [
        BenchmarkItem(k, i, question=t, choices=("True", "False"), answer="True")
        for i, (k, t) in enumerate(texts.items())
    ]
    page = " ".join(f"{texts[k]} A. True B. False Answer: True." for k in order)
    s = scan(items, {"page": f"{FILLER} {page} {FILLER}"})
    assert s["A"].status == Status.CONTAMINATED, s["A"].reason


def test_the_passage_alone_makes_each_sibling_at_most_suspicious() -> None:
    q1 = BenchmarkItem("q1", 0, question=f"{PASSAGE} Question: How many mules did the expedition take with it?")
    q2 = BenchmarkItem("q2", 1, question=f"{PASSAGE} Question: On which day did the party reach the monastery?")
    s = scan([q1, q2], {"page": f"{FILLER} {PASSAGE} {FILLER}"})
    for k in ("q1", "q2"):
        assert s[k].status == Status.SUSPICIOUS and "passage" in s[k].reason and s[k].passage_found


def test_the_passage_found_beside_a_siblings_copy_is_said_found() -> None:
    """A page holding the shared passage with another item's question: the sibling is clean (that
    copy is no copy of it) but said `passage_found` false, where the passage found alone said true
    (a new user's trial), and the API's field is "a candidate document holds the shared passage,
    whatever the status"."""
    q1 = BenchmarkItem("q1", 0, question=f"{PASSAGE} Question: How many mules did the expedition take with it?")
    q2 = BenchmarkItem("q2", 1, question=f"{PASSAGE} Question: On which day did the party reach the monastery?")
    s = scan([q1, q2], {"page": f"{FILLER} {q1.question} Answer: eleven. {FILLER}"})
    assert s["q1"].status == Status.CONTAMINATED and s["q1"].passage_found
    assert s["q2"].status == Status.CLEAN and s["q2"].passage_found, s["q2"].reason
    assert s["q2"].reason.endswith("; the passage it shares with other items was found"), s["q2"].reason
    # a page without the passage says nothing of it
    assert not scan([q1, q2], {"page": f"{FILLER} {FILLER}"})["q2"].passage_found


def test_three_words_of_another_items_question_near_the_passage_do_not_hide_it() -> None:
    """The page holds the passage alone and, a sentence on, three words that item 3's question
    also has ("the harbour master"), as any text might. Item 3 is on another subject: the page is
    no copy of it, so for items 1 and 2 the passage is still found alone: suspicious, not clean."""
    q1 = BenchmarkItem("q1", 0, question=f"{PASSAGE} Question: How many mules did the expedition take with it?")
    q2 = BenchmarkItem("q2", 1, question=f"{PASSAGE} Question: On which day did the party reach the monastery?")
    q3 = BenchmarkItem("q3", 2, question="Why did the harbour master close the northern quay to the fishing boats?")
    page = f"{FILLER} {PASSAGE} Later the harbour master wrote to the abbot. {FILLER}"
    s = scan([q1, q2, q3], {"page": page})
    for k in ("q1", "q2"):
        assert s[k].status == Status.SUSPICIOUS and "passage" in s[k].reason, (k, s[k].reason)
    assert s["q3"].status == Status.CLEAN
    # the flip side: with item 2's whole copy there (and the same three words), the passage is
    # item 2's: item 1 is clean, not suspicious
    s = scan([q1, q2, q3], {"page": f"{FILLER} {q2.question} Later the harbour master wrote. {FILLER}"})
    assert s["q2"].status == Status.CONTAMINATED and s["q1"].status == Status.CLEAN, s["q1"].reason


NOTICE = (
    "This article was produced by the regional news desk and may be republished free of charge by "
    "member newspapers provided that the byline and this notice are kept intact in every edition"
)


def test_a_notice_common_in_the_corpus_is_no_passage_of_the_items_that_carry_it() -> None:
    """Three items end with the same 32-word notice, which 12 documents hold (more than max_df):
    text common in the corpus, found alone, flags none of them, passage rule or not."""
    items = [
        BenchmarkItem(f"n{k}", k, question=" ".join(f"story{k}word{j}" for j in range(40)) + " " + NOTICE)
        for k in range(3)
    ]
    docs = {f"d{k}": f"{FILLER} {NOTICE} {FILLER}" for k in range(12)}
    s = scan(items, docs)
    assert all(s[f"n{k}"].status == Status.CLEAN for k in range(3)), {k: v.reason for k, v in s.items()}


@pytest.mark.parametrize(("items", "status"), [(1, Status.CLEAN), (2, Status.SUSPICIOUS), (12, Status.CLEAN)])
def test_a_passage_is_a_run_that_2_to_11_items_hold(items: int, status: Status) -> None:
    """The passage rule on one document's match: a 30-token run the item shares with others,
    none of its own text. Held by the item alone (its 3-grams are another item's, its n-grams
    not: the run is nobody's passage) or by more than passage_max_items + 1 items (a template),
    it flags nothing; held by 2 items it is their passage."""
    p = prepare(BenchmarkItem("q", 0, question=PASSAGE), N, 3)
    none = np.zeros(p.n_tokens, dtype=bool)
    m = DocMatch(0, ~none, none, none, None, (0, p.n_tokens), [(0, 0, p.n_tokens)], False)
    m.shared_run, m.shared_items = 30, items
    assert verdict(p, m, N, Thresholds())[0] == status


def test_a_passage_beside_an_unrelated_items_copy_is_still_no_items_own_text() -> None:
    """The page holds the passage alone and, right after it, a whole copy of an unrelated item.
    That copy explains none of the passage: items 1 and 2 share it, so it is neither's own text,
    neither is contaminated, and the unrelated copy does not hide the passage found alone: both
    are suspicious, as with the passage alone."""
    q1 = BenchmarkItem("q1", 0, question=f"{PASSAGE} Question: How many mules did the expedition take with it?")
    q2 = BenchmarkItem("q2", 1, question=f"{PASSAGE} Question: On which day did the party reach the monastery?")
    q3 = BenchmarkItem(
        "q3", 2, question="Why did the harbour master close the northern quay to the fishing boats in winter?"
    )
    # the unrelated item may share a phrase with the passage ("crossing the salt flats") by chance
    q4 = BenchmarkItem(
        "q4", 3, question="Which caravan lost its way crossing the salt flats in the spring of that year?"
    )
    for q in (q3, q4):
        s = scan([q1, q2, q], {"page": f"{FILLER} {PASSAGE} {q.question} {FILLER}"})
        assert s[q.item_id].status == Status.CONTAMINATED
        for k in ("q1", "q2"):
            assert s[k].status == Status.SUSPICIOUS and "passage" in s[k].reason and s[k].own_coverage < 0.5, s[
                k
            ].reason


SPORTS = [
    "Juan Soto did a double stepover",
    "Jamal Murray beat the buzzer",
    "Kyle Pitts caught the screen pass",
    "Mookie Betts stole second base",
    "Joel Embiid hit the corner three",
]


def sports(sentences: Sequence[str]) -> list[BenchmarkItem]:
    return [
        BenchmarkItem(f"s{i}", i, question=t, choices=("plausible", "implausible"), answer="implausible")
        for i, t in enumerate(sentences)
    ]


def test_a_six_word_item_embedded_verbatim_is_found() -> None:
    s = scan(sports(SPORTS), {"page": f"{FILLER} Q: {SPORTS[0]}\nA: implausible\n{FILLER}"})
    assert s["s0"].status == Status.CONTAMINATED and s["s0"].tokens < 10
    assert all(s[f"s{i}"].status == Status.CLEAN for i in range(1, 5))


def test_the_same_words_common_across_the_corpus_are_not_a_copy() -> None:
    """A six-word phrase in more than max_df documents is a common phrase, not a copied item."""
    phrase = "the quarterback threw the ball away"
    docs = {f"news{i}": f"match report {i} {FILLER[:300]} {phrase} in the fourth quarter" for i in range(15)}
    s = scan(sports([phrase, *SPORTS[1:]]), docs)
    assert s["s0"].status == Status.CLEAN and "common" in s["s0"].reason  # judged, not too_short


EDIT_SRC = (
    "In the novel the old fisherman sails far out into the gulf stream and hooks a giant marlin that drags "
    "his small skiff for three days and nights before he finally kills it and lashes it to the boat"
)


def test_an_edited_copy_is_found() -> None:
    light = EDIT_SRC.replace("hooks", "catches").replace("drags", "pulls")
    heavy = (
        "In a novel the old fisherman sails far out into the gulf and hooks one huge marlin which drags his tiny "
        "boat for three whole days before he at last kills it and ties it to the side"
    )
    item = [BenchmarkItem("e", 0, question=EDIT_SRC)]
    assert scan(item, {"light": f"{FILLER} {light} {FILLER}"})["e"].status == Status.CONTAMINATED
    s = scan(item, {"heavy": f"{FILLER} {heavy} {FILLER}"})["e"]
    assert s.status == Status.SUSPICIOUS and 0.4 <= s.own_coverage < 0.8


def test_a_half_copied_item_is_suspicious() -> None:
    half = EDIT_SRC[: len(EDIT_SRC) // 2]
    s = scan([BenchmarkItem("e", 0, question=EDIT_SRC)], {"half": f"{FILLER} {half} {FILLER}"})["e"]
    assert s.status == Status.SUSPICIOUS


TWIN = "Andrew preferred the pain of getting hit with the tomato rather than the brick because the _ was {}."


def test_twins_are_told_apart_by_the_word_that_differs() -> None:
    twins = [
        BenchmarkItem("hard", 0, question=TWIN.format("hard"), answer="brick"),
        BenchmarkItem("soft", 1, question=TWIN.format("soft"), answer="tomato"),
    ]
    s = scan(twins, {"page": f"{FILLER} {TWIN.format('hard')} Answer: brick {FILLER}"})
    assert s["hard"].status == Status.CONTAMINATED
    assert s["soft"].status != Status.CONTAMINATED


def test_duplicate_items_are_the_same_item() -> None:
    """Identical items in one benchmark count once: both are contaminated by a copy."""
    dups = [BenchmarkItem(f"d{i}", i, question=EDIT_SRC, answer="the marlin") for i in range(2)]
    s = scan(dups, {"page": f"{FILLER} {EDIT_SRC} Answer: the marlin {FILLER}"})
    assert s["d0"].status == s["d1"].status == Status.CONTAMINATED


def test_a_siblings_copy_does_not_flag_a_low_information_item() -> None:
    """Instructions built from a few frames ("Take 3 steps.") share most of their text with any
    other item: a document holding another item's copy is that item's evidence."""
    texts = [
        "Take 9 steps. Turn around. Take 9 steps. Turn around.",
        "Take 3 steps. Take 6 steps. Turn around. Take 9 steps. Turn left.",
        "Always face forward. Take 2 steps left. Take 4 steps right.",
        "Take 1 step. Take 8 steps. Turn right. Take 5 steps.",
    ]
    items = [
        BenchmarkItem(f"n{i}", i, question=t, choices=("True", "False"), answer="True") for i, t in enumerate(texts)
    ]
    s = scan(items, {"page": f"{FILLER} Q: {texts[1]} A: True {FILLER}"})
    assert s["n1"].status == Status.CONTAMINATED
    assert s["n0"].status == Status.CLEAN, s["n0"].reason


def test_question_and_answer_together_identify_items_asking_the_same_question() -> None:
    """Five questions on one puzzle, rendered as the puzzle and one answer: that item is
    contaminated, the others share only the puzzle."""
    puzzle = (
        "On a shelf, there are five books: a gray book, a red book, a purple book, a blue book, and a black "
        "book. The red book is to the right of the gray book. The black book is to the left of the blue "
        "book. The blue book is to the left of the gray book. The purple book is the second from the right."
    )
    asks = ["the leftmost", "the rightmost", "the second from the left", "the third from the left"]
    answers = [
        "The black book is the leftmost.",
        "The red book is the rightmost.",
        "The blue book is the second from the left.",
        "The gray book is the third from the left.",
    ]
    books = ["gray", "red", "purple", "blue", "black"]
    items = [
        BenchmarkItem(
            f"p{k}", k, question=puzzle, choices=tuple(f"The {b} book is {a}." for b in books), answer=answers[k]
        )
        for k, a in enumerate(asks)
    ]
    s = scan(items, {"page": f"{FILLER} Q: {puzzle}\nA: {answers[0]}\n{FILLER}"})
    assert s["p0"].status == Status.CONTAMINATED and s["p0"].answer_with_question
    assert all(s[f"p{k}"].status != Status.CONTAMINATED for k in (1, 2, 3))


def test_thresholds_decide() -> None:
    items = [BenchmarkItem("e", 0, question=EDIT_SRC)]
    strict = Thresholds(contaminated_coverage=1.01, suspicious_coverage=1.01, longest_match=10_000, opening_run=10_000)
    s = scan(items, {"page": f"{FILLER} {EDIT_SRC} {FILLER}"}, strict)["e"]
    assert s.status == Status.CLEAN and s.own_coverage == 1.0


def test_too_short_to_judge() -> None:
    s = scan([BenchmarkItem("x", 0, question="Is ice cold?", answer="Yes")], {"page": "Is ice cold? Yes"})["x"]
    assert s.status == Status.TOO_SHORT and "no field has 4 tokens (the longest has 3)" in s.reason


def test_template_text_carries_few_bits() -> None:
    items = [templated(i, c) for i, c in enumerate(CLAIMS)]
    prepared = [prepare(it, N) for it in items]
    bits = token_bits([p.ids for p in prepared], [p.fields for p in prepared], SharedText(prepared).group.tolist())
    frame = len(tokenize("On June 2017, the following claim was made:"))
    claim = len(tokenize(CLAIMS[0]))
    assert bits[0][1:frame].mean() < 1.0  # predictable from the other items
    assert bits[0][frame : frame + claim].mean() > 4.0  # only this item has it


def test_alignment_counts_blocks_not_stray_tokens() -> None:
    item = [1, 2, 3, 4, 5, 6]
    region = [9, 1, 2, 8, 3, 7, 4, 5, 6, 0]
    al = align(item, region)
    assert al.matched.tolist() == [True, True, False, True, True, True]  # "3" alone is chance
    assert find_sequence(np.array(region), np.array([4, 5, 6])) == 6
    assert densest(np.array([1, 2, 50, 51, 52, 90]), 10) == (50, 52)


def test_a_copy_in_repetitive_text_aligns_as_one_run() -> None:
    """LCS may spend a copy's first words one by one on earlier repeats of them (equal-length
    subsequences); the run the document holds is the evidence, so the block takes them back."""
    ids = lambda text: token_hashes(tokenize(text))  # noqa: E731
    item = ids("Turn right. Turn around. Take 10 steps backward. Turn left. Take 2 steps backward.")
    region = ids(
        "steps forward take 10 steps forward turn around turn right take 9 steps a true q turn right turn "
        "around take 10 steps backward turn left take 2 steps backward a true q take 5"
    )
    assert align(item, region).blocks == [(0, 16, 14)]


def test_a_block_is_not_grown_into_the_next_field() -> None:
    """Grown over a field's boundary, a block would leave the next field one matched token, and it
    would not be aligned on its own where the region holds it whole."""
    al = align_fields([1, 1, 0, 0], [0, 0, 1, 1, 0], None, [(0, 2, 0), (2, 4, 1)])
    assert al.matched.all() and sorted(al.blocks) == [(0, 2, 2), (2, 0, 2)]


def test_highlights_on_the_item_side() -> None:
    text = "Which river flows through Baghdad?"
    spans = shared_spans(text, "we know the river flows through Baghdad today")
    assert [text[a:b] for a, b in spans] == ["river flows through Baghdad"]
    assert split_marked("abcdef", [[1, 3]]) == [("a", False), ("bc", True), ("def", False)]


def test_each_choice_the_training_text_holds_is_highlighted() -> None:
    """Choices that open with the same word (a new user's trial): aligned with the matched text,
    "his boots" took its "his" from "his telescope" and was not marked, though the page held it."""
    matched = "his telescope \n his boots \n his fiddle \n his map \n his fiddle"
    for choice in ("his telescope", "his boots", "his fiddle", "his map"):
        assert [choice[a:b] for a, b in shared_spans(choice, matched)] == [choice]
    text = "the blue door"
    assert [text[a:b] for a, b in shared_spans(text, "the red door the blue door the green door")] == [text]
    assert shared_spans("his hat", matched) == []  # "his" alone is no run
    assert shared_spans("his boots", ["he lost his", "boots were new"]) == []  # not whole across two pieces (a review)
    assert shared_spans("his boots", ["he lost", "his boots today"]) == [(0, 9)]
    assert shared_spans("True", "it is True that") == [(0, 4)] and shared_spans("False", "True") == []
    text = "he opens the blue door slowly"  # not held whole: aligned
    assert [text[a:b] for a, b in shared_spans(text, "the blue door")] == ["the blue door"]


def test_stock_phrases_are_not_highlighted_where_the_training_text_does_not_hold_them() -> None:
    """Marked by word pairs, every "of the" and "the river" of a passage lit up once the matched
    text held those pairs anywhere (a review): a text not held whole is aligned, each run of the
    matched text taken once and in order."""
    passage = (
        "The Avon is a river in the south west of England. It rises in the hills to the north of the "
        "county and flows through the city of Bath, where the river was used by the Romans. Most of "
        "the river is navigable, and in the middle of the city there is a weir."
    )
    matched = "What is the name of the river that flows through the city of Bath"
    assert [passage[a:b] for a, b in shared_spans(passage, matched)] == ["flows through the city of Bath"]


def test_common_ngrams_scattered_over_an_item_are_not_a_widespread_copy() -> None:
    """An item copied into many documents is contaminated even though its n-grams are too common
    to look up one by one; an item whose pieces are merely each somewhere (one common phrase,
    the rest scattered over unrelated pages) is not."""
    question = (
        "which famous admiral sailed around the cape of good hope with four ships and a crew of "
        "one hundred and seventy men"
    )
    words = question.split(" ")
    item = BenchmarkItem("q", 0, question=question)
    copies = {f"mirror{i}": f"{FILLER} {' '.join(words)} {FILLER}" for i in range(12)}
    assert scan([item], copies)["q"].status == Status.CONTAMINATED
    scattered = {f"page{i}": f"{FILLER} {' '.join(words[i * 6 : i * 6 + 6])} {FILLER}" for i in range(4)}
    scattered |= {f"phrase{i}": f"{FILLER} {' '.join(words[:5])} {FILLER}" for i in range(12)}
    s = scan([item], scattered)["q"]
    assert s.status != Status.CONTAMINATED, s.reason
    assert "widespread" not in s.reason


def test_a_contaminated_reason_says_when_the_answer_was_missing() -> None:
    q = "which river flows through the ancient city of baghdad and joins the euphrates near basra"
    item = BenchmarkItem("q", 0, question=q, answer="Tigris")
    asked = scan([item], {"page": f"{FILLER} {q} {FILLER}"})["q"]
    answered = scan([item], {"page": f"{FILLER} {q} answer: Tigris {FILLER}"})["q"]
    assert asked.status == answered.status == Status.CONTAMINATED
    assert "answer was not found" in asked.reason and "answer" not in answered.reason


def test_pieces_of_siblings_copies_do_not_assemble_a_clean_item(monkeypatch: pytest.MonkeyPatch) -> None:
    """Instructions drawn from six frames: copies of 200 items give any other item's text in
    pieces (a "Turn left." here, a "Take 7 steps." there). Each piece after the first costs the
    bits of choosing where it starts, so a match assembled from pieces is not evidence; a copy,
    in one piece, still is."""
    rng = random.Random(1)
    frames = ["Take {} steps.", "Take {} steps forward.", "Take {} steps backward.", "Turn left.", "Turn right."]
    frames.append("Turn around.")
    texts = [
        " ".join(rng.choice(frames).format(rng.randint(1, 10)) for _ in range(rng.randint(3, 6))) for _ in range(300)
    ]
    items = [
        BenchmarkItem(f"n{i}", i, question=t, choices=("True", "False"), answer="True") for i, t in enumerate(texts)
    ]
    pages = [" ".join(f"Q: {texts[j]} A: True" for j in range(100 + 25 * k, 125 + 25 * k)) for k in range(8)]
    s = scan(items, {f"page{k}": f"{FILLER[:200]} {page} {FILLER[:200]}" for k, page in enumerate(pages)})
    assert [(i, s[f"n{i}"].reason) for i in range(100) if flagged(s[f"n{i}"])] == []
    copies = [f"n{i}" for i in range(100, 300)]
    assert sum(s[i].status == Status.CONTAMINATED for i in copies) > 100
    # the region aligned with each copy is its own copy, not a run of siblings repeating its frame
    # (app.core.matching.region_for), so the piece cost costs no copy its status
    monkeypatch.setattr(matching, "breaks", lambda *_a: 0)
    free = scan(items, {f"page{k}": f"{FILLER[:200]} {page} {FILLER[:200]}" for k, page in enumerate(pages)})
    assert [i for i in copies if s[i].status != free[i].status] == []


def test_an_edited_copy_of_a_longer_item_is_not_the_shorter_items_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Item s's words are all in item l. A copy of l with one word replaced holds s's words in two
    pieces with l's words between them: l accounts for more of that stretch than s does, so the
    page is l's copy (edited), not s's."""
    rng = random.Random(2)
    frames = ["Take {} steps.", "Take {} steps forward.", "Take {} steps backward.", "Turn left.", "Turn right."]
    texts = [
        " ".join(rng.choice(frames).format(rng.randint(1, 10)) for _ in range(rng.randint(3, 6))) for _ in range(150)
    ]
    short = "Take 4 steps. Take 2 steps. Take 7 steps."
    long = "Take 8 steps. Take 4 steps. Take 4 steps. Take 2 steps. Take 7 steps."
    texts = [t for t in texts if short not in t] + [short, long]
    items = [
        BenchmarkItem(f"n{i}", i, question=t, choices=("True", "False"), answer="False") for i, t in enumerate(texts)
    ]
    edited = "Take 8 steps. Take 4 steps. Established 4 steps. Take 2 steps. Take 7 steps. A. True B. False"
    page = f"{FILLER[:300]} {edited} {FILLER[:300]}"
    s_id, l_id = f"n{len(texts) - 2}", f"n{len(texts) - 1}"
    found = scan(items, {"page": page})
    assert found[l_id].status == Status.CONTAMINATED
    assert found[s_id].status == Status.CLEAN, found[s_id].reason
    monkeypatch.setattr(matching, "_fills_gaps", lambda *_a: False)
    assert flagged(scan(items, {"page": page})[s_id])  # what the rule is for


def test_each_competitor_is_measured_on_its_own_region() -> None:
    """A longer competitor is measured on its own region of the document (its copy, far from the
    item's region); a shorter one weighed after it is measured on the item's region, where its
    copy is, not on the longer one's."""
    a = "the quick brown fox jumps over the lazy dog"
    b = "seven silver swans swam slowly across the frozen northern lake while the ferryman slept in his hut"
    x = "an old fisherman mended nets"
    c = "while the farmer counted his sheep twice before the storm arrived at noon over the hills and the barns"
    texts = [("p", f"{a} {b}"), ("longer", f"{a} {c}"), ("shorter", f"{x} {b}")]
    p, longer, shorter = (prepare(BenchmarkItem(k, i, question=t), N) for i, (k, t) in enumerate(texts))
    assert longer.n_tokens > p.n_tokens >= shorter.n_tokens
    doc = DocTokens.of(token_hashes(tokenize(f"{FILLER[:400]} {x} {b} {FILLER[:2000]} {a} {c} {FILLER[:400]}")), N)
    lo, hi = matching.region_for(p, doc, N, None)
    region = matching.Region.of(doc, lo, hi, N)
    al = align_fields(p.ids, region.ids, p.whole, p.fields)
    present = matching.member(p.mgrams, region.mgrams)
    held = matching.held(p, region.ids, region.mgrams, present=present) & al.matched
    copies = matching._copy_of(p, [longer, shorter], region, held, al, present, doc, N, (lo, hi), matching.MatchCache())
    assert 1 in copies  # the shorter item's copy is the item's region


def test_a_verbatim_copy_after_a_siblings_copy_is_one_piece() -> None:
    """LCS may take a field's first words from a sibling's copy just before the item's own: the
    region still holds the field in one piece, which costs nothing."""
    q = "the number of apples in the basket is twice the number of pears in the basket how many pears are there"
    p = prepare(BenchmarkItem("q", 0, question=q), N)
    doc = DocTokens.of(
        token_hashes(tokenize(f"{FILLER} the number of apples in the basket is {q} six pears {FILLER}")), N
    )
    stats = benchmark_stats([p], SharedText([p]), Counter(doc.grams.tolist()), N, Thresholds())
    m = match_document(0, [p], stats[0], SharedText([p]), 0, doc, N, Thresholds())
    assert m.coverage == 1.0 and m.break_bits == 0.0


@pytest.mark.parametrize("between", ["zulu", " ".join(f"x{i}" for i in range(8))])
def test_a_piece_after_the_first_costs_the_bits_of_placing_it(between: str) -> None:
    """A piece resuming g words on costs 1 + log2(1 + g) bits to place (2 bits a word apart, as an
    edit leaves it), at most what placing it anywhere in the region costs, log2(region length)."""
    item = BenchmarkItem("e", 0, question=EDIT_SRC)
    p = prepare(item, N)
    words = EDIT_SRC.split()
    pieces = " ".join(" ".join(words[k : k + 6]) + f" {between}" for k in range(0, len(words), 6))
    doc = DocTokens.of(token_hashes(tokenize(f"{FILLER} {pieces} {FILLER}")), N)
    stats = benchmark_stats([p], SharedText([p]), Counter(doc.grams.tolist()), N, Thresholds())

    m = match_document(0, [p], stats[0], SharedText([p]), 0, doc, N, Thresholds())
    assert m.coverage == 1.0
    breaks = len(range(0, len(words), 6)) - 1
    region = m.region[1] - m.region[0]
    gap = len(between.split())
    each = min(np.log2(region), 1 + np.log2(1 + gap))
    assert m.break_bits == pytest.approx(breaks * each)
    assert m.matched_bits == pytest.approx(float(stats[0].bits.sum()) - m.break_bits)


def test_the_copy_is_the_item_whose_distinct_text_the_document_holds() -> None:
    """Item b's question is item a's without its last words, and a's answer is far longer than
    b's. A page holding a's question holds a small share of a (its long answer is not there)
    and a larger share of b; shares of whole items would call the page b's copy. What tells the
    two apart is the text they do not share: the page holds a's distinct words and none of b's,
    so it is a's copy, and b's own text (its answer) is not there."""
    qa = "Are there integer solutions to the equation (x^2-1)(y^2-1)+1984=z^2 where x and y are both odd primes?"
    qb = "Are there integer solutions to the equation (x^2-1)(y^2-1)+1984=z^2?"
    aa = (
        "Write the equation as x^2 y^2 - x^2 - y^2 + 1985 = z^2 and look at it modulo eight: every odd square is "
        "one modulo eight, so the left side is one minus one minus one plus one, which is zero, while z^2 would "
        "have to be zero modulo eight too, and checking the small odd primes three five and seven rules each out."
    )
    items = [BenchmarkItem("a", 0, question=qa, answer=aa), BenchmarkItem("b", 1, question=qb, answer="Yes, x = 7.")]
    s = scan(items, {"page": f"{FILLER} Problem 4. {qa} {FILLER}"})
    assert s["a"].status == Status.SUSPICIOUS and "without its answer" in s["a"].reason
    assert s["b"].status == Status.CLEAN and s["b"].own_coverage == 0.0, s["b"].reason


def test_a_worked_solution_found_with_its_question_is_contamination() -> None:
    """Maths benchmarks give a worked solution beside a short final answer. A page holding the
    question and the solution gives the answer away even when the final answer's words are not
    there: contaminated. The question alone is not."""
    item = BenchmarkItem(
        "m1",
        0,
        question="Let Q(n) be the digit sum of n. If Q(n)=Q(2n), what are the possible values of n mod 9?",
        solution=(
            "First we show that if Q(m)=Q(n) then m-n mod 9=0, because a number and its digit sum agree mod 9. "
            "Since Q(2n)=Q(n), 2n-n mod 9=0, so n mod 9=0."
        ),
        answer="0 is the only possible value",
    )
    other = BenchmarkItem("m2", 1, question="How many primes below one hundred end in seven?", answer="6")
    page = f"{FILLER} Question: {item.question} Solution: {item.solution} {FILLER}"
    s = scan([item, other], {"page": page})
    assert s["m1"].status == Status.CONTAMINATED and s["m1"].answer_found, s["m1"].reason
    s = scan([item, other], {"page": f"{FILLER} Question: {item.question} {FILLER}"})
    assert s["m1"].status == Status.SUSPICIOUS and not s["m1"].answer_found, s["m1"].reason


def test_a_document_that_is_no_evidence_finds_neither_the_question_nor_the_answer() -> None:
    """question_found and answer_found describe the evidence. A document whose match cannot be
    told from chance (here: min_bits set above what the copy carries) is no evidence, and what
    it holds is reported as not found: they once came from the best document whatever its
    verdict, so a navigation item met by chance in a Go file, `false` a few words on, was clean
    with its question and answer "found"."""
    item = BenchmarkItem(
        "n1",
        0,
        question="Always face forward. Take 10 steps forward. Take 10 steps backward.",
        choices=("True", "False"),
        answer="True",
    )
    other = BenchmarkItem(
        "n2",
        1,
        question="Take 2 steps. Take 3 steps. Turn around. Take 5 steps.",
        choices=("True", "False"),
        answer="False",
    )
    page = {"page": f"{FILLER} {item.question} Options: True False. Answer: True {FILLER}"}
    found = scan([item, other], page)["n1"]
    assert found.status == Status.CONTAMINATED and found.question_found and found.answer_with_question, found.reason
    chance = scan([item, other], page, Thresholds(min_bits=200))["n1"]
    assert chance.status == Status.CLEAN and "chance" in chance.reason
    assert not chance.question_found and chance.answer_found is False and not chance.answer_with_question
    assert not any(rs.found for rs in chance.roles.values()) and chance.roles["question"].coverage == 1.0


def test_an_item_no_document_holds_still_reports_its_own_text_and_information() -> None:
    """own_tokens and item_bits are the item's own figures: with no candidate document they
    were 0, as if the item had no text of its own (a new user's report)."""
    q = "Which river flows through the ancient city of Baghdad and joins the Euphrates near Basra?"
    a = BenchmarkItem("a", 0, question=q)
    b = BenchmarkItem("b", 1, question="Tides on the open ocean are driven mostly by the moon and the sun together")
    s = scan([a, b], {"page": FILLER})["a"]
    assert s.status == Status.CLEAN and s.best_doc is None
    assert s.own_tokens == s.tokens == len(tokenize(q)) and s.bits_total > 0 and s.own_bits_total == s.bits_total


def test_a_page_with_the_final_answer_but_not_the_solution_is_judged_without_the_solution() -> None:
    """Pages give the final answer, the worked solution, or both: a page holding the question
    and the final answer is a copy even though the (long) solution is not there."""
    item = BenchmarkItem(
        "m1",
        0,
        question="Let Q(n) be the digit sum of n. If Q(n)=Q(2n), what are the possible values of n mod 9?",
        solution=(
            "First we show that if Q(m)=Q(n) then m-n mod 9=0, because a number and its digit sum agree mod 9. "
            "Since Q(2n)=Q(n), 2n-n mod 9=0, so n mod 9=0. We check this for every residue in turn and find "
            "that no other residue class can satisfy the equation for any choice of the digits."
        ),
        answer="0 is the only possible value",
    )
    other = BenchmarkItem("m2", 1, question="How many primes below one hundred end in seven?", answer="6")
    page = f"{FILLER} Q: {item.question} A: 0 is the only possible value. {FILLER}"
    s = scan([item, other], {"page": page})["m1"]
    assert s.status == Status.CONTAMINATED and s.own_coverage > 0.9 and s.coverage > 0.9, s.reason


def test_a_siblings_templated_solution_is_not_this_items_answer() -> None:
    """Two items ask the same question; their worked solutions share a templated sentence and
    differ in the end. A page with item e0's question, solution and answer gives e1 its question
    and most of its solution's words, but not the solution's own text: e1's answer is not found
    and e1 is not contaminated."""
    q = "Using the rule stated in the passage, how many lanterns does the keeper of Porthkennack light each night?"

    def item(k: int, x: int, why: str) -> BenchmarkItem:
        sol = f"The keeper lights one lantern for every ship expected in the harbour after dusk, {why}"
        return BenchmarkItem(f"e{k}", k, question=q, passage=f"passage {k}", answer=str(x), solution=sol)

    a, b = item(0, 4, "and four ships are due"), item(1, 5, "so five")
    s = scan([a, b], {"page": f"{FILLER} {q} {a.solution} Answer: 4 {FILLER}"})
    assert s["e0"].status == Status.CONTAMINATED
    assert not s["e1"].answer_found and s["e1"].status != Status.CONTAMINATED, s["e1"].reason


def test_a_quoted_run_of_a_long_solution_is_its_own_text_not_a_shared_passage() -> None:
    sol = " ".join(f"step{k} word{k} claim{k} lemma{k} follows{k}" for k in range(20))
    item = BenchmarkItem(
        "m1",
        0,
        question="Let Q(n) be the digit sum of n. If Q(n)=Q(2n), what are the possible values of n mod 9?",
        answer="0 is the only possible value",
        solution=sol,
    )
    other = BenchmarkItem("m2", 1, question="How many primes below one hundred end in seven?", answer="6")
    s = scan([item, other], {"notes": f"{FILLER} {' '.join(sol.split()[:25])} {FILLER}"})["m1"]
    assert "other item" not in s.reason and not s.passage_found and s.longest_match >= 25, s.reason


def test_a_worked_solution_without_a_final_answer_is_the_answer() -> None:
    """The same item with its solution as `answer` or as `solution` (no final answer) gets the
    same verdict on a page holding only its question: the question without its answer."""
    q = "Let Q(n) be the digit sum of n. If Q(n)=Q(2n), what are the possible values of n mod 9?"
    sol = (
        "First we show that if Q(m)=Q(n) then m-n mod 9=0, because a number and its digit sum agree mod 9. "
        "Since Q(2n)=Q(n), 2n-n mod 9=0, so n mod 9=0."
    )
    other = BenchmarkItem("m2", 1, question="How many primes below one hundred end in seven?", answer="6")
    page = {"page": f"{FILLER} {q} {FILLER}"}
    as_answer = scan([BenchmarkItem("m1", 0, question=q, answer=sol), other], page)["m1"]
    as_solution = scan([BenchmarkItem("m1", 0, question=q, solution=sol), other], page)["m1"]
    assert as_answer.status == Status.SUSPICIOUS
    assert as_solution.status == as_answer.status and as_solution.answer_found is False, as_solution.reason


# ---- short items, edits, fields, competitors (issue 9) ----------------------------------------

SPORTS_MORE = [
    "Freddie Freeman scored a bicycle kick",
    "Max Pacioretty skated backwards",
    "Daniel Jones threw a touchdown pass",
    "Kris Bryant got a base hit",
    "Luis Suarez got on the end of a through ball",
]


def test_a_light_edited_copy_of_a_six_word_item_is_found_by_the_short_channel() -> None:
    """One word of a six-word item deleted: no 5-gram survives, so only the short channel's
    3-grams find the page and place the item in it. Without the channel the copy is missed."""
    page = f"{FILLER} Freddie Freeman scored a kick\nA. plausible\nB. implausible\nAnswer: implausible\n{FILLER}"
    items = sports(SPORTS_MORE)
    found = scan(items, {"page": page})
    assert flagged(found["s0"]), found["s0"].reason
    assert found["s0"].own_coverage >= 0.6
    assert all(not flagged(found[f"s{i}"]) for i in range(1, 5))
    missed = scan(items, {"page": page}, short=False)["s0"]
    assert not flagged(missed) and missed.own_coverage == 0.0


def test_a_four_word_item_is_judged_and_its_verbatim_copy_found() -> None:
    """Four words of text: no 5-gram, but the short channel judges it (too_short is for fewer
    than four tokens in every field)."""
    page = f"{FILLER} Q: Max Pacioretty skated backwards\nA: plausible\n{FILLER}"
    items = [
        BenchmarkItem(f"s{i}", i, question=t, choices=("plausible", "implausible"), answer="plausible")
        for i, t in enumerate(SPORTS_MORE)
    ]
    s = scan(items, {"page": page})
    assert s["s1"].status == Status.CONTAMINATED, s["s1"].reason
    assert scan(items, {"page": page}, short=False)["s1"].status == Status.TOO_SHORT


def test_a_rare_name_alone_in_a_longer_question_is_not_a_copy() -> None:
    """A title of five rare words (in few documents of the corpus) is found in a page about it:
    the short channel's rare runs count only when they hold more than half of the own text."""
    q = "Did Alice's Adventures in Wonderland inspire the plot of Macbeth?"
    item = BenchmarkItem("q", 0, question=q, answer="No. Alice's Adventures in Wonderland was published in 1865.")
    page = f"{FILLER} Alice's Adventures in Wonderland is a novel by Lewis Carroll. {FILLER}"
    s = scan([item], {"page": page})["q"]
    assert not flagged(s), s.reason


def test_four_words_of_a_five_word_question_are_a_phrase() -> None:
    """A question of fewer than 2n own tokens counts alone only when the page holds all of it."""
    questions = ["Mostly useful for unit work?", "Where do the herons stand?", "Which bakers sold bread all winter?"]
    items = [
        BenchmarkItem(f"q{i}", i, question=q, answer=a) for i, (q, a) in enumerate(zip(questions, "xyz", strict=True))
    ]
    chance = scan(items, {"page": f"{FILLER} This is mostly useful for unit testing. {FILLER}"})["q0"]
    assert not flagged(chance), chance.reason
    whole = scan(items, {"page": f"{FILLER} Q: Mostly useful for unit work? {FILLER}"})["q0"]
    assert flagged(whole) and whole.answer_found is False, whole.reason


# Messages of a program's interface, as a benchmark of one-line items without answers might hold
MESSAGES = [
    "erreur de fin de ligne",
    "impossible de renommer le fichier extrait vers sa cible",
    "le serveur a refusé la connexion du client",
    "aucune entrée de journal pour cette date",
]


def test_a_phrase_inside_a_short_item_is_not_its_copy() -> None:
    """Four words of a five-word item, or six of a seven-word one, in one run: a phrase of the
    item's language, which unrelated text of its domain holds by chance (a French message against
    other programs' catalogues, bench/unspaced_probe.py). Found whole, the item is contaminated."""
    items = [BenchmarkItem(f"m{i}", i, question=t) for i, t in enumerate(MESSAGES)]
    chance = scan(items, {"page": f"{FILLER} ne correspond pas à un précédent style de fin de ligne {FILLER}"})["m0"]
    assert chance.own_coverage >= 0.8 and not flagged(chance), chance.reason
    seven = "aucune entrée de journal pour cette semaine"  # "date" is the item's, "semaine" the page's
    chance = scan(items, {"page": f"{FILLER} {seven} {FILLER}"})["m3"]
    assert chance.own_coverage >= 0.8 and not flagged(chance), chance.reason
    whole = scan(items, {"page": f"{FILLER} Erreur de fin de ligne. {FILLER}"})["m0"]
    assert whole.status == Status.CONTAMINATED, whole.reason


def test_a_short_item_with_a_word_changed_inside_is_still_found() -> None:
    """One word changed inside an eight-token item: its first and last words found, as far apart
    as in the item, in two runs; an edited copy, not a phrase, whatever the runs' length."""
    items = [BenchmarkItem(f"m{i}", i, question=t) for i, t in enumerate(MESSAGES)]
    page = f"{FILLER} le serveur a rejeté la connexion du client {FILLER}"
    s = scan(items, {"page": page})["m2"]
    assert s.status == Status.CONTAMINATED and s.own_coverage < 1.0, s.reason
    moved = f"{FILLER} le serveur a dit {FILLER[:200]} la connexion du client {FILLER}"  # the two runs apart
    assert not flagged(scan(items, {"page": moved})["m2"])


def test_a_word_changed_inside_is_a_copy_up_to_two_words_more_a_word_missing() -> None:
    """The first and last words of an eight-token item with its fourth word replaced: as far apart
    as in the item plus two per word missing, an edited copy; three words more, two phrases. (The
    runs a page's length apart above never reach the rule: its region holds one of them.)"""
    items = [BenchmarkItem(f"m{i}", i, question=t) for i, t in enumerate(MESSAGES)]
    for between, status in [("rejeté", Status.CONTAMINATED), ("rejeté tout net", Status.CONTAMINATED)]:
        s = scan(items, {"page": f"{FILLER} le serveur a {between} la connexion du client {FILLER}"})["m2"]
        assert s.status == status and s.own_coverage == 7 / 8, (between, s.reason)
    s = scan(items, {"page": f"{FILLER} le serveur a rejeté tout à fait la connexion du client {FILLER}"})["m2"]
    assert s.own_coverage == 7 / 8 and not flagged(s), s.reason


def test_a_word_changed_inside_a_copy_that_glued_a_number_is_still_found() -> None:
    """A copy that writes "3.14" as "314" aligns token for token (matching._unglued), its block one
    token shorter in the document than in the item: the item's last word is still placed there."""
    items = [BenchmarkItem(f"m{i}", i, question=t) for i, t in enumerate(MESSAGES)]
    items[2] = BenchmarkItem("m2", 2, question="le serveur a refusé connexion 3.14")
    for number in ("3.14", "314"):
        s = scan(items, {"page": f"{FILLER} le serveur a rejeté connexion {number} {FILLER}"})["m2"]
        assert s.status == Status.CONTAMINATED and s.own_coverage == 6 / 7, (number, s.reason)


JA_MESSAGES = ["カーソルを点滅させるかどうかです。", "ファイルの読み込みに失敗しました", "接続がタイムアウトしました"]


def test_a_phrase_of_cjk_characters_is_measured_in_words() -> None:
    """Each ideograph and kana is a token, so 13 tokens of Japanese, "カーソルを点滅させるかどうか"
    ("whether the cursor blinks"), are four words: a phrase another program's message holds (a
    probe of UI messages, bench/unspaced_probe.py), not a copy of the 16-token item that ends in
    "です". The whole item found is its copy; the item's length counts in words (words_in)."""
    items = [BenchmarkItem(f"j{i}", i, question=t) for i, t in enumerate(JA_MESSAGES)]
    other = "次のスライダの文字列として現在値を表示するかどうか\nカーソルを点滅させるかどうか\n"
    chance = scan(items, {"page": f"{FILLER} {other} {FILLER}"})["j0"]
    assert chance.own_coverage >= 0.8 and not flagged(chance), chance.reason
    whole = scan(items, {"page": f"{FILLER} {other}{JA_MESSAGES[0]} {FILLER}"})["j0"]
    assert whole.status == Status.CONTAMINATED, whole.reason
    assert prepare(items[0], N, 3).tokens_per_word > 2.5


def test_a_cjk_phrase_reason_says_its_lengths_are_words() -> None:
    """A clean CJK item's phrase reason gives lengths in tokens scaled to words (_in_words): a new
    user's trial read "24 of its tokens (fewer than 29)" of a 28-character message as a bar no
    copy could pass. The reason says how many tokens make a word and what the rules' lengths are
    here; an English item's reason is as before."""
    message = "ネットワーク設定ファイルを読み込むことができませんでした"
    item = BenchmarkItem("j", 0, question=message)
    s = scan([item], {"page": f"{FILLER} 今日は{message[3:-3]}ね。 {FILLER}"})["j"]
    per_word = prepare(item, N, 3).tokens_per_word
    assert not flagged(s) and "fewer than 29" in s.reason, s.reason
    assert f"{per_word:.1f} of this item's tokens make a word, so 8 words are 29 tokens here" in s.reason, s.reason
    english = BenchmarkItem("e", 0, question="Purple beetles gathered under the rotten cedar log.")
    e = scan([english], {"page": f"{FILLER} really beetles gathered under the rotten cedar log. {FILLER}"})["e"]
    assert e.reason.endswith("(fewer than 8): a phrase's length, not a copy's"), e.reason


def test_a_cjk_phrase_in_many_documents_is_no_widespread_copy() -> None:
    """The phrase above in more than max_df documents: no one document holds the item (its n-grams
    are common), and the whole corpus's verdict counts lengths in words too, so 14 tokens of it, four
    words, are no unbroken run of longest_match (a widespread copy's). A long item so is one."""
    long = (
        "このプログラムは設定ファイルを読み込んだ後に、指定されたディレクトリの中にある全ての画像を変換して保存します"
    )
    items = [BenchmarkItem(f"j{i}", i, question=t) for i, t in enumerate([*JA_MESSAGES, long])]
    other = "次のスライダの文字列として現在値を表示するかどうか\nカーソルを点滅させるかどうか\n"
    pages = {f"p{d}": f"{FILLER[d * 50 : d * 50 + 3000]} {other} {long} {FILLER[:2000]}" for d in range(11)}
    scores = scan(items, pages)
    assert not flagged(scores["j0"]), scores["j0"].reason
    assert scores["j3"].status == Status.CONTAMINATED and "widespread" in scores["j3"].reason


def test_each_field_is_found_where_the_document_has_it() -> None:
    """A page holds the context and the right ending only. One LCS over the item in field order
    spends the context's words one by one on a long wrong ending that shares them ("a", "the",
    "kitchen"), and counts none; each field left unmatched is aligned on its own."""
    ctx = ". a chef in the kitchen wearing a chef hat"
    endings = (
        "narrates using an electric mixer.",
        "and gloves is demonstrating how to spread sugar into a thick cake pan.",
        "and berrystaff in a kitchen are standing in front of a counter and talking about the ingredients and "
        "dishes applied by the chefs in the kitchen.",
        "is giving instructions on how to sharpen a knife.",
    )
    before = (
        "Give the prefix a value and keep a space at the end, so as to set it apart from the rest of a line; "
        "marks are fine too. A tip: the logger adds a time of its own and an id, so you need not add those to a line."
    )
    item = BenchmarkItem("h", 0, question=ctx, choices=endings, answer=endings[3])
    s = scan([item], {"page": f"{FILLER} {before}\n\n{ctx} {endings[3]}\n\n{FILLER}"})["h"]
    assert s.status == Status.CONTAMINATED and s.answer_with_question, s.reason


def test_an_item_whose_text_opens_a_longer_item_is_not_contaminated_by_the_longer_ones_copy() -> None:
    """Item a's instructions are the first four of item b's ten. A page holding b's copy holds
    all of a's text, inside b's: measured on b's own region of the page, b explains it."""
    a = "Always face forward. Take 6 steps left. Take 9 steps backward. Take 3 steps forward."
    b = a + " Take 1 step forward. Take 3 steps left. Take 5 steps forward. Take 8 steps left. Take 1 step right."
    others = ["Take 2 steps. Turn left. Take 7 steps.", "Turn around. Take 4 steps. Turn right. Take 5 steps."]
    items = [
        BenchmarkItem(f"n{i}", i, question=t, choices=("True", "False"), answer="False")
        for i, t in enumerate([a, b, *others])
    ]
    s = scan(items, {"page": f"{FILLER} Question: {b}\nA. True\nB. False\nAnswer: False\n{FILLER}"})
    assert s["n1"].status == Status.CONTAMINATED
    assert s["n0"].status == Status.CLEAN and s["n0"].own_coverage == 0.0, s["n0"].reason  # all of it is b's


def test_a_truncated_copy_holds_the_items_opening() -> None:
    """The first half of a question of 24 words, cut mid-word, inside an unrelated page: under
    the coverage a partial copy needs (0.4 of the own text with its choices), but the page
    holds the item's opening in one run, as a truncated copy does; the same words from its
    middle do not."""
    q = (
        "Kai sold their clothes to the bidder at an auction when they didn't fit any more and the "
        "money went to a trip. What will Kai want to do next?"
    )
    choices = ("Give the rest away for free", "Help the people in need", "Buy some new clothes")
    items = [BenchmarkItem("k", 0, question=q, choices=choices, answer=choices[2])]
    opening = "Kai sold their clothes to the bidder at an auction wh"
    s = scan(items, {"page": f"{FILLER} {opening} {FILLER}"})["k"]
    assert s.status == Status.SUSPICIOUS and "opening" in s.reason and s.own_coverage < 0.4, s.reason
    middle = "their clothes to the bidder at an auction when they"
    assert not flagged(scan(items, {"page": f"{FILLER} {middle} {FILLER}"})["k"])


def test_a_copy_that_dropped_the_punctuation_inside_numbers_and_formulas_is_found() -> None:
    """Reformatted copies drop punctuation, and where it was the only thing between two tokens
    they become one ("3^105+4^105" -> "31054105", "$1,500" -> "1500"): such a token is read as
    the run it glues."""
    q = "Find 3^105+4^105 mod 7, given that a bike costs $1,500 and a helmet $2.50 more than the lock."
    item = [BenchmarkItem("m", 0, question=q, answer="0")]
    copy = "QUESTION FIND 31054105 MOD 7 GIVEN THAT A BIKE COSTS 1500 AND A HELMET 250 MORE THAN THE LOCK"
    page = f"{FILLER} {copy} {FILLER}"
    s = scan(item, {"page": page})["m"]
    assert s.status == Status.CONTAMINATED and s.own_coverage > 0.9, s.reason


def _unglued_by_token(p: PreparedItem, region_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """matching._unglued's reading, token by token (as it was written before it was vectorised)."""
    hit = np.isin(region_ids, p.glued[:, 0]) & ~np.isin(region_ids, p.ids)
    first = {int(h): (int(a), int(k)) for h, a, k in p.glued[::-1].tolist()}  # each id's first run
    ids, src = [], []
    for j, (tok, glued) in enumerate(zip(region_ids.tolist(), hit.tolist(), strict=True)):
        a, k = first[tok] if glued else (0, 0)
        ids += p.ids[a : a + k].tolist() if glued else [tok]
        src += [j] * (k if glued else 1)
    return np.array(ids, dtype=np.int64), np.array(src, dtype=np.int64)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["3", "105", "x", "y", "+", "^", ".", ",", " ", "mod", "is_a(b)", "7"]), max_size=40))
def test_glued_tokens_are_read_as_their_runs_wherever_they_are(parts: list[str]) -> None:
    """A region token that glues a run of the item's tokens ("31054105" for "3^105+4^105") is read
    as the run (the first run, where several glue to it), and each token read keeps where it came
    from; a token the item itself has is read as itself."""
    q = "Find 3^105+4^105 mod 7 and x.y+3 where is_a(b) is 1,500, then 31.05 and x.y again " + "".join(parts)
    p = prepare(BenchmarkItem("m", 0, question=q), N)
    text = "".join(parts).replace("^", "").replace("+", "").replace(".", "").replace(",", "")
    region_ids = token_hashes(tokenize(f"find 31054105 {text} mod 7 xy3 1500 {text} isab 3 3105 xy")).view(np.int64)
    region = matching.Region(region_ids, np.zeros(0, np.int64), np.zeros(0, np.int64))
    got, src = matching._unglued(p, region, N)
    want_ids, want_src = _unglued_by_token(p, region_ids)
    if src is None:  # nothing glued: the region as it was
        assert got is region and np.array_equal(want_ids, region_ids)
    else:
        assert np.array_equal(got.ids, want_ids) and np.array_equal(src, want_src)
        assert len(got.ids) > len(region_ids)


def _bits_by_counting(items: list[list[list[int]]], groups: list[int]) -> np.ndarray:
    """surprise.flat_bits worked out the long way (the module doc's model, read off it): items as
    fields of token ids; counts over the first item of each group, less the scored item's own;
    contexts as tuples that restart at every field; Witten-Bell from trigram down to add-alpha."""
    counted = [k for k, g in enumerate(groups) if groups.index(g) == k]

    def events(item: list[list[int]]) -> list[tuple[int, tuple[object, ...], tuple[object, ...]]]:
        out = []
        for f in item:
            for j, w in enumerate(f):
                h1 = ("start",) if j == 0 else (f[j - 1],)
                h2 = ("start", "start") if j == 0 else ("start", f[0]) if j == 1 else (f[j - 2], f[j - 1])
                out.append((w, h1, h2))
        return out

    def tally(ev: list[tuple[int, tuple[object, ...], tuple[object, ...]]]) -> Counter[object]:
        c: Counter[object] = Counter()
        for w, h1, h2 in ev:
            c.update([("w", w), ("h", h1), ("hw", h1, w), ("h", h2), ("hw", h2, w)])
        return c

    every = [events(it) for it in items]
    total = sum(len(every[k]) for k in counted)
    seen = tally([e for k in counted for e in every[k]])
    vocab = len({w for k in counted for w, _h1, _h2 in every[k]}) + 1
    follow = Counter(key[1] for key in seen if key[0] == "hw")  # T(h): distinct words after h
    out = []
    for ev in every:
        own, n = tally(ev), total - len(ev)
        for w, h1, h2 in ev:
            p = (seen["w", w] - own["w", w] + 0.5) / (n + 0.5 * vocab)
            for h in (h1, h2):
                pair, context = max(seen["hw", h, w] - own["hw", h, w], 0), max(seen["h", h] - own["h", h], 0)
                kinds = max(follow[h], 1)
                p = (pair + kinds * p) / (context + kinds) if context > 0 else p
            out.append(p)
    return -np.log2(np.array(out, dtype=np.float64))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(st.lists(st.integers(0, 12), min_size=0, max_size=9), min_size=0, max_size=3),
        min_size=1,
        max_size=7,
    ),
    st.lists(st.integers(0, 6), min_size=7, max_size=7),
    st.lists(st.integers(0, 9), min_size=7, max_size=7),
    st.permutations(range(7)),
)
def test_token_bits_are_the_models_counts(
    items: list[list[list[int]]], twin_of: list[int], cut: list[int], labels: list[int]
) -> None:
    """flat_bits counts every key of the benchmark in one sort per kind (surprise._KeyCounts):
    it must give what counting each item's events the long way gives, for benchmarks of one
    item or several, empty fields and items, repeated tokens, and duplicate items: an item
    copies an earlier one's tokens when twin_of says so, cut into fields its own way (a group
    shares its token ids, not always its fields), and joins its group; group labels are any
    numbers, the first member of a group not the one with the label's index."""
    groups = [labels[k] for k in range(len(items))]
    for k in range(1, len(items)):
        if twin_of[k] < k:
            tokens = [w for f in items[twin_of[k]] for w in f]
            at = min(cut[k], len(tokens))
            items[k], groups[k] = [tokens[:at], tokens[at:]], groups[twin_of[k]]
    scaled = [[[w * 0x9E3779B97F4A7C1 for w in f] for f in it] for it in items]
    ids = [np.array([w for f in it for w in f], dtype=np.int64) for it in scaled]
    lengths = np.array([len(a) for a in ids], dtype=np.int64)
    pos = [j for it in items for f in it for j in range(len(f))]
    got = flat_bits(np.concatenate(ids), np.array(pos, dtype=np.int64), lengths, np.array(groups, dtype=np.int64))
    np.testing.assert_allclose(got, _bits_by_counting(scaled, groups), rtol=1e-12)


def test_two_items_are_each_scored_by_the_other() -> None:
    """With a second item in the benchmark, what the two share is predictable and what only one
    has is not."""
    a = np.array([1, 2, 3, 4, 1, 2, 3, 9], dtype=np.int64)
    pos = np.array([0, 1, 2, 3, 0, 1, 2, 3], dtype=np.int64)
    bits = flat_bits(a, pos, np.array([4, 4]), np.array([0, 1]))
    assert bits[1] < 1.0 < bits[3]  # "2" follows "1" in the other item too; "4" and "9" differ


def test_a_competitors_region_is_kept_per_document_for_its_own_text() -> None:
    """_region_near keeps each competitor's region on the document, keyed by what it depends on:
    two items of the same length with different text, asked in turn of one document, each get
    the region of their own copy."""

    def words(k: int, tag: str) -> str:
        return " ".join(f"{tag}{j}" for j in range(k))

    first = prepare(BenchmarkItem("a", 0, question=words(12, "first")), N)
    second = prepare(BenchmarkItem("b", 1, question=words(12, "second")), N)
    text = f"{first.item.question} {FILLER} {second.item.question} {FILLER}"
    doc = DocTokens.of(token_hashes(tokenize(text)).view(np.int64), N)
    at_first, at_second = matching._region_near(first, doc, (0, 1), N), matching._region_near(second, doc, (0, 1), N)
    assert at_first[0] == 0 < at_first[1] < at_second[0]
    fresh = DocTokens.of(doc.ids, N)  # nothing kept: the answer as worked out
    assert matching._region_near(second, fresh, (0, 1), N) == at_second
    assert matching._region_near(first, doc, (0, 1), N) == at_first  # asked again: kept


def test_a_question_written_from_its_source_is_not_reported_as_a_copy() -> None:
    """StrategyQA's "Was Hillary Clinton's deputy chief of staff in 2009 baptised?" against the fact
    it was written from: the page holds 10 of its 12 own tokens, not its answer. That is 83% of
    the question, which the 80% rule called `contaminated`; without the answer, a copy holds all of
    the question but a token (bench/source_null.py). The whole question, answer missing, is still
    `contaminated`, and the same 83% with the answer after it too."""
    q = "Was Hillary Clinton's deputy chief of staff in 2009 baptised?"
    others = [
        BenchmarkItem("o1", 1, question="Could a cat ride a tank missile from Barcelona to Madrid?", answer="No"),
        BenchmarkItem("o2", 2, question="Do people associate greyhounds with a film about lost dogs?", answer="No"),
    ]
    items = [BenchmarkItem("q", 0, question=q, answer="No"), *others]
    source = "Huma Abedin was Hillary Clinton's deputy chief of staff in 2009. Huma Abedin is an American Muslim."
    written = scan(items, {"page": f"{FILLER} {source} {FILLER}"})["q"]
    assert written.status == Status.SUSPICIOUS and written.answer_found is False, written.reason
    whole = scan(items, {"page": f"{FILLER} {q} {FILLER}"})["q"]
    assert whole.status == Status.CONTAMINATED and whole.answer_found is False, whole.reason
    edited = scan(
        items, {"page": f"{FILLER} Is Hillary Clinton's deputy chief of staff in 2009 baptised? No. {FILLER}"}
    )
    assert edited["q"].status == Status.CONTAMINATED, edited["q"].reason


def test_a_number_answer_is_not_found_inside_a_longer_number() -> None:
    """DROP's "How many years were there a total of 10,979 pupils attending classes in Bern?" (answer
    1) against the passage it was written from: "1,641" a few words on is the tokens 1 and 641, and
    the 1 was taken for the answer (`contaminated`, bench/source_null.py). The answer standing alone
    there is still found."""
    q = "How many years were there a total of 10,979 pupils attending classes in Bern?"
    items = [
        BenchmarkItem("q", 0, question=q, answer="1"),
        BenchmarkItem("o", 1, question="How many kindergarten classes were there in the municipality?", answer="89"),
    ]
    source = "During the 2009-10 school year, there were a total of 10,979 pupils attending classes in Bern."
    grouped = scan(items, {"page": f"{FILLER} {source} There were 89 classes with a total of 1,641 pupils. {FILLER}"})
    assert grouped["q"].answer_found is False and grouped["q"].status != Status.CONTAMINATED, grouped["q"].reason
    alone = scan(items, {"page": f"{FILLER} {q} 1 {FILLER}"})
    assert alone["q"].answer_found is True and alone["q"].status == Status.CONTAMINATED, alone["q"].reason


TOMI_STORIES = (
    "Jack entered the hallway. Mary entered the hallway. The boots is in the bathtub. Jack exited the hallway. "
    "Mary moved the boots to the pantry. Jack entered the kitchen.",
    "Mary entered the garage. Jack entered the garage. The boots is in the crate. Mary exited the garage. "
    "Jack moved the boots to the bathtub. Mary entered the study.",
    "Jack entered the porch. Mary entered the porch. The boots is in the pantry. Mary exited the porch. "
    "Jack moved the boots to the crate. Jack exited the porch.",
)
TOMI_ASKED = (("Where is the boots really?", 1), ("Where was the boots at the beginning?", 0))  # (question, real)


def tomi() -> list[BenchmarkItem]:
    """ToMi's layout from Hugging Face: the story a passage field of its own, the questions one
    template (every 3-gram of a question and its one-word answer is in other items too)."""
    answers = {
        (0, 1): "pantry",
        (0, 0): "bathtub",
        (1, 1): "bathtub",
        (1, 0): "crate",
        (2, 1): "crate",
        (2, 0): "pantry",
    }
    return [
        BenchmarkItem(f"t{s}{k}", 2 * s + k, question=q, passage=story, answer=answers[(s, real)])
        for s, story in enumerate(TOMI_STORIES)
        for k, (q, real) in enumerate(TOMI_ASKED)
    ]


def test_a_templated_question_found_with_its_own_passage_is_that_items_copy() -> None:
    """Issue 9, principle 2: the question found in the same document as the item's passage is a copy
    of that item. ToMi's questions and answers are all template (no own text), so a page holding a
    story, its question and answer was clean (a probe: 5 of 21 such copies, 11 of 20 without the
    answer). The story with its question apart from it tells the item: `contaminated` with the
    answer after the question, `suspicious` without it; the story alone, or with a sibling's
    question, says nothing of this item."""
    items = tomi()
    story = TOMI_STORIES[0]
    copied = scan(items, {"page": f"{FILLER} {story} Question: Where is the boots really? Answer: pantry {FILLER}"})
    assert copied["t00"].status == Status.CONTAMINATED and copied["t00"].answer_found, copied["t00"].reason
    assert copied["t01"].status != Status.CONTAMINATED, copied["t01"].reason  # its sibling
    assert all(copied[f"t{s}{k}"].status == Status.CLEAN for s in (1, 2) for k in (0, 1))
    asked = scan(items, {"page": f"{FILLER} {story} Question: Where is the boots really? {FILLER}"})["t00"]
    assert asked.status == Status.SUSPICIOUS and not asked.answer_found, asked.reason
    alone = scan(items, {"page": f"{FILLER} {story} {FILLER}"})
    assert all(s.status == Status.CLEAN for s in alone.values()), [s.reason for s in alone.values()]


def test_a_siblings_question_beside_the_passage_is_not_this_items_copy() -> None:
    """Review 40: only the question's 3-grams that no sibling (same passage) has count toward
    question_apart. A page holding the passage and a sibling's question, one word apart from this
    one, is the sibling's copy; counted by all of this question's 3-grams, 83% of them are there."""
    passage = (
        "The Falcons kicked off with Matt Bryant making a 48-yard field goal in the first quarter, then a 22-yard "
        "field goal in the second half, while the Saints answered with two touchdowns by Drew Brees to Marques "
        "Colston and a late safety."
    )
    asked = "How many yards longer was the longest field goal kicked by Matt Bryant in the {} half than the shortest?"
    items = [
        BenchmarkItem("first", 0, question=asked.format("first"), passage=passage, answer="26"),
        BenchmarkItem("second", 1, question=asked.format("second"), passage=passage, answer="4"),
    ]
    r = scan(items, {"page": f"{FILLER} {passage} {asked.format('second')} 4 {FILLER}"})
    assert r["second"].status == Status.CONTAMINATED, r["second"].reason
    assert r["first"].status == Status.CLEAN, r["first"].reason


def test_a_number_answer_is_found_beside_the_choices_it_is_listed_with() -> None:
    """Review 40: a one-token answer is not found inside a number written in groups of three
    ("1,641"), nor as one of its groups ("641" there); but choices of three digits listed without
    labels ("512 641 700 820") are not one number: the choice listed, then given, is the answer."""
    q = "Which number of seats did the new stadium in the northern district of the capital hold at opening?"
    other = BenchmarkItem("o", 1, question="How many kindergarten classes were there in the municipality?", answer="89")
    grouped = [BenchmarkItem("q", 0, question=q, answer="641"), other]
    assert scan(grouped, {"page": f"{FILLER} {q} 1,641 {FILLER}"})["q"].answer_found is False
    listed = [BenchmarkItem("q", 0, question=q, choices=["512", "641", "700", "820"], answer="641"), other]
    r = scan(listed, {"page": f"{FILLER} {q} 512 641 700 820 Answer: 641 {FILLER}"})["q"]
    assert r.answer_found is True and r.status == Status.CONTAMINATED, r.reason


def test_a_duplicate_item_is_no_sibling_of_itself() -> None:
    """Review 40: an item given twice (same question, answer and passage: one group) had its
    duplicate's 3-grams taken as a sibling's, which left none of its question, so a page holding
    its story, question and answer was clean for both copies."""
    items = [*tomi(), replace(tomi()[0], item_id="t00dup", row=99)]
    page = f"{FILLER} {TOMI_STORIES[0]} Question: Where is the boots really? Answer: pantry {FILLER}"
    r = scan(items, {"page": page})
    assert r["t00"].status == r["t00dup"].status == Status.CONTAMINATED, r["t00"].reason


def test_a_whole_question_without_its_long_answer_is_still_a_copy() -> None:
    """Without the answer, `contaminated` asks for the own text all but a token; counted with a
    two-word answer the whole question found alone was 85% and `suspicious` (a review). The
    question whole is a copy whatever the answer's length; 10 of its 11 words are not."""
    q = "What is the capital city of the Australian state of Victoria?"
    items = [
        BenchmarkItem("q", 0, question=q, answer="Melbourne, Victoria"),
        BenchmarkItem("o", 1, question="Which river flows through the old town of Prague?", answer="the Vltava"),
    ]
    whole = scan(items, {"page": f"{FILLER} {q} {FILLER}"})["q"]
    assert whole.status == Status.CONTAMINATED and whole.answer_found is False, whole.reason
    less = scan(items, {"page": f"{FILLER} What is the capital city of the Australian state? {FILLER}"})["q"]
    assert less.status != Status.CONTAMINATED, less.reason


@pytest.mark.parametrize(
    ("question", "answer", "short"), [("Why not?", "yes sir", True), ("Bob is big.", "very true", False)]
)
def test_a_passage_fields_item_without_a_gram_to_look_up_is_too_short(question: str, answer: str, short: bool) -> None:
    """An item with a passage field is judged beside it when its fields hold MIN_TOKENS tokens
    between them, but only if one of its fields holds a gram of the index (MATCH_N tokens with
    the short channel, n without): fields of two words each, or of three in an index without the
    short channel, have none, and such an item was called `clean`, "every n-gram of its text is
    in more than 10 documents ... a phrase this common", a copy beside its passage included (a
    review of ff8351e)."""
    item = BenchmarkItem("a", 0, question=question, passage=PARMA, answer=answer)
    for page in (PARMA, f"{PARMA} {question} {answer}"):
        r = scan([item], {"p": f"{FILLER} {page} {FILLER}"}, short=short)["a"]
        assert r.status == Status.TOO_SHORT, (page, r.reason)
