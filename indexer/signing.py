"""The worker side of indexing: tokenise and sign a batch of documents in a worker process.

Pure: texts and settings in, arrays out; nothing here touches the database.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import zstandard

from contam.app.core import _native
from contam.app.core.config import SignatureConfig
from contam.app.core.signatures import sign_hashes, text_hashes, text_token_hashes


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
    """Tokenise and sign a batch of texts (runs in a worker process): their token hashes straight
    from the texts (text_token_hashes), then all of them signed at once (sign_hashes)."""
    comp = zstandard.ZstdCompressor(level=3) if store_text else None
    raws = [t.encode("utf-8", "surrogatepass") for t in texts]
    sig = sign_hashes(*text_token_hashes(texts), cfg)
    # Sorted here, in parallel, so that the single writer inserts B-tree keys in order, by
    # (key, doc[, win]): what a stable sort on the key leaves of rows that come in (doc, win)
    # order; the same sort drops an n-gram's repeats within a document.
    ng_hash, ng_doc, _ = _rows(_native.sort_rows(sig.ngrams, sig.ng_text, None, True))
    band_key, band_doc, band_win = _rows(
        _native.sort_rows(
            sig.bands.ravel(), np.repeat(sig.win_text, cfg.bands), np.repeat(sig.win_index, cfg.bands), False
        )
    )
    return SignedBatch(
        n_tokens=sig.n_tokens,
        n_chars=[len(t) for t in texts],
        text_hash=text_hashes(raws),
        blobs=[comp.compress(r) for r in raws] if comp is not None else None,
        ng_hash=ng_hash,
        ng_doc=ng_doc,
        band_key=band_key,
        band_doc=band_doc,
        band_win=band_win,
    )


def _rows(sorted_rows: tuple[memoryview, memoryview, memoryview | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """sort_rows' columns as arrays: int64 keys, int32 documents and windows (none: empty)."""
    keys, docs, wins = sorted_rows
    return (
        np.frombuffer(keys, dtype=np.int64),
        np.frombuffer(docs, dtype=np.int32),
        np.frombuffer(wins if wins is not None else b"", dtype=np.int32),
    )
