"""What contam processes leave behind when they are killed: their temporary files, swept."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from contam.app.api.main import create_app
from contam.app.processes import sweep_temp, temp_prefix
from contam.app.settings import Settings


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _stale(folder: Path, name: str, age: float = 120.0) -> Path:
    path = folder / name
    if name.endswith("-dir"):
        path.mkdir()
        (path / "bits.npy").write_bytes(b"x" * 1000)
    else:
        path.write_bytes(b"x" * 1000)
    os.utime(path, (time.time() - age, time.time() - age))
    return path


def test_a_killed_processs_temporary_files_are_swept_and_no_others(tmp_path: Path) -> None:
    """A server killed mid-job left its upload's copy and the scan's tables in /tmp for good (a
    trial: 14 after 7 kills, 25-36 MB a job): what a process that is gone left is removed, once
    untouched for a minute; a running process's, a fresh one and other names are not."""
    dead, space = _dead_pid(), os.stat("/proc/self/ns/pid").st_ino
    gone = [
        _stale(tmp_path, f"contam-scan-{space}-{dead}-abc-dir"),
        _stale(tmp_path, f"contam-upload-{space}-{dead}-xyz"),
    ]
    kept = [
        _stale(tmp_path, f"{temp_prefix('scan')}def-dir"),  # this process runs
        _stale(tmp_path, f"contam-parquet-{space}-{dead}-new", age=5),  # too fresh: a process may have just made it
        _stale(tmp_path, f"contam-scan-{space + 1}-{dead}-x"),  # another pid namespace's: its pids are not ours
        _stale(tmp_path, f"contam-scan-{space}-99999999999-x"),  # no pid can be this: left, never an error (a review)
        _stale(tmp_path, f"contam-scan-{space}-{'9' * 20}-x"),  # not a name contam makes
        _stale(tmp_path, f"contam-notes-{space}-{dead}-x"),
        _stale(tmp_path, "pytest-of-root-dir"),
    ]
    assert temp_prefix("scan") == f"contam-scan-{space}-{os.getpid()}-"
    assert sweep_temp(folder=str(tmp_path)) == 2
    assert sweep_temp(folder=str(tmp_path / "nowhere")) == 0  # a folder it cannot list: nothing, no error
    assert not any(p.exists() for p in gone) and all(p.exists() for p in kept)


def test_a_server_sweeps_the_temporary_folder_as_it_starts(
    tmp_path: Path, migrated_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    left = _stale(tmp_path, f"contam-scan-{os.stat('/proc/self/ns/pid').st_ino}-{_dead_pid()}-job-dir")
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        assert c.get("/health").status_code == 200
        for _ in range(100):
            if not left.exists():
                break
            time.sleep(0.05)
    assert not left.exists()
