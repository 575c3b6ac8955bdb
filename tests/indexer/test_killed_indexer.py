"""An indexer killed with -9 leaves no worker processes behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers import alive, descendants

ROOT = Path(__file__).resolve().parents[2]


def test_workers_end_when_the_indexer_is_killed(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for f in range(40):
        docs = [{"id": f"{f}-{d}", "text": f"document {d} of file {f} " * 200} for d in range(400)]
        (corpus / f"{f}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    db = f"sqlite:///{tmp_path / 'c.db'}"
    env = {**os.environ, "CONTAM_DATABASE_URL": db}
    subprocess.run([sys.executable, "-m", "contam.indexer.cli", "db", "upgrade"], cwd=ROOT, env=env, check=True)
    cmd = [
        sys.executable,
        "-m",
        "contam.indexer.cli",
        "index",
        "--corpus",
        "web",
        "--workers",
        "2",
        "--progress",
        "none",
    ]
    proc = subprocess.Popen([*cmd, str(corpus)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    workers: set[int] = set()
    for _ in range(300):  # its two workers (forked: the CLI runs no other thread when it starts them)
        workers = descendants(proc.pid)
        if len(workers) >= 2 or proc.poll() is not None:
            break
        time.sleep(0.05)
    assert proc.poll() is None and len(workers) >= 2, "the indexer finished before its workers were seen"
    for p in workers:  # no fork server, which imported the whole package again before the first batch
        assert b"forkserver" not in (Path("/proc") / str(p) / "cmdline").read_bytes()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(alive(p) for p in workers):
        time.sleep(0.2)
    left = [p for p in workers if alive(p)]
    for p in left:  # do not leave them to the next test
        os.kill(p, signal.SIGKILL)
    assert left == []
