#!/usr/bin/env python3
"""What a hop costs each of the papers' routers: next_port, routes walked at injection, rows.

For each router: M random pairs of distinct nodes (random pids, seed 1). Columns, in ns
per packet-hop (best of ``--repeat``):

- ``next_port B``: the router's vectorized call at the sources, in batches of B packets
  (the engines call it once per step with that step's arrivals);
- ``walk B``: :func:`~mpinet.routing.source_routes.walk_routes` on batches of B packets,
  over the hops of their whole routes (init_headers included);
- ``compiled``: the path :func:`~mpinet.routing.route_tables.compile_routes` picks, run in
  a numba loop that follows every route to its end (the hop, then the neighbour table):
  the router's compiled hop, its translated route table, or the rows walked at injection;
- ``table s`` / ``MB``: building the translated route table, and its size.

Times are the process's CPU time (``time.process_time``): on a machine shared with other
work they leave out the waits for a core, which wall-clock times do not.

    python scripts/bench_source_routes.py [--packets 20000] [--repeat 3]
    python scripts/bench_source_routes.py --engine 8   # the packet engine, before/after
    python scripts/bench_source_routes.py --flit --repeat 3   # the flit engine (issue 33)
    python scripts/bench_source_routes.py --only greedy --repeat 1 --out X.md --quiet
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numba as nb
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
import reports  # noqa: E402

from mpinet.routing import make_router  # noqa: E402
from mpinet.routing.base import HopContext  # noqa: E402
from mpinet.routing.compiled import hop, rule_of  # noqa: E402
from mpinet.routing.route_tables import PATH_TABLE, PATH_WALKED, compile_routes  # noqa: E402
from mpinet.routing.source_routes import walk_routes  # noqa: E402
from mpinet.routing.tables import neighbor_table  # noqa: E402
from mpinet.topology import from_spec  # noqa: E402

CASES = [
    ("scc:6", "shortest"), ("scc:6", "scc-optimal"), ("scc:6", "scc-greedy"),
    ("scc:6", "scc-random"), ("ms:3,2", "shortest"), ("ms:3,2", "ms-balls-to-boxes"),
    ("ms:3,2", "ms-merged"), ("ms:3,2", "ms-two-phase"), ("ms:3,2", "ms-star-emulation"),
    ("fccn:4", "fccn-shortest"), ("fccn:4", "fccn-sroute"), ("borel:307,4,2,16", "shortest"),
    ("borel:307,4,2,16", "borel-cr"), ("borel:307,4,2,16", "borel-two-phase"),
]  # fmt: skip


@nb.njit(cache=True)
def follow(code, prm, ta, tb, src, dst, hdr, nb_flat, deg):
    """Follow every route to its end with the compiled rule; the hops taken."""
    total = 0
    for i in range(src.size):
        cur, h = src[i], hdr[i]
        while cur != dst[i]:
            port, h = hop(code, prm, ta, tb, cur, dst[i], h)
            cur = nb_flat[cur * deg + port]
            total += 1
    return total


def best(fn, repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        out = min(out, time.process_time() - t0)
    return out


def row(spec: str, name: str, m: int, repeat: int) -> str:
    topo = from_spec(spec)
    router = make_router(name, topo)
    g = np.random.default_rng(1)
    src = g.integers(0, topo.num_nodes, m)
    dst = (src + g.integers(1, topo.num_nodes, m)) % topo.num_nodes
    pids = g.integers(0, 1 << 40, m)
    _, nhops = walk_routes(router, src, dst, pids, 1, 0, 254)
    hops = int(nhops.sum())
    cells = [name, spec, f"{hops / m:.2f}"]
    for b in (64, 4096):

        def calls(b=b):
            for i in range(0, m, b):
                s, d = src[i : i + b], dst[i : i + b]
                ctx = HopContext(1, pids[i : i + b], np.zeros(s.size, np.int64), 1)
                router.next_port(s, d, router.init_headers(s, d), ctx)

        cells.append(f"{best(calls, repeat) / m * 1e9:,.0f}")
    for b in (64, 4096):

        def walks(b=b):
            for i in range(0, m, b):
                walk_routes(router, src[i : i + b], dst[i : i + b], pids[i : i + b], 1, 0, 254)

        cells.append(f"{best(walks, repeat) / hops * 1e9:,.0f}")
    t0 = time.process_time()
    run, path, _ = compile_routes(router)
    build = time.process_time() - t0
    if path == PATH_WALKED:  # the engine walks each packet's route at injection
        ctx = HopContext(1, pids, 0 * pids, 1)
        hdr = run.next_port(src, dst, run.init_headers(src, dst), ctx)[1][:, 0] - 1
    else:
        hdr = np.asarray(run.init_headers(src, dst), np.int64).reshape(m, -1)
        hdr = hdr[:, 0] if hdr.shape[1] else np.zeros(m, np.int64)
    rule = rule_of(run)
    nbf = neighbor_table(topo).astype(np.int64).ravel()
    args = (rule.code, rule.prm, rule.ta, rule.tb, src, dst, hdr, nbf, topo.degree)
    assert follow(*args) == hops
    cells.append(f"{best(lambda: follow(*args), repeat) / hops * 1e9:,.1f}")
    cells.append(path)
    table = path == PATH_TABLE
    cells.append(f"{build:.2f}" if table else "")
    cells.append(f"{run.table.nbytes / 2**20:.2f}" if table else "")
    return "| " + " | ".join(cells) + " |"


ENGINE_CASES = [
    ("scc:6", "scc-optimal"), ("scc:6", "scc-greedy"), ("scc:6", "shortest"),
    ("ms:3,2", "ms-balls-to-boxes"), ("ms:3,2", "ms-two-phase"), ("ms:3,2", "shortest"),
]  # fmt: skip


def engine_row(spec: str, name: str, packets: int, repeat: int) -> str:
    """The packet engine (departure calendar, 1 rank): the router's own next_port, then the
    path compile_routes picks, alternated ``repeat`` times; M hops/s of the run (best and
    worst), the same packets both ways (asserted)."""
    from mpinet.engine.core import Engine
    from mpinet.engine.models import parse_model
    from mpinet.engine.report import gather_packets
    from mpinet.workloads import Unicast

    topo = from_spec(spec)
    own = make_router(name, topo)
    compiled, path, _ = compile_routes(make_router(name, topo))
    rates: dict[bool, list[float]] = {False: [], True: []}
    ref = None
    for _ in range(repeat):
        for which in (False, True):
            w = Unicast(topo, "uniform", packets=packets, seed=3)
            eng = Engine(topo, compiled if which else own, parse_model("all-port"), None, seed=3,
                         route_tables=which)  # fmt: skip
            t0 = time.process_time()
            rec = eng.run(w)
            dt = time.process_time() - t0
            pk = gather_packets(rec, w.pid_space, eng.comm)[0]
            ref = pk if ref is None else ref
            assert np.array_equal(ref, pk), "the runs differ"
            rates[which].append(pk[:, 5].sum() / dt / 1e6)
    cells = [name, spec]
    for which in (False, True):
        r = rates[which]
        cells += ([path] if which else []) + [f"{min(r):.2f}-{max(r):.2f}"]
    return "| " + " | ".join(cells) + " |"


#: the flit engine's runs: per network, the Bernoulli rate, the steps and the routers
#: (``shortest`` first: the rate the papers' routers are held to)
FLIT_CASES = [
    ("scc:6", 0.004, 2000, ("shortest", "scc-optimal", "scc-greedy")),
    ("ms:3,2", 0.004, 2000, ("shortest", "ms-balls-to-boxes", "ms-merged", "ms-two-phase",
                             "ms-star-emulation")),
    ("fccn:4", 0.001, 2000, ("shortest", "fccn-sroute")),  # 0.004 saturates it
    ("borel:307,4,2,16", 0.0005, 1000, ("shortest", "borel-cr")),
]  # fmt: skip


def flit_once(topo, router, m, rate: float, steps: int) -> tuple[float, str, str]:
    """One flit run: (M flit-hops/s of CPU time, the steps' path, how routes are computed)."""
    from mpinet.engine.flit.engine import FlitEngine
    from mpinet.routing.vc_policies import make_vc_policy
    from mpinet.workloads import Unicast

    w = Unicast(topo, "uniform", injection="bernoulli", rate=rate, steps=steps, seed=3)
    pol = make_vc_policy("any", topo, m.vcs)
    eng = FlitEngine(topo, router, m, pol, seed=3, max_steps=20 * steps)
    t0 = time.process_time()
    rec = eng.run(w)
    dt = time.process_time() - t0
    done = rec.packets[rec.packets[:, 4] >= 0]
    return float(done[:, 5].sum()) * m.flits / dt / 1e6, eng.steps_path, eng.routes


def flit_rows(repeat: int, only: str, progress: Callable[[str], None]) -> Iterator[str]:
    """The flit engine, 1 rank, wormhole L = 16, V = 4, B = 4, vc_policy any, uniform
    Bernoulli traffic: each network's routers alternated ``repeat`` times (after one warm-up
    run each), M flit-hops/s of CPU time (worst-best), the path and how routes are computed;
    a network's rows as soon as it is done."""
    from mpinet.engine.models import parse_model, switching_model

    m = switching_model(parse_model("all-port"), "wormhole", 16, 4, 4, "any")
    for spec, rate, steps, names in FLIT_CASES:
        names = [n for n in names if n == "shortest" or only in n]
        progress(f"{spec}: {', '.join(names)}, the flit engine")
        topo = from_spec(spec)
        routers = {n: make_router(n, topo) for n in names}  # tables built once, before timing
        rates: dict[str, list[float]] = {n: [] for n in names}
        how = {n: flit_once(topo, routers[n], m, rate, 40)[1:] for n in names}  # warm up
        for _ in range(repeat):
            for n in names:
                rates[n].append(flit_once(topo, routers[n], m, rate, steps)[0])
        base = max(rates["shortest"])
        for n in names:
            r = rates[n]
            cells = [n, spec, str(rate), *how[n], f"{min(r):.2f}-{max(r):.2f}",
                     f"{base / max(r):.2f}x"]  # fmt: skip
            yield "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> int:
    ap = reports.arguments(__doc__, out_help="also write the table to FILE")
    ap.add_argument("--packets", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="", help="routers whose name contains this")
    ap.add_argument("--engine", type=int, default=0, metavar="P",
                    help="time the packet engine instead, P packets per node")  # fmt: skip
    ap.add_argument("--flit", action="store_true",
                    help="time the flit engine: the papers' routers against shortest")  # fmt: skip
    a = ap.parse_args(argv)
    run = reports.Run(__file__, a, a.out)
    if a.flit:
        run.emit("| router | network | rate | steps | routes | M flit-hops/s | shortest / this |")
        run.emit("|---|---|---|---|---|---|---|")
        for line in flit_rows(a.repeat, a.only, run.progress):
            run.emit(line)
    elif a.engine:
        run.emit("| router | network | next_port M hops/s | compiled path | M hops/s |")
        run.emit("|---|---|---|---|---|")
        for spec, name in ENGINE_CASES:
            if a.only in name:
                run.progress(f"{name} on {spec}, the packet engine")
                run.emit(engine_row(spec, name, a.engine, a.repeat))
    else:
        run.emit("| router | network | hops | next_port 64 | next_port 4096 | walk 64 "
                 "| walk 4096 | compiled | path | table s | MB |")  # fmt: skip
        run.emit("|---|---|---|---|---|---|---|---|---|---|---|")
        for spec, name in CASES:
            if a.only in name:
                run.progress(f"{name} on {spec}")
                run.emit(row(spec, name, a.packets, a.repeat))
    run.save(a.out, sys.argv[1:] if argv is None else argv)
    return run.finish()


if __name__ == "__main__":
    sys.exit(main())
