"""Progress for the indexer: a live bar on a terminal, plain log lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from indexer.job import FileReport


class LogProgress:
    """One line per file event on a stream (what a log file or CI wants).

    A file is reported done when its transaction commits (files are committed in groups).
    """

    def __init__(self, total_files: int, stream: TextIO | None = None) -> None:
        self.total, self.n, self.started = total_files, 0, 0
        self.stream = stream or sys.stderr  # looked up now: sys.stderr may have been replaced since import
        self.t0 = time.perf_counter()

    def file_started(self, path: str, size: int) -> None:
        self.started += 1
        print(f"indexing [{self.started}/{self.total}] {path} ({size / 1e6:.1f} MB)", file=self.stream, flush=True)

    def advanced(self, documents: int, nbytes: int) -> None:
        pass

    def file_finished(self, report: FileReport) -> None:
        self.n += 1
        if report.status == "unchanged":
            msg = "already indexed, skipped"
        elif report.status == "failed":
            msg = f"FAILED: {report.error}"
        else:
            rate = report.text_bytes / 1e6 / report.seconds if report.seconds else 0.0
            msg = f"{report.documents} documents, {report.tokens} tokens, {rate:.1f} MB/s"
        if report.skipped:
            msg += " (skipped: " + ", ".join(f"{k}={v}" for k, v in report.skipped.items()) + ")"
        print(f"{report.status} [{self.n}/{self.total}] {report.path}: {msg}", file=self.stream, flush=True)


class BarProgress:
    """A rich progress bar: files, documents, MB and MB/s."""

    def __init__(self, total_files: int, total_bytes: int) -> None:
        from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            TextColumn(
                "{task.fields[files]} files, {task.fields[docs]} docs, {task.completed:.0f}/{task.total:.0f} MB on disk"
            ),
            TextColumn("{task.fields[text_mb]:.0f} MB text, {task.fields[rate]:.1f} MB/s"),
            TimeElapsedColumn(),
            transient=False,
        )
        self.task = self.bar.add_task(
            "indexing", total=max(total_bytes / 1e6, 1e-6), files=f"0/{total_files}", docs=0, rate=0.0, text_mb=0.0
        )
        self.total_files, self.files, self.docs, self.t0 = total_files, 0, 0, time.perf_counter()
        self.text_bytes = 0
        self.bar.start()

    def file_started(self, path: str, size: int) -> None:
        pass

    def advanced(self, documents: int, nbytes: int) -> None:
        self.docs += documents
        self.text_bytes += nbytes
        self._update(0.0)

    def file_finished(self, report: FileReport) -> None:
        self.files += 1
        if report.status == "failed":
            self.bar.console.print(f"[red]failed[/red] {report.path}: {report.error}")
        self._update(report.bytes / 1e6)

    def _update(self, mb: float) -> None:
        elapsed = time.perf_counter() - self.t0
        self.bar.update(
            self.task,
            advance=mb,
            files=f"{self.files}/{self.total_files}",
            docs=self.docs,
            text_mb=self.text_bytes / 1e6,
            rate=self.text_bytes / 1e6 / elapsed if elapsed else 0.0,
        )

    def close(self) -> None:
        self.bar.stop()
