"""Normalisation and tokenisation, with character offsets into the original text.

Rules (normaliser version in config.NORMALIZER_VERSION):
* HTML/XML tags, comments and character entities are blanked to spaces of the same length,
  so `<p>What is</p>` and `What is` give the same tokens and offsets still point into the
  original text (DESIGN.md, item 9). Markdown punctuation disappears with all punctuation.
* Tokens are runs of letters and digits (Unicode aware; `_` separates, so snake_case
  identifiers split into words). CJK ideographs and kana are one token each (item 7).
* Each token is NFKC-normalised and casefolded. Whitespace and indentation never matter,
  so reformatted code still matches.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
_MARKUP = re.compile(
    r"<!--.*?-->"
    r"|</?[A-Za-z][A-Za-z0-9:-]*(?:\s[^<>]{0,400})?/?>"
    r"|&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});",
    re.S,
)


def _blank(match: re.Match[str]) -> str:
    return " " * (match.end() - match.start())


def strip_markup(text: str) -> str:
    """Replace markup with spaces of equal length (offsets stay valid)."""
    if "<" not in text and "&" not in text:
        return text
    return _MARKUP.sub(_blank, text)


def _norm(token: str) -> str:
    return unicodedata.normalize("NFKC", token).casefold()


# Normalised form of each raw token seen (a process's tokens repeat: the cache answers most
# of them with one dict look-up instead of two Unicode passes); cleared when it grows large.
_norm_cache: dict[str, str] = {}
_NORM_CACHE_LIMIT = 1_000_000


def _norms(raw: list[str]) -> list[str]:
    """_norm of each token, through the cache (each distinct token missing from it normalised once)."""
    cache = _norm_cache
    if len(cache) > _NORM_CACHE_LIMIT:
        cache.clear()
    try:
        return list(map(cache.__getitem__, raw))
    except KeyError:
        for tok in set(raw):
            if tok not in cache:
                cache[tok] = _norm(tok)
        return list(map(cache.__getitem__, raw))


# ASCII text, byte for byte: letters lower-cased, digits kept, everything else a separator. The
# same tokens as _TOKEN on lower-cased ASCII ("_" separates), found by bytes.translate and split
# in C instead of one regex match object per token (about 10x faster; a test holds them equal).
_ASCII_WORDS = bytes(c + 32 if 65 <= c <= 90 else c if 48 <= c <= 57 or 97 <= c <= 122 else 32 for c in range(256))


# The same for text with some non-ASCII characters: ASCII separators become spaces and ASCII
# letters are lower-cased (_LOWER_PIECES) or kept (_PIECES), non-ASCII bytes are kept, so the
# text falls into pieces that no token spans. A piece of ASCII letters and digits is a token
# already; only the few pieces holding non-ASCII characters go through _TOKEN and _norm.
_KEEP = [48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c >= 128 for c in range(256)]
_PIECES = bytes(c if _KEEP[c] else 32 for c in range(256))
_LOWER_PIECES = bytes(c + 32 if 65 <= c <= 90 else c if _KEEP[c] else 32 for c in range(256))


def _mixed_tokens(clean: str) -> list[str]:
    """_norms(_TOKEN.findall(clean)), with _TOKEN and _norm run on the non-ASCII pieces alone
    (several times faster on text that is mostly ASCII; a test holds them equal)."""
    raw = clean.encode("utf-8", "surrogatepass")
    lower = list(filter(None, raw.translate(_LOWER_PIECES).decode("utf-8", "surrogatepass").split(" ")))
    ascii_piece = np.fromiter(map(str.isascii, lower), dtype=bool, count=len(lower))
    odd = np.flatnonzero(~ascii_piece).tolist()
    if not odd:
        return lower
    pieces = list(filter(None, raw.translate(_PIECES).decode("utf-8", "surrogatepass").split(" ")))
    out: list[str] = []
    last = 0
    for i in odd:
        out += lower[last:i]
        out += _norms(_TOKEN.findall(pieces[i]))
        last = i + 1
    out += lower[last:]
    return out


def tokenize(text: str) -> list[str]:
    """Normalised tokens of `text` (the fast path used when offsets are not needed)."""
    clean = strip_markup(text)
    if clean.isascii():
        return clean.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split()
    return _mixed_tokens(clean)


@dataclass(frozen=True, slots=True)
class Tokens:
    """Tokens with the [start, end) character span of each in the original text."""

    tokens: list[str]
    starts: np.ndarray  # int64
    ends: np.ndarray

    def __len__(self) -> int:
        return len(self.tokens)


def tokenize_spans(text: str) -> Tokens:
    """Like :func:`tokenize` (same tokens, always), keeping character offsets."""
    clean = strip_markup(text)
    if clean.isascii():
        b = clean.encode("ascii").translate(_ASCII_WORDS)
        word = np.frombuffer(b, dtype=np.uint8) != 32
        edges = np.flatnonzero(np.diff(np.concatenate(([False], word, [False])).astype(np.int8)))
        return Tokens(b.decode("ascii").split(), edges[0::2].astype(np.int64), edges[1::2].astype(np.int64))
    raw, starts, ends = _token_spans(clean)
    return Tokens(_norms(raw), starts, ends)


_WORD, _CJK_CHAR = 1, 2


@lru_cache(maxsize=1)
def _bmp_kinds() -> np.ndarray:
    """Kind of every code point below 0x10000: _WORD, _CJK_CHAR or 0 (a separator)."""
    return np.array([_kind(c) for c in range(0x10000)], dtype=np.int8)


def _kind(c: int) -> int:
    ch = chr(c)
    if _CJK_ONE.match(ch):
        return _CJK_CHAR
    return _WORD if _WORD_ONE.match(ch) else 0


_CJK_ONE = re.compile(rf"[{_CJK}]")
_WORD_ONE = re.compile(rf"[^\W_{_CJK}]")


def _token_spans(text: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Every match of _TOKEN in `text` (raw, not normalised) with its [start, end), in order,
    from a kind per character (the regex's own classes, asked once per distinct character)
    instead of a match object per token: a CJK character is a token of its own, a run of word
    characters is one token. The tokens are cut by str.split from a copy of the text with every
    separator a space and a space either side of each CJK character."""
    cp = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    kinds = _bmp_kinds()[np.minimum(cp, 0xFFFF)]
    astral = np.flatnonzero(cp > 0xFFFF)
    if len(astral):
        uniq, inv = np.unique(cp[astral], return_inverse=True)
        kinds[astral] = np.array([_kind(c) for c in uniq.tolist()], dtype=np.int8)[inv]
    word = kinds == _WORD
    cjk = kinds == _CJK_CHAR
    prev = np.concatenate(([False], word[:-1]))
    nxt = np.concatenate((word[1:], [False]))
    starts = np.flatnonzero(cjk | (word & ~prev)).astype(np.int64)
    ends = np.flatnonzero(cjk | (word & ~nxt)).astype(np.int64) + 1
    spaced = np.full((len(cp), 3), 32, dtype=np.uint32)
    spaced[:, 1] = np.where(kinds > 0, cp, 32)
    keep = np.ones((len(cp), 3), dtype=bool)
    keep[:, 0] = keep[:, 2] = cjk
    raw = spaced[keep].tobytes().decode("utf-32-le").split()
    return raw, starts, ends
