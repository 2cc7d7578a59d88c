"""The blocks of a Markdown page and how their lines are matched with a program's output.

Part of ``scripts/docs.py`` (its docstring describes the markers): :func:`parse` reads the
fenced blocks and their ``<!-- docs: ... -->`` markers, :func:`align` matches a block's
lines with the lines a command printed (masks, ``...`` gaps, excerpts).
"""

from __future__ import annotations

import difflib
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the pages whose blocks are checked
FILES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")),
         "jobs/README.md"]  # fmt: skip
#: marker keys that may be given more than once
REPEAT = ("run", "setup", "mask-re", "env")


@dataclass
class Block:
    file: str
    line: int  # 1-based line of the opening fence
    lang: str
    body: list[str]  # the lines between the fences
    opts: dict = field(default_factory=dict)  # the marker: key -> value, or list for repeatables
    codes: list[int] = field(default_factory=list)  # exit codes of the commands last run

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"

    def kind(self) -> str:
        o = self.opts
        for k in ("skip", "static", "ci", "output", "exec"):
            if k in o:
                return k
        if self.lang == "python":
            return "python"
        if self.lang == "toml":  # validated against the job schema (docs.check_toml)
            return "toml"
        if "run" in o or any(ln.startswith("$ ") for ln in self.body):
            return "console"
        return "unmarked"


def parse_marker(text: str) -> dict:
    opts: dict = {k: [] for k in REPEAT}
    for tok in shlex.split(text):
        key, eq, value = tok.partition("=")
        if key in REPEAT:
            opts[key].append(value)
        else:
            opts[key] = value if eq else True
    return opts


def parse(file: str, text: str | None = None) -> list[Block]:
    """The fenced blocks of one Markdown file, with their markers."""
    lines = (ROOT / file).read_text().splitlines() if text is None else text.splitlines()
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        opts: dict = {}
        k = i - 1  # the marker ends on the line before the fence
        if k >= 0 and lines[k].rstrip().endswith("-->"):
            s = k
            while s >= 0 and "<!--" not in lines[s]:
                s -= 1
            comment = " ".join(x.strip() for x in lines[s : k + 1])
            mm = re.match(r"<!--\s*docs:(.*)-->$", comment)
            if mm:
                opts = parse_marker(mm.group(1))
        out.append(Block(file, i + 1, m.group(1), lines[i + 1 : j], opts))
        i = j + 1
    return out


def all_blocks(selected: list[str] | None = None) -> list[Block]:
    """Every block of :data:`FILES`, or those of the files or ``file:line`` ids given."""
    blocks = [b for f in FILES for b in parse(f)]
    if selected:
        blocks = [b for b in blocks if any(b.id == s or b.file == s for s in selected)]
    return blocks


# -- comparing ---------------------------------------------------------------------------


def label(line: str) -> str:
    return re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]


def normal(line: str, b: Block) -> str:
    masks = [m.strip() for m in str(b.opts.get("mask", "")).split(",") if m.strip()]
    if label(line) in masks:
        return label(line) + " <masked>"
    for rx in b.opts.get("mask-re", []):
        line = re.sub(rx, "<masked>", line)
    return line.rstrip()


def is_gap(line: str) -> bool:
    return line.strip().startswith("...")


def _find(out: list[str], start: int, line: str, b: Block) -> int | None:
    """The first output line from ``start`` equal to ``line`` (masked), else of its label,
    else the most similar one (a changed path or wording: found, so ``--update`` can fix it).
    """
    for test in (lambda o: normal(o, b) == normal(line, b), lambda o: label(o) == label(line)):
        for k in range(start, len(out)):
            if test(out[k]):
                return k
    ratios = [difflib.SequenceMatcher(None, o, line).ratio() for o in out[start:]]
    best = max(range(len(ratios)), key=ratios.__getitem__, default=None)
    return None if best is None or ratios[best] < 0.6 else start + best


def align(doc: list[str], out: list[str], b: Block) -> tuple[list[str] | None, bool, list[str]]:
    """(the doc lines refreshed from ``out``, or None; whether they differ; lines not found).

    The doc's lines split at ``...`` lines (and, in excerpt mode, between every line)
    into segments, each a run of consecutive output lines found by its first and last
    line's text or label; the first and last segments are anchored at the output's ends
    unless a gap or ``excerpt`` frees them.
    """
    excerpt = bool(b.opts.get("excerpt"))
    segs: list[list[str] | str] = []
    for ln in doc:
        if is_gap(ln):
            segs.append(ln)
        elif excerpt or not segs or isinstance(segs[-1], str):
            segs.append([ln])
        else:
            segs[-1].append(ln)
    new: list[str] = []
    stale, missing, j = False, [], 0
    for n, seg in enumerate(segs):
        if isinstance(seg, str):
            new.append(seg)
            continue
        first = n == 0 and not excerpt
        last = n == len(segs) - 1 and not excerpt
        s = j if first else _find(out, j, seg[0], b)
        if s is None or s >= len(out):
            missing.append(seg[0])
            new.extend(seg)
            continue
        e = len(out) - 1 if last else s if len(seg) == 1 else _find(out, s, seg[-1], b)
        if e is None:
            missing.append(seg[-1])
            new.extend(seg)
            continue
        piece = out[s : e + 1]
        stale |= [normal(x, b) for x in piece] != [normal(x, b) for x in seg]
        new.extend(piece)
        j = e + 1
    if not any(isinstance(x, list) for x in segs):  # nothing shown: nothing printed, or a gap
        free = excerpt or bool(segs)
        return (doc if free else out), bool(out) and not free, []
    return (None if missing else new), stale or bool(missing), missing
