"""The worker side of indexing: tokenise and sign a batch of documents in a worker process.

Pure: texts and settings in, arrays out; nothing here touches the database.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

import numpy as np
import xxhash
import zstandard

from contam.app.core.config import SignatureConfig
from contam.app.core.signatures import sign_many
from contam.app.core.text import tokenize


def exit_with(parent: int, every: float = 1.0) -> None:
    """A worker's initializer: end the worker when the indexer that started it is gone (killed
    with -9 it cannot stop its pool, and a worker waiting for work would wait forever)."""

    def watch() -> None:
        while True:
            time.sleep(every)
            try:
                os.kill(parent, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:  # the pid now belongs to another user's process: ours is gone
                os._exit(1)

    threading.Thread(target=watch, name="contam-parent-watch", daemon=True).start()


@dataclass
class SignedBatch:
    """One batch's rows; postings sorted by (hash, doc) and (key, doc, win), n-grams distinct per doc."""

    n_tokens: np.ndarray
    n_chars: list[int]
    text_hash: np.ndarray
    blobs: list[bytes] | None
    ng_hash: np.ndarray
    ng_doc: np.ndarray  # index into the batch
    band_key: np.ndarray
    band_doc: np.ndarray
    band_win: np.ndarray


def stable_order(keys: np.ndarray) -> np.ndarray:
    """np.argsort(keys, kind="stable"), several times faster: an unstable sort (numpy's
    introsort, vectorised) and then, only within runs of equal keys, the indices put back in
    ascending order, which is what makes a sort stable. The same permutation, not just an equally
    sorted one (a test holds them equal)."""
    order = np.argsort(keys)
    k = keys[order]
    tie = k[1:] == k[:-1]
    if not tie.any():
        return order
    member = np.zeros(len(k), dtype=bool)
    member[1:] |= tie
    member[:-1] |= tie
    pos = np.flatnonzero(member)  # the positions of every run of equal keys, runs one after another
    run = np.cumsum(np.r_[True, ~tie[pos[1:] - 1]])  # a new run where a member's key differs from the one before
    combined = run * len(keys) + order[pos]  # each run's indices, ascending within the run
    combined.sort()
    order[pos] = combined % len(keys)
    return order


def sign_batch(texts: list[str], cfg: SignatureConfig, store_text: bool) -> SignedBatch:
    """Tokenise and sign a batch of texts (runs in a worker process): each text tokenised on
    its own, then all of them signed at once (sign_many)."""
    comp = zstandard.ZstdCompressor(level=3) if store_text else None
    raws = [t.encode("utf-8", "surrogatepass") for t in texts]
    sig = sign_many([tokenize(t) for t in texts], cfg)
    # Sorted here, in parallel, so that the single writer inserts B-tree keys in order; the
    # same sort drops an n-gram's repeats within a document. The rows come in (doc, win) order
    # already, so a stable sort on the key alone gives (key, doc[, win]) order.
    order = stable_order(sig.ngrams)
    ng_hash, ng_doc = sig.ngrams[order], sig.ng_text[order]
    keep = np.ones(len(ng_hash), dtype=bool)
    keep[1:] = (ng_hash[1:] != ng_hash[:-1]) | (ng_doc[1:] != ng_doc[:-1])
    band_key = sig.bands.ravel()
    order = stable_order(band_key)
    return SignedBatch(
        n_tokens=sig.n_tokens,
        n_chars=[len(t) for t in texts],
        text_hash=np.array([xxhash.xxh3_64_intdigest(r) for r in raws], dtype=np.uint64).view(np.int64),
        blobs=[comp.compress(r) for r in raws] if comp is not None else None,
        ng_hash=ng_hash[keep],
        ng_doc=ng_doc[keep],
        band_key=band_key[order],
        band_doc=np.repeat(sig.win_text, cfg.bands)[order],
        band_win=np.repeat(sig.win_index, cfg.bands)[order],
    )
