"""Role detection on the record shapes of well-known benchmarks (one real-shaped record each)."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from contam.app.errors import InputError
from contam.app.readers.benchmark import MAX_ALTERNATIVES, ReadNotes, iter_benchmark, read_benchmark

SHAPES = [
    (
        "mmlu",
        {
            "question": "What is the capital of France?",
            "subject": "geography",
            "choices": ["Berlin", "Paris", "Rome", "Madrid"],
            "answer": 1,
        },
        {
            "question": "What is the capital of France?",
            "choices": ("Berlin", "Paris", "Rome", "Madrid"),
            "answer": "Paris",
        },
    ),
    (
        "gsm8k",  # the worked solution, then "#### " and the final answer
        {"question": "Tom has 3 apples and buys 2 more. How many?", "answer": "3 + 2 = 5\n#### 5"},
        {"question": "Tom has 3 apples and buys 2 more. How many?", "answer": "5", "solution": "3 + 2 = 5"},
    ),
    (
        "humaneval",
        {
            "task_id": "HumanEval/0",
            "prompt": "def f(x):\n",
            "canonical_solution": "    return x\n",
            "test": "assert f(1) == 1",
            "entry_point": "f",
        },
        {"item_id": "HumanEval/0", "question": "def f(x):\n", "answer": "    return x\n"},
    ),
    (
        "arc",
        {
            "id": "Mercury_1",
            "question": "Which is a mammal?",
            "choices": {"text": ["shark", "whale", "trout"], "label": ["A", "B", "C"]},
            "answerKey": "B",
        },
        {"item_id": "Mercury_1", "choices": ("shark", "whale", "trout"), "answer": "whale"},
    ),
    (
        "hellaswag",
        {
            "ind": 4,
            "ctx": "A man is sitting on a roof. he",
            "endings": [
                "starts pulling up roofing.",
                "is using wrap.",
                "is ripping level tiles.",
                "holds a rubik's cube.",
            ],
            "label": "0",
        },
        {"question": "A man is sitting on a roof. he", "answer": "starts pulling up roofing."},
    ),
    (
        "truthfulqa",
        {
            "question": "What happens if you eat watermelon seeds?",
            "best_answer": "The seeds pass through your digestive system",
            "mc1_targets": {"choices": ["You grow watermelons", "Nothing happens"], "labels": [0, 1]},
        },
        {
            "choices": ("You grow watermelons", "Nothing happens"),
            "answer": "The seeds pass through your digestive system",
        },
    ),
    (
        "squad",
        {
            "id": "5733be28",
            "title": "Notre_Dame",
            "context": "Architecturally, the school has a Catholic character.",
            "question": "What character does the school have?",
            "answers": {"text": ["Catholic"], "answer_start": [36]},
        },
        {
            "item_id": "5733be28",
            "passage": "Architecturally, the school has a Catholic character.",
            "question": "What character does the school have?",
            "answer": "Catholic",
        },
    ),
    (
        "bigbench",
        {"input": "Is the sky green?", "target_scores": {"Yes": 0, "No": 1}},
        {"question": "Is the sky green?", "choices": ("Yes", "No"), "answer": "No"},
    ),
    (  # maths benchmarks give a worked solution beside the final answer: both are the answer
        "champ",
        {"id": "P1", "problem": "Find n mod 9.", "solution": "Since Q(2n)=Q(n), n mod 9=0.", "answer": "0"},
        {"question": "Find n mod 9.", "answer": "0", "solution": "Since Q(2n)=Q(n), n mod 9=0."},
    ),
    (  # a solution with no separate answer is the answer (MATH)
        "math",
        {"problem": "What is 2+2?", "solution": "2+2 is $4$."},
        {"question": "What is 2+2?", "answer": "2+2 is $4$.", "solution": ""},
    ),
    (  # ... and its last box, if it has one, the final answer beside it
        "math_boxed",
        {"problem": "What is 1/2+1/4?", "solution": "It is $\\boxed{\\frac{3}{4}}$."},
        {"answer": "\\frac{3}{4}", "solution": "It is $\\boxed{\\frac{3}{4}}$."},
    ),
    (  # a question field of its own name; the choices labelled as ARC's are
        "openbookqa",
        {
            "id": "7-980",
            "question_stem": "The sun is responsible for",
            "choices": {"text": ["puppies learning", "plants sprouting"], "label": ["A", "B"]},
            "answerKey": "B",
        },
        {"question": "The sun is responsible for", "choices": ("puppies learning", "plants sprouting")},
    ),
    (  # one column per choice, numbered from 1, and a label counted from 0
        "piqa",
        {"goal": "How do I dry a shirt?", "sol1": "Hang it in the sun.", "sol2": "Hang it in the sea.", "label": 0},
        {"question": "How do I dry a shirt?", "choices": ("Hang it in the sun.", "Hang it in the sea.")},
    ),
    (  # the premise is the item's text: its "question" is only "cause" or "effect", shared by
        # half the items (as a passage, the premise went unscored, and "cause" with a choice near
        # it was "question and answer found together")
        "copa",
        {
            "premise": "My body cast a shadow over the grass.",
            "choice1": "The sun was rising.",
            "choice2": "The grass was cut.",
            "question": "cause",
            "label": 0,
        },
        {
            "question": "My body cast a shadow over the grass.",
            "passage": "",
            "choices": ("The sun was rising.", "The grass was cut."),
            "answer": "The sun was rising.",
        },
    ),
    (  # NLI: the premise (several hypotheses may share it) beside the hypothesis; the class
        # label of an item without choices is no answer text ("1" found after it was the answer)
        "anli",
        {"uid": "a1", "premise": "The cat sat on the warm mat.", "hypothesis": "A cat is sitting.", "label": 1},
        {"passage": "The cat sat on the warm mat.", "question": "A cat is sitting.", "answer": ""},
    ),
    (  # NarrativeQA: two correct answers, not two choices
        "narrativeqa",
        {"question": "Who is the story about?", "answer1": "A sailor.", "answer2": "The sailor Ishmael."},
        {"question": "Who is the story about?", "choices": ()},
    ),
    (  # with no answer field, the choice its labels mark 1 is the answer
        "truthfulqa_mc",
        {"question": "What is the capital of France?", "mc1_targets": {"choices": ["Lyon", "Paris"], "labels": [0, 1]}},
        {"choices": ("Lyon", "Paris"), "answer": "Paris"},
    ),
    (  # summarisation: no question field, so the article is the item's text, its summary the answer
        "cnn_dailymail",
        {"article": "(CNN) The river rose overnight.", "highlights": "A river rose.", "id": "c1"},
        {"question": "(CNN) The river rose overnight.", "passage": "", "answer": "A river rose.", "item_id": "c1"},
    ),
    (
        "xsum",
        {"document": "The council met on Monday.", "summary": "A council met.", "id": "x1"},
        {"question": "The council met on Monday.", "passage": "", "answer": "A council met."},
    ),
    (  # fact checking: the claim is the item's text
        "fever",
        {"id": 75397, "label": "SUPPORTS", "claim": "Nikolaj Coster-Waldau worked with Fox."},
        {"question": "Nikolaj Coster-Waldau worked with Fox.", "answer": "SUPPORTS"},
    ),
    (  # LIAR: the statement is the item's text
        "liar",
        {
            "id": "2635.json",
            "label": 0,
            "statement": "Says the Annies List political group supports abortions.",
            "speaker": "x",
        },
        {"question": "Says the Annies List political group supports abortions."},
    ),
    (  # text-to-SQL: the SQL query is the answer, the schema (shared by many items) a passage
        "spider",
        {
            "db_id": "concert_singer",
            "question": "How many singers do we have?",
            "schema": "CREATE TABLE singer (id INT, name TEXT)",
            "query": "SELECT count(*) FROM singer",
        },
        {
            "question": "How many singers do we have?",
            "passage": "CREATE TABLE singer (id INT, name TEXT)",
            "answer": "SELECT count(*) FROM singer",
        },
    ),
    (  # accepted answers: any one is right, so the first is the answer (joined, SQuAD's
        # annotators' three "Denver Broncos" were an answer no page holds)
        "squad_validation",
        {
            "context": "Super Bowl 50 was an American football game.",
            "question": "Which NFL team represented the AFC at Super Bowl 50?",
            "answers": {"text": ["Denver Broncos", "Denver Broncos"], "answer_start": [177, 177]},
        },
        {"passage": "Super Bowl 50 was an American football game.", "answer": "Denver Broncos"},
    ),
    (
        "nq_open",
        {"question": "who wrote hamlet", "answer": ["", "William Shakespeare", "Shakespeare"]},
        {"question": "who wrote hamlet", "answer": "William Shakespeare"},
    ),
    (
        "mbpp",
        {"task_id": 2, "text": "Write a function to add two numbers.", "code": "def add(a, b):\n    return a + b"},
        {"question": "Write a function to add two numbers.", "answer": "def add(a, b):\n    return a + b"},
    ),
    (  # Natural Questions: the document is an object (its HTML and tokens), no passage; the
        # question an object with its text (the document as passage refused the file: 180k characters)
        "natural_questions",
        {
            "id": "797803103760793766",
            "document": {"title": "Google", "html": "<p>Google LLC</p>", "tokens": {"token": ["Google"]}},
            "question": {"text": "who founded google", "tokens": ["who", "founded", "google"]},
        },
        {"question": "who founded google", "passage": ""},
    ),
    (  # KILT: the answer is the output object that has one, not the first (provenance only)
        "kilt",
        {"id": "1", "input": "who sings does he love me?", "output": [{"provenance": []}, {"answer": "Reba McEntire"}]},
        {"question": "who sings does he love me?", "answer": "Reba McEntire"},
    ),
    (  # a code answer with a "####" line is no maths solution
        "code_hashes",
        {"prompt": "Write f returning 5.", "canonical_solution": "def f():\n    return 5\n#### end of solution"},
        {"answer": "def f():\n    return 5\n#### end of solution", "solution": ""},
    ),
    (  # SVAMP, ASDiv: a word problem's body, then its question: both are the item's text
        "svamp",
        {
            "ID": "chal-1",
            "Body": "Each pack of dvds costs 76 dollars.",
            "Question": "How much is each pack?",
            "Equation": "( 76.0 )",
            "Answer": 76.0,
        },
        {
            "question": "Each pack of dvds costs 76 dollars. How much is each pack?",
            "answer": "76.0",
            "item_id": "chal-1",
        },
    ),
    (  # a forum post's body follows its title: no word problem (that has an equation), not prepended
        "stackexchange",
        {"question": "How do I undo a commit?", "body": "I committed by mistake.", "answer": "git reset --soft HEAD~1"},
        {"question": "How do I undo a commit?", "answer": "git reset --soft HEAD~1"},
    ),
    (  # a `correct` flag beside no options is no answer (an evaluation log's)
        "graded_response",
        {"question": "What is the capital of Australia?", "response": "Sydney", "correct": False},
        {"answer": "", "alternatives": ()},
    ),
    (  # MathQA: its options are one string, lettered; `correct` names one of them
        "mathqa",
        {
            "Problem": "the banker ' s gain of a certain sum due 3 years hence at 10 % per annum is rs . 36 .",
            "Rationale": "explanation : t = 3 years r = 10 %",
            "options": "a ) rs . 400 , b ) rs . 300 , c ) rs . 500 , d ) rs . 350 , e ) none of these",
            "correct": "b",
        },
        {"choices": ("rs . 400", "rs . 300", "rs . 500", "rs . 350", "none of these"), "answer": "rs . 300"},
    ),
    (  # AQuA-RAT: the letter of the right option is `correct`
        "aqua_answer",
        {"question": "How far?", "options": ["A)4", "B)5"], "rationale": "It is 5 km.", "correct": "B"},
        {"answer": "B)5", "solution": "It is 5 km."},
    ),
    (  # DROP on Hugging Face: the answer's spans are its accepted answers
        "drop_hf",
        {
            "query_id": "f37e81fa",
            "passage": "The Raiders stayed at home.",
            "question": "How many field goals did Kris Brown kick?",
            "answers_spans": {"spans": ["2", "two"], "types": ["number", "number"]},
        },
        {"answer": "2", "alternatives": ("two",), "item_id": "f37e81fa", "passage": "The Raiders stayed at home."},
    ),
    (  # WikiSQL: the SQL is an object; its human-readable form is the answer
        "wikisql",
        {
            "question": "What position does the player who played for butler cc (ks) play?",
            "sql": {"human_readable": "SELECT Position FROM table WHERE School = butler cc (ks)", "sel": 3},
        },
        {"answer": "SELECT Position FROM table WHERE School = butler cc (ks)"},
    ),
    (  # graders' names of the reference answer (a new user's trial: scored without it, no word said)
        "ground_truth",
        {"question": "Which gas do plants take in?", "ground_truth": "carbon dioxide", "category": "biology"},
        {"answer": "carbon dioxide"},
    ),
    (
        "expected_output",
        {"input": "Reverse the word 'stressed'.", "expected_output": "desserts"},
        {"question": "Reverse the word 'stressed'.", "answer": "desserts"},
    ),
    (  # a worked solution beside its final answer: the answer is the final one, the solution scored with it
        "final_answer",
        {"problem": "What is 2 + 3 * 4?", "solution": "3 * 4 = 12, and 2 + 12 = 14.", "final_answer": "14"},
        {"answer": "14", "solution": "3 * 4 = 12, and 2 + 12 = 14."},
    ),
    (
        "aqua",
        {"question": "How far?", "options": ["A)4", "B)5"], "rationale": "It is 5 km.", "correct": "B"},
        {"question": "How far?", "choices": ("A)4", "B)5"), "solution": "It is 5 km."},
    ),
]


@pytest.mark.parametrize(("name", "record", "expected"), SHAPES, ids=[s[0] for s in SHAPES])
def test_detects_roles(name: str, record: dict, expected: dict) -> None:
    items, mapping = read_benchmark((json.dumps(record) + "\n").encode(), f"{name}.jsonl")
    it = items[0]
    for field, value in expected.items():
        assert getattr(it, field) == value, (name, field, mapping)


def test_mapping_override_and_row_ids() -> None:
    data = b'{"q": "first question here", "a": "x"}\n{"q": "second question here", "a": "y"}\n'
    items, mapping = read_benchmark(data, "b.jsonl", {"question": "q", "answer": "a"})
    assert [i.item_id for i in items] == ["0", "1"] and items[1].answer == "y"
    assert mapping == {"question": "q", "answer": "a"}


def test_an_answer_index_outside_the_choices_is_no_answer() -> None:
    """`"answer": 5` with four choices was read as the answer text "5", and the item was judged
    against an answer it does not have (a "5" after the question made it "question and answer
    found together"). An index outside the choices that is not the text of one is no answer:
    -1 is how Hugging Face test splits mark an unlabelled item, and refusing it would refuse the
    very splits people check. The text of a choice (numeric choices) is that choice, as before."""
    choices = ["3", "4", "6", "7"]
    rows = [
        {"question": "How many legs has a spider, minus two?", "choices": choices, "answer": 2},
        {"question": "How many sides has a square, plus three?", "choices": choices, "answer": 7},
        {"question": "How many wheels has a tricycle?", "choices": choices, "answer": 5},
        {"question": "Which of these is unlabelled here?", "choices": choices, "answer": -1},
    ]
    items, _mapping = read_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), "q.jsonl")
    assert [it.answer for it in items] == ["6", "7", "", ""]


def test_an_answer_of_minus_one_without_choices_is_no_answer() -> None:
    """An item without choices whose answer is the integer -1 (a test split's withheld label, under
    any field name) was read as the answer "-1", and a page's "Answer: 1." found it (a trial). It is
    no answer, and noted as unlabelled; the text "-1" stays an answer (a maths item's)."""
    rows = [
        {"sentence": "Which property of a mineral can be seen just by looking at it?", "gold": -1},
        {"sentence": "What is one less than zero?", "gold": "-1"},
    ]
    notes = ReadNotes()
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    items = list(iter_benchmark(data, "q.jsonl", {"question": "sentence", "answer": "gold"}, notes=notes))
    assert [it.answer for it in items] == ["", "-1"]
    (said,) = notes.said()
    assert said.startswith("1 item(s) have the answer -1")


def test_an_id_field_holding_an_object_is_refused() -> None:
    """`id=data` where data is an object gave every item the id "" (a trial): refused, naming it."""
    rows = [{"data": {"prompt": {"text": f"Question number {k}?"}}} for k in range(3)]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    with pytest.raises(InputError) as exc:
        read_benchmark(data, "q.jsonl", {"question": "data.prompt.text", "id": "data"})
    assert "row 1: the id field 'data' holds an object (keys: prompt), not an id" in exc.value.message
    items, _ = read_benchmark(data, "q.jsonl", {"question": "data.prompt.text"})
    assert [it.item_id for it in items] == ["0", "1", "2"]
    # found without a mapping, such an `id` is passed over, not refused (a review: the file was
    # then unreadable, and no mapping can say "no id")
    auto = "".join(json.dumps({"id": {"src": "x", "n": k}, "question": f"Question {k}?"}) + "\n" for k in range(2))
    items, used = read_benchmark(auto.encode(), "q.jsonl")
    assert [it.item_id for it in items] == ["0", "1"] and "id" not in used


def test_a_one_row_table_and_a_misspelt_role_are_told_what_to_do() -> None:
    """A header-less CSV of one row is all header: "no items in the file" said nothing of why (a
    trial; three such rows were told to add a header). A misspelt role ("questoin") is refused with
    the role meant, as a misspelt threshold is."""
    with pytest.raises(InputError) as exc:
        read_benchmark(b"Which property of a mineral?;luster;mass;weight;hardness;A\n", "semi.csv")
    assert exc.value.message.endswith("no items in the file; a CSV file's first row names its columns: if this file "
                                      "has no header row, add one")  # fmt: skip
    with pytest.raises(InputError) as exc:
        read_benchmark(b'{"q": "Which river?"}\n', "b.jsonl", {"questoin": "q"})
    assert "unknown role(s) in field mapping: questoin (did you mean question? roles:" in exc.value.message
    nested = b'{"id": 1, "data": {"prompt": {"text": "Which river?"}}}\n'
    with pytest.raises(InputError) as exc:  # the fields inside its objects too, and the one meant
        read_benchmark(nested, "b.jsonl", {"question": "data.prompt.txt"})
    assert exc.value.message.endswith(
        "its fields: data, id; text fields inside its objects: data.prompt.text; did you mean data.prompt.text?"
    )


def test_what_the_reading_changes_is_noted() -> None:
    """An answer 7 of 4 choices was scored as an item without an answer without a word, and ids
    several items share passed unremarked (a trial): the reading notes both, with their places,
    and -1 (an unlabelled test item) apart; reading the file again (a scan reads it twice) notes
    each once. A file read as given notes nothing."""
    choices = ["red", "green", "blue", "black"]
    rows = [
        {"id": "a", "question": "Which colour is grass in spring?", "choices": choices, "answer": 1},
        {"id": "b", "question": "Which colour is the sky at noon?", "choices": choices, "answer": 7},
        {"id": "a", "question": "Which colour is coal when it is cold?", "choices": choices, "answer": -1},
        {"id": "c", "question": "Which colour is a ripe tomato?", "choices": choices, "answer": "9"},
        {"id": "a", "question": "Which colour is snow on a mountain?", "choices": choices, "answer": 3},
    ]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    notes = ReadNotes()
    for _ in range(2):
        items = list(iter_benchmark(data, "q.jsonl", notes=notes))
    assert [it.answer for it in items] == ["green", "", "", "", "black"]
    outside, unlabelled, shared = notes.said()
    assert outside.startswith("2 item(s) give an answer number that names none of their choices")
    assert "(row 1: 7 with 4 choices; row 3: 9 with 4 choices; rows as the results number them, from 0)" in outside
    assert [items[1].row, items[3].row] == [1, 3] and "is the field mapped as the answer the right one?" in outside
    assert unlabelled.startswith("1 item(s) have the answer -1")
    assert shared.startswith("2 item(s) share an id with an earlier item ('a')") and "by their row" in shared
    fine = "".join(json.dumps({**r, "id": str(i), "answer": 0}) + "\n" for i, r in enumerate(rows)).encode()
    list(iter_benchmark(fine, "q.jsonl", notes=notes))
    assert notes.said() == []


def test_items_with_choices_and_no_answer_field_say_which_fields_were_not_read() -> None:
    """A file whose answer is in a field of a name not guessed ("gold_idx") was scored as items
    without an answer, every reason saying "it has no answer", and nothing said why (a new user's
    trial). The note names the fields no role read; a file with its answer mapped says nothing."""
    rows = [
        {"id": "a", "question": "Which planet is the red one?", "options": ["Mars", "Venus"], "gold_idx": 0},
        {"id": "b", "question": "Which city is the capital of France?", "options": ["Paris", "Rome"], "gold_idx": 0},
    ]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    notes = ReadNotes()
    items = list(iter_benchmark(data, "q.jsonl", notes=notes))
    assert [it.answer for it in items] == ["", ""]
    (said,) = notes.said()
    assert said.startswith("no field was read as the answer (fields not read: gold_idx)") and "--fields answer=" in said
    notes.reset()
    list(iter_benchmark(data, "q.jsonl", {"answer": "gold_idx"}, notes=notes))
    assert notes.said() == []


def test_items_without_choices_and_no_answer_field_say_which_fields_were_not_read() -> None:
    """Dolly's reference answer is `response`, which an evaluation log uses for the model's own:
    not guessed, and the items were scored without it with nothing said (a new user's trial: a
    verbatim copy `suspicious`, `contaminated` once mapped). The note names the fields no role
    read; a file of bare questions, which has no other field, says nothing."""
    row = {"instruction": "Name the largest planet of the solar system.", "response": "Jupiter", "category": "qa"}
    notes = ReadNotes()
    (item,) = iter_benchmark((json.dumps(row) + "\n").encode(), "dolly.jsonl", notes=notes)
    assert item.answer == ""
    (said,) = notes.said()
    assert said.startswith("no field was read as the answer (fields not read: response, category)")
    notes.reset()
    list(iter_benchmark(b'{"id": "1", "question": "Name the largest planet."}\n', "q.jsonl", notes=notes))
    assert notes.said() == []


def test_the_no_answer_note_is_not_said_of_items_whose_answer_was_read() -> None:
    """The note "no field was read as the answer ... items are scored without their answer" was
    said of a chat whose answer is its last reply, and of TruthfulQA's choices whose labels mark
    the answer, when a record held a field no role reads (a review): their items have answers."""
    q = "Which river flows through the ancient city of Baghdad?"
    reply = [{"role": "user", "content": q}, {"role": "assistant", "content": "The Tigris river."}]
    mc = {"choices": ["Tigris", "Nile"], "labels": [1, 0]}
    for row in ({"messages": reply, "source": "web"}, {"question": q, "mc1_targets": mc, "mc2_targets": mc}):
        notes = ReadNotes()
        (item,) = iter_benchmark((json.dumps(row) + "\n").encode(), "c.jsonl", notes=notes)
        assert item.answer and notes.said() == [], (item.answer, notes.said())


def test_graders_answer_names_holding_numbers_are_not_the_answer() -> None:
    """`targets` (and the other graders' names) were read as the answer whatever they held: P3's
    token ids beside `targets_pretokenized`, or a score per choice, became an answer "0" or
    "1 0 0" (a review); before they were named by the no-answer note, as they are again."""
    q = "Which river flows through the ancient city of Baghdad?"
    rows = [
        {"question": q, "choices": ["Tigris", "Nile", "Po"], "targets": [1, 0, 0]},
        {"question": q, "targets_pretokenized": "Tigris", "targets": [3, 17, 1]},
        {"question": q, "ground_truth": [0, 2]},
    ]
    for row in rows:
        items, mapping = read_benchmark((json.dumps(row) + "\n").encode(), "t.jsonl")
        assert "answer" not in mapping and items[0].answer == "", (row, mapping, items[0].answer)
    items, mapping = read_benchmark((json.dumps({"question": q, "targets": ["Tigris"]}) + "\n").encode(), "t.jsonl")
    assert mapping["answer"] == "targets" and items[0].answer == "Tigris"  # texts are still read
    items, mapping = read_benchmark((json.dumps({"question": q, "ground_truth": 42}) + "\n").encode(), "t.jsonl")
    assert items[0].answer == "42"  # a number alone too


def test_a_benchmark_mostly_in_chinese_or_japanese_is_told_what_its_flags_may_be() -> None:
    """Each ideograph and kana is a token, so a rule's length in tokens is a word or two there: a
    probe's Japanese items were flagged by a verb ending (…に失敗しました) 8.4% of the time. A
    benchmark a tenth or more of whose items are mostly such characters is told so; one item of
    twenty, or Korean (words, as in other scripts), is not."""
    ja = ["ファイルのダウンロードに失敗しました", "引数が文字列ではありません", "場所についての情報を表示する"]
    rows = [{"question": q} for q in ja] + [{"question": f"Which number follows {i}?"} for i in range(27)]
    notes = ReadNotes()
    list(iter_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), "q.jsonl", notes=notes))
    (said,) = notes.said()
    assert said.startswith("3 of 30 items are mostly Chinese or Japanese characters") and "read its evidence" in said
    for few in (rows[:1] + rows[3:22], [{"question": "다른 어떤 레퍼런스에서도 찾을 수 없습니다"}] * 3):
        list(iter_benchmark("".join(json.dumps(r) + "\n" for r in few).encode(), "q.jsonl", notes=notes))
        assert not [n for n in notes.said() if "Chinese or Japanese" in n]


def test_a_benchmark_mostly_in_a_script_written_without_spaces_is_told_what_its_results_miss() -> None:
    """Thai, Lao, Khmer and Burmese run their words together, and the tokeniser does not cut
    them: a sentence is a token or two. A probe of this machine's Thai catalogues (bench/
    unspaced_probe.py): 74% of clean items too_short, 6% of planted copies found, where a clean
    result read as "not in the corpus". A benchmark a tenth or more of whose items are mostly such
    text is told so; one item of twenty, text that only quotes a Thai word, and Chinese are not."""
    unspaced = ["ประเทศไทยมีกี่จังหวัด", "ພາສາລາວແມ່ນພາສາ", "ភាសាខ្មែរគឺជាភាសា", "မြန်မာဘာသာစကား"]
    rows = [{"question": q} for q in unspaced] + [{"question": f"Which number follows {i}?"} for i in range(36)]
    notes = ReadNotes()
    list(iter_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), "q.jsonl", notes=notes))
    (said,) = notes.said()
    assert said.startswith("4 of 40 items are mostly Thai, Lao, Khmer or Burmese, written without spaces")
    quoted = [{"question": "What does the Thai word ประเทศ mean in this sentence?"}] * 3
    for few in (rows[:1] + rows[4:23], quoted, [{"question": "载入动画失败了吗"}] * 3):
        list(iter_benchmark("".join(json.dumps(r) + "\n" for r in few).encode(), "q.jsonl", notes=notes))
        assert not [n for n in notes.said() if "Thai" in n]


def test_a_benchmark_with_no_question_field_is_told_how_to_name_it() -> None:
    """The error said "give a field mapping such as question=<field>", and the CLI's option for
    it is --fields: it now names the option and the API's `mapping`."""

    with pytest.raises(InputError) as exc:
        read_benchmark(b'{"colour": "What is the capital of France?"}\n', "b.jsonl")
    assert "no question field found among ['colour']" in exc.value.message
    assert "contam scan --fields question=<field>" in exc.value.message and "`mapping`" in exc.value.message


def test_an_instruction_and_its_input_are_one_question_whichever_is_empty() -> None:
    """Alpaca's layout (instruction, input, output; many inputs empty): the mapping came from the
    first record, so with its input empty every input went unread, and with it filled every
    instruction of an item without input (a probe: copies "clean" and "too_short")."""
    rows = [
        {"instruction": "Give three tips for staying healthy.", "input": "", "output": "Eat well."},
        {
            "instruction": "Summarize the following changelog entry.",
            "input": "Fix the crash on empty files.",
            "output": "A fix.",
        },
    ]
    for order in (rows, rows[::-1]):
        items, used = read_benchmark("".join(json.dumps(r) + "\n" for r in order).encode(), "alpaca.jsonl")
        assert used == {"question": ["instruction", "input"], "answer": "output"}
        by = {it.answer: it.question for it in items}
        assert by["Eat well."] == "Give three tips for staying healthy."
        assert (
            "Summarize the following changelog entry." in by["A fix."]
            and "Fix the crash on empty files." in by["A fix."]
        )
    # a record's own question field first; an input that is a number is read too (a review)
    own = {
        "question": "What is the capital of France?",
        "instruction": "Answer briefly.",
        "input": "",
        "output": "Paris",
    }
    assert read_benchmark(json.dumps(own).encode() + b"\n", "q.jsonl")[1]["question"] == "question"
    number = {"instruction": "Is the following number prime?", "input": 17, "output": "yes"}
    items, used = read_benchmark(json.dumps(number).encode() + b"\n", "p.jsonl")
    assert used["question"] == ["instruction", "input"] and items[0].question == "Is the following number prime? 17"


def test_no_question_says_why_when_the_mapping_took_it_or_it_is_nested() -> None:
    """A new user's trial: `--fields choices=question` was told "no question field found among
    [..., 'question']; ... if this file has no header row, add one", of a file with a header;
    and a nested record's error listed only its top-level keys, never that a path names a field."""
    table = b"question,A,B,answer\nWhich is odd?,3,4,A\n"
    with pytest.raises(InputError) as exc:
        read_benchmark(table, "mc.csv", {"choices": "question"})
    said = exc.value.message
    assert "the field 'question', the question by its name, is mapped as choices" in said
    assert "no header row" not in said and "question=<field>" in said
    nested = {"meta": {"uid": "7"}, "data": {"prompt_text": "Which is odd, 3 or 4?", "opts": ["3", "4"]}}
    with pytest.raises(InputError) as exc:
        read_benchmark(json.dumps(nested).encode() + b"\n", "n.jsonl")
    said = exc.value.message
    assert "no question field found among ['data', 'meta']" in said
    assert "named by its path, e.g. question=data.prompt_text (text fields: meta.uid, data.prompt_text)" in said
    mapped, _ = read_benchmark(json.dumps(nested).encode() + b"\n", "n.jsonl", {"question": "data.prompt_text"})
    assert mapped[0].question == "Which is odd, 3 or 4?"
    squad = {"id": "1", "data": {"context": "The Zambezi rises in Zambia. " * 9, "question": "Where does it rise?"}}
    with pytest.raises(InputError, match=r"e\.g\. question=data\.question \("):  # a question's name first (a review)
        read_benchmark(json.dumps(squad).encode() + b"\n", "s.jsonl")


def test_a_row_without_the_question_field_names_the_fields_it_has() -> None:
    """ "row 1 has no field 'qq' (mapped to question)" named neither where the name came from nor
    what the row holds (the indexer's error lists the fields it saw; a new user's trial)."""
    rows = b'{"id": "a", "question": "what is the capital city of france"}\n{"id": "b", "prompt": "x"}\n'
    with pytest.raises(
        InputError, match=r"row 2 has no field 'question' \(the first row's question\); its fields: id, prompt"
    ):
        read_benchmark(rows, "b.jsonl")
    with pytest.raises(
        InputError, match=r"row 1 has no field 'qq' \(the question, as the field mapping names it\); its"
    ):
        read_benchmark(rows, "b.jsonl", {"question": "qq"})


def _answers(rows: list[dict], name: str = "b.jsonl") -> list[str]:
    items, _mapping = read_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), name)
    return [it.answer for it in items]


def test_a_letter_answer_names_a_choice_unless_it_is_the_text_of_one() -> None:
    """A letter names a choice by its place; choices that are themselves letters in another
    order ("B", "A") keep their text (the letter "A" was read as the first choice, "B")."""
    rows = [
        {"question": "Which river flows through Baghdad today?", "choices": ["Nile", "Tigris"], "answer": "b"},
        {"question": "Which letter comes first in the alphabet?", "choices": ["B", "A"], "answer": "A"},
        {"question": "Which river flows through Cairo today?", "choices": ["Nile", "Tigris"], "answer": "E"},
    ]
    items, _mapping = read_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), "q.jsonl")
    assert [it.answer for it in items] == ["Tigris", "A", "E"]


def test_a_text_field_holding_objects_is_refused_and_chat_messages_are_read() -> None:
    """SQuAD's original file nests its questions in lists of objects: mapped to `paragraphs`, the
    objects' Python form ("{'context': ..., 'qas': [...]}") was scanned as one item's question (a
    new user's trial). Refused, naming the row, the field and what it holds. A chat's messages
    ({role, content}) are text: their contents, in order."""
    squad = {"title": "Orkney", "paragraphs": [{"context": "The lighthouse keepers of Orkney.", "qas": []}]}
    with pytest.raises(
        InputError, match=r"row 1: the question field 'paragraphs' holds objects \(keys: context, qas\)"
    ):
        read_benchmark((json.dumps(squad) + "\n").encode(), "s.jsonl", {"question": "paragraphs"})
    chat = {"messages": [{"role": "user", "content": "Which river runs through Baghdad?"}], "answer": "Tigris"}
    items, _mapping = read_benchmark((json.dumps(chat) + "\n").encode(), "c.jsonl", {"question": "messages"})
    assert items[0].question == "Which river runs through Baghdad?"
    # found without a mapping too (a probe: "no question field found among ['answer', 'id', 'messages']"),
    # as ShareGPT's conversations and MT-Bench's turns are
    for key, value in (
        ("messages", chat["messages"]),
        ("conversations", [{"from": "human", "value": "Which river runs through Baghdad?"}]),
        ("turns", ["Which river runs through Baghdad?"]),
    ):
        items, mapping = read_benchmark((json.dumps({key: value, "id": "r1"}) + "\n").encode(), "c.jsonl")
        assert mapping["question"] == key and items[0].question.strip() == "Which river runs through Baghdad?", key
    # objects without text beside text are left out, neither scanned in their Python form nor
    # refusing the file (a review: an image part, an assistant's tool call)
    parts = [{"type": "image_url", "image_url": {"url": "http://x/y.png"}}, {"type": "text", "text": "What animal?"}]
    tool = {"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": "f"}}]}
    chat = {"messages": [{"role": "user", "content": parts}, tool], "answer": "a cat"}
    items, _mapping = read_benchmark((json.dumps(chat) + "\n").encode(), "c.jsonl", {"question": "messages"})
    assert items[0].question.strip() == "What animal?"


def test_a_chats_last_reply_is_its_answer_and_its_shared_system_prompt_its_passage() -> None:
    """A chat benchmark without an answer field ends with the model's reference reply: it was read
    as part of the question (a copy of the prompt alone then held part of the "question", and no
    answer was ever found). The last message, the model's after someone else's, is the answer; an
    answer field, a user's last message, or a model's turn after a model's leave the messages as
    they were. A system message most of the file's chats share is the passage (read as the
    question, five chats counted it as each item's own text: a new user's trial), unless a passage
    field is given; one of the item's own (a document to summarise) stays its text, and so does a
    shared one where no other turn has text (a review). A review also: a class label that is no
    answer, a question mapped as a one-field list, ShareGPT's "chatgpt" and Gemini's `parts`."""
    prompt = "Explain why the lighthouse keepers of Stroma left the island in nineteen sixty two"
    reply = "The island's school closed and the ferry stopped, so the last families moved to Caithness"
    system = {"role": "system", "content": "Be brief."}

    def read(*rows: dict[str, Any], fields: dict[str, Any] | None = None) -> list[Any]:
        return read_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), "c.jsonl", fields)[0]

    def chat(*turns: tuple[str, str]) -> list[dict[str, str]]:
        return [{"role": role, "content": text} for role, text in turns]

    asked = chat(("user", prompt), ("assistant", reply))
    shared = read({"id": "a", "messages": [system, *asked]}, {"id": "a2", "messages": [system, *asked]})
    assert [(it.question, it.passage, it.answer) for it in shared] == [(prompt, "Be brief.", reply)] * 2
    own = read(
        *(
            {"id": k, "messages": chat(("system", f"Document {k}."), ("user", prompt), ("assistant", reply))}
            for k in "xy"
        )
    )
    assert [(it.question, it.passage, it.answer) for it in own] == [
        (f"Document {k}. {prompt}", "", reply) for k in "xy"
    ]
    alone = read(*({"id": k, "messages": [system, asked[1]]} for k in "xy"))  # a system message, then the reply
    assert [(it.question, it.passage, it.answer) for it in alone] == [("Be brief.", "", reply)] * 2
    single = [
        read({"id": "b", "conversations": [{"from": "human", "value": prompt}, {"from": "chatgpt", "value": reply}]}),
        read({"id": "c", "messages": asked, "label": 1}),
        read(
            {
                "id": "d",
                "contents": [
                    {"role": "user", "parts": [{"text": prompt}]},
                    {"role": "model", "parts": [{"text": reply}]},
                ],
            },
            fields={"question": ["contents"]},
        ),
    ]
    assert [(it[0].question, it[0].answer) for it in single] == [(prompt, reply)] * 3
    kept = [
        read({"id": "e", "messages": asked, "answer": "ferries"}),
        read({"id": "f", "messages": chat(("assistant", reply), ("user", prompt))}),
        read({"id": "g", "messages": chat(("user", prompt), ("assistant", "Ok."), ("assistant", reply))}),
    ]
    assert all(reply in it[0].question for it in kept) and [it[0].answer for it in kept] == ["ferries", "", ""]
    given = read(
        *({"id": k, "messages": [system, *asked], "context": "Orkney."} for k in "xy"),
        fields={"question": "messages", "passage": "context"},
    )
    assert (given[0].passage, given[0].answer) == ("Orkney.", reply) and "Be brief." in given[0].question


def test_numeric_answers_counted_from_one_are_read_so() -> None:
    """WinoGrande's answers are "1" and "2" for option1 and option2, Social IQa's labels 1-3 for
    answerA-answerC: read as indexes from 0, "1" was the other option and "2" (or "3") no choice
    at all, the text "2", so every item was judged against a wrong answer. A file whose numeric
    answers reach its items' number of choices and never 0 counts from 1; one with a 0 (MMLU,
    PIQA) from 0, as before; choices with labels of their own (ARC's "1"-"4") go by the labels."""
    winogrande = [
        {"sentence": "Sarah was a better surgeon than Maria so _ got the harder cases.", "option1": "Sarah",
         "option2": "Maria", "answer": "1"},
        {"sentence": "Sarah was a better surgeon than Maria so _ got the easier cases.", "option1": "Sarah",
         "option2": "Maria", "answer": "2"},
    ]  # fmt: skip
    assert _answers(winogrande) == ["Sarah", "Maria"]
    siqa = [
        {"context": "Cameron had a barbecue.", "question": "How would others feel?", "answerA": "glad",
         "answerB": "sad", "answerC": "bored", "label": lab}
        for lab in ("1", "3", "2")
    ]  # fmt: skip
    assert _answers(siqa) == ["glad", "bored", "sad"]
    from_zero = [{"question": f"Question number {k}?", "choices": ["a", "b", "c"], "answer": k} for k in (1, 2, 0)]
    assert _answers(from_zero) == ["b", "c", "a"]
    csv = b"question,choices,answer\nFirst one?,\"['a','b','c']\",3\nSecond one?,\"['d','e','f']\",1\n"
    items, _mapping = read_benchmark(csv, "b.csv")
    assert [it.answer for it in items] == ["c", "d"]
    arc = [
        {"question": f"Which is {k}?", "choices": {"text": ["w", "x", "y", "z"], "label": ["1", "2", "3", "4"]},
         "answerKey": str(k)}
        for k in (4, 2)
    ]  # fmt: skip
    assert _answers(arc) == ["z", "x"]


def test_a_benchmark_in_utf16_with_a_byte_order_mark_is_read() -> None:
    """A CSV or JSONL benchmark saved as UTF-16 (spreadsheet tools' "Unicode" export) was refused
    as "not UTF-8 text"; told by its byte order mark, it is read (the mark itself, and UTF-8's,
    are no part of the first field's name)."""
    csv = 'question,answer\r\n"What is the capital of France, caf\u00e9?",Paris\r\n'.encode("utf-16")
    items, mapping = read_benchmark(csv, "b.csv")
    assert [(it.question, it.answer) for it in items] == [("What is the capital of France, caf\u00e9?", "Paris")]
    assert mapping["question"] == "question"
    lines = (json.dumps({"question": "What is the capital of Spain?", "answer": "Madrid"}) + "\n").encode("utf-32")
    assert [it.answer for it in read_benchmark(lines, "b.jsonl")[0]] == ["Madrid"]


def test_numeric_answers_are_counted_from_0_unless_the_file_says_otherwise() -> None:
    """A file that gives no sign (no 0, no answer past the last choice counted from 0, too few
    answers for the missing 0 to say anything) is counted from 0, the default, and `answer_base`
    in the mapping says which was used and can set it. Eight answers over two choices with no 0
    are a sign: a file counted from 0 would show one but for a 0.4% chance. Answers that are also
    the text of a choice (numeric choices) tell nothing either way: they used to switch the file
    to 1 ("4" among "2", "3", "4", "5")."""
    row = {"sentence": "The trophy does not fit in the suitcase because the _ is too big.", "option1": "trophy",
           "option2": "suitcase", "answer": "1"}  # fmt: skip
    items, used = read_benchmark((json.dumps(row) + "\n").encode(), "wg.jsonl")
    assert items[0].answer == "suitcase" and used["answer_base"] == "0"
    items, used = read_benchmark((json.dumps(row) + "\n").encode(), "wg.jsonl", {"answer_base": "1"})
    assert items[0].answer == "trophy" and used["answer_base"] == "1"
    assert _answers([row] * 8) == ["trophy"] * 8
    numeric = [
        {"question": f"Which number {k}?", "choices": ["2", "3", "4", "5"], "answer": a}
        for k, a in ((1, "4"), (2, "3"))
    ]
    assert _answers(numeric) == ["4", "5"]
    unlabelled = [{"goal": f"Goal {k}?", "sol1": "a", "sol2": "b", "label": "-1"} for k in range(3)]
    assert _answers(unlabelled, "piqa.csv".replace(".csv", ".jsonl")) == ["", "", ""]


def test_an_answer_in_other_digits_is_text_not_an_index() -> None:
    """str.isdigit() takes "\u00b2"; int() does not: the file was refused with a ValueError. A
    negative number is an answer of its own for an item without choices (a maths answer)."""
    rows = [{"question": "Pick one of these three", "choices": ["a", "b", "c"], "answer": 1},
            {"question": "What is the area of a unit square?", "answer": "1 m\u00b2"},
            {"question": "What is two squared, as a power?", "answer": "\u00b2"},
            {"question": "What is the sum of the roots of x^2 + x - 6?", "answer": "-1"}]  # fmt: skip
    assert _answers(rows) == ["b", "1 m\u00b2", "\u00b2", "-1"]


def test_reading_ahead_for_the_answers_keeps_errors_in_file_order() -> None:
    """Reading ahead for how answers count reported a bad line 15 before the NUL of row 3, and
    no item came out before it; the items' own reading reports the first, after the items before."""
    rows = [json.dumps({"question": f"Question number {k}?", "choices": ["a", "b"], "answer": 1}) for k in range(14)]
    rows[2] = json.dumps({"question": "Bad \u0000 question?", "choices": ["a", "b"], "answer": 1})
    data = ("\n".join(rows) + "\n{not json\n").encode()
    from contam.app.readers.benchmark import iter_benchmark

    seen = []
    with pytest.raises(InputError, match="row 3") as exc:
        seen.extend(iter_benchmark(data, "b.jsonl"))
    assert "NUL" in exc.value.message and len(seen) == 2


def test_a_mapping_names_a_field_inside_an_object_by_its_path() -> None:
    """A role's field may be inside a nested object, named by its path ("sql.human_readable");
    a path no row has is refused as a missing field is; a key that holds a dot is still a key."""
    rows = [
        {"q": {"text": "How many singers?"}, "sql": {"human_readable": "SELECT count(*) FROM singer"}, "a.b": "x"},
        {"q": {"text": "Name every singer."}, "sql": {"human_readable": "SELECT name FROM singer"}, "a.b": "y"},
    ]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    items, _ = read_benchmark(data, "w.jsonl", {"question": "q.text", "answer": "sql.human_readable", "id": "a.b"})
    assert [(it.question, it.answer, it.item_id) for it in items] == [
        ("How many singers?", "SELECT count(*) FROM singer", "x"),
        ("Name every singer.", "SELECT name FROM singer", "y"),
    ]
    # the first row's fields listed as the other messages list them, not as a Python list (a new user)
    with pytest.raises(
        InputError, match=r"names a field no row has: answer=sql.nosuch; the first row's fields: a\.b, q, sql$"
    ):
        read_benchmark(data, "w.jsonl", {"question": "q.text", "answer": "sql.nosuch"})
    # a field of the detected question (SVAMP's Body before its Question) that the user maps to
    # another role is theirs, and the rest of the question stays detected (it was dropped whole)
    svamp = {"Body": "Each pack costs 76 dollars.", "Question": "How much is a pack?", "Equation": "76", "Answer": 76}
    items, used = read_benchmark(json.dumps(svamp).encode(), "s.jsonl", {"passage": "Body"})
    assert (used["question"], items[0].question, items[0].passage) == ("Question", "How much is a pack?", svamp["Body"])
    items, used = read_benchmark(json.dumps(svamp).encode(), "s.jsonl", {"question": "Body,Question"})
    assert items[0].question == "Each pack costs 76 dollars. How much is a pack?"  # as the upload form gives several
    # a key holding a dot beside a shorter key: each way of reading the path is tried
    dotted = json.dumps({"a": "x", "a.b": {"c": "deep"}, "q": "Why?"}).encode()
    items, _ = read_benchmark(dotted, "d.jsonl", {"question": "q", "answer": "a.b.c"})
    assert items[0].answer == "deep"


def test_accepted_answers_beside_the_answer() -> None:
    """A list's other answers, TriviaQA's aliases and a boolean's "yes"/"no" are accepted answers
    (BenchmarkItem.alternatives), at most MAX_ALTERNATIVES of them, each held to the field limit."""
    rows = [
        {"question": "Which team?", "answers": {"text": ["Denver Broncos", "Denver Broncos", "the Denver Broncos"]}},
        {
            "question": "Which musical?",
            "answers": {"aliases": ["Sunset Blvd", "Sunset Boulevard"], "value": "Sunset Boulevard"},
        },
        {"question": "Is it?", "answers": False},
        {"question": "Which numbers?", "answers": [str(k) for k in range(100)]},
    ]
    items, _ = read_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), "a.jsonl")
    assert [it.alternatives[:2] for it in items] == [("the Denver Broncos",), ("Sunset Blvd",), ("no",), ("1", "2")]
    assert len(items[3].alternatives) == MAX_ALTERNATIVES
    huge = json.dumps({"question": "Q?", "answers": ["a", "b" * 200_000]}).encode()
    with pytest.raises(InputError, match="accepted answer 2"):
        read_benchmark(huge, "h.jsonl")


@pytest.mark.parametrize(
    "record",
    [
        # CoQA and QuAC: a story and a list of questions, not a summarisation article
        {
            "story": "The Vatican Library is old.",
            "questions": ["When was it opened?"],
            "answers": {"input_text": ["1475"]},
        },
        {"question": "", "passage": "Some passage about things.", "answer": "x"},  # an empty question, first row
    ],
)
def test_a_passage_is_the_question_only_when_the_file_has_no_question_field(record: dict) -> None:
    """The passage is read as the item's text (a summarisation article) only when the record has
    no question field at all: a list of questions, or an empty question, is still refused with a
    request for a mapping (the story was read as the question, and the answers' object as text)."""
    with pytest.raises(InputError, match="no question field found"):
        read_benchmark((json.dumps(record) + "\n").encode(), "b.jsonl")


def test_a_mapping_naming_no_field_is_refused_and_choices_take_several() -> None:
    """`choices=nosuch` was taken: the items had no choices and the label "0" became the answer
    text. A field the first row lacks is refused, naming the fields it has; choices named as
    "choice1,choice2" (the upload form takes one string) or as a list are one column per choice."""

    row = {"premise": "My body cast a shadow.", "choice1": "The sun rose.", "choice2": "It rained.", "label": 0}
    data = (json.dumps(row) + "\n").encode()
    with pytest.raises(InputError, match="choices=nosuch") as exc:
        read_benchmark(data, "copa.jsonl", {"question": "premise", "choices": "nosuch"})
    assert "fields: choice1, choice2" in exc.value.message
    for choices in ("choice1,choice2", ["choice1", "choice2"]):
        items, _used = read_benchmark(data, "copa.jsonl", {"question": "premise", "choices": choices})
        assert items[0].choices == ("The sun rose.", "It rained.") and items[0].answer == "The sun rose."


def test_a_csv_byte_that_is_not_utf8_is_named_by_its_line() -> None:
    """Decoded ahead in blocks, a Latin-1 byte on line 502 was reported "near row 352"."""

    rows = ["question,answer"] + [f"Question number {k}?,yes" for k in range(600)]
    rows[501] = "Caf\u00e9 question here?,yes"
    with pytest.raises(InputError, match="line 502 is not UTF-8 text"):
        read_benchmark(("\r\n".join(rows) + "\r\n").encode("latin-1"), "b.csv")
    quoted = b'question,answer\r\n"a question over\r\ntwo lines?",yes\r\n'  # a field's line break kept
    assert [it.question for it in read_benchmark(quoted, "b.csv")[0]] == ["a question over\r\ntwo lines?"]


def test_review_cases_of_layouts_and_answers() -> None:
    """answer_base given is used whatever the first record's answer (it was ignored when that was
    text); CosmosQA's answer0-answer3 with a label are choices (NarrativeQA's answer1/answer2 are
    not); a CSV whose lines end with CR alone is read; a field the first row lacks but later rows
    have is taken (a field no row has is refused, at the end); 5,000 digits are no index (int()
    refuses them: a 500 on upload)."""
    rows = [{"question": f"Which colour {k}?", "choices": ["red", "green", "blue"], "answer": a}
            for k, a in enumerate(["blue", 1, 2])]  # fmt: skip
    items, used = read_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), "b.jsonl", {"answer_base": 1})
    assert [it.answer for it in items] == ["blue", "red", "green"] and used["answer_base"] == "1"
    cosmos = {"context": "A story.", "question": "Why?", "answer0": "a", "answer1": "b", "answer2": "c", "answer3": "d",
              "label": 2}  # fmt: skip
    assert _answers([cosmos]) == ["c"]
    assert [it.answer for it in read_benchmark(b"question,answer\rFirst one?,a\rSecond one?,b\r", "b.csv")[0]] == [
        "a",
        "b",
    ]
    sparse = [{"question": "First question here?"}, {"question": "Second question here?", "rationale": "Because."}]
    data = "".join(json.dumps(r) + "\n" for r in sparse).encode()
    items, _used = read_benchmark(data, "b.jsonl", {"solution": "rationale"})
    assert [it.solution for it in items] == ["", "Because."]
    long = {"question": "Pick one of these three", "choices": ["a", "b", "c"], "answer": "7" * 5000}
    assert _answers([long]) == ["7" * 5000]


def test_a_jsonl_byte_that_is_not_utf8_is_named_by_its_line() -> None:
    """Each line was decoded on its own and the line counted within it: always "line 1"."""
    lines = [json.dumps({"question": f"Question number {k}?"}).encode() for k in range(1000)]
    lines[899] = lines[899].replace(b"number", b"caf\xe9")
    with pytest.raises(InputError, match="invalid byte at line 900\\)"):
        read_benchmark(b"\n".join(lines) + b"\n", "b.jsonl")


def test_a_csv_row_short_of_columns_or_a_header_naming_one_twice_is_refused() -> None:
    """Read as items, they lost text unseen: a row short of columns became empty fields (a
    too_short item), a column named twice kept only its last values (a bad-input probe). A row
    with more columns than the header was refused already."""
    q = "Which river flows through the ancient city of Baghdad and joins the Euphrates"
    with pytest.raises(InputError, match="b.csv: the header names column 'question' twice"):
        read_benchmark(f"id,question,question\nd1,{q},dup\n".encode(), "b.csv")
    with pytest.raises(InputError, match="b.csv: row 3 has fewer columns than the header"):
        read_benchmark(f"id,question,answer\nr1,{q},T\nr2\n".encode(), "b.csv")
    with pytest.raises(InputError, match="b.csv: row 2 has fewer columns than MMLU's layout"):
        read_benchmark(f"{q},a,b,c,d,A\n{q},a,b,c,A\n".encode(), "b.csv")
    # a row of separators alone is a blank line, skipped: not refused as short of columns
    assert len(read_benchmark(f"id,question,answer\nr1,{q},T\n,,\n".encode(), "b.csv")[0]) == 1
    # columns without a name (a spreadsheet's trailing commas) are no column named twice (a review)
    assert len(read_benchmark(f"question,answer,,\n{q},4,,\n".encode(), "b.csv")[0]) == 1


def test_a_number_past_64_bits_in_a_json_array_is_told_as_such() -> None:
    """Valid JSON the array reader cannot hold was "not valid JSON (integer overflow)" (a probe of
    the API); JSON lines read it."""
    big = b'"question": "what is the capital city of france", "big": 123456789012345678901234567890'
    with pytest.raises(InputError, match="n.json: item 2 holds a whole number longer than 64 bits"):
        read_benchmark(b'[{"question": "a first question here"}, {' + big + b"}]", "n.json")
    assert len(read_benchmark(b"{" + big + b"}\n", "n.jsonl")[0]) == 1


def test_a_stray_quote_in_a_csv_is_refused_not_read_as_one_field() -> None:
    """A field opening with a quote that nothing closes swallowed every row after it into one
    question (5 rows read as 2 items, exit 0); the row is named instead."""
    rows = ["question,answer"] + [f"Question number {k} about river valley trade routes,ans{k}" for k in range(1, 6)]
    rows[2] = '"' + rows[2]
    with pytest.raises(InputError, match=r"row 3 opens a quoted field that is never closed"):
        read_benchmark(("\n".join(rows) + "\n").encode(), "stray.csv")
    quoted = 'question,answer\n"A field, with a comma and ""quotes""\nover two lines",yes\nplain one,no\n'
    items, _ = read_benchmark(quoted.encode(), "ok.csv")  # a well-quoted field may hold both
    assert [it.question for it in items] == ['A field, with a comma and "quotes"\nover two lines', "plain one"]


def test_a_csv_without_a_header_row_is_told_to_add_one() -> None:
    data = b"What is the capital of France?,Paris\nWhat is the capital of Spain?,Madrid\n"
    with pytest.raises(InputError, match=r"no question field found.*if this file has no header row, add one"):
        read_benchmark(data, "nohdr.csv")
    # JSON lines saved under a table's name said "no question field found among [' \"hypothesis\": ...']"
    # and never that the file is JSON (a new user)
    with pytest.raises(InputError, match=r"b\.csv: the file holds JSON, not a table: name it \.jsonl"):
        read_benchmark(b'{"question": "What is the capital of France?", "answer": "Paris"}\n', "b.csv")
    with pytest.raises(InputError) as err:  # not said of a format whose fields are named in every record
        read_benchmark(b'{"q": "What is the capital of France?"}\n', "b.jsonl")
    assert "header" not in str(err.value)


@pytest.mark.parametrize(
    ("compress", "suffix"),
    [
        (gzip.compress, ".gz"),
        (zstandard.compress, ".zst"),
        (bz2.compress, ".bz2"),
        (lzma.compress, ".xz"),
    ],
)
def test_a_compressed_file_named_as_plain_text_is_told_its_suffix(compress: Any, suffix: str) -> None:
    """It was "not UTF-8 text (invalid byte at line 1); re-encode the file as UTF-8"."""
    data = compress(b'{"question": "What is the capital of France?", "answer": "Paris"}\n')
    with pytest.raises(
        InputError, match=rf"is {suffix[1:]}-compressed but its name does not say so; name it b.jsonl\{suffix}"
    ):
        read_benchmark(data, "b.jsonl")
    assert read_benchmark(data, f"b.jsonl{suffix}")[0][0].answer == "Paris"


def test_a_cut_off_zstd_benchmark_is_refused_even_at_a_line_end() -> None:
    """Refused only when the cut broke a line: a cut where every line was already out (here
    inside the frame's checksum) gave the items read so far, without a word (a new user's trial)."""
    data = b"".join(b'{"question": "Question number %d here?", "answer": "yes"}\n' % i for i in range(3000))
    blob = zstandard.ZstdCompressor(write_checksum=True).compress(data)
    assert zstandard.ZstdDecompressor().decompressobj().decompress(blob[:-3]) == data  # every line is there
    with pytest.raises(InputError, match="truncated"):
        read_benchmark(blob[:-3], "b.jsonl.zst")
    assert len(read_benchmark(blob, "b.jsonl.zst")[0]) == 3000


def _parquet(rows: list[dict[str, Any]]) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(rows), sink)
    return bytes(sink.getvalue())


def _lines(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_a_first_row_with_an_empty_question_takes_the_question_field_of_the_rows_after() -> None:
    """One empty question in the first row (`""`, null) refused the whole file, "no question field
    found among ['answer', 'id', 'question']", where the README says the first rows decide a role
    the first lacks (a new user's trial). The field is the question; the empty item is
    too short to judge, as an empty question in a later row is; a row without the field at all
    is still refused, naming it."""
    good = {"id": "b", "question": "Which river flows through the ancient city of Baghdad?", "answer": "Tigris"}
    for empty in ("", None):
        items, mapping = read_benchmark(_lines([{"id": "a", "question": empty, "answer": "x"}, good]), "e.jsonl")
        assert mapping["question"] == "question" and [it.question for it in items] == ["", good["question"]]
    with pytest.raises(InputError, match="row 1 has no field 'question'") as lacking:
        read_benchmark(_lines([{"id": "a", "answer": "x"}, good]), "e.jsonl")
    # the field is the rows' after it, not the first row's (it said "the first row's question", a review)
    assert "first row's question" not in str(lacking.value) and "the rows after it" in str(lacking.value)
    # where no row read ahead fills the question (all empty, or a compressed Parquet file, which is
    # not read ahead), the empty field is named, and how to read it still: the message listed
    # 'question' among the fields in which no question field was found (a review)
    for data, name in (
        (_lines([{"id": "a", "question": "", "answer": "x"}] * 2), "e.jsonl"),
        (gzip.compress(_parquet([{"id": "a", "question": None, "answer": "x"}, good])), "e.parquet.gz"),
    ):
        with pytest.raises(InputError, match=r"the field 'question' is empty in row 1.*question=question"):
            read_benchmark(data, name)


def test_a_csv_row_of_separators_alone_is_a_blank_line_not_an_item() -> None:
    """A spreadsheet exports its empty rows as ",,": each was read as an empty item, too short,
    counted in the contaminated share that --fail-above compares (a gate at 20% passed a file
    25% contaminated: a new user's trial). Such a row is skipped, as a blank line is."""
    data = b"question,answer\nWhich river flows through Baghdad?,Tigris\n,\n , \nWhat is the capital of Peru?,Lima\n"
    items, _mapping = read_benchmark(data, "sheet.csv")
    assert [it.answer for it in items] == ["Tigris", "Lima"]


def test_a_role_only_later_rows_have_is_mapped() -> None:
    """A file mixing open-ended and multiple-choice items, the first open-ended: roles were
    detected on the first record alone, so no item kept its choices and a third item's answer
    index 1 was scored as the text "1" (a new user's trial). The first rows are read for the
    roles the first lacks: the choices are mapped, and the index names its choice."""
    rows = [
        {"id": "k1", "question": "What colour is the pigment made from iron oxide clay?", "answer": "ochre"},
        {"id": "k2", "question": "Which gas do plants take in to make sugar?", "answer": "carbon dioxide"},
        {
            "id": "k3",
            "question": "Why does a copper kettle not heat on an induction hob?",
            "choices": ["It is too heavy", "Induction needs a magnetic material", "Copper melts"],
            "answer": 1,
        },
    ]
    items, mapping = read_benchmark(_lines(rows), "mixed.jsonl")
    assert mapping["choices"] == "choices" and mapping["question"] == "question"
    assert [it.choices for it in items[:2]] == [(), ()]
    assert [it.answer for it in items] == ["ochre", "carbon dioxide", "Induction needs a magnetic material"]
    assert items[2].choices == ("It is too heavy", "Induction needs a magnetic material", "Copper melts")
    # counted from 1 when the items with choices say so, though the first item has none
    rows += [
        {"id": f"m{i}", "question": f"Pick {i}?", "choices": ["x", "y", "z"], "answer": a} for i, a in enumerate((3, 1))
    ]
    items, mapping = read_benchmark(_lines(rows), "mixed.jsonl")
    assert mapping["answer_base"] == "1"
    assert [it.answer for it in items[2:]] == ["It is too heavy", "z", "x"]
    # no numeric answers into choices: nothing said of how they count (answer_base was "0")
    _items, mapping = read_benchmark(_lines([rows[0], {**rows[2], "answer": "Copper melts"}]), "text.jsonl")
    assert mapping["choices"] == "choices" and "answer_base" not in mapping
    # the first record's own roles stay: a later row's other question field is not taken
    later = [
        {"prompt": "Where is the lighthouse?", "answer": "north"},
        {"prompt": "x?", "question": "Which?", "answer": "y"},
    ]
    _items, mapping = read_benchmark(_lines(later), "q.jsonl")
    assert mapping["question"] == "prompt"


def test_reading_ahead_for_roles_leaves_a_bad_row_to_be_told_at_its_place() -> None:
    """The read-ahead for roles says nothing of a broken row: the items before it are read, then
    the row's own error, as without the read-ahead."""
    good = [{"question": f"Question number {i} here?", "answer": "a"} for i in range(3)]
    data = _lines(good) + b'{"question": "broken\n' + _lines([{"question": "q?", "choices": ["a", "b"], "answer": 0}])
    seen: list[str] = []
    with pytest.raises(InputError, match="line 4"):
        from contam.app.readers.benchmark import iter_benchmark

        for it in iter_benchmark(data, "b.jsonl"):
            seen.append(it.question)
    assert len(seen) == 3


def test_a_compressed_parquet_file_is_decompressed_once(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compressed Parquet file is decompressed whole to disk to be read: the read-ahead for roles
    would do it a second time (a review), and its columns are the same in every row anyway."""
    from contam.app.readers import benchmark as reader

    raw = tmp_path / "b.parquet"
    pq.write_table(pa.table({"question": [f"Question {i}?" for i in range(50)], "answer": ["a"] * 50}), raw)
    path = tmp_path / "b.parquet.gz"
    path.write_bytes(gzip.compress(raw.read_bytes()))
    spools = []
    real = reader._spooled_parquet
    monkeypatch.setattr(reader, "_spooled_parquet", lambda *a: spools.append(1) or real(*a))
    items, _mapping = read_benchmark(path, "b.parquet.gz")
    assert len(items) == 50 and len(spools) == 1
