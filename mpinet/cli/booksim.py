"""``mpinet booksim CFG [key=value ...]``: a BookSim2 configuration, BookSim's statistics."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from typing import Any

from mpinet.cli import agree, collective, get_comm

HELP = """\
Run a BookSim2 configuration file (BookSim's syntax: key = value; lines, //
comments, {a,b} lists) with key=value overrides after it, as BookSim takes
them, and print BookSim's statistics: a block per sample period, the
convergence lines and the "====== Overall Traffic Statistics ======" block,
with BookSim's names and layout, so scripts that read BookSim's output read
this. Networks: topology = mesh | torus (k, n) | anynet (network_file);
routing_function = dor | dim_order | min; BookSim's traffic patterns;
injection_process = bernoulli | on_off; sim_type = latency | throughput with
BookSim's warm-up, sample periods, convergence and latency threshold.

router: BookSim's default, iq (input-queued, its pipeline and allocators), runs
mpinet's model of it (docs/iq-router.md) with BookSim's router keys; router=ideal
runs the flit engine's ideal router (one step per hop), the iq keys listed as not
modeled. Any other key mpinet does not run is refused by name; the keys it treats
differently are listed in docs/booksim.md with the whole key table.

Latency is in engine steps; hops are counted as BookSim counts them (routers
crossed: links + 1). Results are identical on any number of ranks.

example:
  mpinet booksim jobs/booksim/meshconfig
  mpinet booksim tests/data/booksim/mesh44.cfg router=ideal injection_rate=0.1
  mpiexec -n 2 mpinet booksim tests/data/booksim/mesh44.cfg --json
"""


def fmt(x: float) -> str:
    """BookSim's number format (:func:`mpinet.jobs.booksim_measure.fmt`), imported at its
    first use: building this command's parser imports no numpy (``mpinet --help``)."""
    from mpinet.jobs.booksim_measure import fmt as booksim_fmt

    return booksim_fmt(x)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "booksim",
        help="run a BookSim2 configuration; print BookSim's statistics",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("config", metavar="CFG", help="BookSim2 configuration file")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="BookSim overrides")
    p.add_argument("--json", action="store_true", help="print one JSON object instead")
    p.add_argument("--quiet", action="store_true",
                   help="no line on stderr before numba compiles (a first run)")  # fmt: skip
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mpinet.jobs.booksim_run import prepare
    from mpinet.jobs.booksim_run import run as measure
    from mpinet.jobs.netcheck import same_network
    from mpinet.jobs.resources import ranks_on_this_machine

    comm = get_comm()  # one process, no launcher: no MPI to start
    here = ranks_on_this_machine(comm)  # collective: before anything can fail
    prep = agree(comm, lambda: prepare(args.config, args.overrides, comm.Get_size(), here))
    same_network(comm, prep.plan.topo)
    res = collective(comm, lambda: measure(prep, comm))
    if comm.Get_rank() == 0:
        if args.json:
            from mpinet.values import json_text

            sys.stdout.write(json_text(as_json(prep, res)) + "\n")
        else:
            sys.stdout.write("".join(line + "\n" for line in text_lines(prep, res)))
    return 0


def _dist(d: Any) -> dict:
    return {"average": d.mean, "minimum": d.lo, "maximum": d.hi, "samples": d.count}


def as_json(prep: Any, res: dict) -> dict:
    """The result as ``--json`` prints it (NaN as null)."""
    out = res["outcome"]

    def stats(st: dict) -> dict:
        o = {k: _dist(st[k]) for k in ("plat", "nlat", "hops", "flat")}
        o["rates"] = {w: {**r, "average": r["sum"] / r["span"] / st["nodes"]}
                      for w, r in st["rates"].items()}  # fmt: skip
        for k in ("time", "reset", "in_flight_flits", "measured_flits"):
            if k in st:
                o[k] = st[k]
        return o

    ov = res["overall"]
    return {
        "config": prep.cfg.path,
        "overrides": prep.cfg.overrides,
        "mapping": prep.info,
        "measure": asdict(prep.measure),
        "periods": [stats(x) for k, x in out.items if k == "stats"],
        "lines": [x for k, x in out.items if k == "line"],
        "stable": out.stable,
        "reason": out.reason or None,
        "reset": out.reset,
        "drain_time": out.drain_time,
        "traffic_stop": out.stop if out.stable else None,
        "time_taken": res["time_taken"],
        "overall": None if ov is None else stats(ov) | {"hops_booksim": ov["hops"].mean + 1},
        "deadlock": res["deadlock"],
        "engine_runs": res["runs"],
        "engine_path": res["path"],
        "seconds": res["seconds"],
    }


#: how the echo line names mpinet's router model
_MODEL_WORDS = {"ideal": "mpinet's ideal router", "iq": "BookSim's input-queued router"}


def text_lines(prep: Any, res: dict) -> list[str]:
    """BookSim's output: the configuration echoed, the periods, the overall block."""
    cfg, info = prep.cfg, prep.info
    lines = [f"BEGIN Configuration File: {cfg.path}", *cfg.text.splitlines(),
             f"END Configuration File: {cfg.path}"]  # fmt: skip
    lines += [f"OVERRIDE Parameter: {o}" for o in cfg.overrides]
    lines.append(
        f"mpinet booksim: {info['topology']}, router {info['router']} (router = "
        f"{info['router_model']}: {_MODEL_WORDS[info['router_model']]}), "
        f"traffic {info['traffic']}, {info['rate']:g} packets per node per step, "
        f"{info['switching']}, packets of {info['flits']} flits, {info['vcs']} VCs of "
        f"{info['vc_buffer']} flits, vc_policy {info['vc_policy']}, seed {info['seed']}"
    )
    if info["not_modeled_by_ideal_router"]:
        keys = ", ".join(f"{k} = {v}" for k, v in info["not_modeled_by_ideal_router"].items())
        lines.append(f"mpinet booksim: not modeled by the ideal router: {keys}")
    for k, why in info["treated_differently"].items():
        lines.append(f"mpinet booksim: {k} treated differently: {why}")
    out = res["outcome"]
    for kind, x in out.items:
        lines += period_lines(x) if kind == "stats" else [x]
    if out.reason and out.reason != "unstable":
        lines.append(f"mpinet booksim: unstable: {out.reason}")
    if res["overall"] is not None:
        lines.append(f"Time taken is {res['time_taken']} cycles")
        lines += overall_lines(res["overall"])
    lines.append(f"Total run time {fmt(res['seconds'])}")
    return lines


def _rate(r: dict, nodes: int, node_pos: bool) -> tuple[str, str, str]:
    span = r["span"]
    avg = fmt(r["sum"] / span / nodes if span else -float("nan"))
    lo, hi = fmt(r["min"] / span), fmt(r["max"] / span)
    if node_pos:
        return avg, f"{lo} (at node {r['min_at']})", f"{hi} (at node {r['max_at']})"
    return avg, lo, hi


def _frag(st: dict) -> tuple[str, str, str]:
    """Fragmentation: 0 for one-flit packets; per-flit times are not recorded (nan)."""
    if st["flits"] == 1 and st["plat"].count:
        return "0", "0", "0"
    return fmt(-float("nan")), fmt(float("nan")), fmt(-float("nan"))


def period_lines(st: dict) -> list[str]:
    """One sample period's block (BookSim's ``DisplayStats``)."""
    out = ["Class 0:"]
    for name, key, slow in (("Packet", "plat", None), ("Network", "nlat", "packet"),
                            ("Flit", "flat", "flit")):  # fmt: skip
        d = st[key]
        if slow == "flit":
            out.append(f"Slowest packet = {st['plat'].arg}")
        out += [f"{name} latency average = {fmt(d.mean)}", f"\tminimum = {fmt(d.lo)}",
                f"\tmaximum = {fmt(d.hi)}"]  # fmt: skip
    out.append(f"Slowest flit = {st['flat'].arg}")
    f = _frag(st)
    out += [f"Fragmentation average = {f[0]}", f"\tminimum = {f[1]}", f"\tmaximum = {f[2]}"]
    n, size = st["nodes"], st["flits"]
    sent, acc = st["rates"]["sent"], st["rates"]["accepted"]
    flits = {w: {**r, "sum": r["sum"] * size, "min": r["min"] * size, "max": r["max"] * size}
             for w, r in (("sent", sent), ("accepted", acc))}  # fmt: skip
    for label, r in (("Injected packet rate average =", sent),
                     ("Accepted packet rate average =", acc),
                     ("Injected flit rate average =", flits["sent"]),
                     ("Accepted flit rate average=", flits["accepted"])):  # fmt: skip
        avg, lo, hi = _rate(r, n, True)
        out += [f"{label} {avg}", f"\tminimum = {lo}", f"\tmaximum = {hi}"]
    for label, r in (("Injected", sent), ("Accepted", acc)):
        length = fmt(size if r["sum"] else -float("nan"))
        out.append(f"{label} packet length average = {length}")
    out.append(f"Total in-flight flits = {st['in_flight_flits']} ({st['measured_flits']} measured)")
    return out


def overall_lines(ov: dict) -> list[str]:
    """BookSim's ``DisplayOverallStats`` for one simulation (``sim_count = 1``)."""
    s = " (1 samples)"
    out = ["====== Overall Traffic Statistics ======", "====== Traffic class 0 ======"]
    for name, key in (("Packet", "plat"), ("Network", "nlat"), ("Flit", "flat")):
        d = ov[key]
        out += [f"{name} latency average = {fmt(d.mean)}{s}", f"\tminimum = {fmt(d.lo)}{s}",
                f"\tmaximum = {fmt(d.hi)}{s}"]  # fmt: skip
    f = _frag(ov)
    out += [f"Fragmentation average = {f[0]}{s}", f"\tminimum = {f[1]}{s}",
            f"\tmaximum = {f[2]}{s}"]  # fmt: skip
    n, size = ov["nodes"], ov["flits"]
    sent, acc = ov["rates"]["sent"], ov["rates"]["accepted"]
    for label, r, mult in (("Injected packet", sent, 1), ("Accepted packet", acc, 1),
                           ("Injected flit", sent, size),
                           ("Accepted flit", acc, size)):  # fmt: skip
        avg, lo, hi = _rate({**r, "sum": r["sum"] * mult, "min": r["min"] * mult,
                             "max": r["max"] * mult}, n, False)  # fmt: skip
        out += [f"{label} rate average = {avg}{s}", f"\tminimum = {lo}{s}", f"\tmaximum = {hi}{s}"]
    for label, r in (("Injected", sent), ("Accepted", acc)):
        out.append(f"{label} packet size average = {fmt(size if r['sum'] else -float('nan'))}{s}")
    out.append(f"Hops average = {fmt(ov['hops'].mean + 1)}{s}")
    return out
