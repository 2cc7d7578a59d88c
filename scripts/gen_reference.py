#!/usr/bin/env python3
"""Write the manual's reference pages (docs/reference/) from the code, never by hand.

* ``job-keys.md``: every job key from :data:`mpinet.jobs.spec.SCHEMA` (type, default,
  meaning) with its range from ``spec.RULES`` and its choices from the registries and
  constants the program checks them against (:data:`CHOICES`); a key without a meaning
  is refused;
* ``commands.md``: every command's options from the parser ``mpinet --help`` builds
  (:func:`mpinet.cli.build_parser`);
* ``trace-layout.md``: the trace's attributes, tables and columns from
  :mod:`mpinet.trace.columns` (what the writer stores as each dataset's description);
* ``exit-codes.md``: :data:`mpinet.errors.EXIT_CODES`.

Usage::

    python scripts/gen_reference.py            # rewrite docs/reference/
    python scripts/gen_reference.py --check    # exit 1 naming the stale pages
    python scripts/gen_reference.py --out DIR  # write elsewhere

tests/test_manual.py regenerates the pages and compares them with the committed ones.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "reference"
REFRESH = "python scripts/gen_reference.py"
WIDTH = 88  # the usage lines' columns, whatever the terminal
TOML_TYPE = {"str": "string", "int": "integer", "float": "float", "list": "array", "dict": "table"}


def _choices() -> dict[str, Callable[[], Iterable[str]]]:
    """Job key -> the values the program accepts, read where the program checks them."""
    from mpinet.engine import calendar, models
    from mpinet.routing import ROUTERS
    from mpinet.routing.shortest import TIES
    from mpinet.routing.vc_policies import VC_POLICIES
    from mpinet.workloads.registry import WORKLOADS

    return {
        "workload.kind": lambda: WORKLOADS,
        "router.name": lambda: ROUTERS,
        "router.tie": lambda: TIES,
        "model.kind": lambda: [k + ":K" if k == "k-port" else k for k in models.KINDS],
        "model.queues": lambda: calendar.QUEUES,
        "model.buffer_classes": lambda: models.BUFFER_CLASSES,
        "model.switching": lambda: models.SWITCHING,
        "model.vc_policy": lambda: VC_POLICIES,
    }


def choices() -> dict[str, list[str]]:
    """Job key -> its valid string values (``k-port:K`` stands for any ``k-port:N``)."""
    return {k: list(f()) for k, f in _choices().items()}


def accepts(key: str, value: Any, table: dict[str, list[str]]) -> bool:
    """Whether ``value`` is one of ``key``'s choices (keys without a list: any)."""
    if key not in table or not isinstance(value, str):
        return True
    return value in table[key] or ("k-port:K" in table[key] and value.startswith("k-port:"))


def cell(text: Any) -> str:
    """A Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(value: Any) -> str:
    from mpinet.jobs.spec import REQUIRED

    if value is REQUIRED:
        return "required"
    if value is None:
        return "-"
    if isinstance(value, str):
        return f'`"{value}"`'
    return f"`{value!r}`".replace("'", '"')


def _range(key: str, table: dict[str, list[str]]) -> str:
    from mpinet.jobs.spec import RULES

    if key in RULES:
        r = RULES[key]
        return f"{r.noun()} {r.text()}".strip()
    if key in table:
        return ", ".join(f"`{c}`" for c in table[key])
    return "-"


def job_keys() -> str:
    from mpinet.jobs.spec import SCHEMA

    table = choices()
    out = [
        "# Job keys",
        "",
        _generated("`mpinet.jobs.spec.SCHEMA` (meaning, type, default), `spec.RULES` (ranges) "
                   "and the registries of workloads, routers, port models and VC policies"),
        "",
        "A job is a TOML file, or the same keys given as `mpinet run` flags and "
        "`--set section.key=value`. A section may be given as its shorthand "
        '(`workload = "uniform"`, `router = "shortest"`, `model = "one-port"`). Unknown '
        "keys, values of the wrong type or out of range, and keys the run would ignore are "
        "refused before any work ([exit code 2](exit-codes.md)). A default `-` means the "
        "meaning says what applies.",
        "",
    ]  # fmt: skip
    sections = [("Top level", "", {k: v for k, v in SCHEMA.items() if not isinstance(v, dict)})]
    sections += [(f"[{k}]", k, v) for k, v in SCHEMA.items() if isinstance(v, dict)]
    for title, sec, keys in sections:
        out += [f"## {title}", "", "| key | type | default | valid values | meaning |",
                "|---|---|---|---|---|"]  # fmt: skip
        for k, (types, default, meaning) in keys.items():
            full = f"{sec}.{k}" if sec else k
            if not str(meaning).strip():
                raise SystemExit(f"gen_reference: job key {full} has no meaning in spec.SCHEMA")
            kind = " or ".join(TOML_TYPE.get(t.__name__, t.__name__) for t in types)
            out.append(f"| `{full}` | {kind} | {_default(default)} | "
                       f"{cell(_range(full, table))} | {cell(meaning)} |")  # fmt: skip
        out.append("")
    return "\n".join(out)


def _options(p: argparse.ArgumentParser) -> list[str]:
    fmt = p.formatter_class(prog=p.prog, width=WIDTH)
    rows = []
    for a in p._actions:
        if a.help == argparse.SUPPRESS:
            continue
        name = ", ".join(a.option_strings) or a.dest
        nargs = a.nargs if a.nargs is not None else 1
        value = "" if nargs == 0 else fmt._format_args(a, a.dest.upper())
        default = a.default
        shown = "" if default in (None, False, argparse.SUPPRESS) or nargs == 0 else default
        rows.append(f"| `{name}` | {cell(value and f'`{value}`')} | "
                    f"{cell(shown != '' and f'`{shown}`' or '')} | "
                    f"{cell(fmt._expand_help(a) if a.help else '')} |")  # fmt: skip
    return ["| option | value | default | meaning |", "|---|---|---|---|", *rows]


def _usage(p: argparse.ArgumentParser) -> list[str]:
    fmt = p.formatter_class(prog=p.prog, width=WIDTH)
    fmt.add_usage(p.usage, p._actions, p._mutually_exclusive_groups)
    return [
        '<!-- docs: static="a usage line, generated by scripts/gen_reference.py" -->',
        "```text",
        *fmt.format_help().strip().splitlines(),
        "```",
    ]


def commands() -> str:
    from mpinet.cli import build_parser

    top = build_parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    out = ["# Commands", "", _generated("the parsers of `mpinet --help` "
           "(`mpinet.cli.build_parser`)"), "", cell(top.description), "",
           *_usage(top), "", cell(top.epilog), "", *_options(top), ""]  # fmt: skip
    out += ["| command | what it does |", "|---|---|"]
    helps = {a.dest: a.help for a in sub._choices_actions}
    out += [f"| [`{n}`](#mpinet-{n}) | {cell(helps.get(n, ''))} |" for n in sub.choices]
    for name, p in sub.choices.items():
        out += ["", f"## mpinet {name}", "", cell(helps.get(name, "")) + ".", ""]
        out += [*_usage(p), "", *_text(p, p.description), *_options(p)]
        out += ["", *_text(p, p.epilog)] if p.epilog else []
    return "\n".join(out) + "\n"


def _text(p: argparse.ArgumentParser, text: str | None) -> list[str]:
    """A description as ``--help`` shows it: a block where its lines are laid out by hand."""
    if not text:
        return []
    if not issubclass(p.formatter_class, argparse.RawDescriptionHelpFormatter):
        return [cell(text), ""]
    return ['<!-- docs: static="the text of --help, generated by scripts/gen_reference.py" -->',
            "```text", *[ln.rstrip() for ln in text.strip().splitlines()], "```", ""]  # fmt: skip


def _rst(text: str) -> list[str]:
    """A docstring's reStructuredText, as the Markdown this manual writes."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"``\1``", text).replace("``", "`")
    out: list[str] = []
    for ln in text.strip().splitlines():
        if re.fullmatch(r"-{3,}", ln.strip()) and out:  # the title above is a section's
            out[-1] = f"### {out[-1]}"
        else:
            out.append(ln)
    return out


def trace_layout() -> str:
    import mpinet.trace as trace
    from mpinet.trace.columns import ATTRS, COLUMNS, FLIT_COLUMNS, GROUP_ATTRS, TABLES
    from mpinet.trace.writer import LAYOUT_VERSION

    doc = trace.__doc__ or ""
    layout = doc[doc.index("Layout ") :]
    out = [f"# Trace layout {LAYOUT_VERSION}", "",
           _generated("`mpinet/trace/columns.py` (what the writer stores as each dataset's "
                      "`units` and `description`) and the docstring of `mpinet.trace`"),
           "", "A trace is an HDF5 file: root attributes, one group per table, one dataset "
           "per column. `mpinet analyze` reads it ([how-to](../analysis.md)); so does "
           "`mpinet.trace.open(path)` in Python, or any HDF5 tool.", "",
           "## Root attributes", "", "| attribute | meaning |", "|---|---|"]  # fmt: skip
    out += [f"| `{k}` | {cell(v)} |" for k, v in ATTRS.items()]
    out += ["", "## Tables", "", "| group | rows |", "|---|---|"]
    out += [f"| [`/{t}`](#{t}) | {cell(d)} |" for t, d in TABLES.items()]
    for t, cols in COLUMNS.items():
        flit = FLIT_COLUMNS.get(t, {})
        out += ["", f"### /{t}", "", cell(TABLES.get(t, "")), ""]
        out += ["| column | units | meaning | in a flit trace (`load_unit = \"flits\"`) |",
                "|---|---|---|---|"]  # fmt: skip
        for c, (units, desc) in cols.items():
            f = flit.get(c)
            other = f"{f[0]}: {f[1]}" if f else ""
            out.append(f"| `{c}` | {cell(units)} | {cell(desc)} | {cell(other)} |")
    out += ["", "## Attributes of groups and columns", "", "| attribute | meaning |", "|---|---|"]
    out += [f"| `{k}` | {cell(v)} |" for k, v in GROUP_ATTRS.items()]
    out += ["", "## The layout, versions, storage and safety", "", *_rst(layout)[1:]]
    return "\n".join(out) + "\n"


def exit_codes() -> str:
    from mpinet.errors import EXIT_CODES

    out = ["# Exit codes", "", _generated("`mpinet.errors.EXIT_CODES`"), "",
           "Every command of `mpinet` ends with one of these codes, the same on every MPI rank. "
           "A refusal or a failure prints one line on stderr, `mpinet: error: ...`, from rank 0 "
           "only.", "", "| code | name | when |", "|---|---|---|"]  # fmt: skip
    out += [f"| {code} | {name} | {cell(when)} |" for code, name, when in EXIT_CODES]
    return "\n".join(out) + "\n"


def _generated(source: str) -> str:
    return f"<!-- generated from {source} by `{REFRESH}`: edit the code, not this page -->"


PAGES: dict[str, Callable[[], str]] = {
    "job-keys.md": job_keys,
    "commands.md": commands,
    "trace-layout.md": trace_layout,
    "exit-codes.md": exit_codes,
}


def render() -> dict[str, str]:
    """File name -> the page's text as the code says now."""
    os.environ.pop("COLUMNS", None)  # argparse's widths: WIDTH, never the terminal's
    return {name: fn() for name, fn in PAGES.items()}


def stale(out: Path = OUT) -> list[str]:
    """The pages of ``out`` that differ from what the code gives now (or are missing)."""
    pages = render()
    return [n for n, t in pages.items() if not (out / n).is_file() or (out / n).read_text() != t]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", type=Path, default=OUT, help="directory (default docs/reference)")
    ap.add_argument("--check", action="store_true", help="exit 1 naming the stale pages")
    args = ap.parse_args(argv)
    if args.check:
        bad = stale(args.out)
        for n in bad:
            print(f"{args.out / n} is stale; refresh with: {REFRESH}", file=sys.stderr)
        return 1 if bad else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in render().items():
        (args.out / name).write_text(text)
        print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
