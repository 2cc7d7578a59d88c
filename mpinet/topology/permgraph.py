"""Cayley graphs on permutations whose generators act on positions (star, MS, cayley:).

Shared by :mod:`star`, :mod:`macrostar`, :mod:`ims` and :mod:`cayley`; the
ranking is :mod:`mpinet.perm`'s, so ids of permutations that share their last
symbols are consecutive.

Cycle notation (:func:`cycle_text`): the cycle ``(a b c)`` moves the symbol in
position ``a`` to position ``b``, the one in ``b`` to ``c`` and the one in ``c``
to ``a``; as a position generator ``g`` (``(pi * g)[i] = pi[g[i]]``) that is
``g[b] = a``, ``g[c] = b``, ``g[a] = c``.
"""

from __future__ import annotations

import math

import numpy as np

from mpinet import perm
from mpinet.errors import TopologyError
from mpinet.topology.base import Topology


def cycle_text(g: np.ndarray, sep: str = " ") -> str:
    """Cycle notation of a position generator, 1-based: ``(1 2 3)(4 5)``.

    Each cycle starts at its smallest position, cycles in order of it; fixed
    positions are left out (the identity is ``()``). ``sep`` joins the symbols.
    """
    g = np.asarray(g, dtype=np.int64)
    dest = np.argsort(g)  # dest[a] = b: the symbol in position a moves to position b
    seen = np.zeros(g.size, dtype=bool)
    parts = []
    for a in range(g.size):
        if seen[a] or dest[a] == a:
            continue
        cyc, x = [], a
        while not seen[x]:
            seen[x] = True
            cyc.append(str(x + 1))
            x = int(dest[x])
        parts.append("(" + sep.join(cyc) + ")")
    return "".join(parts) or "()"


class PermCayley(Topology):
    """A Cayley graph on the permutations of ``k`` symbols with position
    generators ``gens``; the set must be closed under inverses, and the reverse
    of port ``p`` is the port of its inverse (itself for an involution)."""

    k: int
    gens: np.ndarray  # (degree, k) position generators

    def _setup(self, k: int, gens: list[np.ndarray], names: list[str], classes: list[str]) -> None:
        """Set the attributes; raise :class:`TopologyError` for the identity, a
        generator given twice, or one whose inverse is not in the set."""
        self.k = k
        self.gens = np.array(gens, dtype=np.intp).reshape(len(gens), k)
        self.num_nodes = math.factorial(k)
        self.ports = tuple(names)
        self.port_classes = tuple(classes)
        self.reverse_port = _reverse_ports(self.gens, self.ports, self.spec)
        # a generator moving positions < top only changes the rank digits below top
        moved = self.gens != np.arange(k)
        self._top = [int(np.flatnonzero(row).max()) + 1 for row in moved]

    def perms(self, ids: np.ndarray) -> np.ndarray:
        """Permutations (0-based symbols) of validated ids."""
        return perm.unrank(ids, self.k)

    def _neighbors(self, ids: np.ndarray) -> np.ndarray:
        out = np.empty((ids.size, self.degree), dtype=np.int64)
        self.neighbors_into(ids, out)
        return out

    def neighbors_into(self, ids: np.ndarray, out: np.ndarray) -> None:
        """Write the neighbours of valid ``ids`` into ``out`` (``(len(ids), degree)``),
        ranking only the prefix each generator moves.

        A generator moving positions ``< J`` leaves the rank digits from ``J`` on
        unchanged, so ``rank(pi * g) = rank(pi) - rank(pi) % J! + rank(prefix)``,
        where the prefix is the first ``J`` symbols of ``pi * g`` (ranking only
        compares symbols, so the prefix ranks as it stands). The star's ports move
        prefixes of 2..k positions: about half of the ranking work of whole rows.
        """
        p = perm.unrank(ids, self.k)
        for col, (g, top) in enumerate(zip(self.gens, self._top, strict=True)):
            block = math.factorial(top)
            out[:, col] = ids - ids % block + perm.rank(p[:, g[:top]])

    @property
    def translation_targets(self) -> np.ndarray:
        """The identity (id 0): every destination is translated to it."""
        return np.zeros(1, dtype=np.int64)

    def _translate(self, cur: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # x -> d^-1 * x commutes with the position generators (right multiplication).
        rel = perm.relative_rank(cur, dst, self.k)
        return rel, np.zeros(cur.size, dtype=np.int64)

    def _label(self, node: int) -> str:
        return perm.format_perm(perm.unrank([node], self.k)[0])

    def _parse_label(self, text: str) -> int:
        try:
            p = perm.parse_perm(text, self.k)
        except TopologyError as exc:
            raise TopologyError(f"{self.spec} label: {exc}") from None
        return int(perm.rank(p[None, :])[0])


def _reverse_ports(gens: np.ndarray, names: tuple[str, ...], spec: str) -> tuple[int, ...]:
    """Port of each generator's inverse; refuse the identity, repeats and missing inverses."""
    k = gens.shape[1]
    index: dict[bytes, int] = {}
    for p, g in enumerate(gens):
        key = g.astype(np.uint8).tobytes()
        if (g == np.arange(k)).all():
            raise TopologyError(
                f"{spec}: generator {p + 1} (port {names[p]}) is the identity, which would "
                "be a self loop at every node; leave it out"
            )
        if key in index:
            q = index[key]
            raise TopologyError(
                f"{spec}: generator {cycle_text(g)} is given twice (generators {q + 1} and "
                f"{p + 1}), which would be a double link at every node; give it once"
            )
        index[key] = p
    rev = []
    for p, g in enumerate(gens):
        q = index.get(np.argsort(g).astype(np.uint8).tobytes())
        if q is None:
            raise TopologyError(
                f"{spec}: the inverse of generator {cycle_text(g)} (port {names[p]}) is not "
                f"in the set, so its links would be one-way; add {cycle_text(np.argsort(g))} "
                "(mpinet runs undirected networks: the generators must be closed under inverses)"
            )
        rev.append(q)
    return tuple(rev)
