"""The worker's batch signing: rows sorted by (key, doc[, win]), n-gram repeats within a
document dropped, whatever order the sort takes them in."""

from __future__ import annotations

import numpy as np

from contam.app.core.arrays import stable_order
from contam.app.core.config import SignatureConfig
from contam.app.core.signatures import sign_many, sign_text
from contam.app.core.text import _TOKEN, _norm, tokenize
from contam.indexer.signing import sign_batch


def test_batch_rows_are_every_document_signature_in_key_order() -> None:
    cfg = SignatureConfig(window=16, stride=8)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"]
    texts = [" ".join(words * 3), "Ünïcödé café " + " ".join(words[::-1] * 2), " ".join(words * 3), "short"]
    sb = sign_batch(texts, cfg, store_text=False)
    grams = sorted({(int(h), i) for i, t in enumerate(texts) for h in sign_text(tokenize(t), cfg).ngrams})
    assert list(zip(sb.ng_hash.tolist(), sb.ng_doc.tolist(), strict=True)) == grams
    bands = sorted(
        (int(k), i, w)
        for i, t in enumerate(texts)
        for w, row in enumerate(sign_text(tokenize(t), cfg).bands)
        for k in row
    )
    assert list(zip(sb.band_key.tolist(), sb.band_doc.tolist(), sb.band_win.tolist(), strict=True)) == bands


def test_cached_normalisation_gives_the_uncached_tokens() -> None:
    text = "Ünïcödé: ﬁnancial ｆｕｌｌｗｉｄｔｈ Ⅻ café naïve ß İstanbul 東京 タワー — ½ ² à la carte"
    expected = [_norm(t) for t in _TOKEN.findall(text)]
    assert tokenize(text) == expected and tokenize(text) == expected  # cold, then from the cache


def test_sign_many_is_sign_text_of_each_text() -> None:
    """Texts laid end to end give each text's own n-grams and windows: none spans two texts,
    and texts too short for an n-gram, a shingle or a window (or empty) are handled alike."""
    words = [f"w{i % 37}" for i in range(300)]
    texts = [
        words[:120],  # several windows (window 16, stride 8)
        [],  # empty
        words[5:7],  # shorter than a shingle (3): no n-gram, no window
        words[10:14],  # longer than a shingle, shorter than an n-gram (5): one window, no n-gram
        words[:5],  # exactly one n-gram
        words[40:61],  # a last window that ends at the text's end, not at a stride
        words[:120],  # the first text again: the same values
    ]
    for cfg in (SignatureConfig(window=16, stride=8), SignatureConfig(window=16, stride=8, sample_mod=3)):
        many = sign_many(texts, cfg)
        assert many.n_tokens.tolist() == [len(t) for t in texts]
        for i, toks in enumerate(texts):
            one = sign_text(toks, cfg, distinct=False)
            assert many.ngrams[many.ng_text == i].tolist() == one.ngrams.tolist()
            assert many.bands[many.win_text == i].tolist() == one.bands.tolist()
            assert many.win_index[many.win_text == i].tolist() == list(range(len(one.bands)))
        assert len(many.ngrams) > 0 and len(many.bands) > 0


def test_stable_order_is_the_stable_argsort() -> None:
    """The same permutation as numpy's stable sort, with many ties (keys drawn from few values),
    none, and in the corner cases."""
    rng = np.random.default_rng(7)
    for keys in (
        rng.integers(-5, 5, 10_000, dtype=np.int64),  # nearly all tied
        rng.integers(-(2**62), 2**62, 10_000, dtype=np.int64),  # no ties
        np.concatenate([rng.integers(0, 50, 500), rng.integers(-(2**62), 2**62, 500)]).astype(np.int64),
        np.zeros(3, dtype=np.int64),
        np.empty(0, dtype=np.int64),
    ):
        assert stable_order(keys).tolist() == np.argsort(keys, kind="stable").tolist()
