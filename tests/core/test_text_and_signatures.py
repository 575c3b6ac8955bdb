import re

import numpy as np
import pytest
from datasketch import MinHash, MinHashLSH
from hypothesis import given, settings
from hypothesis import strategies as st

from contam.app.core import signatures as S
from contam.app.core import text as T
from contam.app.core.config import SignatureConfig
from contam.app.core.text import HAN_PER_WORD, KANA_PER_WORD, tokenize, tokenize_spans, words_in
from contam.app.errors import ConfigError

CASES = [
    # (text, expected tokens, why)
    ("The quick, brown FOX!", ["the", "quick", "brown", "fox"], "case and punctuation dropped"),
    ("<p>What <b>is</b> 2&nbsp;+&nbsp;2?</p>", ["what", "is", "2", "2"], "tags and entities vanish"),
    ("**What** is `x`?", ["what", "is", "x"], "markdown punctuation vanishes"),
    ("ｆｕｌｌｗｉｄｔｈ ﬁne", ["fullwidth", "fine"], "NFKC folds width and ligatures"),
    ("STRASSE straße", ["strasse", "strasse"], "casefold, not lower"),
    ("机器学习很有趣", ["机", "器", "学", "习", "很", "有", "趣"], "CJK ideographs one token each"),
    ("def f(x):\n        return   x_1", ["def", "f", "x", "return", "x", "1"], "indentation and _ ignored"),
    ("cafe\u0301 nai\u0308ve", ["caf\u00e9", "na\u00efve"], "an accent written apart (NFD) is the NFC letter's"),
    (
        "\u0939\u093f\u0928\u094d\u0926\u0940",
        ["\u0939\u093f\u0928\u094d\u0926\u0940"],
        "Devanagari vowel signs stay in the word",
    ),
    (
        "\u05e9\u05c1\u05b8\u05dc\u05d5\u05b9\u05dd",
        ["\u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd"],
        "Hebrew points stay in the word (NFKC's order)",
    ),
    ("\u30ab\u3099\u30af", ["\u30ac", "\u30af"], "a kana's voiced mark written apart"),
    ("\uff76\uff9e\uff78", ["\u30ac", "\u30af"], "half-width kana: one token each, as full-width"),
    ("in\u00adter\u200bnational\u200d", ["international"], "soft hyphen and zero-width characters join"),
    ("interna-\n    tionally recog-\r\nnized", ["internationally", "recognized"], "a word broken at a line end"),
    ("well-known, well- known", ["well", "known", "well", "known"], "a hyphen without a line break parts"),
    ("x -\ny \u0301z", ["x", "y", "z"], "no letter before the hyphen; a mark after no letter"),
    ("D-\n  0.0 1990-\n1995", ["d", "0", "0", "1990", "1995"], "digits on either side of the break stay apart"),
    ("1\ufe0f\u20e3 and A\u20dd", ["1", "and", "a"], "an enclosing mark (a keycap, a circle) decorates"),
]


@pytest.mark.parametrize(("text", "expected", "why"), CASES)
def test_tokenize(text: str, expected: list[str], why: str) -> None:
    assert tokenize(text) == expected, why
    spans = tokenize_spans(text)
    assert spans.tokens == expected, why
    # offsets point into the original text
    for tok, s, e in zip(spans.tokens, spans.starts, spans.ends, strict=True):
        assert tokenize(text[s:e]) == [tok]


def test_the_tables_are_unicodes_marks_and_disjoint() -> None:
    """unicode_ranges.MARKS is general category M (less the ignorables) of this Python's Unicode,
    and the tokeniser's CJK, mark and ignorable classes share no character."""
    import unicodedata

    from contam.app.core import unicode_ranges as U

    assert unicodedata.unidata_version == U.UNICODE_VERSION, "regenerate app/core/unicode_ranges.py"
    ignorable = {c for a, b in U.IGNORABLE for c in range(a, b + 1)}
    marks = {c for c in range(0x110000) if unicodedata.category(chr(c)) in ("Mn", "Mc")} - ignorable
    assert {c for a, b in U.MARKS for c in range(a, b + 1)} == marks
    classes = [{c for a, b in r for c in range(a, b + 1)} for r in (T._CJK_RANGES, T._MARK_RANGES, U.IGNORABLE)]
    assert not (classes[0] & classes[1]) and not (classes[0] & classes[2]) and not (classes[1] & classes[2])


def test_words_in_counts_a_cjk_character_as_part_of_a_word() -> None:
    """Words of spaced scripts count one each; an ideograph 1/HAN_PER_WORD, a kana 1/KANA_PER_WORD."""
    assert words_in(tokenize("the cursor blinks, %s")) == 4
    assert words_in(tokenize("Курсор мигает")) == 2
    assert words_in(tokenize("点滅")) == pytest.approx(2 / HAN_PER_WORD)
    assert words_in(tokenize("カーソル GNU")) == pytest.approx(1 + 4 / KANA_PER_WORD)
    assert words_in([]) == 0


def _words_by_token(tokens: list[str]) -> float:
    """words_in as a loop over the tokens, each told by its first character."""
    kana = sum(1 for t in tokens if re.match(r"[\u3040-\u30ff\uff66-\uff9d]", t) and T._CJK_CHAR.match(t))
    han = sum(1 for t in tokens if T._CJK_CHAR.match(t)) - kana
    return len(tokens) - han - kana + han / HAN_PER_WORD + kana / KANA_PER_WORD


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(min_codepoint=0x20, max_codepoint=0x2FFFF, exclude_categories=("Cs",)), max_size=40))
def test_words_in_is_the_loop_over_tokens(text: str) -> None:
    assert words_in(tokenize(text)) == _words_by_token(tokenize(text))


def test_words_in_tells_each_character_as_the_loop_does() -> None:
    """Every character about the CJK ranges, a token alone and with a mark or text after it (NFKC
    makes "ゟ" a token of two kana, "㈠" one of "(一)")."""
    for c in map(chr, [*range(0x2E80, 0x3400), *range(0xF900, 0xFB00), *range(0xFF00, 0xFFF0), 0x20000, 0x2FFFF]):
        for text in (c, c + "\u3099", f"{c} abc {c}{c}"):
            assert words_in(tokenize(text)) == _words_by_token(tokenize(text)), (hex(ord(c)), text)


def test_reindented_code_gives_same_tokens() -> None:
    a = "def add(a, b):\n    return a + b\n"
    b = "def add(a,b):\n\treturn a+b"
    assert tokenize(a) == tokenize(b)


def test_ngram_hashes_are_stable_across_processes() -> None:
    # A fixed value: Python's salted hash() would change per process (DESIGN.md item 8).
    h = S.ngram_hashes(["a", "b", "c"], 2)
    assert len(h) == 2
    assert h.dtype == np.uint64
    again = S.ngram_hashes(["x", "a", "b"], 2)
    assert again[1] == h[0]
    assert int(S.ngram_hashes(["the", "quick"], 2)[0]) == int(S.ngram_hashes(["the", "quick"], 2)[0])
    assert S.to_signed(np.array([2**64 - 1], dtype=np.uint64))[0] == -1


def _datasketch_sig(tokens: list[str], cfg: SignatureConfig) -> np.ndarray:
    m = MinHash(num_perm=cfg.num_perm, seed=cfg.seed, hashfunc=S.shingle_hash32)
    for i in range(len(tokens) - cfg.shingle + 1):
        m.update(" ".join(tokens[i : i + cfg.shingle]).encode())
    return m.hashvalues


@pytest.mark.parametrize(
    "cfg", [SignatureConfig(), SignatureConfig(window=20, stride=7, shingle=2, num_perm=128, bands=32, seed=42)]
)
def test_window_minhash_equals_datasketch(cfg: SignatureConfig) -> None:
    rng = np.random.default_rng(1)
    vocab = [f"w{i}" for i in range(300)]
    for length in (cfg.shingle, cfg.window - 1, cfg.window, 137, 500):
        tokens = [vocab[i] for i in rng.integers(0, len(vocab), length)]
        th = S.token_hashes(tokens)
        starts = S.window_starts(len(tokens), cfg)
        sigs = S.window_minhashes(th, cfg)
        assert sigs.shape == (len(starts), cfg.num_perm)
        assert starts[-1] + cfg.window >= length  # the last window reaches the end
        for j, s in enumerate(starts):
            window = tokens[s : s + cfg.window]
            assert np.array_equal(sigs[j], _datasketch_sig(window, cfg)), (length, j)


def test_band_keys_return_datasketch_lsh_candidates() -> None:
    cfg = SignatureConfig()
    rng = np.random.default_rng(2)
    base = [f"t{i}" for i in rng.integers(0, 50, 48)]
    texts = {}
    for k in range(30):  # variants with k edits: some collide in bands, some do not
        toks = list(base)
        for pos in rng.integers(0, 48, k):
            toks[pos] = f"x{rng.integers(0, 1000)}"
        texts[f"d{k}"] = toks
    lsh = MinHashLSH(num_perm=cfg.num_perm, params=(cfg.bands, cfg.rows))
    keys = {}
    for name, toks in texts.items():
        m = MinHash(num_perm=cfg.num_perm, seed=cfg.seed, hashfunc=S.shingle_hash32, hashvalues=None)
        sig = S.window_minhashes(S.token_hashes(toks), cfg)[0]
        m.hashvalues = sig
        lsh.insert(name, m)
        keys[name] = set(S.band_keys(sig.reshape(1, -1), cfg)[0].tolist())
    for name in texts:
        q = MinHash(num_perm=cfg.num_perm, seed=cfg.seed, hashfunc=S.shingle_hash32)
        q.hashvalues = S.window_minhashes(S.token_hashes(texts[name]), cfg)[0]
        ours = {other for other, ks in keys.items() if ks & keys[name]}
        assert ours == set(lsh.query(q)), name
    assert 1 < len({o for o, ks in keys.items() if ks & keys["d0"]}) < len(texts)


def test_sampling_keeps_hashes_divisible_by_s() -> None:
    toks = tokenize("word " * 3 + " ".join(f"w{i}" for i in range(400)))
    full = S.sign_text(toks, SignatureConfig())
    sampled = S.sign_text(toks, SignatureConfig(sample_mod=7))
    kept = full.ngrams.view(np.uint64)
    assert set(sampled.ngrams.tolist()) == set(full.ngrams[kept % np.uint64(7) == 0].tolist())
    assert 0 < len(sampled.ngrams) < len(full.ngrams) / 3


def test_config_checks_and_fingerprint() -> None:
    with pytest.raises(ConfigError):
        SignatureConfig(num_perm=10, bands=3)
    with pytest.raises(ConfigError):
        SignatureConfig(stride=0)
    with pytest.raises(ConfigError, match="bands must be at least 1"):  # was ZeroDivisionError (a review)
        SignatureConfig(bands=0)
    a, b = SignatureConfig(), SignatureConfig(ngram_n=13)
    assert a.fingerprint() == SignatureConfig().fingerprint()
    assert a.fingerprint() != b.fingerprint()
    assert a.differences(b) == {"ngram_n": (5, 13)}
    assert set(a.to_dict()["libraries"]) == {"known_tokens", "known_ngrams", "known_minhash"}


@pytest.mark.parametrize("n_tokens", [64, 65, 100, 130, 500])
def test_window_span_matches_the_signers_windows(n_tokens: int) -> None:
    """The scanner maps a band hit (document, window index) back to tokens with window_span; the
    last window must be where the signer put it, ending at the text's end (not index * stride)."""
    cfg = SignatureConfig()
    starts = S.window_starts(n_tokens, cfg)
    for j, s in enumerate(starts):
        assert S.window_span(n_tokens, j, cfg) == (int(s), min(int(s) + cfg.window, n_tokens))
    last = S.window_span(n_tokens, len(starts) - 1, cfg)
    assert last is not None and last[1] == n_tokens
    if n_tokens == 100:  # starts 0, 32, 36: the last is not 2 * stride
        assert last == (36, 100)
    assert S.window_span(n_tokens, len(starts), cfg) is None
    assert S.window_span(n_tokens, -1, cfg) is None


def test_a_sampled_index_misses_a_shared_run_as_often_as_stated() -> None:
    """--sample k keeps one n-gram hash in k; a run of L tokens is missed with probability
    (1 - 1/k)^(L - n + 1), measured here on 4,000 runs of distinct words (the exact channel
    alone: the short channel, sampled alike, serves only short items)."""
    k, run, n = 4, 13, 5
    cfg = SignatureConfig(ngram_n=n, short_n=0, sample_mod=k)
    missed = 0
    for r in range(4000):
        words = [f"w{r}x{i}" for i in range(run)]
        missed += len(S.sign_text(words, cfg).ngrams) == 0
        everything = S.sign_text(words, SignatureConfig(ngram_n=n, short_n=0)).ngrams
        assert set(S.sign_text(words, cfg).ngrams) <= set(everything)
    assert abs(missed / 4000 - S.sampling_miss(run, n, k)) < 0.015
    assert S.sampling_miss(S.sampling_span(n, k), n, k) <= 1e-3 < S.sampling_miss(S.sampling_span(n, k) - 1, n, k)


def _spans_by_regex(text: str) -> tuple[list[str], list[int], list[int]]:
    """The tokeniser's definition: one match of _TOKEN per token (what tokenize_spans computes
    from character kinds instead)."""
    clean = T.strip_markup(text)
    found = list(T._TOKEN.finditer(clean))
    return [T._norm(m.group()) for m in found], [m.start() for m in found], [m.end() for m in found]


_MIXED = st.text(
    alphabet=st.one_of(
        st.sampled_from("aZ09_ -.,<>&;\n\té中ｆﬁßİ\u30fb\u3041\U00020001\U0001f600\u0663\u00b2"),
        st.characters(codec="utf-8"),
    ),
    max_size=80,
)


@settings(max_examples=400, deadline=None)
@given(_MIXED)
def test_token_spans_equal_the_regex(text: str) -> None:
    tokens, starts, ends = _spans_by_regex(text + "é")  # non-ASCII: the vectorised path
    got = tokenize_spans(text + "é")
    assert (got.tokens, got.starts.tolist(), got.ends.tolist()) == (tokens, starts, ends)
    assert got.tokens == tokenize(text + "é")


@settings(max_examples=400, deadline=None)
@given(_MIXED)
def test_mixed_text_tokens_equal_the_regex(text: str) -> None:
    """tokenize's path for text with non-ASCII characters (ASCII pieces cut by bytes, _TOKEN and
    NFKC only on the pieces holding non-ASCII) gives the tokens of the regex over the whole text."""
    text += " naïve"
    assert tokenize(text) == [T._norm(t) for t in T._TOKEN.findall(T.strip_markup(text))]


def test_token_spans_keep_lone_surrogates_as_separators() -> None:
    got = tokenize_spans("ab\ud800cd é")
    assert (got.tokens, got.starts.tolist(), got.ends.tolist()) == (["ab", "cd", "é"], [0, 3, 6], [2, 5, 7])


@pytest.mark.parametrize("cfg", [SignatureConfig(window=16, stride=8, libraries={}), SignatureConfig(libraries={})])
def test_texts_signed_end_to_end_equal_each_signed_alone(cfg: SignatureConfig) -> None:
    # the scanner signs a whole benchmark in one call: each window kept inside its own text
    rng = np.random.default_rng(3)
    texts = [rng.integers(0, 2**63, size=k, dtype=np.int64).view(np.uint64) for k in (3, 5, 16, 17, 40, 130)]
    starts = [S.window_starts(len(t), cfg) for t in texts]
    offsets = np.cumsum([0] + [len(t) for t in texts])[:-1]
    ends = [
        np.minimum(s + cfg.window - cfg.shingle + 1, len(t) - cfg.shingle + 1)
        for s, t in zip(starts, texts, strict=True)
    ]
    together = S.window_minhashes(
        np.concatenate(texts),
        cfg,
        np.concatenate([s + o for s, o in zip(starts, offsets, strict=True)]),
        np.concatenate([e + o for e, o in zip(ends, offsets, strict=True)]),
    )
    alone = np.concatenate([S.window_minhashes(t, cfg, s) for t, s in zip(texts, starts, strict=True)])
    assert np.array_equal(together, alone)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ('<p class="q">What is</p> it', ["what", "is", "it"]),
        ("<a href=index.php?page=2>the capital</a>", ["the", "capital"]),  # "=" in a bare value (a review)
        ("<input type=checkbox checked disabled>x", ["x"]),
        ("<details open>x</details>", ["x"]),  # one attribute without a value: a tag
        ("<U as IntoIterator>", ["u", "as", "intoiterator"]),  # two or more, none valued: text
        ("See <Jerry Jeudy caught the fade> now", ["see", "jerry", "jeudy", "caught", "the", "fade", "now"]),
        ("<!-- kept text -->", ["kept", "text"]),  # a comment's text stays (normaliser version 4)
        ("if count<limit: print(x) # value>0", ["if", "count", "limit", "print", "x", "value", "0"]),
        ('<i title="a>b">x</i>', ["x"]),  # ">" inside a quoted value
        ("caf&eacute; &amp; tea", ["caf", "tea"]),  # entities blanked, not decoded
    ],
)
def test_what_markup_is_blanked(text: str, tokens: list[str]) -> None:
    """A tag as HTML writes one is blanked, and nothing else between a "<" and a ">": a new user's
    trial found copies inside a comment, in code and in an autolink lost (normaliser version 3)."""
    assert tokenize(text) == tokens
