"""Borel Cayley graphs (Tang and Arden, paper 003, Def. 3 and Sec. 2.3-3).

Nodes are the Borel matrices ``X = [[a^t, y], [0, 1]]`` mod p, ``t`` in Z_k,
``y`` in Z_p, where k is the multiplicative order of a mod p; N = p*k. The
generators are ``A = [[a^t1, 1], [0, 1]]``, ``B = [[a^t2, 1], [0, 1]]`` and
their inverses, and X is joined to ``X*G`` (right multiplication mod p). As an
affine map ``z -> a^t z + y``, right multiplication by ``[[a^s, 1], [0, 1]]``
gives ``t' = t + s``, ``y' = y + a^t`` and by its inverse ``t' = t - s``,
``y' = y - a^(t - s)``.

Node id = the paper's GCR number (transform T = [[1, 1], [0, 1]], class
representatives diag(a^i, 1), q = k): ``j = t + k*y`` is ``T^y a_t``. The
optional CR numbering (T = R^-1 S, representatives R^i, q = p, R the
generator of order p) is available through :meth:`Borel.to_cr` and friends;
:meth:`Borel.cr_ring` builds a CR labelling for any generator set where one
exists (:class:`CRRing`).
"""

from __future__ import annotations

import math

import numpy as np

from mpinet.errors import TopologyError, check_int
from mpinet.topology.base import Topology

#: N = p*k must stay below this so ids and ``t + k*y`` fit comfortably.
MAX_NODES = 2**31


def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    return all(n % d for d in range(2, math.isqrt(n) + 1))


def _order(a: int, p: int) -> int:
    """Multiplicative order of ``a`` mod prime ``p`` via the factors of p-1."""
    k, m, d = p - 1, p - 1, 2
    primes = []
    while d * d <= m:
        if m % d == 0:
            primes.append(d)
            while m % d == 0:
                m //= d
        d += 1
    if m > 1:
        primes.append(m)
    for q in primes:
        while k % q == 0 and pow(a, k // q, p) == 1:
            k //= q
    return k


def _sym(v: np.ndarray, n: int) -> np.ndarray:
    """Reduce offsets mod n into (-n/2, n/2], the paper's Table 1 convention."""
    v = np.asarray(v, dtype=np.int64) % n
    return np.where(v > n // 2, v - n, v)


class Borel(Topology):
    """``borel:P,A,T1,T2``: the degree-4 Borel Cayley graph, ids in GCR order."""

    family = "borel"
    spec_form = "borel:P,A,T1,T2"

    def __init__(self, p: int | str, a: int | str, t1: int | str, t2: int | str) -> None:
        form = self.spec_form
        self.p = check_int(f"P in {form}", p, 3, MAX_NODES - 1)
        if not _is_prime(self.p):
            raise TopologyError(
                f"P in {form} must be a prime in [3, {MAX_NODES - 1}], got {self.p}"
            )
        self.a = check_int(f"A in {form}", a, 2, self.p - 1)
        self.k = _order(self.a, self.p)
        self.num_nodes = self.p * self.k
        if self.num_nodes >= MAX_NODES:
            raise TopologyError(
                f"{form} needs N = P*k < 2**31 (k = order of A mod P), got "
                f"{self.p}*{self.k} = {self.num_nodes}"
            )
        kr = f"[0, {self.k - 1}] (k = order of {self.a} mod {self.p})"
        self.t1 = check_int(f"T1 in {form}", t1, 0, self.k - 1)
        self.t2 = check_int(f"T2 in {form}", t2, 0, self.k - 1)
        # pw[t] = a^t mod p: every step below is a table look-up.
        self.pw = np.ones(self.k, dtype=np.int64)
        for t in range(1, self.k):
            self.pw[t] = self.pw[t - 1] * self.a % self.p
        if self.t1 == self.t2:
            raise TopologyError(f"T1 and T2 in {form} must differ mod k = {self.k} (else A = B)")
        for name, t in (("T1", self.t1), ("T2", self.t2)):
            # [[x, 1], [0, 1]] is its own inverse iff x = -1: degree would drop to 3.
            if self.pw[t] == self.p - 1:
                raise TopologyError(
                    f"{name} in {form} must not give a^{name} = -1 mod P (an order-2 "
                    f"generator), got {name} = {t}; valid: {kr} except {self.k // 2}"
                )
        # The diagonal parts generate <a> iff gcd(t1, t2, k) = 1; since A != B the
        # commutator ABA^-1B^-1 is a non-trivial translation, so all translations
        # (p prime) are reached too: this gcd is exactly the connectivity test.
        g = math.gcd(self.t1, self.t2, self.k)
        if g != 1:
            raise TopologyError(
                f"T1, T2 in {form} must satisfy gcd(T1, T2, k) = 1 (k = {self.k}) for a "
                f"connected graph, got gcd({self.t1}, {self.t2}, {self.k}) = {g}"
            )
        self.spec = f"borel:{self.p},{self.a},{self.t1},{self.t2}"
        self.ports = ("A", "A-1", "B", "B-1")
        self.port_classes = ("A", "A", "B", "B")
        self.reverse_port = (1, 0, 3, 2)
        self.vertex_transitive = True
        self.regular = True
        self.identity = 0
        # CR ring generator R (order p iff its exponent is 0) and chord generator S.
        self._cr: tuple[int, int] | None = None
        for r, s in ((0, 1), (1, 0)):
            ts = (self.t1, self.t2)[s]
            if (self.t1, self.t2)[r] == 0 and math.gcd(ts, self.k) == 1:
                self._cr = (r, ts)
                break

    # ----------------------------------------------------------------- GCR
    def matrices(self, ids: object) -> tuple[np.ndarray, np.ndarray]:
        """``(t, y)`` of the matrices ``[[a^t, y], [0, 1]]`` of GCR ids."""
        a = self.check_ids(ids)
        return a % self.k, a // self.k

    def ids_from(self, t: object, y: object) -> np.ndarray:
        """GCR ids ``t + k*y`` of matrices ``[[a^t, y], [0, 1]]`` (reduced mod k, p)."""
        t = np.asarray(t, dtype=np.int64) % self.k
        return t + self.k * (np.asarray(y, dtype=np.int64) % self.p)

    def _neighbors(self, ids: np.ndarray) -> np.ndarray:
        k, p, pw = self.k, self.p, self.pw
        t, y = ids % k, ids // k
        out = np.empty((ids.size, 4), dtype=np.int64)
        for col, s in ((0, self.t1), (2, self.t2)):
            out[:, col] = (t + s) % k + k * ((y + pw[t]) % p)
            tm = (t - s) % k
            out[:, col + 1] = tm + k * ((y - pw[tm]) % p)
        return out

    @property
    def translation_targets(self) -> np.ndarray:
        """The identity matrix (id 0)."""
        return np.zeros(1, dtype=np.int64)

    def _translate(self, cur: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # D^-1 X = [[a^(t - td), a^-td (y - yd)], [0, 1]]: left multiplication
        # commutes with the right-multiplication edges.
        k, p = self.k, self.p
        tc, yc = cur % k, cur // k
        td, yd = dst % k, dst // k
        y = self.pw[(-td) % k] * ((yc - yd) % p) % p
        return (tc - td) % k + k * y, np.zeros(cur.size, dtype=np.int64)

    def gcr_constants(self) -> dict[str, np.ndarray]:
        """Table 1 GCR constants per class ``i = 0..k-1``.

        Node ``j`` with ``j mod k = i`` is joined to ``j + alpha_i``,
        ``j + alpha_inv_i``, ``j + beta_i``, ``j + beta_inv_i`` (mod N). Values
        are reduced into ``(-N/2, N/2]`` as the paper prints them (alpha_2 = -9
        for N = 21).
        """
        i = np.arange(self.k, dtype=np.int64)
        nb = _sym(self._neighbors(i) - i[:, None], self.num_nodes)
        return dict(zip(("alpha", "alpha_inv", "beta", "beta_inv"), nb.T.copy(), strict=True))

    # ------------------------------------------------------------------ CR
    @property
    def has_cr(self) -> bool:
        """Whether the paper's CR numbering exists: T1 = 0 and gcd(T2, k) = 1, or vice versa."""
        return self._cr is not None

    def _need_cr(self) -> tuple[int, int]:
        if self._cr is None:
            raise TopologyError(
                f"{self.spec} has no CR numbering here: it needs T1 = 0 and gcd(T2, k) = 1 "
                f"or T2 = 0 and gcd(T1, k) = 1 (k = {self.k}), so that a generator of "
                f"order P forms the ring and T = R^-1 S has order k"
            )
        return self._cr

    def from_cr(self, cr: object) -> np.ndarray:
        """GCR ids of CR numbers ``c = i + p*m``, i.e. of ``T^m R^i``."""
        _, s = self._need_cr()
        c = self.check_ids(cr, "cr")
        # T = R^-1 S = diag(a^s, 1) and R^i = [[1, i], [0, 1]].
        t = (c // self.p) * s % self.k
        return self.ids_from(t, self.pw[t] * (c % self.p))

    def to_cr(self, ids: object) -> np.ndarray:
        """CR numbers of GCR ids (inverse of :meth:`from_cr`)."""
        _, s = self._need_cr()
        t, y = self.matrices(ids)
        m = t * pow(s, -1, self.k) % self.k
        return y * self.pw[(-t) % self.k] % self.p + self.p * m

    def cr_constants(self) -> tuple[np.ndarray, np.ndarray]:
        """Table 1 CR constants ``(gamma, lambda)`` per class ``i = 0..p-1``.

        CR node ``c`` (class ``c mod p``) is joined to ``c + 1``, ``c - 1``,
        ``c + gamma_i``, ``c + lambda_i`` (mod N); values in ``(-N/2, N/2]``.
        The ring step +1 is R except from class p-1, where it is S; -1 is R^-1
        except from class 0 (S^-1). So gamma_i is the S chord, except gamma_{p-1}
        = R; lambda_i is the S^-1 chord, except lambda_0 = R^-1 (matches Table 1).
        """
        r, _ = self._need_cr()
        p = self.p
        i = np.arange(p, dtype=np.int64)
        nb = self._neighbors(self.from_cr(i))
        off = _sym(self.to_cr(nb.ravel()).reshape(nb.shape) - i[:, None], self.num_nodes)
        rc, sc = 2 * r, 2 * (1 - r)  # port columns of R and S (inverse = column + 1)
        gamma, lam = off[:, sc].copy(), off[:, sc + 1].copy()
        gamma[p - 1], lam[0] = off[p - 1, rc], off[0, rc + 1]
        return gamma, lam

    # -------------------------------------------------------------- labels
    def _label(self, node: int) -> str:
        return str(node)

    def _parse_label(self, text: str) -> int:
        s = text.strip().lower()
        kind, _, num = s.rpartition(":")
        if kind not in ("", "gcr", "cr"):
            raise TopologyError(
                f"{self.spec} label must be a GCR number j, 'gcr:j' or 'cr:c' with j, c in "
                f"[0, {self.num_nodes - 1}], got {text!r}"
            )
        v = check_int(
            f"{kind or 'gcr'} number in the {self.spec} label",
            num.strip(),
            0,
            self.num_nodes - 1,
        )
        return int(self.from_cr([v])[0]) if kind == "cr" else v

    # ------------------------------------------------------- general CR rings
    def cr_ring(self, seed: int = 0) -> CRRing:
        """A CR labelling of this graph for any generator set (cached per ``seed``).

        ``seed = 0`` gives the paper's labelling (the ring word ``R^(p-1) S``,
        identical to :meth:`to_cr`) where :attr:`has_cr`, else the ring found by
        :func:`find_ring_word` with seed 0; other seeds always search.

        Raises
        ------
        TopologyError
            No ring was found (P too large for the search, or none exists).
        """
        cache = self.__dict__.setdefault("_rings", {})
        if seed not in cache:
            if seed == 0 and self._cr is not None:
                r = self._cr[0]
                word = [2 * r] * (self.p - 1) + [2 * (1 - r)]
            else:
                word = find_ring_word(self, seed)
            cache[seed] = CRRing(self, word)
        return cache[seed]


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
