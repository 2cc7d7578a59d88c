"""Proper node colourings, for the negative-hop virtual-channel policy.

A colouring gives every node an int8 colour so that no link joins two nodes of
one colour. The negative-hop scheme (Gopal 1985; Boppana & Chalasani 1996)
calls a hop from a higher to a lower colour *negative*; the fewer colours, the
fewer negative hops a route can take, so the bipartite networks get two.

Closed forms, vectorized over node ids, where a family has one:

- ``hypercube``: the parity of the popcount (every link flips one bit);
- ``star``, and ``ms`` / ``ims`` when every generator is odd: the parity of the
  permutation (``T_j`` is a transposition, ``S_i`` a product of ``|block i|``
  of them); a Cayley graph of the symmetric group is bipartite exactly then,
  since the sign is its only homomorphism onto Z_2;
- ``ms`` with ``n`` even (``S_i`` even, not bipartite): ``sign + 2 b``, ``b``
  the parity of the order of the blocks sorted by their least symbol (``S_i``
  swaps two blocks and keeps the sign, ``T_j`` changes the sign): 4 colours;
  ``cms`` with ``n`` odd: the parity of its nodes' MS(l, n) labels;
- ``scc``: ``(i + sign) mod 2`` for odd ``n`` (even rings); for even ``n`` the
  rings are odd, ``(ring3(i) + sign) mod 3`` with a proper 3-colouring of the ring;
- ``ccc``: ``(i + popcount(x)) mod 2`` for even ring length, else ``(ring3(i) +
  popcount(x) mod 2) mod 3``;
- ``borel``: ``t mod 2`` when ``k`` is even and ``T1``, ``T2`` are odd (every
  generator changes ``t`` by an odd amount mod an even ``k``).

Everything else (``fccn``, ``borel`` otherwise, ``ims`` with an even block, ``cms``
with ``n`` even) is
coloured once by a search over the whole graph, up to :data:`MAX_SEARCHED`
nodes: a breadth-first 2-colouring where the graph is bipartite, else a greedy
colouring in rounds (Jones-Plassmann, seeded priorities), at most degree + 1
colours. The result is kept for the topology's spec.
"""

from __future__ import annotations

import math

import numpy as np

from mpinet import perm
from mpinet.errors import TopologyError
from mpinet.topology.base import Topology

#: nodes up to which a colouring without a closed form is searched
MAX_SEARCHED = 1 << 22
#: nodes coloured at once (closed forms that unrank permutations)
_CHUNK = 1 << 18
#: colourings computed by search, by spec (a few: each holds a byte per node)
_SEARCHED: dict[str, np.ndarray] = {}
_KEEP = 4


def _popcount(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(np.asarray(x, dtype=np.int64)).astype(np.int64)


def _perm_parity(ranks: np.ndarray, k: int) -> np.ndarray:
    """Parity of the permutations of ``k`` symbols with these ranks.

    The rank's factorial digits ``c_i = #{j < i : pi[j] > pi[i]}`` count the
    inversions, so their sum mod 2 is the sign (no unranking).
    """
    r = np.asarray(ranks, dtype=np.int64)
    s = np.zeros(r.size, dtype=np.int64)
    for i in range(1, k):
        s += (r // math.factorial(i)) % (i + 1)
    return s & 1


def _ring3(pos: np.ndarray, m: int) -> np.ndarray:
    """A proper 3-colouring of the odd cycle ``0..m-1``: alternate, the last node 2."""
    return np.where(pos == m - 1, 2, pos & 1)


def _block_order_parity(topo: Topology, ids: np.ndarray) -> np.ndarray:
    """MS(l, n): parity of the order of blocks 1..l sorted by their least symbol."""
    n, l = topo.n, topo.l  # type: ignore[attr-defined]
    p = perm.unrank(ids, topo.k).astype(np.int64)  # type: ignore[attr-defined]
    mins = p[:, 1:].reshape(ids.size, l, n).min(axis=2)
    order = np.argsort(mins, axis=1)
    # parity of a permutation of l items: inversions
    inv = np.zeros(ids.size, dtype=np.int64)
    for a in range(l):
        inv += (order[:, a : a + 1] > order[:, a + 1 :]).sum(axis=1)
    return inv & 1


def _generators_odd(topo: Topology) -> bool:
    """Whether every position generator of a permutation Cayley graph is odd."""
    gens = np.asarray(topo.gens)  # type: ignore[attr-defined]
    return bool(all(_perm_parity(perm.rank(g[None, :].astype(np.uint8)), g.size)[0] for g in gens))


def closed_form(topo: Topology) -> str | None:
    """The name of ``topo``'s closed-form colouring, or None (it is searched)."""
    fam = topo.family
    if fam == "hypercube":
        return "popcount parity"
    if fam == "star" or (fam in ("ms", "ims") and _generators_odd(topo)):
        return "permutation parity"
    if fam == "ms":
        return "permutation parity + 2 x block-order parity"
    if fam == "cms" and topo.n % 2:  # type: ignore[attr-defined]
        return "permutation parity"  # of the MS(l, n) labels: every generator is odd
    if fam == "scc":
        return "(i + sign) mod 2" if topo.n % 2 else "(ring 3-colouring + sign) mod 3"  # type: ignore[attr-defined]
    if fam == "ccc":
        return "(i + popcount) mod 2" if topo.n % 2 == 0 else "(ring 3-colouring + popcount) mod 3"  # type: ignore[attr-defined]
    if fam == "borel" and topo.k % 2 == 0 and topo.t1 % 2 and topo.t2 % 2:  # type: ignore[attr-defined]
        return "t mod 2"
    if fam == "fccn" and topo.m == 1:  # type: ignore[attr-defined]
        return "popcount parity"
    return None


def _closed(topo: Topology, a: np.ndarray) -> np.ndarray:
    """The closed-form colours of validated ids ``a``."""
    fam = topo.family
    t = topo
    if fam in ("hypercube", "fccn"):
        return _popcount(a) & 1
    if fam in ("star", "ims") or (fam == "ms" and _generators_odd(t)):
        return _perm_parity(a, t.k)  # type: ignore[attr-defined]
    if fam == "ms":
        return _perm_parity(a, t.k) + 2 * _block_order_parity(t, a)  # type: ignore[attr-defined]
    if fam == "cms":
        return _perm_parity(t.to_ms(a), t.k)  # type: ignore[attr-defined]
    if fam == "scc":
        i, pr = t.split(a)  # type: ignore[attr-defined]
        sign = _perm_parity(pr, t.n)  # type: ignore[attr-defined]
        if t.n % 2:  # type: ignore[attr-defined]
            return (i + sign) & 1
        return (_ring3(i - 2, t.ring) + sign) % 3  # type: ignore[attr-defined]
    if fam == "ccc":
        i, x = t.split(a)  # type: ignore[attr-defined]
        par = _popcount(x) & 1
        if t.n % 2 == 0:  # type: ignore[attr-defined]
            return (i + par) & 1
        return (_ring3(i, t.n) + par) % 3  # type: ignore[attr-defined]
    if fam == "borel":
        return a % t.k % 2  # type: ignore[attr-defined]
    raise AssertionError(fam)  # pragma: no cover


def _table(topo: Topology) -> np.ndarray:
    """Neighbour table of the whole graph (int64, -1 where no port)."""
    return topo.neighbors(np.arange(topo.num_nodes, dtype=np.int64))


def _bfs_two(nb: np.ndarray) -> np.ndarray | None:
    """Level parity of a breadth-first search per component, or None if an edge is odd."""
    n = nb.shape[0]
    col = np.full(n, -1, dtype=np.int8)
    while (col < 0).any():
        root = int(np.argmax(col < 0))
        col[root] = 0
        frontier = np.array([root], dtype=np.int64)
        c = 0
        while frontier.size:
            c ^= 1
            t = nb[frontier].ravel()
            t = t[t >= 0]
            t = np.unique(t[col[t] < 0])
            col[t] = c
            frontier = t
    ok = nb >= 0
    if (col[np.nonzero(ok)[0]] == col[nb[ok]]).any():
        return None
    return col


def _least_free(nb: np.ndarray, col: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The least colour no coloured neighbour of each node ``v`` has (``col < 0``: uncoloured)."""
    nv = nb[v]
    ok = nv >= 0
    cv = np.where(ok, col[np.where(ok, nv, 0)], -1)
    used = np.zeros(v.size, dtype=np.int64)
    for j in range(nb.shape[1]):
        used |= np.where(cv[:, j] >= 0, np.int64(1) << np.maximum(cv[:, j], 0), 0)
    free = ~used
    return _popcount((free & -free) - 1)


def _jones_plassmann(nb: np.ndarray, seed: int) -> np.ndarray:
    """Greedy in rounds: nodes whose priority beats every uncoloured neighbour's take
    the least colour their coloured neighbours do not use (Jones & Plassmann 1993)."""
    n = nb.shape[0]
    prio = np.random.default_rng(seed).permutation(n).astype(np.int64)
    col = np.full(n, -1, dtype=np.int64)
    todo = np.arange(n, dtype=np.int64)
    while todo.size:
        nbs = nb[todo]
        ok = nbs >= 0
        safe = np.where(ok, nbs, 0)
        top = np.where(ok & (col[safe] < 0), prio[safe], -1).max(axis=1)
        sel = prio[todo] > top
        col[todo[sel]] = _least_free(nb, col, todo[sel])
        todo = todo[~sel]
    return col


def _regreedy(nb: np.ndarray, col: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Greedy again, one colour class at a time in ``order`` (a class is independent, so
    it is coloured at once): never more colours than ``col`` (Culberson's iterated greedy)."""
    new = np.full(col.size, -1, dtype=np.int64)
    for c in order:
        v = np.flatnonzero(col == c)
        new[v] = _least_free(nb, new, v)
    return new


def _greedy(nb: np.ndarray) -> np.ndarray:
    """The fewest colours of a few seeded greedy colourings, each improved by re-greedy
    passes (classes in reverse order, then largest first)."""
    n = nb.shape[0]
    best = None
    for seed in range(4 if n <= 1 << 16 else 1):
        col = _jones_plassmann(nb, seed)
        for it in range(12):
            k = int(col.max()) + 1
            sizes = np.bincount(col, minlength=k)
            order = np.arange(k)[::-1] if it % 2 == 0 else np.argsort(-sizes, kind="stable")
            col = _regreedy(nb, col, order)
        if best is None or col.max() < best.max():
            best = col
    return best


def _searched(topo: Topology) -> np.ndarray:
    """The colouring found by search (BFS 2-colouring or greedy), kept per spec."""
    got = _SEARCHED.get(topo.spec)
    if got is not None:
        return got
    if topo.num_nodes > MAX_SEARCHED:
        raise TopologyError(
            f"{topo.spec} has no closed-form colouring and {topo.num_nodes:,} nodes, over the "
            f"{MAX_SEARCHED:,} a colouring is searched for; way out: a smaller network"
        )
    nb = _table(topo)
    col = _bfs_two(nb)
    if col is None:
        col = _greedy(nb).astype(np.int8)
    while len(_SEARCHED) >= _KEEP:
        _SEARCHED.pop(next(iter(_SEARCHED)))
    _SEARCHED[topo.spec] = col
    return col


def colours(topo: Topology, ids: object) -> np.ndarray:
    """Colours (int8) of nodes ``ids`` in a proper colouring of ``topo``.

    Raises
    ------
    TopologyError
        Bad ids, or a network without a closed form above :data:`MAX_SEARCHED` nodes.
    """
    a = topo.check_ids(ids)
    if closed_form(topo) is None:
        return _searched(topo)[a]
    out = np.empty(a.size, dtype=np.int8)
    for lo in range(0, a.size, _CHUNK):
        out[lo : lo + _CHUNK] = _closed(topo, a[lo : lo + _CHUNK])
    return out


def num_colours(topo: Topology) -> int:
    """Colours the colouring of ``topo`` uses."""
    form = closed_form(topo)
    if form is None:
        return int(_searched(topo).max()) + 1
    if form.endswith("mod 3"):
        return 3
    if form.startswith("permutation parity + 2"):
        return 4
    return 2


def bipartite(topo: Topology) -> bool:
    """Whether the colouring has two colours (the network is bipartite: it has links)."""
    return num_colours(topo) == 2


def is_proper(topo: Topology, col: np.ndarray | None = None) -> bool:
    """Whether no link joins two nodes of one colour (``col``: default :func:`colours`)."""
    n = topo.num_nodes
    for lo in range(0, n, _CHUNK):
        ids = np.arange(lo, min(lo + _CHUNK, n), dtype=np.int64)
        nb = topo.neighbors(ids)
        ok = nb >= 0
        mine = colours(topo, ids) if col is None else np.asarray(col)[ids]
        theirs = np.full(nb.shape, -1, dtype=np.int64)
        if col is None:
            theirs[ok] = colours(topo, nb[ok])
        else:
            theirs[ok] = np.asarray(col)[nb[ok]]
        if (ok & (theirs == mine[:, None])).any():
            return False
    return True
