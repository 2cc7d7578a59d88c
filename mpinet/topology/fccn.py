"""Fully connected cubic network m-FCCN (Chang & Wang, paper 002).

A 1-FCCN is a 3-cube; an m-FCCN is eight (m-1)-FCCNs, copy ``kappa`` getting
the leading octal digit ``kappa``, plus an *intercubic* link between each pair
of m-level gateways ``(v kappa^{m-1})`` and ``(kappa v^{m-1})``, ``v != kappa``
(Def. 2.1-2.3). Unrolling the recursion: a node whose trailing run of equal
digits ``nu`` has length ``k-1`` (digit ``k`` is ``kappa != nu``) links to
``(prefix, nu, kappa^{k-1})``; the eight nodes ``(v^m)`` (UGNs) have no
intercubic link.

Node id = the octal number ``beta_m ... beta_1`` (``beta_m`` most
significant), so every (k-1)-FCCN is a contiguous block of ``8^(k-1)`` ids.
Ports ``cube0..cube2`` flip bit 0..2 of ``beta_1``; port ``inter`` is the
intercubic link (``-1`` at the UGNs).
"""

from __future__ import annotations

import itertools
import re

import numpy as np

from mpinet.errors import TopologyError
from mpinet.topology.base import Topology
from mpinet.values import check_int

#: Largest supported level: 8^10 = 2^30 nodes.
MAX_M = 10

_LABEL = re.compile(r"^\(?\s*([0-7](?:\s*[0-7])*)\s*\)?$")


def repunit(t: np.ndarray | int) -> np.ndarray | int:
    """Octal repunit ``0o11...1`` with ``t`` ones, i.e. ``(8^t - 1) / 7``."""
    return ((1 << (3 * t)) - 1) // 7


def _popcount(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(x).astype(np.int64)


def _digits(ids: np.ndarray, m: int) -> np.ndarray:
    """``(len(ids), m)`` octal digits; column ``j`` holds ``beta_{j+1}``."""
    shifts = 3 * np.arange(m, dtype=np.int64)
    return (ids[:, None] >> shifts) & 7


def sroute_distance(src: object, dst: object, m: int) -> np.ndarray:
    """Length of the paper's simple route (Algorithms 3.1/3.2) from ``src`` to ``dst``.

    Implements Corollary 3.1, eq. (3.2). As printed, (3.2) assumes
    ``alpha_m != beta_m``; for other pairs the route stays inside the smallest
    common sub-FCCN, so equal leading digits are stripped first and (3.2) is
    applied at level ``k`` = the highest differing digit (``Max_level_differ``).
    The result is not always a shortest path (e.g. ``(07) -> (37)``: 5 vs 4).
    Algorithm 3.2 with ``Max_level_differ`` recomputed at every hop follows
    the same route as Algorithm 3.1 (checked on all pairs for m <= 3).

    Parameters
    ----------
    src, dst : array_like of int
        Node ids of an m-FCCN (broadcast against each other).
    m : int
        Number of levels.

    Returns
    -------
    numpy.ndarray
        int64 route lengths, same shape as the broadcast inputs.
    """
    m = check_int("m in sroute_distance", m, 1, MAX_M)
    a, b = np.broadcast_arrays(np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64))
    shape = a.shape
    a, b = a.ravel(), b.ravel()
    if a.size and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= 8**m):
        raise TopologyError(f"src and dst must be node ids in [0, {8**m - 1}] for fccn:{m}")
    da, db = _digits(a, m), _digits(b, m)
    # k (0-based) = highest differing digit, i.e. Max_level_differ - 1 (0 if equal).
    neq = da != db
    k = np.where(neq.any(axis=1), m - 1 - np.argmax(neq[:, ::-1], axis=1), 0)
    rows = np.arange(a.size)
    ak, bk = da[rows, k], db[rows, k]
    # (A.1) to the k-CGN (alpha_{m..k+1} alpha_k beta_k^{k-1}), (A.2) one hop, (A.3) onwards.
    dist = _popcount(da[:, 0] ^ bk) + 1 + _popcount(ak ^ db[:, 0])
    for j in range(1, m - 1):  # digit beta_{j+1} has weight 2^(j-1), only below level k
        w = np.int64(1 << (j - 1)) * (j < k)
        xa, xb = da[:, j] ^ bk, ak ^ db[:, j]
        dist += w * ((_popcount(xa) + 1) * (xa != 0) + (_popcount(xb) + 1) * (xb != 0))
    # k == 0: plain 3-cube routing (also 0 for src == dst).
    out = np.where(k > 0, dist, _popcount(da[:, 0] ^ db[:, 0]))
    return out.reshape(shape)


def sroute_path(src: int, dst: int, m: int) -> list[int]:
    """Node ids visited by the paper's R-Route (Algorithm 3.1), ``src`` first.

    Cubic routing corrects bits of ``beta_1`` from bit 0 upwards. Meant for
    tests and single routes; use :func:`sroute_distance` for many pairs.
    """
    m = check_int("m in sroute_path", m, 1, MAX_M)
    for name, v in (("src", src), ("dst", dst)):
        check_int(f"{name} in sroute_path for fccn:{m}", v, 0, 8**m - 1)
    path = [int(src)]

    def go(a: int, b: int) -> None:
        if a == b:
            return
        k = ((a ^ b).bit_length() - 1) // 3  # Max_level_differ - 1 (0-based digit)
        if k == 0:
            for bit in (1, 2, 4):
                if (a ^ b) & bit:
                    a ^= bit
                    path.append(a)
            return
        prefix = (a >> (3 * k)) << (3 * k)  # alpha_{m..k}, lower digits cleared
        ak, bk = (a >> (3 * k)) & 7, (b >> (3 * k)) & 7
        rest = (a >> (3 * k + 3)) << (3 * k + 3)
        gw_a = prefix | (bk * repunit(k))
        gw_b = rest | (bk << (3 * k)) | (ak * repunit(k))
        go(a, gw_a)
        path.append(gw_b)
        go(gw_b, b)

    go(int(src), int(dst))
    return path


class FCCN(Topology):
    """``fccn:M``: the M-level fully connected cubic network, M in [1, 10]."""

    family = "fccn"
    spec_form = "fccn:M"
    #: automorphisms :meth:`source_orbits` uses (3-cube automorphisms on every digit): at
    #: least N / 48 orbits, which bounds the all-sources BFS's work before computing them
    orbit_group_order = 48

    def __init__(self, m: int | str) -> None:
        self.m = check_int("M in fccn:M", m, 1, MAX_M)
        self.spec = f"fccn:{self.m}"
        self.num_nodes = 8**self.m
        self.ports = ("cube0", "cube1", "cube2", "inter")
        self.port_classes = ("cube", "cube", "cube", "intercubic")
        self.reverse_port = (0, 1, 2, 3)
        # the 1-FCCN is the 3-cube: every node is a UGN, no node has the 'inter' port, so
        # it is 3-regular and vertex-transitive; from m = 2 on only the eight UGNs lack it
        self.regular = self.m == 1
        self.vertex_transitive = self.m == 1
        self.identity = 0

    def describe(self) -> dict:
        """:meth:`Topology.describe`, with the degree of the nodes (3 for the 3-cube)."""
        out = super().describe()
        out["degree"] = 3 if self.m == 1 else 4
        return out

    def ugns(self) -> np.ndarray:
        """Ids of the eight unconnected gateway nodes ``(v^m)``."""
        return np.arange(8, dtype=np.int64) * repunit(self.m)

    def digits(self, ids: object) -> np.ndarray:
        """``(len(ids), m)`` octal digits, column ``j`` = ``beta_{j+1}``."""
        return _digits(self.check_ids(ids), self.m)

    def source_orbits(self) -> tuple[np.ndarray, np.ndarray]:
        """Orbit representatives of the nodes and the orbit sizes.

        Applying one automorphism of the 3-cube (a bit permutation followed by
        an XOR, 48 in all) to every octal digit maps cube links to cube links
        and the intercubic link ``(.. k v^j) - (.. v k^j)`` to one of the same
        form, so it is an automorphism of the m-FCCN; nodes of one orbit have
        the same distance distribution. Used by the all-sources BFS.
        """
        ids = np.arange(self.num_nodes, dtype=np.int64)
        dig = _digits(ids, self.m)
        weights = (8 ** np.arange(self.m, dtype=np.int64))[None, :]
        canon = ids.copy()
        x = np.arange(8)
        bits = [(x >> b) & 1 for b in range(3)]
        for perm3 in itertools.permutations(range(3)):
            permuted = sum(bits[perm3[b]] << b for b in range(3))
            for c in range(8):
                table = permuted ^ c
                canon = np.minimum(canon, (table[dig] * weights).sum(axis=1))
        reps, counts = np.unique(canon, return_counts=True)
        return reps, counts.astype(np.int64)

    def _neighbors(self, ids: np.ndarray) -> np.ndarray:
        out = np.empty((ids.size, 4), dtype=np.int64)
        for b in range(3):
            out[:, b] = ids ^ (1 << b)
        nu = ids & 7
        # Digits equal to nu become 0 in x; the lowest set bit of x marks digit k.
        x = ids ^ (nu * repunit(self.m))
        ugn = x == 0
        t = _popcount((x & -x) - 1) // 3  # = k - 1, length of the trailing run
        t[ugn] = 0
        kappa = (ids >> (3 * t)) & 7
        high = (ids >> (3 * t + 3)) << (3 * t + 3)
        inter = high | (nu << (3 * t)) | (kappa * repunit(t))
        out[:, 3] = np.where(ugn, -1, inter)
        return out

    def _label(self, node: int) -> str:
        return "(" + " ".join(format(node, f"0{self.m}o")) + ")"

    def _parse_label(self, text: str) -> int:
        mt = _LABEL.match(text)
        digits = re.sub(r"\s", "", mt.group(1)) if mt else ""
        if not mt or len(digits) != self.m or text.count("(") != text.count(")"):
            raise TopologyError(
                f"{self.spec} label must be {self.m} octal digits beta_m..beta_1, "
                f"e.g. ({' '.join('7' * self.m)}) or {'7' * self.m}; got {text!r}"
            )
        return int(digits, 8)
