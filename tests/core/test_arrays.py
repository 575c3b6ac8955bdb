"""The sorted-array primitives the scorer's hot loops call (app.core.arrays): each must give
exactly what the plain numpy or Python computation gives."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contam.app.core import _native
from contam.app.core.align import longest_run, runs
from contam.app.core.arrays import (
    Postings,
    candidate_votes,
    count,
    distinct,
    find_sorted,
    held_counts,
    key_directory,
    member,
    occurrences,
    positions_of,
    share,
    top_k,
)

_INT64 = st.integers(-(2**63), 2**63 - 1)
# keys at the edges of the buckets: the extremes, around zero (where the sign bit flips) and
# values sharing their top bits
_EDGY = st.one_of(_INT64, st.sampled_from([-(2**63), 2**63 - 1, -1, 0, 1, 2**62, -(2**62), 2**62 - 1]))


@settings(max_examples=300, deadline=None)
@given(st.lists(_EDGY, max_size=300), st.lists(_EDGY, max_size=100))
def test_find_sorted_is_a_plain_search(keys: list[int], others: list[int]) -> None:
    # the bucketed search finds every key where it is and nothing else, at every table size
    table = np.unique(np.array(keys, dtype=np.int64))
    directory = key_directory(table)
    query = np.concatenate([table, np.array(others, dtype=np.int64)])
    at = {k: i for i, k in enumerate(table.tolist())}
    expected = [at.get(q, -1) for q in query.tolist()]
    assert find_sorted(table, directory, query).tolist() == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(_EDGY, max_size=300))
def test_distinct_is_numpys_unique(values: list[int]) -> None:
    a = np.array(values, dtype=np.int64)
    got, want = distinct(a), np.unique(a)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
    u = a.view(np.uint64)  # unsigned order too (the index's raw hashes)
    assert distinct(u).tolist() == np.unique(u).tolist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_EDGY, st.integers(0, 5)), max_size=200))
def test_occurrences_count_each_value(values: list[int]) -> None:
    got = occurrences(np.array(values, dtype=np.int64))
    assert got.tolist() == [values.count(v) for v in values]


@settings(max_examples=400, deadline=None)
@given(st.lists(_EDGY, max_size=100), st.lists(_EDGY, max_size=400))
def test_member_is_a_plain_membership_test(values: list[int], table: list[int]) -> None:
    # both ways of answering (a table of the keys; a binary search when the keys outnumber the
    # values eightfold, or for fewer than eight values), the key -1 the table keeps apart included
    held = set(table)
    values += table[:3]
    got = member(np.array(values, dtype=np.int64), np.unique(np.array(table, dtype=np.int64)))
    assert got.dtype == bool and got.tolist() == [v in held for v in values]
    # unsigned hashes (as the index stores them), sorted as unsigned, and a strided view answer
    # the same
    u = np.array(values, dtype=np.int64).view(np.uint64)
    assert member(u, np.unique(np.array(table, dtype=np.int64).view(np.uint64))).tolist() == got.tolist()
    doubled = np.repeat(np.array(values, dtype=np.int64), 2)[::2]
    assert member(doubled, np.unique(np.array(table, dtype=np.int64))).tolist() == got.tolist()


def test_member_of_unsigned_keys_from_the_top_half() -> None:
    # keys sorted as unsigned with values from 2**63 up: a binary search over them viewed as
    # signed would miss those (one needle takes the binary search)
    keys = np.array([1, 2**63, 2**64 - 1], dtype=np.uint64)
    assert member(np.array([2**63], dtype=np.uint64), keys).tolist() == [True]
    assert member(np.array([0, 1, 2**63 + 1, 2**64 - 1], dtype=np.uint64), keys).tolist() == [False, True, False, True]
    with pytest.raises(TypeError):
        member(np.array([1.0]), np.array([1.0]))


def test_member_at_scale() -> None:
    rng = np.random.default_rng(7)
    for n, k in ((5000, 30), (30, 5000), (3000, 700), (7, 7)):
        keys = np.unique(rng.integers(-(2**20), 2**20, k))
        x = rng.integers(-(2**20), 2**20, n)
        assert member(x, keys).tolist() == np.isin(x, keys).tolist()


def test_key_directory_is_sized_to_the_table() -> None:
    # a /check of one item builds these tables per request: its directory must not be the one
    # a 10,000-item benchmark gets, and a gram it holds must still be found
    small = np.arange(40, dtype=np.int64) * 7919
    assert len(key_directory(small)) == 2**4 + 1
    assert (find_sorted(small, key_directory(small), small) == np.arange(40)).all()
    big = np.arange(400_000, dtype=np.int64) * 7919 * 7919
    assert len(key_directory(big)) == 2**17 + 1
    assert (find_sorted(big, key_directory(big), big) == np.arange(400_000)).all()
    assert len(key_directory(np.zeros(0, dtype=np.int64))) == 3


@settings(max_examples=300, deadline=None)
@given(st.lists(st.booleans(), max_size=300))
def test_share_and_count_are_numpys_mean_and_sum_of_a_mask(bits: list[bool]) -> None:
    # bit for bit: the scorer compares shares with each other and with thresholds
    mask = np.array(bits, dtype=bool)
    assert count(mask) == int(mask.sum())
    assert share(mask) == (float(mask.mean()) if len(mask) else 0.0)
    assert type(share(mask)) is float and type(count(mask)) is int  # JSON takes them as they are


@settings(max_examples=300, deadline=None)
@given(st.lists(st.booleans(), max_size=200), st.integers(1, 3))
def test_runs_are_every_run_of_true(bits: list[bool], step: int) -> None:
    # a strided view too (the C reads a contiguous copy)
    mask = np.array(bits, dtype=bool)[::step]
    expected, start = [], None
    for i, b in enumerate([*mask.tolist(), False]):
        if b and start is None:
            start = i
        elif not b and start is not None:
            expected.append((start, i))
            start = None
    assert runs(mask) == expected
    assert longest_run(mask) == max((e - s for s, e in expected), default=0)


@settings(max_examples=300, deadline=None)
@given(st.lists(_EDGY, max_size=200), st.lists(_EDGY, max_size=60))
def test_positions_of_are_where_any_needle_stands(grams: list[int], others: list[int]) -> None:
    # a document's grams (repeats and all), and needles some of which it holds, some twice
    doc = np.array(grams, dtype=np.int64)
    order = np.argsort(doc, kind="stable")
    needles = np.array(grams[::3] + others + grams[::5], dtype=np.int64)
    expected = sorted({i for i, g in enumerate(grams) if g in set(needles.tolist())})
    assert positions_of(doc[order], order, needles).tolist() == expected


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 40), min_size=0, max_size=300),
    st.lists(st.lists(st.integers(0, 60), max_size=40), min_size=1, max_size=4),
)
def test_a_document_finds_grams_alike_by_scan_and_by_its_sorted_index(tokens: list[int], asks: list[list[int]]) -> None:
    """DocTokens.positions scans the document on its first look and sorts its n-grams for the
    next ones (most candidate documents are asked once): every look gives where any of the
    grams stands, ascending, as the sorted index always did; the size a cache counts is the same
    before and after the index is made."""
    from contam.app.core.matching import DocTokens

    doc = DocTokens.of(np.array(tokens, dtype=np.int64) * 7919, 3)  # few distinct tokens: grams repeat
    size = doc.nbytes
    for ask in [*asks, *asks]:
        grams = DocTokens.of(np.array(ask, dtype=np.int64) * 7919, 3).grams  # some the document holds, some not
        expected = sorted({i for i, g in enumerate(doc.grams.tolist()) if g in set(grams.tolist())})
        assert doc.positions(grams).tolist() == expected
        assert doc.nbytes == size
    assert doc._looks == 2 * len(asks) and "_gram_index" in doc.__dict__


def _python_votes(
    postings: dict[int, list[int]],
    exact: tuple[list[int], list[int], list[bool]],
    short: tuple[list[int], list[int], list[bool], list[bool], list[int]],
    passage: list[int],
) -> tuple[dict[int, float], dict[int, float], dict[int, int]]:
    """The scanner's vote loop as it was written in Python (session 24): the reference."""
    votes: dict[int, float] = {}
    asked: dict[int, float] = {}
    hits: dict[int, int] = {}
    seen: set[int] = set()
    short_at: dict[int, dict[int, bool]] = {}
    for channel, (grams, pos, freq, in_q, own) in enumerate(
        (
            (exact[0], [0] * len(exact[0]), exact[1], exact[2], [False] * len(exact[0])),
            (short[0], short[4], short[1], short[2], short[3]),
        )
    ):
        for h, at, f, q, o in zip(grams, pos, freq, in_q, own, strict=True):
            if h in seen:
                continue
            seen.add(h)
            for d in postings.get(h, ()):
                votes[d] = votes.get(d, 0.0) + 1.0 / max(f, 1)
                hits.setdefault(d, 0)
                if not channel:
                    hits[d] += 1
                else:
                    short_at.setdefault(d, {})[at] = o
                if q:
                    asked[d] = asked.get(d, 0.0) + 1.0 / max(f, 1)
    for d, at in short_at.items():
        pair = any(0 < b - a <= _native.SHORT_PAIR_GAP and (o or ob) for a, o in at.items() for b, ob in at.items())
        hits[d] += 2 if pair else min(1, sum(at.values()))
    for h in set(passage) - set(exact[0]):
        for d in postings.get(h, ()):
            votes[d] = votes.get(d, 0.0) + 0.01
            hits[d] = hits.get(d, 0) + 1
    return votes, asked, hits


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.integers(0, 40), st.lists(st.integers(0, 12), max_size=6), max_size=30),
    st.lists(st.tuples(st.integers(0, 50), st.integers(0, 4), st.booleans()), max_size=40),
    st.lists(st.tuples(st.integers(0, 50), st.integers(0, 4), st.booleans(), st.booleans()), max_size=30),
    st.lists(st.integers(0, 50), max_size=20),
)
def test_candidate_votes_are_the_python_loops(
    table: dict[int, list[int]],
    exact: list[tuple[int, int, bool]],
    short: list[tuple[int, int, bool, bool]],
    passage: list[int],
) -> None:
    # every vote the same double (added in the same order), the same hits, the same documents;
    # grams repeated within and across channels, absent grams, documents listed twice for a key
    postings = {k: sorted(v) for k, v in table.items() if v}
    keys = sorted(postings)
    flat = [(k, d) for k in keys for d in postings[k]]
    built = Postings.of(np.array([k for k, _d in flat], dtype=np.int64), np.array([d for _k, d in flat]))
    assert built.as_dict() == postings
    positions = list(range(len(short)))  # distinct, as an item's gram positions are
    ex = ([g for g, _f, _q in exact], [f for _g, f, _q in exact], [q for _g, _f, q in exact])
    sh = ([g for g, *_ in short], [f for _g, f, *_ in short], [q for *_, q, _o in short], [o for *_, o in short])
    votes, asked, hits = _python_votes(postings, ex, (*sh, positions), passage)
    got = candidate_votes(
        built,
        (np.array(ex[0], dtype=np.int64), np.array(ex[1], dtype=np.int64), np.array(ex[2], dtype=bool)),
        (
            np.array(sh[0], dtype=np.int64),
            np.array(sh[1], dtype=np.int64),
            np.array(sh[2], dtype=bool),
            np.array(sh[3], dtype=bool),
            np.array(positions, dtype=np.int64),
        ),
        np.setdiff1d(np.array(passage, dtype=np.int64), np.array(ex[0], dtype=np.int64)),
    )
    docs = got.docs.tolist()
    assert sorted(docs) == sorted(votes) and len(set(docs)) == len(docs)
    assert dict(zip(docs, got.votes.tolist(), strict=True)) == votes
    assert dict(zip(docs, got.hits.tolist(), strict=True)) == hits
    with_q = got.has_asked
    assert dict(zip(got.docs[with_q].tolist(), got.asked[with_q].tolist(), strict=True)) == asked


def test_candidate_votes_refuse_postings_that_do_not_fit() -> None:
    empty = np.zeros(0, dtype=np.int64)
    exact = (np.array([5], dtype=np.int64), np.array([1], dtype=np.int64), np.array([True]))
    short = (empty, empty, np.zeros(0, bool), np.zeros(0, bool), empty)
    broken = Postings(np.array([5], dtype=np.int64), np.array([0, 3], dtype=np.int64), np.array([1], dtype=np.int64))
    with pytest.raises(ValueError, match="start per key"):
        candidate_votes(broken, exact, short, empty)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.integers(0, 30), st.lists(st.integers(0, 9), min_size=1, max_size=6), max_size=20),
    st.lists(st.integers(0, 40), max_size=40),
    st.integers(0, 4),
)
def test_the_k_most_held_are_told_apart_from_those_tied_for_the_last_places(
    table: dict[int, list[int]], keys: list[int], k: int
) -> None:
    # each key as often as it is given (the scanner's windows repeat band keys), absent keys
    # nothing; the most first, and the values tied for the places left given apart, for the
    # scanner to order by what the documents are (scanning.content_key), not by id
    keys_sorted = sorted(table)
    flat = [(key, v) for key in keys_sorted for v in sorted(table[key])]
    postings = Postings.of(np.array([a for a, _v in flat], dtype=np.int64), np.array([v for _a, v in flat]))
    near: dict[int, int] = {}
    for key in keys:
        for v in table.get(key, ()):
            near[v] = near.get(v, 0) + 1
    values, counts = held_counts(postings, np.array(keys, dtype=np.int64))
    assert dict(zip(values.tolist(), counts.tolist(), strict=True)) == near
    sure, tied = top_k(values, counts, k)
    ranked = sorted(near.items(), key=lambda x: (-x[1], x[0]))
    if len(ranked) <= k:
        assert (sure.tolist(), tied.tolist()) == ([v for v, _n in ranked], [])
        return
    cut = ranked[k - 1][1] if k else None
    assert sure.tolist() == [v for v, n in ranked if k and n > cut]
    assert tied.tolist() == sorted(v for v, n in ranked if k and n == cut)
    assert len(sure) < k or k == 0  # a place is left for a tied value
