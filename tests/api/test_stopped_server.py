"""A server stopped while it scores leaves no process behind."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import alive, descendants, make_docs

from contam.app.store.db import upgrade

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_server_leaves_no_worker_behind(tmp_path: Path, index_corpus: Any, how: signal.Signals) -> None:
    """Its check workers and a report job's scan workers come from a fork server, so they are not
    the server's children, and a pool's workers wait for work forever once nobody shuts the pool
    down: a server stopped (SIGTERM) while a job scored left the fork server and four workers of
    200 MB each, and so did one killed. Each worker now ends with the server that started it."""
    docs = make_docs(300, 400, seed=1, prefix="d")
    db = f"sqlite:///{tmp_path / 'c.db'}"
    upgrade(db)
    index_corpus(db, docs)
    # questions taken from the documents: each has candidates to align, so the job takes a while
    rows = [
        {"id": str(i), "question": " ".join(d["text"].split()[i % 50 : i % 50 + 40])} for i, d in enumerate(docs * 7)
    ]
    bench = "".join(json.dumps(r) + "\n" for r in rows).encode()
    port = _free_port()
    env = {**os.environ, "CONTAM_DATABASE_URL": db, "CONTAM_DEMO": "false", "CONTAM_CHECK_WORKERS": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "contam.indexer.cli", "serve", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: set[int] = set()
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(150):
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        assert httpx.post(base + "/api/v1/check", json={"texts": [rows[0]["question"]]}, timeout=60).status_code == 200
        report = httpx.post(base + "/api/v1/benchmarks", files={"file": ("b.jsonl", bench)}, timeout=60).json()["id"]
        for _ in range(600):  # until the job's scan workers run (besides the check worker)
            rep = httpx.get(f"{base}/api/v1/reports/{report}", timeout=10).json()
            workers = descendants(server.pid)
            if rep.get("phase") == "scoring" and len(workers) >= 5:  # fork server, check and scan workers
                break
            assert rep["status"] in ("queued", "running"), rep
            time.sleep(0.05)
        assert rep.get("phase") == "scoring", rep
        assert len(workers) >= 5, workers  # the fork server, the check worker and the scan workers
        os.kill(server.pid, how)
        server.wait(30)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(alive(p) for p in workers):
            time.sleep(0.2)
        left = [p for p in workers if alive(p)]
    finally:
        if server.poll() is None:
            server.kill()
        for p in workers:  # never leave them to the next test
            if alive(p):
                os.kill(p, signal.SIGKILL)
    assert left == []
