"""Destination patterns defined through a topology's structure and labels.

More unicast patterns for :class:`~mpinet.workloads.unicast.Unicast`; each maps
``(packet id, source)`` to a destination, identically on any number of ranks
(the random ones draw from :mod:`mpinet.rng` keyed by seed and packet id), and
never to the source itself.

``nearest-neighbour``
    A uniformly random neighbour (one of the source's existing ports). Every
    route has one hop: the links' raw capacity and the injection path, with no
    multi-hop contention.
``antipodal``
    A node at the largest distance. On vertex-transitive networks (star, SCC,
    MS, IMS, Borel, hypercube, CCC) the translation ``f_s`` that moves source
    ``s`` to its target ``t = translation_targets[key(s)]`` is inverted on
    ``a``, the lowest-id node at the diameter from ``t``: the destination is
    ``f_s^-1(a)``, at the diameter from ``s`` (the hypercube's complement; on
    the Cayley graphs ``s * a``, a permutation of the nodes). Elsewhere (FCCN,
    CMS) the lowest-id node at the source's own eccentricity, from all-pairs
    BFS (N <= 4,096). Every packet takes a longest route: the worst case for
    latency and for the number of buffer classes in use.
``reversal`` (star, SCC, MS, IMS: labels are permutations of all k symbols)
    The source's permutation with its symbols in reverse order (SCC: the
    permutation part, ring position kept). A permutation pattern whose
    relative position ``s^-1 d`` is the same for every source on star, MS and
    IMS, so every packet follows the same word of generators: all sources load
    the same ports at the same hops, the permutation analogue of bit reversal.
``transpose`` (the same families)
    The two halves of the symbol string swapped: the first ``floor(k/2)``
    symbols move to the end (``123456 -> 456123``). Also one word for every
    source on the Cayley families; the analogue of the matrix transpose
    (swapping the halves of a hypercube address).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from mpinet import perm, rng
from mpinet.errors import WorkloadError
from mpinet.routing.tables import all_pairs_tables, distances_from, neighbor_table
from mpinet.topology.base import Topology
from mpinet.topology.permgraph import PermCayley

NAMES = ("nearest-neighbour", "antipodal", "reversal", "transpose")
#: families whose labels are permutations of all k symbols (SCC: its permutation part)
PERMUTATION_FAMILIES = ("star", "ms", "ims", "scc", "cayley", "pancake", "bubble", "transposition")
#: antipodal without translations needs all-pairs BFS up to this many nodes
MAX_ALL_PAIRS_NODES = 4096


def check(topo: Topology, name: str) -> None:
    """Raise WorkloadError when pattern ``name`` does not apply to ``topo``."""
    if name in ("reversal", "transpose") and not _permutations(topo):
        raise WorkloadError(
            f"workload pattern {name!r} needs a network whose labels are permutations "
            f"({', '.join(PERMUTATION_FAMILIES)}), not {topo.spec}"
        )
    if name == "antipodal" and _inverse(topo) is None and topo.num_nodes > MAX_ALL_PAIRS_NODES:
        raise WorkloadError(
            f"workload pattern 'antipodal' on {topo.spec} ({topo.num_nodes:,} nodes, no "
            f"translations) needs all-pairs BFS, up to {MAX_ALL_PAIRS_NODES:,} nodes"
        )


def destinations(
    topo: Topology, name: str, seed: int, pid: np.ndarray, src: np.ndarray
) -> np.ndarray:
    """Destinations of packets ``pid`` injected at ``src`` under pattern ``name``."""
    src = np.asarray(src, dtype=np.int64)
    if name == "nearest-neighbour":
        return _neighbour(topo, seed, np.asarray(pid, dtype=np.int64), src)
    if name == "antipodal":
        return _antipodal(topo, src)
    return _relabel(topo, name, src)


def _neighbour(topo: Topology, seed: int, pid: np.ndarray, src: np.ndarray) -> np.ndarray:
    nb = topo.neighbors(src)
    ok = nb >= 0
    pick = rng.integers(seed, pid, ok.sum(axis=1), stream=rng.STREAM_DEST)
    col = np.argmax(ok & (np.cumsum(ok, axis=1) == (pick + 1)[:, None]), axis=1)
    return nb[np.arange(src.size), col]


def _permutations(topo: Topology) -> bool:
    """Whether the labels of ``topo`` are permutations (a position-generator Cayley graph, SCC)."""
    return isinstance(topo, PermCayley) or topo.family == "scc"


def _relabel(topo: Topology, name: str, src: np.ndarray) -> np.ndarray:
    """Reversal or transpose of the permutation part of the labels."""
    if topo.family == "scc":
        i, r = topo.split(src)  # type: ignore[attr-defined]
        p, k = perm.unrank(r, topo.n), topo.n  # type: ignore[attr-defined]
    else:
        p, k = topo.perms(src), topo.k  # type: ignore[attr-defined]
    q = p[:, ::-1] if name == "reversal" else np.roll(p, -(k // 2), axis=1)
    ranks = perm.rank(np.ascontiguousarray(q))
    return topo.join(i, ranks) if topo.family == "scc" else ranks  # type: ignore[attr-defined]


def _inverse(topo: Topology):
    """``(s, rel) -> x`` with ``translate(x, s).rel == rel``, or None for this family."""
    fam = topo.family
    if topo.translation_targets is None:
        return None
    if isinstance(topo, PermCayley):  # x -> d^-1 x, inverted: rel -> s * rel
        return lambda s, rel: perm.rank(perm.compose(topo.perms(s), topo.perms(rel)))
    if fam == "scc":

        def scc(s, rel):
            _, rs = topo.split(s)
            i, rr = topo.split(rel)
            n = topo.n
            return topo.join(i, perm.rank(perm.compose(perm.unrank(rs, n), perm.unrank(rr, n))))

        return scc
    if fam == "hypercube":
        return lambda s, rel: s ^ rel
    if fam == "ccc":

        def ccc(s, rel):
            n, mask = topo.n, (1 << topo.n) - 1
            j, y = s % n, s // n
            i, z = rel % n, rel // n
            x = (((z << j) | (z >> (n - j))) & mask) ^ y  # rotate left by j
            return (i + j) % n + n * x

        return ccc
    if fam == "borel":

        def borel(s, rel):
            k, p = topo.k, topo.p
            td, yd = s % k, s // k
            t, y = rel % k, rel // k
            return (t + td) % k + k * ((topo.pw[td] * y + yd) % p)

        return borel
    return None


@lru_cache(maxsize=8)
def _antipodes(topo: Topology) -> tuple[np.ndarray, bool]:
    """Per translation key the lowest-id node at the diameter from its target (True),
    or per node its farthest node (False)."""
    if _inverse(topo) is not None:
        targets = np.asarray(topo.translation_targets, dtype=np.int64)
        nb = neighbor_table(topo)
        far = []
        for t in targets:
            dist = distances_from(topo, int(t), nb)
            far.append(int(np.flatnonzero(dist == dist.max())[0]))
        return np.array(far, dtype=np.int64), True
    _, dist = all_pairs_tables(neighbor_table(topo))
    dist = np.where(dist == 255, -1, dist.astype(np.int16))  # unreachable pairs never chosen
    return np.argmax(dist, axis=1).astype(np.int64), False


def _antipodal(topo: Topology, src: np.ndarray) -> np.ndarray:
    far, translated = _antipodes(topo)
    if not translated:
        return far[src]
    key = topo.translate(src, src)[1]
    rel = far[key]
    out = np.asarray(_inverse(topo)(src, rel), dtype=np.int64)
    if not np.array_equal(topo.translate(out, src)[0], rel):  # a wrong inverse is a bug
        raise AssertionError(f"antipodal: inverse translation of {topo.spec} is wrong")
    return out
