"""An indexer killed with -9 leaves no worker processes behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import alive, descendants

ROOT = Path(__file__).resolve().parents[2]


def _big_corpus(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """40 files of 400 documents (an indexer takes seconds over them), and the environment of a
    migrated SQLite database beside them."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for f in range(40):
        docs = [{"id": f"{f}-{d}", "text": f"document {d} of file {f} " * 200} for d in range(400)]
        (corpus / f"{f}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    env = {**os.environ, "CONTAM_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}"}
    upgrade = [sys.executable, "-m", "contam.indexer.cli", "db", "upgrade"]
    subprocess.run(upgrade, cwd=ROOT, env=env, check=True, capture_output=True)
    return corpus, env


def test_workers_end_when_the_indexer_is_killed(tmp_path: Path) -> None:
    corpus, env = _big_corpus(tmp_path)
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


def test_sigterm_ends_an_indexer_as_ctrl_c_does_and_lets_go_of_its_corpus(tmp_path: Path) -> None:
    """SIGTERM (timeout, docker stop, systemd) killed the indexer without its clean-up: no word on
    stderr, and its run held the corpus for two minutes (delete and rename refused, "while it is
    being indexed"). Now it ends as Ctrl-C does: it says so, exits 130, and lets go at once."""
    corpus, env = _big_corpus(tmp_path)
    contam = [sys.executable, "-m", "contam.indexer.cli"]
    cmd = [*contam, "index", "--corpus", "web", "--workers", "2", "--progress", "log", str(corpus)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:  # under way: its run holds the corpus
        if "indexing [2/40]" in line:
            break
    workers = descendants(proc.pid)
    os.kill(proc.pid, signal.SIGTERM)
    try:
        rest = proc.communicate(timeout=60)[1]
    finally:
        for p in workers | {proc.pid}:  # do not leave them to the next test
            if alive(p):
                os.kill(p, signal.SIGKILL)
    assert proc.returncode == 130, rest
    assert "interrupted" in rest and "Traceback" not in rest, rest
    assert len(workers) >= 2, workers  # its two workers were seen: else "none alive" below holds of nothing
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(alive(p) for p in workers):
        time.sleep(0.2)
    assert not [p for p in workers if alive(p)]
    gone = subprocess.run([*contam, "corpora", "delete", "web", "--yes"], cwd=ROOT, env=env, capture_output=True)
    assert gone.returncode == 0, gone.stderr


IDLE_POOL = """
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from contam.app.processes import exit_with

if __name__ == "__main__":
    pool = ProcessPoolExecutor(2, get_context(sys.argv[1]), initializer=exit_with, initargs=(os.getpid(),))
    pool.submit(int).result()
    try:
        print("ready", flush=True)
        time.sleep(60)
    except KeyboardInterrupt:
        pool.shutdown(wait=True, cancel_futures=True)
        print("interrupted", file=sys.stderr)
"""


@pytest.mark.parametrize("start", ["fork", "forkserver"])
def test_ctrl_c_ends_idle_workers_without_a_word(tmp_path: Path, start: str) -> None:
    """Ctrl-C reaches the whole process group: each worker waiting for work printed "Process
    ForkProcess-1:" and a KeyboardInterrupt traceback above `contam index`'s one line (a new
    user's trial; a scan's pass 1 the same). A pool's workers now end quietly on SIGINT and leave
    the saying to their parent."""
    script = tmp_path / "idle.py"
    script.write_text(IDLE_POOL)
    proc = subprocess.Popen(
        [sys.executable, str(script), start],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    workers = descendants(proc.pid)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the parent and every worker
    try:
        err = proc.communicate(timeout=60)[1]
    finally:
        for p in workers | {proc.pid}:
            if alive(p):
                os.kill(p, signal.SIGKILL)
    assert err.strip() == "interrupted", err


def test_workers_of_a_process_that_ignores_ctrl_c_ignore_it_too(tmp_path: Path) -> None:
    """A background job of a script (`contam index ... &`) starts with SIGINT ignored, as its
    workers did: a Ctrl-C at the terminal then killed the workers (set to SIGINT's default) under
    a parent that lived on, and the run failed with BrokenProcessPool (the review)."""
    script = tmp_path / "idle.py"
    script.write_text(IDLE_POOL)
    proc = subprocess.Popen(
        [sys.executable, str(script), "fork"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # noqa: PLW1509 - the shell's `&`
    )
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline().strip() == "ready"
        workers = descendants(proc.pid)
        assert workers
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(1.0)
        assert proc.poll() is None and all(alive(p) for p in workers)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


PARENT = """
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from contam.app.processes import exit_with


def pid(_x):
    return os.getpid()


if __name__ == "__main__":
    pool = ProcessPoolExecutor(2, get_context(sys.argv[1]), initializer=exit_with, initargs=(os.getpid(),))
    print(" ".join(map(str, set(pool.map(pid, range(50))))), flush=True)
    os._exit(0)  # no shutdown: its workers wait on their queue
"""


@pytest.mark.parametrize("start", ["fork", "forkserver"])
def test_workers_end_when_their_parent_is_a_zombie(tmp_path: Path, start: str) -> None:
    """A parent that died stays a zombie until its own parent reaps it, and a zombie answers
    kill(pid, 0): its workers took it for alive and waited forever (a script running `contam
    index` under subprocess.Popen that had not called wait() yet). A worker now also ends when the
    kernel says its parent is a zombie: a forked one is handed to another parent too, and one
    from a fork server (the server's) has the fork server for its parent, which lives on."""
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    cmd = [sys.executable, str(script), start]  # (its leaked-semaphore warning kept out of the output)
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    workers = {int(p) for p in proc.stdout.readline().split()}
    assert workers
    deadline = time.monotonic() + 15  # not reaped meanwhile: the parent is a zombie all along
    while time.monotonic() < deadline and any(alive(p) for p in workers):
        time.sleep(0.2)
    left = [p for p in workers if alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    proc.wait()
    assert left == []


def _ignored(pid: int) -> set[int]:
    """The signals a process ignores (its SigIgn mask in /proc)."""
    for line in (Path("/proc") / str(pid) / "status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            mask = int(line.split()[1], 16)
            return {sig for sig in range(1, 64) if mask >> (sig - 1) & 1}
    return set()


def _indexing_in_its_group(tmp_path: Path) -> tuple[subprocess.Popen[str], list[int]]:
    """`contam index` of _big_corpus with two workers, in a process group of its own, once it is
    on its second file; and its workers, seen from their signal masks (the others a fork made)."""
    corpus, env = _big_corpus(tmp_path)
    contam = [sys.executable, "-m", "contam.indexer.cli"]
    cmd = [*contam, "index", "--corpus", "web", "--workers", "2", "--progress", "log", str(corpus)]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if "indexing [2/40]" in line:
            break
    return proc, sorted(p for p in descendants(proc.pid) if signal.SIGINT in _ignored(p))


def _ended(proc: subprocess.Popen[str], workers: list[int], act: Callable[[], None]) -> str:
    """Do `act`; the indexer's stderr once it has ended (60 s at most); every process killed after,
    and its workers gone within 15 s asserted."""
    try:
        assert len(workers) >= 2, workers
        act()
        rest = proc.communicate(timeout=60)[1]
    finally:
        for p in [*workers, proc.pid]:
            if alive(p):
                os.kill(p, signal.SIGKILL)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(alive(p) for p in workers):
        time.sleep(0.2)
    assert not [p for p in workers if alive(p)], "workers left"
    return rest


def test_ctrl_c_to_the_group_leaves_signing_workers_to_the_indexer(tmp_path: Path) -> None:
    """A trial: Ctrl-C (SIGINT to the whole process group) killed the signing workers, one of them
    while it wrote a signed batch (megabytes) back; the pool's manager thread then waited on that
    half message for good, and `contam index` into PostgreSQL hung in 3 of 6 tries, ignoring
    every signal but SIGKILL. The workers now ignore SIGINT and SIGTERM, their parent shuts them
    down: the run says it was interrupted, exits 130, and no worker is left."""
    proc, workers = _indexing_in_its_group(tmp_path)
    assert all(signal.SIGTERM in _ignored(p) for p in workers), [_ignored(p) for p in workers]
    rest = _ended(proc, workers, lambda: os.killpg(proc.pid, signal.SIGINT))  # as a terminal's Ctrl-C
    assert proc.returncode == 130 and "interrupted" in rest and "Traceback" not in rest, rest


def test_a_signing_worker_killed_alone_fails_the_run_not_hangs_it(tmp_path: Path) -> None:
    """A review: once the workers ignored SIGTERM (for Ctrl-C's sake), one worker killed alone (the
    OOM killer) left the pool sending the others SIGTERM and waiting for them, while they blocked
    writing results no one read: the indexer hung. It fails, exit 3, naming the broken pool, and
    no worker is left."""
    proc, workers = _indexing_in_its_group(tmp_path)
    rest = _ended(proc, workers, lambda: os.kill(workers[0], signal.SIGKILL))  # as the OOM killer would
    assert proc.returncode == 3 and "BrokenProcessPool" in rest, (proc.returncode, rest)
