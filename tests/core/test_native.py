"""The compiled signing loops (native/native.c) against their definitions: the tokeniser against
strip_markup, _TOKEN and _norm (the regular expressions and Python's unicodedata), token hashes
against the xxhash library, and the n-gram roll, MinHash, band keys and the postings' sort against
plain Python and numpy written from signatures.py's docstring. Random texts mix ASCII, markup,
CJK, other scripts, lone surrogates and very long runs."""

from __future__ import annotations

import sys
import threading
from functools import reduce
from typing import Any

import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from contam.app.core import _native
from contam.app.core import signatures as S
from contam.app.core import text as T
from contam.app.core.arrays import stable_order
from contam.app.core.config import SignatureConfig
from contam.app.core.text import tokenize, tokenize_spans
from contam.indexer.signing import sign_batch

M64 = (1 << 64) - 1
P = 0x9E3779B97F4A7C15


def _by_regex(text: str) -> tuple[list[str], list[int], list[int]]:
    found = list(T._TOKEN.finditer(T.strip_markup(text)))
    return [T._norm(m.group()) for m in found], [m.start() for m in found], [m.end() for m in found]


def _xxh(tokens: list[str]) -> list[int]:
    return [xxhash.xxh3_64_intdigest(t.encode("utf-8", "surrogatepass")) for t in tokens]


# Markup, near-markup and what its rules turn on: whitespace (\s, Unicode's), entities of each
# kind and length, comments closed and not, tags with and without attributes.
# fmt: off
_PIECES = st.sampled_from(
    [
        "<p>", "</b>", "<br/>", "<br />", "<a href='x'>", "<x-y:z>", "<p\u00a0class=x>", "<p\u2003>", "< p>",
        "<1>", "</>", "<p/ >", "<!--", "-->", "<!-- a -->", "<!--->", "<!---->", "&nbsp;", "&amp", "&#123;",
        # attributes: names, values quoted both ways and bare, spaces around "=", and what no tag holds
        "<a b=c>", "<a b = 'c d'>", '<a b="c>d">', '<a b="c<d">', "<a b=>", "<a b c>", '<a b="c"d>', "<a @e=f :g>",
        "<a b='", '"', "'", "=", " ", "<a b=c/>", "<if a<b", "x>0", "<p\n", "`", "<x y? z>", "<U as T>", "<a b>",
        "<a b c d=e>", "<a b c/>", "<a href=i.php?p=2>", "<a b=c=d>", "<a b==c>", "<a b= =c>",
        "&#12345678;", "&#x1F;", "&#x;", "&#X1234567;", "&a;", "&ab;", "&" + "a" * 32 + ";", "&" + "b" * 33 + ";",
        "<", ">", "&", ";", "#", "\ud800", "\udfff", "_", "Ǆ", "ǅ", "İ", "ß", "ﬁ", "Ⅻ", "½", "²", "٣",
        # marks, ignorables and line-break hyphens, and what they must not join
        "\u0301", "\u0308\u0301", "\u093f", "\u05b8", "\u3099", "\uff9e", "\uff76", "\u00ad", "\u200b", "\u200d",
        "\ufe0f", "\u2060", "\U000e0020", "\u3164", "-\n", "-\r\n", "- \n  ", "-\n\n", "\u2010\n", "\u00ad\n",
        "-<br>\n", "-\n<b>", "-\r", "\t", "-", "7-\n", "-\n7", "-\n_",
    ]
)
# fmt: on
_CHARS = st.one_of(
    st.sampled_from(
        "aZ09_ -.,\n\té中ｆｕ\u30fb\u3041\U00020001\U0001f600\u0663\u00b2ÀÉ\u0301ㄱ가\u1100\u1161"
        "\u00ad\u200b\u3099\uff9e\uff76\u093f\u2010\r\U0001d173\U000e0100\U00011000\U00011038"
    ),
    st.characters(codec="utf-8"),
    st.characters(max_codepoint=127),
)
_TEXTS = st.lists(st.one_of(_PIECES, st.text(_CHARS, max_size=12)), max_size=30).map("".join)
_ASCII = st.lists(
    st.one_of(_PIECES.filter(str.isascii), st.text(st.characters(max_codepoint=127), max_size=12)), max_size=30
).map("".join)


@settings(max_examples=600, deadline=None)
@given(st.one_of(_TEXTS, _ASCII))
def test_tokens_and_spans_equal_the_definition(text: str) -> None:
    tokens, starts, ends = _by_regex(text)
    assert tokenize(text) == tokens
    got = tokenize_spans(text)
    assert (got.tokens, got.starts.tolist(), got.ends.tolist()) == (tokens, starts, ends)
    assert got.starts.dtype == got.ends.dtype == np.int64


@settings(max_examples=600, deadline=None)
@given(st.one_of(_TEXTS, _ASCII))
def test_token_hash_spans_are_the_hashes_and_spans_of_the_tokens(text: str) -> None:
    tokens, starts, ends = _by_regex(text)
    th, got_starts, got_ends = S.token_hash_spans(text)
    assert (th.tolist(), got_starts.tolist(), got_ends.tolist()) == (_xxh(tokens), starts, ends)
    assert th.dtype == np.uint64 and got_starts.dtype == got_ends.dtype == np.int64


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_TEXTS, _ASCII), max_size=6))
def test_text_token_hashes_are_the_hashes_of_the_tokens(texts: list[str]) -> None:
    th, lens = S.text_token_hashes(texts)
    expected = [_xxh(_by_regex(t)[0]) for t in texts]
    assert lens.tolist() == [len(e) for e in expected]
    assert th.tolist() == [h for e in expected for h in e]
    assert th.dtype == np.uint64 and lens.dtype == np.int64


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.one_of(_CHARS, st.sampled_from("\ud800\udbff\udc00")), max_size=20), max_size=20))
def test_token_hashes_are_xxh3_of_utf8_with_surrogates(tokens: list[str]) -> None:
    assert S.token_hashes(tokens).tolist() == _xxh(tokens)
    assert S.token_hashes(tuple(tokens)).tolist() == _xxh(tokens)


def test_long_and_empty_inputs() -> None:
    attr = "x" * 399
    texts = [
        "",
        " ",
        "<" * 10_000,
        "<!--" * 5_000 + "a",  # many unclosed comments: each fails without searching again
        "a" * 100_000,  # one token as long as the text
        "é" * 50_000,
        '<p a="'
        + attr
        + 'y">in</p> <p a="'
        + attr
        + 'yz">out</p> <p a='
        + attr
        + "y>in2</p> <p a="
        + attr
        + "yz>out2</p>",
        "<p " + "a=b " * 64 + ">in</p> <p " + "a=b " * 65 + ">out</p>",  # at most 64 attributes
        "<a b=c " * 50_000 + "d",  # many tags never closed: each ends at the next "<"
        "<p\n" + "a&b " * 200 + ">x",
        ("Ünïcödé café 東京 " * 2_000) + ("The quick brown fox " * 2_000),
    ]
    for t in texts:
        tokens, starts, ends = _by_regex(t)
        got = tokenize_spans(t)
        assert (tokenize(t), got.tokens, got.starts.tolist(), got.ends.tolist()) == (tokens, tokens, starts, ends)
        th, got_starts, got_ends = S.token_hash_spans(t)
        assert (th.tolist(), got_starts.tolist(), got_ends.tolist()) == (_xxh(tokens), starts, ends)
    th, lens = S.text_token_hashes(texts)
    assert th.tolist() == [h for t in texts for h in _xxh(_by_regex(t)[0])]
    assert S.token_hashes([]).tolist() == [] and S.text_token_hashes([])[0].tolist() == []


def test_every_code_point_is_classified_as_the_regex_does() -> None:
    """Each character alone between spaces: a token of its own exactly where _TOKEN says so
    (letters and digits of every script, CJK one a token, "_" and marks separate)."""
    text = " ".join(chr(c) for c in range(sys.maxunicode + 1) if c not in (ord("<"), ord("&")))
    tokens, starts, ends = _by_regex(text)
    got = tokenize_spans(text)
    assert len(tokens) > 100_000
    assert got.starts.tolist() == starts and got.ends.tolist() == ends
    assert got.tokens == tokens


def test_the_normaliser_cache_emptied_when_full_gives_the_same_tokens() -> None:
    words = [f"é{i}ü" for i in range(500)] + ["東", "京"] * 50
    text = " ".join(words * 3)
    expected = _by_regex(text)[0]
    T.install_normaliser(7)  # emptied many times over within one text
    try:
        assert tokenize(text) == expected
        assert S.text_token_hashes([text])[0].tolist() == _xxh(expected)
    finally:
        T.install_normaliser()
    assert tokenize(text) == expected


def test_threads_tokenising_at_once_get_their_own_tokens() -> None:
    """The normaliser is Python code, so threads take turns inside the tokeniser."""
    texts = [" ".join(f"wörd{t}x{i} Ä{i % 7}" for i in range(3_000)) for t in range(4)]
    expected = [_by_regex(t)[0] for t in texts]
    T.install_normaliser()  # a cold cache: every word calls back
    got: dict[int, list[list[str]]] = {}

    def run(k: int) -> None:
        got[k] = [tokenize(texts[k]) for _ in range(3)]

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert all(got[k] == [expected[k]] * 3 for k in range(4))


def test_type_errors() -> None:
    with pytest.raises(TypeError):
        S.token_hashes(["a", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        tokenize(b"abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        S.token_hash_spans(b"abc")  # type: ignore[arg-type]


# ---------------------------------------------------------------- the numeric loops


def _fmix64(h: int) -> int:
    h ^= h >> 33
    h = h * 0xFF51AFD7ED558CCD & M64
    h ^= h >> 33
    h = h * 0xC4CEB9FE1A85EC53 & M64
    return h ^ (h >> 33)


def _fmix32(h: int) -> int:
    h ^= h >> 16
    h = h * 0x85EBCA6B & 0xFFFFFFFF
    h ^= h >> 13
    h = h * 0xC2B2AE35 & 0xFFFFFFFF
    return h ^ (h >> 16)


def _roll(th: list[int], n: int) -> list[int]:
    return [
        _fmix64(reduce(lambda acc, t: (acc * P + t) & M64, th[i + 1 : i + n], th[i])) for i in range(len(th) - n + 1)
    ]


_HASHES = st.lists(st.integers(0, M64), max_size=80)


@settings(max_examples=200, deadline=None)
@given(_HASHES, st.integers(1, 9))
def test_rolling_hashes_equal_the_polynomial(th: list[int], n: int) -> None:
    got = S.rolling_hashes(np.array(th, dtype=np.uint64), n)
    assert got.dtype == np.uint64 and got.tolist() == _roll(th, n)


def _minhash(th: list[int], cfg: SignatureConfig, starts: list[int], ends: list[int]) -> list[list[int]]:
    a, b = (x.ravel().tolist() for x in S.permutations(cfg.num_perm, cfg.seed))
    mixed = [_fmix32(h & 0xFFFFFFFF) for h in _roll(th, cfg.shingle)]
    return [
        [min((ai * mixed[i] + bi) & 0xFFFFFFFF for i in range(s, e)) for ai, bi in zip(a, b, strict=True)]
        for s, e in zip(starts, ends, strict=True)
    ]


@settings(max_examples=60, deadline=None)
@given(_HASHES, st.integers(1, 4), st.integers(1, 20), st.data())
def test_window_minhashes_and_band_keys_equal_their_definitions(
    th: list[int], shingle: int, width: int, data: st.DataObject
) -> None:
    cfg = SignatureConfig(shingle=shingle, window=max(width, shingle), stride=1, num_perm=8, bands=4, seed=3)
    m = len(th) - shingle + 1
    spans = data.draw(st.lists(st.tuples(st.integers(0, m), st.integers(1, width)), max_size=6)) if m > 0 else []
    starts = [s for s, _ in spans if s < m]
    ends = [min(s + w, m) for s, w in spans if s < m]
    arr = np.array(th, dtype=np.uint64)
    sigs = S.window_minhashes(arr, cfg, np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64))
    assert sigs.dtype == np.uint32 and sigs.shape == (len(starts), cfg.num_perm)
    assert sigs.tolist() == _minhash(th, cfg, starts, ends)
    keys = S.band_keys(sigs, cfg)
    expected = [
        [
            _fmix64(
                reduce(lambda acc, v: (acc * P + v) & M64, row[k * cfg.rows : (k + 1) * cfg.rows], (k + 1) * P & M64)
            )
            for k in range(cfg.bands)
        ]
        for row in sigs.tolist()
    ]
    assert keys.dtype == np.int64 and keys.view(np.uint64).tolist() == expected


def test_a_window_outside_the_shingles_is_refused() -> None:
    cfg = SignatureConfig()
    th = np.arange(10, dtype=np.uint64)
    with pytest.raises(ValueError, match="window 0"):
        S.window_minhashes(th, cfg, np.array([0]), np.array([9]))  # 8 shingles of 3 tokens
    with pytest.raises(ValueError, match="window 0"):
        S.window_minhashes(th, cfg, np.array([2]), np.array([2]))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=12), st.integers(1, 6), st.integers(1, 4))
def test_sign_hashes_is_each_texts_own_grams_and_windows(lens: list[int], n: int, stride_part: int) -> None:
    cfg = SignatureConfig(ngram_n=n + 3, window=8, stride=min(8, stride_part * 2), shingle=3)
    rng = np.random.default_rng(sum(lens))
    th = rng.integers(0, 2**63, sum(lens), dtype=np.int64).view(np.uint64)
    many = S.sign_hashes(th, np.array(lens, dtype=np.int64), cfg)
    offs = np.cumsum([0, *lens])
    for i, k in enumerate(lens):
        starts = S.window_starts(k, cfg)
        assert many.win_index[many.win_text == i].tolist() == list(range(len(starts)))
        own = th[offs[i] : offs[i + 1]]
        grams = np.concatenate([S.rolling_hashes(own, g) for g in S.channels(cfg)]).view(np.int64)
        assert many.ngrams[many.ng_text == i].tolist() == grams.tolist()
        assert many.bands[many.win_text == i].tolist() == S.band_keys(S.window_minhashes(own, cfg), cfg).tolist()


# ---------------------------------------------------------------- the postings' sort


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3000), st.sampled_from([2, 50, 2**62]), st.integers(0, 2**32))
def test_sort_rows_equal_a_stable_sort_and_its_repeats_dropped(n: int, spread: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    keys = rng.integers(-spread, spread, n, dtype=np.int64)
    if n and spread == 2**62:
        keys[rng.integers(0, n, n // 3)] = keys[0]  # one key many times among distinct ones
    docs = np.sort(rng.integers(0, 40, n)).astype(np.int32)  # rows in (document, window) order
    wins = np.zeros(n, dtype=np.int32)
    for d in np.unique(docs):
        wins[docs == d] = np.arange((docs == d).sum()) // 3
    order = np.argsort(keys, kind="stable")
    assert stable_order(keys).tolist() == order.tolist()
    k, d, w = (
        np.frombuffer(c, dtype=t)
        for c, t in zip(_native.sort_rows(keys, docs, wins, False), ["<i8", "<i4", "<i4"], strict=True)
    )
    assert (k.tolist(), d.tolist(), w.tolist()) == (keys[order].tolist(), docs[order].tolist(), wins[order].tolist())
    kd, dd, none = _native.sort_rows(keys, docs, None, True)
    pairs = sorted(set(zip(keys.tolist(), docs.tolist(), strict=True)))
    assert none is None
    assert list(zip(np.frombuffer(kd, np.int64).tolist(), np.frombuffer(dd, np.int32).tolist(), strict=True)) == pairs


def test_sign_batch_of_texts_with_markup_and_scripts_is_sign_text_of_their_tokens() -> None:
    cfg = SignatureConfig(window=16, stride=8)
    texts = [
        "<p>The <b>quick</b> brown&nbsp;fox</p> " * 9,
        "Ünïcödé café 東京タワー naïve ﬁnancial " * 7,
        "",
        "x_1 + y_2 " * 30,
    ]
    sb = sign_batch(texts, cfg, store_text=False)
    grams = sorted({(int(h), i) for i, t in enumerate(texts) for h in S.sign_text(tokenize(t), cfg).ngrams})
    assert list(zip(sb.ng_hash.tolist(), sb.ng_doc.tolist(), strict=True)) == grams
    bands = sorted(
        (int(k), i, w)
        for i, t in enumerate(texts)
        for w, row in enumerate(S.sign_text(tokenize(t), cfg).bands)
        for k in row
    )
    assert list(zip(sb.band_key.tolist(), sb.band_doc.tolist(), sb.band_win.tolist(), strict=True)) == bands
    dtypes = (sb.ng_hash.dtype, sb.ng_doc.dtype, sb.band_key.dtype, sb.band_doc.dtype, sb.band_win.dtype)
    assert dtypes == (np.int64, np.int32, np.int64, np.int32, np.int32)


def _other_thread_runs_during(fn: Any, *args: Any) -> int:
    """How many times another Python thread went round its loop while fn(*args) ran."""
    stop = threading.Event()
    count = [0]

    def spin() -> None:
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        while count[0] < 10:  # it has started and holds the GIL at times
            pass
        before = count[0]
        fn(*args)
        during = count[0] - before
    finally:
        stop.set()
        t.join()
    return during


def _long_calls() -> dict[str, tuple[Any, ...]]:
    rng = np.random.default_rng(0)
    keys = np.sort(rng.integers(-(2**63), 2**63 - 1, 6_000_000, dtype=np.int64))
    docs = np.zeros(len(keys), dtype=np.int32)
    half = len(keys) // 2
    th = keys.view(np.uint64)
    return {
        "sort_rows": (_native.sort_rows, keys[::-1].copy(), docs, None, True),
        "merge_runs": (_native.merge_runs, [(keys[:half], docs[:half]), (keys[half:], docs[half:])]),
        "copy_blocks": (_native.copy_blocks, 1, [keys, docs], 48),
        "filter_add": (_native.filter_add, bytearray(32 * (len(keys) // 16)), keys),
        "ngrams": (_native.ngrams, th, np.array([len(th)], dtype=np.int64), 5, 1),
        "minhash": (
            _native.minhash,
            th[:400_000],
            5,
            np.arange(1, 257, 2, dtype=np.uint32),
            np.arange(128, dtype=np.uint32),
            np.arange(0, 399_000, 100, dtype=np.int64),
            np.arange(100, 399_100, 100, dtype=np.int64),
        ),
        "band_keys": (_native.band_keys, rng.integers(0, 2**32, 4_000_000 * 8, dtype=np.uint32), 16, 8),
    }


def test_the_long_loops_let_other_threads_run() -> None:
    """A Ray worker signs on its main thread while its writer thread merges, lays out and copies
    postings (and the local executor's main process reads files while its writer does): the C
    loops on buffers release the GIL, so those threads run side by side. Holding it, the other
    thread would not go round once while such a call (some 10-200 ms here) ran."""
    calls = _long_calls()
    # the best of three: on a machine busy with other processes the spinning thread may get no
    # core during one call (it failed so once, a CI run beside); holding the GIL, it gets none in any
    went = {name: max(_other_thread_runs_during(*call) for _ in range(3)) for name, call in calls.items()}
    assert all(n > 100 for n in went.values()), went


def _rapidfuzz_align(
    item: list[int], region: list[int], whole: list[bool] | None, min_block: int, starts: set[int]
) -> list[tuple[int, int, int]]:
    """align()'s blocks as align.py computed them before _native.align: rapidfuzz's LCS matching
    blocks, those min_block long or a one-token field kept, each grown over the equal tokens beside
    it up to its neighbours, never across a field start."""
    from rapidfuzz.distance import LCSseq

    kept = [
        [b.a, b.b, b.size]
        for b in LCSseq.opcodes(item, region).as_matching_blocks()
        if b.size >= min_block or (b.size == 1 and whole is not None and whole[b.a])
    ]
    for k, blk in enumerate(kept):
        a, b, size = blk
        floor_a, floor_b = (kept[k - 1][0] + kept[k - 1][2], kept[k - 1][1] + kept[k - 1][2]) if k else (0, 0)
        while a > floor_a and b > floor_b and a not in starts and item[a - 1] == region[b - 1]:
            a, b, size = a - 1, b - 1, size + 1
        ceil_a, ceil_b = (kept[k + 1][0], kept[k + 1][1]) if k + 1 < len(kept) else (len(item), len(region))
        while a + size < ceil_a and b + size < ceil_b and a + size not in starts and item[a + size] == region[b + size]:
            size += 1
        blk[:] = [a, b, size]
    for k in range(len(kept) - 1):  # item-adjacent blocks apart in the region, moved together
        (xa, xb, xs), (ya, yb, ys) = kept[k], kept[k + 1]
        if xa + xs != ya or xb + xs >= yb:
            continue
        x_free = not (k and kept[k - 1][0] + kept[k - 1][2] == xa and kept[k - 1][1] + kept[k - 1][2] == xb)
        y_free = not (k + 2 < len(kept) and ya + ys == kept[k + 2][0] and yb + ys == kept[k + 2][1])
        x_fits = x_free and item[xa : xa + xs] == region[yb - xs : yb]
        y_fits = y_free and item[ya : ya + ys] == region[xb + xs : xb + xs + ys]
        if x_fits and (xs <= ys or not y_fits):
            kept[k][1] = yb - xs
        elif y_fits:
            kept[k + 1][1] = xb + xs
    return [(a, b, size) for a, b, size in kept]


@settings(max_examples=400, deadline=None)
@given(
    st.integers(1, 6),  # alphabet: few symbols make many equal-length subsequences (ties)
    st.lists(st.integers(0, 5), max_size=150),
    st.lists(st.integers(0, 5), max_size=400),
    st.lists(st.booleans(), max_size=150),
    st.sets(st.integers(0, 149), max_size=4),
    st.integers(1, 3),
    st.integers(-1, 300),
)
def test_the_c_aligner_gives_rapidfuzz_lcs_blocks(
    alphabet: int,
    a: list[int],
    b: list[int],
    whole_bits: list[bool],
    starts: set[int],
    min_block: int,
    plant: int,
) -> None:
    """_native.align is the LCS rapidfuzz's LCSseq.opcodes finds (of the equal-length
    subsequences, the same one), cut, kept and grown as align.py did with it in Python: a scan's
    statuses and evidence are the same with either. Items over 64 tokens take several machine
    words a row; ids are any 64-bit values, signed."""
    salt = [(P * (v + 1)) & M64 for v in range(6)]
    item = [salt[v % alphabet] - (1 << 63) for v in a]
    region = [salt[v % alphabet] - (1 << 63) for v in b]
    if 0 <= plant <= len(region) and item:  # a copy of the item's tail inside the region
        region = region[:plant] + item[plant % len(item) :] + region[plant:]
    whole = [whole_bits[i] if i < len(whole_bits) else False for i in range(len(item))]
    field_starts = {s for s in starts if s < len(item)}
    mask = np.zeros(len(item), dtype=bool)
    mask[list(field_starts)] = True
    use_whole = bool(whole_bits)
    matched, doc_pos, blocks = _native.align(
        np.array(item, dtype=np.int64),
        np.array(region, dtype=np.int64),
        np.array(whole, dtype=bool) if use_whole else None,
        mask if field_starts else None,
        min_block,
    )
    want = _rapidfuzz_align(item, region, whole if use_whole else None, min_block, field_starts)
    assert blocks == want
    want_matched = np.zeros(len(item), dtype=bool)
    want_pos = np.full(len(item), -1, dtype=np.int64)
    for s, t, size in want:
        want_matched[s : s + size] = True
        want_pos[s : s + size] = np.arange(t, t + size)
    assert np.array_equal(np.frombuffer(matched, dtype=bool), want_matched)
    assert np.array_equal(np.frombuffer(doc_pos, dtype=np.int64), want_pos)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.booleans(), max_size=80), st.integers(1, 6), st.integers(0, 90))
def test_covered_is_the_convolution_it_replaced(mask: list[bool], n: int, length: int) -> None:
    """align.covered (in C) marks the tokens inside an n-gram that starts where the mask is set,
    as the convolution with ones it replaced did, for every length its callers give (the tokens
    the grams span, or fewer), and with nothing set past the mask's grams."""
    from contam.app.core.align import covered

    m = np.array(mask, dtype=bool)
    length = min(length, len(m) + n - 1) if len(m) else length
    got = covered(m, n, length)
    want = (
        np.convolve(m.astype(np.int32), np.ones(n, dtype=np.int32))[:length] > 0
        if len(m) and length
        else np.zeros(length, dtype=bool)
    )
    assert got.dtype == bool and np.array_equal(got, want)


def test_the_c_aligner_on_long_items_and_wide_alphabets() -> None:
    """Items of several machine words (64 to 700 tokens, lengths on a word's boundary among
    them), regions to 2,500 tokens and alphabets from 2 symbols to thousands (the hash table of
    the item's distinct ids, nearly one per token as in prose), against rapidfuzz's blocks."""
    rng = np.random.default_rng(22)
    for case in range(60):
        n = int(rng.choice([64, 128, 192, int(rng.integers(65, 700))]))
        alphabet = int(rng.choice([2, 5, 50, 5000]))
        values = rng.integers(-(2**63), 2**63 - 1, alphabet, dtype=np.int64)
        item = values[rng.integers(0, alphabet, n)]
        region = values[rng.integers(0, alphabet, int(rng.integers(1, 2500)))]
        if case % 2:  # an edited copy of the item inside the region
            copy = item.copy()
            copy[rng.integers(0, n, n // 10)] = values[rng.integers(0, alphabet, n // 10)]
            at = int(rng.integers(0, len(region) + 1))
            region = np.concatenate([region[:at], copy, region[at:]])
        _matched, _pos, blocks = _native.align(item, region, None, None, 2)
        assert blocks == _rapidfuzz_align(item.tolist(), region.tolist(), None, 2, set()), case


def _numpy_breaks(
    starts: np.ndarray,
    ids: np.ndarray,
    sel: np.ndarray,
    matched: np.ndarray,
    doc_pos: np.ndarray,
    region_ids: np.ndarray,
    piece: float,
) -> float:
    """matching.breaks as it was written in numpy before _native.breaks (its docstring's rule)."""
    import math

    from contam.app.core.align import find_sequence

    idx = np.flatnonzero(sel & matched)
    if len(idx) < 2:
        return 0.0
    field = np.searchsorted(starts, idx, side="right")
    offset = doc_pos[idx] - idx
    missing = np.cumsum(~matched)[idx]
    same_field = field[1:] == field[:-1]
    cuts = np.flatnonzero(~same_field | (np.diff(offset) != 0) | (np.diff(missing) != 0)) + 1
    bounds = [0, *cuts.tolist(), len(idx)]
    cost, first = 0.0, int(idx[0])
    for k in range(1, len(bounds) - 1):
        c, end = bounds[k], int(idx[bounds[k + 1] - 1])
        if not same_field[c - 1]:
            first = int(idx[c])
        elif find_sequence(region_ids, ids[first : end + 1]) >= 0:
            continue
        else:
            a, b = int(idx[c - 1]), int(idx[c])
            gap = (b - a - 1) + (int(doc_pos[b]) - int(doc_pos[a]) - 1)
            cost += min(piece, 1.0 + math.log2(1 + gap)) if gap >= 0 else piece
            first = b
    return cost


@settings(max_examples=500, deadline=None)
@given(st.data())
def test_breaks_in_c_is_the_numpy_rule(data: st.DataObject) -> None:
    """_native.breaks gives matching.breaks' bits exactly (the same pieces, the same float sum):
    pieces cut where the field, the offset or a missing token changes, joined when the region
    holds the text between them in one run, each resumption costing 1 + log2(1 + gap) bits or
    `piece`, whichever is less; a piece placed before the last costs `piece`."""
    n = data.draw(st.integers(0, 40))
    ids = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=np.int64)
    matched = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    sel = matched & np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    steps = data.draw(st.lists(st.integers(-3, 4), min_size=n, max_size=n))
    doc_pos = np.full(n, -1, dtype=np.int64)
    at = data.draw(st.integers(0, 10))
    for i in range(n):  # where the region holds each matched token: mostly in order, some jumps back
        at = max(0, at + steps[i])
        if matched[i]:
            doc_pos[i] = at
    starts = np.array(sorted({0, *data.draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=3))}), dtype=np.int64)
    region = np.array(data.draw(st.lists(st.integers(0, 3), max_size=60)), dtype=np.int64)
    if n and data.draw(st.booleans()):  # a stretch of the item in the region
        s = data.draw(st.integers(0, n - 1))
        region = np.concatenate([region, ids[s : s + data.draw(st.integers(1, n))]])
    piece = data.draw(st.floats(1.0, 12.0))
    want = _numpy_breaks(starts, ids, sel, matched, doc_pos, region, piece)
    got = _native.breaks(sel, matched, doc_pos, starts, ids, region, piece)
    assert got == want
