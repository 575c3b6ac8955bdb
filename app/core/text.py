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

import numpy as np

from contam.app.core import _native

_SURROGATE = re.compile("[\ud800-\udfff]")


def without_surrogates(text: str) -> str:
    """`text` with each lone surrogate (a JSON escape such as "\\ud800" that pairs with nothing;
    a str holds a pair as one character) replaced by U+FFFD, one for one, so offsets hold: no
    UTF-8 text can hold one, and writing it out (JSON, a page) failed."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


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
    """Replace markup with spaces of equal length (offsets stay valid). The compiled tokeniser
    blanks markup itself; this is the definition tests hold it to."""
    if "<" not in text and "&" not in text:
        return text
    return _MARKUP.sub(_blank, text)


def _norm(token: str) -> str:
    return unicodedata.normalize("NFKC", token).casefold()


# The tokeniser itself is compiled (native/native.c): _MARKUP blanked and every match of _TOKEN
# found by hand, each ASCII token lower-cased there, each other token given to _norm once per
# distinct token (its answers cached: a process's tokens repeat) and cached up to this many. Tests
# hold it equal to strip_markup, _TOKEN and _norm, which define what a token is.
_NORM_CACHE_LIMIT = 1_000_000
_native.set_normaliser(_norm, _NORM_CACHE_LIMIT)


def tokenize(text: str) -> list[str]:
    """Normalised tokens of `text` (_norm of each match of _TOKEN in strip_markup(text))."""
    return _native.tokens(text)


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
    tokens, starts, ends = _native.spans(text)
    return Tokens(tokens, np.frombuffer(starts, dtype=np.int64), np.frombuffer(ends, dtype=np.int64))
