#!/usr/bin/env python3
"""The report and benchmark scripts: one registry, one entry point, one output discipline.

Every script of ``scripts/`` that writes a report, a table or a benchmark is registered in
:data:`REPORTS` (``scripts/reports_registry.py``) with a one-line description and what it
regenerates; each still runs alone by path. This module gives them, in one place:

* :func:`arguments`: the common options (``--out``, ``--check``, ``--quiet``, ``--json``);
* :class:`Run`: progress on stderr, guarded outputs, and a docs block regenerated between
  its markers (:func:`replace_between`, the one marker splice of the scripts); under
  ``--check`` nothing is written: the output is made in memory and compared with the
  file, and a stale one fails with a diff (exit 1);
* :func:`begin`, :func:`write` and :func:`save_figure`, mpinet's output discipline
  (:mod:`mpinet.outputs`): every output is refused before the work if it cannot be
  written, or if it exists and is not this script's own report (the script's name must
  appear in its first 64 KiB; a figure must be one mpinet drew); each is written to a
  hidden temporary file and published complete. SIGTERM and SIGHUP become
  ``SystemExit(128 + N)``, like Ctrl-C's ``KeyboardInterrupt``, so that temporary files
  are removed on every way a script can be stopped.

Usage::

    python scripts/reports.py list              # every report and benchmark, a line each
    python scripts/reports.py run NAME [ARGS]   # = python scripts/SCRIPT.py [ARGS]
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(SCRIPTS))

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

    Exits with code 1 and one line on stderr if an output cannot be written.
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


# ---------------------------------------------------------------- docs blocks


def replace_between(text: str, begin: str, end: str, body: str, *, append: bool = False) -> str:
    """``text`` with the lines between the markers ``begin`` and ``end`` made ``body``.

    The markers are kept, each on its own line. A text without them raises ``KeyError``,
    or with ``append`` gets the block at its end.
    """
    block = f"{begin}\n{body}\n{end}"
    if begin in text and end in text.split(begin, 1)[1]:
        head, rest = text.split(begin, 1)
        return head + block + rest.split(end, 1)[1]
    if append:
        return text.rstrip() + "\n\n" + block + "\n"
    raise KeyError(f"the markers {begin} / {end}")


def between(text: str, begin: str, end: str) -> str | None:
    """The lines between the markers ``begin`` and ``end`` of ``text`` (what
    :func:`replace_between` put there), or None if ``text`` lacks them."""
    if begin not in text or end not in text.split(begin, 1)[1]:
        return None
    body = text.split(begin, 1)[1].split(end, 1)[0]
    return body.removeprefix("\n").removesuffix("\n")


# ---------------------------------------------------------------- one run of a script


def command(script: str, argv: Sequence[str]) -> str:
    """``python scripts/NAME ARGS`` as a report states how it was made (without
    ``--check`` and ``--quiet``, which do not change what it holds)."""
    args = [a for a in argv if a not in ("--check", "--quiet")]
    return " ".join(["python", f"scripts/{os.path.basename(script)}", *args])


def arguments(
    doc: str | None,
    *,
    out: str | Path | None = None,
    out_help: str = "the file written",
    check: bool = False,
    json_rows: bool = False,
) -> argparse.ArgumentParser:
    """The parser of a report script with the common options.

    Parameters
    ----------
    doc : str or None
        The script's docstring (the description of ``--help``).
    out : str or Path, optional
        The default of ``--out``; None: the output is printed unless ``--out`` is given.
    out_help : str
        What ``--out`` is.
    check : bool
        Add ``--check``: regenerate in memory and fail with a diff if the file is stale.
    json_rows : bool
        Add ``--json``: print the measured rows as JSON lines instead of the table.
    """
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawTextHelpFormatter)
    default = f" (default {os.path.relpath(out, ROOT)})" if out else ""
    ap.add_argument("--out", type=Path, default=Path(out) if out else None, metavar="FILE",
                    help=out_help + default)  # fmt: skip
    if check:
        ap.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 with a diff if the file is not what "
                        "this run makes")  # fmt: skip
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    if json_rows:
        ap.add_argument("--json", action="store_true", help="one JSON object a row, no table")
    return ap


class Run:
    """One run of a report script: its progress, its outputs, and ``--check``.

    Parameters
    ----------
    script : str
        The script's ``__file__`` (names it in messages and in its reports).
    args : argparse.Namespace
        From :func:`arguments` (``quiet``, ``check`` if present).
    outputs : paths
        Every file the run writes, checked now (before the work) unless checking.
    volatile : sequence of str
        Regular expressions of what changes from run to run (times, dates): masked on
        both sides when ``--check`` compares.
    """

    def __init__(self, script: str, args: argparse.Namespace, *outputs: str | Path,
                 volatile: Sequence[str] = ()) -> None:  # fmt: skip
        self.script, self.name = script, os.path.basename(script)
        self.quiet = bool(getattr(args, "quiet", False))
        self.check = bool(getattr(args, "check", False))
        self.volatile = [re.compile(v) for v in volatile]
        self.stale: list[str] = []
        self.lines: list[str] = []
        self.t0 = time.perf_counter()
        paths = [p for p in outputs if p is not None]
        if not self.check:
            begin(script, *paths)
            return
        for p in paths:  # nothing to compare with: refused before the work
            if not Path(p).is_file():
                self.fail(f"--check: {p} does not exist (nothing to compare with)", 2)

    def seconds(self) -> float:
        """Seconds since the run began."""
        return time.perf_counter() - self.t0

    def progress(self, message: str) -> None:
        """One line on stderr (not with ``--quiet``): where the work is, and since when."""
        if not self.quiet:
            print(f"{self.name} {self.seconds():6.0f} s  {message}", file=sys.stderr, flush=True)

    def fail(self, message: str, code: int = 1) -> None:
        """Stop with one line on stderr (exit ``code``: 2 for a refusal before the work)."""
        print(f"{self.name}: error: {message}", file=sys.stderr)
        sys.exit(code)

    def text(self, path: str | Path, *markers: tuple[str, str], default: str = "") -> str:
        """The text of ``path`` (``default`` if it does not exist), before the work: a text
        without one of the ``(begin, end)`` markers is refused (exit 2)."""
        text = Path(path).read_text(encoding="utf-8") if Path(path).exists() else default
        for b, e in markers:
            if b not in text or e not in text.split(b, 1)[1]:
                self.fail(f"{path} lacks the markers {b} / {e}", 2)
        return text

    def _mask(self, text: str) -> list[str]:
        for v in self.volatile:
            text = v.sub("…", text)
        return text.splitlines()

    def write(self, path: str | Path, text: str) -> None:
        """Write ``text`` to ``path`` (guarded), or under ``--check`` compare it with the file."""
        if not self.check:
            write(path, text, self.script)
            return
        old = Path(path).read_text(encoding="utf-8") if Path(path).exists() else ""
        a, b = self._mask(old), self._mask(text)
        if a != b:
            rel = os.path.relpath(path)
            diff = difflib.unified_diff(a, b, f"{rel} (now)", f"{rel} (this run)", lineterm="")
            self.stale.append("\n".join(diff))

    def block(self, text: str, begin: str, end: str, body: str, *, append: bool = False) -> str:
        """``text`` with the block between ``begin`` and ``end`` made ``body``
        (:func:`replace_between`; ``append``: added at the end of a text without it)."""
        try:
            return replace_between(text, begin, end, body, append=append)
        except KeyError as exc:
            self.fail(f"the text lacks {exc.args[0]}")
            raise

    def emit(self, line: str) -> None:
        """One line of the printed table or JSON rows (stdout, at once); kept for :meth:`save`."""
        print(line, flush=True)
        self.lines.append(line)

    def save(self, path: str | Path | None, argv: Sequence[str], rows: bool = False) -> None:
        """The lines emitted, also written to ``path`` (``--out``; None: nothing) under a
        line naming the command that made them (``rows``: JSON lines, that line one too)."""
        if path is None:
            return
        made, day = command(self.script, argv), time.strftime("%Y-%m-%d")
        head = ([json.dumps({"generated_by": made, "date": day})] if rows
                else [f"Generated by `{made}` on {day}.", ""])  # fmt: skip
        self.write(path, "\n".join([*head, *self.lines]) + "\n")

    def figure(self, fig: Any, path: str | Path, **kw: Any) -> None:
        """Save a figure (guarded); under ``--check`` figures are not compared, nor written."""
        if not self.check:
            save_figure(fig, path, self.script, **kw)

    def finish(self, code: int = 0) -> int:
        """``code``, or under ``--check`` 1 with the diffs on stderr if an output is stale."""
        if self.check and self.stale:
            hint = f"regenerate with: python scripts/{self.name} (without --check)"
            print(f"{self.name}: error: stale output; {hint}", file=sys.stderr)
            print("\n".join(self.stale), file=sys.stderr)
            return 1
        return code


# ---------------------------------------------------------------- the entry point


def _list() -> int:
    from reports_registry import REPORTS

    width = max(len(r.name) for r in REPORTS)
    for r in REPORTS:
        extra = f"{' ' + ' '.join(r.argv) if r.argv else ''}"
        print(f"{r.name:<{width}}  {r.script}{extra}: {r.description} -> {r.regenerates}")
    return 0


def _load(path: Path) -> Any:
    """The script at ``path`` as the module its stem names (scripts import each other)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return mod


def run_report(name: str, argv: list[str]) -> int:
    """Run the report ``name`` with ``argv``: its builder ``entry(argv)``, as
    ``python scripts/SCRIPT ARGV`` would."""
    from reports_registry import find

    r = find(name)
    path = SCRIPTS / r.script
    argv = [*r.argv, *argv]
    sys.argv = [str(path), *argv]  # what the script states as its command
    try:
        return getattr(_load(path), r.entry)(argv) or 0
    except SystemExit as exc:  # the script's own exit: its code, or its one line (code 1)
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="every report and benchmark, and what it regenerates")
    one = sub.add_parser("run", help="run one: reports.py run NAME [ARGS] (ARGS: its --help)")
    one.add_argument("name")
    one.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    if a.command == "list":
        return _list()
    try:
        return run_report(a.name, a.args)
    except KeyError as exc:
        print(f"reports.py: error: {exc.args[0]}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
