"""``mpinet bench``: engine throughput in packet-hops per second per rank."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from mpinet.cli import agree, collective, get_comm
from mpinet.jobs.spec import key_arg
from mpinet.values import Range, arg, json_text

HELP = """\
Measure the engine: uniform traffic (P packets per node to random
destinations, all-port) on each network, under the current MPI job, the best
of --repeat runs of the whole job (steps, end-of-run checks, summary trace);
router tables are built before timing. SPEC@ROUTER names a router; --packets
takes a list (a backlog sweep); --phases splits a step into compute, exchange
and waiting. More in docs/commands.md; results in docs/performance.md.

examples:
  mpinet bench
  mpiexec -n 2 mpinet bench --specs ms:3,2 --packets 1,8,64 --json
  mpiexec -n 2 mpinet bench --specs "ms:3,3;fccn:6@fccn-shortest" --repeat 1
  mpinet bench --specs ms:3,2 --phases --set model.switching=wormhole
"""

DEFAULT_SPECS = "scc:7;ms:3,2;fccn:4"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="engine throughput (packet-hops per second per rank)",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--specs", default=DEFAULT_SPECS, help=f"';'-separated specs ({DEFAULT_SPECS})")
    p.add_argument(
        "--packets", default="8", help="packets per node, or a comma list for a backlog sweep (8)"
    )
    p.add_argument(
        "--repeat",
        type=arg(Range(1, 1000, integer=True)),
        default=3,
        help="runs per network; the best counts (3)",
    )
    p.add_argument("--trace", choices=["none", "summary"], default="summary", help="trace level")
    p.add_argument(
        "--buffer",
        type=key_arg("model.buffer"),
        default=0,
        metavar="B",
        help="slots per input port (0 = unbounded, the default); compare B large enough "
        "not to block with 0 to see what flow control costs",
    )
    p.add_argument(
        "--model", default="all-port", help="all-port | one-port | k-port:K | sdc (all-port)"
    )
    p.add_argument(
        "--queues",
        choices=["auto", "links", "calendar"],
        default="auto",
        help="how the engine queues packets: auto (the departure calendar where it applies: "
        "all-port, unbounded, fifo), links (per-link queues), calendar; same answers (auto)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any job key, e.g. --set model.switching=wormhole --set model.flits=16 (the flit "
        "engine; docs/switching.md), or --set workload.injection=bernoulli with "
        "workload.rate and workload.steps instead of --packets (repeatable)",
    )
    p.add_argument(
        "--phases",
        action="store_true",
        help="time the engine alone and split a step into compute, exchange and waiting",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per network")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mpinet.errors import SpecError
    from mpinet.jobs import load_job, parse_set
    from mpinet.jobs.netcheck import same_network
    from mpinet.jobs.run_plan import plan
    from mpinet.outputs import scratch_dir

    comm = get_comm()
    try:
        packets_list = [int(x) for x in str(args.packets).split(",") if x.strip()]
    except ValueError:
        msg = f"--packets takes whole numbers separated by commas, got {args.packets!r}"
        raise SpecError(msg) from None
    if not packets_list or min(packets_list) < 1:
        raise SpecError(f"--packets must be >= 1, got {args.packets!r}")
    if args.repeat < 1:  # it used to run once anyway
        raise SpecError(f"--repeat must be >= 1, got {args.repeat}")
    scratch = scratch_dir(comm, prefix="mpinet-bench-")  # removed on every exit path

    extra = [parse_set(x) for x in args.set]
    bernoulli = any(k == ["workload", "injection"] and v == "bernoulli" for k, v in extra)

    def make_plans():
        plans = []
        for item in [s for s in args.specs.split(";") if s]:
            spec, _, router = item.partition("@")
            for packets in packets_list:
                sets = [
                    (["topology"], spec),
                    (["router", "name"], router or "shortest"),
                    (["trace", "level"], args.trace),
                    (["model", "kind"], args.model),
                ]
                if not bernoulli:
                    sets.append((["workload", "packets"], packets))
                if args.queues != "auto":
                    sets.append((["model", "queues"], args.queues))
                if args.buffer:
                    sets.append((["model", "buffer"], args.buffer))
                sets += extra
                # a trace path from the start: a trace level without one is refused
                out = os.path.join(tmpdir, "bench.h5") if args.trace != "none" else None
                plans.append(plan(load_job(None, sets), out=out, ranks=comm.Get_size()))
        return plans

    tmpdir = scratch.path
    with scratch:  # the traces of the timed runs; removed on every exit, signals included
        plans = agree(comm, make_plans)
        same_network(comm, *(p.topo for p in plans))  # one file on every rank, before any work
        _measure(args, plans, comm, tmpdir)
    return 0


def _measure(args: argparse.Namespace, plans: list, comm: Any, tmpdir: str) -> None:
    """Time every plan (the best of --repeat) and print its row (rank 0)."""
    from mpinet.jobs.execute import execute

    rank0 = comm.Get_rank() == 0
    for i, p in enumerate(plans):
        t0 = time.perf_counter()
        collective(comm, lambda p=p: _warm(p))
        setup = time.perf_counter() - t0
        if args.phases:
            _measure_phases(args, p, comm, setup)
            continue
        best = None
        for r in range(max(1, args.repeat)):
            path = os.path.join(tmpdir, f"bench{i}-{r}.h5") if args.trace != "none" else None
            p.trace_path, p.force = path, True
            comm.Barrier()
            t0 = time.perf_counter()
            res = collective(comm, lambda p=p: execute(p, comm, argv=["mpinet", "bench"]))
            wall = comm.allreduce(time.perf_counter() - t0, op=_max())
            if best is None or wall < best[0]:
                best = (wall, res)
        wall, res = best
        hops = res["stats"]["transmissions"]
        row = {
            "spec": res["spec"],
            "nodes": res["nodes"],
            "ranks": res["ranks"],
            "router": res.get("router"),
            "packets_per_node": p.job.workload["packets"],
            "packets": res["stats"]["injected"],
            "packet_hops": hops,
            "steps": res["stats"]["steps"],
            "setup_seconds": round(setup, 3),
            "engine_seconds": res["engine_seconds"],
            "total_seconds": round(wall, 4),
            "hops_per_second_per_rank": hops / wall / res["ranks"],
            "engine_hops_per_second_per_rank": hops / res["engine_seconds"] / res["ranks"],
            "engine_ns_per_hop": 1e9 * res["engine_seconds"] * res["ranks"] / max(hops, 1),
            "trace": args.trace,
            "model": args.model,
            "buffer": args.buffer,
            "queues": args.queues,
            "cross_rank_fraction": res["stats"]["cross_rank_fraction"],
            # a run that deadlocked (finite buffers) or hit max_steps moved fewer hops: its
            # rate is not comparable with a completed run's, so say so
            "delivered": res["stats"]["delivered"],
            "deadlock": bool(res["stats"].get("deadlock")),
            # the flit engine: its transmissions are flit-hops (docs/switching.md)
            "switching": res.get("switching"),
        }
        unit = "flit-hops" if res.get("switching") else "packet-hops"
        what = f"{row['packets_per_node']:>4}/node"
        if p.job.workload["injection"] == "bernoulli":
            what = f"rate {p.job.workload['rate']}"
        if res.get("switching"):
            sw = res["switching"]
            what += f" {sw['mode']} L={sw['flits']} V={sw['vcs']} B={sw['vc_buffer']}"
        if rank0:
            if args.json:
                print(json_text(row))
            else:
                print(
                    f"{row['spec']:<10} {what} {row['ranks']} rank(s): {hops:,} {unit} in "
                    f"{wall:.3f} s -> {row['hops_per_second_per_rank'] / 1e6:.2f} M/s per rank "
                    f"(engine alone {row['engine_hops_per_second_per_rank'] / 1e6:.2f} M/s; "
                    f"setup {setup:.2f} s; trace {args.trace})"
                )
                if row["delivered"] < row["packets"]:
                    why = "deadlocked" if row["deadlock"] else "stopped at max_steps"
                    print(
                        f"  (not comparable: the run {why} with {row['delivered']:,} of "
                        f"{row['packets']:,} packets delivered)"
                    )
            sys.stdout.flush()
    comm.Barrier()


def _measure_phases(args: argparse.Namespace, p: Any, comm: Any, setup: float) -> None:
    """The best of --repeat engine runs, split into compute, exchange and waiting (rank 0)."""
    from mpinet.cli.bench_phases import run_phases

    best = None
    for _ in range(args.repeat):
        res = collective(comm, lambda p=p: run_phases(p, comm))
        if best is None or res["engine_seconds"] < best["engine_seconds"]:
            best = res
    if comm.Get_rank() != 0:
        return
    steps, ranks = max(best["steps"], 1), comm.Get_size()
    us = {k: 1e6 * sum(best[k]) / ranks / steps for k in ("compute", "exchange", "wait")}
    sw = p.model.flit and {"mode": p.model.switching, "flits": p.model.flits, "vcs": p.model.vcs,
                           "vc_buffer": p.model.vc_buffer}  # fmt: skip
    row = {
        "spec": p.topo.spec, "nodes": p.topo.num_nodes, "ranks": ranks,
        "router": p.router.name, "model": args.model, "switching": sw or None,
        "workload": dict(p.job.workload), "setup_seconds": round(setup, 3), **best,
        "hops_per_second": best["hops"] / best["engine_seconds"],
        "step_us": 1e6 * best["engine_seconds"] / steps,
        **{f"{k}_us_per_step": v for k, v in us.items()},
    }  # fmt: skip
    if args.json:
        print(json_text(row))
    else:
        unit = "flit-hops" if sw else "packet-hops"
        print(
            f"{row['spec']:<10} {ranks} rank(s): {best['hops']:,} {unit} in {steps} steps, "
            f"{best['engine_seconds']:.3f} s engine ({row['hops_per_second'] / 1e6:.2f} M/s); "
            f"per step {row['step_us']:.1f} us = compute {us['compute']:.1f} + exchange "
            f"{us['exchange']:.1f} + waiting {us['wait']:.1f} (mean over ranks)"
        )
    sys.stdout.flush()


def _warm(p) -> None:
    """Build the router's tables and load the engine's compiled kernels outside the timed runs."""
    import numpy as np

    from mpinet.engine.core import Engine
    from mpinet.routing import make_router
    from mpinet.routing.base import HopContext
    from mpinet.topology import from_spec
    from mpinet.workloads import Unicast

    small = from_spec("star:4")
    r = make_router("shortest", small)
    if p.model.flit:  # the flit engine's kernels (any policy compiles the same ones)
        from mpinet.engine.flit.engine import FlitEngine
        from mpinet.routing.vc_policies import make_vc_policy

        pol = make_vc_policy("any", small, p.model.vcs)
        FlitEngine(small, r, p.model, pol).run(Unicast(small, packets=2))
    else:
        Engine(small, r, p.model).run(Unicast(small, packets=2))

    z = np.zeros(1, dtype=np.int64)
    one = np.ones(1, dtype=np.int64) % p.topo.num_nodes
    hdr = p.router.init_headers(z, one)
    p.router.next_port(z, one, hdr, HopContext(step=0, pids=z, hops=z))
    if hasattr(p.router, "distance"):
        p.router.distance(z, one)


def _max():
    from mpinet.engine.comm import max_op

    return max_op()
