"""``mpinet warmup``: compile every engine's kernels once, into numba's cache."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mpinet.cli import get_comm

HELP = """\
Compile the engines' kernels now, so that the first real run does not: numba
compiles each kernel at its first call and keeps it in its cache (beside the
package, or in $NUMBA_CACHE_DIR), and `mpinet run` reports compilation apart
from engine time. warmup runs one tiny job on each engine path (the packet
engine's calendar, link queues and buffers, the collective engine, the flit
engine, the routers whose hop compiles apart) on one process, a line each.
Run it once after installing or upgrading; a second warmup compiles nothing.
--only keeps the jobs whose line contains one of its words, for a user of one
engine (the whole warmup takes minutes; the packet engine's jobs, seconds).
The multi-rank paths (the flit engine's and the iq router's blocks, which call
MPI from compiled code) compile only on more than one rank: under
`mpiexec -n 2 mpinet warmup` the ranks then run those jobs too, a line each.

examples:
  mpinet warmup
  mpiexec -n 2 mpinet warmup
  mpinet warmup --only packet,collective
  NUMBA_CACHE_DIR=~/.cache/mpinet mpinet warmup
"""

#: unicast traffic of the tiny jobs
_UNI = {"workload.kind": "uniform", "workload.packets": 2, "router.name": "shortest"}
#: BookSim's traffic as `mpinet booksim` maps it: a rate drawn per node and step
_BERNOULLI = {"workload.kind": "booksim-uniform", "workload.injection": "bernoulli",
              "workload.rate": 0.2, "workload.steps": 16, "router.name": "shortest"}  # fmt: skip
#: (what, job keys) of the tiny jobs, one per engine path (docs/commands.md#mpinet-warmup)
JOBS: list[tuple[str, dict[str, Any]]] = [
    ("packet engine, departure calendar", _UNI),
    ("packet engine, link queues", {**_UNI, "model.queues": "links"}),
    ("packet engine, finite buffers", {**_UNI, "model.buffer": 2, "model.buffer_classes": "hops"}),
    ("collective engine (broadcast)", {"workload.kind": "broadcast"}),
    ("flit engine (wormhole, 2 VCs)",
     {**_UNI, "model.switching": "wormhole", "model.flits": 4, "model.vcs": 2}),
    ("flit engine (cut-through)", {**_UNI, "model.switching": "cut-through", "model.flits": 2}),
    # a rank's state past the caches: the prefetching kernels ({big}: the hypercube with
    # layout.PREFETCH_MIN VC buffers on one process, :func:`big_hypercube`)
    ("flit engine, a large network (prefetching kernels)",
     {**_UNI, "topology": "{big}", "workload.packets": 1, "model.switching": "wormhole",
      "model.flits": 4, "model.vcs": 2}),
    # BookSim's traffic: a rate's Bernoulli draws are compiled apart (rng._grid_below)
    ("flit engine, BookSim's iq router",
     {**_BERNOULLI, "model.switching": "wormhole", "model.flits": 2, "model.router": "iq"}),
    # the lean path's other compiled blocks (iq_lean_mode.block_for): speculation and output
    # speedup; VC rows past iq_lean_mode.FAR (the prefetches: {big}, 2 VCs of 8)
    ("flit engine, BookSim's iq router (speculation, output speedup)",
     {**_BERNOULLI, "model.switching": "wormhole", "model.flits": 2, "model.router": "iq",
      "model.iq.speculative": 1, "model.iq.output_speedup": 2}),
    ("flit engine, BookSim's iq router on a hypercube past 1 MB of VCs (prefetches)",
     {**_BERNOULLI, "topology": "{big}", "workload.steps": 2, "model.switching": "wormhole",
      "model.flits": 2, "model.vcs": 2, "model.vc_buffer": 8, "model.router": "iq"}),
    # BookSim's separable allocators (its examples' anynet, fattree, dragonfly, single): the
    # lean kernel's copy with their code (iq_lean_mode.mode's separable bit, 20-30 s a copy)
    ("flit engine, BookSim's iq router (separable allocators)",
     {**_BERNOULLI, "model.switching": "wormhole", "model.flits": 2, "model.router": "iq",
      "model.iq.vc_allocator": "separable_input_first",
      "model.iq.sw_allocator": "separable_input_first"}),
    # stages of several cycles (a deeper router's pipeline): the lean kernel's deep copy
    # (iq_lean_mode.mode's deep bit, 20-30 s; docs/iq-router.md "Session 22")
    ("flit engine, BookSim's iq router (stages of several cycles)",
     {**_BERNOULLI, "model.switching": "wormhole", "model.flits": 2, "model.router": "iq",
      "model.iq.vc_alloc_delay": 2, "model.iq.sw_alloc_delay": 2}),
    # internal speedup: the lean kernel's speedup copy (iq_lean_mode.mode's spd bit, with the deep
    # and separable code; docs/iq-router.md "Session 23")
    ("flit engine, BookSim's iq router (internal speedup)",
     {**_BERNOULLI, "model.switching": "wormhole", "model.flits": 2, "model.router": "iq",
      "model.iq.internal_speedup": 2}),
    # the iq router's general path: keys the lean path does not take (iq_lean_run.why_not_lean:
    # packets of over 64 flits)
    ("flit engine, BookSim's iq router (general path)",
     {**_BERNOULLI, "model.switching": "wormhole", "model.flits": 65, "model.router": "iq"}),
    # a VC rule with no compiled form (the torus' dateline classes) runs step by step
    ("flit engine, step by step (torus dateline)",
     {**_UNI, "topology": "torus:4,2", "router.name": "dor", "model.switching": "wormhole",
      "model.flits": 2, "model.vcs": 2, "model.vc_policy": "dateline"}),
    # routers whose hop is compiled apart from the engines' kernels
    ("router dor on torus:4,2", {**_UNI, "topology": "torus:4,2", "router.name": "dor"}),
    ("router fccn-shortest on fccn:2",
     {**_UNI, "topology": "fccn:2", "router.name": "fccn-shortest"}),
    # a network file's graph kernels and anynet's route tables (BookSim's anynet files)
    ("network file (anynet), router anynet-min",
     {**_UNI, "topology": "file:anynet:{ring}", "router.name": "anynet-min"}),
]  # fmt: skip
#: the network file of the anynet job (``{ring}``): a ring of 4 routers, a node on each
RING = "".join(f"router {r} node {r} router {(r + 1) % 4} router {(r + 3) % 4}\n"
               for r in range(4))  # fmt: skip
#: the jobs whose kernels compile only on more than one rank (every rank runs them)
RANK_JOBS: list[tuple[str, dict[str, Any]]] = [
    ("flit engine on ranks (wormhole, 2 VCs)",
     {**_UNI, "model.switching": "wormhole", "model.flits": 4, "model.vcs": 2}),
    ("flit engine on ranks, BookSim's iq router",
     {**_BERNOULLI, "model.switching": "wormhole", "model.flits": 2, "model.router": "iq"}),
    # each rank's state past the caches: the prefetching kernels on ranks ({big}: a
    # hypercube with layout.PREFETCH_MIN VC buffers a rank, :func:`big_hypercube`)
    ("flit engine on ranks, a large network (prefetching kernels)",
     {**_UNI, "topology": "{big}", "workload.packets": 1, "model.switching": "wormhole",
      "model.flits": 4, "model.vcs": 2}),
]  # fmt: skip
BASE = {"topology": "star:4", "trace.level": "none"}


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "warmup",
        help="compile every engine's kernels into numba's cache (once per installation)",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--quiet", action="store_true", help="no line per engine path")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--only", metavar="WORDS", default="",
                   help="only the jobs whose line contains one of these words (comma-separated, "
                   "any case), e.g. packet, flit, iq router, network file")  # fmt: skip
    p.set_defaults(func=run, compile_notice=False)  # its own line per path says it


def chosen(only: str = "", ranks: bool = False) -> list[tuple[str, dict[str, Any]]]:
    """:data:`JOBS` (``ranks``: :data:`RANK_JOBS`) whose line contains one of the
    comma-separated words of ``only`` (any case; empty: all)."""
    jobs = RANK_JOBS if ranks else JOBS
    words = [w.strip().lower() for w in only.split(",") if w.strip()]
    return [j for j in jobs if not words or any(w in j[0].lower() for w in words)]


def warm(say: Any = None, comm: Any = None, only: str = "") -> list[dict]:
    """Run :data:`JOBS` on one process (``comm`` None), or :data:`RANK_JOBS` on every rank
    of ``comm`` (collective; ``say`` on rank 0), those :func:`chosen` by ``only``; per job
    what it compiled and in how long (the most of any rank)."""
    jobs = chosen(only, comm is not None)
    size = 1 if comm is None else comm.Get_size()
    out = []
    with tempfile.TemporaryDirectory(prefix="mpinet-warmup-") as tmp:
        ring = Path(tmp, "ring4.anynet")
        ring.write_text(RING)
        for i, (what, keys) in enumerate(jobs, 1):
            if say is not None:
                say(f"[mpinet] warmup {i}/{len(jobs)}: {what} ...")
            keys = {k: v.format(ring=ring, big=big_hypercube(size)) if isinstance(v, str) else v
                    for k, v in keys.items()}  # fmt: skip
            out.append(_one(what, keys, size, comm, say))
    return out


def big_hypercube(size: int, vcs: int = 2) -> str:
    """The smallest hypercube (dimension 11 or more) whose ``vcs`` VC buffers a link give
    each of ``size`` ranks at least ``layout.PREFETCH_MIN`` of them: a job on it compiles
    the prefetching kernels (``Params.far``), which a tiny network never reaches."""
    from mpinet.engine.flit.layout import PREFETCH_MIN

    d = 11
    while (1 << d) * d * vcs // size < PREFETCH_MIN:
        d += 1
    return f"hypercube:{d}"


def _one(what: str, keys: dict, size: int, comm: Any, say: Any) -> dict:
    """One tiny job of :func:`warm`: what it compiled (the most of any rank)."""
    from mpinet.engine.comm import SerialComm, max_op
    from mpinet.engine.compile_clock import CompileClock
    from mpinet.jobs import load_job
    from mpinet.jobs.execute import execute, plan

    sets = [(k.split("."), v) for k, v in {**BASE, **keys}.items()]
    t0 = time.perf_counter()
    with CompileClock() as clock:
        p = plan(load_job(None, sets), ranks=size)
        result = execute(p, SerialComm() if comm is None else comm)
    ok = bool(result["stats"].get("ok", result["stats"].get("complete")))
    row = {"path": what, "compile_seconds": clock.seconds, "kernels": len(clock.kernels),
           "seconds": time.perf_counter() - t0, "ok": ok}  # fmt: skip
    if comm is not None:  # the slowest rank's figures (each rank compiles its own)
        fails = comm.allreduce(int(not ok), op=max_op())
        row = {k: comm.allreduce(row[k], op=max_op())
               for k in ("compile_seconds", "kernels", "seconds")}  # fmt: skip
        row = {"path": what, **row, "ok": not fails, "ranks": size}
    row["compile_seconds"], row["seconds"] = (round(row["compile_seconds"], 3),
                                              round(row["seconds"], 3))  # fmt: skip
    if say is not None:
        n, sec = row["kernels"], row["compile_seconds"]
        say(f" {n} kernel(s) compiled in {sec:.1f} s\n" if n else " cached\n")
    return row


def run(args: argparse.Namespace) -> int:
    comm = get_comm()
    rank0 = comm.Get_rank() == 0
    quiet = args.quiet or args.json
    if not chosen(args.only) and not (comm.Get_size() > 1 and chosen(args.only, True)):
        from mpinet.errors import JobError

        raise JobError(f"--only {args.only!r}: no warmup job's line contains one of these words "
                       "(e.g. packet, collective, flit, iq router, network file)")  # fmt: skip

    def say(text: str) -> None:
        sys.stderr.write(text)
        sys.stderr.flush()

    done: list[dict] = []
    try:  # one process fills the cache every rank reads
        if rank0:
            done = warm(None if quiet else say, only=args.only)
    finally:
        if comm.Get_size() > 1:
            comm.Barrier()
    if comm.Get_size() > 1:  # then the paths that need ranks, on all of them (collective)
        done += warm(None if quiet or not rank0 else say, comm, args.only)
    if not rank0:
        return 0
    total = sum(d["compile_seconds"] for d in done)
    if args.json:
        from mpinet.values import json_text

        sys.stdout.write(json_text({"paths": done, "compile_seconds": round(total, 3),
                                    "ranks": comm.Get_size()}) + "\n")  # fmt: skip
    else:
        n = sum(d["kernels"] for d in done)
        what = f"{n} kernel(s) compiled in {total:.1f} s" if n else "nothing left to compile"
        sys.stdout.write(f"warmup: {what}; {_where()}\n")
        if comm.Get_size() == 1:
            sys.stdout.write("warmup: the multi-rank paths compile on their first run on ranks, "
                             "or now under `mpiexec -n 2 mpinet warmup`\n")  # fmt: skip
    return 0 if all(d["ok"] for d in done) else 1


def _where() -> str:
    """Where numba keeps the compiled kernels."""
    from numba.core.config import CACHE_DIR

    return f"cached in {CACHE_DIR}" if CACHE_DIR else "cached beside the package's sources"
