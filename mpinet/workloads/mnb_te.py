"""Multinode broadcast (MNB) on Cayley graphs (paper 004, section 4); TE is in :mod:`.te`.

**MNB** (every node broadcasts its own message; copy semantics, one message per
node, on :mod:`mpinet.engine.collective`). On a Cayley graph whose port ``g``
multiplies every node by the same generator, a spanning tree ``T`` of the
identity, translated to every source ``s`` (``s * T``), broadcasts all the
messages at once: if tree edge ``h -> h * g`` is scheduled at step ``t``, every
node ``x`` sends on port ``g`` the message of source ``x * h^-1`` (the one that
sits at tree position ``h`` of its source). A tree node is scheduled only
after its parent, and each step uses each generator for at most one tree
edge, so every link carries at most one message per step, and no node ever
receives a message twice (its source's tree reaches it once).

* ``sdc`` and ``one-port``: one tree edge per step (the BFS order of the
  identity's tree): every node sends one message and receives one new message
  in every step, so the MNB takes exactly ``N - 1`` steps -- the lower bound
  under both models (a node receives at most one message per step). This is
  the k! - 1 of Misic and Jovanovic for the star under SDC (paper 004, section
  4.1), and beats Cor. 4.3's ``N + o(N)`` for MS (obtained there by emulation).
* ``all-port``: a greedy tree (:func:`allport_tree`): each step, every
  generator adds one uninformed tree node when it can. Lower bound: every node
  receives ``N - 1`` messages on ``degree`` links, and at least the
  eccentricity: ``max(ceil((N - 1) / degree), diameter)``.
"""

from __future__ import annotations

import math

import numpy as np

from mpinet.engine.collective import Holdings
from mpinet.errors import MpinetError
from mpinet.routing.tables import distances_from, neighbor_table
from mpinet.topology.base import Topology
from mpinet.workloads.checks import Check


class MNBError(MpinetError, ValueError):
    """The MNB schedule does not apply to this topology."""


def _cayley_table(topo: Topology) -> np.ndarray:
    if topo.family not in ("star", "ms"):
        raise MNBError(
            f"the translated-tree MNB needs a Cayley graph whose ports are generators "
            f"(star, ms), not {topo.spec}"
        )
    return neighbor_table(topo).astype(np.int64)


def bfs_tree(nb: np.ndarray, root: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BFS order, parent and parent port of the tree of ``root`` (lowest port first)."""
    n = nb.shape[0]
    parent = np.full(n, -1, dtype=np.int64)
    pport = np.full(n, -1, dtype=np.int64)
    seen = np.zeros(n, dtype=bool)
    seen[root] = True
    order = [root]
    i = 0
    while i < len(order):
        h = order[i]
        i += 1
        for g, c in enumerate(nb[h]):
            if c >= 0 and not seen[c]:
                seen[c] = True
                parent[c], pport[c] = h, g
                order.append(int(c))
    return np.array(order, dtype=np.int64), parent, pport


def allport_tree(nb: np.ndarray, root: int = 0) -> list[np.ndarray]:
    """Greedy all-port schedule: per step, rows ``(parent, port)`` of the new tree edges.

    In each step every generator ``g`` adds the edge ``h -> h * g`` of the
    oldest informed ``h`` whose ``g``-neighbour is still uninformed (and not
    added by another generator in the same step); a node informed in step ``t``
    becomes a parent from step ``t + 1``.
    """
    n, deg = nb.shape
    informed = np.zeros(n, dtype=bool)
    informed[root] = True
    queue = [root]  # informed nodes in the order they were informed
    ptr = [0] * deg  # next candidate of each generator in ``queue``
    count, steps = 1, []
    while count < n:
        ready = len(queue)  # only nodes informed before this step send
        rows = []
        for g in range(deg):
            while ptr[g] < ready:
                h = queue[ptr[g]]
                ptr[g] += 1
                c = nb[h, g]
                if c >= 0 and not informed[c]:
                    informed[c] = True
                    rows.append((h, g))
                    queue.append(int(c))
                    break
        if not rows:
            raise MNBError("the graph is not connected: the MNB cannot finish")
        count += len(rows)
        steps.append(np.array(rows, dtype=np.int64))
    return steps


class TreeMNB:
    """MNB by a spanning tree of the identity translated to every source.

    Parameters
    ----------
    topo : a star or macro-star (Cayley graph, ports = generators)
    model : ``"sdc"`` / ``"one-port"`` (one tree edge per step, ``N - 1`` steps)
        or ``"all-port"`` (greedy tree, :func:`allport_tree`)
    """

    messages: int

    def __init__(self, topo: Topology, model: str = "sdc") -> None:
        nb = _cayley_table(topo)
        self.topo, self.nb = topo, nb
        self.messages = topo.num_nodes
        root = topo.identity
        if model in ("sdc", "one-port"):
            order, parent, pport = bfs_tree(nb, root)
            kids = order[1:]
            self.schedule = [np.array([[parent[c], pport[c]]]) for c in kids]
            self.name = f"tree MNB ({model}, BFS order)"
        elif model == "all-port":
            self.schedule = allport_tree(nb, root)
            self.name = "tree MNB (all-port, greedy)"
        else:
            raise MNBError(f"TreeMNB model must be sdc, one-port or all-port, got {model!r}")
        # each tree node's port path from the root, to translate messages back
        self.path: dict[int, list[int]] = {root: []}
        for rows in self.schedule:
            for h, g in rows:
                self.path[int(nb[h, g])] = self.path[int(h)] + [int(g)]
        self.depth = max(len(p) for p in self.path.values())

    @property
    def planned_steps(self) -> int:
        return len(self.schedule)

    def start(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        v = np.arange(lo, hi, dtype=np.int64)
        return v, v

    def _source_at(self, x: np.ndarray, h: int) -> np.ndarray:
        """Source of the message at tree position ``h`` of its tree, for nodes ``x``."""
        for g in reversed(self.path[h]):  # x * h^-1: undo the path, last generator first
            x = self.nb[x, self.topo.reverse_of(x, g)]
        return x

    def transmissions(self, step: int, held: Holdings):
        if step > len(self.schedule):
            e = np.empty(0, dtype=np.int64)
            return e, e, e
        x = np.arange(held.lo, held.hi, dtype=np.int64)
        rows = self.schedule[step - 1]
        nodes = np.tile(x, rows.shape[0])
        ports = np.repeat(rows[:, 1], x.size)
        msgs = np.concatenate([self._source_at(x, int(h)) for h in rows[:, 0]])
        return nodes, ports, msgs

    def wanted(self, lo: int, hi: int) -> np.ndarray:
        return np.ones((hi - lo, self.messages), dtype=bool)


def mnb_lower_bound(topo: Topology, model: str) -> int:
    """Exact MNB lower bound: ``N - 1`` (sdc, one-port), else max(ceil((N-1)/deg), diameter)."""
    n = topo.num_nodes
    if model in ("sdc", "one-port"):
        return n - 1
    return max(math.ceil((n - 1) / topo.degree), int(distances_from(topo, topo.identity).max()))


# -- the catalogue -------------------------------------------------------------------------------

_MNB_SRC = {
    "sdc": "paper 004 sec. 4.1: MNB in k!-1 on the k-star under SDC (Misic-Jovanovic); "
    "Cor. 4.3: N + o(N) on MS (asymptotic)",
    "one-port": "paper 004 sec. 4.1 SDC schedules are one-port; Cor. 4.3: N + o(N) on MS",
    "all-port": "paper 004 sec. 4.2: Theta((k-1)!) on the k-star (Fragopoulou-Akl); "
    "Cor. 4.6: Theta(N sqrt(log log N / log N)) on MS with l = Theta(n) (asymptotic)",
}


def _checks():
    out = []
    mnb = [("star:4", True), ("star:5", True), ("ms:2,2", True), ("star:6", False)]
    mnb += [("ms:3,2", False), ("ms:2,3", False), ("star:7", False)]
    for spec, quick in mnb:
        for model in ("sdc", "one-port", "all-port"):
            out.append(
                Check(
                    spec,
                    "multinode broadcast (tree)",
                    model,
                    lambda t, m=model: TreeMNB(t, m),
                    lambda t, m=model: mnb_lower_bound(t, m),
                    # k! - 1 on the k-star under SDC: a concrete formula of the paper
                    paper_steps=(
                        (lambda t: t.num_nodes - 1)
                        if model == "sdc" and spec.startswith("star")
                        else None
                    ),
                    paper_source=_MNB_SRC[model],
                    quick=quick,
                )
            )
    return out


CHECKS = _checks()
