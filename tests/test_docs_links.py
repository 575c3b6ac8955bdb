"""The README and docs/ link to each other by file and by heading: every relative link must name a file that
exists, and every `#anchor` a heading of that file (GitHub's anchors), or a reader lands nowhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE_SPAN = re.compile(r"(`+).+?\1", re.S)
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")


def _prose(text: str) -> str:
    """The page without code blocks and code spans, whose brackets are not links."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", path.read_text()).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[str]:
    return LINK.findall(_prose(path.read_text()))


def test_the_pages_are_there() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in PAGES}
    assert {"README.md", "docs/scoring.md", "docs/internals.md"} <= names


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no such heading in {dest.name}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_and_anchor_exists(page: Path) -> None:
    assert broken_links(page) == []


def test_the_check_finds_a_broken_link(tmp_path: Path) -> None:
    """A wrong file or heading is reported; code is not read for links; a repeated heading gets GitHub's suffix."""
    (tmp_path / "other.md").write_text("# Sizing\n\n## Sizing\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# How items are scored\n\n## Sampling (`contam index --sample k`)\n\n"
        "[a](#sampling-contam-index---sample-k) [b](other.md#sizing-1) [c](gone.md) [d](other.md#limits) "
        "[e](#how-items-are-scored) [f](https://example.org/x#y) `[g](code.md)`\n"
    )
    assert broken_links(page) == ["gone.md: no such file", "other.md#limits: no such heading in other.md"]
