"""Scan speed side by side with AI2's decon (PyPI `decontaminate`) on the same corpus and items.

Usage: python bench/decon_compare.py [--mb 200] [--items 10000] [--repeat 3] [--workers 0]
                                     [--decon-python PATH]

Builds the corpus and benchmark of bench/scan_speed.py (real text from this machine, the
evaluation benchmarks when ../shared/eval is there), then, in one run and alternating:
  * decon: `decon.detect` over the corpus and the items (it reads the whole corpus each time);
  * this project: `contam index` once (timed), then Scanner.scan of all items in this process
    (the first scan, and the median of --repeat warm scans; process start excluded), and the
    same scan through the CLI (process start included).
Prints the medians and the ratios: warm scan against decon's pass, and index + first scan
against decon's pass.

decon needs Python >= 3.12: --decon-python names one with `decontaminate` installed; by default
a venv is made under ~/.cache/contam-bench from pyenv's 3.12 (or `python3.12` on the PATH).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scan_speed import CONTAM, build_benchmark, build_corpus  # noqa: E402

from contam.app.readers.benchmark import read_benchmark  # noqa: E402
from contam.app.services.scanning import Scanner  # noqa: E402
from contam.app.store.db import make_engine, upgrade  # noqa: E402

DECON_RUN = """
import sys, time, decon
c = decon.Config(training_dir=sys.argv[1], evals_dir=sys.argv[2], report_output_dir=sys.argv[3])
t = time.perf_counter()
decon.detect(c)
print(time.perf_counter() - t)
"""


def decon_python(given: str | None) -> str:
    if given:
        return given
    venv = Path.home() / ".cache" / "contam-bench" / "decon-venv"
    py = venv / "bin" / "python"
    if not py.exists():
        base = sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.12*/bin/python"))) or [shutil.which("python3.12")]
        if not base or not base[-1]:
            raise SystemExit("decon needs Python >= 3.12: give --decon-python")
        subprocess.run([base[-1], "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "decontaminate"], check=True)
    return str(py)


def decon_inputs(tmp: Path, files: list[Path], bench: Path) -> tuple[Path, Path]:
    """decon's training directory (the corpus files) and its reference files (the items:
    question, answer, passage; choices left out of the question, as decon's own converters do)."""
    train, evals = tmp / "decon-train", tmp / "decon-evals"
    train.mkdir()
    evals.mkdir()
    for i, f in enumerate(files):
        (train / f"{i:03d}-{f.name}").symlink_to(f.resolve())
    items, _ = read_benchmark(bench.read_bytes(), bench.name)
    with (evals / "bench.jsonl").open("w") as fh:
        for k, it in enumerate(items):
            rec = {
                "eval_key": "bench",
                "eval_name": "bench",
                "eval_instance_index": k,
                "doc_id": k,
                "split": "test",
                "question": it.question,
                "answer": it.answer,
                "fingerprint": str(k),
                "is_correct": True,
            }
            if it.passage:
                rec["passage"] = it.passage
            fh.write(json.dumps(rec) + "\n")
    return train, evals


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=200)
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=0, help="scan worker processes (0: one per core)")
    ap.add_argument("--decon-python", default=None)
    args = ap.parse_args()
    py = decon_python(args.decon_python)
    tmp = Path(tempfile.mkdtemp(prefix="contam-decon-"))
    try:
        files, passages = build_corpus(tmp, args.mb)
        bench = tmp / "bench.jsonl"
        build_benchmark(bench, args.items, passages)
        train, evals = decon_inputs(tmp, files, bench)
        url = f"sqlite:///{tmp}/bench.db"
        upgrade(url)
        t0 = time.perf_counter()
        out = subprocess.run(
            [*CONTAM, "index", "--corpus", "bench", "--db", url, "--progress", "none", *map(str, files)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        ).stdout
        t_index = time.perf_counter() - t0
        print(f"contam index: {json.loads(out)['text_mb']:.0f} MB in {t_index:.1f} s", flush=True)
        items, _ = read_benchmark(bench.read_bytes(), bench.name)
        engine = make_engine(url)
        t0 = time.perf_counter()
        Scanner(engine, workers=args.workers).scan(items)
        t_first = time.perf_counter() - t0
        decon_runs, warm_runs, cli_runs = [], [], []
        for r in range(args.repeat):
            report = tmp / f"decon-report-{r}"
            res = subprocess.run(
                [py, "-c", DECON_RUN, str(train), str(evals), str(report)],
                capture_output=True,
                text=True,
                env={**os.environ, "RAYON_NUM_THREADS": str(os.cpu_count())},
            )
            if res.returncode:
                raise SystemExit(res.stderr[-2000:])
            decon_runs.append(float(res.stdout.strip().splitlines()[-1]))
            t0 = time.perf_counter()
            Scanner(engine, workers=args.workers).scan(items)
            warm_runs.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            subprocess.run(
                [*CONTAM, "scan", str(bench), "--db", url, "--format", "json"], capture_output=True, cwd=ROOT
            )
            cli_runs.append(time.perf_counter() - t0)
            print(
                f"run {r + 1}: decon {decon_runs[-1]:.1f} s, contam scan {warm_runs[-1]:.1f} s in process, "
                f"{cli_runs[-1]:.1f} s by the CLI",
                flush=True,
            )
        engine.dispose()
        d, w, c = statistics.median(decon_runs), statistics.median(warm_runs), statistics.median(cli_runs)
        print(f"\n{len(items)} items against {args.mb:.0f} MB, medians of {args.repeat}:")
        print(f"  decon detect (a pass over the corpus): {d:.1f} s")
        print(f"  contam scan, warm, in process: {w:.1f} s  -> {d / w:.1f}x faster than decon")
        print(f"  contam scan by the CLI (process start, imports, first look-ups): {c:.1f} s")
        print(
            f"  contam index + first scan: {t_index:.1f} + {t_first:.1f} = {t_index + t_first:.1f} s  -> "
            f"{d / (t_index + t_first):.2f}x decon's pass"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
