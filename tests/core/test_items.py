"""The benchmark's gram table: which items hold which grams (pure, no database)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from contam.app.core.items import _GramTable


def test_groups_of_lists_every_holder_of_each_gram_in_order() -> None:
    """Random tables against a plain reference: for each gram asked, in order, the groups
    holding it (ascending), unless more than max_items groups hold it."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(0, 30))
        grams = [rng.integers(0, 40, int(rng.integers(0, 10))) for _ in range(n)]
        table = _GramTable(grams, list(range(n)))
        asked = rng.integers(0, 50, int(rng.integers(0, 20)))
        limit = int(rng.integers(0, 5))
        expected: list[int] = []
        for g in asked.tolist():
            holders = sorted({k for k, held in enumerate(grams) if g in held.tolist()})
            if holders and len(holders) <= limit:
                expected += holders
        assert table.groups_of(asked, limit).tolist() == expected
        assert table.freq(asked).tolist() == [sum(g in held.tolist() for held in grams) for g in asked.tolist()]


_INT64 = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_INT64, max_size=30), min_size=1, max_size=20), st.lists(_INT64, max_size=50))
def test_gram_table_finds_every_group_of_a_gram(items: list[list[int]], others: list[int]) -> None:
    # the groups found must be those of a plain search, in the order of the grams asked
    grams = [np.array(g, dtype=np.int64) for g in items]
    table = _GramTable(grams, list(range(len(grams))))
    query = np.concatenate([*grams, np.array(others, dtype=np.int64)])
    expected = [grp for q in query.tolist() for grp, g in enumerate(items) if q in set(g)]
    assert table.groups_of(query, 1000).tolist() == expected


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
