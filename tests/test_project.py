"""Project-level checks: migrations match the models, the compose file matches the CLI and
settings, and imports only flow downwards through the layers."""

from __future__ import annotations

import ast
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

    from app.cli import app

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


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] == "indexer":
        return LAYERS["indexer"]
    if parts[0] == "app" and len(parts) > 1:
        return LAYERS.get(parts[1])
    return None


def test_imports_only_flow_downwards() -> None:
    bad = []
    for path in list((ROOT / "app").rglob("*.py")) + list((ROOT / "indexer").rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        module = ".".join(rel.parts)
        mine = _layer(module)
        if mine is None:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                theirs = _layer(t)
                if theirs is not None and theirs > mine:
                    bad.append(f"{module} imports {t}")
                if mine == 0 and t.split(".")[0] in ("sqlalchemy", "fastapi", "typer"):
                    bad.append(f"{module} (pure core) imports {t}")
    assert bad == []
