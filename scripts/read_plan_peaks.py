"""Measure the peak memory of reading network files against the read plan.

Usage: python scripts/read_plan_peaks.py [MB ...] [WORDS] [--out FILE] [--quiet]
(default: 2 8 24, every kind; WORDS: only the kinds whose name holds them, e.g. ``edge list``)

For each size, writes the densest files of each format (the most elements per byte:
short ids, one link per line or element, GraphML also on one line) and reads each
in a fresh interpreter, whose peak resident memory above its state just before the
read (``VmHWM`` reset by ``/proc/self/clear_refs``; not ``ru_maxrss``, which keeps the
parent's peak across ``exec``), imports and compiled kernels loaded, is compared with
:func:`mpinet.netfile.estimate_read_bytes`. Prints a Markdown table
(docs/networks.md, "The read plan").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reports  # noqa: E402

CHILD = r"""
import json, sys
import numpy as np


def status(key):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024



from mpinet.netfile import estimate_read_bytes, read_network
from mpinet.netfile import edgelist, graphml, anynet  # noqa: F401 (imports out of the peak)
path, fmt = sys.argv[1], sys.argv[2]
read_network(sys.argv[3], fmt)  # compile the kernels on a small file first
import gc; gc.collect()
with open("/proc/self/clear_refs", "w") as fh:  # the high-water mark back to the current RSS
    fh.write("5")
before = status("VmRSS")
g = read_network(path, fmt)
peak = status("VmHWM") - before
buf = np.fromfile(path, dtype=np.uint8)
lines = int(np.count_nonzero(buf == 10)) + 1
print(json.dumps({"peak": peak, "plan": estimate_read_bytes(buf.size, lines, fmt),
                  "size": int(buf.size), "nodes": g.num_nodes}))
"""


def _path_edges(n: int) -> str:
    return "".join(f"{i} {i + 1}\n" for i in range(n - 1))


def _sparse_edges(n: int) -> str:
    """Ids far apart (labels kept): numbered by a sort, not by a presence map."""
    return "".join(f"{i * 10**9} {(i + 1) * 10**9}\n" for i in range(n - 1))


def _graphml(n: int, sep: str) -> str:
    head = '<?xml version="1.0"?><graphml><graph edgedefault="undirected">' + sep
    nodes = sep.join(f'<node id="{i}"/>' for i in range(n))
    edges = sep.join(f'<edge source="{i}" target="{i + 1}"/>' for i in range(n - 1))
    return head + nodes + sep + edges + sep + "</graph></graphml>\n"


def _graphml_edges_first(n: int) -> str:
    """Edges naming nodes declared after them: the reader keeps every pending id."""
    head = '<?xml version="1.0"?><graphml><graph edgedefault="undirected">\n'
    edges = "\n".join(f'<edge source="{i}" target="{i + 1}"/>' for i in range(n - 1))
    nodes = "\n".join(f'<node id="{i}"/>' for i in range(n))
    return head + edges + "\n" + nodes + "\n</graph></graphml>\n"


def _exported(n: int) -> str:
    """``mpinet export --format edgelist`` of a hypercube of about n nodes: named ports."""
    import io

    from mpinet.topology import export, from_spec

    buf = io.StringIO()
    export.write(from_spec(f"hypercube:{max(2, n.bit_length() - 1)}"), "edgelist", buf)
    return buf.getvalue()


def _anynet(n: int) -> str:
    return "".join(f"router {i} router {i + 1}\n" for i in range(n - 1))


KINDS = {  # name -> (format, bytes per node about, writer)
    "edge list, `u v` lines": ("edgelist", 14, _path_edges),
    "edge list, ids far apart": ("edgelist", 22, _sparse_edges),
    "edge list, exported hypercube (named ports)": ("edgelist", 300, _exported),
    "GraphML, one element a line": ("graphml", 50, lambda n: _graphml(n, "\n")),
    "GraphML, all on one line": ("graphml", 49, lambda n: _graphml(n, "")),
    "GraphML, edges before nodes": ("graphml", 50, _graphml_edges_first),
    "anynet, `router u router v` lines": ("anynet", 27, _anynet),
}


def measure(sizes: list[float], only: str, run: reports.Run) -> list[tuple[str, dict]]:
    """(kind, the child's figures) for every kind whose name holds ``only``, every size."""
    rows = []
    with tempfile.TemporaryDirectory() as d:
        small = os.path.join(d, "small")
        with open(small, "w") as fh:
            fh.write("0 1\n1 2\n2 0\n")
        for name, (fmt, per, write) in KINDS.items():
            if only not in name:
                continue
            warm = {"edgelist": "0 1\n1 2\n2 0\n", "graphml": _graphml(3, "\n"),
                    "anynet": _anynet(3) + "router 2 router 0\n"}  # fmt: skip
            with open(small, "w") as fh:
                fh.write(warm[fmt])
            for mb in sizes:
                path = os.path.join(d, "net")
                with open(path, "w") as fh:
                    fh.write(write(int(mb * 1e6 / per)))
                out = subprocess.run([sys.executable, "-c", CHILD, path, fmt, small],
                                     capture_output=True, text=True, check=True)  # fmt: skip
                r = json.loads(out.stdout)
                rows.append((name, r))
                run.progress(f"{name} {r}")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = reports.arguments(__doc__, out_help="also write the table to FILE")
    ap.add_argument("what", nargs="*", metavar="MB|WORD", help="sizes in MB, then words")
    args = ap.parse_args(argv)
    run = reports.Run(__file__, args, args.out)
    words = [x for x in args.what if not x.replace(".", "").isdigit()]
    sizes = [float(x) for x in args.what if x not in words] or [2, 8, 24]
    rows = measure(sizes, " ".join(words), run)
    run.emit("| file | size | nodes | plan | peak (above the interpreter) | plan / peak |")
    run.emit("|---|--:|--:|--:|--:|--:|")
    for name, r in rows:
        mib = 2**20
        run.emit(f"| {name} | {r['size'] / 1e6:.1f} MB | {r['nodes']:,} | "
                 f"{r['plan'] / mib:,.0f} MiB | {r['peak'] / mib:,.0f} MiB | "
                 f"{r['plan'] / max(r['peak'], 1):.2f} |")  # fmt: skip
    run.save(args.out, argv or sys.argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
