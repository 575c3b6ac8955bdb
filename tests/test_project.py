"""Project-level checks: the compose file matches the CLI and settings, imports only flow
downwards through the layers, and no function is too long to read in one go."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
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
    # the API comes back after a crash or a reboot, says when it is unwell, and can keep sign-ins
    # across restarts (an operator's trial: none of the three)
    api = services["api"]
    assert api["restart"] == "unless-stopped" and "/health" in " ".join(api["healthcheck"]["test"])
    assert api["environment"]["CONTAM_SESSION_SECRET"] == "${CONTAM_SESSION_SECRET:-}"
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


def test_the_image_keeps_its_data_and_its_build_context_is_small() -> None:
    """The image's SQLite file was under /root with no volume (gone with the container); without
    a .dockerignore, `docker build .` sent the venv (a GB) and .git; compose's required API key
    stopped the indexer's command in a shell without it: it goes in .env (a new user's trial)."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "ENV CONTAM_DATABASE_URL=sqlite:////data/contam.db" in dockerfile and "VOLUME /data" in dockerfile
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", ".env", "**/*.so"} <= set(ignored)
    assert ".env" in (ROOT / ".gitignore").read_text().split()
    header = (ROOT / "docker-compose.yml").read_text().split("services:")[0]
    assert "> .env" in header and "--profile index run" in header


LAYERS = {"core": 0, "readers": 1, "store": 1, "services": 2, "api": 3, "web": 3, "cli": 3, "indexer": 3, "contam": 3}
TRANSPORTS = {"api", "web", "cli", "indexer", "contam"}  # they reach the store only through services


def _short(module: str) -> str:
    """`contam.app.core.x` -> `app.core.x`: the package's parts, named as the folders at the top."""
    parts = module.split(".")
    return ".".join(parts[1:]) if parts[0] == "contam" and parts[1:2] in (["app"], ["indexer"]) else module


def _area(module: str) -> str | None:
    parts = _short(module).split(".")
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
            if module.startswith("app.") and _short(t).split(".")[0] == "indexer":
                bad.append(f"{module} imports {t}: the indexer imports app, so app must not import it")
            if mine == "core" and t.split(".")[0] in ("sqlalchemy", "fastapi", "typer"):
                bad.append(f"{module} (pure core) imports {t}")
    assert bad == []


def test_a_ray_worker_imports_only_what_indexing_needs() -> None:
    """A Ray worker imports contam.indexer.cluster at the start of every run, on every worker:
    the library facade (every service: scoring, reports, the web), Alembic and pyarrow (read only
    for Parquet and Arrow corpora) cost it about 0.4 s each time, a tenth of a 56 MB run; the
    settings (pydantic) and rich's progress bar, which only the driver uses, 0.17 s more (0.85
    against 0.68 s: bench/MEASUREMENTS.md, session 34)."""
    code = (
        "import sys, contam.indexer.cluster; "
        "print(' '.join(m for m in ('contam.facade', 'contam.app.services.checking', 'alembic', 'pyarrow', "
        "'rapidfuzz', 'fastapi', 'pydantic', 'pydantic_settings', 'contam.app.settings', 'rich') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == ""
    import contam  # the facade's names are there on first use

    assert contam.Index.__module__ == "contam.facade" and callable(contam.as_item)


TOP_FOLDERS = ("app", "indexer", "migrations")  # installed as contam.app, contam.indexer, contam.migrations


def test_code_imports_the_folders_through_the_one_package_name() -> None:
    """`import app` would work from a checkout and nowhere else: the installed package has only `contam`."""
    tops = [ROOT / t for t in (*TOP_FOLDERS, "tests", "bench")]
    bad = [
        f"{path.relative_to(ROOT)} imports {t}"
        for path in [*(ROOT / "contam").glob("*.py"), *(p for top in tops for p in top.rglob("*.py"))]
        for t in _imports(path)
        if t.split(".")[0] in TOP_FOLDERS
    ]
    assert bad == []


def test_the_wheel_installs_one_top_level_package(tmp_path: Path) -> None:
    """A user's own `app` or `migrations` module must not be shadowed by ours (or shadow ours)."""
    src = tmp_path / "src"  # a copy: pip builds in the source tree and would leave build/ in the checkout
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in (*TOP_FOLDERS, "contam"):
        shutil.copytree(ROOT / name, src / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(tmp_path), str(src)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    (wheel,) = tmp_path.glob("contam-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {"contam"}
    for needed in ("contam/app/api/main.py", "contam/migrations/env.py", "contam/app/web/templates/base.html"):
        assert needed in names
    assert any(n.startswith("contam/migrations/versions/") for n in names)


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
