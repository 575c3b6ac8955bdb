"""The indexing job's knobs, in one frozen dataclass: the settings and the CLI take their
defaults from here (a setting left unset means the default below)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contam.app.core.units import mib_to_bytes
from contam.app.errors import ConfigError
from contam.app.readers.corpus import DEFAULT_ID_FIELD

if TYPE_CHECKING:  # a Ray worker imports this module, and needs no settings (pydantic: 0.15 s)
    from contam.app.settings import Settings


@dataclass(frozen=True)
class IndexOptions:
    text_field: str = "text"
    id_field: str = DEFAULT_ID_FIELD
    limit: int | None = None  # documents per file
    workers: int = 1
    batch_size: int = 2000  # documents per batch sent to a worker
    batch_bytes: int = 1 << 20  # or this much text, whichever comes first
    store_text: bool = True  # keep the (compressed) text; else only a pointer into the file
    # Posting rows buffered and then written as one segment (a sorted append, which never
    # touches older pages): memory grows with it (about 30 bytes a row), the number of segments
    # each look-up visits falls with it (README, "How postings are stored").
    segment_rows: int = 8_000_000
    # This many segments of one size merge into one (look-ups then visit fewer); 0: never.
    # Off by default: merging costs more indexing time than it saves in look-ups below many
    # GB of text (README has the figures).
    merge_fanout: int = 0
    commit_bytes: int = 256 << 20  # text per transaction (256 MiB): small files are committed in groups
    commit_seconds: float = 30.0  # or this long: other writers (report jobs) wait at most ~this

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 1:  # 0 and -1 each took one document a file
            raise ConfigError(f"limit must be at least 1 document per file (or none), not {self.limit}")

    def extraction(self) -> dict[str, Any]:
        """The settings that decide which documents a file gives (part of a file's identity)."""
        return {"text_field": self.text_field, "id_field": self.id_field, "limit": self.limit}


def index_options(
    settings: Settings,
    *,
    workers: int = 0,
    batch_size: int | None = None,
    commit_mb: float | None = None,
    segment_rows: int | None = None,
    merge_fanout: int | None = None,
    **only_cli: Any,
) -> IndexOptions:
    """The options of a run: the command line's value where given (None, or 0 workers or batch
    size, is not given), else the environment's (settings), else IndexOptions' default.
    `only_cli` are the options that have no environment variable."""
    default = IndexOptions()
    commit = commit_mb if commit_mb is not None else settings.commit_mb
    if commit is not None and not math.isfinite(commit):  # "inf" was an OverflowError, exit 3 (a trial)
        raise ConfigError(
            f"--commit-mb (CONTAM_COMMIT_MB) must be a number of MiB, not {commit}: 0 commits after each "
            "file; a large one (e.g. 1000000) commits once, at the end"
        )
    fanout = next(v for v in (merge_fanout, settings.merge_fanout, default.merge_fanout) if v is not None)
    if fanout == 1:  # one segment "merged" alone is itself: it never merged, without a word
        raise ConfigError("--merge-fanout (CONTAM_MERGE_FANOUT) must be 0 (never merge) or at least 2")
    return IndexOptions(
        workers=workers or settings.resolved_workers(),
        batch_size=batch_size or settings.batch_size or default.batch_size,
        commit_bytes=default.commit_bytes if commit is None else mib_to_bytes(commit),
        segment_rows=segment_rows or settings.segment_rows or default.segment_rows,
        merge_fanout=fanout,
        **only_cli,
    )
