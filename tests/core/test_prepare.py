"""prepare() works on a whole item at once; these hold it to the field-by-field definition."""

from __future__ import annotations

import numpy as np
import xxhash
from hypothesis import given, settings
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
