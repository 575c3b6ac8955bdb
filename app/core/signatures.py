"""Exact-channel n-gram hashes and near-channel MinHash/LSH signatures, vectorised with numpy.

Token hashes: xxh3_64 of each token's UTF-8 bytes, computed once per token (cached).
n-gram hash: h = fmix64(sum_i t[i] * P^(n-1-i) mod 2^64), a polynomial roll of the token
hashes finished with the MurmurHash3 64-bit finaliser so that `h % s` samples uniformly.
MinHash: datasketch 2.0's default "affine32" scheme, bit for bit: each shingle hash (32 bits)
is pre-mixed with fmix32 and permuted as a*h + b mod 2^32 with datasketch's (a, b) for the
seed; a window's signature is the minimum over its shingles. `datasketch.MinHash(num_perm,
seed, hashfunc=shingle_hash32)` fed the same shingles gives the same hash values.
LSH band keys: the r values of each band rolled into 64 bits together with the band number.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain

import numpy as np
import xxhash

from contam.app.core.config import SignatureConfig
from contam.app.core.text import tokenize

_P = np.uint64(0x9E3779B97F4A7C15)
_U64 = np.uint64

_token_cache: dict[str, int] = {}  # token -> its hash as a signed 64-bit value (numpy fills int64 faster)
_CACHE_LIMIT = 2_000_000
_SIGN = 1 << 63


def token_hashes(tokens: Sequence[str]) -> np.ndarray:
    """64-bit hash of every token (uint64 array), each distinct token hashed once."""
    cache = _token_cache
    if len(cache) > _CACHE_LIMIT:
        cache.clear()
    # The tokens missing from the cache, found by one set difference in C (no failed first pass
    # over the tokens, no loop in Python over the distinct ones), hashed once each.
    h64 = xxhash.xxh3_64_intdigest
    for tok in set(tokens).difference(cache):
        cache[tok] = ((h64(tok.encode("utf-8", "surrogatepass")) + _SIGN) % (1 << 64)) - _SIGN
    return np.fromiter(map(cache.__getitem__, tokens), dtype=np.int64, count=len(tokens)).view(np.uint64)


def _fmix64(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> _U64(33))
    h = h * _U64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> _U64(33))
    h = h * _U64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> _U64(33))


def _fmix32(h: np.ndarray) -> np.ndarray:
    u = np.uint32
    h = h ^ (h >> u(16))
    h = h * u(0x85EBCA6B)
    h = h ^ (h >> u(13))
    h = h * u(0xC2B2AE35)
    return h ^ (h >> u(16))


def rolling_hashes(th: np.ndarray, n: int) -> np.ndarray:
    """Hash of every run of `n` consecutive token hashes (uint64, len(th) - n + 1 values)."""
    m = len(th) - n + 1
    if m <= 0:
        return np.empty(0, dtype=np.uint64)
    with np.errstate(over="ignore"):
        acc = th[:m].copy()
        for i in range(1, n):
            acc *= _P
            acc += th[i : i + m]
        return _fmix64(acc)


def channels(cfg: SignatureConfig) -> tuple[int, ...]:
    """The n of every n-gram channel the index stores: the exact channel's, then the short
    channel's if it has one. Both live in one table: a 5-gram and a 3-gram hash are different
    polynomials of random token hashes, so they collide no more often than any two keys."""
    return (cfg.ngram_n, cfg.short_n) if cfg.short_n else (cfg.ngram_n,)


def ngram_hashes(tokens: Sequence[str], n: int) -> np.ndarray:
    """uint64 hash of each word n-gram, in order (position i covers tokens i..i+n-1)."""
    return rolling_hashes(token_hashes(tokens), n)


def to_signed(h: np.ndarray) -> np.ndarray:
    """uint64 -> int64 with the same bits: SQLite INTEGER and PostgreSQL BIGINT are signed."""
    return h.view(np.int64)


def shingle_hash32(shingle: bytes) -> int:
    """The 32-bit hash of one shingle given as space-joined normalised tokens.

    This is the `hashfunc` to give datasketch.MinHash to reproduce our signatures.
    """
    toks = shingle.decode("utf-8").split(" ")
    return int(rolling_hashes(token_hashes(toks), len(toks))[0] & _U64(0xFFFFFFFF))


@lru_cache(maxsize=8)
def permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """datasketch 2.0 affine32 permutation parameters (a odd, b), as uint32 columns."""
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    return a.reshape(-1, 1), b.reshape(-1, 1)


def window_starts(n_tokens: int, cfg: SignatureConfig) -> np.ndarray:
    """Token index where each near-channel window starts; the last one ends at the text's end."""
    if n_tokens < cfg.shingle:
        return np.empty(0, dtype=np.int64)
    last = max(n_tokens - cfg.window, 0)
    starts = np.arange(0, last + 1, cfg.stride, dtype=np.int64)
    if starts[-1] != last:
        starts = np.append(starts, last)
    return starts


def window_span(n_tokens: int, index: int, cfg: SignatureConfig) -> tuple[int, int] | None:
    """Token span [start, end) of window `index` of a text of n_tokens tokens, as the signer
    placed it (the last window ends at the text's end, not at index * stride); None if there is
    no such window."""
    starts = window_starts(n_tokens, cfg)
    if not 0 <= index < len(starts):
        return None
    start = int(starts[index])
    return start, min(start + cfg.window, n_tokens)


def window_minhashes(
    th: np.ndarray, cfg: SignatureConfig, starts: np.ndarray | None = None, ends: np.ndarray | None = None
) -> np.ndarray:
    """MinHash signature (num_perm uint32) of each window of a token-hash array.

    Window j covers tokens [starts[j], starts[j] + window); its shingles are the runs of
    `shingle` tokens lying wholly inside it. Shingles are permuted once per text and the
    minimum taken per window, instead of once per window. ends: the shingle index each window
    stops before, if not starts + window - shingle + 1 (several texts laid end to end, each
    window kept inside its own text).
    """
    if starts is None:
        starts = window_starts(len(th), cfg)
    if len(starts) == 0:
        return np.empty((0, cfg.num_perm), dtype=np.uint32)
    sh = (rolling_hashes(th, cfg.shingle) & _U64(0xFFFFFFFF)).astype(np.uint32)
    m = len(sh)
    a, b = permutations(cfg.num_perm, cfg.seed)
    if ends is None:
        ends = np.minimum(starts + cfg.window - cfg.shingle + 1, m)
    out = np.empty((len(starts), cfg.num_perm), dtype=np.uint32)
    group = max(1, 65536 // max(cfg.window, 1))
    with np.errstate(over="ignore"):
        mixed = _fmix32(sh)
        for g in range(0, len(starts), group):
            s, e = starts[g : g + group], ends[g : g + group]
            lo, hi = int(s[0]), int(e.max())
            # (num_perm, hi-lo) permuted hashes, wrapping mod 2^32 as datasketch, computed in
            # place with one spare column past the end (reduceat needs every index < len; the
            # spare only ever ends a discarded between-windows span): no temporaries, no copy.
            phv = np.empty((len(a), hi - lo + 1), dtype=np.uint32)
            np.multiply(mixed[lo : hi + 1] if hi < m else np.append(mixed[lo:hi], mixed[lo]), a, out=phv)
            phv += b
            idx = np.empty(2 * len(s), dtype=np.int64)
            idx[0::2] = s - lo
            idx[1::2] = e - lo
            out[g : g + len(s)] = np.minimum.reduceat(phv, idx, axis=1)[:, 0::2].T
    return out


def band_keys(sigs: np.ndarray, cfg: SignatureConfig) -> np.ndarray:
    """LSH band keys, shape (windows, bands), int64: equal keys <=> equal band values."""
    w = sigs.shape[0]
    vals = sigs.reshape(w, cfg.bands, cfg.rows).astype(np.uint64)
    with np.errstate(over="ignore"):
        acc = np.broadcast_to(np.arange(1, cfg.bands + 1, dtype=np.uint64) * _P, (w, cfg.bands)).copy()
        for j in range(cfg.rows):
            acc *= _P
            acc += vals[:, :, j]
        return to_signed(_fmix64(acc))


# Fixed texts whose tokens, n-gram hashes and MinHash band keys pin what the libraries do
# (xxhash, unicodedata's normalisation, numpy's arithmetic and random permutations).
KNOWN_TEXTS = (
    "The quick brown fox jumps over the lazy dog, and the dog sleeps on in the afternoon sun while "
    "the fox runs off across the field to the river where the herons stand in the shallow water",
    "Ünïcödé: ﬁnancial ｆｕｌｌｗｉｄｔｈ Ⅻ café naïve ß İstanbul 東京 タワー — “quotes” and ½ of ² à la carte",
    "def add_numbers(first_value, second_value):\n    return first_value + second_value  # x_1 + y_2\n"
    "print(add_numbers(40, 2)) if __name__ == '__main__' else None; assert add_numbers(1, 1) == 2",
)


def known_answers() -> dict[str, str]:
    """Digests of the tokens, n-gram hashes and MinHash band keys of KNOWN_TEXTS (small windows,
    so each text has several). Stored with an index and recomputed by each process: an index is
    usable exactly when these agree, whatever the library versions (README, "Fingerprint")."""
    cfg = SignatureConfig(window=16, stride=8, libraries={})
    digests = {"known_tokens": hashlib.sha256(), "known_ngrams": hashlib.sha256(), "known_minhash": hashlib.sha256()}
    for t in KNOWN_TEXTS:
        toks = tokenize(t)
        digests["known_tokens"].update("\x1f".join(toks).encode("utf-8", "surrogatepass") + b"\x1e")
        # hashed here, not through token_hashes' cache, so that the library itself answers
        th = np.array([xxhash.xxh3_64_intdigest(x.encode("utf-8", "surrogatepass")) for x in toks], dtype=_U64)
        digests["known_ngrams"].update(rolling_hashes(th, cfg.ngram_n).astype("<u8").tobytes())
        digests["known_minhash"].update(band_keys(window_minhashes(th, cfg), cfg).astype("<i8").tobytes())
    return {k: h.hexdigest()[:16] for k, h in digests.items()}


@dataclass(frozen=True, slots=True)
class DocSignatures:
    """What the index stores for one text."""

    n_tokens: int
    ngrams: np.ndarray  # signed n-gram hashes kept by the sample (int64), distinct unless asked otherwise
    bands: np.ndarray  # (windows, bands) int64 band keys


def sampling_miss(run: int, n: int, k: int) -> float:
    """Probability that an index keeping one n-gram hash in k (`SignatureConfig.sample_mod`)
    holds none of the n-grams of a shared run of `run` tokens, so a look-up cannot find it.
    Hashes are taken as independent and uniform: each n-gram is kept with probability 1/k."""
    grams = run - n + 1
    if grams <= 0:
        return 1.0
    return (1.0 - 1.0 / k) ** grams


def sampling_span(n: int, k: int, miss: float = 1e-3) -> int:
    """The shortest shared run a k-fold sampled index misses with probability at most `miss`."""
    if k <= 1:
        return n
    return n - 1 + math.ceil(math.log(miss) / math.log(1.0 - 1.0 / k))


@dataclass(frozen=True, slots=True)
class ManySignatures:
    """What the index stores for several texts, laid end to end: text i's n-grams are
    `ngrams[ng_text == i]` and its windows' band keys `bands[win_text == i]`, in text order,
    each exactly what sign_text(texts[i], distinct=False) gives."""

    n_tokens: np.ndarray  # per text (int64)
    ngrams: np.ndarray  # signed n-gram hashes kept by the sample (int64), repeats kept
    ng_text: np.ndarray  # the text of each n-gram (int32)
    bands: np.ndarray  # (windows, bands) int64 band keys
    win_text: np.ndarray  # the text of each window (int32)
    win_index: np.ndarray  # each window's number within its text (int32)


def sign_many(texts: Sequence[Sequence[str]], cfg: SignatureConfig) -> ManySignatures:
    """sign_text of each token list (distinct=False), computed once for all of them.

    The texts' token hashes are laid end to end, so hashing, the n-gram roll, the shingle
    permutations and the band keys are one numpy pass each instead of one per text: n-grams
    that would span two texts are dropped, and each window's MinHash stops at its own text's
    last shingle (window_minhashes' `ends`), so every value is the one sign_text computes.
    """
    lens = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    ends = np.cumsum(lens)
    offs = ends - lens
    th = token_hashes(list(chain.from_iterable(texts)))
    text_of = np.repeat(np.arange(len(texts), dtype=np.int32), lens)
    gram_parts, text_parts = [], []
    for n in channels(cfg):  # every text's n-grams of one channel, then of the next
        grams = rolling_hashes(th, n)
        pos = np.arange(len(grams), dtype=np.int64)
        keep = pos + n <= ends[text_of[: len(grams)]]
        if cfg.sample_mod > 1:
            keep &= grams % _U64(cfg.sample_mod) == 0
        gram_parts.append(grams[keep])
        text_parts.append(text_of[: len(grams)][keep])
    starts = [window_starts(int(n), cfg) for n in lens.tolist()]
    per_text = np.fromiter(map(len, starts), dtype=np.int64, count=len(starts))
    win_text = np.repeat(np.arange(len(texts), dtype=np.int32), per_text)
    first = np.concatenate(starts) if starts else np.empty(0, dtype=np.int64)
    stop = np.minimum(first + cfg.window - cfg.shingle + 1, lens[win_text] - cfg.shingle + 1) + offs[win_text]
    sigs = window_minhashes(th, cfg, first + offs[win_text], stop)
    return ManySignatures(
        n_tokens=lens,
        ngrams=to_signed(np.concatenate(gram_parts)),
        ng_text=np.concatenate(text_parts),
        bands=band_keys(sigs, cfg),
        win_text=win_text,
        win_index=(
            np.arange(len(win_text), dtype=np.int64) - np.repeat(np.cumsum(per_text) - per_text, per_text)
        ).astype(np.int32),
    )


def sign_text(tokens: Sequence[str], cfg: SignatureConfig, distinct: bool = True) -> DocSignatures:
    """Signatures of one corpus text for both channels.

    With distinct=False the n-grams come in text order with repeats (the indexer removes
    repeats for a whole batch at once, see indexer.job.sign_batch).
    """
    th = token_hashes(tokens)
    grams = np.concatenate([rolling_hashes(th, n) for n in channels(cfg)])
    if cfg.sample_mod > 1:
        grams = grams[grams % _U64(cfg.sample_mod) == 0]
    sigs = window_minhashes(th, cfg)
    return DocSignatures(len(tokens), to_signed(np.unique(grams) if distinct else grams), band_keys(sigs, cfg))
