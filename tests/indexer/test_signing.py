"""The worker's batch signing: rows sorted by (key, doc[, win]), n-gram repeats within a
document dropped, whatever order the sort takes them in."""

from __future__ import annotations

from contam.app.core.config import SignatureConfig
from contam.app.core.signatures import sign_text
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
