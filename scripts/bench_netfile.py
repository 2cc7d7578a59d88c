#!/usr/bin/env python3
"""Benchmarks of networks from files and Cayley specs (docs/performance.md, "Any network").

Three measurements, each printed as a markdown table row:

* ``read``: a 10^6-node, 3x10^6-edge edge list (a ring plus four random half
  matchings, written once under ``--dir``) read on every rank of ``mpiexec -n
  RANKS``: seconds and peak RSS per rank;
* ``info``: ``mpinet info`` on that file with ``--sources K`` and on
  ``pancake:11`` (39.9 M nodes) under ``mpiexec -n RANKS``: wall seconds, peak RSS;
* ``run``: a run on ``ms:3,2`` and on its export read back, the router's tables
  built first, engine seconds per hop, alternated ``--reps`` times on one rank.

Usage::

    python scripts/bench_netfile.py [read info run] [--ranks 2] [--sources 4096] [--reps 3]
                                    [--out FILE] [--quiet]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reports  # noqa: E402

BIN = Path(sys.executable).parent
READ = """
import resource, sys, time
from mpi4py import MPI
t = time.perf_counter()
from mpinet.netfile import load_topology
g = load_topology(sys.argv[1])
dt = MPI.COMM_WORLD.allreduce(time.perf_counter() - t, op=MPI.MAX)
rss = MPI.COMM_WORLD.allreduce(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, op=MPI.MAX)
if MPI.COMM_WORLD.Get_rank() == 0:
    print(dt, rss / 1024, g.num_nodes, g.edges)
"""


def big_file(path: Path, n: int = 1_000_000) -> Path:
    """A connected graph of ``n`` nodes and ``3n`` edges, shuffled, one edge per line."""
    if path.exists():
        return path
    rng = np.random.default_rng(1)
    u, v = [np.arange(n)], [(np.arange(n) + 1) % n]
    for _ in range(4):
        p = rng.permutation(n)
        u.append(p[: n // 2])
        v.append(p[n // 2 : 2 * (n // 2)])
    a, b = np.concatenate(u), np.concatenate(v)
    key = np.unique(np.minimum(a, b) * n + np.maximum(a, b))
    rng.shuffle(key)
    tmp = path.with_suffix(".part")
    with open(tmp, "w") as fh:
        fh.write("# ring plus four random half matchings (scripts/bench_netfile.py)\n")
        for lo in range(0, key.size, 1 << 20):
            k = key[lo : lo + (1 << 20)]
            rows = np.char.add(np.char.add((k // n).astype(str), " "), (k % n).astype(str))
            fh.write("\n".join(rows.tolist()) + "\n")
    os.replace(tmp, path)
    return path


def mpirun(ranks: int, *argv: str) -> tuple[float, str]:
    t = time.perf_counter()
    cmd = [str(BIN / "mpiexec"), "-n", str(ranks), *argv]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - t, out


def bench_read(args: argparse.Namespace, run: reports.Run) -> None:
    run.progress("read: the 10^6-node file (written once)")
    path = big_file(Path(args.dir) / "bench-1M.edges")
    run.emit(f"| read {path.name} ({path.stat().st_size / 2**20:.0f} MiB) | ranks | s | MiB/rank |")
    for i in range(args.reps):
        run.progress(f"read on {args.ranks} rank(s), {i + 1} of {args.reps}")
        _, out = mpirun(args.ranks, sys.executable, "-c", READ, f"file:{path}")
        dt, rss, n, m = out.split()
        run.emit(f"| {int(n):,} nodes, {int(m):,} edges | {args.ranks} | {float(dt):.2f} | "
                 f"{float(rss):.0f} |")  # fmt: skip


def bench_info(args: argparse.Namespace, run: reports.Run) -> None:
    path = big_file(Path(args.dir) / "bench-1M.edges")
    run.emit("| mpinet info | ranks | wall s | BFS s | MiB/rank | result |")
    for spec, extra in ((f"file:{path}", ["--sources", str(args.sources)]), ("pancake:11", [])):
        run.progress(f"mpinet info {spec} on {args.ranks} rank(s)")
        wall, out = mpirun(args.ranks, str(BIN / "mpinet"), "info", spec, "--json", *extra)
        d = json.loads(out)
        what = (
            f"diameter >= {d['diameter_lower_bound']}, avg {d['avg_distance']:.4f} (estimate)"
            if d.get("estimate")
            else f"diameter {d['diameter']}, avg {d['avg_distance']:.4f}"
        )
        name = spec if spec.startswith("pancake") else f"{path.name} --sources {args.sources}"
        run.emit(f"| {name} | {args.ranks} | {wall:.1f} | {d['seconds']:.1f} | "
                 f"{d['peak_rss_mib']:.0f} | {what} |")  # fmt: skip


def bench_run(args: argparse.Namespace, run: reports.Run) -> None:
    import io

    from mpinet.engine.core import Engine
    from mpinet.engine.models import parse_model
    from mpinet.netfile import load_topology
    from mpinet.routing import make_router
    from mpinet.topology import export, from_spec
    from mpinet.workloads import Unicast

    base = from_spec("ms:3,2")
    path = Path(args.dir) / "ms32.edges"
    buf = io.StringIO()
    export.write(base, "edgelist", buf)
    path.write_text(buf.getvalue())
    nets = {"ms:3,2": base, "file (its export)": load_topology(f"file:{path}")}
    run.emit("| network | tie | engine s | hops | ns per hop |")
    for i in range(args.reps):
        for tie in ("first", "random"):
            for name, topo in nets.items():
                run.progress(f"run on {name}, tie {tie}, {i + 1} of {args.reps}")
                router = make_router("shortest", topo, tie=tie)
                router.prepare()  # tables first: the per-hop cost alone
                eng = Engine(topo, router, parse_model("all-port"), None, seed=3)
                rec = eng.run(Unicast(topo, seed=3, pattern="uniform", packets=args.packets))
                hops = int(rec.packets[:, 5].sum())
                run.emit(f"| {name} | {tie} | {rec.seconds:.3f} | {hops:,} | "
                         f"{rec.seconds / hops * 1e9:.0f} |")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = reports.arguments(__doc__, out_help="also write the tables to FILE")
    p.add_argument("what", nargs="*", default=["read", "info", "run"],
                   help="read, info, run (default: all three)")  # fmt: skip
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--sources", type=int, default=4096)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--packets", type=int, default=64)
    p.add_argument("--dir", default="/tmp/mpinet-bench")
    args = p.parse_args(argv)
    run = reports.Run(__file__, args, args.out)
    os.makedirs(args.dir, exist_ok=True)
    for w in args.what:
        {"read": bench_read, "info": bench_info, "run": bench_run}[w](args, run)
    run.save(args.out, argv or sys.argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
