"""The documentation stays whole: the site builds in strict mode, the README stays a five-minute
read, and every link it has still goes somewhere.

The site (mkdocs.yml, docs/) is built as `make docs-build` builds it, from the generator's own
venv (testworld/docsite.py): a broken link or anchor, a page missing from the nav or a nav
entry without its page is a warning, and strict mode makes it a failure. The README is also
the site's home, so the build checks its links too; the test below checks them as GitHub
follows them (paths in the repository, GitHub's anchors), which is how most people read it.
"""

from __future__ import annotations

import re
from pathlib import Path

from testworld import docsite

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
LINK = re.compile(r"(`+).+?\1|\]\(([^)\s]+)\)")


def _outside_fences(text: str) -> list[str]:
    lines, fenced = [], False
    for line in text.splitlines():
        if re.match(r"\s*(```|~~~)", line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def _anchors(markdown: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings: lower case, punctuation dropped, each
    space a hyphen, a repeated one numbered (-1, -2, ...)."""
    seen: dict[str, int] = {}
    for line in _outside_fences(markdown.read_text(encoding="utf-8")):
        if heading := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line):
            slug = re.sub(r"[^\w\- ]", "", heading[1].strip().lower()).replace(" ", "-")
            seen[slug] = seen.get(slug, -1) + 1
            if seen[slug]:
                slug = f"{slug}-{seen[slug]}"
            seen.setdefault(slug, 0)
    return set(seen)


def _links(markdown: Path) -> list[str]:
    return [m[2] for line in _outside_fences(markdown.read_text(encoding="utf-8"))
            for m in LINK.finditer(line) if m[2]]


def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    proc = docsite.build(tmp_path / "site")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for page in ("index.html", "getting-started/index.html", "reference/index.html",
                 "controller-internals/index.html", "benchmarks/index.html"):
        assert (tmp_path / "site" / page).is_file(), page


def test_the_readme_reads_in_five_minutes() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250, "README.md past 250 lines: move the detail into a page of docs/"
    for command in ("make demo", "make test"):
        assert command in text


def test_every_readme_link_goes_somewhere() -> None:
    broken = []
    for target in _links(README):
        if re.match(r"[a-z]+:", target):
            continue  # another site
        path, _, anchor = target.partition("#")
        file = (REPO / path) if path else README
        if not file.exists():
            broken.append(f"{target}: no {path}")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target}: no heading of {file.relative_to(REPO)} makes #{anchor}")
    assert not broken
