"""BookSim2's k-ary n-cubes: ``mesh:K,N`` and ``torus:K,N``.

Numbering as BookSim's ``KNCube`` (src/networks/kncube.cpp): node id
``sum_i c_i * K^i``, coordinate ``c_0`` the lowest dimension. Ports as its
router's outputs: ``2 i`` moves ``+1`` along dimension ``i`` ("right"),
``2 i + 1`` moves ``-1`` ("left"); each is the other's reverse. On the torus
the links wrap; on the mesh the ports that would wrap are absent (``-1``), where
BookSim builds the wrap channels but its mesh routing never takes them.

Distances separate by dimension: ``|a - b|`` per mesh coordinate and
``min(d, K - d)``, ``d = (b - a) mod K``, per torus one
(:func:`mpinet.theory.kncube_forms` has the closed forms ``mpinet info`` prints).
"""

from __future__ import annotations

import re

import numpy as np

from mpinet.errors import TopologyError
from mpinet.topology.base import Topology
from mpinet.values import check_int

#: most nodes of a k-ary n-cube (ids stay far inside int64)
MAX_NODES = 1 << 40
#: most dimensions (BookSim's ports 0..2N; mpinet's port masks hold 64 ports)
MAX_N = 32

_LABEL = re.compile(r"^\(\s*\d+(\s*,\s*\d+)*\s*\)$")


def coords(ids: object, k: int, n: int) -> np.ndarray:
    """Coordinates ``(len(ids), n)`` of node ids, column ``i`` = dimension ``i``."""
    a = np.asarray(ids, dtype=np.int64).ravel()
    powers = np.int64(k) ** np.arange(n, dtype=np.int64)
    return (a[:, None] // powers[None, :]) % k


def ids_of(c: object, k: int) -> np.ndarray:
    """Node ids of coordinate rows ``(M, n)`` (the inverse of :func:`coords`)."""
    c = np.asarray(c, dtype=np.int64)
    powers = np.int64(k) ** np.arange(c.shape[1], dtype=np.int64)
    return c @ powers


class _KNCube(Topology):
    """Common part of the mesh and the torus: K, N, ports, labels."""

    wrap = False

    def __init__(self, k: int | str, n: int | str) -> None:
        low = 3 if self.wrap else 2
        self.k = check_int(f"K in {self.spec_form}", k, low, MAX_NODES)
        self.n = check_int(f"N in {self.spec_form}", n, 1, MAX_N)
        if self.k**self.n > MAX_NODES:
            raise TopologyError(
                f"{self.spec_form} has K^N nodes, at most 2^40; got {self.k}^{self.n}"
            )
        self.spec = f"{self.family}:{self.k},{self.n}"
        self.num_nodes = self.k**self.n
        self.ports = tuple(f"{s}{i}" for i in range(self.n) for s in ("+", "-"))
        self.port_classes = tuple(f"dim{i}" for i in range(self.n) for _ in "+-")
        self.reverse_port = tuple(p ^ 1 for p in range(2 * self.n))
        self.identity = 0
        self.strides = np.int64(self.k) ** np.arange(self.n, dtype=np.int64)

    def coords(self, ids: object) -> np.ndarray:
        """Coordinates of validated ids, ``(M, N)``."""
        return coords(self.check_ids(ids), self.k, self.n)

    def _neighbors(self, ids: np.ndarray) -> np.ndarray:
        c = (ids[:, None] // self.strides[None, :]) % self.k
        out = np.empty((ids.size, 2 * self.n), dtype=np.int64)
        top = self.k - 1
        for i in range(self.n):
            s, ci = self.strides[i], c[:, i]
            plus = np.where(ci == top, ids - top * s, ids + s)
            minus = np.where(ci == 0, ids + top * s, ids - s)
            if not self.wrap:
                plus[ci == top] = -1
                minus[ci == 0] = -1
            out[:, 2 * i], out[:, 2 * i + 1] = plus, minus
        return out

    def _label(self, node: int) -> str:
        c = coords([node], self.k, self.n)[0]
        return "(" + ",".join(str(int(x)) for x in c) + ")"

    def _parse_label(self, text: str) -> int:
        if not _LABEL.match(text):
            raise TopologyError(
                f"{self.spec} label must be (c0,...,c{self.n - 1}), coordinates lowest dimension "
                f"first, each in [0, {self.k - 1}], e.g. ({','.join('0' * self.n)}); got {text!r}"
            )
        c = [int(x) for x in text.strip("() ").split(",")]
        if len(c) != self.n or max(c) >= self.k:
            raise TopologyError(
                f"{self.spec} label needs {self.n} coordinates in [0, {self.k - 1}]; got {text!r}"
            )
        return int(ids_of(np.array([c]), self.k)[0])


class Mesh(_KNCube):
    """``mesh:K,N``: the K-ary N-dimensional mesh, K >= 2 (ports at the edges absent)."""

    family = "mesh"
    spec_form = "mesh:K,N"
    wrap = False

    def __init__(self, k: int | str, n: int | str) -> None:
        super().__init__(k, n)
        # K = 2: every node has one port per dimension (the hypercube), but no automorphism
        # keeps the ports (+i exists at coordinate 0 only), and mpinet's symmetry is by those
        self.regular = self.k == 2
        self.vertex_transitive = False

    def describe(self) -> dict:
        """:meth:`Topology.describe` with the degree of the nodes (N at the corners, 2N inside)."""
        out = super().describe()
        out["degree"] = self.n if self.k == 2 else 2 * self.n
        return out


class Torus(_KNCube):
    """``torus:K,N``: the K-ary N-cube with wrap-around links, K >= 3."""

    family = "torus"
    spec_form = "torus:K,N"
    wrap = True

    def __init__(self, k: int | str, n: int | str) -> None:
        if str(k).strip() == "2":
            raise TopologyError(
                "K in torus:K,N must be >= 3: torus:2,N would join each pair twice (BookSim "
                "builds it so); use mesh:2,N or hypercube:N, the same graph with single links"
            )
        super().__init__(k, n)
        self.regular = True
        self.vertex_transitive = True

    @property
    def translation_targets(self) -> np.ndarray:
        """Node 0."""
        return np.zeros(1, dtype=np.int64)

    def _translate(self, cur: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # x -> x - dst coordinatewise (mod K) keeps every port's direction and dimension
        rel = (coords(cur, self.k, self.n) - coords(dst, self.k, self.n)) % self.k
        return rel @ self.strides, np.zeros(cur.size, dtype=np.int64)
