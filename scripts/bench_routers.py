#!/usr/bin/env python3
"""Routing decisions per second for every router on a large instance of its family.

For each router: M random (source, destination) pairs of distinct nodes; time
``init_headers`` (the source's work, e.g. scc-optimal's search) and one
vectorized ``next_port`` call at the sources (the per-hop decision). Tables
are built first and timed separately. Prints a markdown table::

    python scripts/bench_routers.py [--packets 1000000] [--repeat 3] [--json] [--out FILE]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
import reports  # noqa: E402

from mpinet import rng  # noqa: E402
from mpinet.routing import ROUTERS, make_router  # noqa: E402
from mpinet.routing.base import HopContext  # noqa: E402
from mpinet.topology import from_spec  # noqa: E402

INSTANCES = {
    "star": "star:9",
    "scc": "scc:8",
    "ms": "ms:3,3",
    "fccn": "fccn:5",
    "borel": "borel:307,4,2,16",
    "hypercube": "hypercube:20",
    "ccc": "ccc:12",
    "ims": "ims:2,3,3",
    "cms": "cms:2,3,3",
    "mesh": "mesh:32,4",
    "torus": "torus:32,4",
}
SHORTEST_ON = ["scc:8", "ms:3,3", "borel:307,4,2,16", "ccc:12"]
SLOW = {"scc-optimal": 20_000}


def bench(spec: str, name: str, m: int, repeat: int, **opts) -> tuple[float, float | None, float]:
    topo = from_spec(spec)
    t0 = time.perf_counter()
    router = make_router(name, topo, **opts)
    ids = np.arange(m, dtype=np.int64)
    src = rng.integers(1, ids, topo.num_nodes, stream=5)
    d = rng.integers(1, ids, topo.num_nodes - 1, stream=6)
    dst = d + (d >= src)
    warm = router.init_headers(src[:8], dst[:8])
    router.next_port(src[:8], dst[:8], warm, HopContext(0, ids[:8], ids[:8] * 0))
    setup = time.perf_counter() - t0
    best_init = best_hop = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        hdr = router.init_headers(src, dst)
        best_init = min(best_init, time.perf_counter() - t0)
        ctx = HopContext(0, ids, np.zeros(m, dtype=np.int64), seed=1)
        t0 = time.perf_counter()
        router.next_port(src, dst, hdr, ctx)
        best_hop = min(best_hop, time.perf_counter() - t0)
    init = None if router.header_width == 0 else m / best_init
    return setup, init, m / best_hop


def main(argv: list[str] | None = None) -> int:
    ap = reports.arguments(__doc__, out_help="also write the table to FILE", json_rows=True)
    ap.add_argument("--packets", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    run = reports.Run(__file__, args, args.out)
    if not args.json:
        run.emit("| router | network | table setup s | init_headers M/s | "
                 "next_port M decisions/s |")  # fmt: skip
        run.emit("|---|---|---|---|---|")
    rows = [("shortest", spec) for spec in SHORTEST_ON]
    for name, cls in ROUTERS.items():
        if name == "shortest":
            continue
        for fam in cls.families:
            rows.append((name, INSTANCES[fam]))
    for name, spec in rows:
        m = min(args.packets, SLOW.get(name, args.packets))
        variants = [{}]
        if name == "borel-cr":
            variants = [{"lookahead": d} for d in (1, 2, 3, 4)]
        for opts in variants:
            label = name + "".join(f" {k}={v}" for k, v in opts.items())
            run.progress(f"{label} on {spec}")
            setup, init, hop = bench(spec, name, m, args.repeat, **opts)
            if args.json:
                run.emit(json.dumps({"router": label, "spec": spec, "packets": m,
                                     "setup_seconds": setup, "init_headers_per_second": init,
                                     "next_port_per_second": hop}))  # fmt: skip
                continue
            run.emit(f"| {label} | {spec} | {setup:.2f} | {init / 1e6:.2f} | {hop / 1e6:.1f} |")
    run.save(args.out, argv or sys.argv[1:], args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
