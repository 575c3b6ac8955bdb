"""Sizes: bytes inside the code; MiB (2**20 bytes) wherever a person sets or reads a limit
(CONTAM_MAX_UPLOAD_MB, CONTAM_COMMIT_MB, --commit-mb). Measured sizes and rates in reports
and logs stay in MB (10**6 bytes), like the figures in the README."""

from __future__ import annotations

MiB = 1 << 20


def mib_to_bytes(mib: float) -> int:
    return int(mib * MiB)


def as_mib(n_bytes: int) -> str:
    """Bytes in MiB, to a tenth, or to two significant digits below one: a limit of 0.01 MiB was
    "the limit of 0.0 MiB" (a README audit)."""
    mib = n_bytes / MiB
    return f"{mib:.1f} MiB" if mib >= 1 or mib == 0 else f"{mib:.2g} MiB"
