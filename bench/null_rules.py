"""What a looser `suspicious` rule would cost on the null: reads `bench/calibrate.py
--matches-out F` (every aligned document of every item, with its measures and the verdict of the
defaults) and prints, per candidate rule, the items it flags: the null (no copy of the item in
the corpus), siblings of planted items, and the planted copies per kind, each added to what the
defaults flag already.

Usage: python bench/calibrate.py --eval-dir ../shared/eval --matches-out /tmp/m.jsonl
       python bench/null_rules.py /tmp/m.jsonl

The rules weighed relax the partial-copy rule (README, "How items are scored", step 6: own text
>= suspicious_coverage with a run of more than n own tokens) by the match's information (bits net
of the piece cost, step 5), as an edited copy's short pieces would need: "A" drops the run and
asks for bits instead, "B" keeps the run and lowers the coverage, "C" asks for as many own tokens
as the run (more than n, or 2n) in pieces. A rule worth adopting finds
edited copies while the null stays where it is; one that adds a null item per copy found is the
chance it measures, not a copy's signature (bench/MEASUREMENTS.md, session 23).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

KINDS = ("null", "sibling", "verbatim", "light_edit", "heavy_edit", "partial")
N = 5  # the index's n (two n-grams in a row: a run of more than N tokens)

Rule = Callable[[dict[str, Any]], bool]


def rules() -> dict[str, Rule]:
    out: dict[str, Rule] = {}
    for bits in (16, 24, 32, 48, 64):
        for cov in (0.25, 0.3, 0.35, 0.4):
            out[f"A: own >= {cov}, bits >= {bits}"] = lambda d, c=cov, b=bits: (
                d["own_coverage"] >= c and d["own_bits"] >= b
            )
        for cov in (0.25, 0.3, 0.35):
            out[f"B: own >= {cov}, run > n, bits >= {bits}"] = lambda d, c=cov, b=bits: (
                d["own_coverage"] >= c and d["longest_own"] > N and d["own_bits"] >= b
            )
        # more than n own tokens found, in one run or in pieces (then at least two): as much text as
        # the run rule asks for, the pieces' placement paid for by the bits (net of the piece cost)
        for least in (N + 1, 2 * N):
            out[f"C: own >= 0.4, >= {least} own tokens, bits >= {bits}"] = lambda d, b=bits, k=least: (
                d["own_coverage"] >= 0.4 and d["own_matched"] >= k and d["own_bits"] >= b
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("matches", type=Path, help="bench/calibrate.py --matches-out output")
    args = ap.parse_args()
    rows = [json.loads(line) for line in args.matches.read_text().splitlines()]
    candidates = rules()
    total, base = Counter[str](), Counter[str]()
    found = {name: Counter[str]() for name in candidates}
    for r in rows:
        kind = r["kind"]
        total[kind] += 1
        # the scanner's status; a rule can flag only an item its documents decide (not one too
        # short, a common phrase, or a widespread copy: the item alone decides those)
        flagged = r["status"] in ("suspicious", "contaminated")
        base[kind] += flagged
        for name, rule in candidates.items():
            found[name][kind] += flagged or (not r["fixed"] and any(rule(d) for d in r["docs"]))
    print(f"{'rule':46s} " + " ".join(f"{k:>13s}" for k in KINDS))
    print(f"{'the defaults':46s} " + " ".join(f"{base[k]:>6d}/{total[k]:<6d}" for k in KINDS))
    for name, counts in found.items():
        print(f"{name:46s} " + " ".join(f"{counts[k]:>6d}/{total[k]:<6d}" for k in KINDS))


if __name__ == "__main__":
    main()
