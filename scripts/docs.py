#!/usr/bin/env python3
"""Run the documentation's examples and compare what they show with what the program prints.

Every fenced block of README.md, docs/*.md and jobs/README.md in one of the languages
``console``, ``text``, ``python``, ``bash`` or none carries a marker, an HTML comment on
the line before its fence (renderers hide it), that says how the block is checked::

    <!-- docs: KEY=VALUE FLAG ... -->        shell-quoted, may span lines

* a ``console``/``text`` block whose lines start with ``$ `` is run command by command
  (one bash session, in order; ``$ echo $?`` works), each command's output compared with
  the lines below it; ``run=CMD`` (repeatable) gives the commands of a block that shows
  output only;
* ``exec``: a ``bash`` block is run line by line the same way; with ``installed`` the
  ``python3 -m venv ...`` and ``pip install ...`` steps are left out (``.ci/run`` installs
  exactly so); the blocks after it marked ``output="TEXT"`` are the output of its line
  containing TEXT;
* a ``python`` block is run (``python block.py``), must exit 0, and the block after it
  marked ``output`` is its stdout;
* ``ci``: the block is the README's test command, which must equal ``.ci/run``'s;
* a ``toml`` block is a job, or part of one (a ``[model]`` section alone), and is validated
  as a job file is (:func:`check_toml`: ``mpinet.jobs.spec``, and the choices of the string
  keys); no marker needed. ``keys=all``: the block names every key of the schema (a list of
  every key stays complete); ``defaults``: a key with a default shows that default, except
  those of ``examples=KEY,...``;
* ``skip="why"``: not run here (a cluster, apt, a benchmark); ``static="why"``: not a
  program's input or output (a diagram, a template, a usage line).

Options of a checked block: ``setup=CMD`` (repeatable; run first, must exit 0),
``mask=LABEL,...`` (lines whose label, the text before the first run of two spaces, is
one of these: their values vary by machine), ``mask-re=REGEX`` (repeatable), ``excerpt``
(the block's lines appear in order in the output, others left out; a ``...`` line marks
such a gap anywhere), ``stdout`` (stderr not shown), ``wrap=N`` (lines wrapped at N
columns as the block shows them), ``env=NAME=VALUE``, ``timeout=S``, ``slow`` (the test
is marked slow), ``signal=INT when=GLOB`` (the block's one command gets SIGINT, as from a
terminal's Ctrl-C, once a non-empty file matching GLOB appears in its directory).

Every block runs in a fresh directory holding a copy of ``jobs/`` and ``.venv`` (the
running virtualenv), with that virtualenv first on ``PATH``; paths of that directory
print as ``/home/you/mpinet``; lines of numba's first compilation and of mpiexec's own
notices are dropped.

Usage::

    python scripts/docs.py --check [FILE[:LINE] ...]    # exit 1, a diff per stale block
    python scripts/docs.py --update [FILE[:LINE] ...]   # rewrite the stale blocks in place
    python scripts/docs.py --update --all               # every block, masked values as now
    python scripts/docs.py --list                       # every block and how it is checked
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docs_blocks import ROOT, Block, align, all_blocks, normal, parse  # noqa: E402,F401
from docs_toml import check_toml  # noqa: E402,F401

CHECKED_LANGS = ("console", "text", "python", "bash", "sh", "")
SHOWN_PATH = "/home/you/mpinet"
#: lines that depend on the machine's state, never shown in a block
DROP = re.compile(r"^(\[mpinet\] first run: compiling|\[mpiexec@)")
END = "@@docs-end-of-command@@"
HINT = "refresh with: python scripts/docs.py --update (or fix the program)"


# -- running ---------------------------------------------------------------------------


def workdir() -> Path:
    wd = Path(tempfile.mkdtemp(prefix="mpinet-docs-"))
    shutil.copytree(ROOT / "jobs", wd / "jobs")
    (wd / ".venv").symlink_to(sys.prefix)
    return wd


def environment(b: Block) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MPINET_", "PYTEST_"))}
    env["PATH"] = f"{Path(sys.prefix) / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    for item in b.opts.get("env", []):
        k, _, v = item.partition("=")
        env[k] = v
    return env


def clean(text: str, wd: Path) -> str:
    for p in sorted({str(wd), str(wd.resolve()), str(ROOT)}, key=len, reverse=True):
        text = text.replace(p, SHOWN_PATH)
    return text


def shown(text: str, b: Block) -> list[str]:
    lines = [ln.rstrip() for ln in text.splitlines() if not DROP.match(ln)]
    width = int(b.opts.get("wrap", 0))
    if width:
        lines = [w for ln in lines for w in (textwrap.wrap(ln, width, break_long_words=False,
                 break_on_hyphens=False) if len(ln) > width else [ln])]  # fmt: skip
    return lines


def run_commands(cmds: list[str], b: Block, wd: Path) -> list[list[str]]:
    """Each command's output, from one bash session (so ``echo $?`` sees the last code).

    ``b.codes`` gets each command's exit code (``exec`` blocks must exit 0).
    """
    err = "2>/dev/null" if b.opts.get("stdout") else "2>&1"
    script = ["__rc=0"]
    for c in cmds:
        script.append(f"(exit $__rc); {{ {c}\n}} {err}; __rc=$?; printf '\\n{END} %d\\n' $__rc")
    if b.opts.get("signal"):  # one command, interrupted as a terminal's Ctrl-C would
        script = [f"exec {err}", f"exec {cmds[0]}"]  # the command may end in a # comment
    proc = subprocess.Popen(["bash", "-c", "\n".join(script)], cwd=wd, env=environment(b),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)  # fmt: skip
    limit = float(b.opts.get("timeout", 600))
    try:
        if b.opts.get("signal"):
            interrupt(proc, b, wd, time.monotonic() + limit)
        out, _ = proc.communicate(timeout=limit)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    pieces = re.split(f"\n{END} (\\d+)\n", clean(out, wd))
    b.codes = [int(c) for c in pieces[1::2]]
    return [shown(p, b) for p in pieces[0::2][: len(cmds)]]


def interrupt(proc: subprocess.Popen, b: Block, wd: Path, deadline: float) -> None:
    """``signal=NAME`` once a non-empty file matching ``when=GLOB`` is in the directory."""
    while time.monotonic() < deadline and proc.poll() is None:
        if any(f.stat().st_size for f in wd.glob(str(b.opts["when"])) if f.is_file()):
            os.killpg(proc.pid, getattr(signal, "SIG" + str(b.opts["signal"])))
            return
        time.sleep(0.05)
    raise RuntimeError(f"{b.id}: no file {b.opts['when']} appeared; the signal was not sent")


def setup(b: Block, wd: Path) -> None:
    for c in b.opts.get("setup", []):
        p = subprocess.run(["bash", "-c", c], cwd=wd, env=environment(b), capture_output=True,
                           text=True, timeout=float(b.opts.get("timeout", 600)))  # fmt: skip
        if p.returncode:
            raise RuntimeError(f"{b.id}: setup {c!r} exited {p.returncode}:\n{p.stdout}{p.stderr}")


def console_parts(body: list[str]) -> list[tuple[str, list[str], list[str]]]:
    """(command, its ``$`` lines, the lines shown after it) of each ``$ command``."""
    parts: list[tuple[str, list[str], list[str]]] = []
    i = 0
    while i < len(body):
        if body[i].startswith("$ "):
            head, cmd = [body[i]], body[i][2:]
            while cmd.endswith("\\") and i + 1 < len(body):
                i += 1
                head.append(body[i])
                cmd = cmd[:-1] + " " + body[i].strip()
            parts.append((cmd, head, []))
        elif parts:
            parts[-1][2].append(body[i])
        i += 1
    return parts


def exec_lines(b: Block) -> list[str]:
    """The commands of an ``exec`` bash block; with ``installed``, no venv or pip steps."""
    cmds, cur = [], ""
    for ln in b.body:
        cur = cur[:-1] + " " + ln.strip() if cur.endswith("\\") else ln
        if cur.endswith("\\") or not cur.strip() or cur.lstrip().startswith("#"):
            continue
        if b.opts.get("installed"):
            steps = [s for s in cur.split(" && ")
                     if not re.match(r"\s*(python3 -m venv|(\S*/)?pip install)", s)]  # fmt: skip
            cur = " && ".join(steps)
        if cur.strip():
            cmds.append(cur)
        cur = ""
    return cmds


@dataclass
class Outcome:
    block: Block
    seconds: float = 0.0
    diffs: list[str] = field(default_factory=list)  # one per stale block
    errors: list[str] = field(default_factory=list)  # what failed to run or is inconsistent
    updates: dict = field(default_factory=dict)  # Block -> its new body (lines)
    manual: list[str] = field(default_factory=list)  # what --update cannot refresh


def _compare(target: Block, doc: list[str], out: list[str], res: Outcome, what: str) -> list:
    new, stale, missing = align(doc, out, target)
    if stale:
        head = (f"{target.id} (documented)", f"{what} (printed now)")
        diff = "\n".join(difflib.unified_diff(doc, new or out, *head, lineterm="", n=2))
        if missing:
            diff += "\nnot found in the output: " + "; ".join(repr(m) for m in missing)
            res.manual.append(f"{target.id}: {len(missing)} line(s) not found; edit by hand")
        res.diffs.append(diff)
    return new if new is not None else doc


def check_block(b: Block, followers: list[Block], every: bool = False) -> Outcome:
    """Run one block (and compare the output blocks that follow it).

    ``every``: offer every block's refreshed text, masked values as printed now, not
    only the stale ones'.
    """
    res = Outcome(b)
    t0 = time.perf_counter()
    wd = workdir()
    try:
        kind = b.kind()
        setup(b, wd)
        if kind == "ci":
            ci = [ln for ln in (ROOT / ".ci/run").read_text().splitlines()
                  if ln.strip() and not ln.startswith(("#", "set ", "cd ", "rm "))]  # fmt: skip
            if [ln.strip() for ln in b.body if ln.strip()] != ci:
                res.errors.append(f"{b.id}: the README's test command is not .ci/run's {ci}")
        elif kind == "console":
            parts = console_parts(b.body)
            if parts:
                outs = run_commands([c for c, _, _ in parts], b, wd)
            else:  # run= commands: their outputs one after another
                parts = [("; ".join(b.opts["run"]), [], b.body)]
                outs = [sum(run_commands(b.opts["run"], b, wd), [])]
            body: list[str] = []
            for (cmd, head, doc), out in zip(parts, outs, strict=True):
                body += head + _compare(b, doc, out, res, cmd)
            if res.diffs or every:
                res.updates[b.id] = (b, body)
        elif kind in ("exec", "python"):
            if kind == "exec":
                cmds = exec_lines(b)
                outs = dict(zip(cmds, run_commands(cmds, b, wd), strict=True))
                res.errors += [f"{b.id}: {c!r} exited {rc}\n" + "\n".join(outs[c][-20:])
                               for c, rc in zip(cmds, b.codes, strict=True) if rc]  # fmt: skip
            else:
                (wd / "doc_block.py").write_text("\n".join(b.body) + "\n")
                p = subprocess.run([sys.executable, "doc_block.py"], cwd=wd, env=environment(b),
                                   capture_output=True, text=True,
                                   timeout=float(b.opts.get("timeout", 600)))  # fmt: skip
                if p.returncode:
                    res.errors.append(f"{b.id}: the Python block exited {p.returncode}:\n"
                                     + clean(p.stderr, wd))  # fmt: skip
                outs = {"": shown(clean(p.stdout, wd), b)}
            for f in followers:
                key = f.opts["output"]
                key = "" if key is True else key
                match = [c for c in outs if key in c]
                if len(match) != 1:
                    res.errors.append(f"{f.id}: output={key!r} names {len(match)} commands of "
                                     f"{b.id} (need exactly one)")  # fmt: skip
                    continue
                before = len(res.diffs)
                body = _compare(f, f.body, outs[match[0]], res, match[0] or b.id)
                if len(res.diffs) > before or every:
                    res.updates[f.id] = (f, body)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        res.errors.append(f"{b.id}: {exc}")
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    res.seconds = time.perf_counter() - t0
    return res


def executable(blocks: list[Block]) -> list[tuple[Block, list[Block]]]:
    """The blocks to run, each with the ``output`` blocks that follow it."""
    out: list[tuple[Block, list[Block]]] = []
    for b in blocks:
        k = b.kind()
        if k == "output":  # of the nearest exec or python block above, in the same file
            src = [x for x in out if x[0].file == b.file and x[0].kind() in ("exec", "python")]
            if src:
                src[-1][1].append(b)
        elif k in ("console", "exec", "python", "ci"):
            out.append((b, []))
    return out


def unmarked(blocks: list[Block]) -> list[str]:
    """Blocks of a checked language that say nothing about how they are checked."""
    bad = [b.id for b in blocks if b.lang in CHECKED_LANGS and b.kind() == "unmarked"]
    bad += [b.id for b in blocks if b.kind() == "python" and b.lang != "python"]
    return bad


def write_updates(updates: dict) -> list[str]:
    """Replace the bodies of the given blocks in their files (bottom up: lines stay valid).

    A block whose lines moved or changed while the examples ran (another edit) is left
    alone and reported: run ``--update`` again.
    """
    done = []
    by_file: dict[str, list] = {}
    for b, body in updates.values():
        by_file.setdefault(b.file, []).append((b, body))
    for file, items in by_file.items():
        lines = (ROOT / file).read_text().splitlines()
        for b, body in sorted(items, key=lambda x: -x[0].line):
            if (
                lines[b.line - 1].startswith("```")
                and lines[b.line : b.line + len(b.body)] == b.body
            ):
                lines[b.line : b.line + len(b.body)] = body
                done.append(b.id)
            else:
                print(f"{b.id}: the file changed while the examples ran; run --update again")
        (ROOT / file).write_text("\n".join(lines) + "\n")
    return done


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--check", action="store_true", help="exit 1 with a diff per stale block")
    g.add_argument("--update", action="store_true", help="rewrite the stale blocks in place")
    g.add_argument("--list", action="store_true", help="every block and how it is checked")
    ap.add_argument("--all", action="store_true", help="--update: every block, not only stale")
    ap.add_argument("--no-slow", action="store_true", help="leave out the blocks marked slow")
    ap.add_argument("only", nargs="*", metavar="FILE[:LINE]", help="these files or blocks only")
    args = ap.parse_args()
    blocks = all_blocks(args.only)
    if args.list:
        for b in blocks:
            why = b.opts.get("skip") or b.opts.get("static") or ""
            kind = b.kind() if b.lang in (*CHECKED_LANGS, "toml") or b.opts else "-"  # markdown
            print(f"{b.id:28} {b.lang or '-':8} {kind:8} {why}")
        return 0
    problems = [
        f"{i}: no <!-- docs: ... --> marker (see scripts/docs.py)" for i in unmarked(blocks)
    ]
    problems += [e for b in blocks if b.kind() == "toml" for e in check_toml(b)]
    updates: dict = {}
    total = time.perf_counter()
    pairs = executable(all_blocks())  # an exec or python block with its output blocks
    if args.only:
        ids = {b.id for b in blocks}
        pairs = [(b, fs) for b, fs in pairs if b.id in ids or ids & {f.id for f in fs}]
    for b, followers in pairs:
        if args.no_slow and b.opts.get("slow"):
            continue
        res = check_block(b, followers, every=args.all)
        status = "ERROR" if res.errors else "stale" if res.diffs else "ok"
        print(f"{status:5} {res.seconds:6.1f} s  {b.id}", flush=True)
        problems += res.errors + (res.diffs if args.check else res.manual)
        updates.update(res.updates)
    if args.update and updates:
        for i in write_updates(updates):
            print(f"updated {i}")
    for p in problems:
        print(f"\n{p}", file=sys.stderr)
    print(f"\n{time.perf_counter() - total:.0f} s; {len(problems)} problem(s)"
          + (f"; {HINT}" if problems and args.check else ""))  # fmt: skip
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
