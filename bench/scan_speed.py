"""Scan speed: a 10,000-item benchmark against a >= 200 MB corpus, SQLite and PostgreSQL, and
/api/v1/check requests per second under concurrent clients.

Usage: python bench/scan_speed.py [--mb 200] [--items 10000] [--clients 8] [--seconds 10] [--pg URL]
                                  [--backends sqlite,postgresql] [--segment-rows N,M] [--news 1000]
--segment-rows indexes once per value (posting rows per segment), to weigh insert speed
against look-ups that visit every segment. --news N also scans N news-length items (400 words
each: 30% a stretch of a corpus document, the rest real text of this machine's that the corpus
does not hold; 0: not done).
The corpus is real text from this machine (the shared evaluation corpus if present, Python
sources and headers, /usr/share/doc); the benchmark mixes the evaluation benchmarks (if
present) with passages sampled from the corpus (contaminated) and shuffled sentences (clean).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx
import psycopg
from sqlalchemy import text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CONTAM = [sys.executable, "-m", "contam.indexer.cli"]  # the `contam` command of this checkout

from contam.app.readers.benchmark import read_benchmark  # noqa: E402
from contam.app.store.db import make_engine, upgrade  # noqa: E402

TEXT_SUFFIXES = {".py", ".pyi", ".txt", ".md", ".rst", ".h", ".c", ".go", ".html"}


def build_corpus(out_dir: Path, target_mb: float) -> tuple[list[Path], list[str]]:
    """Corpus files (JSONL.gz of ~25 MB each) and a sample of passages for contaminated items."""
    files, budget, written = [], target_mb * 1e6, 0
    passages: list[str] = []
    rng = random.Random(0)
    shard, fh, shard_bytes = 0, None, 0
    shared = ROOT.parent / "shared" / "eval" / "corpus"
    if shared.exists():
        files += sorted(shared.glob("*.jsonl.gz"))
        for p in files:
            with gzip.open(p, "rt") as f:
                written += sum(len(json.loads(line)["text"]) for line in f)
    roots = [
        Path(sysconfig.get_paths()["purelib"]),
        Path(sysconfig.get_paths()["stdlib"]),
        Path("/usr/include"),
        Path("/usr/share/doc"),
        Path("/usr/lib/python3/dist-packages"),
    ]
    seen: set[str] = set()
    for root in roots:
        if not root.exists():
            continue
        for p in sorted(root.rglob("*")):
            if written >= budget:
                break
            if p.suffix not in TEXT_SUFFIXES or not p.is_file() or p.stat().st_size > 2_000_000:
                continue
            try:
                text = p.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            if len(text) < 200 or text in seen:
                continue
            seen.add(text)
            if fh is None or shard_bytes > 25e6:
                if fh is not None:
                    fh.close()
                path = out_dir / f"bench-{shard:03d}.jsonl.gz"
                fh = gzip.open(path, "wt", compresslevel=1)  # noqa: SIM115 - one shard open across loop turns
                files.append(path)
                shard, shard_bytes = shard + 1, 0
            fh.write(json.dumps({"id": str(p), "text": text}) + "\n")
            shard_bytes += len(text)
            written += len(text)
            if rng.random() < 0.02:
                words = text.split()
                if len(words) > 80:
                    s = rng.randrange(0, len(words) - 60)
                    passages.append(" ".join(words[s : s + rng.randrange(20, 60)]))
    if fh is not None:
        fh.close()
    print(f"corpus: {written / 1e6:.0f} MB of text in {len(files)} files", flush=True)
    return files, passages


def build_benchmark(path: Path, n: int, passages: list[str]) -> None:
    rng = random.Random(1)
    items: list[dict] = []
    shared = ROOT.parent / "shared" / "eval" / "benchmarks"
    if shared.exists():
        for f in sorted(shared.glob("*.jsonl")):
            for it in read_benchmark(f.read_bytes(), f.name)[0]:
                items.append(
                    {
                        "id": f"{f.stem}/{it.item_id}",
                        "question": it.question,
                        "choices": list(it.choices),
                        "answer": it.answer,
                    }
                )
    words = " ".join(passages).split()
    while len(items) < n:
        if rng.random() < 0.3 and passages:
            q = rng.choice(passages)
        else:
            q = " ".join(rng.choice(words) for _ in range(rng.randrange(15, 50)))
        items.append({"id": f"gen/{len(items)}", "question": q, "answer": rng.choice(words)})
    path.write_text("".join(json.dumps(x) + "\n" for x in items[:n]))


def build_news(path: Path, n: int, files: list[Path], words: int = 400) -> None:
    """n items of `words` words: 30% a stretch of a corpus document, the rest real text the corpus
    does not hold (files of this machine's the corpus walk did not reach, or with other text)."""
    rng = random.Random(7)
    held: set[str] = set()
    inside: list[str] = []
    for f in files:
        with gzip.open(f, "rt") as fh:
            for line in fh:
                text = json.loads(line)["text"]
                held.add(text)
                w = text.split()
                if len(w) > words + 20 and rng.random() < 0.1:
                    s = rng.randrange(0, len(w) - words)
                    inside.append(" ".join(w[s : s + words]))
    want_out = n - int(0.3 * n)
    outside: list[str] = []
    roots = [Path("/usr/share/doc"), Path(sysconfig.get_paths()["stdlib"]), Path("/usr/lib/python3/dist-packages")]
    for root in roots:
        for p in sorted(root.rglob("*"), reverse=True):
            if len(outside) >= want_out:
                break
            if p.suffix not in TEXT_SUFFIXES or not p.is_file():
                continue
            try:
                text = p.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            w = text.split()
            if text not in held and len(w) > words + 20:
                outside.append(" ".join(w[20 : 20 + words]))
    items = [{"id": f"in/{k}", "question": t} for k, t in enumerate(rng.sample(inside, min(len(inside), n - want_out)))]
    items += [{"id": f"out/{k}", "question": t} for k, t in enumerate(outside)]
    rng.shuffle(items)
    path.write_text("".join(json.dumps(x) + "\n" for x in items))


def segment_count(url: str) -> int:
    eng = make_engine(url)
    with eng.connect() as conn:
        n = int(conn.execute(text("SELECT count(*) FROM segment")).scalar_one())
    eng.dispose()
    return n


def timed(cmd: list[str]) -> tuple[float, str]:
    return timed_scan(cmd)[:2]


def timed_scan(cmd: list[str]) -> tuple[float, str, float | None]:
    """(wall seconds, stdout, the command's own seconds from `scanned N items in X s` on stderr,
    None if it printed none): wall less own is the process start."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode not in (0, 1):
        raise SystemExit(proc.stderr)
    own = re.search(r"scanned [\d,]+ items in ([\d.]+) s", proc.stderr)
    return time.perf_counter() - t0, proc.stdout, float(own.group(1)) if own else None


def scan_figures(runs: list[tuple[float, str, float | None]]) -> str:
    """Median wall time of the runs, and of their own time and process start where reported."""
    wall = statistics.median(r[0] for r in runs)
    own = [r[2] for r in runs if r[2] is not None]
    if not own:
        return f"median {wall:.2f} s of {len(runs)} (process start included)"
    start = statistics.median(r[0] - r[2] for r in runs if r[2] is not None)
    return (
        f"median {statistics.median(own):.2f} s of {len(runs)} (process start excluded; "
        f"it took {start:.2f} s more: wall {wall:.2f} s)"
    )


def check_rps(
    url: str,
    clients: int,
    seconds: float,
    texts: list[str],
    job: bytes | None = None,
    said: dict | None = None,
    load: str = "python",
) -> tuple[float, float, float]:
    """(requests/s, p50 ms, p95 ms) of one-item /check requests from `clients` concurrent clients
    against a real server; with `job` (a JSONL benchmark), uploaded first, the load starts once its
    report job scores, and `said` gets the job's progress when the load ends (it must still be
    running; it is deleted before the server stops, so no later server on the database takes it
    up). load: "python" (threads with httpx: about 4 ms of CPU a request, on the cores the server
    uses) or "wrk" (Debian's wrk, C: a small fraction of that; random texts through a Lua script)."""
    port = 8700 + random.randrange(200)
    env = {"CONTAM_DATABASE_URL": url, "CONTAM_DEMO": "false", "PATH": "/usr/bin:/bin"}
    server = subprocess.Popen(
        [*CONTAM, "serve", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    report = None
    try:
        for _ in range(100):
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        # the check workers start at the first requests (a fork server, then imports): not timed
        with httpx.Client(base_url=base, timeout=60) as c:
            warm = [
                threading.Thread(target=c.post, args=("/api/v1/check",), kwargs={"json": {"texts": [t]}})
                for t in texts[-clients:]
            ]
            for t in warm:
                t.start()
            for t in warm:
                t.join()
            c.post("/api/v1/check", json={"texts": [texts[0]]}).raise_for_status()
        if job is not None:
            created = httpx.post(base + "/api/v1/benchmarks", files={"file": ("job.jsonl", job)}, timeout=600)
            report = created.raise_for_status().json()["id"]
            # the load starts once the job scores (its first pass, reading the items, is lighter)
            while (rep := httpx.get(f"{base}/api/v1/reports/{report}").json())["status"] in ("queued", "running"):
                if rep["status"] == "running" and rep.get("phase") == "scoring":
                    break
                time.sleep(0.2)
            else:
                raise SystemExit(f"the report job ended before it scored: {rep['status']}")
        if load == "wrk":
            return _wrk_rps(base, clients, seconds, texts, report, said)
        latencies: list[float] = []
        lock = threading.Lock()
        stop = time.perf_counter() + seconds

        def client(seed: int) -> None:
            rng = random.Random(seed)
            with httpx.Client(base_url=base, timeout=30) as c:
                while time.perf_counter() < stop:
                    t0 = time.perf_counter()
                    r = c.post("/api/v1/check", json={"texts": [rng.choice(texts)]})
                    r.raise_for_status()
                    with lock:
                        latencies.append(time.perf_counter() - t0)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if report is not None and said is not None:
            rep = httpx.get(f"{base}/api/v1/reports/{report}").json()
            said.update({k: rep[k] for k in ("status", "phase", "read_items", "done_items", "total_items")})
        lat = sorted(latencies)
        return len(lat) / seconds, statistics.median(lat) * 1000, lat[int(0.95 * (len(lat) - 1))] * 1000
    finally:
        if report is not None:
            httpx.delete(f"{base}/api/v1/reports/{report}", timeout=60)
        server.terminate()
        server.wait(10)


WRK_SCRIPT = """
bodies = {%s}
threads_started = 0
setup = function(thread)
  thread:set("offset", threads_started * 7919)
  threads_started = threads_started + 1
end
counter = 0
request = function()
  counter = counter + 1
  local k = (offset + counter) %% #bodies
  return wrk.format("POST", "/api/v1/check", {["Content-Type"] = "application/json"}, bodies[k + 1])
end
done = function(summary, latency, requests)
  io.write(string.format("WRK %%d %%f %%f %%f\\n", summary.requests, summary.duration / 1e6,
    latency:percentile(50) / 1e3, latency:percentile(95) / 1e3))
end
"""


def _wrk_rps(
    base: str, clients: int, seconds: float, texts: list[str], report: str | None, said: dict | None
) -> tuple[float, float, float]:
    """check_rps's load from wrk: each wrk thread posts the texts (shuffled) in turn from an
    offset of its own, one a request; a request taking over a minute, or failing, fails the run
    (wrk leaves timed-out requests out of its latencies)."""
    if shutil.which("wrk") is None:
        raise SystemExit("--load wrk needs wrk (apt-get install wrk)")
    shuffled = texts[:]
    random.Random(0).shuffle(shuffled)
    bodies = ",".join("[==[" + json.dumps({"texts": [t]}) + "]==]" for t in shuffled if "]==]" not in t)
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(WRK_SCRIPT % bodies)
    try:
        threads, duration = min(2, clients), f"-d{max(1, round(seconds))}s"
        out = subprocess.run(
            ["wrk", f"-t{threads}", f"-c{clients}", duration, "--timeout", "60s", "-s", f.name, base + "/api/v1/check"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        Path(f.name).unlink()
    if report is not None and said is not None:
        rep = httpx.get(f"{base}/api/v1/reports/{report}").json()
        said.update({k: rep[k] for k in ("status", "phase", "read_items", "done_items", "total_items")})
    if "Non-2xx" in out or "Socket errors" in out:
        raise SystemExit(f"wrk saw failed or timed-out requests:\n{out}")
    line = next(x for x in out.splitlines() if x.startswith("WRK "))
    n, duration, p50, p95 = (float(v) for v in line.split()[1:])
    return n / duration, p50, p95


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=200)
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    ap.add_argument("--backends", default="sqlite,postgresql")
    ap.add_argument("--segment-rows", default="", help="comma-separated values to compare (default: the CLI's)")
    ap.add_argument("--merge-fanout", default="", help="comma-separated values to compare (default: the CLI's)")
    ap.add_argument("--news", type=int, default=1000, help="news-length items to scan as well (0: none)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="contam-bench-"))
    files, passages = build_corpus(tmp, args.mb)
    bench = tmp / "bench.jsonl"
    build_benchmark(bench, args.items, passages)
    news = tmp / "news.jsonl"
    if args.news:
        build_news(news, args.news, files)
    admin = args.pg.replace("+psycopg", "")
    segs = [int(float(x)) for x in args.segment_rows.split(",") if x] or [None]
    fanouts = [int(x) for x in args.merge_fanout.split(",") if x] or [None]
    configs = [(b, n, f) for b in args.backends.split(",") for n in segs for f in fanouts]
    pg_names: list[str] = []
    try:
        for backend, seg_rows, fanout in configs:
            if backend == "sqlite":
                url = f"sqlite:///{tmp}/bench-{seg_rows}-{fanout}.db"
            else:
                pg_names.append(f"contam_bench_{uuid.uuid4().hex[:8]}")
                with psycopg.connect(admin, autocommit=True) as c:
                    c.execute(f'CREATE DATABASE "{pg_names[-1]}"')
                url = args.pg.rsplit("/", 1)[0] + "/" + pg_names[-1]
            label = backend + (f", segments of {seg_rows / 1e6:g} M rows" if seg_rows else "")
            label += f", merge fan-out {fanout}" if fanout is not None else ""
            upgrade(url)
            extra = ["--segment-rows", str(seg_rows)] if seg_rows else []
            extra += ["--merge-fanout", str(fanout)] if fanout is not None else []
            t_index, out = timed(
                [
                    *CONTAM,
                    "index",
                    "--corpus",
                    "bench",
                    "--db",
                    url,
                    "--progress",
                    "none",
                    *extra,
                    *map(str, files),
                ]
            )
            s = json.loads(out)
            print(
                f"{label}: indexed {s['text_mb']:.0f} MB, {s['documents']} documents in {t_index:.0f} s "
                f"({s['mb_per_s']:.2f} MB/s), {segment_count(url)} segments",
                flush=True,
            )
            runs = [
                timed_scan([*CONTAM, "scan", str(bench), "--db", url, "--format", "json"]) for _ in range(args.repeat)
            ]
            counts = json.loads(runs[-1][1])["summary"]["counts"]
            print(f"{label}: scan of {args.items} items: {scan_figures(runs)}; {counts}", flush=True)
            if args.news:
                scan_news = [*CONTAM, "scan", str(news), "--db", url, "--format", "json"]
                news_runs = [timed_scan(scan_news) for _ in range(args.repeat)]
                counts = json.loads(news_runs[-1][1])["summary"]["counts"]
                print(
                    f"{label}: scan of {args.news} news-length items (400 words): {scan_figures(news_runs)}; {counts}",
                    flush=True,
                )
            texts = [json.loads(x)["question"] for x in bench.read_text().splitlines()[:2000]]
            rps, p50, p95 = check_rps(url, args.clients, args.seconds, texts)
            print(
                f"{label}: /api/v1/check with {args.clients} concurrent clients: {rps:.0f} requests/s, "
                f"latency p50 {p50:.0f} ms, p95 {p95:.0f} ms",
                flush=True,
            )
            if backend == "sqlite":
                Path(url.split("///", 1)[1]).unlink()
    finally:
        with psycopg.connect(admin, autocommit=True) as c:
            for name in pg_names:
                c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
