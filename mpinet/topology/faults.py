"""Failed nodes and links of a topology, and the surviving graph.

A failed link fails in both directions; a failed node fails every link at
it. Faults are named by label (``links = [["1234", "2134"]]``, ``nodes =
["4321"]``) or drawn at random with the job's seed: every undirected link
(every node) fails independently with probability ``random_links``
(``random_nodes``), keyed by (seed, link or node id) through the
counter-based generator, so the same job fails the same links on any number
of ranks. Pure numpy: no MPI, no files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mpinet import rng
from mpinet.errors import TopologyError
from mpinet.topology.base import Topology
from mpinet.values import Range, prob_range

#: the valid values of the numbers of a fault set (the job schema's, ``jobs.spec.RULES``)
PROBABILITY = prob_range(open_hi=True)
STEP = Range(0, 2**31 - 2, integer=True)
SEED = Range(0, 2**63 - 1, integer=True)

#: random streams of the fault draws (any stream not used by mpinet.rng)
STREAM_FAULT_LINK, STREAM_FAULT_NODE = 11, 12
_CHUNK = 1 << 20


@dataclass(frozen=True)
class FaultSet:
    """Failed nodes (sorted ids) and failed directed links (sorted ``node * degree + port``)."""

    topo: Topology
    nodes: np.ndarray
    links: np.ndarray
    step: int = 0  # the step at which the faults appear (0: from the start)

    @property
    def num_links(self) -> int:
        """Failed undirected links (each counted once), those at failed nodes included."""
        return int(self.links.size) // 2

    def node_down(self, ids: object) -> np.ndarray:
        """Whether each node failed."""
        return _member(np.asarray(ids, dtype=np.int64), self.nodes)

    def link_down(self, ids: object, ports: object) -> np.ndarray:
        """Whether each directed link (node, port) failed."""
        ids = np.asarray(ids, dtype=np.int64)
        return _member(ids * self.topo.degree + np.asarray(ports, dtype=np.int64), self.links)

    def neighbors(self, ids: object) -> np.ndarray:
        """``topo.neighbors(ids)`` with every failed link as -1 (no port)."""
        ids = np.asarray(ids, dtype=np.int64)
        nb = self.topo.neighbors(ids)
        deg = self.topo.degree
        down = _member((ids[:, None] * deg + np.arange(deg)).ravel(), self.links)
        nb = nb.copy()
        nb[down.reshape(nb.shape)] = -1
        return nb

    def applied(self, steps: int) -> bool:
        """Whether a run of ``steps`` steps reached the faults (step 0: before step 1)."""
        return self.step <= steps

    def describe(self, steps: int | None = None) -> dict:
        """Counts, the step and the first failed labels; with the run's ``steps``, also
        ``applied``: False when the run ended before the fault step (nothing failed)."""
        topo = self.topo
        out = {
            "failed_nodes": int(self.nodes.size),
            "failed_links": self.num_links,
            "step": int(self.step),
            "nodes": topo.labels(self.nodes[:20]),
        }
        if steps is not None:
            out["applied"] = self.applied(steps)
        return out


def _member(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    if sorted_set.size == 0:
        return np.zeros(values.shape, dtype=bool)
    i = np.searchsorted(sorted_set, values)
    i = np.minimum(i, sorted_set.size - 1)
    return sorted_set[i] == values


def _with_reverse(topo: Topology, nodes: np.ndarray, ports: np.ndarray) -> np.ndarray:
    """Directed link ids of (node, port) and of the links that lead back."""
    deg = topo.degree
    nxt = topo.neighbors(nodes)[np.arange(nodes.size), ports]
    ok = nxt >= 0
    rev = topo.reverse_of(nodes[ok], ports[ok])
    return np.concatenate([nodes * deg + ports, nxt[ok] * deg + rev])


def _links_of(topo: Topology, nodes: np.ndarray) -> np.ndarray:
    """Every directed link at ``nodes``, both directions."""
    deg = topo.degree
    n = np.repeat(nodes, deg)
    p = np.tile(np.arange(deg, dtype=np.int64), nodes.size)
    has = topo.neighbors(nodes).ravel() >= 0
    return _with_reverse(topo, n[has], p[has])


def make_faults(
    topo: Topology,
    *,
    links: Sequence[Sequence[str]] = (),
    nodes: Sequence[str] = (),
    random_links: float = 0.0,
    random_nodes: float = 0.0,
    seed: int = 0,
    step: int = 0,
) -> FaultSet:
    """The fault set of a job's ``[faults]`` section.

    Parameters
    ----------
    links : pairs of node labels joined by a link
    nodes : node labels
    random_links, random_nodes : failure probability of each link / node, in [0, 1)
    seed : key of the random draws
    step : the step at which the faults appear (0: before the first step)
    """
    random_links = PROBABILITY.check("faults.random_links", random_links, error=TopologyError)
    random_nodes = PROBABILITY.check("faults.random_nodes", random_nodes, error=TopologyError)
    step = STEP.check("faults.step", step, error=TopologyError)
    seed = SEED.check("faults seed", seed, error=TopologyError)
    deg = topo.degree
    down_nodes = [topo.parse_label(_label("faults.nodes", v)) for v in _seq("faults.nodes", nodes)]
    parts = []
    for pair in _seq("faults.links", links):
        if isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise TopologyError(
                f"faults.links takes pairs of node labels, e.g. [['a', 'b']]; got {pair!r}"
            )
        a, b = (topo.parse_label(_label("faults.links", x)) for x in pair)
        port = np.flatnonzero(topo.neighbors(np.array([a]))[0] == b)
        if port.size == 0:
            raise TopologyError(
                f"faults.links: {topo.label(a)} and {topo.label(b)} are not neighbours "
                f"in {topo.spec}"
            )
        parts.append(_with_reverse(topo, np.array([a]), port[:1]))
    n = topo.num_nodes
    for lo in range(0, n, _CHUNK):
        ids = np.arange(lo, min(n, lo + _CHUNK), dtype=np.int64)
        if random_nodes > 0:
            u = rng.uniform(seed, ids, 0, STREAM_FAULT_NODE)
            down_nodes.extend(ids[u < random_nodes].tolist())
        if random_links > 0:
            nb = topo.neighbors(ids)
            rev = topo.reverse_of(np.repeat(ids, deg), np.tile(np.arange(deg), ids.size))
            link = ids[:, None] * deg + np.arange(deg)
            back = np.where(nb >= 0, nb * deg + rev.reshape(nb.shape), -1)
            canon = np.minimum(
                link, np.where(back >= 0, back, link)
            )  # one draw per undirected link
            u = rng.uniform(seed, canon, 0, STREAM_FAULT_LINK)
            hit = (u < random_links) & (nb >= 0)
            parts.append(_with_reverse(topo, np.repeat(ids, deg)[hit.ravel()], np.tile(
                np.arange(deg, dtype=np.int64), ids.size)[hit.ravel()]))  # fmt: skip
    node_arr = np.unique(np.asarray(down_nodes, dtype=np.int64))
    if node_arr.size:
        parts.append(_links_of(topo, node_arr))
    link_arr = np.unique(np.concatenate(parts)) if parts else np.empty(0, np.int64)
    return FaultSet(topo, node_arr, link_arr, step)


def _seq(name: str, value: object) -> Sequence:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TopologyError(f"{name} must be a list, got {value!r}")
    return value


def _label(name: str, value: object) -> str:
    """A node label as text: a string, or an integer (the label's digits)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, np.integer)):
        raise TopologyError(
            f'{name}: a node label is a string such as "1234" or "#5", got {value!r}'
        )
    return str(value)


class SurvivingGraph(Topology):
    """A topology seen through a fault set: failed links are missing ports.

    Used for exact metrics of the surviving graph (BFS) and by routers that
    route around faults. Node ids, labels and ports are the topology's own.
    """

    def __init__(self, faults: FaultSet) -> None:
        base = faults.topo
        self.base, self.faults = base, faults
        self.family = base.family
        self.spec = base.spec
        self.num_nodes = base.num_nodes
        self.ports, self.port_classes = base.ports, base.port_classes
        self.vertex_transitive = False
        self.regular = False
        self.identity = base.identity

    @property
    def translation_targets(self) -> None:  # faults break the symmetry
        return None

    @property
    def reverse_port(self) -> tuple[int, ...]:  # type: ignore[override]
        return self.base.reverse_port

    @property
    def uniform_reverse(self) -> bool:  # type: ignore[override]
        return self.base.uniform_reverse

    def reverse_of(self, nodes: np.ndarray, ports: np.ndarray) -> np.ndarray:
        return self.base.reverse_of(nodes, ports)

    def _neighbors(self, ids: np.ndarray) -> np.ndarray:
        return self.faults.neighbors(ids)

    def _label(self, node: int) -> str:
        return self.base.label(node)

    def _parse_label(self, text: str) -> int:
        return self.base.parse_label(text)
