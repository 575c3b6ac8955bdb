"""The benchmark's gram table: which items hold which grams (pure, no database)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contam.app.core.config import Thresholds
from contam.app.core.items import COMPETITOR_MAX_ITEMS, SharedText, _GramTable, _passage_tokens, prepare
from contam.app.core.types import BenchmarkItem


def _top(items: list[list[int]], groups: list[int], asked: list[int], limit: int, exclude: int, k: int) -> list[int]:
    """A plain reference for _GramTable.top_groups: count, for each gram asked (repeats again),
    every group holding it unless more than `limit` groups do; the k most counted, ties by group."""
    counts: dict[int, int] = {}
    for q in asked:
        holders = sorted({grp for grp, held in zip(groups, items, strict=True) if q in held})
        if holders and len(holders) <= limit:
            for grp in holders:
                if grp != exclude:
                    counts[grp] = counts.get(grp, 0) + 1
    return sorted(counts, key=lambda grp: (-counts[grp], grp))[:k]


def test_top_groups_counts_every_holder_of_each_gram() -> None:
    """Random tables (items in shared groups, as identical items are) against the reference,
    with the frequencies beside them."""
    rng = np.random.default_rng(0)
    for _ in range(400):
        n = int(rng.integers(0, 30))
        items = [rng.integers(0, 40, int(rng.integers(0, 10))).tolist() for _ in range(n)]
        groups = sorted(rng.integers(0, max(n, 1), n).tolist())
        table = _GramTable([np.array(g, dtype=np.int64) for g in items], groups)
        asked = rng.integers(0, 50, int(rng.integers(0, 40))).tolist()
        limit, exclude, k = int(rng.integers(0, 6)), int(rng.integers(-1, max(n, 1))), int(rng.integers(0, 10))
        expected = _top(items, groups, asked, limit, exclude, k)
        assert table.top_groups(np.array(asked, dtype=np.int64), limit, exclude, k) == expected
        held = [len({grp for grp, h in zip(groups, items, strict=True) if q in h}) for q in asked]
        assert table.freq(np.array(asked, dtype=np.int64)).tolist() == held


def table(keys: list[int], runs: list[list[int]]) -> tuple[np.ndarray, ...]:
    """A gram table as arrays.top_groups takes it: keys (ascending), their directory, and each
    key's run (start, count) of the groups holding it."""
    from contam.app.core.arrays import key_directory

    k = np.array(keys, dtype=np.int64)
    count = np.array([len(r) for r in runs], dtype=np.int64)
    start = np.concatenate(([0], np.cumsum(count)[:-1])).astype(np.int64)
    return k, key_directory(k), start, count, np.array([g for r in runs for g in r], dtype=np.int64)


def test_top_groups_starts_afresh_after_a_bad_table() -> None:
    """The C counts groups in an array kept between calls and zeroed where it counted: a call
    that fails half-way (a group out of range) must leave it zeroed too, or the next call would
    miss a group already counted once."""
    from contam.app.core.arrays import top_groups

    bad = table([5], [[3, -2]])  # group 3 counted, then -2 refused
    with pytest.raises(ValueError, match="a group must be"):
        top_groups(bad, np.array([5], dtype=np.int64), 10, -1, 4)  # type: ignore[arg-type]
    good = table([5, 7], [[4], [3]])
    assert top_groups(good, np.array([7], dtype=np.int64), 10, -1, 4) == [3]  # type: ignore[arg-type]
    assert top_groups(good, np.array([5, 7, 7], dtype=np.int64), 10, -1, 4) == [3, 4]  # type: ignore[arg-type]


def test_top_groups_is_right_when_a_collection_calls_it_again() -> None:
    """Python code may run inside the C: raising its error while another exception is handled
    makes an object, which may start a garbage collection, whose callbacks (or another thread
    they let run) may call top_groups again. The counts must be zero by then, or the inner call
    misses a group the failing one counted, and that group goes uncounted for good."""
    import gc

    from contam.app.core.arrays import top_groups

    bad, inner = table([5], [[2, -2]]), table([6, 7], [[2], [9]])  # group 2 counted, then -2 refused
    five, six_sevens = np.array([5], dtype=np.int64), np.array([6, 7, 7], dtype=np.int64)
    inside: list[list[int]] = []

    def again(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            inside.append(top_groups(inner, six_sevens, 10, -1, 4))  # type: ignore[arg-type]

    threshold = gc.get_threshold()
    gc.callbacks.append(again)
    try:
        for more in range(4):  # a collection due at one of the next few objects made
            for _ in range(5):
                try:
                    raise KeyError("handled meanwhile")
                except KeyError:
                    gc.set_threshold(gc.get_count()[0] + more)
                    with pytest.raises(ValueError, match="a group must be"):
                        top_groups(bad, five, 10, -1, 4)  # type: ignore[arg-type]
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(again)
    assert inside and all(r == [9, 2] for r in inside), inside
    assert top_groups(table([8], [[2]]), np.array([8], dtype=np.int64), 10, -1, 4) == [2]  # type: ignore[arg-type]


_INT64 = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(_INT64, max_size=30), min_size=1, max_size=20),
    st.lists(_INT64, max_size=50),
    st.integers(1, 20),
)
def test_top_groups_finds_every_group_of_any_int64_gram(items: list[list[int]], others: list[int], k: int) -> None:
    # keys across the whole int64 range (the directory's buckets flip the sign bit)
    table = _GramTable([np.array(g, dtype=np.int64) for g in items], list(range(len(items))))
    asked = [g for held in items for g in held] + others
    expected = _top(items, list(range(len(items))), asked, 1000, -1, k)
    assert table.top_groups(np.array(asked, dtype=np.int64), 1000, -1, k) == expected


# values whose bytes recur inside other values, so a byte match can start inside an element
_TOKENS = st.sampled_from([0, 1, 2, 256, 257, 65536, 1 << 56, (1 << 56) + 1, -1, -256, 2**63 - 1, -(2**63)])


@settings(max_examples=400, deadline=None)
@given(
    st.lists(_TOKENS, max_size=40),
    st.lists(_TOKENS, max_size=4),
    st.lists(st.booleans(), min_size=40, max_size=40),
    st.booleans(),
)
def test_find_sequence_by_bytes_finds_what_the_comparison_loop_finds(
    hay: list[int], needle: list[int], allowed: list[bool], masked: bool
) -> None:
    from contam.app.core.align import _find_sequence_loop, find_sequence

    h, n = np.array(hay, dtype=np.int64), np.array(needle, dtype=np.int64)
    mask = np.array(allowed[: len(hay)], dtype=bool) if masked else None
    expected = _find_sequence_loop(h, n, mask)
    assert find_sequence(h, n, mask) == expected
    assert find_sequence(h[1:], n, None if mask is None else mask[1:]) == _find_sequence_loop(
        h[1:], n, None if mask is None else mask[1:]
    )
    if expected >= 0:
        assert h[expected : expected + len(n)].tolist() == needle


def _passage_tokens_by_runs(p, me, shared, freq, n, th):  # type: ignore[no-untyped-def]
    """The definition, one run at a time: the item's shared n-grams as (group, position) pairs,
    sorted; each run of consecutive positions with one other group spanning passage_tokens tokens
    marks its tokens (the implementation before the runs were marked at once)."""
    out = np.zeros(p.n_tokens, dtype=bool)
    sel = (freq >= th.template_min_items) & (freq <= COMPETITOR_MAX_ITEMS)
    pairs = []
    for g, pos in zip(p.grams[sel].tolist(), p.gram_pos[sel].tolist(), strict=True):
        row = int(np.searchsorted(shared.ngrams.keys, g))
        start, count = int(shared.ngrams.start[row]), int(shared.ngrams.count[row])
        for other in shared.ngrams.groups_by_gram[start : start + count].tolist():
            if other != me:
                pairs.append((other, pos))
    pairs.sort()
    need = max(1, th.passage_tokens - n + 1)
    k = 0
    while k < len(pairs):
        j = k
        while j + 1 < len(pairs) and pairs[j + 1][0] == pairs[k][0] and pairs[j + 1][1] == pairs[j][1] + 1:
            j += 1
        if j - k + 1 >= need:
            out[pairs[k][1] : pairs[j][1] + n] = True
        k = j + 1
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=40), min_size=2, max_size=8), st.integers(3, 12))
def test_shared_passages_are_the_long_runs_shared_with_one_other_item(words: list[list[int]], span: int) -> None:
    """Items from a six-word vocabulary share many runs; the tokens inside runs of at least
    `span` tokens shared word for word with one other item are the passage, as the plain
    definition finds them."""
    vocab = ["alpha", "beta", "gamma", "delta", "omega", "kappa"]
    items = [BenchmarkItem(str(i), i, question=" ".join(vocab[w] for w in ws)) for i, ws in enumerate(words)]
    prepared = [prepare(it, 3) for it in items]
    shared = SharedText(prepared)
    th = Thresholds(passage_tokens=span)
    for i, p in enumerate(prepared):
        freq = shared.freq(p.grams)
        me = int(shared.group[i])
        got = _passage_tokens(p, me, shared, freq, 3, th)
        assert got.tolist() == _passage_tokens_by_runs(p, me, shared, freq, 3, th).tolist()


def test_top_groups_counts_right_past_its_first_table() -> None:
    """Hundreds of groups (the count table starts at 64 slots and grows as they come): every
    group's count survives each growth."""
    rng = np.random.default_rng(3)
    items = [rng.integers(0, 60, int(rng.integers(1, 12))).tolist() for _ in range(700)]
    table = _GramTable([np.array(g, dtype=np.int64) for g in items], list(range(len(items))))
    asked = rng.integers(0, 60, 400).tolist()
    for k in (1, 8, 700):
        expected = _top(items, list(range(len(items))), asked, 1000, 5, k)
        assert table.top_groups(np.array(asked, dtype=np.int64), 1000, 5, k) == expected


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([-(2**63), -1, 0, 1, 2**63 - 1, 12345, -98765]) | st.integers(-(2**63), 2**63 - 1),
            st.integers(0, 50),
        ),
        max_size=300,
    )
)
def test_unique_pairs_are_the_sorted_distinct_rows(rows: list[tuple[int, int]]) -> None:
    """_unique_pairs (a stable sort by the second column, then the C stable sort by the first)
    gives np.unique(axis=0)'s rows: distinct, sorted by the first column, then the second."""
    from contam.app.core.items import _unique_pairs

    first = np.array([a for a, _b in rows], dtype=np.int64)
    second = np.array([b for _a, b in rows], dtype=np.int64)
    got = _unique_pairs(first, second)
    want = np.unique(np.stack([first, second], axis=1), axis=0) if rows else np.zeros((0, 2), np.int64)
    assert got.tolist() == want.tolist()
