"""prepare() works on a whole item at once; these hold it to the field-by-field definition."""

from __future__ import annotations

import numpy as np
import pytest
import xxhash
from hypothesis import example, given, settings
from hypothesis import strategies as st

from contam.app.core.items import ANSWER, CHOICES, MATCH_N, QUESTION, prepare
from contam.app.core.signatures import rolling_hashes, token_hashes
from contam.app.core.text import tokenize
from contam.app.core.types import BenchmarkItem


def _by_field(item: BenchmarkItem, n: int) -> dict[str, object]:
    """Each field on its own: its token ids, its n-grams and MATCH_N-grams (never crossing into
    the next field), which n-grams are weak (fewer than half their tokens informative), and the
    fields too short for a gram."""
    fields = [(QUESTION, tokenize(t)) for t in item.segments("question")]
    choices = [tokenize(c) for c in item.segments("choices")]
    fields += [(CHOICES, c) for c in choices]
    answer = tokenize(item.answer) if item.answer else []
    if answer and answer not in choices:
        fields.append((ANSWER, answer))
    out: dict[str, list[object]] = {k: [] for k in ("ids", "role", "grams", "gram_pos", "weak", "mgrams", "mgram_pos")}
    short, tiny, spans, start = [], [], [], 0
    for code, toks in fields:
        if not toks:
            continue
        tid = token_hashes(toks)
        g = rolling_hashes(tid, n).view(np.int64)
        mg = rolling_hashes(tid, MATCH_N).view(np.int64)
        info = [len(t) >= 2 or not t.isascii() for t in toks]
        out["ids"] += tid.view(np.int64).tolist()
        out["role"] += [code] * len(toks)
        out["grams"] += g.tolist()
        out["gram_pos"] += list(range(start, start + len(g)))
        out["weak"] += [sum(info[j : j + n]) * 2 < n for j in range(len(g))]
        out["mgrams"] += mg.tolist()
        out["mgram_pos"] += list(range(start, start + len(mg)))
        key = xxhash.xxh3_64_intdigest(tid.tobytes())
        if len(toks) < n:
            short.append((start, start + len(toks), key))
        if len(toks) < MATCH_N:
            tiny.append((start, start + len(toks), key))
        spans.append((start, start + len(toks), code))
        start += len(toks)
    return {**out, "short_fields": short, "tiny_fields": tiny, "fields": spans}


_WORDS = st.sampled_from(["a", "I", "the", "cat", "sat", "on", "mat", "42", "é", "naïve", "東", "x_1", "?!", ""])
_TEXT = st.lists(_WORDS, max_size=14).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(_TEXT, st.lists(_TEXT, max_size=4), _TEXT, st.sampled_from([2, 3, 5, 8]))
def test_prepare_equals_field_by_field(question: str, choices: list[str], answer: str, n: int) -> None:
    item = BenchmarkItem("x", 0, question=question, choices=tuple(choices), answer=answer)
    p, ref = prepare(item, n), _by_field(item, n)
    got = {
        "ids": p.ids.tolist(),
        "role": p.role.tolist(),
        "grams": p.grams.tolist(),
        "gram_pos": p.gram_pos.tolist(),
        "weak": p.weak.tolist(),
        "mgrams": p.mgrams.tolist(),
        "mgram_pos": p.mgram_pos.tolist(),
        "short_fields": p.short_fields,
        "tiny_fields": p.tiny_fields,
        "fields": p.fields,
    }
    assert got == ref
    assert p.role.dtype == np.int8 and p.weak.dtype == bool and p.whole.dtype == bool
    assert p.whole.tolist() == [e - s == 1 for s, e, _c in p.fields for _ in range(e - s)]
    assert p.umgrams.tolist() == sorted(set(p.mgrams.tolist()))


def _glued_reference(texts: list[str], starts: list[int]) -> np.ndarray:
    """items._glued before its separators were tested in numpy: a Python test of each."""
    from contam.app.core import items
    from contam.app.core.text import tokenize_spans

    runs, strings = [], []
    for text, first in zip(texts, starts, strict=True):
        if not items._GLUE.search(text):
            continue
        toks = tokenize_spans(text)
        seps = [text[e:s] for e, s in zip(toks.ends[:-1].tolist(), toks.starts[1:].tolist(), strict=True)]
        joined = [bool(sep) and not any(c.isspace() for c in sep) for sep in seps]
        k = 0
        while k < len(joined):
            if not joined[k]:
                k += 1
                continue
            end = k
            while end < len(joined) and joined[end]:
                end += 1
            for a in range(k, end):
                for b in range(a + 2, min(end + 1, a + items.GLUE_MAX) + 1):
                    glued = "".join(toks.tokens[a:b])
                    if len(glued) >= items.GLUE_MIN_CHARS:
                        runs.append((first + a, b - a))
                        strings.append(glued)
            k = end + 1
    if not runs:
        return np.zeros((0, 3), dtype=np.int64)
    return np.column_stack([items._ids(strings), np.array(runs, dtype=np.int64).reshape(-1, 2)])


_PIECES = [
    "3",
    "14",
    "x",
    "ab",
    "café",
    "Ω",
    "v2",
    ".",
    "/",
    "^",
    "-",
    "_",
    "(",
    ")",
    " ",
    "  ",
    "\t",
    "\n",
    "\x1c",
    "\u00a0",
    "\u2009",
    ",",
    "e=mc",
    "A.B",
    "字",  # a token of its own
    "\U0001d518x",  # astral: four bytes of UTF-8 (NFKC reads it as "u")
    "ß",  # casefolded to two characters
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_PIECES), max_size=40), min_size=1, max_size=3))
@example([[".".join(["v2", "14", "café", "x"] * 5)], ["a-b c/d"]])  # a chain past GLUE_MAX tokens
@example([["x.y", " ", "(\U0001d518x^ß)-字.3"]])
def test_glued_runs_are_as_the_separator_by_separator_test_found(fields: list[list[str]]) -> None:
    """_glued tells which neighbouring tokens only punctuation parts from a count of spaces per
    character (ASCII) instead of a Python test of each separator, and makes and hashes the runs in
    C (_native.glued) instead of a str each: the same runs, for ASCII and other text, ASCII's odd
    spaces (\\x1c) and Unicode's (no-break, thin) among them, chains longer than GLUE_MAX."""
    from contam.app.core.items import _glued

    texts = ["".join(f) for f in fields]
    starts = [0, 40, 80][: len(texts)]
    got, want = _glued(texts, starts), _glued_reference(texts, starts)
    assert got.tolist() == want.tolist()


def test_glued_refuses_flags_that_do_not_pair_the_tokens() -> None:
    """_native.glued takes one flag per pair of neighbouring tokens; another count is an error,
    not a read past the array."""
    from contam.app.core import _native

    with pytest.raises(ValueError, match="one joined flag per pair"):
        _native.glued(["a", "b", "c"], np.ones(3, dtype=bool), 12, 3, 0)
    with pytest.raises(TypeError, match="a token must be str"):
        _native.glued(["a", 2], np.ones(1, dtype=bool), 12, 3, 0)
    assert _native.glued([], np.zeros(0, dtype=bool), 12, 3, 0) == (b"", b"", b"")
