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

from mpinet.errors import TopologyError
from mpinet.topology.base import Topology
from mpinet.topology.borel_ring import CRRing, find_ring_word
from mpinet.values import check_int

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
