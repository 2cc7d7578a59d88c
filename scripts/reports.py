"""The outputs of the report scripts, under mpinet's one output discipline (mpinet.outputs).

Every script that regenerates a document (``reproduce.py``, ``*_report.py``) calls
:func:`begin` before its work, with every file it will write: each is refused at once if
it cannot be written, or if it exists and is not this script's own report (the script's
name must appear in its first 64 KiB; a figure must be one mpinet drew). :func:`write`
and :func:`save_figure` then write a hidden temporary file and publish it complete.
SIGTERM and SIGHUP become ``SystemExit(128 + N)`` here, like Ctrl-C's
``KeyboardInterrupt``, so that temporary files and directories are removed on every way
a script can be stopped.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mpinet.errors import MpinetError  # noqa: E402
from mpinet.outputs import (  # noqa: E402
    FIGURE,
    Kind,
    check_target,
    figure_metadata,
    report_kind,
    reserve,
    write_file,
)


def _is_json(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as fh:
            return isinstance(json.load(fh), dict)
    except (OSError, ValueError):
        return False


#: a script's JSON results file (``docs/comparison.json``): a JSON object
JSON = Kind("report-json", "JSON results file", "results.json", _is_json)


def kind_of(path: str | Path, script: str) -> Kind:
    """The kind of one output of ``script``: figure, JSON results or Markdown report."""
    ext = os.path.splitext(str(path))[1]
    if ext in (".png", ".svg"):
        return FIGURE
    return JSON if ext == ".json" else report_kind(script)


def _stop(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def begin(script: str, *paths: str | Path) -> None:
    """Check every output of ``script`` before its work; stop cleanly on signals.

    Exits with code 2 and one line on stderr if an output cannot be written.
    """
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _stop)
    for p in paths:
        try:
            check_target(str(p), kind_of(p, script), force=True)
        except MpinetError as exc:
            sys.exit(f"{os.path.basename(script)}: error: {exc}")


def write(path: str | Path, text: str, script: str) -> str:
    """Write ``text`` to ``path`` complete or not at all (a hidden temporary, then publish)."""
    res = reserve(str(path), kind_of(path, script), None, force=True)
    try:
        return write_file(res, lambda fh: fh.write(text))
    except MpinetError as exc:
        sys.exit(f"{os.path.basename(script)}: error: {exc}")


def save_figure(fig: Any, path: str | Path, script: str, **kw: Any) -> str:
    """``fig.savefig`` into a temporary file, published under ``path`` (an mpinet figure)."""
    ext = os.path.splitext(str(path))[1].lstrip(".")
    res = reserve(str(path), FIGURE, None, force=True)

    def draw(fh: Any) -> None:
        fig.savefig(fh, format=ext, metadata=figure_metadata(ext), **kw)

    try:
        return write_file(res, draw, binary=True)
    except MpinetError as exc:
        sys.exit(f"{os.path.basename(script)}: error: {exc}")
