"""MkDocs hooks (mkdocs.yml): the README is the home page, its Documentation list the nav.

The README's "Documentation" section is the one list of the docs, in reading order; the
site's navigation is built from it at every build, so the two cannot drift. A numbered
item that starts with a label (``4. SDKs: [a](...), [b](...)``) becomes a section; any
other item gives one entry per link. The README links to the docs with absolute
repository URLs (they must work on the package index); on the site they become relative.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REPOSITORY = "https://github.com/budgetware/budgetware"
DOCS_URL = f"{REPOSITORY}/blob/main/docs/"
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_ITEM = re.compile(r"^\d+\.\s+")


def readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def documentation_section(text: str) -> str:
    """The body of the README's ``## Documentation`` section."""
    match = re.search(r"^## Documentation\n(.*?)(?=^## |\Z)", text, re.DOTALL | re.MULTILINE)
    if match is None:
        raise ValueError("README.md has no '## Documentation' section")
    return match.group(1)


def _page(target: str) -> str | None:
    """``quickstart.md`` for a link to docs/quickstart.md (absolute or relative), else None."""
    for prefix in (DOCS_URL, "docs/"):
        if target.startswith(prefix):
            return target[len(prefix) :].split("#", 1)[0]
    return None


def _title(text: str) -> str:
    return text[:1].upper() + text[1:]


def navigation(text: str) -> list[dict[str, Any]]:
    """The nav entries of the README's Documentation list, in its order."""
    items: list[str] = []
    for line in documentation_section(text).splitlines():
        if _ITEM.match(line):
            items.append(_ITEM.sub("", line))
        elif items and line.startswith(" ") and line.strip():
            items[-1] += " " + line.strip()
    nav: list[dict[str, Any]] = []
    for item in items:
        links = [(_title(t), _page(u)) for t, u in _LINK.findall(item) if _page(u)]
        label = item.split("[", 1)[0].strip()
        if label.endswith(":") and len(links) > 1:
            nav.append({label[:-1]: [{title: page} for title, page in links]})
        else:
            nav.extend({title: page} for title, page in links)
    return nav


def pages(nav: list[dict[str, Any]]) -> list[str]:
    """Every page the navigation names, in order."""
    found: list[str] = []
    for entry in nav:
        for value in entry.values():
            found.extend(pages(value) if isinstance(value, list) else [value])
    return found


def home_page(text: str) -> str:
    """The README, with its links into docs/ made relative to the site."""
    return text.replace(DOCS_URL, "")


def on_config(config: Any) -> Any:
    config["nav"] = [{"Home": "index.md"}, *navigation(readme())]
    return config


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    files.append(File.generated(config, "index.md", content=home_page(readme())))
    return files
