"""The exchange cost per step of a multi-rank run, projected to R = 16 .. 1,024 ranks.

Part of ``scripts/bench_scaling.py``. Per rank and step (the rank with the most cut links):

- compute = ``t_node x N / R + t_hop x u x links / R``: ``t_node`` and ``t_hop`` fitted to
  the 1-rank flit-engine runs measured (today's engine visits every node each step; the
  "flits only" figures drop that term);
- exchange = ``alpha x messages + bytes / beta``, with ``messages`` (:func:`messages`) the
  flit engine's compiled exchange: up to :data:`FOLD_MAX` ranks one message to every other
  rank, the step's counters in it; beyond, one to each block the rank's cut links reach (a
  neighbour exchange) plus ``2 log2 R`` for the counters' ``MPI_Iallreduce`` beside them,
  and ``bytes`` = ``b x u x cut links``: ``u`` the flits per directed link per step of the
  largest measured run, ``b`` the bytes sent per cross-rank flit measured on 2-4 ranks
  (rows, credits, counts and reductions together);
- efficiency = compute / (compute + exchange); waiting is left out (blocks differ by at
  most one node; a real cluster adds its own noise).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: named network assumptions: one-way latency (s) and bandwidth (bytes/s)
INFINIBAND = {"name": "InfiniBand (1.5 us, 10 GB/s)", "latency_s": 1.5e-6, "bandwidth_Bps": 1e10}
FLIT = "wormhole L=16"
#: up to this many ranks every rank sends to every other and the counters ride along
#: (``mpinet.engine.flit.rank_loop.FOLD_MAX``)
FOLD_MAX = 8


def messages(r: int, peers: int) -> int:
    """Messages a rank sends per step in the flit engine's compiled exchange on ``r`` ranks,
    ``peers`` of them owning a far end of its links."""
    if r <= FOLD_MAX:
        return r - 1
    return peers + 2 * math.ceil(math.log2(r))


def cuts(specs: list[str], ranks: list[int], cache: dict, progress: Callable | None = None) -> dict:
    """Each network's cut for every R (cached by spec in ``cache``), as JSON-able numbers;
    ``progress`` gets a line per network counted (default: stderr)."""
    from mpinet.engine.partition import block_bounds
    from mpinet.topology import from_spec
    from mpinet.topology.cut import block_cuts

    out = dict(cache)
    for spec in specs:
        have = out.get(spec, {}).get("ranks", {})
        need = [r for r in ranks if str(r) not in have]
        if not need:
            continue
        t0 = time.perf_counter()
        topo = from_spec(spec)
        got = block_cuts(topo, {r: block_bounds(topo.num_nodes, r) for r in need})
        entry = out.setdefault(spec, {"nodes": topo.num_nodes, "ranks": {}})
        for r, c in got.items():
            entry["links"] = c.links
            entry["ranks"][str(r)] = {"out_max": int(c.out_links.max(initial=0)),
                                      "out_total": int(c.out_links.sum()),
                                      "peers_max": int(c.peers.max(initial=0))}  # fmt: skip
        line = f"cut of {spec}: {time.perf_counter() - t0:.0f} s"
        (progress or (lambda m: print(m, file=sys.stderr, flush=True)))(line)
    return out


def step_model(compute_us: float, nbytes: float, messages: float, net: dict) -> tuple:
    """(exchange us, efficiency) of one step: ``alpha x messages + bytes / beta``."""
    exch = 1e6 * (net["latency_s"] * messages + nbytes / net["bandwidth_Bps"])
    return exch, compute_us / (compute_us + exch)


def fit_compute(rows: list[dict]) -> tuple[float, float]:
    """(t_node us, t_hop us) from 1-rank runs: compute per step = t_node x N + t_hop x hops.

    Today's flit engine visits every node's links each step (issue 33, item 4), so a step
    costs per node held as well as per flit-hop; with one run, or a fit that is not
    positive, the whole cost is put on the flit-hops (t_node = 0).
    """
    n = np.array([r["nodes"] for r in rows], float)
    h = np.array([r["hops"] / max(r["steps"], 1) for r in rows], float)
    c = np.array([r["compute_us_per_step"] for r in rows], float)
    if len(rows) >= 2:
        (t_node, t_hop), *_ = np.linalg.lstsq(np.stack([n, h], 1), c, rcond=None)
        if t_node >= 0 and t_hop > 0:
            return float(t_node), float(t_hop)
    return 0.0, float(c.sum() / h.sum())


def inputs(data: dict) -> dict | None:
    """The measured figures the projection takes: t_node, t_hop, u, b (None: not measured)."""
    flit = [r for r in data["measured"] if r["engine"] == FLIT and "error" not in r]
    one = [r for r in flit if r["ranks"] == 1]
    many = [r for r in flit if r["ranks"] > 1 and r["cross"]]
    if not one or not many:
        return None
    t_node, t_hop = fit_compute(one)
    steady = max(one, key=lambda r: r["steps"])  # the longest run: nearest a steady load
    links = data["cuts"][steady["spec"]]["links"]
    b = max(sum(r["sent_bytes"]) / r["cross"] for r in many)
    return {"t_node_us": t_node, "t_hop_us": t_hop, "u": steady["hops"] / steady["steps"] / links,
            "u_from": steady["spec"], "bytes_per_cross_flit": b}  # fmt: skip


def project(data: dict, specs: list[str], ranks: list[int]) -> dict:
    """Efficiency and flit-hop rate per network and R, on InfiniBand and this machine."""
    m = inputs(data)
    if m is None:
        return {"inputs": None, "rows": []}
    shm = data["shared_memory"]
    out = {"inputs": m, "rows": []}
    for spec in specs:
        c = data["cuts"][spec]
        for r in ranks:
            k = c["ranks"][str(r)]
            hops = m["u"] * c["links"] / r
            flits_only = m["t_hop_us"] * hops  # an engine whose step costs its flits only
            compute = m["t_node_us"] * c["nodes"] / r + flits_only
            nbytes = m["bytes_per_cross_flit"] * m["u"] * k["out_max"]
            red = 2 * math.ceil(math.log2(r))
            sent = messages(r, k["peers_max"])
            row = {"spec": spec, "ranks": r, "nodes_per_rank": c["nodes"] / r,
                   "cut_fraction": k["out_total"] / c["links"], "out_max": k["out_max"],
                   "peers_max": k["peers_max"], "compute_us": compute, "bytes": nbytes}  # fmt: skip
            for tag, net, msgs in (("ib", INFINIBAND, sent),
                                   ("ib_all", INFINIBAND, 2 * (r - 1) + red),
                                   ("shm", shm, sent),
                                   ("ib_flits", INFINIBAND, sent)):  # fmt: skip
                if net is None:
                    continue
                work = flits_only if tag == "ib_flits" else compute
                exch, eff = step_model(work, nbytes, msgs, net)
                row[f"{tag}_exchange_us"], row[f"{tag}_efficiency"] = exch, eff
                row[f"{tag}_rate"] = hops * r / ((work + exch) * 1e-6)
            out["rows"].append(row)
    return out


def text(data: dict, proj: dict) -> list[str]:
    """The projection's table and its assumptions, in Markdown."""
    m, shm = proj["inputs"], data["shared_memory"]
    if m is None:
        return ["No projection: it needs flit-engine runs on 1 rank and on more than one."]
    lines = [
        f"Projection (model: `scripts/scaling_model.py`). Measured inputs: compute per step "
        f"= {m['t_node_us'] * 1e3:.1f} ns x nodes on the rank + {m['t_hop_us'] * 1e3:.1f} ns "
        f"x flit-hops on the rank (fitted to the 1-rank flit runs above: today's engine visits "
        f"every node each step; the 'flits only' column drops that term, as issue 33's active "
        f"lists would); u = {m['u']:.4f} flits per directed link "
        f"per step (the {m['u_from']} run above, every projected network taken at that link "
        f"load); b = {m['bytes_per_cross_flit']:.0f} bytes sent per cross-rank flit (rows, "
        f"credits, counts, reductions; the 2-4 rank runs). Networks: {INFINIBAND['name']}; "
        f"this machine's shared memory, measured by a 2-rank ping-pong: "
        f"{shm['latency_s'] * 1e6:.2f} us, {shm['bandwidth_Bps'] / 1e9:.1f} GB/s. Messages "
        f"per step (the flit engine's compiled exchange, one compiled call per block of steps): "
        f"up to {FOLD_MAX} ranks R - 1, the counters inside; beyond, the blocks a rank's cut "
        f"links reach (a neighbour exchange) + 2 log2 R for the counters' MPI_Iallreduce "
        f"beside them; 'all-to-all' counts 2 (R - 1) + 2 log2 R (an Alltoall of counts and an "
        f"Alltoallv, the packet engine's exchange). Cut: mpinet's block partition, counted exactly "
        f"(`mpinet.topology.cut`); the rank with the most cut links.",
        "",
        "| network | R | nodes per rank | cut links % | cut links (max rank) | peers (max) "
        "| compute us/step | bytes/step | IB exchange us | IB efficiency | IB all-to-all "
        "efficiency | shared-memory efficiency | IB efficiency, flits only "
        "| IB G flit-hops/s in all (flits only) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in proj["rows"]:
        lines.append(
            f"| `{r['spec']}` | {r['ranks']:,} | {r['nodes_per_rank']:,.0f} "
            f"| {100 * r['cut_fraction']:.1f} | {r['out_max']:,} | {r['peers_max']:,} "
            f"| {r['compute_us']:,.0f} | {r['bytes']:,.0f} | {r['ib_exchange_us']:,.1f} "
            f"| {100 * r['ib_efficiency']:.0f} % | {100 * r['ib_all_efficiency']:.0f} % "
            f"| {100 * r.get('shm_efficiency', math.nan):.0f} % "
            f"| {100 * r['ib_flits_efficiency']:.0f} % | {r['ib_rate'] / 1e9:.3f} "
            f"({r['ib_flits_rate'] / 1e9:.3f}) |"
        )
    lines += [
        "",
        "Beside them: CODES/ROSS's flit-level Slim Fly model scales linearly to 128 MPI tasks "
        "(36 M events/s in all, about 0.28 M per task, 1 M nodes); HPPNetSim reaches 19.8x on "
        "32 processes (62 % efficiency).",
    ]
    return lines
