#!/usr/bin/env python3
"""Stage clocks of two port models on one rank, alternated, the port choice split apart.

:mod:`flit_stage_split`'s patched copy with more clocks: the sort of the active list (every
8 steps), ``collect`` alone, and one-port's choice (``kept_deny``) in its three parts (the
nodes counted, the decisions, the allowed links moved first) with its counts (nodes with a
choice, decisions kept and taken afresh, links allowed). The run is ``bench_ports.py``'s
(ms:3,2 ``shortest``, wormhole, Bernoulli ``--rate``, 2,000 steps); CPU ms per run (thread
time), range over ``--rounds`` (docs/performance.md, "One-port in session 18, part 2")::

    python scripts/port_stage_split.py --rounds 3
"""

# ruff: noqa: E501 (MORE: anchors are lines of the kernels as they are)
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import flit_stage_split as fs  # noqa: E402
import patched_copy  # noqa: E402

SPLIT = {23: "sort", 24: "collect_only", 25: "choice_count", 26: "choice_decide",
         27: "choice_allowed", 50: "choice_nodes", 51: "choice_kept", 52: "choice_fresh",
         53: "allowed_links"}  # fmt: skip
KD = "na = kept_deny(nt, t, t0, prm, segs, pkts, links, so, inc"
#: (file, anchor, replacement) added to flit_stage_split's
MORE = [
    ("chunk.py", "        sdc = -1\n        if prm.kind == fk.SDC:  # one rank",
     "        tp = add(clk, 23, tp)\n        sdc = -1\n        if prm.kind == fk.SDC:  # one rank"),
    ("chunk.py", "            nt = fk.collect(prm, segs, pkts, links, bufs, so)\n",
     "            nt = fk.collect(prm, segs, pkts, links, bufs, so)\n            tp = add(clk, 24, tp)\n"),
    ("chunk.py", KD + ")", KD + ", clk)"),
    ("kept_choice.py", "from mpinet.prefetch import ahead\n", "from mpinet.prefetch import ahead\n" + fs.IMPORT),
    ("kept_choice.py", "def kept_deny(nt, t, t0, prm, segs, pkts, links, so, inc):",
     "def kept_deny(nt, t, t0, prm, segs, pkts, links, so, inc, clk):"),
    ("kept_choice.py", "    nn = choice_nodes(nt, deg, sh, touched, nb, nodes)\n",
     "    tp = now(clk)\n    nn = choice_nodes(nt, deg, sh, touched, nb, nodes)\n"
     "    tp = add(clk, 25, tp)\n    clk[1][50] += nn\n"),
    ("kept_choice.py", "                    wq = q\n", "                    wq = q\n                    clk[1][51] += 1\n"),
    ("kept_choice.py", "            best, bs = -1, -1\n",
     "            best, bs = -1, -1\n            clk[1][52] += 1\n"),
    ("kept_choice.py", "    na = allowed_links(nt, nn, deg, sh, touched, nodes, nb, inc.ncnt.shape[0])\n",
     "    tp = add(clk, 26, tp)\n    na = allowed_links(nt, nn, deg, sh, touched, nodes, nb, inc.ncnt.shape[0])\n"
     "    tp = add(clk, 27, tp)\n    clk[1][53] += na\n"),
]  # fmt: skip


def build(workdir: Path) -> Path:
    """The patched copy: flit_stage_split's patches and :data:`MORE` (kept while the same)."""
    return patched_copy.build(workdir, fs.PATCHES + MORE, "port_stage_split",
                              extra={"prof.py": fs.PROF % ({**fs.NAMES, **SPLIT},)})  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", default="/tmp/mpinet_port_split", help="the patched copy")
    ap.add_argument("--kinds", default="all-port,one-port", help="port models, in turn")
    ap.add_argument("--rate", type=float, default=0.003)
    ap.add_argument("--rounds", type=int, default=3, help="rounds, alternated (3)")
    a = ap.parse_args()
    wd = build(Path(a.workdir))
    fs.NAMES.update(SPLIT)  # the table's rows
    args = list(fs.RUN)
    args[args.index("workload.rate=0.006")] = f"workload.rate={a.rate}"
    kinds = a.kinds.split(",")
    runs = {k: [*args, "--set", f'model.kind="{k}"'] for k in kinds}
    for k in kinds:  # compiles the copy's kernels (first time) outside the rounds
        fs.run(wd, 1, runs[k])
    res: dict = {k: [] for k in kinds}
    for _ in range(a.rounds):
        for k in kinds:
            res[k].append(fs.run(wd, 1, runs[k]))
    print(fs.table(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
