"""The documentation holds together: the README is a short map, every page it and the pages
link exists, every anchor names a heading of its page (GitHub's rule for heading anchors), and
every page is on the map and in the site's navigation."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def pages() -> list[Path]:
    return [ROOT / "README.md"] + sorted(DOCS.glob("*.md"))


def anchors(page: Path) -> set[str]:
    """The heading anchors of ``page`` as GitHub makes them: lower case, punctuation other than
    hyphens and underscores dropped, spaces made hyphens (outside code blocks)."""
    found, in_code = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and re.match(r"#{1,6} ", line):
            found.add(re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-"))
    return found


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):   # http(s), mailto: not checked here
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{page.name}: {target} (no such file)")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{page.name}: {target} (no such heading)")
    return broken


def test_the_readme_is_a_short_map() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    assert "## Quick start" in readme
    mapped = {Path(t.partition("#")[0]).name for t in LINK.findall(readme) if t.startswith("docs/")}
    unmapped = {p.name for p in DOCS.glob("*.md")} - mapped - {"index.md"}
    assert unmapped == set(), f"pages the README's map does not name: {sorted(unmapped)}"


def test_every_link_and_anchor_resolves() -> None:
    broken = [b for page in pages() for b in broken_links(page)]
    assert broken == [], "\n".join(broken)


def test_the_link_check_sees_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("# Title\n\n[ok](#title) [gone](#nowhere) [file](missing.md)\n")
    assert broken_links(page) == ["p.md: #nowhere (no such heading)", "p.md: missing.md (no such file)"]


def test_every_page_is_in_the_site_navigation() -> None:
    nav = set(re.findall(r":\s*([\w\-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M))
    assert nav == {p.name for p in DOCS.glob("*.md")}
