"""The queue between the indexing job's main thread and its writer thread.

Per file the main thread sends FileStart, then the file's Batches (their signatures still
being computed by the workers), then FileEnd; Sync and STOP come between files. The writer's
error comes back the other way, through the Inbox.
"""

from __future__ import annotations

import queue
import threading
from collections import Counter
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from contam.app.readers.corpus import RawDocument
from contam.indexer.signing import SignedBatch


@dataclass
class FileStart:
    path: Path
    size: int
    content_hash: str


@dataclass
class Batch:
    docs: list[RawDocument]
    future: Future[SignedBatch]


@dataclass
class FileEnd:
    skipped: Counter[str]
    error: str | None = None  # set when the file could not be read to its end


@dataclass
class Sync:
    """Commit what is written so far, then set `done` (the main thread waits on it)."""

    done: threading.Event = field(default_factory=threading.Event)


STOP = object()


class Stopped(Exception):
    """The main thread stopped sending in the middle of a file (an error or Ctrl-C there)."""


class Inbox:
    """The bounded queue from the main thread to the writer, and the writer's error back: the
    main thread never blocks on a dead writer, its next put() or sync() raises the error."""

    def __init__(self, depth: int) -> None:
        self.queue: queue.Queue[object] = queue.Queue(maxsize=depth)
        self.error: BaseException | None = None
        self.stopped = False  # the writer has taken STOP

    def put(self, msg: object) -> None:
        while True:
            if self.error is not None:
                raise self.error
            try:
                self.queue.put(msg, timeout=0.2)
                return
            except queue.Full:
                continue

    def sync(self) -> None:
        """Wait until the writer has committed everything sent so far."""
        msg = Sync()
        self.put(msg)
        while not msg.done.wait(0.2):
            if self.error is not None:
                raise self.error

    def get(self) -> object:
        msg = self.queue.get()
        if msg is STOP:
            self.stopped = True
        return msg

    def stop(self) -> None:
        self.queue.put(STOP)

    def fail(self, exc: BaseException) -> None:
        """The writer died of `exc`: keep draining so the producer never blocks, until STOP."""
        self.error = exc
        while not self.stopped:  # a writer failing after STOP (its last commit, ANALYZE) has no one to drain for
            try:
                if self.queue.get(timeout=0.5) is STOP:
                    return
            except queue.Empty:
                continue
