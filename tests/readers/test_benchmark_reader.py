"""Role detection on the record shapes of well-known benchmarks (one real-shaped record each)."""

from __future__ import annotations

import json

import pytest

from contam.app.readers.benchmark import read_benchmark

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
        "gsm8k",
        {"question": "Tom has 3 apples and buys 2 more. How many?", "answer": "3 + 2 = 5\n#### 5"},
        {"question": "Tom has 3 apples and buys 2 more. How many?", "answer": "3 + 2 = 5\n#### 5"},
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


def test_a_benchmark_with_no_question_field_is_told_how_to_name_it() -> None:
    """The error said "give a field mapping such as question=<field>", and the CLI's option for
    it is --fields: it now names the option and the API's `mapping`."""
    from contam.app.errors import InputError

    with pytest.raises(InputError) as exc:
        read_benchmark(b'{"colour": "What is the capital of France?"}\n', "b.jsonl")
    assert "no question field found among ['colour']" in exc.value.message
    assert "contam scan --fields question=<field>" in exc.value.message and "`mapping`" in exc.value.message
