"""General CR labellings of Borel Cayley graphs: a ring found from the definition.

A CR labelling with q = p is a Hamiltonian cycle whose port word repeats every
p hops; :func:`find_ring_word` searches one on the p-vertex coset graph and
:class:`CRRing` numbers the nodes along it (see :meth:`Borel.cr_ring`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from mpinet.errors import TopologyError

if TYPE_CHECKING:  # only as a type: the ring is found from any Borel's ports
    from mpinet.topology.borel import Borel

#: largest P for which :func:`find_ring_word` searches a ring (the search is O(P) per try),
#: and for which it falls back to an exhaustive search
MAX_RING_P, EXHAUSTIVE_P = 200_000, 40


def _coset_moves(g: Borel) -> np.ndarray:
    """Where each port takes the coset point ``v = -y a^-t`` (a node's CR class): ``(p, 4)``.

    Right multiplication by ``X = [[x, 1], [0, 1]]`` maps ``v`` to ``(v - 1)/x``,
    by ``X^-1`` to ``x v + 1`` (``v`` is the preimage of 0 under ``z -> a^t z + y``).
    """
    v = np.arange(g.p, dtype=np.int64)
    out = np.empty((g.p, 4), dtype=np.int64)
    for col, t in ((0, g.t1), (2, g.t2)):
        x = int(g.pw[t])
        out[:, col] = (v - 1) * pow(x, -1, g.p) % g.p
        out[:, col + 1] = (x * v + 1) % g.p
    return out


def find_ring_word(g: Borel, seed: int = 0) -> list[int]:
    """Ports ``w_0..w_(p-1)`` of a CR ring of ``g`` (see :class:`CRRing`).

    The word must visit every right coset of the diagonal subgroup H once (a
    Hamiltonian cycle of the p-vertex coset graph of :func:`_coset_moves`, from
    the point 0 of the identity) and its product ``T`` must generate H, i.e. its
    exponent sum (``+-T1``, ``+-T2`` per port) must be coprime to k. Posa
    rotation-extension: extend a path from point 0 greedily (fewest free
    neighbours first), rotate it at a random neighbour of its end when stuck,
    stop at the first closed cycle with a valid exponent sum; 16 restarts. For
    P <= :data:`EXHAUSTIVE_P` an exhaustive search follows, which also proves
    that no ring exists. Deterministic for a given ``seed``.

    Raises
    ------
    TopologyError
        P > :data:`MAX_RING_P`, no ring exists, or none was found.
    """
    p, k = g.p, g.k
    if p > MAX_RING_P:
        raise TopologyError(f"{g.spec}: the CR ring search handles P <= {MAX_RING_P:,}, got {p:,}")
    mv = _coset_moves(g).tolist()
    ex = [g.t1, -g.t1, g.t2, -g.t2]
    adj = [sorted({w for w in mv[v] if w != v}) for v in range(p)]
    rng = np.random.default_rng(seed)
    for _ in range(16):
        word = _posa(adj, mv, ex, k, rng, 100 * p)
        if word is not None:
            return word
    what = "found"
    if p <= EXHAUSTIVE_P:
        word, done = _exhaustive(mv, ex, k)
        if word is not None:
            return word
        what = "exists" if done else "found"
    raise TopologyError(
        f"{g.spec}: no CR labelling {what}: it needs a Hamiltonian cycle of the {p}-coset "
        f"graph (cosets of the diagonal subgroup) whose exponent sum is coprime to k = {k}"
    )


def _posa(adj: list, mv: list, ex: list, k: int, rng: np.random.Generator, steps: int):
    """One Posa try from point 0: a ring word, or None."""
    p = len(adj)
    path, pos = [0], [-1] * p
    pos[0] = 0
    free_deg = [len(a) for a in adj]
    for w in adj[0]:
        free_deg[w] -= 1
    for _ in range(steps):
        end = path[-1]
        if len(path) == p and 0 in adj[end]:
            word = _close_word(path, mv, ex, k)
            if word is not None:
                return word
        free = [w for w in adj[end] if pos[w] < 0]
        if free:
            low = min(free_deg[w] for w in free)
            best = [w for w in free if free_deg[w] == low]
            nxt = best[int(rng.integers(len(best)))]
            pos[nxt] = len(path)
            path.append(nxt)
            for w in adj[nxt]:
                free_deg[w] -= 1
            continue
        cand = [w for w in adj[end] if pos[w] < len(path) - 2]
        if not cand:
            return None
        i = pos[cand[int(rng.integers(len(cand)))]]
        path[i + 1 :] = path[i + 1 :][::-1]
        for j in range(i + 1, len(path)):
            pos[path[j]] = j
    return None


def _exhaustive(mv: list, ex: list, k: int, budget: int = 5_000_000):
    """Depth-first search over all port words: (word or None, whether it finished)."""
    p = len(mv)
    seen, word = [False] * p, []
    seen[0] = True
    stack = [(0, 0, 0)]  # (point, exponent sum, next port to try)
    while stack and budget:
        budget -= 1
        v, total, s = stack.pop()
        if s == 4:
            if word:
                seen[v] = False
                word.pop()
            continue
        stack.append((v, total, s + 1))
        w = mv[v][s]
        if len(word) == p - 1:
            if w == 0 and math.gcd(total + ex[s], k) == 1:
                return [*word, s], True
        elif not seen[w]:
            seen[w] = True
            word.append(s)
            stack.append((w, total + ex[s], 0))
    return None, not stack


def _close_word(path: list[int], mv: list[list[int]], ex: list[int], k: int) -> list[int] | None:
    """Ports along the closed vertex cycle ``path``, choosing among parallel ports so
    that the exponent sum is coprime to ``k`` (None if no choice works)."""
    nxt = path[1:] + path[:1]
    alts = [[s for s in range(4) if mv[u][s] == w] for u, w in zip(path, nxt, strict=True)]
    word = [a[0] for a in alts]
    total = sum(ex[s] for s in word)
    if math.gcd(total, k) == 1:
        return word
    for i, a in enumerate(alts):
        for s in a[1:]:
            if math.gcd(total - ex[word[i]] + ex[s], k) == 1:
                word[i] = s
                return word
    return None


class CRRing:
    """A CR labelling (Def. 1 with q = p plus the +-1 ring) from a ring word.

    With ``P_0 = I``, ``P_(j+1) = P_j W_j`` (the generator of port ``w_j``) and
    ``T = P_(p-1) W_(p-1) = diag(a^S, 1)``, CR number ``c = j + p*m`` is the node
    ``T^m P_j``. Left multiplication by T is an automorphism (+p on CR numbers)
    and ``c -> c + 1`` is an edge (port ``w_(c mod p)``), so the connection
    offsets depend on the class ``c mod p`` only (:meth:`offsets`). Conversions
    are O(1) per node with three length-p tables.

    Raises
    ------
    TopologyError
        The word is not a CR ring of ``g``.
    """

    def __init__(self, g: Borel, word: list[int]) -> None:
        p, k, pw = g.p, g.k, g.pw
        if len(word) != p or any(s not in range(4) for s in word):
            raise TopologyError(f"{g.spec}: a CR ring word needs {p} ports in 0..3")
        self.topo, self.word = g, np.asarray(word, dtype=np.int64)
        tp, yp = np.zeros(p, dtype=np.int64), np.zeros(p, dtype=np.int64)
        t = y = 0
        for j, s in enumerate(word):
            tp[j], yp[j] = t, y
            step = (g.t1, g.t2)[s // 2]
            if s % 2 == 0:
                t, y = (t + step) % k, (y + int(pw[t])) % p
            else:
                t = (t - step) % k
                y = (y - int(pw[t])) % p
        self.exponent = t  # T = diag(a^S, 1), S = t
        v = (-yp * pw[(-tp) % k]) % p
        self.pos = np.full(p, -1, dtype=np.int64)
        self.pos[v] = np.arange(p)
        if y != 0 or math.gcd(t, k) != 1 or np.any(self.pos < 0):
            raise TopologyError(f"{g.spec}: the word is not a CR ring (cosets or T's order)")
        self.tp, self.yp = tp, yp
        self._sinv = pow(t, -1, k)

    def to_cr(self, ids: object) -> np.ndarray:
        """CR numbers of GCR ids."""
        g = self.topo
        t, y = g.matrices(ids)
        j = self.pos[(-y * g.pw[(-t) % g.k]) % g.p]
        return j + g.p * ((t - self.tp[j]) * self._sinv % g.k)

    def from_cr(self, cr: object) -> np.ndarray:
        """GCR ids of CR numbers (inverse of :meth:`to_cr`)."""
        g = self.topo
        c = g.check_ids(cr, "cr")
        j, tm = c % g.p, (c // g.p) * self.exponent % g.k
        return g.ids_from(tm + self.tp[j], g.pw[tm] * self.yp[j])

    def offsets(self) -> np.ndarray:
        """``(p, 4)`` CR offsets (mod N, in ``[0, N)``) of the four ports, per class."""
        g = self.topo
        cls = np.arange(g.p, dtype=np.int64)
        nb = g.neighbors(self.from_cr(cls))
        return (self.to_cr(nb.ravel()).reshape(nb.shape) - cls[:, None]) % g.num_nodes
