"""Project-level checks: the compose file matches the CLI and settings, imports only flow
downwards through the layers, and no function is too long to read in one go."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import typer.main
import yaml

from contam.app.settings import Settings
from contam.indexer.cli import app

ROOT = Path(__file__).resolve().parents[1]


def _cli_commands() -> set[str]:
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


LAYERS = {"core": 0, "readers": 1, "store": 1, "services": 2, "api": 3, "web": 3, "cli": 3, "indexer": 3, "contam": 3}
TRANSPORTS = {"api", "web", "cli", "indexer", "contam"}  # they reach the store only through services


def _area(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] in ("indexer", "contam"):  # the batch job; the Python API
        return parts[0]
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
    for path in [p for top in ("app", "indexer", "contam") for p in (ROOT / top).rglob("*.py")]:
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


MAX_FUNCTION_LINES = 60


def test_no_function_is_longer_than_60_lines() -> None:
    """A function, decorators and docstring included, reads in one screen."""
    long = []
    for path in sorted([*(ROOT / "app").rglob("*.py"), *(ROOT / "indexer").rglob("*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                lines = (node.end_lineno or node.lineno) - first + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{rel}:{node.lineno} {node.name} has {lines} lines")
    assert long == []
