"""Small corpus builders shared by the tests (the indexing itself: the `index_corpus` fixture)."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

VOCAB = [f"w{i}" for i in range(5000)]


def make_docs(n: int, words: int, seed: int, prefix: str) -> list[dict[str, Any]]:
    """n documents of `words` random words each, ids prefix0, prefix1, ..."""
    rng = random.Random(seed)
    return [{"id": f"{prefix}{i}", "text": " ".join(rng.choices(VOCAB, k=words))} for i in range(n)]


def write_jsonl(path: Path, docs: list[dict[str, Any]], gz: bool = False) -> Path:
    data = "".join(json.dumps(d) + "\n" for d in docs).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path
