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
(:mod:`mpinet.deadlock.route_enum`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpinet.deadlock import channel_graph as cg
from mpinet.deadlock.route_enum import RouteFollower
from mpinet.deadlock.routes import (  # noqa: F401 (SymmetryError: re-exported)
    MAX_EDGES,
    SAMPLES,
    Progress,
    SymmetryError,
    all_keys,
    quiet,
    spread,
    target_keys,
)
from mpinet.errors import ResourceError, RoutingError
from mpinet.routing.base import Router
from mpinet.routing.walk import default_max_hops
from mpinet.topology.base import Topology

#: ``destinations="auto"`` enumerates every destination up to N*N = this
AUTO_ALL_PAIRS = 1 << 16
#: refuse all-destination enumerations above N*N = this
MAX_ALL_PAIRS = 1 << 26
DESTINATIONS = ("auto", "all", "symmetry")


@dataclass(frozen=True)
class Setup:
    """What an analysis will follow, decided from its arguments alone (nothing built)."""

    mode: str  # "all" or "symmetry" (auto resolved; may still fall back to "all")
    fallback: bool  # auto chose symmetry and may fall back to every destination
    top: int | None  # the highest hop class (None without classes)
    limit: int  # the longest route followed
    classes: int  # channel classes per link
    #: VC level: the dependencies per turn, from the mean route length (for the plan)
    per_turn: Callable[[float], float] | None = None


def check_destinations(destinations: str) -> None:
    """Refuse a ``destinations`` that is not one of :data:`DESTINATIONS`."""
    if destinations not in DESTINATIONS:
        raise RoutingError(f"destinations must be one of {', '.join(DESTINATIONS)}")


def no_translations(topo: Topology) -> RoutingError:
    """The refusal of ``destinations = symmetry`` on a network without translations."""
    return RoutingError(f"{topo.spec} has no translations; use --destinations all")


def every_pair_refused(topo: Topology, why: str = "") -> ResourceError:
    """The refusal of following every route when N*N is over :data:`MAX_ALL_PAIRS`.

    ``why``: why symmetry cannot serve instead (then it is not offered as the way out).
    """
    n = topo.num_nodes
    way = "--destinations symmetry, or " if topo.translation_targets is not None and not why else ""
    return ResourceError(
        f"following every route of {topo.spec} ({n:,} nodes) means N*N = {n * n:,} pairs, "
        f"over the limit of {MAX_ALL_PAIRS:,}{why}; way out: {way}a smaller network"
    )


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
    check_destinations(destinations)
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
        raise no_translations(topo)
    if mode == "all" and n * n > MAX_ALL_PAIRS:
        raise every_pair_refused(topo)
    fallback = destinations == "auto" and mode == "symmetry" and n * n <= MAX_ALL_PAIRS
    classes = top + 1 if top is not None else 1
    return Setup(mode, fallback, top, limit, classes)


@dataclass
class Analysis:
    """A dependency graph and its report.

    Channel ids are ``(node * degree + port) * classes + class`` (``classes``: hop
    classes, or virtual channels with ``vc_level``); ``src -> dst`` are the
    dependencies, ``channels`` every channel some route uses.
    """

    topo: Topology
    classes: int
    src: np.ndarray
    dst: np.ndarray
    channels: np.ndarray
    report: dict[str, Any] = field(default_factory=dict)
    vc_level: bool = False

    def channel(self, node: int, port: int, cls: int | None = None) -> int:
        """Channel id of link ``(node, port)`` in class (or VC) ``cls`` (None: 0)."""
        return (int(node) * self.topo.degree + int(port)) * self.classes + int(cls or 0)

    def has_dependency(self, a: int, b: int) -> bool:
        """Whether ``a -> b`` is an edge."""
        return bool(((self.src == a) & (self.dst == b)).any())

    def describe(self, ch: int) -> dict[str, Any]:
        """``{node, port, next, class}`` of a channel (the engine's deadlock-report style),
        with ``vc`` (and class None) at VC level."""
        link, c = divmod(int(ch), self.classes)
        node, port = divmod(link, self.topo.degree)
        nxt = int(self.topo.neighbors([node])[0, port])
        out: dict[str, Any] = {
            "node": self.topo.label(node),
            "port": self.topo.ports[port],
            "next": self.topo.label(nxt),
            "class": c if self.classes > 1 and not self.vc_level else None,
        }
        if self.vc_level:
            out["vc"] = c
        return out


class HopClasses:
    """The rule of the packet buffers: one class per link, or hop classes (a hop with
    ``h`` hops taken holds class ``h`` and waits for class ``h + 1``)."""

    def __init__(self, classes: int, hop_cls: bool):
        self.vcs, self.hop_cls, self.unit = classes, hop_cls, True

    def held(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo = c if self.hop_cls else np.zeros_like(c)
        return lo, lo + 1

    def allowed(self, c: np.ndarray, cur: np.ndarray, nxt: np.ndarray) -> tuple:
        lo = c + 1 if self.hop_cls else np.zeros_like(c)
        return lo, lo + 1


def _product(a: np.ndarray, alo, ahi, b: np.ndarray, blo, bhi, v: int) -> tuple:
    """Every pair ``(a*v + i, b*v + j)``, ``i`` in ``[alo, ahi)``, ``j`` in ``[blo, bhi)``."""
    wa, wb = ahi - alo, bhi - blo
    per = wa * wb
    total = int(per.sum())
    if total > MAX_EDGES:
        raise ResourceError(
            f"the (link, VC) dependency graph would have {total:,} dependencies, over the "
            f"limit of {MAX_EDGES:,}; way out: fewer VCs (--vcs), or a smaller network"
        )
    row = np.repeat(np.arange(a.size), per)
    off = np.arange(total) - np.repeat(np.cumsum(per) - per, per)
    i, j = np.divmod(off, wb[row])
    return a[row] * v + alo[row] + i, b[row] * v + blo[row] + j


def graph(f: RouteFollower, keys: np.ndarray, rule: Any) -> tuple[np.ndarray, ...]:
    """Dependencies ``src -> dst`` and the channels used, from distinct hop keys.

    A hop ``(x, r, q, c)`` uses channel ``(x, q)`` in the classes (VCs)
    ``rule.allowed(c, x, next)``; arriving over ``r`` it held ``(nb(x, r), rev(r))``
    in ``rule.held(c)`` and waits for each of them (Dally & Seitz). Distinct keys
    give distinct dependencies (the class determines both ranges). Temporaries are
    dropped as soon as they are used: this is the analysis's memory peak.
    """
    deg, v = f.deg, rule.vcs
    x, r, q, c = f.decode(keys)
    out = x * deg
    out += q
    lo2, hi2 = rule.allowed(c, x, f.nb[x, q])
    del q
    if lo2.size and int(hi2.max()) > v:
        raise RoutingError(f"a hop needs VC {int(hi2.max()) - 1}, over the {v} given")
    dep = r < deg
    lo1, hi1 = rule.held(c[dep])
    del c
    src = f.nb[x[dep], r[dep]]
    back = f.topo.reverse_of(x[dep], r[dep])
    del x, r
    src *= deg
    src += back
    del back
    if rule.unit:
        channels = cg.distinct(out * v + lo2)
        src *= v
        src += lo1
        dst = out[dep] * v + lo2[dep]
        return src, dst, channels
    w = hi2 - lo2
    used = np.repeat(out * v + lo2, w)
    used += np.arange(used.size) - np.repeat(np.cumsum(w) - w, w)
    channels = cg.distinct(used)
    del used, w
    src, dst = _product(src, lo1, hi1, out[dep], lo2[dep], hi2[dep], v)
    return src, dst, channels


def follow_keys(
    f: RouteFollower, mode: str, fallback: bool, progress: Progress = quiet, **sym: Any
) -> tuple[np.ndarray, str]:
    """Hop keys at every node, by symmetry (``sym``: :func:`spread`'s swap, colour,
    reduce) or to every destination; auto falls back to every destination when the
    symmetry check fails. Returns the keys and the mode used."""
    if mode == "symmetry":
        try:
            swap = {k: sym[k] for k in ("swap", "colour") if k in sym}
            return spread(f, target_keys(f, progress, **swap), progress, **sym), mode
        except SymmetryError:
            if not fallback:
                raise
    return all_keys(f, progress), "all"


def search(res: Analysis, progress: Progress = quiet) -> tuple[bool, list, int]:
    """Acyclic?, a shortest cycle found (described channels) and the core's size."""
    channels = res.channels
    # every channel a route holds is also one it took, so the edges index into channels
    a, b = np.searchsorted(channels, res.src), np.searchsorted(channels, res.dst)

    def peeled(done: int, total: int) -> None:
        progress("searching the dependency graph for cycles (channels peeled)", done, total)

    progress("searching the dependency graph for cycles", 0, 1)
    acyclic, cyc, core = cg.find_cycle(channels.size, a, b, progress=peeled)
    return acyclic, [res.describe(int(channels[v])) for v in cyc], core


def graph_facts(f: RouteFollower, mode: str, res: Analysis, acyclic: bool, cycle: list,
                core: int) -> dict[str, Any]:  # fmt: skip
    """The report's keys both analyses share, in their order: the routes followed (by
    ``f``, over destinations ``mode``), the graph's sizes and what the search found."""
    return {
        "route_limit": int(f.limit),
        "destinations": mode,
        "random": f.random,
        "choices": f.choices if f.random else None,
        "pairs": f.pairs,
        "links": int((f.nb >= 0).sum()),
        "channels": int(res.channels.size),
        "dependencies": int(res.src.size),
        "acyclic": acyclic,
        "cycle": cycle or None,
        "cycle_length": len(cycle) or None,
        "core_channels": core,
        "max_route_length": f.max_length,
    }


def analyze(
    topo: Topology,
    router: Router,
    *,
    buffer_classes: str = "none",
    max_hops: int | None = None,
    destinations: str = "auto",
    seed: int = 0,
    progress: Progress = quiet,
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
    keys, mode = follow_keys(f, mode, su.fallback, progress)
    progress("building the dependency graph", 0, 1)
    src, dst, channels = graph(f, keys, HopClasses(ncls, hop_cls))
    del keys
    res = Analysis(topo, ncls, src, dst, channels)
    acyclic, cycle, core = search(res, progress)
    res.report = {
        "spec": topo.spec,
        "router": router.name,
        "options": {k: v for k, v in router.options.items() if k != "max_table_bytes"},
        "buffer_classes": buffer_classes,
        "max_hops": top,
        **graph_facts(f, mode, res, acyclic, cycle, core),
        # classes 0..L-1: one per hop taken but the last (model.max_hops >= L - 1)
        "classes_needed": f.max_length,
        "seconds": round(time.perf_counter() - t0, 3),
    }
    return res
