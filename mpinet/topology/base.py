"""The interface every topology family implements.

A topology is a graph on node ids ``0..N-1`` with numbered *ports*: port ``p``
of node ``v`` leads to ``neighbors([v])[0, p]`` (``-1`` where that port does not
exist at ``v``, e.g. the FCCN gateway nodes). Each port has a name and a class
(``local``/``lateral`` for SCC, ``nucleus``/``intercluster`` for MS, ...) and a
reverse port: the port of the neighbour that leads back.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from mpinet.errors import TopologyError

#: largest degree of a network mpinet can route: the routing tables and the engines keep a
#: node's set of ports as one bit per port of an unsigned 64-bit word (routing/tables.py's
#: port masks), so a node has at most 64 ports. Every family and reader applies it when the
#: network is built, so every command (``info`` too) has the same limit.
MAX_DEGREE = 64
#: why, in the words of the messages
DEGREE_WHY = "routing tables keep a node's ports as bits of one 64-bit mask"

_CHUNK = 1 << 18


class Topology(ABC):
    """Base class: subclasses set the attributes in ``__init__`` and implement
    :meth:`_neighbors`, :meth:`_label` and :meth:`_parse_label`."""

    family: ClassVar[str] = ""
    #: ``spec`` form with parameter names, for messages, e.g. ``"scc:N"``.
    spec_form: ClassVar[str] = ""

    spec: str
    num_nodes: int
    ports: tuple[str, ...]
    port_classes: tuple[str, ...]
    reverse_port: tuple[int, ...]
    vertex_transitive: bool = True
    regular: bool = True
    #: id of the node the papers call the identity (default BFS source).
    identity: int = 0

    @property
    def degree(self) -> int:
        """Number of ports (the maximum degree)."""
        return len(self.ports)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec}: {self.num_nodes} nodes, degree {self.degree}>"

    def check_ids(self, ids: object, name: str = "ids") -> np.ndarray:
        """Return ``ids`` as a 1-D int64 array, or raise if any is out of range."""
        a = np.asarray(ids)
        if a.dtype.kind not in "iu":
            raise TopologyError(f"{name} must be integer node ids in [0, {self.num_nodes - 1}]")
        a = a.astype(np.int64, copy=False).ravel()
        if a.size and (a.min() < 0 or a.max() >= self.num_nodes):
            bad = a[(a < 0) | (a >= self.num_nodes)][0]
            raise TopologyError(
                f"{name} must be in [0, {self.num_nodes - 1}] for {self.spec}, got {bad}"
            )
        return a

    def neighbors(self, ids: object) -> np.ndarray:
        """Neighbours of each node: ``(len(ids), degree)`` int64, ``-1`` = no port."""
        a = self.check_ids(ids)
        out = np.empty((a.size, self.degree), dtype=np.int64)
        for lo in range(0, a.size, _CHUNK):
            out[lo : lo + _CHUNK] = self._neighbors(a[lo : lo + _CHUNK])
        return out

    #: whether :attr:`reverse_port` holds at every node (False for some file networks)
    uniform_reverse: bool = True

    def reverse_ports(self, ids: object) -> np.ndarray:
        """The port of each neighbour that leads back: ``(len(ids), degree)`` int64, -1 = none."""
        a = self.check_ids(ids)
        rev = np.asarray(self.reverse_port, dtype=np.int64)
        out = np.broadcast_to(rev, (a.size, self.degree)).copy()
        out[self.neighbors(a) < 0] = -1
        return out

    def reverse_of(self, nodes: np.ndarray, ports: np.ndarray) -> np.ndarray:
        """The reverse port of each link ``(nodes[i], ports[i])`` (unchecked ids, int64)."""
        return np.asarray(self.reverse_port, dtype=np.int64)[np.asarray(ports, dtype=np.intp)]

    def label(self, node: int) -> str:
        """The paper's label of one node."""
        return self._label(int(self.check_ids([node], "node")[0]))

    def labels(self, ids: object) -> list[str]:
        """Labels of several nodes (for output, not for hot paths)."""
        return [self._label(int(i)) for i in self.check_ids(ids)]

    def parse_label(self, text: str) -> int:
        """Node id of a label in the paper's notation (or a plain ``#id``)."""
        s = str(text).strip()
        if s.startswith("#"):
            try:
                node = int(s[1:])
            except ValueError:
                raise TopologyError(f"node id {s!r} must be '#' followed by an integer") from None
            return int(self.check_ids([node], "node id")[0])
        return self._parse_label(s)

    def describe(self) -> dict:
        """Static facts: spec, family, nodes, degree, ports and their classes."""
        return {
            "spec": self.spec,
            "family": self.family,
            "nodes": self.num_nodes,
            "degree": self.degree,
            "ports": list(self.ports),
            "port_classes": list(self.port_classes),
            "regular": self.regular,
            "vertex_transitive": self.vertex_transitive,
        }

    @property
    def translation_targets(self) -> np.ndarray | None:
        """Node ids that :meth:`translate` moves destinations to (``None``: no translation)."""
        return None

    def translate(self, cur: object, dst: object) -> tuple[np.ndarray, np.ndarray]:
        """Position of ``cur`` relative to ``dst`` under a port-preserving automorphism.

        For each pair, ``x -> rel`` is a graph automorphism ``f`` with
        ``f(dst) = translation_targets[key]`` and ``f(nb(x, p)) = nb(f(x), p)`` for
        every node ``x`` and port ``p``, so distances and best ports from ``cur``
        to ``dst`` are those from ``rel`` to ``translation_targets[key]``.

        Parameters
        ----------
        cur, dst : array_like of int
            Node ids (broadcast against each other).

        Returns
        -------
        rel, key : (M,) int64 arrays

        Raises
        ------
        TopologyError
            The family has no such automorphisms (not vertex-transitive, e.g. FCCN).
        """
        if self.translation_targets is None:
            raise TopologyError(
                f"{self.spec} has no translation automorphisms (it is not vertex-transitive)"
            )
        c, d = np.broadcast_arrays(np.asarray(cur), np.asarray(dst))
        return self._translate(self.check_ids(c, "cur"), self.check_ids(d, "dst"))

    def _translate(self, cur: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Raw translation on validated int64 ids of equal length."""
        raise NotImplementedError

    @abstractmethod
    def _neighbors(self, ids: np.ndarray) -> np.ndarray:
        """Raw neighbour computation on validated int64 ids."""

    @abstractmethod
    def _label(self, node: int) -> str:
        """Label of one validated id."""

    @abstractmethod
    def _parse_label(self, text: str) -> int:
        """Id of a label; raise :class:`TopologyError` naming the format."""
