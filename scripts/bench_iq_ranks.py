#!/usr/bin/env python3
"""The iq router on several ranks (issue 35): ``scripts/bench_iq.py``'s cases under
``mpiexec -n R``, iq against ideal, and each on 1 rank against R.

Each configuration (ranks, router, path) runs in its own job: a warm-up run, then
``--inner`` timed runs; the configurations alternate over ``--rounds``. A run's time is
the slowest rank's, CPU (``time.process_time``) and wall (``time.perf_counter``), around
``FlitEngine.run`` after a barrier; the best run of a job is kept. The hash is
``bench_iq.py``'s, of the run gathered over the ranks (the flits that crossed ranks left
out), so a case's hash is the same on every rank count.

    python scripts/bench_iq_ranks.py [--cases ms32-L16,hc8-L16] [--ranks 1,2] [--rounds 2]
        [--inner 3] [--general]

``--general``: iq also on its general path (``eng.iq_lean = False``), beside its default.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import reports  # noqa: E402


def child(case: str, router_model: str, general: bool, inner: int) -> None:
    """One job's runs (under mpiexec or alone): rank 0 prints one JSON line."""
    from dataclasses import replace

    import bench_iq
    from mpi4py import MPI

    from mpinet.engine.flit.engine import FlitEngine
    from mpinet.engine.iq_config import IQConfig
    from mpinet.engine.models import parse_model
    from mpinet.routing import make_router
    from mpinet.routing.vc_policies import make_vc_policy
    from mpinet.topology import from_spec
    from mpinet.workloads import Unicast

    comm = MPI.COMM_WORLD
    spec, rname, fl, vcs, vb, pol, rate, steps, keys, *pat = bench_iq.CASES[case]
    topo = from_spec(spec)
    m = parse_model("all-port", dict.fromkeys(topo.port_classes, 1))
    m = replace(m, flit=True, switching="wormhole", flits=fl, vcs=vcs, vc_buffer=vb,
                vc_policy=pol, router=router_model, iq=IQConfig(**keys))  # fmt: skip
    best, h, path = (np.inf, np.inf), "", ""
    for i in range(inner + 1):  # the first loads the kernels
        w = Unicast(topo, pat[0] if pat else "uniform", injection="bernoulli", rate=rate,
                    steps=steps, seed=3)  # fmt: skip
        eng = FlitEngine(topo, make_router(rname, topo), m, make_vc_policy(pol, topo, vcs),
                         comm, seed=3, max_steps=20 * steps)  # fmt: skip
        if general:
            eng.iq_lean = False
        comm.Barrier()
        c0, w0 = time.process_time(), time.perf_counter()
        rec = eng.run(w)
        mine = np.array([time.process_time() - c0, time.perf_counter() - w0])
        took = np.empty(2)
        comm.Allreduce(mine, took, op=MPI.MAX)
        if i:
            best = (min(best[0], took[0]), min(best[1], took[1]))
        path = getattr(eng, "steps_path", "")
    pks, loads = comm.gather(rec.packets, root=0), comm.gather(rec.link_load, root=0)
    if comm.Get_rank():
        return
    pk, load = np.concatenate(pks), np.concatenate(loads)
    cnt = rec.counters.copy()
    cnt[:, 3] = 0  # the flits that crossed ranks: none on one rank
    pk = pk[np.lexsort((pk[:, 0],))]
    h = hashlib.sha1(np.ascontiguousarray(pk).tobytes() + cnt.tobytes()
                     + load.tobytes()).hexdigest()[:12]  # fmt: skip
    print(json.dumps({"cpu": best[0], "wall": best[1], "hash": h, "path": path}), flush=True)


def job(case: str, ranks: int, mdl: str, general: bool, inner: int) -> dict:
    """One configuration's job, its JSON line."""
    from launcher import launch_prefix

    argv = [*launch_prefix(ranks), sys.executable, __file__, "--child", case, mdl,
            str(int(general)), str(inner)]  # fmt: skip
    out = subprocess.run(argv, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"bench_iq_ranks: {case} {mdl} on {ranks} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        child(argv[1], argv[2], argv[3] == "1", int(argv[4]))
        return 0
    ap = reports.arguments(__doc__, out_help="also write the lines to FILE")
    ap.add_argument(
        "--cases", default="ms32-L16,hc8-L16", help="bench_iq.py's cases (comma-separated)"
    )
    ap.add_argument("--ranks", default="1,2", help="rank counts (comma-separated; 1,2)")
    ap.add_argument("--rounds", type=int, default=2, help="alternated jobs per configuration")
    ap.add_argument("--inner", type=int, default=3, help="timed runs a job (3)")
    ap.add_argument("--general", action="store_true", help="iq's general path too")
    a: argparse.Namespace = ap.parse_args(argv)
    run = reports.Run(__file__, a, a.out)
    ranks = [int(r) for r in a.ranks.split(",")]
    kinds = [("ideal", False), ("iq", False)] + ([("iq", True)] if a.general else [])
    confs = [(r, mdl, g) for r in ranks for mdl, g in kinds]
    for case in a.cases.split(","):
        res: dict = {c: [] for c in confs}
        for k in range(a.rounds):
            for c in confs:
                run.progress(f"{case} round {k + 1}: {c[1]}{' general' if c[2] else ''} on {c[0]}")
                res[c].append(job(case, *c, a.inner))
        for c, got in res.items():
            r, mdl, g = c
            name = f"{mdl}{' (general)' if g else ''} on {r}"
            cpu = [x["cpu"] for x in got]
            wall = [x["wall"] for x in got]
            ideal = min(x["cpu"] for x in res[(r, "ideal", False)])
            one = min(x["cpu"] for x in res.get((1, mdl, g), got))
            run.emit(f"{case}: {name}: cpu {min(cpu):.3f}-{max(cpu):.3f} s, wall "
                     f"{min(wall):.3f}-{max(wall):.3f} s, / ideal {min(cpu) / ideal:.2f}, "
                     f"/ 1 rank {min(cpu) / one:.2f}, hash {got[-1]['hash']}, "
                     f"{got[-1]['path'] or '-'}")  # fmt: skip
    run.save(a.out, argv)
    return run.finish()


if __name__ == "__main__":
    sys.exit(main())
