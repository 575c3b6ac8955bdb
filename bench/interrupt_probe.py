"""Ctrl-C during indexing: how often `contam index` ends as it should (exit 130, "interrupted")
and how often it hangs. Each try indexes FILES into a new corpus and sends SIGINT to the whole
process group (as a terminal's Ctrl-C does) SECONDS in (plus 0.5 s times the try modulo 4); a run
that has not ended 60 s later is counted as hung and killed.

Usage: python bench/interrupt_probe.py --db URL [--tries 8] [--seconds 4] [--prefix probe] FILES...
(session 49: into PostgreSQL, FILES the shared evaluation corpus: before the signing workers left
SIGINT to their parent 1 of 8 tries hung, after 0 of 26).
"""

from __future__ import annotations

import argparse
import collections
import os
import signal
import subprocess
import sys
import time
import uuid

CONTAM = [sys.executable, "-m", "contam.indexer.cli"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--tries", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--prefix", default=f"probe{uuid.uuid4().hex[:6]}")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    outcomes: collections.Counter[str] = collections.Counter()
    for i in range(args.tries):
        cmd = [*CONTAM, "index", "--db", args.db, "--corpus", f"{args.prefix}{i}", "--progress", "none", *args.files]
        proc = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        time.sleep(args.seconds + 0.5 * (i % 4))
        os.killpg(proc.pid, signal.SIGINT)
        try:
            err = proc.communicate(timeout=60)[1]
            named = {130: "interrupted (130)", 0: "finished first (0)"}
            outcome = named.get(proc.returncode, f"exit {proc.returncode}")
        except subprocess.TimeoutExpired:
            outcome, err = "HUNG", ""
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        outcomes[outcome] += 1
        print(f"try {i}: {outcome}" + (f": {err.strip().splitlines()[-1][:120]}" if err.strip() else ""), flush=True)
    print(", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items())))


if __name__ == "__main__":
    main()
