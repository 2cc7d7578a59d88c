"""Reading a deadlock analysis: its cycle in one line, and the published bounds beside it.

Split from :mod:`mpinet.deadlock.analysis` (which builds the graph); see
docs/deadlock-analysis.md for what the published numbers are and what could not be checked.
"""

from __future__ import annotations

from typing import Any

from mpinet.topology.base import Topology


def star_literature(topo: Topology, report: dict[str, Any]) -> list[dict[str, Any]]:
    """Published bounds for the n-star beside a report (empty for other families).

    Each entry: ``quantity``, ``value``, ``source``, ``note``. Only numbers
    that follow from a definition we can check are given; see
    docs/deadlock-analysis.md for what we could not verify.
    """
    if topo.family != "star":
        return []
    n = int(topo.k)  # type: ignore[attr-defined]
    diam = 3 * (n - 1) // 2
    need = report["classes_needed"]
    return [
        {
            "quantity": "diameter",
            "value": diam,
            "source": "Akers, Harel & Krishnamurthy 1987: floor(3(n-1)/2)",
            "note": f"longest route here {report['max_route_length']}",
        },
        {
            "quantity": "hop classes, any minimal routing",
            "value": diam + 1,
            "source": "structured buffer pool (Merlin & Schweitzer 1980; Gopal 1985): D + 1",
            "note": f"mpinet consumes a delivered packet without a buffer, so D = {diam} suffice "
            f"(model.max_hops = {diam - 1}); this router needs {need}",
        },
        {
            "quantity": "negative-hop classes, any minimal routing",
            "value": -(-diam // 2) + 1,
            "source": "negative-hop scheme (Gopal 1985; Boppana & Chalasani 1996) on the "
            "bipartite S_n: ceil(D/2) + 1, derived here, not quoted",
            "note": "not modelled by the engine",
        },
        {
            "quantity": "cycle-free dependencies",
            "value": "acyclic" if report["acyclic"] else "cyclic",
            "source": "Dally & Seitz 1987: acyclic suffices; for deterministic routing it is "
            "also necessary",
            "note": "one buffer per link" if report["buffer_classes"] == "none" else "hop classes",
        },
    ]


def _vcs_here(report: dict[str, Any]) -> str:
    """What this analysis found, in words."""
    if report["smallest_vcs"] is None:
        return f"vc_policy {report['vc_policy']}: cyclic for every V"
    return f"vc_policy {report['vc_policy']} needs {report['smallest_vcs']} (acyclic)"


def vc_literature(topo: Topology, report: dict[str, Any]) -> list[dict[str, Any]]:
    """Published VC counts beside a VC-level report (hypercube, CCC, star graph).

    Each entry: ``quantity``, ``value``, ``source``, ``note`` (what mpinet found, and
    why it may differ); docs/deadlock-analysis.md discusses them.
    """
    here, out = _vcs_here(report), []
    fam, policy = topo.family, report["vc_policy"]
    if fam == "hypercube":
        out.append({
            "quantity": "VCs for deadlock-free wormhole routing, dimension order (e-cube)",
            "value": 1,
            "source": "Dally & Seitz 1987: e-cube's channel dependency graph is acyclic",
            "note": f"{report['router']} here: {here}",
        })  # fmt: skip
    if fam == "ccc":
        out.append({
            "quantity": "VCs per channel for deadlock-free CCC routing",
            "value": 2,
            "source": "Dally & Seitz 1987: their CCC routing, the cycles split at a dateline",
            "note": f"{report['router']} here: {here}; the nearest is ccc mode=sweep under "
            "vc_policy dateline",
        })  # fmt: skip
    if fam == "star" and policy in ("negative-hop", "hops"):
        n = int(topo.k)  # type: ignore[attr-defined]
        diam = 3 * (n - 1) // 2
        if policy == "negative-hop":
            out.append({
                "quantity": "VCs, negative-hop scheme, minimal routing",
                "value": -(-diam // 2) + 1,
                "source": "negative-hop scheme (Gopal 1985; Boppana & Chalasani 1996) on the "
                f"bipartite S_{n}: ceil(D/2) + 1, D = floor(3(n-1)/2) = {diam}, every hop counted",
                "note": f"the last hop takes no VC here, so a minimal router needs at most "
                f"floor(D/2) + 1 = {diam // 2 + 1}; {report['router']} here: {here}",
            })  # fmt: skip
        else:
            out.append({
                "quantity": "VCs, hop-count scheme, minimal routing",
                "value": diam + 1,
                "source": "structured buffer pool (Merlin & Schweitzer 1980; Gopal 1985): D + 1",
                "note": f"VC = hops before the hop and the last hop takes no VC here: D - 1 = "
                f"{diam - 1}; {report['router']} here: {here}",
            })  # fmt: skip
    if out:
        out.append({
            "quantity": "cycle-free dependencies",
            "value": "acyclic" if report["acyclic"] else "cyclic",
            "source": "Dally & Seitz 1987: acyclic suffices; for deterministic routing it is "
            "also necessary",
            "note": f"(link, VC) pairs, {report['vcs']} VCs",
        })  # fmt: skip
    return out
