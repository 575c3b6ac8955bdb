"""Use cases around indexed corpora: list them, and each one's health."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine

from app.errors import NotFoundError
from app.store import repo


class CorpusService:
    """Reads corpora and their health. The health view is assembled here and nowhere else."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def list_corpora(self) -> list[dict[str, Any]]:
        """Every corpus with its size (files, documents, tokens, bytes) and signature settings."""
        with self.engine.connect() as conn:
            return repo.list_corpora(conn)

    def names(self) -> list[str]:
        return [c["name"] for c in self.list_corpora()]

    def health(self, name: str) -> dict[str, Any]:
        """One corpus's health: documents, tokens, skipped records, failed files, duplicates,
        lengths and posting segments, with its settings."""
        with self.engine.connect() as conn:
            row = repo.get_corpus(conn, name)
            if row is None:
                raise NotFoundError(f"no corpus named {name!r}")
            return _health_view(conn, row)

    def overview(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Every corpus's listing row beside its health view."""
        with self.engine.connect() as conn:
            return [(row, _health_view(conn, row)) for row in repo.list_corpora(conn)]


def _health_view(conn: Connection, row: dict[str, Any]) -> dict[str, Any]:
    return {"name": row["name"], "fingerprint": row["fingerprint"], "config": row["config"]} | repo.corpus_health(
        conn, int(row["id"])
    )
