"""Run an indexing job on the executor asked for: the one entry point of the CLI
(`contam index --executor`) and the Python API (`contam.Index.add(executor=...)`), so both
check the same things and say the same when they refuse."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, make_url

from contam.app.core.config import SignatureConfig
from contam.app.errors import ConfigError
from contam.app.settings import get_settings
from contam.indexer.cluster import RAY_NEEDS_POSTGRESQL, RayJob, require_postgresql
from contam.indexer.job import IndexJob
from contam.indexer.options import IndexOptions
from contam.indexer.progress import Progress
from contam.indexer.summary import IndexSummary

EXECUTORS = ("local", "ray")


def check_executor(executor: str, address: str | None, url: str | None = None) -> None:
    """Refuse an unknown executor, a Ray address without the Ray executor, or the Ray executor
    with a database URL that is not PostgreSQL's (before any work: a SQLite file not made yet
    was told to be made with `contam db upgrade`, then refused, a new user's trial)."""
    if executor not in EXECUTORS:
        raise ConfigError(f"--executor must be local or ray, not {executor!r}")
    if address is not None and executor != "ray":
        raise ConfigError("--address is the Ray cluster's: use it with --executor ray")
    if executor == "ray" and url is not None and make_url(url).get_backend_name() != "postgresql":
        raise ConfigError(RAY_NEEDS_POSTGRESQL)


def run_index(
    engine: Engine,
    corpus: str,
    cfg: SignatureConfig,
    opts: IndexOptions,
    paths: list[Path],
    *,
    executor: str = "local",
    address: str | None = None,
    tasks: int | None = None,
    progress: Progress | None = None,
) -> IndexSummary:
    """Index `paths` into `corpus` with worker processes on this machine (local: `opts.workers`)
    or Ray tasks on a cluster (ray: `tasks` files in work at once, None: one per CPU of the
    cluster; PostgreSQL only, checked before the cluster is reached)."""
    check_executor(executor, address)
    if executor == "ray":
        require_postgresql(engine)
        lease = get_settings().claim_lease_seconds
        with RayJob(engine, corpus, cfg, opts, progress, address=address, tasks=tasks, lease=lease) as rjob:
            return rjob.run(paths)
    with IndexJob(engine, corpus, cfg, opts, progress) as job:
        return job.run(paths)
