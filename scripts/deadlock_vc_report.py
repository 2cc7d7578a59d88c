"""The virtual-channel table of docs/deadlock-analysis.md (used by scripts/deadlock_report.py).

For every network of sizes 4..8 and every router of its family, under each VC policy
(:mod:`mpinet.routing.vc_policies`), :func:`mpinet.deadlock.vc.analyze_vc`
builds the (link, VC) dependency graph with the VCs the policy needs and says whether
it is acyclic: the cell is that number (the smallest V for a deadlock-free wormhole
run), or "cycle" when no V makes it acyclic. An analysis whose plan exceeds the
table's budget, or that the analysis refuses, is skipped and the reason listed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mpinet.deadlock.vc import analyze_vc, vc_setup
from mpinet.errors import MpinetError
from mpinet.jobs import plans
from mpinet.routing import make_router
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec

#: the table's networks, the first of each family in the quick set
SPECS = [
    ("star:4", "star:5", "star:6", "star:7", "star:8"),
    ("scc:4", "scc:5", "scc:6", "scc:7", "scc:8"),
    ("ms:2,2", "ms:2,3", "ms:3,2"),
    ("fccn:2", "fccn:3", "fccn:4"),
    ("borel:7,2,0,1", "borel:13,2,1,3", "borel:47,2,1,7"),
    ("hypercube:4", "hypercube:5", "hypercube:6", "hypercube:7", "hypercube:8"),
    ("ccc:4", "ccc:5", "ccc:6", "ccc:7", "ccc:8"),
]
#: every router of each family (the issue's list), and the CCC sweep
ROUTERS = {
    "star": ["shortest", "star-greedy"],
    "scc": ["shortest", "scc-random", "scc-greedy", "scc-nobacktrack", "scc-optimal"],
    "ms": ["shortest", "ms-balls-to-boxes", "ms-merged", "ms-two-phase", "ms-star-emulation"],
    "fccn": ["shortest", "fccn-sroute", "fccn-shortest"],
    "borel": ["shortest", "borel-cr", "borel-two-phase", "borel-table"],
    "hypercube": ["shortest", "hypercube-ecube"],
    "ccc": ["shortest", "ccc", "ccc mode=sweep"],
}
POLICIES = ("any", "hops", "negative-hop", "dateline")
#: analyses whose plan estimates more dependencies than this are skipped
BUDGET = 1 << 24
#: and networks with more nodes (every route, N^2 of them, is followed per policy: scc:7's
#: 914 M routes would take hours; `mpinet deadlock` runs one analysis at a time)
MAX_NODES = 5040


def _published(topo: Any, name: str) -> str:
    """The published bounds beside a row (docs/deadlock-analysis.md, "Published bounds")."""
    if topo.family == "hypercube" and name in ("hypercube-ecube", "shortest"):
        return "1: e-cube acyclic (Dally & Seitz 1987)"
    if topo.family == "ccc":
        return "2 with their own CCC routing and a dateline (Dally & Seitz 1987)"
    if topo.family == "star":
        d = 3 * (topo.k - 1) // 2
        return f"negative-hop ceil(D/2)+1 = {-(-d // 2) + 1}; hop count D+1 = {d + 1} (D = {d})"
    return ""


def _cell(rep: dict, policy: str) -> str:
    if policy == "dateline" and rep["spec"].split(":")[0] not in ("ccc", "scc"):
        return ""
    if rep["smallest_vcs"] is None:
        return f"cycle ({rep['cycle_length']})"
    extra = f" ({rep['colours']} col.)" if policy == "negative-hop" else ""
    return f"{rep['smallest_vcs']}{extra}"


def _one(topo: Any, router: Any, policy: str) -> dict:
    """The analysis report, or ``{"skipped": reason}``."""
    pol = make_vc_policy(policy, topo, 1)
    if topo.num_nodes > MAX_NODES:
        return {"skipped": f"{topo.num_nodes:,} nodes, over the table's {MAX_NODES:,}"}
    try:
        deps = plans.deadlock_dependencies(topo, vc_setup(pol))
        if deps > BUDGET:
            return {"skipped": f"about {deps:,} dependencies, over the table's budget of 2^24"}
        return analyze_vc(topo, router, policy).report
    except MpinetError as exc:
        return {"skipped": str(exc)}


def rows(specs: list[str], progress: Callable[[str], None]) -> tuple[list[str], list[str]]:
    """Markdown rows, one per (network, router), and the notes on skipped cells; each row
    is also given to ``progress`` as it is made."""
    out, notes = [], []
    for spec in specs:
        topo = from_spec(spec)
        if topo.num_nodes > MAX_NODES:
            notes.append(
                f"- `{spec}` ({topo.num_nodes:,} nodes): over the table's {MAX_NODES:,} nodes "
                f"(every route is followed; `mpinet deadlock {spec} --router R --switching "
                "wormhole --vc-policy P` runs one analysis)"
            )
            continue
        for label in ROUTERS[topo.family]:
            name, _, opt = label.partition(" ")
            router = make_router(name, topo, **dict([opt.split("=")] if opt else []))
            t0 = time.perf_counter()
            cells, base = [], None
            for policy in POLICIES:
                if policy == "dateline" and topo.family not in ("ccc", "scc"):
                    cells.append("")
                    continue
                rep = _one(topo, router, policy)
                if "skipped" in rep:
                    cells.append("skipped")
                    notes.append(f"- `{spec}` {label}, {policy}: {rep['skipped']}")
                    continue
                base = base or rep
                cells.append(_cell(rep, policy))
            routes = "—" if base is None else base["destinations"] + " (random)" * base["random"]
            longest = "—" if base is None else str(base["max_route_length"])
            secs = time.perf_counter() - t0
            out.append(
                f"| `{spec}` | {label} | {routes} | {longest} | " + " | ".join(cells)
                + f" | {_published(topo, name)} | {secs:.1f} |"
            )  # fmt: skip
            progress(out[-1])
    return out, notes


def table(quick: bool, progress: Callable[[str], None]) -> str:
    """The block between the markers: the table and the notes on skipped cells."""
    specs = [s[0] for s in SPECS] if quick else [x for s in SPECS for x in s]
    head = [
        "| network | router | routes | longest route | any | hops | negative-hop | dateline "
        "| published | seconds |",
        "|---|---|---|---:|---|---:|---|---|---|---:|",
    ]
    body, notes = rows(specs, progress)
    stamp = "quick set" if quick else "full set"
    lines = [f"Generated by `python scripts/deadlock_report.py` ({stamp}).", "", *head]
    lines += body
    if notes:
        lines += ["", "Skipped, and why:", "", *notes]
    return "\n".join(lines)
