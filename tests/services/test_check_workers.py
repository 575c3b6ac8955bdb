"""CheckWorkers hands /api/v1/check requests to worker processes from the server's event loop."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from typing import Any

from contam.app.core.types import BenchmarkItem
from contam.app.limits import Limits
from contam.app.services.checking import CheckWorkers
from contam.app.store.db import make_engine


class _RecordingPool:
    """Stands in for the process pool: records the thread each submission came from."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []

    def submit(self, fn: Any, *args: Any) -> Future[dict[str, Any]]:
        self.threads.append(threading.current_thread())
        done: Future[dict[str, Any]] = Future()
        done.set_result({"n": len(self.threads)})
        return done

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass


def test_a_new_pools_first_submissions_leave_the_event_loop(tmp_path: Any) -> None:
    """A new pool starts a process at each of its first `workers` submissions (the fork server,
    then a process: tens of milliseconds); made on the event loop, they stalled every request
    the server was answering. They are made from a thread; later ones on the loop itself."""
    workers = CheckWorkers(make_engine(f"sqlite:///{tmp_path / 'c.db'}"), Limits(), 2)
    workers._pool.shutdown()
    fake = _RecordingPool()
    workers._pool = fake  # type: ignore[assignment]
    item = [BenchmarkItem("0", 0, question="a question")]

    async def three() -> tuple[list[dict[str, Any]], threading.Thread]:
        answers = [await workers.answer(item, None, None) for _ in range(3)]
        return answers, threading.current_thread()

    answers, loop_thread = asyncio.run(three())
    assert [a["n"] for a in answers] == [1, 2, 3]
    assert [t is loop_thread for t in fake.threads] == [False, False, True]
