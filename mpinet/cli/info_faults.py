"""``mpinet info --faults / --faults-file / --fault-diameter``: options and output.

The fault set is the ``[faults]`` section of a job (:mod:`mpinet.jobs.spec`),
given inline (``--faults "random_links=0.01,seed=3"``) or read from a job
file (``--faults-file job.toml``: its ``[faults]`` and ``seed``).
"""

from __future__ import annotations

import re
import tomllib
from typing import TYPE_CHECKING, Any

from mpinet.errors import JobError
from mpinet.values import label_rows

if TYPE_CHECKING:  # an annotation only: the parsers this module builds import no numpy
    from mpinet.topology.base import Topology

FAULTS_HELP = (
    "failed nodes and links, as KEY=VALUE pairs joined by commas: random_links=P, "
    "random_nodes=P, seed=S, nodes=LABEL;LABEL, links=A-B;C-D (labels of neighbours), "
    "e.g. 'random_links=0.01,seed=3' or 'nodes=1234;4321'"
)
_KEYS = ("random_links", "random_nodes", "seed", "nodes", "links")
# a comma starts a new pair only before KEY= (labels such as '<3, 34125>' hold commas)
_SPLIT = re.compile(r",\s*(?=(?:" + "|".join(_KEYS) + r")\s*=)")


def parse_faults(text: str) -> dict:
    """``--faults`` text -> keyword arguments of :func:`~mpinet.topology.faults.make_faults`.

    Numbers are checked as the job schema checks ``[faults]`` and ``seed``
    (:data:`mpinet.jobs.spec.RULES`): probabilities in [0, 1), a seed in
    [0, 2^63 - 1]; NaN and infinities are refused.
    """
    from mpinet.jobs.spec import RULES

    out: dict[str, Any] = {}
    for item in _SPLIT.split(text.strip()):
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or key not in _KEYS:
            raise JobError(f"--faults takes {', '.join(k + '=' for k in _KEYS)}; got {item!r}")
        if key in out:
            raise JobError(f"--faults gives {key} twice; give each key once")
        if key in ("random_links", "random_nodes", "seed"):
            rule = RULES["seed" if key == "seed" else f"faults.{key}"]
            out[key] = rule.parse(f"--faults {key}", value, error=JobError)
        elif key == "nodes":
            out[key] = [v.strip() for v in value.split(";") if v.strip()]
        else:
            pairs = [v.split("-") for v in value.split(";") if v.strip()]
            if any(len(p) != 2 for p in pairs):
                raise JobError(f"--faults links are A-B pairs joined by ';', got {value!r}")
            out[key] = [[a.strip(), b.strip()] for a, b in pairs]
    return out


def faults_from_file(path: str) -> dict:
    """The ``[faults]`` section and seed of a job file, as :func:`parse_faults` returns them.

    Checked by the job schema (:func:`mpinet.jobs.spec.check_section`): a value
    of the wrong type or out of range is one line naming the file and the key.
    """
    from mpinet.jobs.spec import check_value, read_job_text

    try:
        raw = tomllib.loads(read_job_text(path))
    except tomllib.TOMLDecodeError as e:
        raise JobError(f"{path}: not valid TOML: {e}") from None
    f = raw.get("faults")
    if not isinstance(f, dict) or not f:
        raise JobError(f"{path} has no [faults] section")
    unknown = sorted(set(f) - {"links", "nodes", "random_links", "random_nodes", "step"})
    if unknown:
        raise JobError(f"{path}: unknown [faults] key(s) {', '.join(unknown)}")
    for k, v in f.items():  # the step too: the surviving graph is the same from any step
        f[k] = check_value(path, f"faults.{k}", v)
    out = {k: f[k] for k in ("links", "nodes", "random_links", "random_nodes") if k in f}
    out["seed"] = check_value(path, "seed", raw["seed"]) if "seed" in raw else 0
    return out


def make(topo: Topology, options: dict) -> Any:
    """The FaultSet of parsed options (the faults apply from the start).

    Raises
    ------
    JobError
        Every node failed: there is no surviving graph to describe.
    """
    from mpinet.topology.faults import make_faults

    faults = make_faults(topo, **options)
    if faults.nodes.size >= topo.num_nodes:
        raise JobError(
            f"--faults: every node of {topo.spec} failed ({topo.num_nodes:,} of "
            f"{topo.num_nodes:,}), so no surviving graph is left to describe; lower "
            "random_nodes or name fewer nodes"
        )
    return faults


def format_surviving(s: dict) -> str:
    """The surviving-graph block of ``mpinet info --faults``."""
    rows = [
        ("faults", f"{s['failed_nodes']:,} nodes and {s['failed_links']:,} links failed"),
        (
            "connectivity",
            f"{s['components']:,} component(s) of {s['surviving_nodes']:,} surviving nodes; "
            f"largest {s['largest_component']:,}, {s['cut_off']:,} cut off"
            + (f" (e.g. {', '.join(s['cut_off_nodes'][:3])})" if s["cut_off"] else ""),
        ),
        ("diameter", f"{s['diameter']} (within the largest component)"),
        ("avg distance", f"{s['avg_distance']:.6f} (incl. source)"),
        ("", f"{s['avg_distance_excl_source']:.6f} (excl. source)"),
    ]
    out = ["surviving graph (distances within its largest component):"]
    out += label_rows(rows, indent="  ")
    return "\n".join(out) + "\n"


def format_fault_diameters(rows: list[dict], diameter: int) -> str:
    """The fault-diameter block: one line per (k, kind)."""
    out = [f"fault diameter (exact, every set of k failed nodes or links; diameter {diameter}):"]
    for r in rows:
        what = f"{r['k']} {'node' if r['kind'] == 'nodes' else 'link'}{'s' * (r['k'] > 1)}"
        if r["diameter"] is None:
            val = f"infinite: {r['disconnecting']:,} of {r['cases']:,} cases disconnect"
        else:
            val = f"{r['diameter']} (diameter {r['diameter'] - diameter:+d})"
        worst = f"; e.g. {', '.join(r['worst'])}" if r["worst"] else ""
        cases = f"{r['cases']:,} case{'s' * (r['cases'] != 1)}"
        out.append(f"  {what:<8} {val}; {cases}{worst}")
    return "\n".join(out) + "\n"
