"""The indexing job's knobs, in one frozen dataclass: the settings and the CLI take their
defaults from here."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class IndexOptions:
    text_field: str = "text"
    id_field: str = "id"
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
    commit_bytes: int = 256 << 20  # text per transaction: small files are committed in groups
    commit_seconds: float = 30.0  # or this long: other writers (report jobs) wait at most ~this
