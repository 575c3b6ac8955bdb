"""PostgreSQL indexing: the local executor against the Ray executor at 1 and 2 workers.

Usage: python bench/ray_speed.py [CORPUS_PATH ...] [--repeat 3] [--pg URL] [--configs local,ray1,ray2]
                                 [--niceness 0] [--timeline]

Without a path it indexes the first 7 shards of the shared evaluation corpus (about 52 MB of
text; ../shared/eval/corpus) if present, else this machine's Python standard library sources
cut into 8 files. The Ray runs use one local cluster of 2 CPUs started for the bench (by a
process of its own, ended at the end) and reach it with `--address`, as on a real cluster, so the
cluster's start-up is not counted (and each run waits for the machine to fall quiet, at most 20 s,
so what one run leaves running does not land on the next); `--workers` sets the files in work at once (the per-worker
rate is the 1-worker figure). Its workers run at nice 0, as the local executor's processes do
(Ray's default is 15; `--niceness 15` to measure with it). Configurations alternate within each repeat, so machine noise
hits them alike.

Prints per configuration: median MB/s of text over the run's own time (the summary's, from
the corpus being opened to the last commit and ANALYZE) and over the command's wall time,
database bytes per corpus token, peak RSS per process (the driver; the largest signing or
Ray worker), the largest over the repeats, and the CPU-seconds the whole machine spent over a run
(from /proc/stat: every process, PostgreSQL's and Ray's own included; on 2 cores kept busy, what
decides the wall time). With --timeline, each configuration's timeline (medians, seconds
from the command's start, read from its `--progress log` lines as they come): the first file
handed out, the last, the last file committed, and the command's end: where a difference
between the executors lies (session 33: Ray's last commit came 2.8 s after its last file was
handed out, the local executor's 1.1 s).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import uuid
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CONTAM = [sys.executable, "-m", "contam.indexer.cli"]  # the `contam` command of this checkout

from contam.app.store.db import upgrade  # noqa: E402


def stdlib_corpus(out: Path, parts: int = 8) -> list[str]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(stdlib.rglob("*.py"))
    made = []
    for i in range(parts):
        target = out / f"stdlib-{i}.jsonl.gz"
        with gzip.open(target, "wt") as f:
            for p in files[i::parts]:
                f.write(json.dumps({"id": str(p.relative_to(stdlib)), "text": p.read_text(errors="replace")}) + "\n")
        made.append(str(target))
    return made


def _hwm_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


class PeakSampler(threading.Thread):
    """Every 0.1 s, the peak resident set (VmHWM) of the driver, its descendants (the local
    executor's signing workers) and the Ray workers (their title begins 'ray::'; a job's
    workers end with its driver)."""

    def __init__(self, driver: int, before: set[int]) -> None:
        super().__init__(daemon=True)
        self.driver, self.before = driver, before
        self.peaks: dict[int, tuple[str, int]] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.1):
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                pid = int(entry.name)
                role = self._role(pid)
                if role:
                    self.peaks[pid] = (role, max(self.peaks.get(pid, (role, 0))[1], _hwm_kib(pid)))

    def _role(self, pid: int) -> str | None:
        if pid == self.driver:
            return "driver"
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        if cmd.startswith(b"ray::"):  # Ray's workers: started for this run's job (prestarted ones too)
            return "worker"
        if pid in self.before:
            return None
        p, hops = pid, 0
        while p > 1 and hops < 6:
            p, hops = _ppid(p), hops + 1
            if p == self.driver:
                return "worker"
        return None

    def peak_mb(self, role: str) -> float:
        return max((kib for r, kib in self.peaks.values() if r == role), default=0) / 1024


def _busy() -> tuple[int, int]:
    """The machine's CPU ticks so far, (busy, all), from /proc/stat's first line: busy is user,
    nice, system, irq and softirq (guest time is inside user already; steal is another machine's
    work), all adds idle, iowait and steal."""
    t = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = t
    busy = user + nice + system + irq + softirq
    return busy, busy + idle + iowait + steal


def settle(most: float = 20.0, quiet: float = 0.15) -> float:
    """Wait until the machine's CPUs are at most `quiet` busy over half a second (what the last run
    left running, such as PostgreSQL's background writes, would otherwise land on the next), at
    most `most` seconds; the seconds waited."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < most:
        b0, a0 = _busy()
        time.sleep(0.5)
        b1, a1 = _busy()
        if (b1 - b0) <= quiet * max(1, a1 - a0):
            break
    return time.perf_counter() - t0


def run_once(url: str, paths: list[str], config: str, address: str, timeline: bool = False) -> tuple[dict, float]:
    """One run into the (new) database at `url`, after the machine fell quiet (its creation and
    migrations included); what it measured, and the seconds waited for quiet."""
    upgrade(url)
    waited = settle()
    workers = "1" if config == "ray1" else "2"
    extra = ["--executor", "ray", "--address", address] if config.startswith("ray") else []
    progress = "log" if timeline else "none"
    cmd = [*CONTAM, "index", "--corpus", "bench", "--db", url, "--workers", workers, "--progress", progress]
    before = {int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit()}
    busy0 = _busy()[0]
    t0 = time.perf_counter()
    # The bench's cluster has Ray's token authentication (the default of a cluster ray.init starts):
    # a driver given an explicit address uses it only when told to (the token is in ~/.ray).
    env = {**os.environ, "RAY_AUTH_MODE": "token"}
    proc = subprocess.Popen(
        [*cmd, *extra, *paths], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    sampler = PeakSampler(proc.pid, before)
    sampler.start()
    marks: dict[str, float] = {}
    err_lines: list[str] = []
    reader = threading.Thread(target=_timeline, args=(proc, t0, marks, err_lines), daemon=True)
    reader.start()
    out = proc.stdout.read() if proc.stdout else ""
    proc.wait()
    reader.join()
    wall = time.perf_counter() - t0
    cpu = (_busy()[0] - busy0) / os.sysconf("SC_CLK_TCK")
    sampler.stop.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit("".join(err_lines))
    summary = json.loads(out)
    return {
        "summary": summary,
        "marks": marks | {"end": wall},
        "wall": wall,
        "cpu": cpu,
        "driver_mb": sampler.peak_mb("driver"),
        "worker_mb": sampler.peak_mb("worker"),
        "bytes": db_bytes(url),
    }, waited


def _timeline(proc: subprocess.Popen[str], t0: float, marks: dict[str, float], lines: list[str]) -> None:
    """Seconds from t0 at which the run's log said it handed out its first file and its last, and
    committed its last, read as the lines come (stderr, `--progress log`)."""
    assert proc.stderr is not None
    for line in proc.stderr:
        now = time.perf_counter() - t0
        lines.append(line)
        if line.startswith("indexing ["):
            marks.setdefault("first handed out", now)
            marks["last handed out"] = now
        elif line.startswith("done ["):
            marks["last committed"] = now


def db_bytes(url: str) -> int:
    with psycopg.connect(url.replace("+psycopg", "")) as c:
        return int(c.execute("SELECT pg_database_size(current_database())").fetchone()[0])


# A process that starts a local Ray cluster of 2 CPUs, prints its address and holds it until
# it is sent SIGTERM (ray.init's handler exits; at exit Ray stops the processes it started).
_HOLD = (
    "import logging, sys, time, ray; "
    "ray.init(address='local', num_cpus=2, include_dashboard=False, logging_level=logging.WARNING); "
    "print(ray.get_runtime_context().gcs_address, flush=True); time.sleep(1e6)"
)


def start_cluster(niceness: int) -> tuple[subprocess.Popen[str], str]:
    # Ray starts its workers at nice 15 (RAY_worker_niceness), below every other process of the
    # machine, the local executor's included: on a machine shared with other work that, not the
    # executor, would decide the comparison. Read by the raylet this process starts.
    env = {**os.environ, "RAY_worker_niceness": str(niceness)}
    holder = subprocess.Popen([sys.executable, "-c", _HOLD], stdout=subprocess.PIPE, text=True, env=env)
    assert holder.stdout is not None
    return holder, holder.stdout.readline().strip()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    ap.add_argument("--configs", default="local,ray1,ray2")
    ap.add_argument("--niceness", type=int, default=0, help="the Ray workers' nice value (Ray's default: 15)")
    ap.add_argument("--timeline", action="store_true", help="run with --progress log and print when files go and land")
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory(dir="/tmp", prefix="contam-ray-")
    paths = args.paths
    if not paths:
        shared = ROOT.parent / "shared" / "eval" / "corpus"
        shards = sorted(str(p) for p in shared.glob("shard-*.jsonl.gz"))[:7]
        paths = shards or stdlib_corpus(Path(tmp.name))
    configs = args.configs.split(",")
    holder, address = start_cluster(args.niceness) if any(c.startswith("ray") for c in configs) else (None, "")
    results: dict[str, list[dict]] = {c: [] for c in configs}
    admin = args.pg.replace("+psycopg", "")
    waited: list[float] = []
    try:
        for _ in range(args.repeat):
            for config in configs:
                name = f"contam_bench_{uuid.uuid4().hex[:8]}"
                with psycopg.connect(admin, autocommit=True) as c:
                    c.execute(f'CREATE DATABASE "{name}"')
                try:
                    url = args.pg.rsplit("/", 1)[0] + "/" + name
                    result, quiet = run_once(url, paths, config, address, args.timeline)
                    results[config].append(result)
                    waited.append(quiet)
                finally:
                    with psycopg.connect(admin, autocommit=True) as c:
                        c.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    finally:
        if holder is not None:
            holder.terminate()
            holder.wait(60)
    labels = {
        "local": "local executor, --workers 2",
        "ray1": "Ray, 1 worker",
        "ray2": "Ray, 2 workers",
    }
    print(
        f"waited for a quiet machine before a run: median {statistics.median(waited):.1f} s, most {max(waited):.1f} s"
    )
    for config, runs in results.items():
        s = runs[0]["summary"]
        mbs = statistics.median(r["summary"]["text_mb"] / r["summary"]["seconds"] for r in runs)
        wall = statistics.median(r["summary"]["text_mb"] / r["wall"] for r in runs)
        per_token = statistics.median(r["bytes"] for r in runs) / s["tokens"]
        print(
            f"{labels.get(config, config)}: {s['text_mb']:.1f} MB text, {s['tokens']} tokens, {s['files_indexed']} "
            f"files: {mbs:.2f} MB/s (wall {wall:.2f}; median of {len(runs)}), {per_token:.1f} DB bytes/token, "
            f"peak RSS driver {max(r['driver_mb'] for r in runs):.0f} MB, "
            f"largest worker {max(r['worker_mb'] for r in runs):.0f} MB, "
            f"machine CPU {statistics.median(r['cpu'] for r in runs):.1f} s a run"
        )
    for config in configs[1:]:  # each run against the first configuration's run of the same repeat
        pairs = [a["wall"] / b["wall"] for a, b in zip(results[configs[0]], results[config], strict=True)]
        print(
            f"{labels.get(config, config)} against {labels.get(configs[0], configs[0])}, rate by wall, pair by pair: "
            f"median {statistics.median(pairs):.3f}x ({', '.join(f'{r:.3f}' for r in pairs)})"
        )
    for config, runs in results.items() if args.timeline else ():
        names = ("first handed out", "last handed out", "last committed", "end")
        seen = {
            k: statistics.median(r["marks"][k] for r in runs if k in r["marks"])
            for k in names
            if runs[0]["marks"].get(k)
        }
        print(
            f"{labels.get(config, config)} timeline (s, medians): " + ", ".join(f"{k} {v:.2f}" for k, v in seen.items())
        )


if __name__ == "__main__":
    main()
