#!/usr/bin/env python3
"""Engine throughput on 1 and 2 ranks, as a markdown table for docs/performance.md.

Runs ``mpiexec -n R mpinet bench --json`` for each rank count (uniform
traffic, all-port; the router is ``shortest`` unless a spec says SPEC@ROUTER;
see ``mpinet bench --help``)::

    python scripts/bench_engine.py [--ranks 1,2] [--specs "scc:7;ms:3,2;fccn:4"]
                                   [--packets 8] [--repeat 3] [--trace summary]
                                   [--json] [--out FILE] [--quiet]

    # the engine issue's targets: throughput, then the backlog sweep
    python scripts/bench_engine.py --specs "ms:3,3;scc:8;fccn:6@fccn-shortest" \
        --repeat 1 --trace none
    python scripts/bench_engine.py --ranks 1 --specs ms:3,2 --packets 1,8,64,256 --trace none
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import reports  # noqa: E402
from launcher import find_mpiexec  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = reports.arguments(__doc__, out_help="also write the table to FILE", json_rows=True)
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--specs", default="scc:7;ms:3,2;fccn:4")
    ap.add_argument("--packets", default="8")
    ap.add_argument("--repeat", default="3")
    ap.add_argument("--trace", default="summary")
    args = ap.parse_args(argv)
    run = reports.Run(__file__, args, args.out)
    launcher = find_mpiexec()
    if not args.json:
        run.emit(
            "| spec | router | per node | nodes | ranks | packet-hops | steps | total s | "
            "M hops/s/rank | engine-only M hops/s/rank | engine ns/hop | cross-rank |"
        )
        run.emit("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in [int(x) for x in args.ranks.split(",")]:
        run.progress(f"mpinet bench on {r} rank(s): {args.specs}")
        cmd = [
            *launcher,
            "-n",
            str(r),
            sys.executable,
            "-m",
            "mpinet",
            "bench",
            "--json",
            "--specs",
            args.specs,
            "--packets",
            args.packets,
            "--repeat",
            args.repeat,
            "--trace",
            args.trace,
        ]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        for line in out.strip().splitlines():
            b = json.loads(line)
            if args.json:
                run.emit(json.dumps(b))
                continue
            run.emit(
                f"| {b['spec']} | {b['router']} | {b['packets_per_node']} | {b['nodes']:,} | "
                f"{b['ranks']} | {b['packet_hops']:,} | {b['steps']} | "
                f"{b['total_seconds']:.3f} | {b['hops_per_second_per_rank'] / 1e6:.2f} | "
                f"{b['engine_hops_per_second_per_rank'] / 1e6:.2f} | "
                f"{b['engine_ns_per_hop']:.0f} | {100 * b['cross_rank_fraction']:.1f}% |"
            )
    run.save(args.out, argv or sys.argv[1:], args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
