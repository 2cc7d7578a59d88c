"""Routers for Borel Cayley graphs (paper 003, Sec. 4): CR, Two-Phase and table routing.

``borel-cr``
    CR routing (Sec. 4.1-4.2) in a CR labelling (:meth:`Borel.cr_ring`): the
    node looks ahead ``d`` hops and moves towards the node nearest, around the
    ring, to the destination. Distributed; header = the destination's CR number.
``borel-two-phase``
    Two-Phase routing (Sec. 4.3-4.6) in the GCR labelling (the node ids): Phase I
    crosses the k-node class graph by an O(k) table, Phase II reaches the
    destination inside its class by an O(p) table of paths. Distributed in
    Phase I, source-routed from the first node of the destination class in
    Phase II; header = (Phase II row, step).
``borel-table``
    The optimal vertex-transitive table look-up of the paper's reference [12]
    (O(N) per node): the ``shortest`` router under this name.

``borel-two-phase`` lives in :mod:`mpinet.routing.borel_two_phase` (re-exported here).

The paper's CR labelling (transform ``A^-1 B``, representatives ``A^i``) needs a
generator of order p, which none of its Tables 3-4 generator sets has
(docs/errata.md, E7). :meth:`Borel.cr_ring` builds one from the definition of a
CR graph instead: a labelling with the +-1 ring and the GCR translation property
for q = p is a Hamiltonian cycle whose port word has period p, i.e. p ports that
visit every coset of the diagonal subgroup once and whose product generates
that subgroup (found by a seeded search). The paper does not say which ring it
used for those sets, so its CR routing numbers cannot be matched exactly.
"""

from __future__ import annotations

import numpy as np

from mpinet.errors import RoutingError, TopologyError
from mpinet.routing import borel_faults as bf
from mpinet.routing import tables
from mpinet.routing.base import DROP, HopContext, Router
from mpinet.routing.borel_two_phase import BorelTwoPhaseRouter
from mpinet.routing.shortest import ShortestRouter
from mpinet.topology.base import Topology
from mpinet.values import check_int

__all__ = ["ROUTERS_HERE", "BorelCRRouter", "BorelTableRouter", "BorelTwoPhaseRouter"]

#: largest look-ahead of ``borel-cr`` (the paper's Tables 3-4 use 1..4)
MAX_LOOKAHEAD = 4
#: candidate entries per block of :meth:`BorelCRRouter.best` (cache-sized temporaries)
_CHUNK_ENTRIES = 1 << 18


class BorelTableRouter(ShortestRouter):
    """Optimal routing by a vertex-transitive table look-up (distributed).

    Every node holds the BFS distance (int16) and the first shortest port
    (uint8) from each of the N nodes to the identity, plus the N x 4 neighbour
    table; header = the position relative to the destination, one word. The
    options and tie-breaks are those of ``shortest``.
    """

    name = "borel-table"
    summary = "optimal vertex-transitive table look-up, O(N) per node (Borel, paper 003)"
    families = ("borel",)


class BorelCRRouter(Router):
    """CR routing with look-ahead ``d`` (distributed; header = destination's CR number).

    At CR node ``c`` the router considers every node ``x != c`` within ``d``
    hops (walks over the +1, -1, gamma, lambda links) and picks the one with
    the smallest key ``(peripheral distance of x to the destination, hops from
    c to x, port word)``: nearer around the ring first, then fewer hops, then
    the lexicographically smallest shortest walk (ports A < A-1 < B < B-1). The
    packet takes the first hop of that walk and the next node decides again
    (with ``commit``, the packet follows the whole walk to ``x`` first).

    Neither rule can loop. With ``commit`` every decision lowers the peripheral
    distance (a ring neighbour always does). Without it, let ``Phi(c)`` be the
    smallest (peripheral distance, hops) over the d-ball of ``c``: stepping to
    ``u`` along a shortest walk to the chosen ``x`` (h hops) leaves ``x`` h-1
    hops from ``u``, so ``Phi`` decreases strictly (lexicographically) every
    hop and is (0, 0) only at the destination. The paper's rule (peripheral
    distance only) has no such potential: packets could alternate between the
    two nodes at equal peripheral distance ``dest +- r``; breaking that tie by
    the hop count guarantees delivery, so no fallback is needed. Either way a
    route has at most ``d`` hops per unit of the initial peripheral distance.

    With ``faults`` the candidates are the nodes reached by *live* walks
    (:mod:`mpinet.routing.borel_faults`: nodes near a fault get d-balls of
    their own), and only those nearer the destination around the ring than
    the current node, as section 4.1 asks of every intermediate node; where
    none is left the packet is dropped (:data:`DROP`). The potential argument
    above still holds (the rest of a live walk is live), so routes stay
    loop-free. With ``commit`` a walk cut by a dynamic fault is decided again.

    Tables (all nodes of a class share them): the ring, three length-p arrays,
    and per class ``c mod p`` the d-ball without ``c``, p x K offsets, port
    words and hop counts (int32), K <= 4, 16, 52, 160 for d = 1..4 (the
    Tables 3-4 graphs reach 4, 16, 50-52, 146-160). Header: the destination's
    CR number, one word; with ``commit`` three (also the rest of the walk as a
    base-4 word and the hops left on it).

    Parameters
    ----------
    topo : Borel
    lookahead : int
        The look-ahead distance d, 1..4 (d = 1: immediate neighbours only).
    commit : bool
        Follow the whole walk to the chosen node before deciding again.
    ring_seed : int
        Which CR labelling (:meth:`Borel.cr_ring`): 0 = the paper's where it
        exists (one generator of order p), else the searched ring of seed 0.
    max_table_bytes : int
        Refuse (:class:`ResourceError`) larger tables.
    faults : FaultSet, optional
        Route around these failed nodes and links.

    Raises
    ------
    RoutingError
        A bad option, or no CR labelling could be built for this graph.
    """

    name = "borel-cr"
    summary = (
        "CR routing: peripheral-distance greedy with look-ahead d (Borel, paper 003); "
        "routes around faults"
    )
    families = ("borel",)
    distributed = True
    header_width = 1
    fault_tolerant = True

    def __init__(
        self,
        topo: Topology,
        lookahead: int = 1,
        commit: bool = False,
        ring_seed: int = 0,
        max_table_bytes: int = tables.MAX_TABLE_BYTES,
        faults: object = None,
    ) -> None:
        super().__init__(topo, lookahead=lookahead, commit=commit, ring_seed=ring_seed)
        try:
            self.d = check_int("lookahead of router 'borel-cr'", lookahead, 1, MAX_LOOKAHEAD)
            seed = check_int("ring_seed of router 'borel-cr'", ring_seed, 0)
        except TopologyError as e:
            raise RoutingError(str(e)) from None
        if not isinstance(commit, bool | np.bool_):
            raise RoutingError(f"commit of router 'borel-cr' must be true or false, got {commit!r}")
        self.commit = bool(commit)
        self.header_width = 3 if self.commit else 1
        p = topo.p
        walks = sum(4**h for h in range(1, self.d + 1))
        need = 40 * p * walks + 24 * p  # build-time arrays; the kept tables are smaller
        tables.check_table_bytes(topo, need, "router 'borel-cr' tables", max_table_bytes)
        try:
            self.ring = topo.cr_ring(seed)
        except TopologyError as e:
            raise RoutingError(f"router 'borel-cr' needs a CR labelling: {e}") from None
        self._dt = np.dtype(np.int32)  # |offsets| <= N/2 and N < 2**31
        self.offsets, self.words, self.hops = self._ball_tables(self.ring.offsets())
        self._chunk = max(1, _CHUNK_ENTRIES // self.offsets.shape[1])
        self.table_bytes = int(3 * self.offsets.size * 4 + 24 * p)
        self.faults = None
        if faults is not None and getattr(faults, "step", 0) == 0:
            self.set_faults(faults)  # dynamic faults (step > 0) apply from set_faults on

    def set_faults(self, faults: object) -> None:
        """Route around ``faults`` from now on: live d-balls for the nodes near them."""
        self.faults = faults
        self._near = bf.affected(self.topo, faults, self.d)
        self._near_tables = bf.live_balls(
            self.topo, faults, self.ring, self._near, self.d, self._dt
        )

    def _ball_tables(self, off: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per class: offsets (in (-N/2, N/2]), port words and hops of the d-ball, padded.

        A word holds its ports in base 4, the first hop in the lowest digit.
        """
        p, n, d = self.topo.p, self.topo.num_nodes, self.d
        cls = np.arange(p, dtype=np.int64)[:, None]
        level, word = off.copy(), np.broadcast_to(np.arange(4), (p, 4))
        offs, words, hops = [level], [word], [np.ones((p, 4), dtype=np.int64)]
        for h in range(2, d + 1):  # walks in lexicographic port order, level by level
            level = (level[:, :, None] + off[(cls + level) % p]).reshape(p, -1) % n
            word = (word[:, :, None] + 4 ** (h - 1) * np.arange(4)).reshape(p, -1)
            offs.append(level)
            words.append(word)
            hops.append(np.full(level.shape, h, dtype=np.int64))
        o, wd, hh = (np.concatenate(x, axis=1) for x in (offs, words, hops))
        # keep the first walk to each node (fewest hops, then smallest word), drop c itself
        order = np.argsort(o, axis=1, kind="stable")
        so = np.take_along_axis(o, order, axis=1)
        first_seen = np.ones(so.shape, dtype=bool)
        first_seen[:, 1:] = so[:, 1:] != so[:, :-1]
        keep = np.zeros(o.shape, dtype=bool)
        np.put_along_axis(keep, order, first_seen & (so != 0), axis=1)
        width = int(keep.sum(axis=1).max())
        sel = np.argsort(~keep, axis=1, kind="stable")[:, :width]
        valid = np.take_along_axis(keep, sel, axis=1)
        o = np.take_along_axis(o, sel, axis=1)
        o = np.where(o > n // 2, o - n, o)
        o = np.where(valid, o, 0).astype(self._dt)
        wd = np.where(valid, np.take_along_axis(wd, sel, axis=1), 0).astype(np.int32)
        hh = np.where(valid, np.take_along_axis(hh, sel, axis=1), d + 1).astype(self._dt)
        return o, wd, hh

    def init_headers(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """The destination's CR number (then, with ``commit``, an empty walk: 0, 0)."""
        d = np.broadcast_arrays(np.asarray(src), np.asarray(dst))[1]
        h = np.zeros((d.size, self.header_width), dtype=np.int64)
        h[:, 0] = self.ring.to_cr(d.ravel())
        return h

    def best(self, cr: np.ndarray, dest_cr: np.ndarray) -> np.ndarray:
        """Index into the class's d-ball tables of the node each packet heads for.

        The candidates of a class are stored by (hops, port word), so the first
        minimum of the peripheral distance is the minimum of the whole key.
        """
        return self._first_min(self.offsets, cr % self.topo.p, self._ahead(cr, dest_cr))

    def _ahead(self, cr: np.ndarray, dest_cr: np.ndarray) -> np.ndarray:
        """CR offset of each destination, in (-N/2, N/2] (its sign: the way round)."""
        n = self.topo.num_nodes
        e = (dest_cr - cr) % n
        return np.where(e > n // 2, e - n, e).astype(self._dt)

    def _first_min(self, offsets: np.ndarray, rows: np.ndarray, e: np.ndarray) -> np.ndarray:
        """Per packet, the first candidate of ``offsets[row]`` peripherally nearest ``e``."""
        n = self.topo.num_nodes
        out = np.empty(rows.size, dtype=np.int64)
        chunk = max(1, _CHUNK_ENTRIES // offsets.shape[1])
        for lo in range(0, rows.size, chunk):
            sl = slice(lo, lo + chunk)
            diff = np.take(offsets, rows[sl], axis=0)
            np.subtract(e[sl, None], diff, out=diff)
            np.abs(diff, out=diff)
            np.minimum(diff, n - diff, out=diff)
            out[sl] = diff.argmin(axis=1)
        return out

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """First port of the walk to the best node of the d-ball (see the class docstring)."""
        if self.faults is not None:
            return self._around_faults(np.asarray(nodes, dtype=np.int64), headers)
        c = self.ring.to_cr(nodes)
        if not self.commit:
            best = self.best(c, headers[:, 0])
            return (self.words[c % self.topo.p, best] & 3).astype(np.int64), headers
        out = headers.copy()
        new = np.flatnonzero(headers[:, 2] == 0)
        j, best = c[new] % self.topo.p, self.best(c[new], headers[new, 0])
        out[new, 1], out[new, 2] = self.words[j, best], self.hops[j, best]
        ports = out[:, 1] & 3
        out[:, 1] >>= 2
        out[:, 2] -= 1
        return ports, out

    def _around_faults(self, nodes: np.ndarray, headers: np.ndarray) -> tuple:
        """:meth:`next_port` over live walks only; DROP where no live candidate is nearer."""
        n, p = self.topo.num_nodes, self.topo.p
        c = self.ring.to_cr(nodes)
        out = headers.copy()
        decide = np.ones(nodes.size, dtype=bool)
        if self.commit:  # keep a committed walk unless a dynamic fault cut it
            owed = headers[:, 2] > 0
            cut = self.faults.link_down(nodes, headers[:, 1] & 3)
            decide = ~owed | cut
        idx = np.flatnonzero(decide)
        e = self._ahead(c[idx], headers[idx, 0])
        pos = np.searchsorted(self._near, nodes[idx])
        near = np.zeros(idx.size, dtype=bool)
        if self._near.size:
            near = self._near[np.minimum(pos, self._near.size - 1)] == nodes[idx]
        offs, words, hops = self._near_tables
        off = np.empty(idx.size, dtype=np.int64)
        word = np.empty(idx.size, dtype=np.int64)
        hop = np.empty(idx.size, dtype=np.int64)
        for mask, (o_t, w_t, h_t), rows in (
            (~near, (self.offsets, self.words, self.hops), c[idx] % p),
            (near, (offs, words, hops), pos),
        ):
            r = rows[mask]
            if r.size:
                b = self._first_min(o_t, r, e[mask])
                off[mask], word[mask], hop[mask] = o_t[r, b], w_t[r, b], h_t[r, b]
        gap = np.abs(e.astype(np.int64) - off)
        nearer = np.minimum(gap, n - gap) < np.abs(e)  # section 4.1: lower the distance
        if not self.commit:
            return np.where(nearer, word & 3, DROP), headers
        out[idx, 1] = np.where(nearer, word, 0)
        out[idx, 2] = np.where(nearer, hop, 0)
        ports = out[:, 1] & 3
        ports[idx[~nearer]] = DROP
        out[:, 1] >>= 2
        out[:, 2] -= 1
        return ports, out


#: the router classes this module registers
ROUTERS_HERE: tuple[type[Router], ...] = (BorelCRRouter, BorelTwoPhaseRouter, BorelTableRouter)
