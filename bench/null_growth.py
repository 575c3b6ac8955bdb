"""The null as the corpus grows: benchmarks against ever larger corpora of text they are not in.

Usage: python bench/null_growth.py EVAL_DIR [--sizes 100,300,1000] [--roots DIR,...] [--keep DIR]

The thresholds were calibrated against a corpus of about 80 MB (`bench/calibrate.py`); users
index hundreds of gigabytes, where chance matches are more likely. This builds a corpus of this
machine's own text (manual pages, /usr/share/doc, C headers, one Python's standard library and
its site-packages, ...; each file, or each 20 KB stretch of a large one, a document; exact
duplicates dropped; shuffled with a fixed seed and written as shards of up to 50 MB), indexes the first
shards up to each size (MB of text) into a database of its own (SQLite), and scans EVAL_DIR's
benchmarks (`benchmarks/*.jsonl`, unmodified: their planted copies live in EVAL_DIR's corpus,
which is not indexed here) against each. Every item is unplanted here, so a flag is either the
item's text really being on this machine or a chance match: read each one's evidence.

Prints, per benchmark and size: items, flagged (suspicious / contaminated), too_short; then,
pooled, how many clean items came near a threshold (a run of 8 or 13 own tokens, own text found
at .2, .3 or .4 of the item's); then every flagged item with its reason and best document.
Session 35 (931.8 MB, 95,609 documents): 0, 1 and 2 of 10,988 items flagged at 100, 300 and
930 MB. Takes about 2 minutes a GB of text to index, on 2 cores; not part of the tests.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import hashlib
import json
import os
import random
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

CONTAM = [sys.executable, "-m", "contam.indexer.cli"]  # the `contam` command of this checkout
ROOT = Path(__file__).resolve().parents[1]
PY = f"{sys.base_prefix}/lib/python{sys.version_info.major}.{sys.version_info.minor}"
ROOTS = [
    "/usr/share/doc", "/usr/share/man", "/usr/share/common-licenses", "/usr/include", PY,
    "/usr/lib/python3/dist-packages", "/usr/share/perl", "/usr/share/perl5", "/usr/share/vim",
    "/usr/lib/node_modules", "/usr/share/info", "/usr/share/i18n", "/usr/share/groff", "/usr/share/xml", "/etc",
    "/usr/lib/google-cloud-sdk/lib/googlecloudsdk", "/usr/local/cuda/include",
]  # fmt: skip
SKIP = re.compile(
    r"\.(pyc|pyo|so|a|o|png|jpe?g|gif|ico|bz2|xz|zip|whl|tar|mo|ttf|otf|woff2?|pdf|db|bin|dat|pkl|np[yz])$"
)
CHUNK = 20_000  # characters of a document cut from a large file


def _text(path: str) -> str | None:
    """A regular file's text that anyone on the machine may read (never a FIFO, nor a secret of
    /etc kept in a database with --keep), or None."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or not st.st_mode & stat.S_IROTH or st.st_size >= 8 << 20:
            return None
        data = Path(path).read_bytes()
        data = gzip.decompress(data) if path.endswith(".gz") else data
        text = data.decode("utf-8") if data and b"\x00" not in data else None
    except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile):
        return None
    if text and "/man/" in path:  # roff requests and escapes out
        text = "\n".join(line for line in text.splitlines() if not line.startswith((".", "'")))
        text = re.sub(r"\\f[BIRP]|\\\(..|\\[&e]", "", text).replace("\\-", "-")
    return text


def _pieces(text: str) -> Iterator[str]:
    if len(text) <= CHUNK * 1.5:
        yield text
        return
    buf = ""
    for para in re.split(r"(\n\s*\n)", text):
        buf += para
        if len(buf) >= CHUNK:
            yield buf
            buf = ""
    if buf.strip():
        yield buf


def build(roots: list[str], out: Path, target_mb: float, shard_mb: float) -> list[tuple[Path, float]]:
    """Shards of this machine's text (path, MB of text), shuffled, up to target_mb."""
    docs, seen = [], set()
    for root in roots:
        for dirpath, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in ("__pycache__", ".git")]
            for name in sorted(files):
                path = os.path.join(dirpath, name)
                if os.path.islink(path) or SKIP.search(name.removesuffix(".gz")):
                    continue
                text = _text(path)
                for k, piece in enumerate(_pieces(text) if text and len(text.strip()) >= 50 else ()):
                    digest = hashlib.blake2b(piece.encode(), digest_size=12).digest()
                    if piece.strip() and digest not in seen:
                        seen.add(digest)
                        docs.append((f"{path}#{k}", piece))
    random.Random(12345).shuffle(docs)
    groups: list[list[str]] = [[]]
    size = written = 0
    for ident, text in docs:
        if written >= target_mb * 1e6:
            break
        if size >= shard_mb * 1e6:
            groups.append([])
            size = 0
        groups[-1].append(json.dumps({"id": ident, "text": text}, ensure_ascii=False) + "\n")
        size, written = size + len(text.encode()), written + len(text.encode())
    shards = []
    for k, lines in enumerate(groups):
        path = out / f"shard-{k:03d}.jsonl.gz"
        with gzip.open(path, "wt", encoding="utf-8", compresslevel=3) as f:
            f.writelines(lines)
        shards.append((path, sum(len(json.loads(line)["text"].encode()) for line in lines) / 1e6))
    print(f"corpus: {written / 1e6:.1f} MB of text, {len(docs)} documents found, {len(shards)} shards", flush=True)
    return shards


def scan(url: str, benchmarks: list[Path]) -> dict[str, list[dict]]:
    out = {}
    for b in benchmarks:
        run = subprocess.run([*CONTAM, "scan", str(b), "--db", url, "--format", "json", "--progress", "none"],
                             cwd=ROOT, capture_output=True, text=True)  # fmt: skip
        if run.returncode not in (0, 1):
            raise SystemExit(run.stderr)
        out[b.stem] = json.loads(run.stdout)["results"]
    return out


def report(results: dict[str, dict[str, list[dict]]]) -> None:
    """results: per corpus (its MB of text, smallest first), per benchmark, the scan's results."""
    sizes = list(results)
    print("\nbenchmark                       items  " + "  ".join(f"{s:>10}: susp/cont/short" for s in sizes))
    for b in next(iter(results.values())):
        counts = [collections.Counter(r["status"] for r in results[s][b]) for s in sizes]
        cells = "  ".join(f"{c['suspicious']:>15}/{c['contaminated']}/{c['too_short']:<7}" for c in counts)
        print(f"{b:30} {len(results[sizes[0]][b]):>6}  {cells}")
    print("\nnear a threshold, pooled (own-text run >= 8 / >= 13 tokens; own text found >= .2 / .3 / .4):")
    for s in sizes:
        rows = [r for rs in results[s].values() for r in rs]
        run, own = (
            [r["metrics"].get("longest_match", 0) for r in rows],
            [r["metrics"].get("own_coverage", 0) for r in rows],
        )
        near = [sum(x >= t for x in run) for t in (8, 13)] + [sum(x >= t for x in own) for t in (0.2, 0.3, 0.4)]
        flagged = sum(r["status"] in ("suspicious", "contaminated") for r in rows)
        print(f"  {s}: flagged {flagged} of {len(rows)} ({100 * flagged / len(rows):.3f}%); near: {near}")
    for s in sizes:
        for b, rows in results[s].items():
            for r in rows:
                if r["status"] in ("suspicious", "contaminated"):
                    best = r["evidence"][0]["document_id"] if r["evidence"] else "-"
                    print(f"  {s} {b} {r['item_id']}: {r['status']}: {r['reason']} [{best}]")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("eval_dir", type=Path)
    ap.add_argument("--sizes", default="100,300,1000", help="MB of text of each corpus (nested: each holds the last)")
    ap.add_argument("--roots", default=",".join(ROOTS), help="folders whose files make the corpus")
    ap.add_argument("--keep", type=Path, help="keep the shards and databases here (default: a temporary folder)")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="contam-null-"))
    work.mkdir(parents=True, exist_ok=True)
    sizes = sorted(float(x) for x in args.sizes.split(","))
    try:
        roots = [r for r in args.roots.split(",") if os.path.isdir(r)]
        shards = build(roots, work, sizes[-1], min(50.0, sizes[0] / 2))  # nested sizes: shards smaller than the least
        benchmarks = sorted((args.eval_dir / "benchmarks").glob("*.jsonl"))
        results: dict[str, dict[str, list[dict]]] = {}
        for size in sizes:
            files, total = [], 0.0
            for path, mb in shards:
                if total >= size:
                    break
                files.append(str(path))
                total += mb
            url = f"sqlite:///{work / f'null-{size:.0f}.db'}"
            subprocess.run([*CONTAM, "db", "upgrade", "--db", url], cwd=ROOT, check=True, capture_output=True)
            index = [*CONTAM, "index", "--corpus", "web", "--db", url, "--progress", "none", *files]
            summary = json.loads(subprocess.run(index, cwd=ROOT, check=True, capture_output=True, text=True).stdout)
            print(
                f"{size:.0f} MB asked: indexed {summary['text_mb']:.1f} MB at {summary['mb_per_s']:.1f} MB/s",
                flush=True,
            )
            label = f"{summary['text_mb']:.0f} MB"  # a machine with less text than asked gives two sizes the same
            results[label if label not in results else f"{label} (asked {size:.0f})"] = scan(url, benchmarks)
        report(results)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
