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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpinet.errors import ResourceError, RoutingError
from mpinet.routing import channel_graph as cg
from mpinet.routing.base import Router
from mpinet.routing.route_enum import MAX_STATES, RouteFollower
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

#: ``progress(phase, done, total)``: what the analysis is doing, and how far it is
Progress = Callable[[str, int, int], None]


def _quiet(phase: str, done: int, total: int) -> None:
    """The default progress: none."""


@dataclass(frozen=True)
class Setup:
    """What an analysis will follow, decided from its arguments alone (nothing built)."""

    mode: str  # "all" or "symmetry" (auto resolved; may still fall back to "all")
    fallback: bool  # auto chose symmetry and may fall back to every destination
    top: int | None  # the highest hop class (None without classes)
    limit: int  # the longest route followed
    classes: int  # channel classes per link


def setup(
    topo: Topology, buffer_classes: str = "none", max_hops: int | None = None,
    destinations: str = "auto",
) -> Setup:  # fmt: skip
    """Check the arguments of :func:`analyze` and resolve ``auto`` (no route followed).

    Raises
    ------
    RoutingError
        A bad ``buffer_classes`` or ``destinations``, or symmetry without translations.
    ResourceError
        Every destination asked for above :data:`MAX_ALL_PAIRS` pairs.
    """
    if buffer_classes not in ("none", "hops"):
        raise RoutingError(f"buffer classes must be 'none' or 'hops', got {buffer_classes!r}")
    if destinations not in DESTINATIONS:
        raise RoutingError(f"destinations must be one of {', '.join(DESTINATIONS)}")
    if buffer_classes == "hops":
        top = 32 if max_hops is None else int(max_hops)
        limit = top + 1  # the last hop into the destination takes no buffer
    else:
        top = None
        limit = default_max_hops(topo) if max_hops is None else int(max_hops)
    n = topo.num_nodes
    mode = destinations
    if mode == "auto":
        small = n * n <= AUTO_ALL_PAIRS or topo.translation_targets is None
        mode = "all" if small else "symmetry"
    if mode == "symmetry" and topo.translation_targets is None:
        raise RoutingError(f"{topo.spec} has no translations; use --destinations all")
    if mode == "all" and n * n > MAX_ALL_PAIRS:
        raise ResourceError(
            f"following every route of {topo.spec} ({n:,} nodes) means N*N = {n * n:,} pairs, "
            f"over the limit of {MAX_ALL_PAIRS:,}; way out: "
            + ("--destinations symmetry, or " if topo.translation_targets is not None else "")
            + "a smaller network"
        )
    fallback = destinations == "auto" and mode == "symmetry" and n * n <= MAX_ALL_PAIRS
    classes = top + 1 if top is not None else 1
    return Setup(mode, fallback, top, limit, classes)


def _to_target(f: RouteFollower, target: int, tell: Callable[[int], None]) -> np.ndarray:
    """Hop keys of the routes from every node to ``target``, sources in bounded chunks.

    The chunks bound the states followed at once (:data:`MAX_STATES`) and give the
    progress its steps; the union of their keys is that of one call.
    """
    n = f.topo.num_nodes
    acc = np.empty(0, dtype=np.int64)
    for lo in range(0, n, MAX_STATES):
        s = np.arange(lo, min(lo + MAX_STATES, n), dtype=np.int64)
        s = s[s != target]
        acc = cg.distinct(np.concatenate([acc, f.follow(s, np.full(s.size, target))]))
        tell(min(lo + MAX_STATES, n))
    return acc


def _all_keys(f: RouteFollower, progress: Progress) -> np.ndarray:
    """Hop keys of the routes from every node to every node (destinations in chunks)."""
    n = f.topo.num_nodes
    step = max(1, MAX_STATES // n)
    acc = np.empty(0, dtype=np.int64)
    for lo in range(0, n, step):
        d = np.repeat(np.arange(lo, min(lo + step, n), dtype=np.int64), n)
        s = np.tile(np.arange(n, dtype=np.int64), d.size // n)
        keep = s != d
        acc = cg.distinct(np.concatenate([acc, f.follow(s[keep], d[keep])]))
        progress("following routes to every destination", min(lo + step, n) * n, n * n)
    return acc


class SymmetryError(RoutingError):
    """A sampled check of the symmetry assumptions failed."""


def _symmetric_keys(f: RouteFollower, progress: Progress = _quiet) -> np.ndarray:
    """Hop keys to every destination from the routes to the translation targets.

    Raises :class:`SymmetryError` when a sampled check of the assumptions fails.
    """
    topo, n = f.topo, f.topo.num_nodes
    targets = np.asarray(topo.translation_targets, dtype=np.int64)
    nodes = np.arange(n, dtype=np.int64)
    picks = np.random.default_rng(0)
    samples = picks.choice(n, size=min(SAMPLES, n), replace=False)
    total = (targets.size + samples.size) * n  # routes followed, checks included
    what = f"following routes to {targets.size} translation target(s) and {samples.size} checks"

    def tell(base: int) -> Callable[[int], None]:
        return lambda done: progress(what, base + done, total)

    per_key = [_to_target(f, int(t), tell(k * n)) for k, t in enumerate(targets)]
    cls = topo.translate(nodes, nodes)[1]
    # the router must be invariant: routes to d are the translated routes to its target
    for i, d in enumerate(samples):
        x, r, q, h = f.decode(_to_target(f, int(d), tell((targets.size + i) * n)))
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
        progress("translating the turns to every node class", c, targets.size)
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
    del per_key
    sizes = np.bincount(cls, minlength=targets.size)
    total = int(sum(sizes[c] * turns[c].size for c in range(targets.size)))
    if total > MAX_EDGES:
        raise ResourceError(
            f"the dependency graph of {topo.spec} would have about {total:,} hops, over the "
            f"limit of {MAX_EDGES:,}; way out: a smaller network"
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


def _graph(
    f: RouteFollower, keys: np.ndarray, ncls: int, hop_cls: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dependencies ``src -> dst`` and the channels used, from distinct hop keys.

    A hop ``(x, r, q, h)`` uses channel ``(x, q)`` in class ``h + 1``; arriving over
    ``r`` it held the channel ``(nb(x, r), rev(r))`` in class ``h``. Temporaries are
    dropped as soon as they are used: this is the analysis's memory peak.
    """
    deg = f.deg
    x, r, q, h = f.decode(keys)  # distinct: so are the dependencies, one per hop
    out_ch = x * deg
    out_ch += q
    del q
    out_ch *= ncls
    if hop_cls:
        out_ch += h + 1
    dep = r < deg
    xd, rd, hd = x[dep], r[dep], h[dep]
    del x, r, h
    src = f.nb[xd, rd]
    del xd
    src *= deg
    src += f.rev[rd]
    del rd
    src *= ncls
    src += hd
    del hd
    dst = out_ch[dep]
    del dep
    return src, dst, cg.distinct(out_ch)


def analyze(
    topo: Topology,
    router: Router,
    *,
    buffer_classes: str = "none",
    max_hops: int | None = None,
    destinations: str = "auto",
    seed: int = 0,
    progress: Progress = _quiet,
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
    progress : ``progress(phase, done, total)``, called as the analysis goes
        (routes followed, channels peeled; ``total`` 1 for a phase without steps)

    Returns
    -------
    Analysis, whose ``report`` has ``acyclic``, ``cycle``, ``channels``,
    ``dependencies``, ``max_route_length``, ``classes_needed`` and more.
    """
    t0 = time.perf_counter()
    su = setup(topo, buffer_classes, max_hops, destinations)
    hop_cls, top, limit, ncls = buffer_classes == "hops", su.top, su.limit, su.classes
    mode = su.mode
    n, deg = topo.num_nodes, topo.degree
    progress("building the neighbour table", 0, 1)
    f = RouteFollower(topo, router, seed, limit, hop_cls)
    if n * (deg + 1) * deg * f.H >= 1 << 62:
        raise ResourceError(f"{topo.spec} is too large to encode its hops in 64 bits")
    keys = None
    if mode == "symmetry":
        try:
            keys = _symmetric_keys(f, progress)
        except SymmetryError:
            if not su.fallback:
                raise
            mode = "all"  # auto: fall back to every destination
    if keys is None:
        keys = _all_keys(f, progress)
    progress("building the dependency graph", 0, 1)
    src, dst, channels = _graph(f, keys, ncls, hop_cls)
    del keys
    # every channel a route holds is also one it took, so the edges index into channels
    a, b = np.searchsorted(channels, src), np.searchsorted(channels, dst)

    def peeled(done: int, total: int) -> None:
        progress("searching the dependency graph for cycles (channels peeled)", done, total)

    progress("searching the dependency graph for cycles", 0, 1)
    acyclic, cyc, core = cg.find_cycle(channels.size, a, b, progress=peeled)
    del a, b
    res = Analysis(topo, ncls, src, dst, channels)
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
        "dependencies": int(src.size),
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
