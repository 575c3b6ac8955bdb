"""The block layout's writers: copy_payload (PostgreSQL's COPY stream, in C, from records or their
columns) gives the bytes the per-block loop it replaced gave, and block_rows (SQLite's rows, in C)
the same blocks."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from contam.app.store import blocks


def _copy_payload_loop(seg: int, rec: np.ndarray) -> bytes:
    """The former copy_payload, one block at a time: the reference."""
    b = blocks.buckets(rec["key"])
    starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
    ends = np.r_[starts[1:], len(rec)]
    w = rec.dtype.itemsize
    parts = [b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)]
    data = rec.tobytes()
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        parts.append(struct.pack(">hiiiii", 3, 4, seg, 4, int(b[s]), (e - s) * w))
        parts.append(data[s * w : e * w])
    parts.append(struct.pack(">h", -1))
    return b"".join(parts)


@pytest.mark.parametrize("table", ["ngram", "band"])
@pytest.mark.parametrize("n", [1, 2, 37, 5000, 200_000])
def test_copy_payload_matches_the_block_loop(table: str, n: int) -> None:
    rng = np.random.default_rng(n)
    keys = np.sort(rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64))
    if n > 2:  # repeated keys and crowded buckets too
        keys[n // 3 : n // 2] = keys[n // 3]
        keys = np.sort(np.r_[keys[: n - n // 10], rng.integers(-5, 5, n // 10) << 50])
    cols = [keys, rng.integers(1, 2**31 - 1, n).astype(np.int32)]
    if table == "band":
        cols.append(rng.integers(0, 2**31 - 1, n).astype(np.int32))
    rec = np.empty(n, dtype=blocks.RECORDS[table])
    for name, col in zip(rec.dtype.names or (), cols, strict=True):
        rec[name] = col
    seg = int(rng.integers(1, 2**31 - 1))
    expected = _copy_payload_loop(seg, rec)
    assert bytes(blocks.copy_payload(seg, rec)) == expected
    assert bytes(blocks.copy_payload(seg, cols)) == expected  # the columns themselves
    # SQLite's rows: the same blocks, each (bucket, data) as the stream's row holds them
    flat = blocks.block_rows(cols)
    assert flat == blocks.block_rows(rec)
    b = blocks.buckets(rec["key"])
    starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
    ends = np.r_[starts[1:], len(rec)]
    assert flat[0::2] == b[starts].tolist()
    assert flat[1::2] == [rec[s:e].tobytes() for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]
    # written a slice of buckets at a time (SQLite's writer), the same blocks
    parts = blocks.slices(keys)
    assert (
        parts[0][0] == 0
        and parts[-1][1] == n
        and all(b == c for (_a, b), (c, _d) in zip(parts, parts[1:], strict=False))
    )
    assert [x for a, b in parts for x in blocks.block_rows([c[a:b] for c in cols])] == flat


@pytest.mark.parametrize("rows", [1, 63, 64, 1000, 12_345, 8_000_000, 32_000_000, 10**12])
def test_a_segment_gets_blocks_of_64_to_128_postings(rows: int) -> None:
    """bits_for: 2**bits blocks of 64 to 128 of the segment's postings on average (within the
    bounds): an 8 M-row segment in 2**16 blocks, not the 2**18 blocks of about 30 that made
    half of PostgreSQL's COPY of a segment its B-tree entries."""
    bits = blocks.bits_for(rows)
    assert blocks.MIN_BITS <= bits <= blocks.MAX_BITS
    if blocks.MIN_BITS < bits < blocks.MAX_BITS:
        assert 64 <= rows / 2**bits < 128
    assert blocks.bits_for(8_000_000) == 16


@pytest.mark.parametrize("bits", [4, 16, 18, 24])
def test_blocks_of_any_bits_hold_their_bucket_and_the_slices_cut_between_buckets(bits: int) -> None:
    rng = np.random.default_rng(bits)
    keys = np.sort(rng.integers(-(2**63), 2**63 - 1, 5000, dtype=np.int64))
    docs = np.arange(5000, dtype=np.int32)
    flat = blocks.block_rows([keys, docs], bits)
    got = np.concatenate([blocks.decode("ngram", [flat[i + 1]]) for i in range(0, len(flat), 2)])
    assert (got["key"] == keys).all()
    for i in range(0, len(flat), 2):  # every record of a block is in the block's bucket
        assert set(blocks.buckets(blocks.decode("ngram", [flat[i + 1]])["key"], bits).tolist()) == {flat[i]}
    parts = blocks.slices(keys, bits=bits)
    assert [x for a, b in parts for x in blocks.block_rows([keys[a:b], docs[a:b]], bits)] == flat


def _select_reference(table: str, blobs: list[bytes], keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What a look-up did before blocks.select: every record decoded, each key searched, the hits kept."""
    rec = blocks.decode(table, blobs)
    idx = np.searchsorted(keys, rec["key"])
    hit = (idx < len(keys)) & (keys[np.minimum(idx, len(keys) - 1)] == rec["key"])
    return rec[hit], idx[hit]


@pytest.mark.parametrize("table", ["ngram", "band"])
@pytest.mark.parametrize("seed", range(6))
def test_select_keeps_the_records_of_the_keys_asked_for_in_the_order_read(table: str, seed: int) -> None:
    """blocks.select (C) keeps exactly the records a decode and a search of every key kept, in
    the same order, with each one's index among the keys: over blocks of several segments'
    bits, keys asked that no block holds, keys held several times, and empty blocks."""
    from contam.app.core.arrays import distinct, key_directory

    rng = np.random.default_rng(seed)
    held = rng.integers(-(2**63), 2**63 - 1, int(rng.integers(1, 3000)), dtype=np.int64)
    held = np.r_[held, held[: len(held) // 4], [-(2**63), 2**63 - 1, 0]]  # repeats and the extremes
    dtype = blocks.RECORDS[table]
    rec = np.zeros(len(held), dtype=dtype)
    rec["key"], rec["doc"] = held, rng.integers(1, 2**31 - 1, len(held))
    if table == "band":
        rec["win"] = rng.integers(0, 2**31 - 1, len(held))
    rec = rec[np.argsort(rec["key"], kind="stable")]
    bits = int(rng.integers(blocks.MIN_BITS, 12))
    b = blocks.buckets(rec["key"], bits)
    cuts = np.flatnonzero(np.r_[True, b[1:] != b[:-1], True])
    blobs = [rec[s:e].tobytes() for s, e in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True)]
    blobs = [blobs[i] for i in rng.permutation(len(blobs))] + [b""]  # in any order, an empty one too
    asked = np.r_[rng.choice(held, min(len(held), 500)), rng.integers(-(2**63), 2**63 - 1, 300, dtype=np.int64)]
    for keys in (distinct(asked), distinct(asked[:1]), distinct(held)):
        got_rec, got_pos = blocks.select(table, blobs, keys, key_directory(keys))
        want_rec, want_pos = _select_reference(table, blobs, keys)
        assert got_rec.tobytes() == want_rec.tobytes()
        assert got_pos.tolist() == want_pos.tolist()
        assert len(got_rec) >= 1


def test_select_refuses_a_block_of_broken_records() -> None:
    from contam.app.core.arrays import key_directory

    keys = np.array([1, 2, 3], dtype=np.int64)
    with pytest.raises(ValueError, match="not whole 12-byte records"):
        blocks.select("ngram", [b"\x00" * 12, b"\x00" * 13], keys, key_directory(keys))
