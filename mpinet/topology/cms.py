"""Clustered macro-star networks CMS((c), l, n) (Yeh and Varvarigos, paper 004, section 5.1).

MS(l, n) keeps only ``c`` of its ``(nl+1)!/(nl-n+1)!`` level-l clusters, and the
links into the removed clusters disappear. A level-l cluster is the set of
nodes sharing their last block (positions ``(l-1)n+2 .. nl+1``, in order); it is
a copy of MS(l-1, n) on ``(nl-n+1)!`` nodes and, in mpinet's id order (last
symbols most significant), a block of consecutive MS ids. Only the ``S_l`` port
leaves a cluster: from a node whose block 1 is the tuple ``b`` it leads into
the cluster whose last block is ``b``. Two clusters are therefore joined
(by ``(nl-2n+1)!`` links) exactly when their last blocks share no symbol.

**Which clusters are kept.** The first ``c`` in id order would not do: the two
lowest clusters of MS(2, 2) have last blocks ``45`` and ``35``, which share the
symbol 5, so CMS((2), 2, 2) would be disconnected. mpinet keeps the first ``c``
clusters of a breadth-first search of the cluster graph from the identity's
cluster (last block ``(nl-n+2 .. nl+1)``), neighbours in increasing id order;
every prefix of that order is connected. Nodes are renumbered ``0 .. c*S-1``
(``S = (nl-n+1)!``), the ``q``-th kept cluster holding ids ``qS .. qS+S-1``
in MS order, so clusters stay contiguous and the identity is node 0. Labels are
the MS labels. The network is neither regular nor vertex-transitive: port
``S_l`` is ``-1`` where it would lead into a removed cluster.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from mpinet import perm
from mpinet.errors import TopologyError
from mpinet.topology.base import Topology
from mpinet.topology.macrostar import MacroStar
from mpinet.values import check_int

SPEC_FORM = "cms:C,L,N"
#: most kept clusters (the kept set is built by a search over c clusters)
MAX_CLUSTERS = 1 << 22


def cluster_of_blocks(blocks: np.ndarray, k: int) -> np.ndarray:
    """MS cluster index (MS id // S) of each last block, ``(M, n)`` 0-based symbols."""
    blocks = np.asarray(blocks, dtype=np.uint8)
    m, n = blocks.shape
    used = np.zeros((m, k), dtype=bool)
    used[np.arange(m)[:, None], blocks] = True
    front = np.nonzero(~used)[1].reshape(m, k - n).astype(np.uint8)  # sorted, ranks low
    return perm.rank(np.concatenate([front, blocks], axis=1)) // math.factorial(k - n)


def kept_clusters(l: int, n: int, c: int) -> np.ndarray:
    """The ``c`` kept clusters' last blocks, ``(c, n)`` uint8, in kept order (see module doc)."""
    k = n * l + 1
    start = np.arange(k - n, k, dtype=np.uint8)[None, :]
    order = [start[0]]
    seen = {int(cluster_of_blocks(start, k)[0])}
    head = 0
    while len(order) < c:
        here = set(order[head].tolist())
        head += 1
        rest = [s for s in range(k) if s not in here]
        nbrs = np.array(list(itertools.permutations(rest, n)), dtype=np.uint8)
        ids = cluster_of_blocks(nbrs, k)
        for i in np.argsort(ids, kind="stable"):
            if int(ids[i]) not in seen:
                seen.add(int(ids[i]))
                order.append(nbrs[i])
                if len(order) == c:
                    break
    return np.array(order, dtype=np.uint8)


class ClusteredMacroStar(Topology):
    """``cms:C,L,N``: CMS((C), L, N), MS(L, N) with C of its level-L clusters kept.

    Attributes
    ----------
    c, l, n, k : int
    ms : MacroStar
        The full MS(l, n) the clusters come from.
    cluster_size : int
        ``S = (nl-n+1)!`` nodes per level-l cluster.
    blocks : (c, n) uint8 array
        Last block of each kept cluster, in kept (id) order.
    """

    family = "cms"
    spec_form = SPEC_FORM
    vertex_transitive = False
    regular = False

    def __init__(self, c: int | str, l: int | str, n: int | str) -> None:
        self.l = check_int(f"L in {SPEC_FORM}", l, 2, perm.MAX_SYMBOLS)
        self.n = check_int(f"N in {SPEC_FORM}", n, 1, perm.MAX_SYMBOLS)
        self.k = k = self.n * self.l + 1
        if k > perm.MAX_SYMBOLS:
            raise TopologyError(
                f"{SPEC_FORM} needs L*N+1 <= {perm.MAX_SYMBOLS} symbols, got L*N+1 = {k}"
            )
        total = math.factorial(k) // math.factorial(k - self.n)
        self.c = check_int(
            f"C in {SPEC_FORM} (kept level-L clusters, (LN+1)!/(LN-N+1)! = {total})",
            c,
            2,
            min(total, MAX_CLUSTERS),
        )
        self.spec = f"cms:{self.c},{self.l},{self.n}"
        self.ms = MacroStar(self.l, self.n)
        self.cluster_size = math.factorial(k - self.n)
        self.num_nodes = self.c * self.cluster_size
        self.ports = self.ms.ports
        self.port_classes = self.ms.port_classes
        self.reverse_port = self.ms.reverse_port
        self.blocks = kept_clusters(self.l, self.n, self.c)
        self.ms_cluster = cluster_of_blocks(self.blocks, k)  # MS cluster index, kept order
        self._sorted = np.argsort(self.ms_cluster, kind="stable")
        self._sorted_ids = self.ms_cluster[self._sorted]

    @property
    def paper_name(self) -> str:
        """The paper's notation, e.g. ``CMS((3),2,2)``."""
        return f"CMS(({self.c}),{self.l},{self.n})"

    # ------------------------------------------------------- id mapping
    def to_ms(self, ids: object) -> np.ndarray:
        """MS(l, n) ids of CMS node ids."""
        a = self.check_ids(ids)
        s = self.cluster_size
        return self.ms_cluster[a // s] * s + a % s

    def from_ms(self, ms_ids: object) -> np.ndarray:
        """CMS ids of MS(l, n) ids, ``-1`` for nodes of removed clusters."""
        a = np.asarray(ms_ids, dtype=np.int64).ravel()
        s = self.cluster_size
        cl = a // s
        pos = np.minimum(np.searchsorted(self._sorted_ids, cl), self.c - 1)
        found = (self._sorted_ids[pos] == cl) & (a >= 0)
        return np.where(found, self._sorted[pos] * s + a % s, -1)

    def cluster(self, ids: object) -> np.ndarray:
        """Kept-cluster index (0..c-1) of CMS node ids."""
        return self.check_ids(ids) // self.cluster_size

    def cluster_adjacency(self) -> np.ndarray:
        """``(c, c)`` bool: kept clusters joined by ``S_l`` links (last blocks disjoint)."""
        member = np.zeros((self.c, self.k), dtype=bool)
        member[np.arange(self.c)[:, None], self.blocks] = True
        m = member.astype(np.int32)
        return (m @ m.T) == 0

    # ------------------------------------------------- Topology methods
    def _neighbors(self, ids: np.ndarray) -> np.ndarray:
        nb = self.ms.neighbors(self.to_ms(ids))
        return self.from_ms(nb).reshape(nb.shape)

    def _label(self, node: int) -> str:
        return self.ms.label(int(self.to_ms([node])[0]))

    def _parse_label(self, text: str) -> int:
        try:
            ms_id = self.ms.parse_label(text)
        except TopologyError as exc:
            raise TopologyError(f"{self.spec} label: {exc}") from None
        node = int(self.from_ms([ms_id])[0])
        if node < 0:
            raise TopologyError(
                f"{self.spec} label {text!r}: its last block is not one of the {self.c} kept "
                "level-L clusters"
            )
        return node
