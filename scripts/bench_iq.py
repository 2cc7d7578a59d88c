#!/usr/bin/env python3
"""The iq router's speed against the ideal router's (issue 35; docs/performance.md).

Each case runs the flit engine on one rank with ``model.router = "ideal"`` and ``"iq"``
(the same network, router, switching keys and Bernoulli traffic), one warm-up run each,
then ``ROUNDS`` alternated runs; printed: the engine's CPU seconds (``time.process_time``
around ``FlitEngine.run``, worst-best), iq / ideal (best over best) and a hash of the iq
run's packets, counters and link loads (equal before and after a change that must not
change results).

    python scripts/bench_iq.py [--rounds 3] [--cases mesh8,hc8] [--iq-only] [--split]

``--split``: also the iq run's CPU time in its compiled blocks (either path's ``run_block``)
and in drawing the injections (``iq_blocks.injections``), the rest being the Python around
them (docs/iq-router.md, "Session 18: the lean path").
"""

from __future__ import annotations

import hashlib
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import reports  # noqa: E402

from mpinet.engine.flit.engine import FlitEngine  # noqa: E402
from mpinet.engine.iq_config import IQConfig  # noqa: E402
from mpinet.engine.models import parse_model  # noqa: E402
from mpinet.routing import make_router  # noqa: E402
from mpinet.routing.vc_policies import make_vc_policy  # noqa: E402
from mpinet.topology import from_spec  # noqa: E402
from mpinet.workloads import Unicast  # noqa: E402

MESHC = {"routing_delay": 0, "credit_delay": 2, "wait_for_tail_credit": 1}  # meshconfig's
#: BookSim2's examples/mesh88_lat: islip, input speedup 2, 8 VCs of 8 flits, light load
MESH88 = dict(MESHC, vc_allocator="islip", sw_allocator="islip", input_speedup=2)
#: BookSim2's other examples' allocators (anynet_config, fattree_config, ...) on meshconfig's keys
SIF = dict(MESHC, vc_allocator="separable_input_first", sw_allocator="separable_input_first")
#: a deeper router (stages of two cycles, as papers model them) on meshconfig's other keys;
#: BookSim2 itself stops on an assertion with either allocation longer than a cycle
DEEP = dict(MESHC, routing_delay=2, vc_alloc_delay=2, sw_alloc_delay=2, st_final_delay=2)
#: the stages of several cycles BookSim2 runs: routing and the crossbar's two halves
BSDEEP = dict(MESHC, routing_delay=2, st_prepare_delay=1, st_final_delay=2)
#: name: spec, router, flits, VCs, VC buffer, VC policy, packets per node per step, steps,
#: [model.iq] keys[, traffic pattern (uniform)]
CASES = {
    "mesh8-0.2": ("mesh:8,2", "dor", 1, 16, 8, "any", 0.2, 6000, MESHC),
    "mesh8-0.4": ("mesh:8,2", "dor", 1, 16, 8, "any", 0.4, 4000, MESHC),
    "mesh8-0.02": ("mesh:8,2", "dor", 1, 16, 8, "any", 0.02, 6000, MESHC),
    "ms32-L16": ("ms:3,2", "anynet-min", 16, 2, 4, "any", 0.006, 2000, {}),
    "hc8-L16": ("hypercube:8", "anynet-min", 16, 2, 4, "any", 0.0029, 3000, {}),
    "mesh4-osp2": ("mesh:4,2", "dor", 4, 4, 4, "any", 0.15, 3000,
                   dict(MESHC, output_speedup=2, speculative=1)),
    "torus8-L4": ("torus:8,2", "dor", 4, 4, 4, "dateline", 0.05, 3000, {"channel_latency": 2}),
    "mesh88-lat": ("mesh:8,2", "dor", 20, 8, 8, "any", 0.005, 8000, MESH88, "booksim-transpose"),
    # (named apart from mesh8-* and ms32-*: --cases picks by substring; sif-ms3 deadlocks at 0.006)
    "sif-m8-0.4": ("mesh:8,2", "dor", 1, 16, 8, "any", 0.4, 4000, SIF),
    "sif-ms3-0.004": ("ms:3,2", "anynet-min", 16, 2, 4, "any", 0.004, 2000, SIF),
    "deep-m8-0.2": ("mesh:8,2", "dor", 1, 16, 8, "any", 0.2, 6000, DEEP),
    # internal speedup 2 (named apart: "isp" is in no other case's name)
    "isp2-m8-0.3": ("mesh:8,2", "dor", 1, 16, 8, "any", 0.3, 6000, dict(MESHC, internal_speedup=2)),
    # (packets of 4 flits; not picked by --cases deep-m8)
    "deepL4-m8-0.05": ("mesh:8,2", "dor", 4, 16, 8, "any", 0.05, 4000, DEEP),
    # deep-m8-0.2 with output speedup 2 (session 24; not picked by --cases deep-m8 or osp2)
    "deeposp-m8-0.2": ("mesh:8,2", "dor", 1, 16, 8, "any", 0.2, 6000, dict(DEEP, output_speedup=2)),
    # DEEP's keys with internal speedup 2 (not picked by --cases deep-m8 or isp2)
    "spdeep2-m8-0.2": ("mesh:8,2", "dor", 1, 16, 8, "any", 0.2, 6000,
                       dict(DEEP, internal_speedup=2)),
    # the stages BookSim2 runs longer than a cycle (not picked by --cases deep-m8)
    "bsdeep-m8-0.2": ("mesh:8,2", "dor", 1, 16, 8, "any", 0.2, 6000, BSDEEP),
    "bsdeepL4-m8-0.05": ("mesh:8,2", "dor", 4, 16, 8, "any", 0.05, 4000, BSDEEP),
}  # fmt: skip


def once(case: str, router_model: str) -> tuple[float, str]:
    """One run: (engine CPU seconds, hash of the results)."""
    spec, rname, fl, vcs, vb, pol, rate, steps, keys, *pat = CASES[case]
    topo = from_spec(spec)
    m = parse_model("all-port", dict.fromkeys(topo.port_classes, 1))
    m = replace(m, flit=True, switching="wormhole", flits=fl, vcs=vcs, vc_buffer=vb,
                vc_policy=pol, router=router_model, iq=IQConfig(**keys))  # fmt: skip
    router = make_router(rname, topo)
    w = Unicast(
        topo, pat[0] if pat else "uniform", injection="bernoulli", rate=rate, steps=steps, seed=3
    )
    eng = FlitEngine(topo, router, m, make_vc_policy(pol, topo, vcs), seed=3,
                     max_steps=20 * steps)  # fmt: skip
    t0 = time.process_time()
    rec = eng.run(w)
    dt = time.process_time() - t0
    pk = rec.packets[np.lexsort((rec.packets[:, 0],))]
    h = hashlib.sha1(np.ascontiguousarray(pk).tobytes() + rec.counters.tobytes()
                     + rec.link_load.tobytes()).hexdigest()[:12]  # fmt: skip
    return dt, h


SPLIT = {"block": 0.0, "calls": 0, "inj": 0.0}


def _split() -> None:
    """Time the iq run's compiled blocks and injections into :data:`SPLIT`."""
    from mpinet.engine.flit import iq_blocks, iq_lean, iq_step

    def wrap(mod, attr, key):
        f = getattr(mod, attr)

        def timed(*args, **kw):
            t0 = time.process_time()
            try:
                return f(*args, **kw)
            finally:
                SPLIT[key] += time.process_time() - t0
                SPLIT["calls"] += key == "block"

        setattr(mod, attr, timed)

    wrap(iq_lean, "run_block", "block")
    wrap(iq_step, "run_block", "block")
    wrap(iq_blocks, "injections", "inj")


def main(argv: list[str] | None = None) -> int:
    ap = reports.arguments(__doc__, out_help="also write the lines to FILE")
    ap.add_argument("--rounds", type=int, default=3, help="alternated runs per case (3)")
    ap.add_argument("--cases", default="", help="cases whose name contains one of these "
                    f"(comma-separated; all: {', '.join(CASES)})")  # fmt: skip
    ap.add_argument("--iq-only", action="store_true", help="time the iq router alone")
    ap.add_argument("--split", action="store_true",
                    help="also iq's time in its compiled blocks and injections")  # fmt: skip
    a = ap.parse_args(argv)
    if a.split:
        _split()
    run = reports.Run(__file__, a, a.out)
    pick = [c for c in a.cases.split(",") if c]
    models = ["iq"] if a.iq_only else ["ideal", "iq"]
    for case in CASES:
        if pick and not any(p in case for p in pick):
            continue
        run.progress(case)
        for mdl in models:
            once(case, mdl)  # the kernels loaded
        res: dict[str, list[float]] = {m: [] for m in models}
        h, best = "", ""
        for _ in range(a.rounds):
            for mdl in models:
                SPLIT.update(block=0.0, calls=0, inj=0.0)
                dt, hh = once(case, mdl)
                res[mdl].append(dt)
                h = hh if mdl == "iq" else h
                if a.split and mdl == "iq" and dt <= min(res["iq"]):
                    best = (f", iq's best: blocks {SPLIT['block']:.3f} s in {SPLIT['calls']} "
                            f"calls, injections {SPLIT['inj']:.3f} s")  # fmt: skip
        cells = " ".join(f"{m} {min(v):.3f}-{max(v):.3f} s" for m, v in res.items())
        ratio = f", iq / ideal {min(res['iq']) / min(res['ideal']):.2f}" if len(models) > 1 else ""
        run.emit(f"{case}: {cells}{ratio}, iq hash {h}{best}")
    run.save(a.out, sys.argv[1:] if argv is None else argv)
    return run.finish()


if __name__ == "__main__":
    sys.exit(main())
