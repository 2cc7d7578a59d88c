#!/usr/bin/env python3
"""Generate docs/routing.md: the papers' routing tables beside mpinet's routers.

Every mpinet number is computed here, now, by routing every pair the table
covers (``mpinet.engine.routes.route_report``) or by the family modules'
exact analysis functions; the papers' numbers are typed in below only to be
printed beside them. Run (a few minutes; more ranks split the routes)::

    python scripts/routing_report.py [--out docs/routing.md] [--quick] [--check]
    mpiexec -n 2 python scripts/routing_report.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "scripts"))
import reports  # noqa: E402
from paper_values import P000_T1, P000_T2, P002_T1, P002_T2, P003_SETS  # noqa: E402

from mpinet import theory  # noqa: E402
from mpinet.deadlock.vc import analyze_vc  # noqa: E402
from mpinet.engine.comm import SerialComm, sum_op  # noqa: E402
from mpinet.engine.partition import block_bounds  # noqa: E402
from mpinet.engine.routes import route_report  # noqa: E402
from mpinet.routing import ROUTERS, make_router  # noqa: E402
from mpinet.routing.scc_analysis import exhaustive_route_costs  # noqa: E402
from mpinet.routing.walk import walk  # noqa: E402
from mpinet.topology import from_spec  # noqa: E402


def fmt(x, nd=3) -> str:
    return f"{x:.{nd}f}" if isinstance(x, float) else str(x)


def mark(ours: float, paper: float, nd: int = 3) -> str:
    """Our value, with the paper's beside it when the printed digits differ."""
    same = round(ours, nd) == round(paper, nd)
    return (
        fmt(round(ours, nd), nd) if same else f"**{fmt(round(ours, nd), nd)}** ({fmt(paper, nd)})"
    )


class Report:
    def __init__(self, comm, quick: bool) -> None:
        self.comm, self.quick, self.lines = comm, quick, []

    def out(self, *lines: str) -> None:
        self.lines.extend(lines)

    def route(self, spec: str, router: str, pairs: str = "to-identity", **opts) -> dict:
        topo = from_spec(spec)
        return route_report(topo, make_router(router, topo, **opts), pairs, self.comm)


def scc_tables(r: Report) -> None:
    r.out("## Paper 000 Tables 1 and 2: SCC average distance and routing algorithms", "")
    r.out(
        "Routes from every node to the identity `<2, 12..n>`, averaged over all (n-1)·n! nodes "
        "including the identity itself (the paper's convention). Cells show mpinet's value; where the "
        "paper's printed value differs it follows in parentheses and the cell is bold. lat / MI / "
        "MB / local: the cost split of `scc-optimal`'s routes (Table 1). Random: the exact "
        "expected cost of `scc-random` over all its choices and its exact worst case (by dynamic "
        "programming over every route Alg. 1 can take, `scc_analysis.exhaustive_route_costs`; "
        "`mpinet routes --router scc-random` samples one seed), beside the paper's simulation and "
        "worst-case rows. Table 2's greedy row is truncated, not rounded (5.30556 printed 5.305; "
        "errata E3). Table 1 and 2's n = 9 cells are discussed in errata E3.",
        "",
    )
    have = {
        n for n in ("scc-optimal", "scc-greedy", "scc-random", "scc-nobacktrack") if n in ROUTERS
    }
    top = 7 if r.quick else 8
    r.out(
        "| n | diameter (BFS) | lat | MI local | MB local | local | avg distance (BFS) | optimal | "
        "greedy | no-backtrack | random, expected | random, worst case | eq. 16 bound |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    )
    for n in range(3, top + 1):
        spec = f"scc:{n}"
        p1, p2 = P000_T1[n], P000_T2[n]
        short = r.route(spec, "shortest")
        row = [str(n), mark(short["max_shortest"], p1[0], 0)]
        split = r.route(spec, "scc-optimal")["split"] if "scc-optimal" in have else {}
        if split:
            row += [
                mark(split["lat"], p1[1]),
                mark(split["mi_local"], p1[2]),
                mark(split["mb_local"], p1[3]),
                mark(split["mi_local"] + split["mb_local"], p1[4]),
            ]
        else:
            row += ["-"] * 4
        row.append(mark(short["avg_shortest"], p1[5]))
        for name, paper in (
            ("scc-optimal", p2[0]),
            ("scc-greedy", p2[1]),
            ("scc-nobacktrack", None),
        ):
            if name not in have:
                row.append("-")
                continue
            rep = r.route(spec, name)
            row.append(
                mark(rep["avg_length"], paper) if paper is not None else fmt(rep["avg_length"])
            )
        if "scc-random" in have:
            row.append(mark(float(exhaustive_route_costs(n, mode="mean").mean()), p2[3]))
            row.append(mark(float(exhaustive_route_costs(n, mode="max").mean()), p2[4]))
        else:
            row += ["-", "-"]
        row.append(mark(theory.scc_avg_distance_bound(n), p2[2]))
        r.out("| " + " | ".join(row) + " |")
    r.out("")


def ms_tables(r: Report) -> None:
    r.out("## Macro-star routing (paper 004 sections 2-3)", "")
    r.out(
        "All nodes to the identity (average includes the identity itself). Bound: the paper's "
        "diameter bound floor(2.5nl) + 2l - 2 (Theorem 3.2), which the paper proves for the "
        "balls-to-boxes routes, not for the literal star emulation (bounded by 3·floor(1.5nl); "
        "errata E15).",
        "",
        "| network | router | avg length | max length | avg distance (BFS) | diameter (BFS) | "
        "shortest routes | bound |",
        "|---|---|---|---|---|---|---|---|",
    )
    names = [n for n in ROUTERS if n.startswith("ms-")]
    for l, n in [(2, 2), (3, 2), (2, 3)]:
        spec = f"ms:{l},{n}"
        for name in names:
            rep = r.route(spec, name)
            bound = theory.ms_diameter_bound(l, n)
            flag = "" if rep["max_length"] <= bound else " **exceeds**"
            r.out(
                f"| MS({l},{n}) | {name} | {rep['avg_length']:.4f} | {rep['max_length']}{flag} | "
                f"{rep['avg_shortest']:.4f} | {rep['max_shortest']} | {rep['pct_shortest']:.2f}% | "
                f"{bound} |"
            )
    r.out("")


#: the weighted sums of :func:`fccn_walks`, in order
WALK_SUMS = ("distinct", "eq_distinct", "top", "eq_top", "wt", "wt_r", "wt_s", "wa", "wa_r",
             "wa_s", "top_r", "top_s")  # fmt: skip


def fccn_walks(m: int, comm, batch: int = 1 << 20) -> dict:
    """S-Route and fccn-shortest lengths over all ordered pairs, by walking every
    (orbit representative, destination) pair weighted by its orbit size."""
    topo = from_spec(f"fccn:{m}")
    n = topo.num_nodes
    reps, weights = topo.source_orbits()
    bounds = block_bounds(reps.size, comm.Get_size())
    mine = np.arange(bounds[comm.Get_rank()], bounds[comm.Get_rank() + 1])
    routers = [make_router("fccn-sroute", topo), make_router("fccn-shortest", topo)]
    acc = np.zeros(len(WALK_SUMS), dtype=np.float64)
    per = max(1, batch // n)
    for b in range(0, mine.size, per):
        idx = mine[b : b + per]
        src = np.repeat(reps[idx], n)
        dst = np.tile(np.arange(n), idx.size)
        w = np.repeat(weights[idx], n).astype(np.float64)
        lr = walk(topo, routers[0], src, dst)["lengths"]
        ls = walk(topo, routers[1], src, dst)["lengths"]
        distinct = src != dst
        top = (src >> 3 * (m - 1)) != (dst >> 3 * (m - 1))
        worse_t = top & (lr != ls)
        worse_a = distinct & (lr != ls)
        acc += [
            (w * distinct).sum(),
            (w * (distinct & (lr == ls))).sum(),
            (w * top).sum(),
            (w * (top & (lr == ls))).sum(),
            (w * worse_t).sum(),
            (w * lr * worse_t).sum(),
            (w * ls * worse_t).sum(),
            (w * worse_a).sum(),
            (w * lr * worse_a).sum(),
            (w * ls * worse_a).sum(),
            (w * lr * top).sum(),
            (w * ls * top).sum(),
        ]
    total = np.zeros_like(acc)
    comm.Allreduce(acc, total, op=sum_op())
    return dict(zip(WALK_SUMS, total, strict=True))


def fccn_tables(r: Report) -> None:
    r.out("## Paper 002 Tables I and II: FCCN simple routing vs shortest paths", "")
    r.out(
        "Both routers walked over every ordered pair (one source per orbit of the 48 cube "
        "automorphisms applied to every digit, weighted by orbit size: exact for all pairs). "
        "`fccn-sroute` is Alg. 3.2; `fccn-shortest` (Thm 4.1) equals the BFS distance on every pair. "
        "Columns: share of S-Routes that are shortest over all ordered pairs of distinct nodes, and "
        "over pairs with alpha_m != beta_m (the convention of Table I's columns 3-4); average length "
        "of the non-shortest S-Routes and of the corresponding shortest paths (alpha_m != beta_m).",
        "",
        "| m | shortest, distinct pairs | shortest, alpha_m != beta_m | non-shortest S-Route | "
        "their shortest paths | paper: % / S-Route / shortest |",
        "|---|---|---|---|---|---|",
    )
    top_m = 4 if r.quick else 5
    level = {}
    for m in range(2, top_m + 1):
        a = fccn_walks(m, r.comm)
        p = P002_T1[m]
        r_avg, s_avg = a["wt_r"] / a["wt"], a["wt_s"] / a["wt"]
        r.out(
            f"| {m} | {100 * a['eq_distinct'] / a['distinct']:.4f}% | "
            f"{100 * a['eq_top'] / a['top']:.4f}% | {r_avg:.4f} (+{100 * (r_avg / s_avg - 1):.1f}%) | "
            f"{s_avg:.4f} | {p[0]}% / {p[1]} / {p[2]} |"
        )
        level[m] = (a["top_r"] / a["top"], a["top_s"] / a["top"])
    r.out(
        "",
        "Table II: average route length with communication locality p_k = p at every level "
        "(exact: `D_m(p) = (1 - p) L_m + p D_{m-1}(p)`, `D_1 = 1.5`, `L_m` the exact average over "
        "pairs whose highest differing level is m, from the walks above; p = 1/8 is uniform "
        "traffic including the source). Cells: S-Route / shortest; paper in parentheses.",
        "",
        "| m | p = 1/8 | 0.5 | 0.6 | 0.7 | 0.8 | 0.9 |",
        "|---|---|---|---|---|---|---|",
    )
    ps = (0.125, 0.5, 0.6, 0.7, 0.8, 0.9)
    d_prev = {p: (1.5, 1.5) for p in ps}
    for m in range(2, top_m + 1):
        cells = []
        for j, p in enumerate(ps):
            dr = (1 - p) * level[m][0] + p * d_prev[p][0]
            ds = (1 - p) * level[m][1] + p * d_prev[p][1]
            d_prev[p] = (dr, ds)
            cells.append(f"{dr:.4f} / {ds:.4f} ({P002_T2[m][j]})")
        r.out(f"| {m} | " + " | ".join(cells) + " |")
    r.out("")


def borel_tables(r: Report) -> None:
    r.out("## Paper 003 Tables 3 and 4: Borel Cayley graphs", "")
    r.out(
        "From node 0 to every node, as the paper measures (`--pairs from-identity`). avg-bar is the "
        "exact average distance excluding / including the source. D1, D2: depths of the Two-Phase "
        "class and in-class tables. CR routing uses a CR labelling built from the definition "
        "(`Borel.cr_ring(seed=0)`; the paper's construction does not apply to these generator sets "
        "and the paper does not say which ring it used, see errata E7). Cells: max / avg; the "
        "paper's values in parentheses.",
        "",
        "| p, a | t1, t2 | D | avg-bar | D1, D2 | CR d=1 | d=2 | d=3 | d=4 | Two-Phase | table |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    )
    sets = P003_SETS if not r.quick else {(47, 2): P003_SETS[(47, 2)]}
    for (p, a), rows in sets.items():
        for t1, t2, d, avg, d1, d2, cr, two in rows:
            spec = f"borel:{p},{a},{t1},{t2}"
            topo = from_spec(spec)
            tp = make_router("borel-two-phase", topo)
            rep2 = r.route(spec, "borel-two-phase", "from-identity")
            n = topo.num_nodes
            excl = rep2["avg_shortest"] * n / (n - 1)
            two_avg = rep2["avg_length"] * n / (n - 1)
            route_report(topo, tp, "sample:1", r.comm)  # a route builds its tables (d1, d2)
            cells = []
            for la in (1, 2, 3, 4):
                rep = r.route(spec, "borel-cr", "from-identity", lookahead=la)
                cavg = rep["avg_length"] * n / (n - 1)
                cells.append(f"{rep['max_length']} / {cavg:.2f} ({cr[la][0]} / {cr[la][1]})")
            tab = r.route(spec, "borel-table", "from-identity")
            r.out(
                f"| {p}, {a} | {t1}, {t2} | {mark(rep2['max_shortest'], d, 0)} | "
                f"{excl:.4f} / {rep2['avg_shortest']:.4f} ({avg}) | {tp.d1}, {tp.d2} ({d1}, {d2}) | "
                + " | ".join(cells)
                + f" | {rep2['max_length']} / {two_avg:.2f} ({two[0]} / {two[1]}) | "
                f"{tab['max_length']} / {tab['avg_length'] * n / (n - 1):.2f} |"
            )
    r.out(
        "",
        "Averages of routes exclude node 0's own zero-length route (the paper's convention: "
        "only it reproduces the Two-Phase averages).",
        "",
    )


def kncube_tables(r: Report) -> None:
    """BookSim's dimension-order routing on its meshes and tori (issue 35)."""
    r.out("## BookSim2's dimension-order routing (`dor`) on mesh:K,N and torus:K,N", "")
    r.out(
        "`dor` (BookSim2's `dim_order_mesh` / `dim_order_torus`, docs/booksim.md) routed over "
        "every ordered pair of distinct nodes; route lengths beside the exact distances (sums "
        "over the coordinates, equal to BFS: tests/test_kncube.py) and the closed forms (diameter N(K-1) on the mesh, N floor(K/2) on the torus; average distance "
        "N(K^2-1)/(3K) and N floor(K^2/4)/K over all pairs including the source, converted here "
        "to distinct pairs). Deadlock: the (link, VC) dependency graph of the routes under "
        "wormhole switching (`mpinet deadlock --switching wormhole`), with `any` VC and 1 VC, "
        "and with the `dateline` VC policy (torus: two classes per dimension ring) at the VCs "
        "it needs.",
        "",
        "| network | pairs | dor avg / max | distance avg / max | closed form avg / diameter | "
        "any, 1 VC | dateline |",
        "|---|---|---|---|---|---|---|",
    )
    specs = ["mesh:4,2", "torus:5,2", "torus:4,3"]
    if not r.quick:
        specs += ["mesh:8,2", "torus:8,2", "mesh:4,3"]
    for spec in specs:
        topo = from_spec(spec)
        rep = r.route(spec, "dor", "all")
        n = topo.num_nodes
        cf = {c.quantity: c.value for c in theory.closed_forms(topo.family, (topo.k, topo.n))}
        verdict = []
        for pol, v in (("any", 1), ("dateline", None)):
            if pol == "dateline" and topo.family == "mesh":
                verdict.append("refused (no ring)")
                continue
            a = analyze_vc(topo, make_router("dor", topo), pol, vcs=v).report
            verdict.append(("acyclic" if a["acyclic"] else "cyclic") + f" ({a['vcs']} VC)")
        r.out(
            f"| {spec} | {rep['pairs']:,} | {rep['avg_length']:.4f} / {rep['max_length']} | "
            f"{rep['avg_shortest']:.4f} / {rep['max_shortest']} | "
            f"{cf['avg_distance'] * n / (n - 1):.4f} / {cf['diameter']} | {verdict[0]} | "
            f"{verdict[1]} |"
        )
    r.out("")


#: how each router routes inside the engines' compiled steps (issue 33)
ROUTES_IN_STEPS = (
    "Every router routes inside the engines' compiled steps "
    "(`mpinet.routing.route_tables.compile_routes`): by its own compiled hop (`shortest`, "
    "`fccn-shortest`, `borel-table`, `anynet-min`, `dor` without ties); else, when its "
    "choices are fixed and its routes are translation-invariant on a vertex-transitive "
    "network (the SCC, macro-star, IMS, star, CCC, hypercube and `borel-two-phase` routers)"
    " of at most 2^20 routes to the translation targets (K N: scc:7 and ms:3,2 fit, scc:8 "
    "and ms:3,3 do not), by a translated route table: each of those routes walked once, a "
    "packet's header the index of its row and hop, a hop one byte read; else (random "
    "choices, `cms-clusters`, `fccn-sroute`, `borel-cr`, which is not translation-"
    "invariant, larger networks) by its routes walked at injection "
    "(`mpinet.routing.source_routes.walk_routes`: the router's own `next_port` hop by hop, "
    "vectorized over the packets) into rows the engine reads one cell a hop. All three give"
    " the router's own ports: every router but those that hold packets decides from the "
    "node, the destination, its header, the packet id, the hops taken and the seed, never "
    "from the step or the traffic (tests/test_source_routes.py holds each to the step-by-"
    "step walk and to both engines' runs; a table is also checked against the router on "
    '2,048 random pairs when it is built). Costs: docs/performance.md, "Routes computed at '
    'injection".'
)


#: what changes from run to run (masked by --check): the time and the ranks
STAMP = r"_Generated in \d+ s on \d+ rank\(s\)\._"


def main(argv: list[str] | None = None) -> int:
    ap = reports.arguments(__doc__, out=ROOT / "docs" / "routing.md", check=True)
    ap.add_argument("--quick", action="store_true", help="smaller instances (for a smoke test)")
    args = ap.parse_args(argv)
    try:
        from mpinet.engine.world import world

        comm = world()
    except Exception:
        comm = SerialComm()
    args.quiet = args.quiet or comm.Get_rank() != 0  # only rank 0 prints
    run = reports.Run(__file__, args, args.out, volatile=[STAMP])  # refused now, not after
    r = Report(comm, args.quick)
    t0 = time.perf_counter()
    r.out(
        "# Routing: the papers' tables beside mpinet",
        "",
        "Generated by `python scripts/routing_report.py` (do not edit by hand). Every mpinet number "
        "is computed by routing every pair the table covers with `mpinet.engine.routes.route_report` "
        "(the same code as `mpinet routes`) or by the family's exact analysis; the papers' values "
        "are shown beside them. Disagreements are explained in [errata.md](errata.md).",
        "",
        ROUTES_IN_STEPS,
        "",
    )
    for extra in ("scc_tables", "ms_tables", "fccn_tables", "borel_tables", "kncube_tables"):
        fn = globals().get(extra)
        if fn is not None:
            run.progress(extra.replace("_", " "))
            fn(r)
    r.out(f"_Generated in {time.perf_counter() - t0:.0f} s on {comm.Get_size()} rank(s)._", "")
    if comm.Get_rank() != 0:
        return 0
    run.write(args.out, "\n".join(r.lines))
    if not args.check:
        print(f"wrote {args.out}")
    return run.finish()


if __name__ == "__main__":
    sys.exit(main())
