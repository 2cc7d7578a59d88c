"""Where the CPU time of one ``mpinet booksim CFG`` process goes, beside BookSim2's run.

Each round runs, one after the other in fresh processes: ``python -c pass`` (the interpreter),
``python -c "import numpy"``, ``python -c "import numpy, numba"``, this script's ``--child``
(``mpinet booksim CFG`` as the CLI runs it, its phases timed in the process), the same
command as a user runs it (``python -m mpinet booksim CFG``), and BookSim2 on the same file.
CPU time is user + system of each child (``getrusage``); the child's phases are
``time.process_time`` spans, each counted without the spans inside it (the kernels loaded
inside the engine's first call are "kernel loads", not "iq steps"). The figures are the best
(lowest) of the rounds per row; the printed table is Markdown (docs/performance.md, "mpinet
booksim meshconfig, end to end").

    python scripts/booksim_split.py --booksim /work/booksim/build/booksim \\
        [--config jobs/booksim/meshconfig] [--rounds 3] [--json]

A tool, not a report: it writes no docs page (scripts/reports_registry.py, TOOLS).
"""

from __future__ import annotations

import time

_T0 = time.process_time()  # the interpreter's start-up, before this script's imports

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

#: the child's spans, in the order of a run (name -> seconds, without the spans inside)
SPANS: dict[str, float] = {}
_STACK: list[list[float]] = []  # [start, time of the spans inside it]


def _span(name: str, fn, *args, **kw):
    """``fn(*args, **kw)`` timed as span ``name`` (its own time: minus the spans inside)."""
    _STACK.append([time.process_time(), 0.0])
    try:
        return fn(*args, **kw)
    finally:
        start, inner = _STACK.pop()
        took = time.process_time() - start
        SPANS[name] = SPANS.get(name, 0.0) + took - inner
        if _STACK:
            _STACK[-1][1] += took


def _wrap(owner, attr: str, name: str) -> None:
    fn = getattr(owner, attr)
    setattr(owner, attr, lambda *a, **k: _span(name, fn, *a, **k))


def child(cfg: str, keys: list[str]) -> dict:
    """``mpinet booksim CFG KEYS`` as ``mpinet.cli.booksim.run`` runs it, in timed spans."""
    SPANS["interpreter start-up"] = _T0
    sys.path.insert(0, str(ROOT))  # this tree's mpinet, as `python -m mpinet` from ROOT runs
    import gc
    import io

    cli = _span("import mpinet.cli", lambda: __import__("mpinet.cli").cli)
    paused = getattr(cli, "_GC_PAUSED", None)  # an older tree (an A/B's base) has none
    if paused is not None:  # as the console script starts (cli.console): resumed at get_comm
        gc.disable()
        paused.append(True)
    _span("import numpy", __import__, "numpy")
    _span("import numba", __import__, "numba")
    argv = ["booksim", cfg, *keys]
    only = getattr(cli, "_command_of", lambda _: None)(argv)  # None: the base's full parser
    build = cli.build_parser if only is None else lambda: cli.build_parser(only)
    parser = _span("the argument parser (its modules imported)", build)
    args = parser.parse_args(argv)

    def imports():
        from mpinet.jobs import booksim_run, netcheck, resources  # noqa: F401

    _span("import mpinet booksim's modules", imports)
    from numba.core import base, caching

    from mpinet.cli import booksim as cb
    from mpinet.engine.flit import iq_blocks, iq_lean, iq_step
    from mpinet.jobs import booksim_live, booksim_run, netcheck, resources

    _wrap(caching.Cache, "load_overload", "kernel loads (numba's cache)")
    _wrap(base.BaseContext, "refresh", "numba's target set up (first load)")
    _wrap(iq_step, "run_block", "iq steps (compiled blocks)")
    _wrap(iq_lean, "run_block", "iq steps (compiled blocks, the lean path)")
    _wrap(iq_blocks, "injections", "injections drawn (per block)")
    _wrap(booksim_live.Watch, "seen", "measurement read while running")
    _wrap(booksim_run, "_engine", "workload and engine built")
    _wrap(booksim_run, "_finish", "overall statistics")
    try:  # as mpinet booksim asks for it (an older tree: MPI started whatever the launch)
        comm = _span("MPI started (get_comm)", cli.get_comm, alone_serial=True)
    except TypeError:
        comm = _span("MPI started (get_comm)", cli.get_comm)
    here = resources.ranks_on_this_machine(comm)
    prep = _span("config read, mapped, planned", booksim_run.prepare, args.config,
                 args.overrides, comm.Get_size(), here)  # fmt: skip
    netcheck.same_network(comm, prep.plan.topo)
    res = _span("engine run: its own Python", booksim_run.run, prep, comm)
    out = io.StringIO()
    _span("output written", lambda: out.write("".join(x + "\n" for x in cb.text_lines(prep, res))))
    SPANS["in all (to the output)"] = time.process_time()
    if paused is not None:
        gc.freeze()  # as the console script ends
    import mpinet

    assert Path(mpinet.__file__).parent == ROOT / "mpinet", mpinet.__file__
    return {"spans": SPANS, "cycles": res["time_taken"], "text": out.getvalue()}


#: the floor of a process that runs numba's code: one kernel loaded from numba's cache
KERNEL = """import gc
import sys

if "gc" in sys.argv[1:]:  # as mpinet's console script: no scans of what lives to the end
    gc.disable()
import numba
import numpy as np

if "mpinet" in sys.argv[1:]:  # mpinet's loader: no set-up of numba's lowering registries
    from mpinet import numba_cache  # noqa: F401


@numba.njit(cache=True)
def f(a):
    return a.sum()


f(np.arange(3))
gc.freeze()
"""


def _cpu_of(cmd: list[str], cwd: str | None = None) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, stdout) of one child process (booksim_examples.timed)."""
    from booksim_examples import timed

    p, wall, cpu = timed(cmd, Path(cwd or os.getcwd()))
    if p is None:
        sys.exit(f"booksim_split.py: error: {' '.join(cmd)} ran past its time limit")
    return cpu, wall, p.stdout


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--booksim", default="/work/booksim/build/booksim", help="BookSim2's binary")
    ap.add_argument("--config", default=str(ROOT / "jobs/booksim/meshconfig"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print the rounds as JSON")
    ap.add_argument("--pycache", metavar="DIR", help="Python's bytecode cached in DIR "
                    "(PYTHONPYCACHEPREFIX, PYTHONDONTWRITEBYTECODE unset), as an installed "
                    "package has it; filled by a first run, not timed")  # fmt: skip
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("keys", nargs="*", help="KEY=VALUE overrides given to both")
    a = ap.parse_args(argv)
    if a.child:
        got = child(a.config, a.keys)
        print(json.dumps({k: v for k, v in got.items() if k != "text"}))
        return 0
    py, cfg = sys.executable, str(Path(a.config).resolve())
    if a.pycache:
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPYCACHEPREFIX"] = str(Path(a.pycache).resolve())
        _cpu_of([py, __file__, "--child", "--config", cfg, *a.keys])
    bytecode = "none written" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "cached"
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="booksim_split_"))
    (tmp / "one_kernel.py").write_text(KERNEL)
    one = [py, "-c", f"import sys; sys.path[:0] = [{str(tmp)!r}, {str(ROOT)!r}]; import one_kernel"]
    _cpu_of(one)  # compiled into numba's cache once, not timed
    rows: dict[str, list[float]] = {}
    walls: dict[str, list[float]] = {}  # the same processes' wall seconds
    spans: dict[str, list[float]] = {}
    loads = []
    for _ in range(a.rounds):
        loads.append(os.getloadavg()[0])
        for name, cmd in (
            ("python -c pass", [py, "-c", "pass"]),
            ("python -c 'import numpy'", [py, "-c", "import numpy"]),
            ("python -c 'import numpy, numba'", [py, "-c", "import numpy, numba"]),
            ("python -c 'import mpi4py.MPI'", [py, "-c", "import mpi4py.MPI"]),
            ("one cached numba kernel loaded and called", one),
            ("the same, the collector paused and frozen (as mpinet)", [*one, "gc"]),
            ("the same, and mpinet's loader (mpinet.numba_load)", [*one, "gc", "mpinet"]),
        ):
            cpu, wall, _ = _cpu_of(cmd)
            rows.setdefault(name, []).append(cpu)
            walls.setdefault(name, []).append(wall)
        cpu, wall, out = _cpu_of([py, __file__, "--child", "--config", cfg, *a.keys])
        rows.setdefault("this script's --child (in all)", []).append(cpu)
        walls.setdefault("this script's --child (in all)", []).append(wall)
        for k, v in json.loads(out.strip().splitlines()[-1])["spans"].items():
            spans.setdefault(k, []).append(v)
        for name, cmd, cwd in (
            ("python -m mpinet booksim CFG", [py, "-m", "mpinet", "booksim", cfg, *a.keys], ROOT),
            ("BookSim2", [a.booksim, cfg, *a.keys], Path(cfg).parent),
        ):
            cpu, wall, _ = _cpu_of(cmd, cwd=str(cwd))
            rows.setdefault(name, []).append(cpu)
            walls.setdefault(name, []).append(wall)
    loads.append(os.getloadavg()[0])
    if a.json:
        got = {"rows": rows, "walls": walls, "spans": spans, "loads": loads, "bytecode": bytecode}
        print(json.dumps(got))
        return 0
    bs = min(rows["BookSim2"])
    print(f"{time.strftime('%Y-%m-%d %H:%M')} UTC, {a.rounds} rounds, load average "
          f"{min(loads):.1f}-{max(loads):.1f}, Python's bytecode {bytecode}; best of the "
          "rounds, CPU seconds")  # fmt: skip
    bw = min(walls["BookSim2"])
    print("\n| process | CPU s (best) | all rounds | % of BookSim2 | wall s (best) | % of "
          "BookSim2 |\n|---|---:|---|---:|---:|---:|")  # fmt: skip
    for k, v in rows.items():
        w = min(walls[k])
        print(f"| {k} | {min(v):.3f} | {' / '.join(f'{x:.2f}' for x in v)} | "
              f"{100 * min(v) / bs:.0f} % | {w:.3f} | {100 * w / bw:.0f} % |")  # fmt: skip
    print("\n| span of the --child process | CPU s (best) | all rounds | % of BookSim2 |")
    print("|---|---:|---|---:|")
    for k, v in spans.items():
        print(f"| {k} | {min(v):.3f} | {' / '.join(f'{x:.3f}' for x in v)} | "
              f"{100 * min(v) / bs:.1f} % |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
