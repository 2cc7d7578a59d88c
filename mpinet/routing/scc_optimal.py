"""Router ``scc-optimal``: Alg. 3 of paper 000 (Alg. 1 of paper 001), source-based.

The source searches, for the relative permutation ``sigma = pi_d^-1 * pi_s``,
a tree whose vertex ``<l, pi>`` holds the ring position ``l`` reached over
the last lateral link; children take each link of ``B(pi)``. A vertex carries
``L`` (local links so far) and ``M = L + minloc`` (eq. 18), a lower bound on
the local links of any route through it. All enabled vertices are expanded
at once; a child is enabled when ``M' <= T``; when no child of a tree is
enabled, the tree backtracks: ``T`` becomes the least ``M`` of its leaves and
those leaves are enabled. A vertex at the identity (level ``lat``) has one
child ``<i_d, identity>``; the first such child generated is the route.
Since ``M`` never overestimates and ``T`` never exceeds the optimum, the
route is the cheapest among those with ``lat`` = star-distance lateral links.
That is the exact distance for every pair of SCC_3..9 (to ``<2, identity>``
by dynamic programming against BFS, n <= 9; other destinations follow by
vertex transitivity and ring rotation; the tests walk all pairs, n <= 5).

Vectorization: the trees of many packets grow together in one pool of
vertices (numpy arrays), one iteration = one expansion step of every live
tree; finished trees are dropped. Ties between optimal routes go to the
first generated: parents in creation order, children by increasing link.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mpinet import perm
from mpinet.routing import scc_cycles as sc
from mpinet.routing.base import HopContext, Router
from mpinet.topology.base import Topology

#: default bytes of the per-router cache of routes by (rotated sigma, i_s)
CACHE_BYTES = 1 << 26
_FIELDS = ("own", "par", "lvl", "ell", "L", "M", "state")


@dataclass
class SearchResult:
    """Routes and search-tree statistics of :func:`search`, one row per problem.

    ``links``: (K, W) int64 lateral links as ring positions (0-based, the
    papers' label minus one), -1 padded; ``lat``: their number (the star
    distance); ``local``: local links of the route; ``vertices``: vertices
    of the search tree (0 when ``sigma`` is the identity: no search);
    ``max_width``: the most vertices on one level; ``expansions``: vertices
    expanded; ``backtracks``: backtracking steps.
    """

    links: np.ndarray
    lat: np.ndarray
    local: np.ndarray
    vertices: np.ndarray
    max_width: np.ndarray
    expansions: np.ndarray
    backtracks: np.ndarray


class _Pool:
    """Growable structure-of-arrays holding the vertices of many search trees."""

    def __init__(self, n: int, capacity: int) -> None:
        self.size = 0
        self.cols = {f: np.empty(capacity, dtype=np.int64) for f in _FIELDS}
        self.sig = np.empty((capacity, n), dtype=np.uint8)

    def __getattr__(self, name: str) -> np.ndarray:
        cols = self.__dict__["cols"]
        if name in cols:
            return cols[name][: self.size]
        raise AttributeError(name)

    def add(self, sig: np.ndarray, **cols: np.ndarray) -> np.ndarray:
        count = sig.shape[0]
        need = self.size + count
        if need > self.sig.shape[0]:
            cap = max(need, 2 * self.sig.shape[0])
            for f, a in self.cols.items():
                self.cols[f] = np.resize(a, cap)
            self.sig = np.resize(self.sig, (cap, self.sig.shape[1]))
        lo, self.size = self.size, need
        for f, a in cols.items():
            self.cols[f][lo:need] = a
        self.sig[lo:need] = sig
        return np.arange(lo, need)

    def keep(self, mask: np.ndarray) -> np.ndarray:
        """Drop the vertices where ``mask`` is False; returns old -> new indices (-1 dropped)."""
        new = np.cumsum(mask) - 1
        new[~mask] = -1
        m = int(mask.sum())
        par = self.cols["par"][: self.size][mask]
        for f in _FIELDS:
            self.cols[f][:m] = self.cols[f][: self.size][mask]
        self.sig[:m] = self.sig[: self.size][mask]
        self.size = m
        self.cols["par"][:m] = np.where(par >= 0, new[np.maximum(par, 0)], -1)
        return new


def search(
    sigma: np.ndarray, start: np.ndarray, dest: np.ndarray, chunk: int = 4096
) -> SearchResult:
    """Alg. 3 for each row: ``<start, sigma>`` to ``<dest, identity>`` (ring positions 0-based).

    Parameters
    ----------
    sigma : (K, n) relative permutations (0-based symbols)
    start, dest : (K,) ring positions ``1..n-1``
    chunk : int
        Trees grown together (memory: about 70 bytes per vertex).

    Returns
    -------
    SearchResult
        The links of each route, its local links and the tree's statistics.
    """
    sig = np.asarray(sigma, dtype=np.uint8)
    k, n = sig.shape
    s = np.asarray(start, dtype=np.int64).ravel()
    d = np.asarray(dest, dtype=np.int64).ravel()
    lat = perm.star_distance(sig).astype(np.int64)
    width = max(int(lat.max(initial=0)), 1)
    out = SearchResult(
        np.full((k, width), -1, dtype=np.int64),
        lat,
        *(np.zeros(k, dtype=np.int64) for _ in range(5)),
    )
    for lo in range(0, k, chunk):
        part = slice(lo, lo + chunk)
        _search_chunk(sig[part], s[part], d[part], lat[part], out, lo)
    return out


def _search_chunk(
    sig: np.ndarray,
    start: np.ndarray,
    dest: np.ndarray,
    lat: np.ndarray,
    out: SearchResult,
    lo: int,
) -> None:
    k, n = sig.shape
    dist = sc.ring_distances(n)
    done = lat == 0
    out.local[lo : lo + k] = np.where(done, dist[start, dest], 0)
    width = np.zeros((k, int(lat.max(initial=0)) + 2), dtype=np.int64)
    expansions = np.zeros(k, dtype=np.int64)
    backtracks = np.zeros(k, dtype=np.int64)
    live = np.flatnonzero(~done)
    pool = _Pool(n, max(16, 16 * live.size))
    root_m = sc.minloc(sig[live], start[live], dest[live], dist)
    threshold = np.zeros(k, dtype=np.int64)
    threshold[live] = root_m
    zero = np.zeros(live.size, dtype=np.int64)
    enabled = pool.add(
        sig[live],
        own=live,
        par=zero - 1,
        lvl=zero,
        ell=start[live],
        L=zero,
        M=root_m,
        state=zero + 1,
    )
    width[live, 0] = 1
    while enabled.size:
        own_e = pool.own[enabled]
        pool.state[enabled] = 2
        expansions += np.bincount(own_e, minlength=k)
        at_id = pool.lvl[enabled] == lat[own_e]
        # vertices at the identity: one child <i_d, identity>, the goal (always enabled)
        gpar = enabled[at_id]
        if gpar.size:
            gown = pool.own[gpar]
            np.add.at(width, (gown, pool.lvl[gpar] + 1), 1)
            found, first = np.unique(gown, return_index=True)
            v = gpar[first]
            out.local[lo + found] = pool.L[v] + dist[pool.ell[v], dest[found]]
            _trace_back(pool, v, out.links, lo)
            done[found] = True
        # the others: one child per link of B
        par_e = enabled[~at_id]
        pr, b, csig, est = sc.expand(pool.sig[par_e], dest[pool.own[par_e]])
        par = par_e[pr]
        cown = pool.own[par]
        np.add.at(width, (cown, pool.lvl[par] + 1), 1)
        alive = ~done[cown]
        par, b, cown, csig, est = par[alive], b[alive], cown[alive], csig[alive], est[alive]
        c_l = pool.L[par] + dist[pool.ell[par], b]
        c_m = c_l + est
        c_on = c_m <= threshold[cown]
        new = pool.add(
            csig, own=cown, par=par, lvl=pool.lvl[par] + 1, ell=b, L=c_l, M=c_m, state=c_on * 1
        )
        enabled = new[c_on]
        # trees with no enabled child backtrack: T = least M of their leaves, enable those
        stuck = np.zeros(k, dtype=bool)
        stuck[own_e] = True
        stuck[cown[c_on]] = False
        stuck &= ~done
        if stuck.any():
            leaves = np.flatnonzero((pool.state == 0) & stuck[pool.own])
            lm, lown = pool.M[leaves], pool.own[leaves]
            least = np.full(k, np.iinfo(np.int64).max)
            np.minimum.at(least, lown, lm)
            pick = leaves[lm == least[lown]]
            threshold[stuck] = least[stuck]
            pool.state[pick] = 1
            backtracks += stuck
            enabled = np.sort(np.concatenate([enabled, pick]))
        dead = done[pool.own]
        if dead.sum() * 2 > pool.size:
            enabled = pool.keep(~dead)[enabled]
    seg = slice(lo, lo + k)
    out.vertices[seg] = width.sum(axis=1)
    out.max_width[seg] = width.max(axis=1)
    out.expansions[seg] = expansions
    out.backtracks[seg] = backtracks


def _trace_back(pool: _Pool, v: np.ndarray, links: np.ndarray, lo: int) -> None:
    """Write the lateral links of the paths root -> ``v`` into ``links`` (rows ``lo + own``)."""
    own = pool.own[v] + lo
    cur = v.copy()
    while True:
        lvl = pool.lvl[cur]
        on = lvl >= 1
        if not on.any():
            return
        links[own[on], lvl[on] - 1] = pool.ell[cur[on]]
        cur = np.where(on, pool.par[cur], cur)


class SCCOptimal(Router):
    """Optimal SCC routing by Alg. 3 of paper 000, source-based.

    The source runs the search once per packet in :meth:`init_headers`
    (vectorized over packets) and the header carries the lateral links
    still to take, 4 bits each (5 for n >= 16) as the papers' labels
    ``2..n``, 15 (12) per int64 word, first link in the lowest bits, 0 = none
    left: ``header_width`` = ``ceil(floor(3(n-1)/2) / 15)`` words (1 up to
    n = 11). An intermediate node goes round its ring the shorter way to the
    next link, takes it and drops it from the header; with none left it goes
    to ``i_d``.

    Each problem is first rotated round the ring (conjugating ``sigma`` by
    the rotation of positions ``1..n-1``, which keeps ``d``, the cycles and
    the costs) so that ``i_d`` becomes position 1 (label 2); the search,
    whose children come in increasing link order, thus meets links in ring
    order from ``i_d``, and ties between optimal routes are broken the same
    way for every ``i_d``. Results are cached by ``(sigma, i_s)`` of the
    rotated problem: ``n! (n-1)`` keys.

    Parameters
    ----------
    topo : SCC
    cache : bool
        Keep the searched routes in a dense table over the keys when it fits
        in :data:`CACHE_BYTES` (n <= 9).
    chunk : int
        Search trees grown together.
    """

    name = "scc-optimal"
    summary = "paper 000 Alg. 3: optimal route searched at the source, carried in the header (SCC)"
    families = ("scc",)
    distributed = False

    def __init__(self, topo: Topology, cache: bool = True, chunk: int = 4096) -> None:
        super().__init__(topo, cache=cache, chunk=chunk)
        self.n = n = int(topo.n)  # type: ignore[attr-defined]
        self.ring = n - 1
        self.bits = 4 if n <= 15 else 5
        self.per_word = 60 // self.bits
        self.max_links = 3 * (n - 1) // 2
        self.header_width = max(1, math.ceil(self.max_links / self.per_word))
        self.chunk = int(chunk)
        keys = math.factorial(n) * self.ring
        self._cache: np.ndarray | None = None
        if cache and keys * self.header_width * 8 <= CACHE_BYTES:
            self._cache = np.full((keys, self.header_width), -1, dtype=np.int64)
        self.last_search: SearchResult | None = None

    def _rotated(self, src: object, dst: object) -> tuple[np.ndarray, ...]:
        """Problems rotated so that ``i_d`` is position 1: ``(sigma, start, shift, key)``."""
        s, d = np.broadcast_arrays(np.asarray(src), np.asarray(dst))
        s, d = self.topo.check_ids(s, "src"), self.topo.check_ids(d, "dst")
        sigma, here, there = sc.relative(self.topo, s, d)  # type: ignore[arg-type]
        shift = (1 - there) % self.ring
        sigma = sc.conjugate(sigma, sc.ring_rotation(self.n, shift))
        start = (here - 1 + shift) % self.ring + 1
        return sigma, start, shift, perm.rank(sigma) * self.ring + start - 1

    def _unrotate(self, labels: np.ndarray, shift: np.ndarray) -> np.ndarray:
        """Labels (0 padded) of rotated problems back in the packets' own frame."""
        pos = (labels - 2 - shift[:, None]) % self.ring + 1
        return np.where(labels > 0, pos + 1, 0)

    def route_links(self, src: object, dst: object) -> tuple[np.ndarray, SearchResult]:
        """Alg. 3's lateral links (labels ``2..n``, 0 padded) and the search statistics.

        Searches every pair afresh (no cache), e.g. to measure the trees.
        """
        sigma, start, shift, _ = self._rotated(src, dst)
        res = search(sigma, start, np.ones(start.size, dtype=np.int64), self.chunk)
        return self._unrotate(res.links + 1, shift), res

    def init_headers(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Search (or look up) each packet's lateral links and pack them."""
        sigma, start, shift, key = self._rotated(src, dst)
        uniq, first, back = np.unique(key, return_index=True, return_inverse=True)
        words = np.empty((uniq.size, self.header_width), dtype=np.int64)
        todo = np.arange(uniq.size)
        if self._cache is not None:
            words[:] = self._cache[uniq]
            todo = np.flatnonzero(words[:, 0] < 0)
        if todo.size:
            rows = first[todo]
            ones = np.ones(rows.size, dtype=np.int64)
            res = search(sigma[rows], start[rows], ones, self.chunk)
            self.last_search = res
            words[todo] = self._pack(res.links + 1)
            if self._cache is not None:
                self._cache[uniq[todo]] = words[todo]
        labels = self._unpack(words[back.ravel()])
        return self._pack(self._unrotate(labels, shift))

    def _pack(self, labels: np.ndarray) -> np.ndarray:
        """Pack (K, L) link labels (0 padded) into (K, header_width) words."""
        out = np.zeros((labels.shape[0], self.header_width), dtype=np.int64)
        for j in range(labels.shape[1]):
            w, slot = divmod(j, self.per_word)
            out[:, w] |= np.maximum(labels[:, j], 0) << (self.bits * slot)
        return out

    def _unpack(self, words: np.ndarray) -> np.ndarray:
        """(K, header_width) words -> (K, max_links) labels, 0 padded."""
        mask = (1 << self.bits) - 1
        cols = [
            (words[:, j // self.per_word] >> (self.bits * (j % self.per_word))) & mask
            for j in range(self.max_links)
        ]
        return np.stack(cols, axis=1) if cols else np.zeros((words.shape[0], 0), dtype=np.int64)

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """Towards the header's next lateral link (or ``i_d``); pop the link when taking it."""
        here = np.asarray(nodes, dtype=np.int64) % self.ring + 1
        there = np.asarray(dests, dtype=np.int64) % self.ring + 1
        mask = (1 << self.bits) - 1
        nxt = (headers[:, 0] & mask) - 1
        target = np.where(nxt >= 0, nxt, there)
        ports = sc.ring_ports(self.n, here, target)
        out = headers.copy()
        pop = np.flatnonzero((nxt >= 0) & (here == nxt))
        if pop.size:
            h = headers[pop]
            shifted = h >> self.bits
            carry = (h[:, 1:] & mask) << (self.bits * (self.per_word - 1))
            shifted[:, :-1] |= carry
            out[pop] = shifted
        return ports, out
