#!/usr/bin/env python3
"""sdc against its floor: the port-model run with sdc's port choice made free (issue 33).

sdc sends, each step, on the port index with the most movable requests; the compiled steps
keep every buffer's request and every link's movable count between steps
(:mod:`mpinet.engine.flit.kept_requests`). How much of sdc's time is that choice? This
script copies ``mpinet/`` into ``--workdir`` and patches the copy (:data:`PATCHES`) so that
a run can record each step's port and allowed links with their requests (the moves' input),
then run again with them given. The runs, each a process of its own, alternated per round,
the best of ``--best`` runs timed by ``time.process_time`` (as ``scripts/bench_ports.py``):

* ``all-port``, ``sdc``: the copy as it is (the patches change nothing unless asked);
* ``sdc-kept``: the kept requests maintained as usual (listing, re-reading, recounts), the
  step's links and requests replayed instead of :func:`~mpinet.engine.flit.kept_requests.
  collect_port`'s walk: ``sdc`` minus this is what the walk costs;
* ``sdc-lists``: as ``sdc-kept`` without the recounts (the listed links only forgotten):
  ``sdc-kept`` minus this is what recounting the listed links costs;
* ``sdc-free``: no bookkeeping of the choice at all: the active list only compacted, the
  recorded links and requests given to ``move``. The floor of any exact port choice: every
  other stage (moves, settle, routing, sort, deadlock looks) runs on sdc's own state.

Each run prints a hash of its packet rows, link loads and counters: the sdc runs must
give the same hash (the replay is exact). One rank, links of capacity 1 (a link with several
requests a step cannot be replayed: the script says so). docs/performance.md, "sdc in
session 12", has what it measured::

    python scripts/sdc_floor.py [--rounds 3] [--best 3] [--rate 0.003] [--spec ms:3,2]
"""

# ruff: noqa: E501 (PATCHES: anchors are lines of the kernels as they are)
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import patched_copy  # noqa: E402

MODES = ("all-port", "sdc", "sdc-kept", "sdc-lists", "sdc-free")
#: the run's keys beside model.kind and the rate (scripts/bench_ports.py's port-model run)
SETS = {
    "router.name": "shortest", "model.switching": "wormhole", "model.flits": 16,
    "model.vcs": 2, "model.vc_buffer": 4, "workload.injection": "bernoulli",
    "workload.steps": 2000,
}  # fmt: skip

#: recording and replay, added to chunk.py before run_steps (the replay's compaction drops
#: the empty buffers as port_links does: a buffer is empty when its head is -1)
KERNELS = '''@njit(cache=True, inline="always")
def _record(t, port, na, so, inc):
    """sdc_floor: the step's port, links and requests (one a link) recorded."""
    o = inc.roff[t - 1]
    if inc.nrq[1] or o + na > inc.rlink.shape[0]:  # several requests on a link; no room
        inc.rmode[0] = -1 if inc.nrq[1] else -2
        return
    for j in range(na):
        inc.rlink[o + j] = so.touched[j]
        inc.rrq[o + j] = so.rq[j]
    inc.roff[t] = o + na
    inc.rport[t] = port


@njit(cache=True, inline="always")
def _replay(t, bufs, links, so, inc):
    """sdc_floor: the active list compacted, the step's recorded links and requests given."""
    act, head, active, nact = bufs.act, bufs.head, bufs.active, bufs.nact
    k = 0
    for i in range(nact[0]):
        b = act[i]
        if head[b] < 0:
            active[b] = 0
            continue
        act[k] = b
        k += 1
    nact[0] = k
    o = inc.roff[t - 1]
    na = inc.roff[t] - o
    for j in range(na):
        link = inc.rlink[o + j]
        so.touched[j] = link
        so.rq[j] = inc.rrq[o + j]
        links.start[link] = j
        links.nreq[link] = 1
        so.allow[j] = True
    inc.nrq[0], inc.nrq[1] = na, 0
    return inc.rport[t], na


'''
#: (file, anchor, replacement): each anchor must occur once
PATCHES = [
    ("port_demand.py", '"dbuf", "ndb", "cm", "nrq", "best", "bits"])',
     '"dbuf", "ndb", "cm", "nrq", "best", "bits", "rmode", "roff", "rlink", "rrq", "rport"])'),
    ("port_demand.py", "def make_demand(",
     "#: sdc_floor's (mode: 0 off, 1 record, 2 free, 3 kept, 4 lists; step offsets, links, requests, ports)\n"
     "FLOOR = [np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(1, np.int64)]\n\n\n"
     "def make_demand("),
    ("port_demand.py", "np.full(nk, -1, np.int64), np.zeros(deg * words, np.int64))",
     "np.full(nk, -1, np.int64), np.zeros(deg * words, np.int64), *FLOOR)"),
    ("chunk.py", '@njit(cache=True, error_model="numpy", _nrt=False)\ndef run_steps(',
     KERNELS + '@njit(cache=True, error_model="numpy", _nrt=False)\ndef run_steps('),
    ("chunk.py", "        if prm.kind == fk.SDC:  # one rank: the demand is the rank's; requests kept\n",
     "        if prm.kind == fk.SDC and inc.rmode[0] == 2:  # sdc_floor: no choice at all\n"
     "            sdc, nt = _replay(t, bufs, links, so, inc)\n"
     "            na = nt\n"
     "        elif prm.kind == fk.SDC:  # one rank: the demand is the rank's; requests kept\n"),
    ("chunk.py", "            nt = na = kr.collect_port(sdc, prm, segs, pkts, links, bufs, so, inc, True)\n",
     "            if inc.rmode[0] >= 3:  # sdc_floor: the kept state maintained, the walk replayed\n"
     "                sdc, nt = _replay(t, bufs, links, so, inc)\n"
     "                na = nt\n"
     "            else:\n"
     "                nt = na = kr.collect_port(sdc, prm, segs, pkts, links, bufs, so, inc, True)\n"
     "            if inc.rmode[0] == 1:\n"
     "                _record(t, sdc, na, so, inc)\n"),
    ("chunk.py", "        if prm.kind == fk.SDC:\n            kr.mark_moved(",
     "        if prm.kind == fk.SDC and inc.rmode[0] != 2:\n            kr.mark_moved("),
    ("chunk.py", "        if prm.kind == fk.SDC:\n            kr.mark_injected(",
     "        if prm.kind == fk.SDC and inc.rmode[0] != 2:\n            kr.mark_injected("),
    ("chunk.py", "            kr.recount(False, prm, segs, pkts, links, bufs, inc)  # while the moves' are hot\n",
     "            if inc.rmode[0] == 4:  # sdc_floor: the listed links forgotten, not recounted\n"
     "                for i in range(inc.nd[0]):\n"
     "                    inc.flag[inc.dirty[i]] = 0\n"
     "                inc.nd[0] = 0\n"
     "            else:\n"
     "                kr.recount(False, prm, segs, pkts, links, bufs, inc)\n"),
]  # fmt: skip


def patch(src: Path, dst: Path) -> None:
    """Copy ``src`` (an ``mpinet/``) to ``dst`` with :data:`PATCHES` applied; a patch whose
    anchor is not found once stops with its anchor (update :data:`PATCHES` with the kernels)."""
    patched_copy.patch(src, dst, PATCHES, "sdc_floor")


def build(workdir: Path) -> Path:
    """The patched copy in ``workdir`` (kept while the sources and patches are the same)."""
    return patched_copy.build(workdir, PATCHES, "sdc_floor")


def child(mode: str, best: int, rate: float, spec: str) -> dict:
    """In the copy: the best of ``best`` runs of ``mode`` (after a warm-up: under the
    replaying modes the recording run)."""
    import hashlib

    import numpy as np

    from mpinet.engine.flit import port_demand as pd
    from mpinet.jobs.run_plan import plan
    from mpinet.jobs.spec import load_job
    from mpinet.jobs.switching import make_engine

    if not hasattr(pd, "FLOOR"):
        sys.exit("sdc_floor: the child imported an unpatched mpinet (PYTHONPATH)")
    kind = "all-port" if mode == "all-port" else "sdc"
    sets = [(["topology"], spec), (["model", "kind"], kind), (["workload", "rate"], rate)]
    sets += [(k.split("."), v) for k, v in SETS.items()]
    p = plan(load_job(None, sets), ranks=1)
    steps = 100_000

    def one() -> tuple[float, str, int]:
        eng = make_engine(p, None, seed=p.job.seed, max_steps=steps, record_hops=False,
                          progress=None)  # fmt: skip
        t0 = time.process_time()
        rec = eng.run(p.workload.traffic)
        dt = time.process_time() - t0
        pk = rec.packets[np.lexsort((rec.packets[:, 0],))]
        h = hashlib.sha1(np.ascontiguousarray(pk).tobytes() + rec.counters.tobytes()
                         + rec.link_load.tobytes()).hexdigest()[:12]  # fmt: skip
        return dt, h, int(rec.link_load.sum())

    if mode in ("sdc-kept", "sdc-lists", "sdc-free"):
        room = 1 << 22
        while True:  # record (the warm-up), with room for every step's requests
            rec = [np.array([1], np.int64), np.zeros(steps + 2, np.int64),
                   np.zeros(room, np.int32), np.zeros(room, np.int32),
                   np.zeros(steps + 2, np.int64)]  # fmt: skip
            pd.FLOOR[:] = rec
            one()
            if rec[0][0] == 1:
                break
            if rec[0][0] == -1:
                sys.exit("sdc_floor: a link got several requests in a step (capacity > 1): "
                         "not replayable")  # fmt: skip
            room *= 4
        rec[0][0] = {"sdc-free": 2, "sdc-kept": 3, "sdc-lists": 4}[mode]
    else:
        one()
    times, h = [], ""
    for _ in range(best):
        dt, h, hops = one()
        times.append(dt)
    return {"mode": mode, "seconds": min(times), "hash": h, "flit_hops": hops}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", default="/tmp/mpinet_sdc_floor", help="the patched copy")
    ap.add_argument("--rounds", type=int, default=3, help="alternated rounds (3)")
    ap.add_argument("--best", type=int, default=3, help="timed runs per process, best kept (3)")
    ap.add_argument("--modes", default=",".join(MODES), help="runs (all five)")
    ap.add_argument("--rate", type=float, default=0.003, help="Bernoulli rate (0.003)")
    ap.add_argument("--spec", default="ms:3,2", help="network (ms:3,2)")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.child, a.best, a.rate, a.spec)))
        return 0
    workdir = build(Path(a.workdir).resolve())
    modes = [m for m in a.modes.split(",") if m]
    if "all-port" not in modes:
        modes.insert(0, "all-port")
    env = dict(os.environ, PYTHONPATH=str(workdir))
    res: dict = {m: [] for m in modes}
    for r in range(a.rounds):
        for m in modes:
            print(f"round {r + 1}: {m}", file=sys.stderr, flush=True)
            argv_ = [sys.executable, str(Path(__file__).resolve()), "--child", m, "--best",
                     str(a.best), "--rate", str(a.rate), "--spec", a.spec]  # fmt: skip
            out = subprocess.run(argv_, env=env, cwd="/", capture_output=True, text=True)
            if out.returncode:
                sys.exit(f"sdc_floor: {m} failed:\n{out.stderr[-2000:]}")
            res[m].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"load average {os.getloadavg()[0]:.1f}; CPU s of FlitEngine.run, best of {a.best}, "
          f"{a.rounds} rounds alternated")  # fmt: skip
    base = [x["seconds"] for x in res["all-port"]]
    for m in modes:
        s = [x["seconds"] for x in res[m]]
        ratios = [x / b for x, b in zip(s, base, strict=True)]
        hashes = " ".join(sorted({x["hash"] for x in res[m]}))
        print(f"{m}: {min(s):.3f}-{max(s):.3f} s, x all-port {min(ratios):.2f}-"
              f"{max(ratios):.2f}, hash {hashes}")  # fmt: skip
    sdc = {x["hash"] for m in modes if m != "all-port" for x in res[m]}
    if len(sdc) > 1:
        print("sdc_floor: the sdc runs' hashes differ: the replay is not exact", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
