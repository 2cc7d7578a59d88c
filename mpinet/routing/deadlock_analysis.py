"""Static deadlock analysis: a router's channel (buffer) dependency graph.

A *channel* is a directed link ``(node, port)``, and with hop classes a
``(link, class)`` pair, class = hops taken after crossing it (the engine's
``buffer_classes = "hops"``: a packet with h hops waits for class h + 1). A
packet that arrived over channel c1 sits in the buffer c1 feeds and, if it is
not delivered there, waits for the next channel c2 of its route: a dependency
``c1 -> c2`` — unless the hop over c2 delivers it, since a packet is consumed
at its destination and needs no buffer there (the engine's rule). With finite
buffers, a run can deadlock only if this graph has a cycle (Dally & Seitz
1987; a wait-for cycle the engine reports when it deadlocks is one of them).

Routes are enumerated by following the router, vectorized like
:func:`~mpinet.routing.walk.walk`, from every source to every destination
(``destinations="all"``), or on a vertex-transitive network only to the
translation targets (``"symmetry"``): a port-preserving automorphism ``f_d``
maps the routes to ``d`` onto the routes to ``translation_targets[key(d)]``
when the router is translation-invariant, so a *turn* (in-port, out-port, hops)
at node ``x`` for destination ``d`` is the turn at ``f_d(x)`` for the target.
The turns at ``x`` over all destinations are then those at the nodes ``y``
with ``(y, key) = translate(x, d)`` for some ``d``: a set that depends only on
``x``'s class ``translate(x, x).key`` (checked on samples, and invariance of the
router on sampled destinations, before the graph is built).

Random routers are followed through every choice they can make
(:mod:`mpinet.routing.route_enum`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpinet.errors import ResourceError, RoutingError
from mpinet.routing import channel_graph as cg
from mpinet.routing.base import Router
from mpinet.routing.route_enum import RouteFollower
from mpinet.routing.walk import default_max_hops
from mpinet.topology.base import Topology

#: ``destinations="auto"`` enumerates every destination up to N*N = this
AUTO_ALL_PAIRS = 1 << 16
#: refuse all-destination enumerations above N*N = this
MAX_ALL_PAIRS = 1 << 26
#: refuse dependency graphs with more edges than this
MAX_EDGES = 1 << 27
#: destinations (and nodes) sampled to check the symmetry assumptions
SAMPLES = 4
DESTINATIONS = ("auto", "all", "symmetry")


class SymmetryError(RoutingError):
    """A sampled check of the symmetry assumptions failed."""


def _symmetric_keys(f: RouteFollower) -> np.ndarray:
    """Hop keys to every destination from the routes to the translation targets.

    Raises :class:`SymmetryError` when a sampled check of the assumptions fails.
    """
    topo, n = f.topo, f.topo.num_nodes
    targets = np.asarray(topo.translation_targets, dtype=np.int64)
    nodes = np.arange(n, dtype=np.int64)
    per_key = [f.to_destinations(targets[k : k + 1]) for k in range(targets.size)]
    cls = topo.translate(nodes, nodes)[1]
    picks = np.random.default_rng(0)
    # the router must be invariant: routes to d are the translated routes to its target
    for d in picks.choice(n, size=min(SAMPLES, n), replace=False):
        x, r, q, h = f.decode(f.to_destinations(np.array([d])))
        rel, key = topo.translate(x, np.full(x.size, d))
        k = int(key[0]) if key.size else 0
        if not np.array_equal(cg.distinct(f.encode(rel, r, q, h)), per_key[k]):
            raise SymmetryError(
                f"router {f.router.name!r} is not invariant under the translations of "
                f"{topo.spec}: its routes to {topo.label(int(d))} are not the translated routes "
                "to the translation target; use --destinations all"
            )
    turns: list[np.ndarray] = []
    for c in range(targets.size):
        # A_c: the (rel, key) of class-c nodes over all destinations; the same for the class
        rel, key = topo.translate(np.full(n, targets[c]), nodes)
        sample = np.flatnonzero(cls == c)
        for x in picks.choice(sample, size=min(SAMPLES, sample.size), replace=False):
            r2, k2 = topo.translate(np.full(n, x), nodes)
            if not np.array_equal(cg.distinct(k2 * n + r2), cg.distinct(key * n + rel)):
                raise SymmetryError(
                    f"the translations of {topo.spec} do not act alike on its node classes; "
                    "use --destinations all"
                )
        mask = np.zeros((targets.size, n), dtype=bool)
        mask[key, rel] = True
        u = []
        for k in range(targets.size):
            x, r, q, h = f.decode(per_key[k])
            hit = mask[k, x]
            u.append(f.encode(0, r[hit], q[hit], h[hit]))
        turns.append(cg.distinct(np.concatenate(u)))
    sizes = np.bincount(cls, minlength=targets.size)
    total = int(sum(sizes[c] * turns[c].size for c in range(targets.size)))
    if total > MAX_EDGES:
        raise ResourceError(
            f"the dependency graph of {topo.spec} would have about {total:,} hops, over the "
            f"limit of {MAX_EDGES:,}; use a smaller network"
        )
    out = []
    for c in range(targets.size):
        xs = np.flatnonzero(cls == c)
        # turns[c] encodes node 0, so adding x's offset puts the turn at x
        out.append((xs[:, None] * (f.deg + 1) * f.deg * f.H + turns[c][None, :]).ravel())
    return np.concatenate(out)


@dataclass
class Analysis:
    """A dependency graph and its report.

    Channel ids are ``(node * degree + port) * classes + class``; ``src -> dst``
    are the dependencies, ``channels`` every channel some route uses.
    """

    topo: Topology
    classes: int
    src: np.ndarray
    dst: np.ndarray
    channels: np.ndarray
    report: dict[str, Any] = field(default_factory=dict)

    def channel(self, node: int, port: int, cls: int | None = None) -> int:
        """Channel id of link ``(node, port)`` in class ``cls`` (None without classes)."""
        return (int(node) * self.topo.degree + int(port)) * self.classes + int(cls or 0)

    def has_dependency(self, a: int, b: int) -> bool:
        """Whether ``a -> b`` is an edge."""
        return bool(((self.src == a) & (self.dst == b)).any())

    def describe(self, ch: int) -> dict[str, Any]:
        """``{node, port, next, class}`` of a channel (the engine's deadlock-report style)."""
        link, c = divmod(int(ch), self.classes)
        node, port = divmod(link, self.topo.degree)
        nxt = int(self.topo.neighbors([node])[0, port])
        return {
            "node": self.topo.label(node),
            "port": self.topo.ports[port],
            "next": self.topo.label(nxt),
            "class": c if self.classes > 1 else None,
        }


def analyze(
    topo: Topology,
    router: Router,
    *,
    buffer_classes: str = "none",
    max_hops: int | None = None,
    destinations: str = "auto",
    seed: int = 0,
) -> Analysis:
    """Build and check the channel dependency graph of ``router`` on ``topo``.

    Parameters
    ----------
    buffer_classes : ``"none"`` (one channel per link) or ``"hops"`` (one per
        link and hop class, as the engine's structured buffer pool)
    max_hops : with hop classes the highest class, as the engine's
        ``model.max_hops`` (classes 0..max_hops, routes of up to max_hops + 1
        hops; default 32); without, the longest route followed (default
        :func:`default_max_hops`)
    destinations : ``"all"``, ``"symmetry"`` (translation targets only) or
        ``"auto"`` (all up to N*N = 2**16 pairs, without translations or for a
        router found not translation-invariant; else symmetry)
    seed : seed the random routers' choices are enumerated under

    Returns
    -------
    Analysis, whose ``report`` has ``acyclic``, ``cycle``, ``channels``,
    ``dependencies``, ``max_route_length``, ``classes_needed`` and more.
    """
    t0 = time.perf_counter()
    if buffer_classes not in ("none", "hops"):
        raise RoutingError(f"buffer classes must be 'none' or 'hops', got {buffer_classes!r}")
    if destinations not in DESTINATIONS:
        raise RoutingError(f"destinations must be one of {', '.join(DESTINATIONS)}")
    hop_cls = buffer_classes == "hops"
    if hop_cls:
        top = 32 if max_hops is None else int(max_hops)
        limit = top + 1  # the last hop into the destination takes no buffer
    else:
        top = None
        limit = default_max_hops(topo) if max_hops is None else int(max_hops)
    n, deg = topo.num_nodes, topo.degree
    mode = destinations
    if mode == "auto":
        small = n * n <= AUTO_ALL_PAIRS or topo.translation_targets is None
        mode = "all" if small else "symmetry"
    if mode == "symmetry" and topo.translation_targets is None:
        raise RoutingError(f"{topo.spec} has no translations; use --destinations all")
    if mode == "all" and n * n > MAX_ALL_PAIRS:
        raise ResourceError(
            f"following every route of {topo.spec} ({n:,} nodes) means N*N = {n * n:,} pairs, "
            f"over the limit of {MAX_ALL_PAIRS:,}"
        )
    f = RouteFollower(topo, router, seed, limit, hop_cls)
    if n * (deg + 1) * deg * f.H >= 1 << 62:
        raise ResourceError(f"{topo.spec} is too large to encode its hops in 64 bits")
    keys = None
    if mode == "symmetry":
        try:
            keys = _symmetric_keys(f)
        except SymmetryError:
            if destinations != "auto" or n * n > MAX_ALL_PAIRS:
                raise
            mode = "all"  # auto: fall back to every destination
    if keys is None:
        keys = f.to_destinations(np.arange(n, dtype=np.int64))
    x, r, q, h = f.decode(keys)  # distinct: so are the dependencies, one per hop
    ncls = top + 1 if top is not None else 1
    # a hop (x, r, q, h) uses channel (x, q) in class h + 1; arriving over r it held
    # the channel (nb(x, r), rev(r)) in class h
    out_ch = (x * deg + q) * ncls + (h + 1 if hop_cls else 0)
    dep = r < deg
    xd, rd = x[dep], r[dep]
    in_ch = (f.nb[xd, rd] * deg + f.rev[rd]) * ncls + h[dep]
    channels = cg.distinct(out_ch)
    # every channel a route holds is also one it took, so the edges index into channels
    a, b = np.searchsorted(channels, in_ch), np.searchsorted(channels, out_ch[dep])
    acyclic, cyc, core = cg.find_cycle(channels.size, a, b)
    res = Analysis(topo, ncls, in_ch, out_ch[dep], channels)
    cycle = [res.describe(int(channels[v])) for v in cyc]
    res.report = {
        "spec": topo.spec,
        "router": router.name,
        "options": {k: v for k, v in router.options.items() if k != "max_table_bytes"},
        "buffer_classes": buffer_classes,
        "max_hops": top,
        "route_limit": int(limit),
        "destinations": mode,
        "random": f.random,
        "choices": f.choices if f.random else None,
        "pairs": f.pairs,
        "links": int((f.nb >= 0).sum()),
        "channels": int(channels.size),
        "dependencies": int(in_ch.size),
        "acyclic": acyclic,
        "cycle": cycle or None,
        "cycle_length": len(cycle) or None,
        "core_channels": core,
        "max_route_length": f.max_length,
        # classes 0..L-1: one per hop taken but the last (model.max_hops >= L - 1)
        "classes_needed": f.max_length,
        "seconds": round(time.perf_counter() - t0, 3),
    }
    return res


def format_cycle(cycle: list[dict]) -> str:
    """One line: ``a -[T4]-> b -[T3]-> ... a`` (classes shown when present)."""

    def arrow(c: dict) -> str:
        cls = "" if c["class"] is None else f" class {c['class']}"
        return f"{c['node']} -[{c['port']}{cls}]->"

    return " ".join(arrow(c) for c in cycle) + f" {cycle[0]['node']}"


def star_literature(topo: Topology, report: dict[str, Any]) -> list[dict[str, Any]]:
    """Published bounds for the n-star beside a report (empty for other families).

    Each entry: ``quantity``, ``value``, ``source``, ``note``. Only numbers
    that follow from a definition we can check are given; see
    docs/deadlock-analysis.md for what we could not verify.
    """
    if topo.family != "star":
        return []
    n = int(topo.k)  # type: ignore[attr-defined]
    diam = 3 * (n - 1) // 2
    need = report["classes_needed"]
    return [
        {
            "quantity": "diameter",
            "value": diam,
            "source": "Akers, Harel & Krishnamurthy 1987: floor(3(n-1)/2)",
            "note": f"longest route here {report['max_route_length']}",
        },
        {
            "quantity": "hop classes, any minimal routing",
            "value": diam + 1,
            "source": "structured buffer pool (Merlin & Schweitzer 1980; Gopal 1985): D + 1",
            "note": f"mpinet consumes a delivered packet without a buffer, so D = {diam} suffice "
            f"(model.max_hops = {diam - 1}); this router needs {need}",
        },
        {
            "quantity": "negative-hop classes, any minimal routing",
            "value": -(-diam // 2) + 1,
            "source": "negative-hop scheme (Gopal 1985; Boppana & Chalasani 1996) on the "
            "bipartite S_n: ceil(D/2) + 1, derived here, not quoted",
            "note": "not modelled by the engine",
        },
        {
            "quantity": "cycle-free dependencies",
            "value": "acyclic" if report["acyclic"] else "cyclic",
            "source": "Dally & Seitz 1987: acyclic suffices; for deterministic routing it is "
            "also necessary",
            "note": "one buffer per link" if report["buffer_classes"] == "none" else "hop classes",
        },
    ]
