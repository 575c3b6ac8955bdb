"""What an indexing run reports: one FileReport per file, and the run's IndexSummary."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine

from contam.app.readers.corpus import split_counts
from contam.app.services.indexing import failed_but_kept, older_versions


@dataclass
class FileReport:
    path: str
    status: str  # done | unchanged | failed
    documents: int = 0
    tokens: int = 0
    ngrams: int = 0
    windows: int = 0
    bytes: int = 0  # file size on disk
    text_bytes: int = 0  # characters of document text read
    skipped: dict[str, int] = field(default_factory=dict)  # records by reason: left out, or repaired (REPAIRS)
    skipped_at: dict[str, list[str]] = field(default_factory=dict)  # reason -> where the first few were
    error: str | None = None
    seconds: float = 0.0
    indexed_as: str = ""  # unchanged: the path this content was indexed under (this one's, or another file's)

    @property
    def same_as(self) -> str:
        """The other file whose content this is, indexed already ("" where none: this path's own)."""
        return self.indexed_as if self.indexed_as != self.path else ""

    def counts(self) -> dict[str, Any]:
        """What the file's record keeps of the run (CorpusWriter.finish_file's keywords)."""
        return {
            "documents": self.documents,
            "tokens": self.tokens,
            "ngrams": self.ngrams,
            "windows": self.windows,
            "skipped": self.skipped,
            "seconds": self.seconds,
        }


@dataclass
class IndexSummary:
    corpus: str
    files: list[FileReport]
    seconds: float
    # paths of files this run indexed that the corpus held with other content before -> how many
    # versions of each it holds now (both versions' documents are in the corpus)
    older_versions: dict[str, int] = field(default_factory=dict)
    # paths of files this run failed on whose version indexed before stays in the corpus
    failed_kept: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, engine: Engine, corpus: str, corpus_id: int, files: list[FileReport], seconds: float) -> IndexSummary:
        """The summary of a run whose files ended as `files`, with what the corpus holds of their paths."""
        return cls(
            corpus, files, seconds, older_versions(engine, corpus_id, files), failed_but_kept(engine, corpus_id, files)
        )

    def total(self, name: str) -> int:
        return sum(getattr(f, name) for f in self.files if f.status == "done")

    @property
    def failed(self) -> list[FileReport]:
        return [f for f in self.files if f.status == "failed"]

    def records(self) -> tuple[dict[str, int], dict[str, int]]:
        """(records skipped, records indexed with a repair), each by reason, over the files indexed
        (as documents and tokens are): a failed file keeps none of its records, and its error
        says what it skipped when that is why it failed."""
        c: Counter[str] = Counter()
        for f in self.files:
            if f.status == "done":
                c.update(f.skipped)
        return split_counts(c)

    def as_dict(self) -> dict[str, Any]:
        mb = self.total("text_bytes") / 1e6
        skipped, repaired = self.records()
        return {
            "corpus": self.corpus,
            "files_indexed": sum(f.status == "done" for f in self.files),
            "files_unchanged": sum(f.status == "unchanged" for f in self.files),
            "files_failed": len(self.failed),
            "documents": self.total("documents"),
            "tokens": self.total("tokens"),
            "ngrams": self.total("ngrams"),
            "windows": self.total("windows"),
            "skipped": skipped,
            "repaired": repaired,
            "seconds": round(self.seconds, 3),
            "text_mb": round(mb, 3),
            "mb_per_s": round(mb / self.seconds, 3) if self.seconds > 0 else 0.0,
            "paths_with_older_versions": sorted(self.older_versions),
            "failed_paths_indexed_before": self.failed_kept,
        }
