"""contam as a library: one import name, a small facade over the services.

    import contam
    index = contam.Index("sqlite:////tmp/contam.db")      # created and migrated if new
    index.add("web", ["corpus.jsonl"])                      # index corpus files into a corpus
    result = index.scan(["Which river flows through Baghdad?", {"question": "...", "answer": "..."}])
    result.summary["contaminated_share"], [r.score.status for r in result.results]

Results are the same typed records the CLI and the API print (ScanResult, ItemResult with its
ItemScore and Evidence); errors are ContamError subclasses whose message names the problem.

Importing a submodule (a Ray worker imports contam.indexer.cluster, the CLI its commands) does
not load the facade and every service it names: the package's names are loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contam.app import __version__
    from contam.app.core.config import SignatureConfig, Thresholds
    from contam.app.core.types import BenchmarkItem
    from contam.app.errors import ContamError
    from contam.app.services.checking import CheckResult as ScanResult
    from contam.app.services.scanning import Evidence, ItemResult
    from contam.facade import FilesFailed, Index
    from contam.indexer.summary import IndexSummary

__all__ = [
    "BenchmarkItem",
    "ContamError",
    "Evidence",
    "FilesFailed",
    "Index",
    "IndexSummary",
    "ItemResult",
    "ScanResult",
    "SignatureConfig",
    "Thresholds",
    "__version__",
]


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__, "as_item"])


def __getattr__(name: str) -> Any:
    if name in __all__ or name == "as_item":
        from contam import facade

        return getattr(facade, name)
    raise AttributeError(f"module 'contam' has no attribute {name!r}")
