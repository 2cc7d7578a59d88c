"""The tables of ``scripts/reproduce.py``: one table builder per paper table.

Each builder takes a :class:`Ctx` (the runner of ``mpinet`` commands, the
quick flag and the errata links) and returns markdown lines: the paper's value,
mpinet's measurement and a verdict, a difference linked to ``docs/errata.md``.
``SECTIONS`` of ``scripts/reproduce_sections.py`` lists them in report order; add
a paper table there.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paper_values as paper  # the papers' printed tables (scripts/ is on sys.path)

from mpinet import theory
from mpinet.workloads.scc_broadcast import lateral_time, multi_port_steps, one_port_steps

ROOT = Path(__file__).resolve().parent.parent
JOBS = ROOT / "jobs"


# ---------------------------------------------------------------- verdicts


def errata_anchors(path: Path = ROOT / "docs" / "errata.md") -> dict[str, str]:
    """Entry id (``E3``) -> GitHub anchor of its heading in docs/errata.md."""
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"#{2,4} (E\d+)\. ", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            out[m.group(1)] = slug
    return out


@dataclass
class Ctx:
    """What a section's table function needs: the runner and the errata links."""

    runner: Any  # reproduce.Runner
    quick: bool
    errata: str  # relative path from the report to docs/errata.md
    anchors: dict[str, str]

    def differs(self, entries: str, word: str = "differs") -> str:
        """``word`` linked to errata entries, e.g. ``differs ([E1](errata.md#e1-...))``."""
        links = [
            f"[{e}]({self.errata}#{self.anchors[e]})" if e in self.anchors else e
            for e in entries.split(",")
            if e
        ]
        return f"**{word}** ({', '.join(links)})" if links else f"**{word}**"

    def exact(self, measured: float, printed: float, nd: int, errata: str) -> tuple[str, str]:
        """Cell and verdict: equal when ``measured`` rounds to the paper's printed digits."""
        cell, want = f"{measured:.{nd}f}", f"{printed:.{nd}f}"
        if cell == want:
            return cell, "equal"
        if f"{math.floor(measured * 10**nd + 1e-9) / 10**nd:.{nd}f}" == want:
            return cell, self.differs(errata, "equal if truncated")
        return cell, self.differs(errata)

    def sampled(self, measured: float, printed: float, tol: float, errata: str) -> tuple[str, str]:
        """Cell and verdict for a sampled estimate: agrees within ``tol`` (3 standard errors)."""
        cell = f"{measured:.3f} ± {tol:.3f}"
        ok = abs(measured - printed) <= tol
        return cell, "agrees (sampled)" if ok else self.differs(errata)


def three_se(hops: dict) -> float:
    """Three standard errors of a mean of hop counts in [0, max] (Bhatia-Davis variance bound)."""
    return 3 * math.sqrt(hops["mean"] * (hops["max"] - hops["mean"]) / hops["count"])


ROW_HEAD = ["| network | quantity | paper | mpinet | verdict |", "|---|---|---|---|---|"]


def row(*cells: object) -> str:
    """One markdown table row."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


# ---------------------------------------------------------------- job-based tables


def scc_routing(ctx: Ctx) -> list[str]:
    """Paper 000 Tables 1-2 from the all-to-identity jobs, one per router, n = 3..8."""
    lines = list(ROW_HEAD)
    for n in range(3, 6 if ctx.quick else 9):
        t1, t2 = paper.P000_T1[n], paper.P000_T2[n]
        res = {
            r: ctx.runner.run(f"paper000-scc-routing/{r}.toml", topology=f"scc:{n}")
            for r in ("shortest", "optimal", "greedy", "random")
        }
        nodes = res["shortest"]["nodes"]

        def avg(r: str, res: dict = res, nodes: int = nodes) -> float:
            """Mean route length counting the identity's own (the paper's convention)."""
            return res[r]["stats"]["hops"]["mean"] * (nodes - 1) / nodes

        diam = res["shortest"]["stats"]["hops"]["max"]
        net = f"SCC_{n}"
        lines.append(
            row(net, "diameter (T1)", t1[0], diam, "equal" if diam == t1[0] else ctx.differs("E1"))
        )
        load = res["optimal"]["stats"]["link_load"]
        lat = load["lateral"]["mean"] * load["lateral"]["links"] / nodes
        loc = sum(v["mean"] * v["links"] for k, v in load.items() if k != "lateral") / nodes
        for qty, val, pv, err in (
            ("avg distance (T1)", avg("shortest"), t1[5], "E3"),
            ("lateral hops, optimal (T1)", lat, t1[1], "E3"),
            ("local hops, optimal (T1)", loc, t1[4], "E3"),
            ("optimal routing (T2)", avg("optimal"), t2[0], "E3"),
            ("greedy routing (T2)", avg("greedy"), t2[1], "E3"),
        ):
            lines.append(row(net, qty, f"{pv:.3f}", *ctx.exact(val, pv, 3, err)))
        hops = res["random"]["stats"]["hops"]
        tol = three_se(hops)
        lines.append(
            row(net, "random routing, simulation (T2)", f"{t2[3]:.3f}",
                *ctx.sampled(avg("random"), t2[3], tol, "E3"))
        )  # fmt: skip
    lines += [
        "",
        "Jobs `jobs/paper000-scc-routing/{shortest,optimal,greedy,random}.toml`: every node sends "
        "one packet to the identity with unbounded link capacity, so hops are route lengths; "
        "averages count the identity's own zero-length route (the paper's convention). The lateral "
        "and local hops are the optimal router's link loads per port class over N. `random` is one "
        "seed (one sample per node), so its verdict allows three standard errors (bounded by "
        "Bhatia-Davis, var <= mean (max - mean)); the exact expectation is in "
        "[routing.md](routing.md), which also gives the MI/MB split.",
    ]
    return lines


def _cmp(ctx: Ctx, measured: float, printed: float, nd: int = 0) -> tuple[str, str]:
    """Cell and verdict of a step count: equal, better (fewer) or worse, linked to E16."""
    cell = f"{measured:.{nd}f}"
    if cell == f"{printed:.{nd}f}":
        return cell, "equal"
    return cell, ctx.differs("E16", "better" if measured < printed else "worse")


def scc_broadcast(ctx: Ctx) -> list[str]:
    """Paper 001 Table 1 and Thm 4-6 (with section 5.1-5.2's pipelining), n = 4..7."""
    lines = list(ROW_HEAD)
    jobs = sorted((JOBS / "paper001-scc-broadcast").glob("*.toml"))
    for n in range(4, 6 if ctx.quick else 8):
        diam = json.loads(ctx.runner.call(["info", f"scc:{n}", "--json"]))["diameter"]
        for path in jobs:
            spec = tomllib.loads(path.read_text())["workload"]
            b = spec.get("messages", 1)
            one = spec["algorithm"] == "scc-one-port"
            formula = one_port_steps(n, b) if one else multi_port_steps(n, b)
            got = ctx.runner.run(f"paper001-scc-broadcast/{path.name}", topology=f"scc:{n}")
            st = got["stats"]
            steps = st["steps"]
            assert st["complete"], (path, n)
            kind = f"{'one' if one else 'multiple'}-port"
            if b == 1:
                pd, plat, ploc, ptot, ptime, prel = paper.P001_T1[(one, n)]
                lat, loc = st["class_steps"]["lateral"], st["class_steps"]["local"]
                rel = 100 * (steps - diam) / diam
                for qty, val, pv, nd in (
                    ("lateral link steps (T1)", lat, plat, 0),
                    ("local link steps (T1)", loc, ploc, 0),
                    ("running time in lateral link steps (T1, Thm 6)",
                     lateral_time(n, lat, loc, not one), ptime, 1),
                ):  # fmt: skip
                    lines.append(row(f"SCC_{n}", f"{kind}: {qty}", pv, *_cmp(ctx, val, pv, nd)))
                why = "E16" if diam == pd else "E1,E16"  # E1: the paper's diameter
                rel_v = "equal" if f"{rel:.1f}" == f"{prel:.1f}" else ctx.differs(why)
                lines.append(
                    row(f"SCC_{n}", f"{kind}: relative distance to the diameter, % (T1)",
                        f"{prel:.1f} (diameter {pd})", f"{rel:.1f} (diameter {diam})", rel_v)
                )  # fmt: skip
            v = (
                "equal"
                if steps == formula
                else ctx.differs("E16", "better" if steps < formula else "worse")
            )
            what = f"{kind}, B={b}: total steps (`{path.stem}`)"
            lines.append(row(f"SCC_{n}", what, formula, steps, v))
    lines += [
        "",
        "Paper: Table 1 as printed for B = 1, eq. 12 / eq. 13 and their pipelined forms "
        "(`mpinet.workloads.scc_broadcast`) for the totals. Measured: `mpinet run` on each job "
        "with `--set topology=scc:N`; lateral and local link steps are the steps in which a "
        "transmission crossed a link of that class; the running time in lateral-link steps is "
        "eq. 15 applied to them (local links floor(n/2) times faster for one-port, "
        "floor((n-1)/2) for multiple-port); the relative distance uses the exact diameter "
        "(`mpinet info`, BFS).",
    ]
    return lines


def fccn_tables(ctx: Ctx) -> list[str]:
    """Paper 002 Table I (share of shortest S-Routes) and Table II (locality), m = 2..5."""
    lines = list(ROW_HEAD)
    for m in range(2, 4 if ctx.quick else 6):
        nodes = 8**m
        packets = max(4, math.ceil((2**14 if ctx.quick else 2**17) / nodes))
        res = ctx.runner.run(
            "paper002-fccn/sroute.toml", topology=f"fccn:{m}", workload__packets=packets
        )
        frac = 100 * res["stats"]["stretch"]["fraction_shortest"]
        count = res["stats"]["hops"]["count"]
        tol = 300 * math.sqrt(max(frac / 100 * (1 - frac / 100), 1e-4) / count) + 0.005
        pv = paper.P002_T1[m][0]
        lines.append(
            row(
                f"{m}-FCCN",
                "% S-Routes shortest (T-I)",
                f"{pv:.2f}",
                *ctx.sampled(frac, pv, tol, "E10"),
            )
        )
        for j, p in enumerate((0.125, 0.5, 0.6, 0.7, 0.8, 0.9)):
            if ctx.quick and j % 2:
                continue
            res = ctx.runner.run(
                "paper002-fccn/locality.toml",
                topology=f"fccn:{m}",
                workload__locality=p,
                workload__packets=packets,
            )
            hops = res["stats"]["hops"]
            tol = three_se(hops) + 0.005
            pv = paper.P002_T2[m][j]
            err = "E11" if j == 0 else "E12"
            lines.append(
                row(f"{m}-FCCN", f"S-Route avg, p = {p:g} (T-II)", f"{pv:.2f}",
                    *ctx.sampled(hops["mean"], pv, tol, err))
            )  # fmt: skip
    lines += [
        "",
        "Jobs `jobs/paper002-fccn/sroute.toml` (uniform traffic; the share of routes whose "
        "stretch is 1) and `locality.toml` (p_k = p at every level), about 131,000 packets each. "
        "Both are samples: the tolerance is three standard errors. Exact values over all pairs: "
        "[routing.md](routing.md).",
    ]
    return lines


def borel_table(ctx: Ctx) -> list[str]:
    """Paper 003 Tables 3-4: diameter D and average distance of the eight generator sets."""
    lines = list(ROW_HEAD)
    sets = paper.P003_SETS if not ctx.quick else {(47, 2): paper.P003_SETS[(47, 2)][:2]}
    for (p, a), rows in sets.items():
        for t1, t2, d, avg, *_ in rows:
            spec = f"borel:{p},{a},{t1},{t2}"
            res = ctx.runner.run("paper003-borel/distance.toml", topology=spec)
            hops = res["stats"]["hops"]
            v = "equal" if hops["max"] == d else ctx.differs("E6")
            lines.append(row(f"`{spec}`", "diameter D", d, hops["max"], v))
            lines.append(
                row(
                    f"`{spec}`",
                    "avg distance",
                    f"{avg:.2f}",
                    *ctx.exact(hops["mean"], avg, 2, "E6"),
                )
            )
    lines += [
        "",
        "Job `jobs/paper003-borel/distance.toml` (every node to node 0 by shortest paths; a Cayley "
        "graph, so this is every node's distance distribution; the average excludes the source, "
        "errata E6). The routing columns (CR look-ahead d = 1..4, Two-Phase) are measured from "
        "node 0, a convention a job cannot express: see [routing.md](routing.md).",
    ]
    return lines


def ms_routing(ctx: Ctx) -> list[str]:
    """Paper 004 sections 2-3: MS routers' longest route against Thm 3.2's diameter bound."""
    lines = list(ROW_HEAD)
    nets = [(2, 2)] if ctx.quick else [(2, 2), (3, 2), (2, 3)]
    routers = sorted(p.stem for p in (JOBS / "paper004-macrostar").glob("route-*.toml"))
    for l, n in nets:
        bound = theory.ms_diameter_bound(l, n)
        for r in routers:
            res = ctx.runner.run(f"paper004-macrostar/{r}.toml", topology=f"ms:{l},{n}")
            hops = res["stats"]["hops"]
            v = "within bound" if hops["max"] <= bound else ctx.differs("E15", "exceeds")
            what = f"longest route, `{r[6:]}` (mean {hops['mean']:.3f})"
            lines.append(row(f"MS({l},{n})", what, f"<= {bound}", hops["max"], v))
    lines += [
        "",
        "Jobs `jobs/paper004-macrostar/route-*.toml` (every node to the identity, unbounded link "
        "capacity). Paper: Theorem 3.2's bound floor(2.5nl) + 2l - 2, proved for balls-to-boxes "
        "routes (errata E8, E15).",
    ]
    return lines


#: workload kind -> how the ``mpinet verify`` catalogue names that collective
PREFIX = {"mnb": "multinode", "te": "total exchange"}


def collective_jobs(*jobs: str) -> Callable[[Ctx], list[str]]:
    """A table of collective jobs' measured steps, each checked against ``mpinet verify``."""

    def table(ctx: Ctx) -> list[str]:
        lines = ["| job | network | model | steps | transmissions | same as verify |"]
        lines.append("|---|---|---|---|---|---|")
        for job in jobs:
            res = ctx.runner.run(job)
            st, model = res["stats"], res["job"]["model"]["kind"]
            kind = res["job"]["workload"]["kind"]
            prefix = PREFIX.get(kind, kind)
            rows = ctx.runner.verify(prefix)
            match = [
                r["measured_steps"]
                for r in rows
                if r["topology"] == res["spec"] and r["model"] == model
                and r["collective"].startswith(prefix)
            ]  # fmt: skip
            same = "-" if not match else ("yes" if st["steps"] in match else "**no**")
            lines.append(
                row(f"`{job}`", res["spec"], model, st["steps"], st["transmissions"], same)
            )
        return lines

    return table


EMULATION_JOBS = (
    "emulate-all-dims-sdc",
    "emulate-all-dims-all-port",
    "emulate-sweep-consecutive",
    "emulate-broadcast-sdc",
    "emulate-mnb-sdc",
)


def emulation_table(ctx: Ctx) -> list[str]:
    """Paper 004 Thm 3.1, 4.2, 4.4: measured MS steps of the emulate-star jobs beside the count."""
    lines = [
        "| network | job | star steps | theorem | MS steps | slowdown | packets | checks | "
        "verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    nets = [(2, 2)] if ctx.quick else [(2, 2), (3, 2), (2, 3)]
    for l, n in nets:
        for job in EMULATION_JOBS:
            if job.endswith("mnb-sdc") and n * l + 1 > 7:
                continue  # N(N-1) packets: MS(3,2) at most here (docs/emulation.md has more)
            res = ctx.runner.run(f"paper004-macrostar/{job}.toml", topology=f"ms:{l},{n}")
            e, st = res["emulation"], res["stats"]
            checks = "all passed" if st["ok"] else "**FAILED**"
            if e["ms_steps"] == e["paper_steps"]:
                v = "equal"
            elif e["ms_steps"] < e["paper_steps"]:
                v = ctx.differs("E17", "better")
            else:
                v = ctx.differs("E17", "worse")
            lines.append(
                row(f"MS({l},{n})", f"`{job}`", e["star_steps"], e["paper_steps"],
                    e["ms_steps"], e["slowdown"], f"{st['injected']:,}", checks, v)
            )  # fmt: skip
    lines += [
        "",
        'Jobs `jobs/paper004-macrostar/emulate-*.toml` (`workload.kind = "emulate-star"`), swept '
        "with `--set topology=ms:L,N`. Theorem: Thm 3.1 (sdc: 1 MS step per nucleus dimension, 3 "
        "per far one), Thm 4.2 as printed (consecutive), Thm 4.4 (all-port: max(2n, l+1) MS "
        "steps per star step). `checks`: every packet reached the star neighbour its sender "
        "addressed after exactly its word, at the MS step the schedule promises, and the model "
        "held at every MS step. Runs up to MS(4,2) and MS(2,4) (362,880 nodes): "
        "[emulation.md](emulation.md).",
    ]
    return lines
