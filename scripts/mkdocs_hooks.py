"""MkDocs hook of the manual (mkdocs.yml): links from a page to files of the repository
outside docs/ (the README, job files, scripts).

MkDocs knows only docs/; such a link would be "not found" and fail ``--strict``. Here a
link whose target exists in the repository becomes a link to the repository
(``repo_url`` in mkdocs.yml), or, without one, the link's text followed by the path; a
target that does not exist is left alone, so that MkDocs reports it and the build fails.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(([^)\s#]+)(#[^)\s]*)?\)")


def outside(page_path: str, target: str) -> str | None:
    """The repository path a relative link of docs/``page_path`` names outside docs/."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
        return None  # a URL, or absolute
    path = posixpath.normpath(posixpath.join("docs", posixpath.dirname(page_path), target))
    if path == "docs" or path.startswith("docs/") or path.startswith(".."):
        return None
    return path


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    repo = (config.get("repo_url") or "").rstrip("/")

    def fix(m: re.Match) -> str:
        path = outside(page.file.src_uri, m.group(2))
        if path is None or not (ROOT / path).exists():
            return m.group(0)
        if repo:
            return f"[{m.group(1)}]({repo}/blob/main/{path}{m.group(3) or ''})"
        return f"{m.group(1)} (`{path}`)"

    return LINK.sub(fix, markdown)
