"""What every pool of worker processes needs: to end when the process that started it is gone.

A ProcessPoolExecutor's workers wait for work on a queue whose other end they hold themselves,
so a parent that is killed (or exits without shutting its pool down: a server stopped while a
report job scored) leaves them waiting forever, each holding its memory (a scan worker 200 MB or
more), and with them the fork server they came from. Each worker therefore watches its parent.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
import threading
import time


def exit_with(parent: int, every: float = 1.0, interruptible: bool = True) -> None:
    """In a worker (a pool's initializer calls it): end on Ctrl-C without a word (SIGINT's default
    action: the parent reports the interruption), and end this process once `parent` (the pid of
    the process that started the pool: for a worker started by a fork server, not its os
    parent) is gone, checking every `every` seconds. A parent that died is a zombie until its own
    parent reaps it, and a zombie still answers kill(pid, 0), so its workers (blocked writing to
    it) lived on: a forked worker also ends when it is handed to another parent, and any worker
    when the kernel says the parent is a zombie.

    Not `interruptible`: Ctrl-C and SIGTERM sent to the process group leave the worker to its
    parent, which shuts the pool down. A worker killed while it wrote a large result (the indexer's
    signed batches, megabytes each) left half a message in the pool's pipe, which the pool's
    manager thread then waited on for good, and with it the parent: `contam index` into
    PostgreSQL hung after Ctrl-C in 3 of 6 tries, ignoring every signal but SIGKILL (a trial)."""
    if interruptible:
        quiet_on_interrupt()
    else:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
    forked = os.getppid() == parent

    def watch() -> None:
        while True:
            time.sleep(every)
            if (forked and os.getppid() != parent) or _zombie(parent):
                os._exit(1)
            try:
                os.kill(parent, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:  # the pid now belongs to another user's process: ours is gone
                os._exit(1)

    threading.Thread(target=watch, name="contam-parent-watch", daemon=True).start()


def quiet_on_interrupt() -> None:
    """In a worker: Ctrl-C, which reaches the whole process group, ends it at once without the
    KeyboardInterrupt traceback each worker printed (the parent stops the work and says so); but a
    process started to ignore SIGINT (a background job of a script: `contam index ... &`) keeps
    ignoring it, as its parent does, and works on."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.SIG_DFL)


def _zombie(pid: int) -> bool:
    """The process has exited and waits to be reaped (its state in /proc; False where there is none)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except (OSError, IndexError):
        return False


# ---------------------------------------------------------------- temporary files of dead processes

_OURS = re.compile(r"contam-(scan|upload|parquet)-(\d{1,12})-(\d{1,10})-.+")


def _pid_space() -> int:
    """This process's pid namespace (its inode; 0 where /proc does not say): a pid means this
    process only within it (a container sharing /tmp with the host runs its own pids)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def temp_prefix(kind: str) -> str:
    """The prefix of a temporary file or folder this process makes (`kind`: scan, upload or
    parquet), naming the process (its pid namespace and pid), so that sweep_temp can tell one a
    killed process left."""
    return f"contam-{kind}-{_pid_space()}-{os.getpid()}-"


def sweep_temp(older_than: float = 60.0, folder: str | None = None) -> int:
    """Remove what contam processes that are gone left in the temporary folder (`folder`: the
    system's): a server killed mid-job left its upload's copy and the scan's tables there for
    good, 25-36 MB a job for a 1.7 MB upload (a trial: 7 kills, 14 left). Only names temp_prefix
    made in this pid namespace (another's pids cannot be asked about: a review removed a live
    container's upload) whose process no longer runs, untouched for `older_than` seconds; what
    cannot be read or removed is left, never an error. The number removed."""
    removed, space = 0, _pid_space()
    try:
        entries = list(os.scandir(folder or tempfile.gettempdir()))
    except OSError:
        return 0
    for entry in entries:
        m = _OURS.fullmatch(entry.name)
        if m is None or int(m[2]) != space or _running(int(m[3])):
            continue
        try:
            if time.time() - entry.stat(follow_symlinks=False).st_mtime < older_than:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
            removed += 1
        except OSError:
            continue
    return removed


def _running(pid: int) -> bool:
    """Whether a process of this pid may run (a zombie does not; another user's does; a number
    no pid can be is taken as running: it is left alone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return not _zombie(pid)
