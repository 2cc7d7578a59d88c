#!/usr/bin/env python3
"""A floor for the iq router's cycle (issue 35): a lean input-queued router, timed beside the
ideal and the exact iq runs of ``scripts/bench_iq.py``.

The floor runs ``bench_iq.py``'s case (its network, router, VCs, buffers and the exact run's
packets: creation cycle, source, destination) through one compiled loop that does strictly
less than the exact model and as little as a cycle-accurate input-queued router with
BookSim's pipeline must: per flit-hop the flit written into its input VC's ring and read
out, a head's route (one table read) and VC allocation (the first free VC of its output),
switch allocation (one winner per output and per input a cycle: round-robin over a
router's inputs and over an input's VCs, one pass, no iterations), the credit tested and
spent, the channel (a list per arrival cycle) and the credit's return (a list per due
cycle), the pipeline's cycles as the cycle a flit may go next, and active lists of routers
and terminals, so an idle router costs nothing. What it leaves out is in docs/iq-router.md,
"Session 17". Checked: every packet delivered, the two layouts' deliveries equal, flit-hops
against the exact run's, and with ``--check`` lone packets' latency against the zero-load
formula of docs/iq-router.md. Timed: CPU seconds (``time.process_time``) of the ideal and
iq runs (``bench_iq.once``: ``FlitEngine.run``, its Python included) and of the floor's
compiled run alone, alternated in one process, best of ``--rounds``; per flit-hop (a flit
over a router-to-router link, the exact run's link loads summed).

    python scripts/iq_floor.py [--rounds 5] [--cases ms32,hc8,mesh8-0.2,mesh88] [--check]
        [--layouts router,soa] [--floor-only] [--modes 0,7,127]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_iq  # noqa: E402
import iq_floor_kernels as fk  # noqa: E402
import iq_floor_soa  # noqa: E402
import iq_floor_x  # noqa: E402

from mpinet.engine.iq_config import IQConfig  # noqa: E402
from mpinet.routing import make_router  # noqa: E402
from mpinet.routing.base import HopContext  # noqa: E402
from mpinet.routing.tables import neighbor_table  # noqa: E402
from mpinet.topology import from_spec  # noqa: E402

#: bench_iq.py's cases the floor runs (issue 35's four)
CASES = ("ms32-L16", "hc8-L16", "mesh8-0.2", "mesh88-lat")
#: small cases of the tests' own, as bench_iq.py's CASES: meshconfig's keys (and mesh88_lat's)
#: on mesh:4,2, loaded enough that every key's rule decides some deliveries
SMALL = {
    "mesh4-meshc": ("mesh:4,2", "dor", 4, 16, 8, "any", 0.2, 1000, bench_iq.MESHC),
    "mesh4-88": ("mesh:4,2", "dor", 12, 8, 8, "any", 0.04, 1000, bench_iq.MESH88),
}
#: the state's layouts (scripts/iq_floor_kernels.py)
LAYOUTS = {"router": fk.run_router, "soa": iq_floor_soa.run_soa}


class Floor:
    """One case's network, routes and packets for :func:`iq_floor_kernels.run_router`, built
    from ``bench_iq``'s case and its exact iq run's packets (that record kept for the checks)."""

    def __init__(self, case: str) -> None:
        spec, rname, fl, vcs, vb, pol, rate, steps, keys, *pat = case_of(case)
        topo = from_spec(spec)
        n, deg = topo.num_nodes, topo.degree
        self.rec = bench_iq_record(case)
        self.iq = iq = IQConfig(**keys)
        xd = max(iq.st_prepare_delay + iq.st_final_delay, 1)
        p = deg + 1
        self.prm = np.array([n, p, vcs, vb, fl, deg, iq.routing_delay, iq.vc_alloc_delay,
                             iq.sw_alloc_delay, xd, iq.channel_latency, iq.credit_delay,
                             20 * steps], np.int64)  # fmt: skip
        self.c = iq.routing_delay + iq.vc_alloc_delay + iq.sw_alloc_delay + xd
        self.table = route_table(make_router(rname, topo), n, deg)
        nbr = neighbor_table(topo).astype(np.int64)
        nodes = np.repeat(np.arange(n), deg)
        ports = np.tile(np.arange(deg), n)
        rev = np.asarray(topo.reverse_of(nodes, ports), np.int64).reshape(n, deg)
        self.up = np.zeros(n * p, np.int32)
        self.down = np.zeros(n * p, np.int32)
        ok = nbr >= 0
        ip = (nbr * p + rev)[ok]  # the input port behind each output port
        self.up[ip] = (nodes * p + ports)[ok.ravel()]
        self.down[(nodes * p + ports)[ok.ravel()]] = ((nbr << 12) | (rev << 6))[ok]
        pk = self.rec.packets
        npk = int(pk[:, 0].max()) + 1
        self.src = np.zeros(npk, np.int32)
        self.dst = np.zeros(npk, np.int32)
        self.ctime = np.full(npk, 1 << 40, np.int64)
        pid = pk[:, 0]
        self.src[pid], self.dst[pid], self.ctime[pid] = pk[:, 1], pk[:, 2], pk[:, 3]
        self.inj = pid[np.lexsort((pid, pk[:, 3]))].astype(np.int64)
        self.qlist = pid[np.lexsort((pid, pk[:, 3], pk[:, 1]))].astype(np.int64)
        counts = np.bincount(pk[:, 1], minlength=n)
        self.qstart = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.hops = self.route_hops(pk[:, 1], pk[:, 2])
        # BookSim's port order for iq_floor_x (iq_ports.booksim_order): on anynet the links by
        # ascending neighbour id, the terminal last in the state, the pointers at it
        mt = getattr(topo, "family", "") in ("mesh", "torus")
        key = np.where(nbr >= 0, nbr, n + np.arange(deg))
        sp = np.argsort(np.argsort(key, axis=1, kind="stable"), axis=1) if not mt else None
        sp = np.tile(np.arange(deg), (n, 1)) if mt else sp
        spx = np.concatenate([sp, np.full((n, 1), deg)], axis=1)  # mpinet port -> state port
        self.xt = spx[np.arange(n * n) // n, self.table].astype(np.uint8)
        self.xup, self.xdown = np.zeros_like(self.up), np.zeros_like(self.down)
        ipx = (nbr * p + spx[np.maximum(nbr, 0), rev])[ok]
        self.xup[ipx] = (nodes * p + spx[nodes, ports])[ok.ravel()]
        nq = (nbr << 12) | (spx[np.maximum(nbr, 0), rev] << 6)
        self.xdown[(nodes * p + spx[nodes, ports])[ok.ravel()]] = nq[ok]
        self.p0 = 0 if mt else deg  # the state port BookSim numbers 0

    def run_x(self, mode: int, eloop: int = 4) -> tuple[float, np.ndarray, np.ndarray]:
        """As :meth:`run`, :func:`iq_floor_x.run_x` in ``mode`` on BookSim's port order."""
        iq = self.iq
        prm = np.concatenate([self.prm, [mode, self.p0, eloop, iq.input_speedup,
                                         iq.wait_for_tail_credit]]).astype(np.int64)  # fmt: skip
        return self._timed(iq_floor_x.run_x, prm, self.xt, self.xup, self.xdown)

    def run(self, layout: str = "router") -> tuple[float, np.ndarray, np.ndarray]:
        """(CPU seconds, deliveries, stats: cycles, flit-hops, router visits, delivered) of
        one run in ``layout`` (:data:`LAYOUTS`)."""
        return self._timed(LAYOUTS[layout], self.prm, self.table, self.up, self.down)

    def _timed(self, run, prm, table, up, down) -> tuple[float, np.ndarray, np.ndarray]:
        """One ``run`` on this case's packets and the given network arrays, timed."""
        deliv = np.full(self.src.size, -1, np.int64)
        stats = np.zeros(4, np.int64)
        t0 = time.process_time()
        run(prm, table, up, down, self.src, self.dst, self.ctime, self.qlist, self.qstart,
            self.inj, deliv, stats)  # fmt: skip
        return time.process_time() - t0, deliv, stats

    def route_hops(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Links of each route, following the table."""
        n, deg = int(self.prm[0]), int(self.prm[5])
        p = deg + 1
        cur, dst = np.asarray(src, np.int64).copy(), np.asarray(dst, np.int64)
        hops = np.zeros(cur.size, np.int64)
        live = np.flatnonzero(cur != dst)
        while live.size:
            op = self.table[cur[live] * n + dst[live]].astype(np.int64)
            cur[live] = self.down[cur[live] * p + op] >> 12
            hops[live] += 1
            live = live[cur[live] != dst[live]]
        return hops


def case_of(name: str) -> tuple:
    """``bench_iq.CASES[name]``, or :data:`SMALL`'s."""
    return bench_iq.CASES[name] if name in bench_iq.CASES else SMALL[name]


def bench_iq_record(case: str):
    """The exact iq run of ``case`` (bench_iq.py's set-up), its record."""
    from dataclasses import replace

    from mpinet.engine.flit.engine import FlitEngine
    from mpinet.engine.models import parse_model
    from mpinet.routing.vc_policies import make_vc_policy
    from mpinet.workloads import Unicast

    spec, rname, fl, vcs, vb, pol, rate, steps, keys, *pat = case_of(case)
    topo = from_spec(spec)
    m = parse_model("all-port", dict.fromkeys(topo.port_classes, 1))
    m = replace(m, flit=True, switching="wormhole", flits=fl, vcs=vcs, vc_buffer=vb,
                vc_policy=pol, router="iq", iq=IQConfig(**keys))  # fmt: skip
    w = Unicast(topo, pat[0] if pat else "uniform", injection="bernoulli", rate=rate,
                steps=steps, seed=3)  # fmt: skip
    eng = FlitEngine(topo, make_router(rname, topo), m, make_vc_policy(pol, topo, vcs), seed=3,
                     max_steps=20 * steps)  # fmt: skip
    return eng.run(w)


def route_table(router, n: int, deg: int) -> np.ndarray:
    """``T[node * n + dst]``: the router's port at ``node`` for ``dst`` (``deg`` at ``dst``),
    uint8, asked of the router by rows of sources."""
    table = np.empty(n * n, np.uint8)
    rows = max(1, (1 << 20) // n)
    for a in range(0, n, rows):
        nodes = np.repeat(np.arange(a, min(a + rows, n), dtype=np.int64), n)
        dests = np.tile(np.arange(n, dtype=np.int64), nodes.size // n)
        ports = np.full(nodes.size, deg, np.int64)
        go = np.flatnonzero(nodes != dests)
        hdr = router.init_headers(nodes[go], dests[go])
        ctx = HopContext(0, go.astype(np.int64), np.zeros(go.size, np.int64), 3)
        ports[go] = router.next_port(nodes[go], dests[go], hdr, ctx)[0]
        table[a * n : a * n + nodes.size] = ports
    return table


def zero_load(fl: Floor, pairs: int, seed: int = 5) -> list[str]:
    """Lone packets (one a run), each layout, against docs/iq-router.md's "Zero-load latency":
    with 64-flit buffers ``T0 = 3 + (H + 1) c + H L + (F - 1) sad``; with one-flit buffers
    each flit after the head one credit loop (``xd + 2 (L + 1) + 2 (sad - 1) + cd``) later
    (over one link or more: from a node to itself the terminal's loop, shorter, is the
    bound). The mismatches, as lines."""
    rng = np.random.default_rng(seed)
    n, f, sad, xd = int(fl.prm[0]), int(fl.prm[4]), int(fl.prm[8]), int(fl.prm[9])
    lat, cd = int(fl.prm[10]), int(fl.prm[11])
    loop = xd + 2 * (lat + 1) + 2 * (sad - 1) + cd
    bad = []
    for _ in range(pairs):
        s, d = (int(x) for x in rng.integers(0, n, 2))
        h = int(fl.route_hops(np.array([s]), np.array([d]))[0])
        one = np.zeros(1, np.int64)
        qs = np.zeros(n + 1, np.int64)
        qs[s + 1 :] = 1
        for layout, run in LAYOUTS.items():
            for bsize, gap in ((64, sad), (1, loop)):
                prm = fl.prm.copy()
                prm[3] = bsize
                deliv = np.full(1, -1, np.int64)
                run(prm, fl.table, fl.up, fl.down, np.array([s], np.int32),
                    np.array([d], np.int32), np.array([7], np.int64), one, qs, one, deliv,
                    np.zeros(4, np.int64))  # fmt: skip
                want = 3 + (h + 1) * fl.c + h * lat + (f - 1) * gap
                if (bsize > 1 or h > 0) and deliv[0] - 7 != want:  # the loop of a link
                    bad.append(f"{layout}, buffers {bsize}: {s}->{d} {h} hops, latency "
                               f"{deliv[0] - 7}, want {want}")  # fmt: skip
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="alternated rounds (5)")
    ap.add_argument("--cases", default=",".join(CASES), help="bench_iq.py's cases whose name "
                    "contains one of these (comma-separated; issue 35's four)")  # fmt: skip
    ap.add_argument("--layouts", default="router,soa", help="the floor's layouts timed")
    ap.add_argument("--check", action="store_true", help="lone packets' latency against T0")
    ap.add_argument("--floor-only", action="store_true", help="time the floor alone")
    ap.add_argument("--modes", default="", help="iq_floor_x's modes timed too (bits: 1 iSLIP "
                    "switch allocation, 2 iSLIP VC allocation, 4 route stage, 8 "
                    "wait_for_tail_credit, 16 input speedup, 32 credit_delay, 64 routing_delay "
                    "as the case's keys)")  # fmt: skip
    a = ap.parse_args(argv)
    status = 0
    lays = [x for x in a.layouts.split(",") if x]
    pick = [c for c in a.cases.split(",") if c]
    for case in [c for c in bench_iq.CASES if any(x in c for x in pick)]:
        fl = Floor(case)
        pk, rec = fl.rec.packets, fl.rec
        runs = {x: fl.run(x) for x in LAYOUTS}  # compiled or loaded; the checks
        _, deliv, st = runs["router"]
        same = all(np.array_equal(r[1], deliv) and np.array_equal(r[2], st) for r in runs.values())
        lat_f = float((deliv[pk[:, 0]] - pk[:, 3]).mean())
        print(f"{case}: {pk.shape[0]} packets, floor delivered {st[3]} in {st[0]} cycles, "
              f"flit-hops floor {st[1]} exact {int(rec.link_load.sum())} (routes x flits "
              f"{int((fl.hops * fl.prm[4]).sum())}), latency floor {lat_f:.2f} exact "
              f"{float((pk[:, 4] - pk[:, 3]).mean()):.2f}, router visits a flit-hop "
              f"{st[2] / max(st[1], 1):.2f}, layouts {'equal' if same else 'DIFFER'}",
              flush=True)  # fmt: skip
        if st[3] != pk.shape[0] or (deliv[pk[:, 0]] < 0).any() or not same:
            print(f"{case}: the floor did not deliver every packet alike", file=sys.stderr)
            status = 1
        if a.check:
            bad = zero_load(fl, 40)
            print(f"{case}: zero-load latency of 40 lone packets: "
                  f"{'as T0' if not bad else 'NOT as T0: ' + '; '.join(bad[:4])}")  # fmt: skip
            status |= bool(bad)
        models = ([] if a.floor_only else ["ideal", "iq"]) + lays
        for mode in [int(x) for x in a.modes.split(",") if x]:
            dx = fl.run_x(mode)[1][pk[:, 0]]
            print(f"{case}: mode {mode}: {int((dx != pk[:, 4]).sum())} of {pk.shape[0]} packets "
                  "delivered in another cycle than the exact run's", flush=True)  # fmt: skip
            models.append(f"x{mode}")
        for mdl in models:
            if mdl in ("ideal", "iq"):
                bench_iq.once(case, mdl)  # loaded
        res: dict[str, list[float]] = {m: [] for m in models}
        for _ in range(a.rounds):
            for mdl in models:
                if mdl[0] == "x":
                    dt = fl.run_x(int(mdl[1:]))[0]
                else:
                    dt = fl.run(mdl)[0] if mdl in LAYOUTS else bench_iq.once(case, mdl)[0]
                res[mdl].append(dt)
        best = {m: min(v) for m, v in res.items()}
        cells = ", ".join(f"{m} {min(v):.4f}-{max(v):.4f} s ({1e9 * min(v) / st[1]:.0f} ns a "
                          "flit-hop)" for m, v in res.items())  # fmt: skip
        ratio = ""
        if not a.floor_only:
            fb = min(best[x] for x in lays)
            ratio = (f"; floor / ideal {fb / best['ideal']:.2f}, iq / floor {best['iq'] / fb:.2f}"
                     f", iq / ideal {best['iq'] / best['ideal']:.2f}")  # fmt: skip
            for x in [m for m in models if m[0] == "x"]:
                ratio += (f"; {x} / floor {best[x] / fb:.2f}, {x} / ideal "
                          f"{best[x] / best['ideal']:.2f}")  # fmt: skip
        print(f"{case}: {cells}{ratio}; load {os.getloadavg()[0]:.2f}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
