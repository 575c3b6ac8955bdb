"""Exact-channel n-gram hashes and near-channel MinHash/LSH signatures (the loops in C, native/).

Token hashes: xxh3_64 of each token's UTF-8 bytes (xxhash.h, vendored in native/).
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

from contam.app.core import _native
from contam.app.core.config import SignatureConfig
from contam.app.core.text import tokenize


def text_hashes(raws: Sequence[bytes]) -> np.ndarray:
    """The document table's text_hash of each text's UTF-8 bytes: xxh3_64, as int64."""
    return np.array([xxhash.xxh3_64_intdigest(r) for r in raws], dtype=np.uint64).view(np.int64)


_U64 = np.uint64


def token_hashes(tokens: Sequence[str]) -> np.ndarray:
    """64-bit hash of every token (uint64 array): xxh3_64 of its UTF-8 ("surrogatepass"), in C."""
    return np.frombuffer(_native.hash_tokens(tokens), dtype=np.uint64)


def text_token_hashes(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """token_hashes(tokenize(t)) of every text, laid end to end (uint64), and each text's token
    count (int64): tokenised and hashed in one C pass, no token made into a str unless it holds
    a non-ASCII character (those are normalised once per distinct token)."""
    hashes, lens = _native.text_hashes(texts)
    return np.frombuffer(hashes, dtype=np.uint64), np.frombuffer(lens, dtype=np.int64)


def token_hash_spans(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """token_hashes(tokenize(text)) (uint64) and each token's [start, end) character span in
    `text` (int64), as text.tokenize_spans gives them, in one C pass that makes no str of an ASCII
    token (a third of what tokenize_spans and token_hashes took on the scanner's documents)."""
    hashes, starts, ends = _native.hash_spans(text)
    return (
        np.frombuffer(hashes, dtype=np.uint64),
        np.frombuffer(starts, dtype=np.int64),
        np.frombuffer(ends, dtype=np.int64),
    )


def rolling_hashes(th: np.ndarray, n: int) -> np.ndarray:
    """Hash of every run of `n` consecutive token hashes (uint64, len(th) - n + 1 values)."""
    return np.frombuffer(_native.roll(np.ascontiguousarray(th, dtype=np.uint64), n), dtype=np.uint64)


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
    `shingle` tokens lying wholly inside it: shingle i hashed as the low 32 bits of the roll of
    th[i:i + shingle], pre-mixed by fmix32, and permuted as a*h + b mod 2^32 (datasketch's
    affine32); the signature is the minimum per permutation, computed in C. ends: the shingle
    index each window stops before, if not starts + window - shingle + 1 (several texts laid end
    to end, each window kept inside its own text).
    """
    if starts is None:
        starts = window_starts(len(th), cfg)
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    if ends is None:
        ends = np.minimum(starts + cfg.window - cfg.shingle + 1, len(th) - cfg.shingle + 1)
    a, b = permutations(cfg.num_perm, cfg.seed)
    sigs = _native.minhash(
        np.ascontiguousarray(th, dtype=np.uint64),
        cfg.shingle,
        a,
        b,
        starts,
        np.ascontiguousarray(ends, dtype=np.int64),
    )
    return np.frombuffer(sigs, dtype=np.uint32).reshape(len(starts), cfg.num_perm)


def band_keys(sigs: np.ndarray, cfg: SignatureConfig) -> np.ndarray:
    """LSH band keys, shape (windows, bands), int64: equal keys <=> equal band values. Band k
    of a window is its `rows` values rolled from (k + 1) * P as n-grams are, finished with
    fmix64 (in C)."""
    keys = _native.band_keys(np.ascontiguousarray(sigs, dtype=np.uint32), cfg.bands, cfg.rows)
    return np.frombuffer(keys, dtype=np.int64).reshape(sigs.shape[0], cfg.bands)


# Fixed texts whose tokens, n-gram hashes and MinHash band keys pin what the libraries and the
# compiled code do (xxhash, unicodedata's normalisation, numpy's random permutations, the C loops).
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
        # hashed here by the library itself; the compiled hashes (the indexer's, from the text;
        # the scanner's, from its tokens) must be the same, or no index agrees with this process
        th = np.array([xxhash.xxh3_64_intdigest(x.encode("utf-8", "surrogatepass")) for x in toks], dtype=_U64)
        if not (np.array_equal(token_hashes(toks), th) and np.array_equal(text_token_hashes([t])[0], th)):
            digests["known_ngrams"].update(b"the compiled token hashes are not xxhash's")
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
    """sign_text of each token list (distinct=False), computed once for all of them."""
    lens = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    return sign_hashes(token_hashes(list(chain.from_iterable(texts))), lens, cfg)


def sign_hashes(th: np.ndarray, lens: np.ndarray, cfg: SignatureConfig) -> ManySignatures:
    """sign_text of several texts given as their token hashes laid end to end (`th`, uint64) and
    each text's token count (`lens`, int64), in one pass each for the n-gram roll, MinHash and
    band keys: n-grams that would span two texts are left out, and each window's MinHash stops at
    its own text's last shingle (window_minhashes' `ends`), so every value is the one sign_text
    computes."""
    th = np.ascontiguousarray(th, dtype=np.uint64)
    lens = np.ascontiguousarray(lens, dtype=np.int64)
    offs = np.cumsum(lens) - lens
    gram_parts, text_parts = [], []
    for n in channels(cfg):  # every text's n-grams of one channel, then of the next
        grams, owner = _native.ngrams(th, lens, n, cfg.sample_mod)
        gram_parts.append(np.frombuffer(grams, dtype=np.int64))
        text_parts.append(np.frombuffer(owner, dtype=np.int32))
    # window_starts of every text at once: windows every stride tokens, the last one ending at
    # its text's end; none in a text shorter than a shingle
    last = np.maximum(lens - cfg.window, 0)
    per_text = np.where(lens >= cfg.shingle, last // cfg.stride + 1 + (last % cfg.stride != 0), 0)
    win_text = np.repeat(np.arange(len(lens), dtype=np.int32), per_text)
    win_index = np.arange(len(win_text), dtype=np.int64) - np.repeat(np.cumsum(per_text) - per_text, per_text)
    first = np.minimum(win_index * cfg.stride, last[win_text])
    stop = np.minimum(first + cfg.window - cfg.shingle + 1, lens[win_text] - cfg.shingle + 1)
    sigs = window_minhashes(th, cfg, first + offs[win_text], stop + offs[win_text])
    return ManySignatures(
        n_tokens=lens,
        ngrams=np.concatenate(gram_parts),
        ng_text=np.concatenate(text_parts),
        bands=band_keys(sigs, cfg),
        win_text=win_text,
        win_index=win_index.astype(np.int32),
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
