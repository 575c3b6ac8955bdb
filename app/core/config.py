"""Every knob that changes what a signature is, in one frozen dataclass.

The fingerprint of a :class:`SignatureConfig` is stored with each corpus and each report;
an index is only ever queried with the settings it was built with.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from contam.app.errors import ConfigError

NORMALIZER_VERSION = "4"
HASH_SCHEME = "xxh3_64-tokens/poly64-splitmix-v1"
MINHASH_SCHEME = "datasketch-affine32"


@lru_cache(maxsize=1)
def _known_answers() -> tuple[tuple[str, str], ...]:
    from contam.app.core.signatures import known_answers as compute  # signatures imports this module

    return tuple(sorted(compute().items()))


def known_answers() -> dict[str, str]:
    """What this process's libraries answer for fixed texts (app.core.signatures.known_answers),
    computed once per process. An index stores them in its settings (`libraries`); a scorer or
    indexer whose answers differ refuses it, while any library version that gives the same
    answers is accepted: the fingerprint pins behaviour, not versions."""
    return dict(_known_answers())


def index_settings(config: dict[str, Any]) -> tuple[SignatureConfig, dict[str, tuple[Any, Any]]]:
    """An index's signature settings (a corpus's `config`) and how they differ from what this code
    reproduces with this process's libraries (their known answers; none: it can score against it)."""
    return _index_settings(json.dumps(config, sort_keys=True), _known_answers())


@lru_cache(maxsize=64)
def _index_settings(
    config: str, libraries: tuple[tuple[str, str], ...]
) -> tuple[SignatureConfig, dict[str, tuple[Any, Any]]]:
    """index_settings, worked out once per process, config and libraries, not per scan (each
    /check request builds a Scanner; building these dataclasses was 3% of a one-item request in
    py-spy)."""
    cfg = SignatureConfig.from_dict(json.loads(config))
    return cfg, cfg.differences(cfg.with_code_of(SignatureConfig(libraries=dict(libraries))))


@dataclass(frozen=True)
class SignatureConfig:
    """Signature settings of an index.

    ngram_n: words per exact-channel n-gram (5: a 6-9 word sentence keeps several).
    short_n: words per short-channel n-gram, stored beside the exact channel's in the same
        table (0: none). It finds what ngram_n cannot: items of short_n to ngram_n - 1 tokens,
        and edited copies whose unchanged runs are shorter than ngram_n; and it gives each short
        run of an item its corpus document frequency, so a common phrase is told from a copy.
        An index built before the channel existed has short_n = 0 (from_dict).
    sample_mod: keep only n-grams whose hash % sample_mod == 0 (1 keeps all): the index shrinks
        k-fold and a look-up finds a shared run of L tokens unless none of its L - n + 1 n-grams
        was kept, which happens with probability (1 - 1/k)^(L - n + 1) (the hash decides, the
        same way for the item and the corpus): a bound in probability, not a sure span
        (`sampling_miss`; README "Sampling"), and none for text in more than max_df documents
        (its kept n-grams are common, never looked up). The near-duplicate channel is not sampled.
    window / stride: near channel windows of `window` tokens every `stride` tokens, so an
        item inside a long document meets a window of about its own size.
    shingle: words per MinHash shingle. num_perm = bands * rows permutations.
    """

    ngram_n: int = 5
    short_n: int = 3
    sample_mod: int = 1
    window: int = 64
    stride: int = 32
    shingle: int = 3
    num_perm: int = 64
    bands: int = 16
    seed: int = 1
    normalizer_version: str = NORMALIZER_VERSION
    hash_scheme: str = HASH_SCHEME
    minhash_scheme: str = MINHASH_SCHEME
    # what the libraries compute, as known answers (not their versions); see known_answers
    libraries: dict[str, str] = field(default_factory=known_answers, compare=True, hash=False)

    def __post_init__(self) -> None:
        checks = [
            (self.ngram_n >= 1, "ngram_n must be at least 1"),
            # 3: the scorer's MATCH_N (app.core.items), whose grams it already has for every item
            (self.short_n in (0, 3) and self.short_n < self.ngram_n, "short_n must be 0, or 3 below ngram_n"),
            (self.sample_mod >= 1, "sample_mod must be at least 1"),
            (self.shingle >= 1, "shingle must be at least 1"),
            (self.window >= self.shingle, "window must be at least shingle"),
            (1 <= self.stride <= self.window, "stride must be between 1 and window"),
            (self.bands >= 1, "bands must be at least 1"),
            (self.bands >= 1 and self.num_perm % self.bands == 0, "num_perm must be a multiple of bands"),
            (self.seed >= 0, "seed must not be negative"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)

    @property
    def rows(self) -> int:
        return self.num_perm // self.bands

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SignatureConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        # a stored config without short_n is an index built before the short channel: it has none
        return cls(**{"short_n": 0, **{k: v for k, v in data.items() if k in names}})

    def fingerprint(self) -> str:
        """A short stable digest of every setting (sha256 of the canonical JSON)."""
        blob = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def with_code_of(self, other: SignatureConfig) -> SignatureConfig:
        """These options with `other`'s tokeniser, hash schemes and library answers: the settings
        code sets, which no option of `contam index` chooses."""
        return dataclasses.replace(
            self,
            normalizer_version=other.normalizer_version,
            hash_scheme=other.hash_scheme,
            minhash_scheme=other.minhash_scheme,
            libraries=dict(other.libraries),
        )

    def differences(self, other: SignatureConfig) -> dict[str, tuple[Any, Any]]:
        """Settings that differ between two configs, flattening library versions."""
        mine, theirs = self.to_dict(), other.to_dict()
        a = {**{k: v for k, v in mine.items() if k != "libraries"}, **mine["libraries"]}
        b = {**{k: v for k, v in theirs.items() if k != "libraries"}, **theirs["libraries"]}
        return {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


@dataclass(frozen=True)
class Thresholds:
    """Decision thresholds (request parameters); sources and calibration in the README."""

    contaminated_coverage: float = 0.8  # Llama 2's "dirty" bound, applied to the item's own text
    suspicious_coverage: float = 0.4  # the null stays under this (bench/calibrate.py, README)
    longest_match: int = 13  # GPT-3 (Brown et al. 2020): a shared 13-token run
    max_df: int = 10  # GPT-3: n-grams in more than ~10 documents are boilerplate
    template_min_items: int = 2  # text in this many items of the benchmark is shared, not the item's own
    passage_tokens: int = 20  # a shared run this long found alone is a passage
    passage_max_items: int = 10  # text in more items than this is a template, not a passage
    min_bits: float = 16.0  # information a match must carry to be evidence (app.core.surprise)
    # A truncated copy (a page cut short, a half-quoted item) holds the item's opening in one run;
    # a chance match rarely starts where the item does. At 6 to 10 own tokens from the first one
    # on, no item of the null was flagged by it (bench/calibrate.py): 8 leaves a margin.
    opening_run: int = 8
    # A run of longest_match own tokens flags an item only when it is this share of the item's own
    # text, or two longest_match runs long (scoring.run_needed): one 13-24-token sentence of a
    # 300-460-token item that another page of the same documentation holds is a passage of it, not
    # a copy (a probe of 243 clean long items: 18 of the 52 flagged, now clean; bench/MEASUREMENTS.md,
    # session 37); a run of 26 tokens or more flags any item, however long.
    longest_share: float = 0.1

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)
