"""Signing cost alone: CPU-seconds per MB of text of `sign_batch`, as the indexer's workers call it.

Usage: python bench/sign_speed.py [--root CHECKOUT] [--shards 3] [CORPUS_DIR]

Reads the first --shards files of the corpus (default: ../shared/eval/corpus) into batches
first, then times `time.process_time()` around signing them, so reading and decompressing are
not counted. --root imports `contam` from another checkout (for example an older commit
unpacked with `git archive`), to compare two versions on the same machine: run both in turn,
several times.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", nargs="?", default=str(ROOT.parent / "shared" / "eval" / "corpus"))
    ap.add_argument("--root", default=str(ROOT), help="the checkout whose contam package is timed")
    ap.add_argument("--shards", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, args.root)
    from contam.app.core.config import SignatureConfig
    from contam.app.readers.corpus import find_files, read_documents
    from contam.indexer.job import batches
    from contam.indexer.options import IndexOptions
    from contam.indexer.signing import sign_batch

    cfg, opts = SignatureConfig(), IndexOptions()
    files = find_files([Path(args.corpus)])[: args.shards]
    texts = [[d.text for d in b] for f in files for b in batches(read_documents(f, Counter()), opts)]
    mb = sum(len(t) for b in texts for t in b) / 1e6
    t0 = time.process_time()
    for b in texts:
        sign_batch(b, cfg, opts.store_text)
    cpu = time.process_time() - t0
    print(f"{args.root}: {mb:.1f} MB of text in {len(files)} files: {cpu / mb:.4f} CPU-seconds per MB of signing")


if __name__ == "__main__":
    main()
