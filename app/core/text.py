"""Normalisation and tokenisation, with character offsets into the original text.

Rules (normaliser version in config.NORMALIZER_VERSION):
* HTML/XML tags (a name, then attributes as HTML writes them) and character entities are
  blanked to spaces of the same length, so `<p>What is</p>` and `What is` give the same tokens
  and offsets still point into the original text (DESIGN.md, item 9). A comment's text stays
  (its `<!--` and `-->` go as punctuation): a corpus of raw pages holds it, and a copy of an item
  inside one is a copy. Text between a `<` and a `>` that is not a tag's (`if n<limit: ...
  x>0` in code, `<What is ...?>` in Markdown) stays too: before version 4 any `<name ...>` of up
  to 400 characters and every comment were blanked, and copies inside them never found. Markdown
  punctuation disappears with all punctuation.
* Tokens are runs of letters and digits (Unicode aware; `_` separates, so snake_case
  identifiers split into words). CJK ideographs and kana (half-width kana too) are one token
  each (item 7).
* A combining mark (general categories Mn and Mc: accents written apart, Indic vowel signs,
  Arabic and Hebrew vowel points, a kana's voiced mark) belongs to the token it follows, so text
  in NFD and in NFC gives the same tokens; a mark after no letter is dropped, and an enclosing
  one (a keycap round a digit) parts like punctuation.
* Invisible characters inside a word (default-ignorable code points: soft hyphen, zero-width
  space and joiners, bidi controls, variation selectors) and a hyphen at a line break between
  two letters ("interna-\ntionally", as text extracted from PDF or OCR breaks words) join the
  word's two parts into one token; the token's span keeps them, its text does not.
* Each token is NFKC-normalised and casefolded. Whitespace and indentation never matter,
  so reformatted code still matches.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from contam.app.core import _native
from contam.app.core.unicode_ranges import IGNORABLE, MARKS

_SURROGATE = re.compile("[\ud800-\udfff]")


def without_surrogates(text: str) -> str:
    """`text` with each lone surrogate (a JSON escape such as "\\ud800" that pairs with nothing;
    a str holds a pair as one character) replaced by U+FFFD, one for one, so offsets hold: no
    UTF-8 text can hold one, and writing it out (JSON, a page) failed."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def search_folded(text: str, spaces: bool = True) -> str:
    """Text as the item search compares it, stored and asked alike: NFKC (a composed and a
    decomposed accent are one), casefolded, and "i" with a combining dot above as plain "i"
    (Python folds "İstanbul" to "i̇stanbul", which "istanbul" did not find; PostgreSQL's lower()
    had found it); and every run of white space as one space ("Return  the", a word's line break:
    a search with two spaces found nothing, a trial), unless `spaces` is False (rows stored before
    it, which hold white space as written)."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold()).replace("i\u0307", "i")
    return _SPACES.sub(" ", folded) if spaces else folded


_SPACES = re.compile(r"\s+")


def natural_key(text: str) -> str:
    """`text` as ids sort by it: each run of ASCII digits as its length (two digits) then the
    number without leading zeros, so "b2" sorts before "b10" (they sorted as text, b10 first: a
    session's note); the rest as it is."""
    return _DIGIT_RUN.sub(_number_key, text)


def _number_key(m: re.Match[str]) -> str:
    digits = m.group().lstrip("0") or "0"
    return f"{min(len(digits), 99):02d}{digits}"


_DIGIT_RUN = re.compile(r"[0-9]+")


def _class(ranges: tuple[tuple[int, int], ...]) -> str:
    """A regular-expression character class body of inclusive code point ranges."""
    return "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)


_CJK_RANGES = (  # without the kana's combining voiced marks (U+3099, U+309A): marks
    (0x3040, 0x3098),
    (0x309B, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFF9D),  # half-width katakana (NFKC makes each the full-width one)
    (0x20000, 0x2FFFF),
)
_MARK_RANGES = tuple(sorted((*MARKS, (0xFF9E, 0xFF9F))))  # and the half-width kana's voiced marks (letters by category)
_CJK, _MARK, _IGNORABLE = _class(_CJK_RANGES), _class(_MARK_RANGES), _class(IGNORABLE)
# a hyphen (or a soft one) at a line break, with the line's indentation, between a letter (or its
# mark) and a letter: not a digit, so "D-" ending a line before "0.0", or a range of years, stays apart
_BREAK = rf"(?:(?<=[^\W\d_])|(?<=[{_MARK}]))[-\u2010\u00ad][ \t]*\r?\n[ \t]*(?=[^\W\d_])"
_WORD = rf"[^\W_{_CJK}{_MARK}{_IGNORABLE}]"
# a CJK character and the marks after it; a run of word characters, marks after any of them, and
# ignorables or line-break hyphens between two of them (never at an end)
_TOKEN = re.compile(
    rf"[{_CJK}](?:[{_IGNORABLE}]*[{_MARK}])*"
    rf"|{_WORD}(?:[{_IGNORABLE}]*[{_MARK}]|(?:[{_IGNORABLE}]|{_BREAK})*{_WORD})*"
)
_DROPPED = re.compile(rf"{_BREAK}|[{_IGNORABLE}]")
_CJK_CHAR = re.compile(rf"[{_CJK}]")


_UNSPACED_RANGES = (  # Thai, Lao, Myanmar (and its extensions), Khmer (and its symbols)
    (0x0E00, 0x0EFF),
    (0x1000, 0x109F),
    (0x1780, 0x17FF),
    (0x19E0, 0x19FF),
    (0xA9E0, 0xA9FF),
    (0xAA60, 0xAA7F),
)
_UNSPACED_CHAR = re.compile(f"[{_class(_UNSPACED_RANGES)}]")
UNSPACED = "written without spaces between words"  # how a benchmark's notes name such text (ReadNotes.said)


def _mostly(text: str, chars: re.Pattern[str]) -> bool:
    """Whether most of a text's letters are `chars`."""
    if text.isascii():
        return False
    letters = sum(c.isalpha() for c in text)
    return letters > 0 and 2 * sum(c.isalpha() for c in chars.findall(text)) > letters


def mostly_cjk(text: str) -> bool:
    """Whether most of a text's letters are CJK ideographs and kana, each of which is a token of
    its own (where a word of other scripts is one): a rule's length in tokens is then a word or
    two, not a sentence (bench/MEASUREMENTS.md, session 38)."""
    return _mostly(text, _CJK_CHAR)


# What a CJK token says, in words of a spaced script. The tokeniser gives every ideograph and kana
# a token of its own, so a rule's length in tokens (a phrase's 5-7, `opening_run`'s 8) is a word
# or three of Chinese or Japanese: 7 tokens are "メッセージを送信" ("send a message"), and found in
# one document by chance they flagged 10.8% of a probe's Japanese messages and 1.6% of its Chinese
# ones (bench/unspaced_probe.py). The same messages in English and in translation, this machine's
# gettext catalogues (`python bench/unspaced_probe.py --words-per-token`): 1.8 ideographs per
# English word in Chinese (zh_CN 1.79, zh_TW 1.82), and, ideographs counted so, 4.4 kana per word
# in Japanese (katakana loanwords, "ファイル" for "file", and the kana of particles and endings).
HAN_PER_WORD, KANA_PER_WORD = 1.8, 4.4
# _CJK_RANGES by kind: 1 a kana, 2 an ideograph (between two ranges' ends, 0: neither)
_CJK_ENDS = np.array([e for lo, hi in _CJK_RANGES for e in (lo, hi + 1)], dtype=np.uint32)
_CJK_KIND = np.array([0] + [k for lo, _hi in _CJK_RANGES for k in (2 - (lo < 0x3100 or lo == 0xFF66), 0)], np.int8)


def words_in(tokens: Sequence[str]) -> float:
    """How many words of a spaced script these tokens say as much as: a token of other text is one
    word, an ideograph 1 / HAN_PER_WORD of one, a kana 1 / KANA_PER_WORD (a token is either by its
    first character). By code point, the tokens laid end to end: a regular expression per token made
    `prepare` half as slow again on CJK text (tests/core/test_text_and_signatures.py holds the two equal)."""
    text = "".join(tokens)
    if text.isascii():
        return float(len(tokens))
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    firsts = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)[np.cumsum(lengths) - lengths]
    kinds = np.bincount(_CJK_KIND[np.searchsorted(_CJK_ENDS, firsts, side="right")], minlength=3)
    kana, han = int(kinds[1]), int(kinds[2])
    return len(tokens) - han - kana + han / HAN_PER_WORD + kana / KANA_PER_WORD


def mostly_unspaced(text: str) -> bool:
    """Whether most of a text's letters are Thai, Lao, Khmer or Burmese, scripts written without
    spaces between words, which the tokeniser does not cut into words: a run of them between
    spaces or punctuation is one token, so a sentence is a token or two (too short to judge), and
    a copy run into the text around it shares no token with the item (bench/unspaced_probe.py)."""
    return _mostly(text, _UNSPACED_CHAR)


# An attribute as HTML writes one: a name, and a value after "=", quoted (a quoted value may hold
# ">", never "<": a tag's match ends before the next "<", so matching stays linear) or bare. A
# tag with no value holds one attribute at most (`<details open>`): words between a "<" and a ">"
# (`<U as IntoIterator>`, `<commit hash>`, `<Jerry Jeudy caught the fade>`, `if a<b and c>d`) are
# text, and of 13.4 M tags in 20,000 markup files of this machine none with two or more was a tag.
_NAME = r"[A-Za-z_:@][-A-Za-z0-9_:.@]*"
_ATTRIBUTE = rf"""{_NAME}(?:\s*=\s*(?:"[^"<]{{0,400}}"|'[^'<]{{0,400}}'|[^\s"'=<>`][^\s"'<>`]{{0,399}}))?"""
_MARKUP = re.compile(
    rf"</?[A-Za-z][A-Za-z0-9:-]*(?!(?:\s+{_NAME}(?!\s*=)){{2,}}\s*/?>)(?:\s+{_ATTRIBUTE}){{0,64}}\s*/?>"
    r"|&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});"
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
    """A raw token's text: without the ignorables and line-break hyphens inside it (a break may hold
    markup, blanked as strip_markup does), NFKC-normalised and casefolded."""
    return unicodedata.normalize("NFKC", _DROPPED.sub("", strip_markup(token))).casefold()


def _flat(ranges: tuple[tuple[int, int], ...]) -> bytes:
    """Ranges as the compiled tokeniser reads them: int64 first, last, first, last, ..."""
    return np.array(ranges, dtype=np.int64).tobytes()


# The tokeniser itself is compiled (native/native.c): _MARKUP blanked and every match of _TOKEN
# found by hand, each ASCII token lower-cased there, each other token given to _norm once per
# distinct token (its answers cached: a process's tokens repeat) and cached up to this many. Tests
# hold it equal to strip_markup, _TOKEN and _norm, which define what a token is.
_NORM_CACHE_LIMIT = 1_000_000


def install_normaliser(cache_limit: int = _NORM_CACHE_LIMIT) -> None:
    """Give the compiled tokeniser _norm (its cache emptied, holding up to `cache_limit` tokens) and
    the character classes; done once at import."""
    _native.set_normaliser(_norm, cache_limit, *(_flat(r) for r in (_CJK_RANGES, _MARK_RANGES, IGNORABLE)))


install_normaliser()


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
