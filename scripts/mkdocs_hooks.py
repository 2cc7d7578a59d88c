"""MkDocs hook of the manual (mkdocs.yml): links from a page to files of the repository
outside docs/ (the README, job files, scripts).

MkDocs knows only docs/; such a link would be "not found" and fail ``--strict``. Here a
link whose target exists in the repository becomes a link to the repository
(``repo_url`` in mkdocs.yml), or, without one, the link's text followed by the path; a
target that does not exist is left alone, so that MkDocs reports it and the build fails.
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path
from typing import Any

LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(([^)\s#]+)(#[^)\s]*)?\)")


def outside(docs_dir: str, page_path: str, target: str) -> str | None:
    """The path, from the repository's root (docs/'s parent), of a relative link of the page
    ``page_path`` to a file outside docs/; None for a URL or a page of docs/."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
        return None  # a URL, or absolute
    docs = Path(docs_dir).resolve()
    path = Path(os.path.normpath(docs / posixpath.dirname(page_path) / target))
    if path == docs or docs in path.parents or docs.parent not in path.parents:
        return None
    return path.relative_to(docs.parent).as_posix()


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    repo = (config.get("repo_url") or "").rstrip("/")
    root = Path(config["docs_dir"]).resolve().parent

    def fix(m: re.Match) -> str:
        path = outside(config["docs_dir"], page.file.src_uri, m.group(2))
        if path is None or not (root / path).exists():
            return m.group(0)
        if repo:
            return f"[{m.group(1)}]({repo}/blob/main/{path}{m.group(3) or ''})"
        return f"{m.group(1)} (`{path}`)"

    return LINK.sub(fix, markdown)
