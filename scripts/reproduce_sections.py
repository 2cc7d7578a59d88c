"""The sections of ``scripts/reproduce.py``, in report order: one per paper table.

A :class:`Section` names a table builder of ``scripts/reproduce_tables.py``, the
rows of ``mpinet verify --json`` it shows (:func:`verify_rows`) and the job whose
trace is drawn as its figure; add a paper table to :data:`SECTIONS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from reproduce_tables import (  # scripts/ is on sys.path
    Ctx,
    borel_table,
    collective_jobs,
    emulation_table,
    fccn_tables,
    ms_routing,
    row,
    scc_broadcast,
    scc_routing,
)


@dataclass(frozen=True)
class Section:
    """One paper table: jobs measured beside the paper, catalogue rows, a figure.

    Attributes
    ----------
    key : str
        Name for ``--only``; also the figure directory.
    title : str
        The section heading.
    table : callable or None
        ``table(ctx) -> markdown lines`` built from job runs.
    verify : callable or None
        ``verify(row) -> bool`` selects rows of ``mpinet verify --json``.
    verify_only : str
        ``--only`` text of that catalogue run (faster than the whole catalogue).
    verify_full : bool
        Use the full catalogue in a full run (the quick one otherwise; the full
        total exchange catalogue alone takes over ten minutes).
    errata : str
        Errata entries linked by the verify rows that differ from the paper.
    figure : str or None
        Job (path under jobs/) whose trace ``mpinet analyze --plot`` draws.
    """

    key: str
    title: str
    table: Callable[[Ctx], list[str]] | None = None
    verify: Callable[[dict], bool] | None = None
    verify_only: str = ""
    verify_full: bool = False
    errata: str = ""
    figure: str | None = None


BASELINE_BROADCASTS = ("dimension-order", "ceil(5n/2)", "greedy one-port", "flooding", "tree")

SECTIONS = [
    Section(
        "paper000-scc-routing",
        "Paper 000 Tables 1-2: SCC average distance and routing algorithms",
        table=scc_routing,
        figure="paper000-scc-routing/uniform.toml",
    ),
    Section(
        "paper001-scc-broadcast",
        "Paper 001 section 5 and Table 1: SCC broadcasts (one-port, multiple-port, pipelined)",
        table=scc_broadcast,
        verify=lambda r: "sigma_c" in r["collective"],
        verify_only="sigma_c",
        verify_full=True,
        errata="E16",
        figure="paper001-scc-broadcast/pipelined-one-port.toml",
    ),
    Section(
        "paper001-baselines",
        "Paper 001 Table 2: broadcasting on the star, hypercube and CCC (and flooding / trees)",
        verify=lambda r: r["collective"].startswith(BASELINE_BROADCASTS),
        verify_only="broadcast",
        errata="E4",
        figure="baselines/hypercube-ecube-sdc.toml",
    ),
    Section(
        "paper002-fccn",
        "Paper 002 Tables I-II: FCCN S-Route and communication locality",
        table=fccn_tables,
        figure="paper002-fccn/locality.toml",
    ),
    Section(
        "paper003-borel",
        "Paper 003 Tables 3-4: Borel Cayley graphs",
        table=borel_table,
        figure="paper003-borel/uniform-bernoulli.toml",
    ),
    Section(
        "paper004-ms-routing",
        "Paper 004 sections 2-3: macro-star routing",
        table=ms_routing,
        figure="ms-uniform.toml",
    ),
    Section(
        "paper004-mnb",
        "Paper 004 section 4: multinode broadcast (sdc, one-port, all-port)",
        table=collective_jobs(
            "paper004-macrostar/mnb-sdc.toml",
            "paper004-macrostar/mnb-one-port.toml",
            "paper004-macrostar/mnb-all-port.toml",
            "baselines/star-mnb-sdc.toml",
        ),
        verify=lambda r: r["collective"].startswith("multinode"),
        verify_only="multinode",
        figure="paper004-macrostar/mnb-sdc.toml",
    ),
    Section(
        "paper004-te",
        "Paper 004 section 4: total exchange",
        table=collective_jobs("paper004-macrostar/te-all-port.toml"),
        verify=lambda r: r["collective"].startswith("total exchange"),
        verify_only="total exchange",
        figure="paper004-macrostar/te-all-port.toml",
    ),
    Section(
        "paper004-emulation",
        "Paper 004 sections 3-4: star algorithms emulated on MS(l,n) with real packets",
        table=emulation_table,
        verify=lambda r: r["collective"].startswith("emulate star"),
        verify_only="emulate star",
        verify_full=True,
        errata="E17",
        figure="paper004-macrostar/emulate-broadcast-sdc.toml",
    ),
]


def verify_rows(ctx: Ctx, s: Section) -> list[str]:
    """The ``mpinet verify`` rows that the section selects, with paper, bound and verdict."""
    lines = [
        "| network | collective | model | paper | mpinet | lower bound | verdict | "
        "paper's source |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in ctx.runner.verify(s.verify_only, s.verify_full):
        if not s.verify(r):
            continue
        v = r["verdict"]
        if v in ("better-than-paper", "paper-wrong", "FAIL"):
            v = ctx.differs(s.errata, v)
        paper_steps = "-" if r["paper_steps"] is None else r["paper_steps"]
        lines.append(
            row(r["topology"], r["collective"], r["model"], paper_steps, r["measured_steps"],
                r["lower_bound"], v, r["paper_source"])
        )  # fmt: skip
    return lines
