"""BookSim2's packets traced cycle by cycle, for tests/test_iq_booksim_trace.py.

Per case, BookSim2 runs ``jobs/booksim/meshconfig`` with the case's overrides and watches
its first ``N`` packets (``watch_file``, ``watch_out = -``); from its trace this keeps, per
packet, the cycle it was created (its ``ctime``), source, destination and the cycle its
tail retired, and stops BookSim once all ``N`` have retired. BookSim creates a source's
next packet only when the last one has left its queue, so packet ids do not follow
creation times: the trace is complete up to the cycle BookSim created packet ``N - 1``
(the file's ``window``), and every packet retired by then met only traced packets on its
way. The test replays the ``N`` packets on mpinet's iq router with the case's model and
expects those retirements, cycle for cycle.

The ``anynet-*`` cases run instead the configuration ``scripts/booksim_check.py`` writes
(``booksim_runs.booksim_config``: anynet ``min``, uniform traffic, BookSim's shallowest
pipeline) on the network's ``mpinet export --format anynet`` file, whose links are listed
in mpinet's port order, not by neighbour id: BookSim numbers a router's ports its own way
(terminal first, links by ascending neighbour id), so these cases check that the iq model
numbers them as BookSim does (:mod:`mpinet.engine.flit.iq_ports`).

    python scripts/booksim_trace.py --booksim /work/booksim/src/booksim [CASE ...]

writes ``tests/data/booksim/iq-trace-CASE.txt`` (all cases by default).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from booksim_runs import PIPELINE, booksim_config  # noqa: E402

MESHCONFIG = ROOT / "jobs" / "booksim" / "meshconfig"
OUT = ROOT / "tests" / "data" / "booksim"
#: meshconfig's router keys as mpinet's model takes them (alloc_iters: BookSim applies 1)
MESHCONFIG_IQ = {"routing_delay": 0, "credit_delay": 2, "wait_for_tail_credit": 1,
                 "vc_allocator": "islip", "sw_allocator": "islip"}  # fmt: skip
#: the stages-* cases' keys: 2 flits, 4 VCs of 4, routing_delay 2, a crossbar of 3 cycles
STAGES = ["k=4", "packet_size=2", "num_vcs=4", "vc_buf_size=4", "routing_delay=2",
          "st_prepare_delay=1", "st_final_delay=2"]  # fmt: skip
STAGES_MODEL = {"k": 4, "flits": 2, "vcs": 4, "vc_buffer": 4}
STAGES_IQ = {**MESHCONFIG_IQ, "routing_delay": 2, "st_prepare_delay": 1, "st_final_delay": 2}
#: name -> (packets traced, BookSim overrides of meshconfig, mpinet's model of them)
CASES = {
    # meshconfig on a 4x4 mesh past saturation: iSLIP for both allocations, tail credits
    "meshconfig": (
        3000,
        ["k=4", "injection_rate=1.0"],
        {"k": 4, "flits": 1, "vcs": 16, "vc_buffer": 8, "iq": MESHCONFIG_IQ},
    ),
    # wormhole packets of 3 flits on 2 VCs of 2 slots: every output VC contended
    "wormhole": (
        1500,
        ["k=4", "packet_size=3", "num_vcs=2", "vc_buf_size=2", "injection_rate=0.3"],
        {"k": 4, "flits": 3, "vcs": 2, "vc_buffer": 2, "iq": MESHCONFIG_IQ},
    ),
    # separable allocators, speculation, a routing stage, no tail-credit wait
    "separable": (
        1500,
        ["k=4", "packet_size=2", "num_vcs=4", "vc_buf_size=2", "wait_for_tail_credit=0",
         "vc_allocator=separable_input_first", "sw_allocator=separable_output_first",
         "speculative=1", "routing_delay=1", "credit_delay=1", "injection_rate=0.4"],
        {"k": 4, "flits": 2, "vcs": 4, "vc_buffer": 2,
         "iq": {"routing_delay": 1, "credit_delay": 1, "wait_for_tail_credit": 0,
                "vc_allocator": "separable_input_first",
                "sw_allocator": "separable_output_first", "speculative": 1}},
    ),
    # input speedup with iSLIP
    "input-speedup": (
        1500,
        ["k=4", "packet_size=2", "num_vcs=4", "vc_buf_size=4", "input_speedup=2",
         "injection_rate=0.5"],
        {"k": 4, "flits": 2, "vcs": 4, "vc_buffer": 4,
         "iq": {**MESHCONFIG_IQ, "input_speedup": 2}},
    ),
    # crossbar speedup on both sides with iSLIP
    "speedup": (
        1500,
        ["k=4", "packet_size=2", "num_vcs=4", "vc_buf_size=4", "input_speedup=2",
         "output_speedup=2", "injection_rate=0.5"],
        {"k": 4, "flits": 2, "vcs": 4, "vc_buffer": 4,
         "iq": {**MESHCONFIG_IQ, "input_speedup": 2, "output_speedup": 2}},
    ),
    # output speedup with speculation, a routing stage and internal speedup
    "speedup-speculative": (
        1500,
        ["k=4", "packet_size=3", "num_vcs=4", "vc_buf_size=3", "output_speedup=2",
         "speculative=1", "routing_delay=1", "internal_speedup=1.5", "injection_rate=0.4"],
        {"k": 4, "flits": 3, "vcs": 4, "vc_buffer": 3,
         "iq": {**MESHCONFIG_IQ, "output_speedup": 2, "speculative": 1, "routing_delay": 1,
                "internal_speedup": 1.5}},
    ),
    # stages of several cycles (the ones BookSim runs: routing and the crossbar's two halves)
    "stages": (1500, [*STAGES, "injection_rate=0.3"], {**STAGES_MODEL, "iq": STAGES_IQ}),
    # the same stages with speculation and output speedup (docs/iq-router.md, "Session 24")
    "stages-speculative": (
        1500,
        [*STAGES, "speculative=1", "output_speedup=2", "injection_rate=0.35"],
        {**STAGES_MODEL, "iq": {**STAGES_IQ, "speculative": 1, "output_speedup": 2}},
    ),
    # the same stages under internal speedup
    "stages-internal": (
        1500,
        [*STAGES, "internal_speedup=1.5", "injection_rate=0.35"],
        {**STAGES_MODEL, "iq": {**STAGES_IQ, "internal_speedup": 1.5}},
    ),
    # BookSim's torus: dim_order with its VC classes chosen at each turn (dateline-turn),
    # channels of two cycles (use_noc_latency); K odd, so no direction is drawn at random
    "torus": (
        1500,
        ["topology=torus", "k=5", "routing_function=dim_order", "packet_size=2", "num_vcs=4",
         "vc_buf_size=2", "injection_rate=0.3"],
        {"topology": "torus:5,2", "routing": "dor", "vc_policy": "dateline-turn", "flits": 2,
         "vcs": 4, "vc_buffer": 2, "iq": {**MESHCONFIG_IQ, "channel_latency": 2}},
    ),
}  # fmt: skip
#: name -> (packets traced, network, L, packets per node per cycle, router keys set as well):
#: booksim_check's configuration (V = 2, B = 4, its sample keys, seed 0) on the network's
#: anynet export; the speedups' case checks the order an output queue takes a cycle's flits
ANYNET = {
    "anynet-hypercube-5": (800, "hypercube:5", 4, 0.05, {}),
    "anynet-hypercube-5-speedup": (400, "hypercube:5", 4, 0.08,
                                   {"input_speedup": 2, "output_speedup": 2}),
}  # fmt: skip
_ENQ = re.compile(r"^(\d+) \| node(\d+) \| Enqueuing packet (\d+) at time (\d+)\.")
_RET = re.compile(r"^(\d+) \| node(\d+) \| Retiring packet (\d+) \(plat = (\d+), .*"
                  r"src = (\d+), dest = (\d+)\)")  # fmt: skip


def anynet_case(name: str, work: Path) -> tuple[int, list[str], dict, Path]:
    """An ``anynet-*`` case as :data:`CASES` has them, its configuration written to
    ``work`` (with the network's file)."""
    n, spec, flits, rate, keys = ANYNET[name]
    net = work / "net.anynet"
    subprocess.run([sys.executable, "-m", "mpinet", "export", spec, "--format", "anynet", "--out",
                    str(net)], cwd=ROOT, check=True, capture_output=True)  # fmt: skip
    a = argparse.Namespace(sample_period=500, warmup_periods=2, max_samples=6,
                           latency_thres=500.0, seed=0, booksim_set=[])  # fmt: skip
    cfg = work / "net.cfg"
    cfg.write_text(booksim_config(net.name, flits, 2, 4, a))
    model = {"topology": spec, "routing": "anynet-min", "flits": flits, "vcs": 2,
             "vc_buffer": 4, "iq": {**PIPELINE, **keys}}  # fmt: skip
    return n, [f"injection_rate={rate}", *(f"{k}={v}" for k, v in keys.items())], model, cfg


def trace(
    booksim: str, n: int, overrides: list[str], cfg: Path = MESHCONFIG
) -> tuple[list[tuple], int]:
    """``(rows, window)``: rows ``(pid, src, dst, created, retired)`` of BookSim's first
    ``n`` packets and the cycle it created packet ``n - 1``."""
    enq: dict[int, tuple[int, int]] = {}
    ret: dict[int, tuple[int, int, int]] = {}
    window = -1
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as watch:
        watch.write("".join(f"p{i}\n" for i in range(n)))
        watch.flush()
        cmd = [booksim, cfg.name, *overrides, f"watch_file={watch.name}", "watch_out=-"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, bufsize=1 << 20,
                                cwd=cfg.parent)  # fmt: skip
        try:
            for line in proc.stdout:
                if "Enqueuing packet" in line:
                    m = _ENQ.match(line)
                    enq[int(m[3])] = (int(m[4]), int(m[2]))
                    if int(m[3]) == n - 1:
                        window = int(m[1])
                elif "Retiring packet" in line:
                    m = _RET.match(line)
                    ret[int(m[3])] = (int(m[1]), int(m[5]), int(m[6]))
                    if len(ret) == n:
                        break
        finally:
            proc.kill()
            proc.wait()
    if len(ret) < n:
        sys.exit(f"booksim_trace.py: error: BookSim retired {len(ret)} of {n} packets")
    rows = []
    for pid in range(n):
        created, src = enq[pid]
        retired, s, d = ret[pid]
        assert s == src
        rows.append((pid, src, d, created, retired))
    return rows, window


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--booksim", required=True, help="the BookSim2 binary")
    ap.add_argument("cases", nargs="*", help=f"of {', '.join([*CASES, *ANYNET])} (default all)")
    a = ap.parse_args()
    for name in a.cases or [*CASES, *ANYNET]:
        with tempfile.TemporaryDirectory() as work:
            if name in ANYNET:
                n, overrides, model, cfg = anynet_case(name, Path(work))
                keys = cfg.read_text().replace("\n", " ").strip()
                what = f"{ANYNET[name][1]} exported as anynet, {keys}"
            else:
                (n, overrides, model), cfg = CASES[name], MESHCONFIG
                what = "jobs/booksim/meshconfig"
            rows, window = trace(a.booksim, n, overrides, cfg)
        path = OUT / f"iq-trace-{name}.txt"
        head = [
            f"# BookSim2's first {n} packets, traced: scripts/booksim_trace.py {name}",
            f"# booksim: {what} {' '.join(overrides)}",
            f"# model: {json.dumps(model)}",
            f"# window: {window}",
            "# pid src dst created retired",
        ]
        path.write_text("\n".join(head + [" ".join(map(str, r)) for r in rows]) + "\n")
        done = sum(r[4] <= window for r in rows)
        print(f"{path.relative_to(ROOT)}: {n} packets, window {window}, {done} retired in it")


if __name__ == "__main__":
    main()
