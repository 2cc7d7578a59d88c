"""``mpinet warmup``: compile every engine's kernels once, into numba's cache."""

from __future__ import annotations

import argparse
import sys
import time
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

examples:
  mpinet warmup
  NUMBA_CACHE_DIR=~/.cache/mpinet mpinet warmup
"""

#: unicast traffic of the tiny jobs
_UNI = {"workload.kind": "uniform", "workload.packets": 2, "router.name": "shortest"}
#: (what, job keys) of the tiny jobs, one per engine path (docs/commands.md#mpinet-warmup)
JOBS: list[tuple[str, dict[str, Any]]] = [
    ("packet engine, departure calendar", _UNI),
    ("packet engine, link queues", {**_UNI, "model.queues": "links"}),
    ("packet engine, finite buffers", {**_UNI, "model.buffer": 2, "model.buffer_classes": "hops"}),
    ("collective engine (broadcast)", {"workload.kind": "broadcast"}),
    ("flit engine (wormhole, 2 VCs)",
     {**_UNI, "model.switching": "wormhole", "model.flits": 4, "model.vcs": 2}),
    ("flit engine (cut-through)", {**_UNI, "model.switching": "cut-through", "model.flits": 2}),
    ("flit engine, BookSim's iq router",
     {**_UNI, "model.switching": "wormhole", "model.flits": 2, "model.router": "iq"}),
    # routers whose hop is compiled apart from the engines' kernels
    ("router dor on torus:4,2", {**_UNI, "topology": "torus:4,2", "router.name": "dor"}),
    ("router fccn-shortest on fccn:2",
     {**_UNI, "topology": "fccn:2", "router.name": "fccn-shortest"}),
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
    p.set_defaults(func=run)


def warm(say: Any = None) -> list[dict]:
    """Run :data:`JOBS` on one process; per job what it compiled and in how long."""
    from mpinet.engine.comm import SerialComm
    from mpinet.engine.compile_clock import CompileClock
    from mpinet.jobs import load_job
    from mpinet.jobs.execute import execute, plan

    out = []
    for i, (what, keys) in enumerate(JOBS, 1):
        if say is not None:
            say(f"[mpinet] warmup {i}/{len(JOBS)}: {what} ...")
        sets = [(k.split("."), v) for k, v in {**BASE, **keys}.items()]
        t0 = time.perf_counter()
        with CompileClock() as clock:
            result = execute(plan(load_job(None, sets)), SerialComm())
        ok = result["stats"].get("ok", result["stats"].get("complete"))
        out.append(
            {
                "path": what,
                "compile_seconds": round(clock.seconds, 3),
                "kernels": len(clock.kernels),
                "seconds": round(time.perf_counter() - t0, 3),
                "ok": bool(ok),
            }
        )
        if say is not None:
            n = len(clock.kernels)
            say(f" {n} kernel(s) compiled in {clock.seconds:.1f} s\n" if n else " cached\n")
    return out


def run(args: argparse.Namespace) -> int:
    comm = get_comm()
    if comm.Get_rank() != 0:  # one process fills the cache every rank reads
        comm.Barrier()
        return 0
    quiet = args.quiet or args.json

    def say(text: str) -> None:
        sys.stderr.write(text)
        sys.stderr.flush()

    try:
        done = warm(None if quiet else say)
    finally:
        if comm.Get_size() > 1:
            comm.Barrier()
    total = sum(d["compile_seconds"] for d in done)
    if args.json:
        from mpinet.values import json_text

        sys.stdout.write(json_text({"paths": done, "compile_seconds": round(total, 3)}) + "\n")
    else:
        n = sum(d["kernels"] for d in done)
        what = f"{n} kernel(s) compiled in {total:.1f} s" if n else "nothing left to compile"
        sys.stdout.write(f"warmup: {what}; {_where()}\n")
    return 0 if all(d["ok"] for d in done) else 1


def _where() -> str:
    """Where numba keeps the compiled kernels."""
    from numba.core.config import CACHE_DIR

    return f"cached in {CACHE_DIR}" if CACHE_DIR else "cached beside the package's sources"
