"""Plain value types shared by readers, scoring and services."""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from contam.app.errors import InputError

ROLES = ("question", "passage", "choices", "answer", "solution")
MAX_ALTERNATIVES = 32  # accepted answers kept beside an item's answer (each is looked for after its question)


class Status(StrEnum):
    """An item's verdict. Members compare equal to their string values (stored and sent as such)."""

    CONTAMINATED = "contaminated"
    SUSPICIOUS = "suspicious"
    CLEAN = "clean"
    TOO_SHORT = "too_short"

    @property
    def flagged(self) -> bool:
        return self in (Status.CONTAMINATED, Status.SUSPICIOUS)


SEVERITY = {Status.CONTAMINATED: 2, Status.SUSPICIOUS: 1, Status.CLEAN: 0, Status.TOO_SHORT: 0}  # a verdict's weight


@dataclass(frozen=True)
class BenchmarkItem:
    """One benchmark item with its text split by role. `choices` holds one text per choice;
    `solution` is a worked solution or rationale given beside a short final `answer` (it is
    scored as part of the answer: a document holding the question with it gives the answer away)."""

    item_id: str
    row: int
    question: str = ""
    passage: str = ""
    choices: tuple[str, ...] = ()
    answer: str = ""
    solution: str = ""
    raw: dict[str, Any] = field(default_factory=dict, compare=False)
    # other texts that give the answer (SQuAD's other annotators', NQ's and TriviaQA's accepted
    # answers, "yes" for a boolean true): a page giving one after the question has its answer;
    # never scored as the item's text
    alternatives: tuple[str, ...] = ()

    def segments(self, role: str) -> list[str]:
        """The texts of a role; n-grams never cross from one segment to the next."""
        if role == "choices":
            return [c for c in self.choices if c]
        value = getattr(self, role)
        return [value] if value else []

    def roles(self) -> list[str]:
        return [r for r in ROLES if self.segments(r)]

    def named_texts(self) -> list[tuple[str, str]]:
        """Every text of the item with its field's name as an error names it: the id, the roles,
        each choice and each other accepted answer (the per-item limits look at all of them)."""
        texts = [("id", self.item_id), ("question", self.question), ("passage", self.passage)]
        texts += [("answer", self.answer), ("solution", self.solution)]
        texts += [(f"choice {i + 1}", c) for i, c in enumerate(self.choices)]
        return texts + [(f"accepted answer {i + 2}", a) for i, a in enumerate(self.alternatives)]

    def display_text(self) -> str:
        parts = [self.passage, self.question]
        parts += [f"{chr(65 + i)}. {c}" for i, c in enumerate(self.choices)] if len(self.choices) <= 26 else []
        if self.solution:
            parts.append(f"Solution: {self.solution}")
        if self.answer:
            parts.append(f"Answer: {self.answer}")
        return "\n".join(p for p in parts if p)


def answer_of(answer: object, choices: Sequence[str], strict: bool = False) -> str:
    """An answer given as text, or as an index (an int, or a string of digits that is not the
    text of a choice, from 0) into `choices`. An index that is neither an index nor the text of a
    choice (-1, Hugging Face's mark for an unlabelled test item; 5 with four choices) is no
    answer: read as the text "5" it was scored as an answer the item does not have. strict (a
    request naming its items one by one): refused instead. A single ASCII letter that is not the
    text of a choice (in either case: with choices "B", "A" the answer "a" is the choice "A")
    names one by its place ("C": the third), as exam files and a file's reader read it (read as
    the text "C" it was an answer no copy gives); strict: one past the choices is refused."""
    if isinstance(answer, str) and choices and answer.strip() not in choices:
        letter = answer.strip().upper()
        if (
            len(letter) == 1
            and answer.strip().isascii()
            and "A" <= letter <= "Z"
            and letter not in {c.strip().upper() for c in choices}
        ):
            if ord(letter) - 65 < len(choices):
                return choices[ord(letter) - 65]
            if strict:
                raise InputError(f"answer {answer.strip()!r} is not the letter of one of its {len(choices)} choice(s)")
        digits = answer.strip()
        if digits.isascii() and digits.removeprefix("-").isdigit() and len(digits) <= 18:  # as a file's reader does
            answer = int(digits)
    if isinstance(answer, numbers.Integral) and not isinstance(answer, bool) and choices:
        answer = int(answer)  # numpy's integers too (a DataFrame's column), not only Python's
        if 0 <= answer < len(choices):
            return choices[answer]
        if str(answer) not in choices:
            if strict:
                raise InputError(not_an_index(answer, len(choices)))
            return ""
    return str(answer)


# GSM8K's "...\n#### 72": a number (maybe negative, with thousands commas, a decimal point or a
# fraction) alone on the last line after the mark ("#### end", a Markdown heading, is no answer)
_GSM8K_FINAL = re.compile(r"\n####[ \t]*(-?\$?\d[\d,]*(?:\.\d+)?(?:/\d+)?)[ \t]*\.?\s*$")
_BOXED = "\\boxed{"


def final_answer(text: str) -> tuple[str, str]:
    """(final answer, worked solution) of a free-text answer that is a worked solution ending in
    its final answer, as maths benchmarks write them: GSM8K's "...\\n#### 72" (the solution is the
    text before the mark) and MATH's "... $\\boxed{10}$" (the last box; the solution is the whole
    text). Scored as an answer beside its solution, a page giving the final answer after the
    question is a copy with its answer, as one giving the whole solution is. Other text: (text, "")."""
    m = _GSM8K_FINAL.search(text)
    if m:
        return m.group(1), text[: m.start()].strip()
    at = text.rfind(_BOXED)
    if at < 0:
        return text, ""
    depth, start = 0, at + len(_BOXED)
    for k in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[k], 0)
        if depth < 0:
            boxed = text[start:k].strip()
            return (boxed, text) if boxed else (text, "")
    return text, ""  # unbalanced: no final answer told apart


def given_answer(
    answer: str, solution: str, choices: Sequence[str], alternatives: Iterable[str]
) -> tuple[str, str, tuple[str, ...]]:
    """(answer, solution, alternatives) of an item given field by field (the REST check's and the
    Python API's), as a file's reader makes them: a worked solution ending in its final answer
    (final_answer) is split when the item has no solution or choices of its own, and other accepted
    answers are kept for a free-text answer only, once each, without the answer itself."""
    if not solution and not choices:
        answer, solution = final_answer(answer)
    others = [] if choices else [a.strip() for a in alternatives]
    return answer, solution, tuple(a for a in dict.fromkeys(others) if a and a != answer.strip())


def not_an_index(answer: int, choices: int) -> str:
    return (
        f"answer {answer} is not an index into its {choices} choice(s) (0 to {choices - 1}) nor the text of one of them"
    )
