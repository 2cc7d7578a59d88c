"""Star and complete-transposition emulation on IMS networks, and paper 004's Table 2.

Paper 004 section 5.1 claims that every IMS variant embeds the star graph of
the same size with dilation 3 (as Theorem 3.1 for MS) and the complete
transposition graph with dilation 5 (two levels) or 7 (more). Here the words
are built for any :class:`~mpinet.topology.ims.IncompleteMacroStar` and
validated symbolically, by composing the ports' position generators with
:mod:`mpinet.perm`; :func:`ct_dilation` finds the true dilation by
breadth-first search. :func:`table2_rows` recomputes Table 2 (node degree,
basic module, off-module links per node) from topology objects.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mpinet import perm
from mpinet.errors import TopologyError
from mpinet.topology import from_spec
from mpinet.topology.ims import IncompleteMacroStar
from mpinet.topology.permgraph import PermCayley
from mpinet.values import check_int

__all__ = [
    "TABLE2",
    "Table2Row",
    "ct_dilation",
    "ims_ct_word",
    "ims_sdc_word",
    "module_links",
    "table2_rows",
    "words_perm",
]


def words_perm(topo: PermCayley, word: Sequence[str]) -> np.ndarray:
    """Product ``g_1 * g_2 * ... * g_m`` of a word of port names, shape ``(k,)`` uint8."""
    p = perm.identity(topo.k)
    for port in word:
        if port not in topo.ports:
            raise TopologyError(f"{port!r} is not a port of {topo.spec}: {', '.join(topo.ports)}")
        p = perm.compose(p, topo.gens[topo.ports.index(port)])
    return p[0]


def ims_sdc_word(topo: IncompleteMacroStar, j: int) -> list[str]:
    """Star dimension ``T_j`` (2 <= j <= k) as IMS ports: ``[Tj]`` in block 1, else
    ``[S_i, T_{o+2}, S_i]`` for position ``j`` at offset ``o`` of block ``i``."""
    j = check_int(f"star dimension j of {topo.spec}", j, 2, topo.k)
    block, off = topo.block_of(j)
    if block == 1:
        return [f"T{j}"]
    return [f"S{block}", f"T{off + 2}", f"S{block}"]


def ims_ct_word(topo: IncompleteMacroStar, i: int, j: int) -> list[str]:
    """Complete-transposition generator ``T_{i,j}`` (1-based positions) as IMS ports.

    Theorem 4.9's construction with the IMS blocks: ``T_j`` words for ``i = 1``;
    ``T_i w(j) T_i`` for ``i`` in block 1; ``S_b T T T S_b`` for ``i, j`` in one
    block ``b``; else ``S_b T_{i'} w(j) T_{i'} S_b`` (``i < j``). At most 7 ports.
    """
    i = check_int(f"position i of {topo.spec}", i, 1, topo.k)
    j = check_int(f"position j of {topo.spec}", j, 1, topo.k)
    if i == j:
        raise TopologyError(f"T_(i,j) needs two distinct positions, got i = j = {i}")
    i, j = min(i, j), max(i, j)
    if i == 1:
        return ims_sdc_word(topo, j)
    bi, oi = topo.block_of(i)
    if bi == 1:
        return [f"T{i}", *ims_sdc_word(topo, j), f"T{i}"]
    bj, oj = topo.block_of(j)
    s, ti = f"S{bi}", f"T{oi + 2}"
    if bi == bj:
        return [s, ti, f"T{oj + 2}", ti, s]
    return [s, ti, *ims_sdc_word(topo, j), ti, s]


def ct_dilation(topo: PermCayley) -> tuple[int, int]:
    """True dilation of the complete transposition graph in ``topo``, by BFS.

    Returns ``(max, mean * C(k, 2))``: the largest and the summed distance from
    the identity to the ``C(k, 2)`` transpositions (the dilation, since the graph
    is a Cayley graph). Only for ``k <= 9`` (BFS over ``k!`` nodes).
    """
    if topo.k > 9:
        raise TopologyError(f"ct_dilation runs a BFS over k! nodes; needs k <= 9, got {topo.k}")
    n = topo.num_nodes
    dist = np.full(n, -1, dtype=np.int16)
    dist[0] = 0
    frontier = np.zeros(1, dtype=np.int64)
    level = 0
    while frontier.size:
        level += 1
        t = topo.neighbors(frontier).ravel()
        t = np.unique(t[(t >= 0)])
        t = t[dist[t] < 0]
        dist[t] = level
        frontier = t
    pairs = [(a, b) for a in range(topo.k) for b in range(a + 1, topo.k)]
    ids = perm.rank(np.array([perm.transposition(topo.k, a, b) for a, b in pairs]))
    d = dist[ids].astype(np.int64)
    return int(d.max()), int(d.sum())


def module_links(topo: PermCayley, module: int) -> tuple[int, int]:
    """``(in-module, off-module)`` ports per node when the basic module is the
    sub-Cayley graph on the first ``module`` positions.

    A port stays inside the module exactly when its generator fixes every
    position from ``module`` on (1-based ``module + 1 ..``).

    Raises
    ------
    TopologyError
        The in-module ports do not generate the ``module``-star (``T_2..T_module``).
    """
    inside = [g for g in topo.gens if (g[module:] == np.arange(module, topo.k)).all()]
    stars = {tuple(perm.transposition(topo.k, j)) for j in range(1, module)}
    if {tuple(int(x) for x in g) for g in inside} != stars:
        raise TopologyError(f"the first {module} positions of {topo.spec} are not a {module}-star")
    return len(inside), topo.degree - len(inside)


@dataclass(frozen=True)
class Table2Row:
    """One network option of Table 2, as printed and as computed."""

    paper_nodes: str  # e.g. "8!"
    paper_network: str
    spec: str
    module: int  # basic module: the module-star
    paper_degree: int
    paper_offmodule: int
    nodes: int = 0
    degree: int = 0
    offmodule: int = 0

    @property
    def nodes_factorial(self) -> str:
        """Computed size as ``k!`` (or the number if it is not a factorial)."""
        k = next((k for k in range(1, 21) if math.factorial(k) == self.nodes), None)
        return f"{k}!" if k else str(self.nodes)

    @property
    def agrees(self) -> bool:
        """Size, degree and off-module links all as printed."""
        return (
            self.nodes_factorial == self.paper_nodes
            and self.degree == self.paper_degree
            and self.offmodule == self.paper_offmodule
        )


#: Table 2 of paper 004 as printed, one entry per network option
#: (nodes, network, spec, module star, degree, off-module links per node)
TABLE2: tuple[tuple[str, str, str, int, int, int], ...] = (
    ("7!", "7-star", "star:7", 3, 6, 4),
    ("7!", "7-star", "star:7", 4, 6, 3),
    ("8!", "8-star", "star:8", 4, 7, 4),
    ("8!", "8-star", "star:8", 5, 7, 3),
    ("9!", "9-star", "star:9", 4, 8, 5),
    ("9!", "9-star", "star:9", 5, 8, 4),
    ("10!", "10-star", "star:10", 4, 9, 6),
    ("7!", "MS(3,2)", "ms:3,2", 3, 4, 2),
    ("7!", "MS(2,3)", "ms:2,3", 4, 4, 1),
    ("8!", "IMS((1),3,3)", "ims:1,3,3", 4, 5, 2),
    ("8!", "IMS((2),2,4)", "ims:2,2,4", 5, 5, 1),
    ("9!", "IMS((2),3,3)", "ims:2,3,3", 4, 5, 2),
    ("9!", "MS(2,4)", "ms:2,4", 5, 5, 1),
    ("10!", "MS(3,3)", "ms:3,3", 4, 5, 2),
)


def table2_rows() -> list[Table2Row]:
    """Table 2 recomputed: each option's size, degree and off-module links from its
    topology object (:func:`module_links`), beside the printed values."""
    rows = []
    for nodes, name, spec, module, deg, off in TABLE2:
        topo = from_spec(spec)
        if not isinstance(topo, PermCayley):  # TABLE2 names permutation networks only
            raise TopologyError(f"Table 2 row {spec!r} is not a Cayley graph of permutations")
        _, offmodule = module_links(topo, module)
        rows.append(
            Table2Row(nodes, name, spec, module, deg, off, topo.num_nodes, topo.degree, offmodule)
        )
    return rows
