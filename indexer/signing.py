"""The worker side of indexing: tokenise and sign a batch of documents in a worker process.

Pure: texts and settings in, arrays out; nothing here touches the database.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import xxhash
import zstandard

from contam.app.core.config import SignatureConfig
from contam.app.core.signatures import sign_text
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


def sign_batch(texts: list[str], cfg: SignatureConfig, store_text: bool) -> SignedBatch:
    """Tokenise and sign a batch of texts (runs in a worker process)."""
    comp = zstandard.ZstdCompressor(level=3) if store_text else None
    n_tok, hashes, blobs = [], [], []
    ng, ng_doc, bk, bk_doc, bk_win = [], [], [], [], []
    for i, t in enumerate(texts):
        raw = t.encode("utf-8", "surrogatepass")
        sig = sign_text(tokenize(t), cfg, distinct=False)
        n_tok.append(sig.n_tokens)
        hashes.append(xxhash.xxh3_64_intdigest(raw))
        if comp is not None:
            blobs.append(comp.compress(raw))
        ng.append(sig.ngrams)
        ng_doc.append(np.full(len(sig.ngrams), i, dtype=np.int32))
        if sig.bands.size:
            w = sig.bands.shape[0]
            bk.append(sig.bands.ravel())
            bk_doc.append(np.full(sig.bands.size, i, dtype=np.int32))
            bk_win.append(np.repeat(np.arange(w, dtype=np.int32), cfg.bands))

    def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.empty(0, dtype=dtype)

    # Sorted here, in parallel, so that the single writer inserts B-tree keys in order; the
    # same sort drops an n-gram's repeats within a document. The rows are concatenated in
    # (doc, win) order already, so a stable sort on the key alone gives (key, doc[, win]) order:
    # one sort where lexsort made one per column.
    ng_hash, ng_doc_ = cat(ng, np.int64), cat(ng_doc, np.int32)
    order = np.argsort(ng_hash, kind="stable")
    ng_hash, ng_doc_ = ng_hash[order], ng_doc_[order]
    keep = np.ones(len(ng_hash), dtype=bool)
    keep[1:] = (ng_hash[1:] != ng_hash[:-1]) | (ng_doc_[1:] != ng_doc_[:-1])
    band_key, band_doc, band_win = cat(bk, np.int64), cat(bk_doc, np.int32), cat(bk_win, np.int32)
    order = np.argsort(band_key, kind="stable")
    return SignedBatch(
        n_tokens=np.array(n_tok, dtype=np.int64),
        n_chars=[len(t) for t in texts],
        text_hash=np.array(hashes, dtype=np.uint64).view(np.int64),
        blobs=blobs if comp is not None else None,
        ng_hash=ng_hash[keep],
        ng_doc=ng_doc_[keep],
        band_key=band_key[order],
        band_doc=band_doc[order],
        band_win=band_win[order],
    )
