"""A scratch copy of ``mpinet/`` with lines of its flit kernels replaced, for the probes that
clock or replay the engine's stages (``flit_stage_split.py``, ``sdc_floor.py``): they patch a
copy in their work directory, never the tree, and rebuild it only when the sources or the
patches change.

A patch is ``(file, anchor, replacement)`` or ``(file, anchor, replacement, times)``, ``file``
under ``mpinet/engine/flit``; the anchor must be found ``times`` times (default once), else
the probe stops naming it, as the kernels moved on and its patches must follow.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def patch(src: Path, dst: Path, patches: list, tool: str, extra: dict | None = None) -> None:
    """Copy ``src`` (an ``mpinet/``) to ``dst`` with ``patches`` applied; ``extra``: files
    (name under ``engine/flit`` -> text) written into the copy first."""
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
    flit = dst / "engine" / "flit"
    for name, text in (extra or {}).items():
        (flit / name).write_text(text)
    for name, old, new, *times in patches:
        f = flit / name
        text = f.read_text()
        if text.count(old) != (times[0] if times else 1):
            sys.exit(f"{tool}: {name}: the anchor {old[:60]!r} is found {text.count(old)} "
                     "times; update PATCHES")  # fmt: skip
        f.write_text(text.replace(old, new))


def build(workdir: Path, patches: list, tool: str, extra: dict | None = None) -> Path:
    """``workdir`` holding the patched copy (``workdir/mpinet``), made again only when a
    source file, a patch or an extra file changed."""
    src, dst, stamp = ROOT / "mpinet", workdir / "mpinet", workdir / "stamp.json"
    key = {str(p.relative_to(src)): p.stat().st_mtime_ns for p in src.rglob("*.py")}
    key["PATCHES"] = repr((patches, extra))
    if dst.exists() and stamp.exists() and json.loads(stamp.read_text()) == key:
        return workdir
    workdir.mkdir(parents=True, exist_ok=True)
    patch(src, dst, patches, tool, extra)
    stamp.write_text(json.dumps(key))
    return workdir
