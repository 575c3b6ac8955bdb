"""The library facade (`import contam`): contam/__init__.py loads it on first use."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from contam.app import __version__ as __version__  # re-exported by contam/__init__.py, as the two below
from contam.app.core.config import SignatureConfig, Thresholds
from contam.app.core.types import BenchmarkItem, answer_of
from contam.app.errors import ContamError
from contam.app.services.checking import CheckResult as ScanResult
from contam.app.services.checking import CheckService
from contam.app.services.corpora import CorpusService
from contam.app.services.database import connect, migrate
from contam.app.services.scanning import Evidence as Evidence
from contam.app.services.scanning import ItemResult as ItemResult
from contam.app.settings import get_settings
from contam.indexer.executors import run_index
from contam.indexer.options import IndexOptions
from contam.indexer.summary import IndexSummary

ItemLike = str | Mapping[str, Any] | BenchmarkItem


class FilesFailed(ContamError):
    """Corpus files failed to index (`contam index` exits 1 for them); the rest were indexed,
    and `summary` says what was done. Index.add(strict=False) returns the summary instead."""

    def __init__(self, summary: IndexSummary) -> None:
        self.summary = summary
        failed = summary.failed
        shown = "; ".join(str(f.error or f.path) for f in failed[:3]) + ("; ..." if len(failed) > 3 else "")
        shown = shown.replace("--text-field", "Index.add(text_field=...)")  # the CLI's words, said for Python
        super().__init__(f"{len(failed)} of {len(summary.files)} corpus file(s) failed: {shown}")

    def __reduce__(self) -> Any:  # pickled by worker pools: rebuilt from the summary
        return (FilesFailed, (self.summary,))


def as_item(row: int, item: ItemLike) -> BenchmarkItem:
    """A text (a question alone), a mapping with question / passage / choices / answer /
    solution / id, or a BenchmarkItem, as a BenchmarkItem."""
    if isinstance(item, BenchmarkItem):
        return item
    if isinstance(item, str):
        return BenchmarkItem(str(row), row, question=item)
    given = item.get("choices")
    given = () if given is None else given
    if isinstance(given, bytes | bytearray):
        given = given.decode("utf-8", "replace")
    if isinstance(given, str):  # a string is one choice, not one a character (a review)
        given = (given,) if given else ()
    refused = ContamError(f"item {row}: choices must be a list of texts, got {type(given).__name__}")
    if isinstance(given, Mapping) or not isinstance(given, Iterable):  # a list, a tuple, an array
        raise refused
    try:
        choices = tuple(str(c) for c in given)
    except TypeError:  # iterable in name only (a 0-d array)
        raise refused from None
    ident = item.get("id")
    return BenchmarkItem(
        str(ident) if ident is not None else str(row),
        row,
        question=str(item.get("question") or ""),
        passage=str(item.get("passage") or ""),
        choices=choices,
        answer=answer_of("" if item.get("answer") is None else item["answer"], choices),  # 0 is an index
        solution=str(item.get("solution") or ""),
    )


class Index:
    """An index database (SQLite file or PostgreSQL): add corpora, scan items and files."""

    def __init__(self, url: str | None = None) -> None:
        """`url`: an SQLAlchemy URL (default: CONTAM_DATABASE_URL, else the user's contam.db).
        The schema is created or migrated to the current version."""
        self.url = url or get_settings().database_url
        migrate(self.url)
        self.engine = connect(self.url)

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.engine.dispose()

    def add(
        self,
        corpus: str,
        paths: Iterable[str | Path],
        *,
        text_field: str = "text",
        id_field: str = "id",
        settings: SignatureConfig | None = None,
        workers: int = 1,
        executor: str = "local",
        address: str | None = None,
        strict: bool = True,
    ) -> IndexSummary:
        """Index corpus files or folders into `corpus` (created with `settings` if new).
        A file that cannot be read, or gives no documents (a wrong `text_field`, say), fails
        with its reason; the others are indexed, then FilesFailed is raised, holding the
        summary (`strict=False`: the summary is returned, its `failed` files listed there).

        `executor`: "local", `workers` processes on this machine, or "ray", Ray tasks on the
        cluster at `address` (None: RAY_ADDRESS, else the cluster started last on this machine,
        else a new local one), `workers` files in work at once (0: one per CPU of the cluster),
        each worker writing straight into the database (PostgreSQL only), as `contam index
        --executor ray --address ADDR` does."""
        opts = IndexOptions(text_field=text_field, id_field=id_field, workers=workers)
        cfg, files = settings or SignatureConfig(), [Path(p) for p in paths]
        summary = run_index(
            self.engine, corpus, cfg, opts, files, executor=executor, address=address, tasks=workers or None
        )
        if strict and summary.failed:
            raise FilesFailed(summary)
        return summary

    def corpora(self) -> list[str]:
        return CorpusService(self.engine).names()

    def delete(self, corpus: str) -> None:
        CorpusService(self.engine).delete(corpus)

    def scan(
        self,
        items: Iterable[ItemLike],
        *,
        corpora: Sequence[str] | None = None,
        thresholds: Thresholds | None = None,
    ) -> ScanResult:
        """Score items (texts, mappings or BenchmarkItems) against the corpora (default: those
        whose settings match); nothing is stored."""
        checks = CheckService(self.engine, get_settings().limits())
        return checks.items([as_item(i, it) for i, it in enumerate(items)], corpora, thresholds)

    def scan_file(
        self,
        path: str | Path,
        *,
        mapping: Mapping[str, Any] | None = None,
        corpora: Sequence[str] | None = None,
        thresholds: Thresholds | None = None,
    ) -> ScanResult:
        """Score every item of a benchmark file or save_to_disk folder (any format `contam scan` reads)."""
        return CheckService(self.engine, get_settings().limits()).path(Path(path), mapping, corpora, thresholds)
