"""Project-level checks: migrations match the models, the compose file matches the CLI and
settings, and imports only flow downwards through the layers."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import yaml
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from app.settings import Settings
from app.store.db import make_engine
from app.store.schema import metadata

ROOT = Path(__file__).resolve().parents[1]


def test_migrations_match_models(migrated_url: str) -> None:
    eng = make_engine(migrated_url)
    with eng.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    eng.dispose()
    assert diff == []


def _cli_commands() -> set[str]:
    import typer.main

    from indexer.cli import app

    group = typer.main.get_command(app)
    names = set()
    for name, cmd in group.commands.items():  # type: ignore[attr-defined]
        names.add(name)
        for sub in getattr(cmd, "commands", {}):
            names.add(f"{name} {sub}")
    return names


def test_compose_commands_and_variables_exist() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"postgres", "migrate", "api", "indexer"} <= set(services)
    assert "healthcheck" in services["postgres"] and services["postgres"]["volumes"]
    assert services["indexer"]["profiles"]
    commands = _cli_commands()
    fields = {f"CONTAM_{name.upper()}" for name in Settings.model_fields}
    for name, svc in services.items():
        cmd = svc.get("command")
        if name == "postgres":
            continue
        assert cmd, name
        words = cmd if isinstance(cmd, list) else cmd.split()
        assert words[0] == "contam", name
        pair = " ".join(words[1:3])
        sub = pair if pair in commands else words[1]
        assert sub in commands, (name, sub)
        for var in svc.get("environment", {}):
            if var.startswith("CONTAM_"):
                assert var in fields, (name, var)


LAYERS = {"core": 0, "readers": 1, "store": 1, "services": 2, "api": 3, "web": 3, "cli": 3, "indexer": 3}
TRANSPORTS = {"api", "web", "cli", "indexer"}  # they reach the store only through services


def _area(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == "indexer":
        return "indexer"
    if parts[0] == "app" and len(parts) > 1 and parts[1] in LAYERS:
        return parts[1]
    return None


def _imports(path: Path) -> Iterator[str]:
    """Every module a file imports; `from a import b` gives both a and a.b (b may be a module)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names)


def test_imports_only_flow_downwards() -> None:
    bad = []
    for path in list((ROOT / "app").rglob("*.py")) + list((ROOT / "indexer").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        mine = _area(module)
        for t in _imports(path):
            theirs = _area(t)
            if mine and theirs and LAYERS[theirs] > LAYERS[mine]:
                bad.append(f"{module} imports {t}, a layer above it")
            if mine in TRANSPORTS and theirs == "store":
                bad.append(f"{module} (a transport) imports {t}: go through a service")
            if module.startswith("app.") and t.split(".")[0] == "indexer":
                bad.append(f"{module} imports {t}: the indexer imports app, so app must not import it")
            if mine == "core" and t.split(".")[0] in ("sqlalchemy", "fastapi", "typer"):
                bad.append(f"{module} (pure core) imports {t}")
    assert bad == []


def test_segment_migration_keeps_postings(db_url: str) -> None:
    """0003 moves existing postings into one segment per corpus, keyed (seg, key, doc), and back."""
    from alembic import command
    from sqlalchemy import inspect, text

    from app.store.db import alembic_config, upgrade

    upgrade(db_url, "0002")
    eng = make_engine(db_url)
    ngrams = [(-5, 1), (7, 1), (7, 2), (9, 3)]
    bands = [(11, 2, 0), (-3, 3, 1)]
    with eng.begin() as conn:
        for cid, name in ((1, "a"), (2, "b")):
            conn.execute(
                text(
                    "INSERT INTO corpus (id, name, fingerprint, config, store_text, created_at) "
                    "VALUES (:i, :n, 'f', '{}', true, CURRENT_TIMESTAMP)"
                ),
                {"i": cid, "n": name},
            )
            conn.execute(
                text(
                    "INSERT INTO corpus_file (id, corpus_id, path, size, content_hash, status, n_docs, "
                    "n_tokens, n_ngrams, n_windows, skipped, seconds, indexed_at) VALUES (:i, :i, 'p', 1, "
                    ":h, 'done', 0, 0, 0, 0, '{}', 0, CURRENT_TIMESTAMP)"
                ),
                {"i": cid, "h": f"h{cid}"},
            )
        for doc, cid in ((1, 1), (2, 1), (3, 2)):
            conn.execute(
                text(
                    "INSERT INTO document (id, corpus_id, file_id, external_id, position, n_chars, "
                    "n_tokens, text_hash) VALUES (:d, :c, :c, 'x', 0, 1, 1, 0)"
                ),
                {"d": doc, "c": cid},
            )
        conn.execute(text("INSERT INTO ngram (hash, doc_id) VALUES (:h, :d)"), [{"h": h, "d": d} for h, d in ngrams])
        conn.execute(
            text("INSERT INTO band (key, doc_id, win) VALUES (:k, :d, :w)"),
            [{"k": k, "d": d, "w": w} for k, d, w in bands],
        )
    eng.dispose()
    try:
        upgrade(db_url)
        eng = make_engine(db_url)
        assert inspect(eng).get_pk_constraint("ngram")["constrained_columns"] == ["seg", "hash", "doc_id"]
        assert inspect(eng).get_pk_constraint("band")["constrained_columns"] == ["seg", "key", "doc_id", "win"]
        with eng.connect() as conn:
            segs = {c: (s, n) for s, c, n in conn.execute(text("SELECT id, corpus_id, rows FROM segment"))}
            got_ngrams = sorted(conn.execute(text("SELECT seg, hash, doc_id FROM ngram")).all())
            got_bands = sorted(conn.execute(text("SELECT seg, key, doc_id, win FROM band")).all())
        corpus_of = {1: 1, 2: 1, 3: 2}
        assert got_ngrams == sorted((segs[corpus_of[d]][0], h, d) for h, d in ngrams)
        assert got_bands == sorted((segs[corpus_of[d]][0], k, d, w) for k, d, w in bands)
        assert {c: n for c, (_, n) in segs.items()} == {1: 4, 2: 2}
        eng.dispose()
        command.downgrade(alembic_config(db_url), "0002")
        eng = make_engine(db_url)
        with eng.connect() as conn:
            assert sorted(conn.execute(text("SELECT hash, doc_id FROM ngram")).all()) == sorted(ngrams)
            assert sorted(conn.execute(text("SELECT key, doc_id, win FROM band")).all()) == sorted(bands)
        assert not inspect(eng).has_table("segment")
    finally:
        eng.dispose()
