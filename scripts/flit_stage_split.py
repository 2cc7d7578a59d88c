#!/usr/bin/env python3
"""Where a step of the flit engine's compiled steps spends its CPU time, per stage and rank.

numba has no profiler and the engine carries no timers, so this script copies ``mpinet/``
into ``--workdir``, adds stage clocks there (:data:`PATCHES`: thread CPU time, one
``clock_gettime(CLOCK_THREAD_CPUTIME_ID)`` of about 0.4 us at each stage's end) and runs
``mpinet bench`` on the copy: one rank alone, two one-rank runs at once (what both cores
busy costs a rank's kernels without any exchange) and ``-n 2`` (or ``--ranks``). CPU time,
not wall time, so a loaded machine blurs it less; the work counts (active buffers, requests,
flits, rows, heads, searches) do not depend on the load at all. The copy compiles its
kernels once per ``--workdir`` (minutes); the repository's own cache is not touched::

    python scripts/flit_stage_split.py                 # the issue-33 run: 1, 1+1, 2 ranks
    python scripts/flit_stage_split.py --rounds 3 --json split.json

A patch that no longer matches the code stops the script with its anchor: update
:data:`PATCHES` with the kernels (docs/performance.md, "The compiled steps on every port
model and several ranks", has the split it measured).
"""

# ruff: noqa: E501 (PATCHES: anchors are lines of the kernels as they are)
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import patched_copy  # noqa: E402
from launcher import launch_prefix  # noqa: E402

PY = sys.executable
RUN = ["bench", "--specs", "ms:3,2@shortest", "--trace", "none", "--repeat", "1",
       "--set", "model.switching=wormhole", "--set", "model.flits=16", "--set", "model.vcs=2",
       "--set", "model.vc_buffer=4", "--set", "workload.injection=bernoulli",
       "--set", "workload.rate=0.006", "--set", "workload.steps=2000"]  # fmt: skip

#: the clocks' module in the copy: stage seconds and work counts in ``PROF``, printed at exit
PROF = """
import atexit, ctypes, json, os, sys
import numpy as np
from numba import njit
_fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)(
    ctypes.cast(ctypes.CDLL(None).clock_gettime, ctypes.c_void_p).value)
PROF = np.zeros(64, np.float64)
CLK = (_fn, PROF, np.zeros(2, np.int64))
NAMES = %r
@njit(inline="always")
def now(clk):
    clk[0](3, clk[2].ctypes.data)  # CLOCK_THREAD_CPUTIME_ID
    return clk[2][0] * 1e9 + clk[2][1]
@njit(inline="always")
def add(clk, i, t0):
    t1 = now(clk)
    clk[1][i] += t1 - t0
    return t1
def _dump():
    if PROF[46]:
        out = {n: float(PROF[i]) for i, n in NAMES.items()}
        sys.stderr.write("STAGES " + json.dumps([int(os.environ.get("PMI_RANK", 0)), out]) + "\\n")
atexit.register(_dump)
"""
#: slot -> name (ns in slots < 40, counts from 40)
NAMES = {0: "collect", 1: "move", 2: "settle", 3: "pack", 4: "post", 5: "wait", 6: "take_in",
         7: "route", 8: "scan", 9: "look_wait", 10: "gather", 11: "search", 12: "other",
         13: "engine", 14: "room", 15: "compiled", 16: "injections", 40: "active_buffers",
         41: "flits", 42: "searches", 43: "fronts_searched", 44: "scans", 45: "fronts_listed",
         46: "steps", 47: "requests", 48: "wire_rows", 49: "heads_routed",
         17: "sdc_sort", 18: "sdc_collect_port", 19: "sdc_mark_moved", 20: "sdc_route_in",
         21: "sdc_settle_buffers", 22: "sdc_recount"}  # fmt: skip
TIMED = "            _t0 = __import__('time').thread_time_ns()\n"
SPENT = "            _P[{}] += __import__('time').thread_time_ns() - _t0\n"
IMPORT = "from mpinet.engine.flit.prof import CLK, PROF as _P, add, now  # noqa\n"
#: (file, anchor, replacement[, times]): each anchor must occur once (or ``times``)
PATCHES = [
    ("chunk.py", "from mpinet.engine.flit.direct import Direct\n",
     "from mpinet.engine.flit.direct import Direct\n" + IMPORT),
    ("chunk.py", "bufs, so, rows, status, look, lscr, inc, drw):",
     "bufs, so, rows, status, look, lscr, inc, drw, clk):"),
    ("chunk.py", "        need = pl.room_need(",
     "        tp = now(clk)\n        clk[1][40] += bufs.nact[0] - inc.hole[pl.H_DEAD]\n"
     "        clk[1][46] += 1\n        need = pl.room_need("),
    ("chunk.py", "        if t % 8 == 0:  # buffers in id order, as the step-by-step path sorts them",
     "        tp = add(clk, 14, tp)\n"
     "        if t % 8 == 0:  # buffers in id order, as the step-by-step path sorts them"),
    ("chunk.py", "        f0, d0, x0 = cnt[fk.C_FLITS], cnt[fk.C_DELIV], cnt[fk.C_CROSS]\n        if na:",
     "        clk[1][47] += nt\n"
     "        f0, d0, x0 = cnt[fk.C_FLITS], cnt[fk.C_DELIV], cnt[fk.C_CROSS]\n        if na:"),
    ("chunk.py", "        if na:  # no request, no move (the call unpacks some 60 arrays)\n",
     "        tp = add(clk, 0, tp)\n"
     "        if na:  # no request, no move (the call unpacks some 60 arrays)\n"),
    ("chunk.py", "        nck = na  # the links settle checks",
     "        tp = add(clk, 1, tp)\n        nck = na  # the links settle checks"),
    ("chunk.py", "        nnew = step_end.settle(nck, sdc, prm, segs, pkts, links, bufs, so)\n"
     "        if so.out[0]:",
     "        nnew = step_end.settle(nck, sdc, prm, segs, pkts, links, bufs, so)\n"
     "        tp = add(clk, 2, tp)\n        clk[1][49] += nnew + ni\n        if so.out[0]:"),
    # sdc's stages apart, one rank (docs/performance.md, "sdc in session 10"): inside
    # ``collect`` (the sort of the active list, ``collect_port``) and ``route`` (the rest)
    ("chunk.py", "            pl.sort_kept(bufs, inc, so.rq)\n        sdc = -1\n",
     "            pl.sort_kept(bufs, inc, so.rq)\n"
     "        if prm.kind == fk.SDC:\n            tp = add(clk, 17, tp)\n        sdc = -1\n"),
    ("chunk.py", "            nt = na = kr.collect_port(sdc, prm, segs, pkts, links, bufs, so, inc, True)\n",
     "            tp = add(clk, 0, tp)\n"
     "            nt = na = kr.collect_port(sdc, prm, segs, pkts, links, bufs, so, inc, True)\n"
     "            tp = add(clk, 18, tp)\n"),
    ("chunk.py", "            kr.mark_moved(na, prm, segs, links, bufs, so, inc, fk.C_CRED_L, fk.C_REL, fk.C_LOCAL)\n",
     "            tp = add(clk, 7, tp)\n"
     "            kr.mark_moved(na, prm, segs, links, bufs, so, inc, fk.C_CRED_L, fk.C_REL, fk.C_LOCAL)\n"
     "            tp = add(clk, 19, tp)\n"),
    ("chunk.py", "            kr.mark_injected(nnew, ni, prm, so, inc)\n            kr.settle_buffers(prm, segs, bufs, inc)\n"
     "            kr.recount(False, prm, segs, pkts, links, bufs, inc)  # while the moves' are hot\n",
     "            tp = add(clk, 20, tp)\n"
     "            kr.mark_injected(nnew, ni, prm, so, inc)\n            kr.settle_buffers(prm, segs, bufs, inc)\n"
     "            tp = add(clk, 21, tp)\n"
     "            kr.recount(False, prm, segs, pkts, links, bufs, inc)  # while the moves' are hot\n"
     "            tp = add(clk, 22, tp)\n"),
    ("chunk.py", "        rows[k, R_FLITS], rows[k, R_DELIV], rows[k, R_INJ] = flits, ndel, ni + nh",
     "        tp = add(clk, 7, tp)\n        clk[1][41] += flits\n"
     "        rows[k, R_FLITS], rows[k, R_DELIV], rows[k, R_INJ] = flits, ndel, ni + nh"),
    ("chunk.py", "                if scnt[0] > 0:  # fronts listed",
     "                tp = add(clk, 8, tp)\n                clk[1][44] += 1\n"
     "                clk[1][45] += scnt[0]\n"
     "                if scnt[0] > 0:  # fronts listed"),
    ("chunk.py", "                    budget = -dl.PACE * scnt[0]",
     "                    tp = add(clk, 11, tp)\n                    clk[1][42] += 1\n"
     "                    clk[1][43] += scnt[0]\n                    budget = -dl.PACE * scnt[0]"),
    ("chunk.py", "look, self.lscr if look[0] else self.off_lscr, self.inc, draw)  # fmt: skip\n",
     "look, self.lscr if look[0] else self.off_lscr, self.inc, draw, CLK)  # fmt: skip\n"),
    ("chunk.py", "            tl = self.c_run(*self._args(t0, t_end, last, part, so, rows[k:], look, draw))\n",
     TIMED + "            tl = self.c_run(*self._args(t0, t_end, last, part, so, rows[k:], look, draw))\n"
     + SPENT.format(15)),
    ("chunk.py", "            inj = self.dinj if drw.on else self._injections(workload, t, t_end, ids)\n",
     TIMED + "            inj = self.dinj if drw.on else self._injections(workload, t, t_end, ids)\n"
     + SPENT.format(16)),
    ("ranks.py", "from mpinet.engine.flit.direct import Direct  # noqa: F401 (its callers read it here)\n",
     "from mpinet.engine.flit.direct import Direct  # noqa: F401\n" + IMPORT),
    ("ranks.py", "def block_moves(t, in_window, prm, segs, pkts, links, bufs, so, ex, mine, status, inc):",
     "def block_moves(t, in_window, prm, segs, pkts, links, bufs, so, ex, mine, status, inc, clk):"),
    ("ranks.py", "    cnt = so.cnt\n    sdc = -1\n    if prm.kind == fk.SDC:",
     "    cnt = so.cnt\n    sdc = -1\n    tp = now(clk)\n    if prm.kind == fk.SDC:"),
    ("ranks.py", "    f0, d0, x0 = cnt[fk.C_FLITS], cnt[fk.C_DELIV], cnt[fk.C_CROSS]\n    if na:\n"
     "        fk.move(t, na, in_window, prm, segs, pkts, links, bufs, so)\n",
     "    f0, d0, x0 = cnt[fk.C_FLITS], cnt[fk.C_DELIV], cnt[fk.C_CROSS]\n"
     "    clk[1][47] += nt\n    tp = add(clk, 0, tp)\n    if na:\n"
     "        fk.move(t, na, in_window, prm, segs, pkts, links, bufs, so)\n    tp = add(clk, 1, tp)\n"),
    ("ranks.py", "    nnew = step_end.settle(na, sdc, prm, segs, pkts, links, bufs, so)\n"
     "    if prm.kind == fk.SDC:\n        kr.mark_moved(",
     "    nnew = step_end.settle(na, sdc, prm, segs, pkts, links, bufs, so)\n"
     "    tp = add(clk, 2, tp)\n    if prm.kind == fk.SDC:\n        kr.mark_moved("),
    ("ranks.py", "    pack(prm, so, ex)\n    mine[K_FLITS]",
     "    pack(prm, so, ex)\n    tp = add(clk, 3, tp)\n"
     "    clk[1][48] += cnt[fk.C_WIRE]\n    clk[1][41] += cnt[fk.C_FLITS] - f0\n"
     "    mine[K_FLITS]"),
    ("rank_loop.py", "from mpinet.engine.run import raise_collected\n",
     "from mpinet.engine.run import raise_collected\n" + IMPORT),
    ("rank_loop.py", "links, bufs, so, ex, net, rows, status, err, looks, cy, inc):  # fmt: skip",
     "links, bufs, so, ex, net, rows, status, err, looks, cy, inc, clk):  # fmt: skip"),
    ("rank_loop.py", "        if status[6] == lk.P_STEP:\n            need = bufs.nact[0] + 1",
     "        tp = now(clk)\n        if status[6] == lk.P_STEP:\n"
     "            clk[1][40] += bufs.nact[0]\n            clk[1][46] += 1\n"
     "            need = bufs.nact[0] + 1"),
    ("rank_loop.py", "                nnew = rk.block_moves(", "                tp = add(clk, 14, tp)\n"
     "                nnew = rk.block_moves("),
    ("rank_loop.py", "so, ex, mine, status, inc)  # fmt: skip\n",
     "so, ex, mine, status, inc, clk)  # fmt: skip\n                tp = now(clk)\n"),
    ("rank_loop.py", "            status[6] = P_OUT\n", "            status[6] = P_OUT\n"
     "            tp = add(clk, 4, tp)\n"),
    ("rank_loop.py", "        status[6] = lk.P_STEP\n        if net.fold:",
     "        status[6] = lk.P_STEP\n        tp = add(clk, 5, tp)\n        if net.fold:"),
    ("rank_loop.py", "        heads = rk.take_in(", "        tp = add(clk, 12, tp)\n"
     "        heads = rk.take_in("),
    ("rank_loop.py", "        ok = heads >= 0\n", "        tp = add(clk, 6, tp)\n"
     "        ok = heads >= 0\n        clk[1][49] += heads + ni\n"),
    ("rank_loop.py", "        lag[0], lag[1], lag[2] = 1, 0 if ok else 1,",
     "        tp = add(clk, 7, tp)\n        lag[0], lag[1], lag[2] = 1, 0 if ok else 1,"),
    ("rank_loop.py", "                        status, err, looks)  # fmt: skip\n",
     "                        status, err, looks, clk)  # fmt: skip\n", 2),
    ("rank_loop.py", "            err, look_):  # fmt: skip", "            err, look_, clk):  # fmt: skip"),
    ("rank_loop.py", "                         look_)  # fmt: skip", "                         look_, clk)  # fmt: skip"),
    ("rank_loop.py", "            code = self.c_block(", TIMED + "            code = self.c_block("),
    ("rank_loop.py", "                    so, ex, net, rows, status, err, look, cy, inner.inc)  # fmt: skip\n",
     "                    so, ex, net, rows, status, err, look, cy, inner.inc, CLK)  # fmt: skip\n"),
    ("rank_loop.py", "            code = self.c_block(*args)\n",
     "            code = self.c_block(*args)\n" + SPENT.format(15)),
    ("rank_loop.py", "            inj = inner._injections(workload, t, t_end, ids)\n",
     TIMED + "            inj = inner._injections(workload, t, t_end, ids)\n" + SPENT.format(16)),
    ("rank_looks.py", "from mpinet.engine.waitfor import dead_one_rank\n",
     "from mpinet.engine.waitfor import dead_one_rank\n" + IMPORT),
    ("rank_looks.py", "net, rows, status, err, look):", "net, rows, status, err, look, clk):"),
    ("rank_looks.py", "    while True:\n        work = lag[2]", "    tp = now(clk)\n"
     "    while True:\n        work = lag[2]"),
    ("rank_looks.py", "                    nf, nh, nc = scnt[0], scnt[1], scnt[2]\n",
     "                    nf, nh, nc = scnt[0], scnt[1], scnt[2]\n"
     "                    clk[1][44] += 1\n                    clk[1][45] += nf\n"),
    ("rank_looks.py", "            status[6] = P_SCAN_OUT\n        if not wait(fns, net, 1):\n"
     "            return WAIT\n",
     "            status[6] = P_SCAN_OUT\n        tp = add(clk, 8, tp)\n"
     "        if not wait(fns, net, 1):\n            return WAIT\n        tp = add(clk, 9, tp)\n"),
    ("rank_looks.py", "            return search(net, status)",
     "            clk[1][42] += 1\n            r = search(net, status, clk)\n"
     "            tp = add(clk, 11, tp)\n            return r"),
    ("rank_looks.py", "            gather(fns, hnd, net, look)\n",
     "            gather(fns, hnd, net, look)\n            tp = add(clk, 10, tp)\n"),
    ("rank_looks.py", "def search(net, status):", "def search(net, status, clk):"),
    ("rank_looks.py", "    fr, wt = np.empty(nf, np.int64)", "    clk[1][43] += nf\n"
     "    fr, wt = np.empty(nf, np.int64)"),
    ("deadlock_live.py", "    def search(self, t: int, in_flight: int, scanned: tuple) -> dict | None:\n",
     "    def search(self, t, in_flight, scanned):\n"
     "        from mpinet.engine.flit.prof import PROF as _P\n"
     "        _t0 = __import__('time').thread_time_ns()\n"
     "        _P[42] += 1\n        _P[43] += int(scanned[-1][0])\n"
     "        try:\n            return self._search_timed(t, in_flight, scanned)\n"
     "        finally:\n            _P[11] += __import__('time').thread_time_ns() - _t0\n\n"
     "    def _search_timed(self, t: int, in_flight: int, scanned: tuple) -> dict | None:\n"),
    ("engine.py", "    def run(self, workload: Workload) -> RunRecord:\n",
     "    def run(self, workload: Workload) -> RunRecord:\n"
     "        from mpinet.engine.flit.prof import PROF as _P\n"
     "        _t0 = __import__('time').thread_time_ns()\n"
     "        try:\n            return self._run_timed(workload)\n"
     "        finally:\n            _P[13] += __import__('time').thread_time_ns() - _t0\n\n"
     "    def _run_timed(self, workload: Workload) -> RunRecord:\n"),
]  # fmt: skip


def build(workdir: Path) -> Path:
    """The patched copy of ``mpinet/`` in ``workdir`` (kept while the sources are the same)."""
    return patched_copy.build(workdir, PATCHES, "flit_stage_split",
                              extra={"prof.py": PROF % (NAMES,)})  # fmt: skip


def run(workdir: Path, ranks: int, args: list[str]) -> list[dict]:
    """One run of ``mpinet bench`` on the copy; each rank's stages."""
    env = dict(os.environ, PYTHONPATH=str(workdir), MPIR_CVAR_CH4_PROGRESS_THROTTLE="1")
    cmd = [*launch_prefix(ranks), PY, "-m", "mpinet", *args]
    out = subprocess.run(cmd, env=env, cwd=workdir, capture_output=True, text=True, check=False)
    rows = [json.loads(line[7:]) for line in out.stderr.splitlines() if line.startswith("STAGES ")]
    if not rows:
        sys.exit(f"flit_stage_split: no stages from {' '.join(cmd)}:\n{out.stderr[-2000:]}")
    return [r for _, r in sorted(rows, key=lambda x: x[0])]


def table(results: dict) -> str:
    """Per stage: ms of CPU per rank in each configuration (means over rounds)."""
    cols = list(results)
    head = "| stage | " + " | ".join(cols) + " |\n|---|" + "---|" * len(cols) + "\n"
    lines = []
    for slot, name in NAMES.items():
        cells = []
        for c in cols:
            ranks = results[c]
            v = [sum(r[name] for r in rnd) / len(rnd) for rnd in ranks]  # mean over ranks
            scale = 1e-6 if slot < 40 else 1
            lo, hi = min(v) * scale, max(v) * scale
            f = "{:,.1f}" if slot < 40 else "{:,.0f}"
            same = hi - lo < 0.05 * max(hi, 1)
            cells.append(f.format(lo) if same else f"{f.format(lo)}-{f.format(hi)}")
        if any(c not in ("0.0", "0") for c in cells):  # the stages that ran
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return head + "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", default="/tmp/mpinet_stage_split", help="the patched copy")
    ap.add_argument("--ranks", type=int, default=2, help="the multi-rank run's ranks (2)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds, alternated (2)")
    ap.add_argument("--json", help="write the rounds' stages here")
    ap.add_argument("bench", nargs="*", help="mpinet bench's arguments (the issue-33 run)")
    a = ap.parse_args()
    workdir = build(Path(a.workdir))
    args = a.bench or RUN
    run(workdir, 1, args)  # compiles the copy's kernels (first time) outside the rounds
    run(workdir, a.ranks, args)
    res: dict = {"1 rank": [], "1 rank, two at once (each)": [], f"{a.ranks} ranks (per rank)": []}
    for _ in range(a.rounds):
        res["1 rank"].append(run(workdir, 1, args))
        env = dict(os.environ, PYTHONPATH=str(workdir))
        two = [subprocess.Popen([PY, "-m", "mpinet", *args], env=env, cwd=workdir,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
               for _ in range(2)]  # fmt: skip
        both = [json.loads(ln[7:])[1] for p in two for ln in p.communicate()[1].splitlines()
                if ln.startswith("STAGES ")]  # fmt: skip
        res["1 rank, two at once (each)"].append(both)
        res[f"{a.ranks} ranks (per rank)"].append(run(workdir, a.ranks, args))
    print(f"load average {os.getloadavg()[0]:.1f}; CPU ms per rank (thread time), ranges over "
          f"{a.rounds} rounds; counts per rank\n")  # fmt: skip
    print(table(res))
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
