#!/usr/bin/env python3
"""The flit engine's port models against ``all-port`` (issue 33; docs/performance.md).

The port-model run of the Today table: ms:3,2 ``shortest``, wormhole L = 16, V = 2, B = 4,
Bernoulli at ``--rate`` (0.003) for 2,000 steps, one rank. Each round runs every port model
of ``--kinds`` in a process of its own, in turn, on every tree of ``--trees`` (an A/B of a
branch against main: ``--trees main=/tmp/base,branch=/work/wt``; each tree's ``mpinet/`` is
imported by ``PYTHONPATH``). A process times ``--best`` runs of ``FlitEngine.run`` by
``time.process_time`` after one warm-up run and prints the best, with a hash of the run's
packet rows, link loads and counters (equal on every tree when a change must not change
results). Printed per kind and tree: seconds (worst-best over the rounds), the ratio to
``all-port`` of the same tree (per round, best over best) and the hashes.

    python scripts/bench_ports.py [--rounds 3] [--kinds all-port,one-port] [--trees A=DIR,B=DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# reports is imported in main(), never by a child: reports puts this repository first on
# sys.path and imports its mpinet, so a child on another tree ran this one's (session 13)

KINDS = ("all-port", "k-port:2", "one-port", "sdc")
#: the run's keys beside model.kind (docs/performance.md, "One-port and sdc in session 6")
SETS = {
    "router.name": "shortest", "model.switching": "wormhole", "model.flits": 16,
    "model.vcs": 2, "model.vc_buffer": 4, "workload.injection": "bernoulli",
    "workload.steps": 2000,
}  # fmt: skip


def child(kind: str, rate: float, best: int, spec: str) -> dict:
    """Time the run in this process: {seconds (best), hash, flit_hops}."""
    import numpy as np

    import mpinet
    from mpinet.jobs.run_plan import plan
    from mpinet.jobs.spec import load_job
    from mpinet.jobs.switching import make_engine

    tree = os.environ.get("PYTHONPATH", "").split(os.pathsep)[0]
    mods = [m for n, m in sys.modules.items() if n.split(".")[0] == "mpinet"]
    if tree and not all(Path(m.__file__).resolve().is_relative_to(Path(tree).resolve())
                        for m in mods if getattr(m, "__file__", None)):  # fmt: skip
        sys.exit(f"bench_ports: the child imported {mpinet.__file__}, not {tree}'s mpinet")
    sets = [(["topology"], spec), (["model", "kind"], kind), (["workload", "rate"], rate)]
    sets += [(k.split("."), v) for k, v in SETS.items()]
    p = plan(load_job(None, sets), ranks=1)
    times, h, hops = [], "", 0
    for _ in range(best + 1):  # the first loads the kernels
        eng = make_engine(p, None, seed=p.job.seed, max_steps=100_000, record_hops=False,
                          progress=None)  # fmt: skip
        t0 = time.process_time()
        rec = eng.run(p.workload.traffic)
        times.append(time.process_time() - t0)
        pk = rec.packets[np.lexsort((rec.packets[:, 0],))]
        h = hashlib.sha1(np.ascontiguousarray(pk).tobytes() + rec.counters.tobytes()
                         + rec.link_load.tobytes()).hexdigest()[:12]  # fmt: skip
        hops = int(rec.link_load.sum())
    return {"seconds": min(times[1:]), "hash": h, "flit_hops": hops}


def run_child(tree: str, kind: str, a) -> dict:
    """One process on ``tree``: the child's dict."""
    env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()))
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", kind, "--rate",
            str(a.rate), "--best", str(a.best), "--spec", a.spec]  # fmt: skip
    out = subprocess.run(argv, env=env, cwd="/", capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"bench_ports: {kind} on {tree} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    kid = argparse.ArgumentParser(add_help=False)  # a child's arguments, before reports
    for name, typ in (("--child", str), ("--rate", float), ("--best", int), ("--spec", str)):
        kid.add_argument(name, type=typ)
    c, _ = kid.parse_known_args(argv)
    if c.child:
        print(json.dumps(child(c.child, c.rate, c.best, c.spec)))
        return 0
    import reports

    ap = reports.arguments(__doc__, out_help="also write the lines to FILE")
    ap.add_argument("--rounds", type=int, default=3, help="alternated rounds (3)")
    ap.add_argument("--best", type=int, default=2, help="timed runs per process, best kept (2)")
    ap.add_argument("--kinds", default=",".join(KINDS), help="port models (all of them)")
    ap.add_argument("--rate", type=float, default=0.003, help="Bernoulli rate (0.003)")
    ap.add_argument("--spec", default="ms:3,2", help="network (ms:3,2)")
    ap.add_argument(
        "--trees",
        default=f"this={HERE.parent}",
        help="NAME=DIR,... checkouts whose mpinet/ each process imports (this one)",
    )
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    kinds = [k for k in a.kinds.split(",") if k]
    if "all-port" not in kinds:
        kinds.insert(0, "all-port")
    trees = dict(t.split("=", 1) for t in a.trees.split(",") if t)
    run = reports.Run(__file__, a, a.out)
    res: dict = {(t, k): [] for t in trees for k in kinds}
    for r in range(a.rounds):
        for k in kinds:
            for t, d in trees.items():
                run.progress(f"round {r + 1}: {k} on {t}")
                res[t, k].append(run_child(d, k, a))
    for t in trees:
        base = [x["seconds"] for x in res[t, "all-port"]]
        for k in kinds:
            s = [x["seconds"] for x in res[t, k]]
            ratios = [x / b for x, b in zip(s, base, strict=True)]
            hashes = sorted({x["hash"] for x in res[t, k]})
            rate = res[t, k][0]["flit_hops"] / min(s) / 1e6
            x = f"x all-port {min(ratios):.2f}-{max(ratios):.2f}"
            run.emit(f"{t} {k}: {min(s):.3f}-{max(s):.3f} s ({rate:.1f} M flit-hops/s), {x}, "
                     f"hash {' '.join(hashes)}")  # fmt: skip
    run.save(a.out, sys.argv[1:] if argv is None else argv)
    return run.finish()


if __name__ == "__main__":
    sys.exit(main())
