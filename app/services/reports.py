"""Use cases around reports: submit a benchmark, run the check (as a background job), read,
export, and the clean subset of the uploaded benchmark."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import zstandard
from sqlalchemy import Engine

from app import __version__
from app.core.scoring import Thresholds
from app.core.types import Status
from app.core.units import as_mib
from app.errors import InputError, NotFoundError
from app.readers.benchmark import detect_format, read_benchmark, read_records
from app.services.scanning import ItemResult, Scanner
from app.store import reports as rrepo

log = logging.getLogger("contam.reports")


def summarize(results: list[ItemResult], th: Thresholds) -> dict[str, Any]:
    """Counts per status; contaminated share overall, per field and per corpus."""
    counts = Counter(Status(r.score.status) for r in results)
    n = len(results)
    by_role: dict[str, Counter[str]] = {}
    by_corpus: dict[str, Counter[Status]] = {}
    for r in results:
        for role, rs in r.score.roles.items():
            c = by_role.setdefault(role, Counter())
            c["items"] += 1
            c["found"] += int(rs.found(th))
        for corpus in {e["corpus"] for e in r.evidence}:
            by_corpus.setdefault(corpus, Counter())[Status(r.score.status)] += 1
    cov_bins = [0] * 10
    longest_edges = [0, 8, 13, 20, 30, 50, 100]
    longest_bins = [0] * len(longest_edges)
    for r in results:
        if r.score.status == Status.TOO_SHORT:
            continue
        cov_bins[min(9, int(r.score.best_doc_coverage * 10))] += 1
        longest_bins[max(i for i, e in enumerate(longest_edges) if r.score.longest_match >= e)] += 1
    return {
        "items": n,
        "counts": {s.value: counts[s] for s in Status},
        "histograms": {
            "best_doc_coverage": {"edges": [round(i / 10, 1) for i in range(11)], "counts": cov_bins},
            "longest_match": {"edges": longest_edges, "counts": longest_bins},
        },
        "contaminated_share": round(counts[Status.CONTAMINATED] / n, 4) if n else 0.0,
        "flagged_share": round(sum(counts[s] for s in Status if s.flagged) / n, 4) if n else 0.0,
        "answer_with_question": sum(r.score.answer_with_question for r in results),
        "per_field": {
            role: {
                "items": c["items"],
                "found": c["found"],
                "found_share": round(c["found"] / c["items"], 4) if c["items"] else 0.0,
            }
            for role, c in sorted(by_role.items())
        },
        "per_corpus": {
            name: {
                "contaminated": c[Status.CONTAMINATED],
                "suspicious": c[Status.SUSPICIOUS],
                "contaminated_share": round(c[Status.CONTAMINATED] / n, 4) if n else 0.0,
            }
            for name, c in sorted(by_corpus.items())
        },
    }


def item_row(r: ItemResult, th: Thresholds) -> dict[str, Any]:
    d = r.as_dict()
    roles = [role for role, rs in r.score.roles.items() if rs.found(th)]
    corpora = sorted({e["corpus"] for e in r.evidence})
    data = {k: v for k, v in d.items() if k not in ("item_id", "row", "status", "score")}
    data["item"] = {
        "question": r.item.question,
        "passage": r.item.passage,
        "choices": list(r.item.choices),
        "answer": r.item.answer,
    }
    return {
        "idx": r.item.row,
        "item_id": r.item.item_id,
        "status": r.score.status,
        "score": float(d["score"]),
        "text": r.item.display_text()[:4000],
        "roles_found": "," + ",".join(roles) + ",",
        "corpora_found": "," + ",".join(corpora) + ",",
        "data": data,
    }


class ReportService:
    """Submits and runs reports. Jobs run on one background thread; state lives in the database,
    so a restart resumes queued or interrupted jobs (`resume_pending`)."""

    def __init__(self, engine: Engine, max_upload_bytes: int) -> None:
        """`max_upload_bytes`: the largest benchmark `submit` takes (CONTAM_MAX_UPLOAD_MB, in MiB)."""
        self.engine = engine
        self.max_upload = max_upload_bytes
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="contam-job")

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    # ---------------------------------------------------------------- submit and run

    def submit(
        self,
        data: bytes,
        filename: str,
        name: str | None = None,
        mapping: dict[str, Any] | None = None,
        corpora: list[str] | None = None,
        thresholds: Thresholds | None = None,
        background: bool = True,
    ) -> str:
        """Validate the upload now (errors are the caller's 4xx), store it, then check it."""
        if len(data) > self.max_upload:
            raise InputError(
                f"{filename}: upload of {as_mib(len(data))} exceeds the limit of {as_mib(self.max_upload)}"
            )
        items, used = read_benchmark(data, filename, mapping)
        th = thresholds or Thresholds()
        scanner = Scanner(self.engine, corpora, th)  # refuses unknown corpora or mismatched settings now
        report_id = uuid.uuid4().hex
        with self.engine.begin() as conn:
            rrepo.create(
                conn,
                {
                    "id": report_id,
                    "name": name or filename,
                    "filename": filename,
                    "file_hash": hashlib.sha256(data).hexdigest(),
                    "status": "queued",
                    "error": None,
                    "total_items": len(items),
                    "corpora": [c["name"] for c in scanner.corpora],
                    "mapping": used,
                    "thresholds": th.as_dict(),
                    "fingerprint": scanner.fingerprint,
                    "config": scanner.cfg.to_dict(),
                    "software_version": __version__,
                    "summary": None,
                    "upload": zstandard.ZstdCompressor(level=3).compress(data),
                },
            )
        if background:
            self._pool.submit(self._run_logged, report_id)
        else:
            self.run(report_id)
        return report_id

    def _run_logged(self, report_id: str) -> None:
        try:
            self.run(report_id)
        except Exception:  # the job records its own failure; this only keeps the thread alive
            log.exception("report %s failed", report_id)

    def run(self, report_id: str) -> None:
        """Score every item of a stored report; on any error mark it failed with the reason."""
        with self.engine.connect() as conn:
            rep = rrepo.get(conn, report_id)
            blob = rrepo.upload(conn, report_id)
        if rep is None or blob is None:
            raise NotFoundError(f"no report {report_id}")
        with self.engine.begin() as conn:
            rrepo.set_status(conn, report_id, "running", error=None)
        try:
            data = zstandard.ZstdDecompressor().decompress(blob, max_output_size=1 << 34)
            items, _ = read_benchmark(data, rep["filename"], rep["mapping"])
            th = Thresholds(**rep["thresholds"])
            scanner = Scanner(self.engine, rep["corpora"], th)

            def progress(done: int, total: int) -> None:
                with self.engine.begin() as c:
                    rrepo.set_progress(c, report_id, done)

            results = scanner.scan(items, progress)
            with self.engine.begin() as conn:
                rrepo.delete_items(conn, report_id)
                rows = [item_row(r, th) for r in results]
                for i in range(0, len(rows), 2000):
                    rrepo.insert_items(conn, report_id, rows[i : i + 2000])
                rrepo.set_status(conn, report_id, "done", summary=summarize(results, th), done_items=len(results))
        except Exception as exc:
            with self.engine.begin() as conn:
                rrepo.delete_items(conn, report_id)
                rrepo.set_status(conn, report_id, "failed", error=f"{type(exc).__name__}: {exc}")
            raise

    def resume_pending(self) -> list[str]:
        """Re-queue reports left queued or running by a stopped server."""
        with self.engine.connect() as conn:
            ids = rrepo.with_status(conn, ["queued", "running"])
        for rid in ids:
            self._pool.submit(self._run_logged, rid)
        return ids

    # ---------------------------------------------------------------- read

    def get(self, report_id: str) -> dict[str, Any]:
        with self.engine.connect() as conn:
            rep = rrepo.get(conn, report_id)
        if rep is None:
            raise NotFoundError(f"no report {report_id}")
        return rep

    def list_reports(self, limit: int = 100, offset: int = 0) -> tuple[int, list[dict[str, Any]]]:
        with self.engine.connect() as conn:
            return rrepo.list_all(conn, limit, offset)

    def items(self, report_id: str | None, **filters: Any) -> tuple[int, list[dict[str, Any]]]:
        if report_id is not None:
            self.get(report_id)
        with self.engine.connect() as conn:
            return rrepo.query_items(conn, report_id, **filters)

    def item(self, report_id: str, item_id: str) -> dict[str, Any]:
        with self.engine.connect() as conn:
            it = rrepo.get_item(conn, report_id, item_id)
        if it is None:
            raise NotFoundError(f"no item {item_id!r} in report {report_id}")
        return it

    def delete(self, report_id: str) -> None:
        with self.engine.begin() as conn:
            if not rrepo.delete_report(conn, report_id):
                raise NotFoundError(f"no report {report_id}")

    # ---------------------------------------------------------------- exports

    def export(self, report_id: str, fmt: str) -> tuple[bytes, str]:
        """All items as JSONL or CSV (one row an item: id, status, score and the metrics)."""
        self._require_done(report_id)
        _, items = self.items(report_id, sort="row", descending=False, limit=10**9)
        if fmt == "jsonl":
            return "".join(json.dumps(i) + "\n" for i in items).encode(), "application/x-ndjson"
        if fmt == "csv":
            buf = io.StringIO()
            cols = [
                "item_id",
                "row",
                "status",
                "score",
                "reason",
                "tokens",
                "ngram_overlap",
                "coverage",
                "best_doc_coverage",
                "longest_match",
                "near_similarity",
                "question_found",
                "answer_found",
                "answer_with_question",
                "best_document",
                "best_corpus",
            ]
            w = csv.writer(buf)
            w.writerow(cols)
            for i in items:
                m, ev = i["metrics"], (i["evidence"][0] if i["evidence"] else {})
                w.writerow(
                    [
                        i["item_id"],
                        i["idx"],
                        i["status"],
                        i["score"],
                        i["reason"],
                        m["tokens"],
                        m["ngram_overlap"],
                        m["coverage"],
                        m["best_doc_coverage"],
                        m["longest_match"],
                        m["near_similarity"],
                        i["question_found"],
                        i["answer_found"],
                        i["answer_with_question"],
                        ev.get("document_id", ""),
                        ev.get("corpus", ""),
                    ]
                )
            return buf.getvalue().encode(), "text/csv"
        raise InputError(f"unknown export format {fmt!r} (use jsonl or csv)")

    def clean_subset(self, report_id: str, drop_suspicious: bool = False) -> tuple[bytes, str]:
        """The uploaded benchmark without its contaminated (and, if asked, suspicious) items, in
        its original format."""
        exclude = {Status.CONTAMINATED, Status.SUSPICIOUS} if drop_suspicious else {Status.CONTAMINATED}
        rep = self._require_done(report_id)
        with self.engine.connect() as conn:
            blob = rrepo.upload(conn, report_id)
            statuses = rrepo.statuses_by_idx(conn, report_id)
        assert blob is not None
        data = zstandard.ZstdDecompressor().decompress(blob, max_output_size=1 << 34)
        filename = rep["filename"]
        fmt, _comp = detect_format(filename)
        keep = [rec for i, (_row, rec) in enumerate(read_records(data, filename)) if statuses.get(i) not in exclude]
        base = filename.rsplit(".", 2 if _comp else 1)[0]
        out_name = f"{base}.clean.{fmt}"
        if fmt == "jsonl":
            return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in keep).encode(), out_name
        if fmt == "json":
            return json.dumps(keep, ensure_ascii=False, indent=1).encode(), out_name
        if fmt in ("csv", "tsv"):
            buf = io.StringIO()
            cols = list(keep[0]) if keep else list(next(iter(read_records(data, filename)))[1])
            w = csv.DictWriter(buf, fieldnames=cols, delimiter="\t" if fmt == "tsv" else ",")
            w.writeheader()
            w.writerows(keep)
            return buf.getvalue().encode(), out_name
        sink = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(keep), sink)
        return sink.getvalue(), out_name

    def _require_done(self, report_id: str) -> dict[str, Any]:
        rep = self.get(report_id)
        if rep["status"] != "done":
            raise InputError(f"report {report_id} is {rep['status']}, not done")
        return rep
