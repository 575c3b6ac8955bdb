"""Segment maintenance: size-tiered merging of a corpus's posting segments.

A merge moves rows one key range at a time, each range its own transaction of about
MERGE_STEP_ROWS rows: other writers (report jobs on the same SQLite file) wait for one step,
not a whole merge; the sort of a step fits in memory; a look-up between steps finds every row
exactly once; and a merge a killed run left is finished by the next one.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

from sqlalchemy import Connection

from contam.app.store import repo
from contam.app.store.db import checkpoint

MERGE_STEP_ROWS = 2_000_000  # rows a merge moves per transaction


def plan_merge(sizes: Sequence[tuple[int, int]], base: int, fanout: int) -> list[int]:
    """Size-tiered merging: the segments to merge next, or [] when none need it.

    Tier t holds segments of up to base * fanout**t rows; `fanout` segments of one tier merge
    into one of the next. Each row is rewritten once per tier it climbs (log_fanout of the
    corpus size), and a corpus has fewer than fanout segments per tier, so a look-up, which
    visits every segment, stays cheap as the corpus grows.
    """
    tiers: dict[int, list[int]] = {}
    for seg, rows in sizes:
        tier, cap = 0, base
        while rows > cap:
            tier, cap = tier + 1, cap * fanout
        tiers.setdefault(tier, []).append(seg)
    for tier in sorted(tiers):
        if len(tiers[tier]) >= fanout:
            return tiers[tier][:fanout]
    return []


def key_ranges(rows: int, step_rows: int = MERGE_STEP_ROWS) -> list[tuple[int, int | None]]:
    """[lo, hi) ranges of signed 64-bit keys holding about `step_rows` of `rows` rows each (keys
    are uniform hashes); the last range has no upper bound."""
    steps = max(1, -(-rows // step_rows))
    bounds = [-(2**63) + (2**64 * i) // steps for i in range(steps)]
    return [(lo, hi) for lo, hi in itertools.pairwise([*bounds, None]) if lo is not None]


def merge_segments(conn: Connection, corpus_id: int, segment_rows: int, fanout: int, stop: Callable[[], bool]) -> None:
    """Merge a corpus's segments as plan_merge says (fanout < 2: never), first finishing any
    merge a killed run left whatever the fan-out. Each step commits on `conn`, which must have
    no transaction open; `stop()` is asked before each step (the rest is finished next run)."""
    with conn.begin():  # finished whatever the fan-out: the rows are half moved
        pending = repo.unfinished_merges(conn, corpus_id)
    while True:
        for target, sources in pending:
            if not _move(conn, corpus_id, target, sources, stop):
                return
        if fanout < 2:
            return
        with conn.begin():
            group = plan_merge(repo.lock_segments(conn, corpus_id), segment_rows, fanout)
            if not group:
                return
            pending = [(repo.start_merge(conn, corpus_id, group), group)]


def _move(conn: Connection, corpus_id: int, target: int, sources: list[int], stop: Callable[[], bool]) -> bool:
    """Move every row of `sources` into `target`, a key range per transaction; False if stopped."""
    with conn.begin():
        rows = sum(n for s, n in repo.segment_sizes(conn, corpus_id) if s in sources)
    for lo, hi in key_ranges(rows):
        if stop():
            return False
        with conn.begin():
            repo.move_postings(conn, target, sources, lo, hi)
        checkpoint(conn)
    with conn.begin():
        repo.finish_merge(conn, target, sources)
    return True
