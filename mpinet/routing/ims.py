"""Routers for the macro-star variants of paper 004 section 5.1: IMS and CMS.

``ims-two-phase``
    Section 5.1's extension of the MS routing algorithm (section 3.1) to
    IMS((m), l, n): Phase 1 exchanges symbols in the order of a minimal star
    route; a symbol of a full block is reached as in MS (``S_i`` brings the
    block to the left, then a ``T`` hop, the block stays there), a symbol of an
    incomplete block by a complete SDC emulation ``S_i T S_i``. Phase 2 sorts
    the full blocks as an l'-star. With ``sdc="merged"`` (default) the closing
    ``S_i`` of an emulation is delayed until the route needs the positions it
    occupies, so ``S_i T S_i S_i T S_i`` becomes ``S_i T T S_i``; ``sdc="complete"``
    is the paper's literal three steps (a node may then be visited twice).
``ims-star-emulation``
    Theorem 3.1 on IMS: a minimal k-star route, every ``T_j`` outside block 1 as
    ``S_i T_j' S_i`` (dilation 3).
``cms-clusters``
    CMS((c), l, n), cluster by cluster: inside a kept level-l cluster the MS
    router ``ms-merged`` (a route between two nodes of one level-l cluster never
    uses ``S_l``, so it stays there); to another cluster the packet follows a
    shortest path of the kept-cluster graph, routing with ``ms-merged`` to the
    node of its cluster whose block 1 is the next cluster's last block (the
    remaining symbols in increasing order), then takes ``S_l``.
"""

from __future__ import annotations

import numpy as np

from mpinet import perm
from mpinet.errors import ResourceError, RoutingError
from mpinet.routing import macrostar_game as mg
from mpinet.routing.base import HopContext, Router
from mpinet.routing.macrostar import ChoiceRouter, Merged
from mpinet.topology.base import Topology
from mpinet.topology.cms import ClusteredMacroStar
from mpinet.topology.ims import IncompleteMacroStar, block_positions

SDC = ("merged", "complete")
#: largest number of kept clusters whose (c, c) next-cluster table ``cms-clusters`` builds
MAX_CMS_CLUSTERS = 4096


class _ImsRouter(ChoiceRouter):
    """Common set-up: block layout, the ``choice`` rule, relative permutations."""

    families = ("ims",)
    topology_type = IncompleteMacroStar

    def __init__(self, topo: Topology, choice: str = "first", **options: object) -> None:
        super().__init__(topo, choice=choice, **options)
        self.n, self.l, self.k, self.full = topo.n, topo.l, topo.k, topo.full
        # block index (0-based) and offset of every position (position 0: block -1)
        self.block = np.full(self.k, -1, dtype=np.int64)
        self.offset = np.zeros(self.k, dtype=np.int64)
        for b, pos in enumerate(block_positions(topo.sizes)):
            self.block[pos] = b
            self.offset[pos] = np.arange(pos.size)
        self.gens = topo.gens

    def s_port(self, b: np.ndarray) -> np.ndarray:
        """Port of ``S_{b+1}`` (block ``b`` 0-based, ``b >= 1``)."""
        return self.n + b - 1


class ImsStarEmulation(_ImsRouter):
    """Theorem 3.1 on IMS (distributed; header = owed ports).

    The next transposition ``T_j`` of a minimal star route (cycle following,
    :func:`macrostar_game.star_step`) is taken directly when position ``j`` is
    in block 1, else as ``S_i T_{o+2} S_i`` for position ``j`` at offset ``o`` of
    block ``i``. Header: ``(p1 + 1) + 256 (p2 + 1)``, the ports still owed.

    Parameters
    ----------
    topo : IncompleteMacroStar
    choice : {"first", "random"}
        The star route's next cycle: the lowest misplaced position, or uniform.
    """

    name = "ims-star-emulation"
    summary = "minimal star route, far transpositions as S T S (paper 004, Thm 3.1, sec. 5.1)"
    header_width = 1

    def __init__(self, topo: Topology, choice: str = "first") -> None:
        super().__init__(topo, choice=choice)

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """The owed port if any, else the first hop of the next star transposition."""
        owed = headers[:, 0]
        j = mg.star_step(mg.relative(self.k, nodes, dests), self._u(ctx))
        block, offset = self.block[j], self.offset[j]
        return mg.star_emulation_hop(owed, block, offset, self.s_port(block))


class ImsTwoPhase(_ImsRouter):
    """Section 5.1's IMS routing: MS routing with SDC emulations for incomplete blocks
    (distributed; header = owed T port, open incomplete block, full-box colours).

    Phase 1 follows a minimal star route computed on the *home frame*: the
    node's permutation with an open incomplete block swapped back and the full
    boxes read in colour order (box ``b`` had colour ``b`` at the source; the
    colours move with the boxes). The next symbol to exchange is reached by a
    ``T`` hop when it lies in positions 2..n+1; else an open incomplete block is
    closed first (``S_i``); else its full box is brought to the left (``S_i``, then
    the owed ``T``; the box stays); else its incomplete block is opened (``S_i``,
    then the owed ``T``). Phase 2 closes an open block and sorts the full boxes
    as an l'-star (section 2.1's Phase 2).

    Header: word 0 = owed T port + 1 (0 = none), word 1 = port of the open
    incomplete block + 1 (0 = none), then the packed colours of the full boxes.

    Parameters
    ----------
    topo : IncompleteMacroStar
    choice : {"first", "random"}
        The star route's next cycle and Phase 2's box, as for ``ms-two-phase``.
    sdc : {"merged", "complete"}
        "complete": every incomplete-block exchange is the paper's three-step
        ``S_i T S_i``; "merged" (default): the closing ``S_i`` waits until the
        route needs block 1's first positions back (never revisits a node).
    """

    name = "ims-two-phase"
    summary = "MS routing of sec. 3.1 with S T S for incomplete blocks (paper 004, sec. 5.1)"

    def __init__(self, topo: Topology, choice: str = "first", sdc: str = "merged") -> None:
        super().__init__(topo, choice=choice, sdc=sdc)
        if sdc not in SDC:
            raise RoutingError(f"sdc of router {self.name!r} must be one of {SDC}, got {sdc!r}")
        self.sdc = sdc
        self.header_width = 2 + mg.colour_words(self.full)

    def init_headers(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Nothing owed, no block open, box ``b`` of colour ``b``."""
        m = np.asarray(src).size
        out = np.zeros((m, self.header_width), dtype=np.int64)
        out[:, 2:] = mg.pack_colours(mg.home_colours(m, self.full))
        return out

    def _home_frame(self, rel: np.ndarray, opened: np.ndarray, sig: np.ndarray) -> np.ndarray:
        """``rel`` with the open block closed and the full boxes in colour order."""
        v = rel.copy()
        rows = np.flatnonzero(opened > 0)
        if rows.size:
            g = self.gens[opened[rows] - 1]  # S_i is an involution
            v[rows] = np.take_along_axis(rel[rows], g, axis=1)
        n, f, m = self.n, self.full, rel.shape[0]
        pos = np.argsort(sig, axis=1)  # pos[c] = position of the box of colour c
        src = 1 + pos[:, :, None] * n + np.arange(n)  # (M, f, n) physical positions
        v[:, 1 : 1 + f * n] = np.take_along_axis(v, src.reshape(m, f * n), axis=1)
        return v

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """One hop of Phase 1 or Phase 2 per packet (see the class docstring)."""
        n, f = self.n, self.full
        rel = mg.relative(self.k, nodes, dests)
        owed, opened = headers[:, 0], headers[:, 1]
        sig = mg.unpack_colours(headers[:, 2:], f)
        v = self._home_frame(rel, opened, sig)
        star_done = (v == np.arange(self.k, dtype=v.dtype)).all(axis=1)
        j = mg.star_step(v, self._u(ctx))
        y = v[np.arange(v.shape[0]), j]
        ph = np.argmax(rel == y[:, None], axis=1)  # where that symbol is now
        blk, off = self.block[ph], self.offset[ph]
        # Phase 2: the l'-star routing of the full boxes (lead colour home, else a misplaced box)
        lead = sig[:, 0]
        other = mg.pick(sig[:, 1:] != np.arange(1, f), self._u(ctx)) + 1
        order = self.s_port(np.where(lead != 0, lead, other))
        close = opened - 1
        is_open = opened > 0
        front = (ph >= 1) & (ph <= n)
        if self.sdc == "complete":
            front &= ~is_open
        phase1 = np.where(front, ph - 1, np.where(is_open, close, self.s_port(blk)))
        ports = np.where(
            owed != 0,
            owed - 1,
            np.where(star_done, np.where(is_open, close, order), phase1),
        ).astype(np.int64)
        # header after the hop
        start = (owed == 0) & ~star_done & ~front & ~is_open  # an S hop that owes a T
        out = np.empty_like(headers)
        out[:, 0] = np.where(start, off + 1, 0)
        closing = (owed == 0) & is_open & (star_done | ~front)
        opening = start & (blk >= f)
        out[:, 1] = np.where(closing, 0, np.where(opening, ports + 1, opened))
        box_hop = (ports >= n) & (ports < n + f - 1)
        new_sig = sig.copy()
        rows = np.flatnonzero(box_hop)
        if rows.size:
            b = ports[rows] - n + 1
            new_sig[rows, 0], new_sig[rows, b] = sig[rows, b], sig[rows, 0]
        out[:, 2:] = mg.pack_colours(new_sig)
        return ports, out


class CmsClusters(Router):
    """CMS routing cluster by cluster (distributed; header = current target + 1, colours).

    At a node of kept cluster ``X`` for a destination in cluster ``Y``: if
    ``X = Y`` the target is the destination; else the target is the *gate* of
    ``X`` towards ``Z``, the next cluster on a shortest path of the kept-cluster
    graph (lowest index on ties): the node of ``X`` whose block 1 is ``Z``'s last
    block and whose other free positions hold the remaining symbols in
    increasing order. At the gate the packet takes ``S_l``; elsewhere it makes one
    hop of ``ms-merged`` towards the target inside ``X``. Header word 0 is the MS
    id of the current target plus one; the rest are ``ms-merged``'s box colours,
    recomputed whenever the target changes.

    Parameters
    ----------
    topo : ClusteredMacroStar
    choice : {"first", "random"}
        Passed to ``ms-merged``.
    """

    name = "cms-clusters"
    summary = "ms-merged inside a cluster, kept-cluster graph between clusters (paper 004, 5.1)"
    families = ("cms",)
    distributed = True

    def __init__(self, topo: Topology, choice: str = "first") -> None:
        super().__init__(topo, choice=choice)
        if not isinstance(topo, ClusteredMacroStar):
            raise RoutingError(f"router {self.name!r} applies to cms only, not {topo.spec}")
        if topo.c > MAX_CMS_CLUSTERS:
            raise ResourceError(
                f"router {self.name!r} builds a (c, c) next-cluster table; c = {topo.c} is over "
                f"the limit of {MAX_CMS_CLUSTERS}"
            )
        self.inner = Merged(topo.ms, choice=choice)
        self.header_width = 1 + self.inner.header_width
        self.next_cluster = _next_cluster(topo.cluster_adjacency())
        self.gates = _gates(topo)  # (c, c) MS ids: gate of X towards Z
        self.s_l = topo.degree - 1

    def init_headers(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """No target yet (word 0 = 0): the first hop chooses it and the colours."""
        return np.zeros((np.asarray(src).size, self.header_width), dtype=np.int64)

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """``S_l`` at a gate, else one ``ms-merged`` hop towards the target."""
        topo: ClusteredMacroStar = self.topo  # type: ignore[assignment]
        x, y = topo.cluster(nodes), topo.cluster(dests)
        cur, dst = topo.to_ms(nodes), topo.to_ms(dests)
        z = self.next_cluster[x, y]
        target = np.where(x == y, dst, self.gates[x, z])
        at_gate = cur == target
        fresh = headers[:, 0] != target + 1
        inner = headers[:, 1:].copy()
        if fresh.any():
            inner[fresh] = self.inner.init_headers(cur[fresh], target[fresh])
        ports = np.full(cur.size, self.s_l, dtype=np.int64)
        out = np.zeros_like(headers)
        go = np.flatnonzero(~at_gate)
        if go.size:
            sub = HopContext(ctx.step, ctx.pids[go], ctx.hops[go], ctx.seed)
            p, h = self.inner.next_port(cur[go], target[go], inner[go], sub)
            ports[go] = p
            out[go, 0] = target[go] + 1
            out[go, 1:] = h
        return ports, out


def _next_cluster(adj: np.ndarray) -> np.ndarray:
    """``(c, c)`` next cluster on a shortest path of the cluster graph (BFS from each target)."""
    c = adj.shape[0]
    nxt = np.full((c, c), -1, dtype=np.int64)
    for t in range(c):
        dist = np.full(c, -1, dtype=np.int64)
        dist[t] = 0
        frontier = np.array([t])
        while frontier.size:
            reach = adj[frontier].any(axis=0) & (dist < 0)
            new = np.flatnonzero(reach)
            dist[new] = dist[frontier[0]] + 1
            frontier = new
        if (dist < 0).any():
            raise RoutingError("the kept clusters are not connected")  # not with BFS order
        # from each x != t: the lowest neighbour one step closer to t
        closer = adj & (dist[None, :] == dist[:, None] - 1)
        nxt[:, t] = np.argmax(closer, axis=1)
        nxt[t, t] = t
    return nxt


def _gates(topo: ClusteredMacroStar) -> np.ndarray:
    """``(c, c)`` MS ids of the gate of cluster X towards Z (-1 where not adjacent)."""
    c, n, k = topo.c, topo.n, topo.k
    adj = topo.cluster_adjacency()
    gates = np.full((c, c), -1, dtype=np.int64)
    xs, zs = np.nonzero(adj)
    if xs.size:
        used = np.zeros((xs.size, k), dtype=bool)
        rows = np.arange(xs.size)[:, None]
        used[rows, topo.blocks[xs]] = True
        used[rows, topo.blocks[zs]] = True
        rest = np.nonzero(~used)[1].reshape(xs.size, k - 2 * n).astype(np.uint8)
        p = np.concatenate([rest[:, :1], topo.blocks[zs], rest[:, 1:], topo.blocks[xs]], axis=1)
        gates[xs, zs] = perm.rank(p)
    return gates


#: the router classes this module registers
ROUTERS_HERE: tuple[type[Router], ...] = (ImsTwoPhase, ImsStarEmulation, CmsClusters)
