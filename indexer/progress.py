"""Progress for the indexer: a live bar on a terminal, plain log lines otherwise, or nothing."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TextIO

from contam.app.readers.corpus import split_counts
from contam.indexer.summary import FileReport

if TYPE_CHECKING:
    from rich.progress import TaskID


def failure(report: FileReport) -> str:
    """A failed file's error without the path its progress line already starts with (the
    error names the path for the run's final listing of failed files)."""
    error = report.error or "failed"
    return error.removeprefix(f"{report.path}: ")


class Progress(Protocol):
    """What the job tells about its run. A file is reported finished when its transaction
    commits (files are committed in groups), or when it is found unchanged or has failed."""

    def run_started(self, files: Sequence[Path]) -> None: ...
    def file_started(self, path: str, size: int) -> None: ...
    def advanced(self, documents: int, nbytes: int) -> None: ...  # negative: a group rolled back
    def file_finished(self, report: FileReport) -> None: ...


class NoProgress:
    def run_started(self, files: Sequence[Path]) -> None:
        pass

    def file_started(self, path: str, size: int) -> None:
        pass

    def advanced(self, documents: int, nbytes: int) -> None:
        pass

    def file_finished(self, report: FileReport) -> None:
        pass


class _RunRate(NoProgress):
    """The text written since the run started, and its rate (MB/s), as both displays give it:
    files commit in groups, so a file's own interval leaves out the signing done ahead of it and
    the commit (it overstated the rate 3-5x), and the files of a group finish at one moment."""

    def __init__(self) -> None:
        self.t0, self.text_bytes = time.perf_counter(), 0

    def run_started(self, files: Sequence[Path]) -> None:
        self.t0, self.text_bytes = time.perf_counter(), 0

    def advanced(self, documents: int, nbytes: int) -> None:
        self.text_bytes += nbytes

    def rate(self) -> float:
        elapsed = time.perf_counter() - self.t0
        return self.text_bytes / 1e6 / elapsed if elapsed > 0 else 0.0


class LogProgress(_RunRate):
    """One line per file event on a stream (what a log file or CI wants)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__()
        self.total, self.n = 0, 0
        self.numbers: dict[str, int] = {}  # path -> its number in the run's lines
        self.stream = stream or sys.stderr  # looked up now: sys.stderr may have been replaced since import

    def run_started(self, files: Sequence[Path]) -> None:
        super().run_started(files)
        self.total = len(files)

    def file_started(self, path: str, size: int) -> None:
        # a file started again (the good files of a group one file failed in) keeps its number
        verb = "indexing again" if path in self.numbers else "indexing"
        k = self.numbers.setdefault(path, len(self.numbers) + 1)
        print(f"{verb} [{k}/{self.total}] {path} ({size / 1e6:.1f} MB)", file=self.stream, flush=True)

    def file_finished(self, report: FileReport) -> None:
        """The file's line, under its number in the run (its "indexing" line's: the count of files
        finished, there until session 25, read as another file's number), with that count after."""
        self.n += 1
        k = self.numbers.setdefault(report.path, len(self.numbers) + 1)
        if report.status == "unchanged":  # another file's content: which (a new user's trial)
            msg = (
                f"the same content as {report.same_as}, indexed once" if report.same_as else "already indexed, skipped"
            )
        elif report.status == "failed":
            msg = f"FAILED: {failure(report)}"
        else:
            msg = (
                f"{_count(report.documents, 'document')}, {_count(report.tokens, 'token')}, "
                f"{report.text_bytes / 1e6:.1f} MB of text"
                f" (the run so far: {self.text_bytes / 1e6:.1f} MB at {self.rate():.1f} MB/s)"
            )
        for what, counts in zip(("skipped", "repaired"), split_counts(report.skipped), strict=True):
            if counts:
                msg += f" ({what}: " + ", ".join(f"{k}={v}" for k, v in counts.items()) + ")"
        done = f"{self.n} of {self.total} files finished"
        print(f"{report.status} [{k}/{self.total}] {report.path}: {msg}; {done}", file=self.stream, flush=True)


class BarProgress(_RunRate):
    """A rich progress bar: files, documents, MB and MB/s. close() it at the end."""

    def __init__(self) -> None:
        # rich is imported here: a Ray worker imports this module and never draws a bar
        from rich.progress import BarColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        super().__init__()
        self.bar = RichProgress(
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
        self.task: TaskID | None = None
        self.total_files, self.files, self.docs = 0, 0, 0
        # MB on disk: of the files finished, and started; text read of files not yet finished
        self.finished_mb, self.started_mb, self.finished_text = 0.0, 0.0, 0

    def close(self) -> None:
        self.bar.stop()

    def run_started(self, files: Sequence[Path]) -> None:
        super().run_started(files)
        total_mb = sum(f.stat().st_size for f in files) / 1e6
        self.total_files = len(files)
        self.task = self.bar.add_task(
            "indexing", total=max(total_mb, 1e-6), files=f"0/{len(files)}", docs=0, rate=0.0, text_mb=0.0
        )
        self.bar.start()

    def file_started(self, path: str, size: int) -> None:
        self.started_mb += size / 1e6

    def advanced(self, documents: int, nbytes: int) -> None:
        super().advanced(documents, nbytes)
        self.docs += documents
        self._update()

    def file_finished(self, report: FileReport) -> None:
        self.files += 1
        if report.status == "failed":
            self.bar.console.print(f"[red]failed[/red] {report.path}: {failure(report)}")
        self.finished_mb += report.bytes / 1e6
        self.started_mb = max(self.started_mb, self.finished_mb)  # unchanged files never start
        self.finished_text += report.text_bytes
        self._update()

    def completed_mb(self) -> float:
        """MB on disk done: the finished files, and of the files in progress (which commit in
        groups, so a file may be read long before it counts as finished) as much as their text
        read so far, at most their size: the bar moves from the first batch on."""
        in_flight = max(self.text_bytes - self.finished_text, 0) / 1e6
        return min(self.finished_mb + in_flight, self.started_mb)

    def _update(self) -> None:
        if self.task is None:
            return
        files = f"{self.files}/{self.total_files}"
        self.bar.update(
            self.task,
            completed=self.completed_mb(),
            files=files,
            docs=self.docs,
            text_mb=self.text_bytes / 1e6,
            rate=self.rate(),
        )


def _count(n: int, noun: str) -> str:
    """ "1 document", "2 documents": a one-document file read "1 documents" (a trial)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
