"""The channel-load bound: how much each directed link carries per injected packet.

For a traffic pattern and a router, ``load[v, p]`` is the expected number of
packets crossing the directed link (v, port p) per step when every node
injects one packet per step (so at injection rate ``lam`` per node the link
carries ``lam * load[v, p]``). A link of capacity ``c`` saturates at
``lam = c / load[v, p]``: no network can sustain more than the smallest such
rate (Dally & Towles, ch. 3, the channel-load bound). The loads are counted
from the router's own routes, followed with :func:`~mpinet.routing.walk.walk`
(no contention), so they hold for that router, not for an ideal one.

How the routes are counted (``method``):

* ``translation`` (uniform traffic on a vertex-transitive network whose
  router commutes with the family's port-preserving translations, checked on
  a sample of pairs): route every source to each translation target once;
  the load of link (v, p) is then the sum over destinations d of the
  target's count at (f_d(v), p), where f_d moves d to its target. Exact, and
  N routes per target instead of N (N - 1).
* ``all-pairs`` (uniform traffic, otherwise): every ordered pair, exact; a router
  with per-destination tables (``shortest`` on FCCN and file networks) pushes
  each destination's flows down its shortest-path DAG instead
  (``router.uniform_flows``), exact for tie ``random`` too (its expectation);
  ``sampled-pairs`` above :data:`ALL_PAIRS_LIMIT` pairs: that many uniformly
  random pairs, an estimate (``exact=False``).
* ``pairs``: the given (source, destination, weight) list, exact for that
  list (permutation, hotspot) or a sample (``exact=False``).

Randomized routers (a different seed gives different routes) are averaged
over a few seeds and reported as not exact.

Model-specific bounds (:func:`saturation_bounds`): ``all-port`` is the
channel bound; ``one-port`` / ``k-port:K`` add the node bound (a node sends
at most its K largest capacities per step and must forward ``lam`` times the
sum of its links' loads); ``sdc`` adds the dimension bound (one port
dimension per step for the whole network: the steps given to port p must
cover its most loaded link, so ``lam * sum_p max_v load[v, p] / c_p <= 1``).
Bernoulli injection adds ``lam <= 1``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpinet.errors import RoutingError
from mpinet.routing.base import Router
from mpinet.routing.walk import walk
from mpinet.topology.base import Topology

#: uniform traffic without usable translations: all pairs up to this many (every network
#: of about 5,000 nodes), else this many random pairs (an estimate)
ALL_PAIRS_LIMIT = 1 << 25
#: routes per walk call (bounds the walk's temporaries)
CHUNK = 1 << 18
#: pairs on which translation invariance is checked
CHECK_PAIRS = 2048
#: seeds averaged for a randomized router
RANDOM_SEEDS = 4


@dataclass
class ChannelLoad:
    """Per-link load per unit injection rate, and how it was obtained."""

    load: np.ndarray  # (N, degree) float64
    mean_hops: float  # expected route length: the zero-load latency in steps
    method: str  # "translation" | "all-pairs" | "sampled-pairs" | "pairs"
    exact: bool
    routes: int  # routes followed
    notes: list[str] = field(default_factory=list)


class _Recorder:
    """A router proxy for :func:`walk` that records every link a route takes."""

    def __init__(self, router: Router, degree: int, sequences: bool = False) -> None:
        self.router, self.deg = router, degree
        self.name, self.header_width = router.name, router.header_width
        self.links: list[np.ndarray] = []
        self.seq: list[np.ndarray] | None = [] if sequences else None

    def init_headers(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        return self.router.init_headers(src, dst)

    def next_port(self, nodes, dests, headers, ctx) -> tuple[np.ndarray, np.ndarray]:
        ports, new = self.router.next_port(nodes, dests, headers, ctx)
        ports = np.asarray(ports, dtype=np.int64)
        self.links.append(np.asarray(nodes, np.int64) * self.deg + ports)
        if self.seq is not None:  # (pid, hop, port): the route as a port sequence
            self.seq.append(np.stack([ctx.pids, ctx.hops, ports], axis=1))
        return ports, new

    def counts(self, n_links: int) -> np.ndarray:
        if not self.links:
            return np.zeros(n_links, dtype=np.int64)
        return np.bincount(np.concatenate(self.links), minlength=n_links)

    def sequences(self) -> np.ndarray:
        rows = np.concatenate(self.seq) if self.seq else np.empty((0, 3), np.int64)
        return rows[np.lexsort((rows[:, 1], rows[:, 0]))]


def route_counts(
    topo: Topology, router: Router, src: np.ndarray, dst: np.ndarray, *, seed: int = 0
) -> tuple[np.ndarray, float]:
    """Routes ``src[i] -> dst[i]`` crossing each directed link, and their total length.

    Returns
    -------
    counts : (N, degree) float64
    hops : float, the sum of the route lengths
    """
    n, deg = topo.num_nodes, topo.degree
    out = np.zeros(n * deg, dtype=np.float64)
    total = 0.0
    for a in range(0, src.size, CHUNK):
        s, d = src[a : a + CHUNK], dst[a : a + CHUNK]
        rec = _Recorder(router, deg)
        res = walk(topo, rec, s, d, seed=seed, pids=np.arange(a, a + s.size))
        if not res["ok"].all():
            i = int(np.flatnonzero(~res["ok"])[0])
            raise RoutingError(
                f"router {router.name!r} did not reach {topo.label(int(d[i]))} from "
                f"{topo.label(int(s[i]))} within {res['max_hops']} hops"
            )
        out += rec.counts(n * deg)
        total += float(res["lengths"].sum())
    return out.reshape(n, deg), total


def _randomized(topo: Topology, router: Router, src: np.ndarray, dst: np.ndarray) -> bool:
    """Whether another seed changes some route (the router draws random numbers)."""
    seqs = []
    for seed in (0, 1):
        rec = _Recorder(router, topo.degree, sequences=True)
        walk(topo, rec, src, dst, seed=seed)
        seqs.append(rec.sequences())
    return seqs[0].shape != seqs[1].shape or not np.array_equal(seqs[0], seqs[1])


def _invariant(topo: Topology, router: Router, src: np.ndarray, dst: np.ndarray) -> bool:
    """Whether the routes s -> d and f_d(s) -> target take the same ports, hop by hop."""
    rel, key = topo.translate(src, dst)
    tgt = topo.translation_targets[key]
    seqs = []
    for s, d in ((src, dst), (rel, tgt)):
        rec = _Recorder(router, topo.degree, sequences=True)
        walk(topo, rec, s, d, seed=0)
        seqs.append(rec.sequences())
    return seqs[0].shape == seqs[1].shape and bool(np.array_equal(seqs[0], seqs[1]))


def _sample_pairs(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    g = np.random.default_rng(seed)
    s = g.integers(0, n, m)
    d = g.integers(0, n - 1, m)
    return s, d + (d >= s)


def uniform_load(
    topo: Topology,
    router: Router,
    *,
    seed: int = 0,
    share: tuple[int, int] = (0, 1),
    reduce: Callable[[np.ndarray], np.ndarray] | None = None,
) -> ChannelLoad:
    """Link loads of uniform traffic (each packet to one of the N - 1 other nodes).

    Parameters
    ----------
    seed : the routers' seed (randomized routers average seeds ``seed..seed+3``)
    share, reduce : for the all-pairs method, this process routes the
        destinations ``d = share[0] (mod share[1])`` and ``reduce`` sums a float64
        array over the processes (an MPI allreduce); the translation method is
        cheap and computed whole by every process

    Raises
    ------
    RoutingError
        A route does not arrive.
    """
    n = topo.num_nodes
    flows = getattr(router, "uniform_flows", None)
    mine = np.arange(share[0], n, share[1], dtype=np.int64)  # destinations of this process
    got = flows(mine) if flows is not None else None
    if got is not None:  # the router's own DAG flows: exact, random ties in expectation
        load, hops = got[0], np.array([got[1]])
        if reduce is not None:
            load, hops = reduce(load), reduce(hops)
        notes = ["every destination's shortest-path DAG; random ties split evenly (expected)"]
        return ChannelLoad(load / (n - 1), float(hops[0]) / (n * (n - 1)), "all-pairs",
                           True, n * (n - 1), notes)  # fmt: skip
    s, d = _sample_pairs(n, min(CHECK_PAIRS, n * (n - 1)), seed + 1)
    randomized = _randomized(topo, router, s, d)
    seeds = [seed + i for i in range(RANDOM_SEEDS)] if randomized else [seed]
    notes = [f"randomized router: averaged over seeds {seeds}"] if randomized else []
    targets = topo.translation_targets
    if targets is not None and topo.vertex_transitive and _invariant(topo, router, s, d):
        load, hops = _by_translation(topo, router, seeds)
        return ChannelLoad(
            load, hops, "translation", not randomized, len(seeds) * targets.size * (n - 1), notes
        )
    if targets is not None:
        notes.append("the router does not commute with the translations: pairs routed")
    load, hops = np.zeros((n, topo.degree)), np.zeros(1)
    if n * (n - 1) <= ALL_PAIRS_LIMIT:  # every ordered pair: exact
        for sd in seeds:
            c, h = _to_dests(topo, router, mine, sd)
            load, hops = load + c, hops + h
        routes, method, exact = n * (n - 1), "all-pairs", not randomized
    else:
        # uniformly random pairs; not a random subset of destinations, whose own in-links
        # would carry their whole share and inflate the maximum load by N / |subset|
        m = ALL_PAIRS_LIMIT
        src, dst = _sample_pairs(n, m, seed + 2)
        for sd in seeds:
            for a in range(share[0] * CHUNK, m, share[1] * CHUNK):
                c, h = route_counts(topo, router, src[a : a + CHUNK], dst[a : a + CHUNK], seed=sd)
                load, hops = load + c, hops + h
        load *= n * (n - 1) / m
        hops *= n * (n - 1) / m
        routes, method, exact = m, "sampled-pairs", False
        notes.append(f"{m:,} random pairs of {n * (n - 1):,}: an estimate (its maximum is "
                     f"biased up by the sampling noise)")  # fmt: skip
    if reduce is not None:
        load, hops = reduce(load), reduce(hops)
    load /= len(seeds) * (n - 1)
    mean_hops = float(hops[0]) / (len(seeds) * n * (n - 1))
    return ChannelLoad(load, mean_hops, method, exact, len(seeds) * routes, notes)


def _to_dests(
    topo: Topology, router: Router, dests: np.ndarray, seed: int
) -> tuple[np.ndarray, float]:
    """Counts of the routes from every source to each of ``dests``."""
    n = topo.num_nodes
    load, hops = np.zeros((n, topo.degree)), 0.0
    per = max(1, CHUNK // max(n - 1, 1))  # destinations per walk
    for a in range(0, dests.size, per):
        dd = dests[a : a + per]
        src = np.tile(np.arange(n, dtype=np.int64), dd.size)
        dst = np.repeat(dd, n)
        keep = src != dst
        c, h = route_counts(topo, router, src[keep], dst[keep], seed=seed)
        load, hops = load + c, hops + h
    return load, hops


def _by_translation(topo: Topology, router: Router, seeds: list[int]) -> tuple[np.ndarray, float]:
    """Uniform loads from the routes of every source to each translation target."""
    n, deg = topo.num_nodes, topo.degree
    targets = topo.translation_targets
    counts = np.zeros((targets.size, n, deg))
    hops = np.zeros(targets.size)
    nodes = np.arange(n, dtype=np.int64)
    for k, t in enumerate(targets.tolist()):
        src = nodes[nodes != t]
        for sd in seeds:
            c, h = route_counts(topo, router, src, np.full(src.size, t), seed=sd)
            counts[k] += c / len(seeds)
            hops[k] += h / len(seeds)
    # destinations per target: how many d translate to each key
    _, keys = topo.translate(np.zeros(n, np.int64), nodes)
    per_key = np.bincount(keys, minlength=targets.size)
    mean_hops = float(np.dot(per_key, hops) / (n * (n - 1)))
    # load[v] = sum_d counts[key(d), f_d(v)]; f_d is an automorphism the routes commute
    # with, so every f_d(v) carries the same load as v: one row per orbit of nodes
    load = np.full((n, deg), np.nan)
    done = np.zeros(n, dtype=bool)
    while not done.all():
        v = int(np.argmin(done))
        rel, key = topo.translate(np.full(n, v, np.int64), nodes)
        row = counts[key, rel].sum(axis=0) / (n - 1)
        load[rel] = row
        done[rel] = True
    return load, mean_hops


def pairs_load(
    topo: Topology,
    router: Router,
    src: np.ndarray,
    dst: np.ndarray,
    per_source: float,
    *,
    seed: int = 0,
    exact: bool = True,
) -> ChannelLoad:
    """Link loads of an explicit traffic: each listed route weighs ``1 / per_source``.

    ``per_source`` is the number of listed routes per injecting node (1 for a
    permutation or a hotspot, P for P sampled destinations per node).
    """
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    move = src != dst
    c, h = route_counts(topo, router, src[move], dst[move], seed=seed)
    total = src.size
    return ChannelLoad(c / per_source, h / max(total, 1), "pairs", exact, int(move.sum()), [])


def saturation_bounds(
    load: np.ndarray,
    caps: np.ndarray,
    classes: tuple[str, ...],
    *,
    kind: str = "all-port",
    k: int = 0,
    exists: np.ndarray | None = None,
    injection_limit: float = 1.0,
) -> dict[str, Any]:
    """Upper bounds on the sustainable injection rate per node.

    Parameters
    ----------
    load : (N, degree) link loads per unit injection rate
    caps : (degree,) packets per step of each port
    classes : port class of each port
    kind, k : the port model (``all-port``, ``one-port``, ``k-port`` with ``k``, ``sdc``)
    exists : (N, degree) bool, ports that lead somewhere (default: all)
    injection_limit : the workload's own limit (Bernoulli: 1 packet per node per step)

    Returns
    -------
    dict
        ``channel`` (all-port channel bound), ``per_class`` {class: max load, mean
        load, bound}, ``model`` (the model's own bound, or None), ``ideal`` (the
        smallest of all), ``limited_by`` (which one).
    """
    caps = np.asarray(caps, dtype=np.float64)
    ld = np.where(exists, load, 0.0) if exists is not None else load
    util = ld / caps[None, :]
    per_class = {}
    for cls in dict.fromkeys(classes):
        cols = [p for p, c in enumerate(classes) if c == cls]
        ex = np.ones(ld[:, cols].shape, bool) if exists is None else exists[:, cols]
        mx = float(ld[:, cols].max())
        u = float(util[:, cols].max())
        per_class[cls] = {
            "max_load": mx,
            "mean_load": float(ld[:, cols][ex].mean()) if ex.any() else 0.0,
            "bound": 1.0 / u if u > 0 else float("inf"),
        }
    umax = float(util.max())
    cands = {
        "injection": float(injection_limit),
        "channel": 1.0 / umax if umax > 0 else float("inf"),
    }
    model = None
    if kind in ("one-port", "k-port"):
        kk = 1 if kind == "one-port" else int(k)
        send = float(np.sort(caps)[::-1][: max(kk, 1)].sum())  # its K fastest ports
        node = float(ld.sum(axis=1).max())
        model = send / node if node > 0 else float("inf")
    elif kind == "sdc":
        dim = float(util.max(axis=0).sum())
        model = 1.0 / dim if dim > 0 else float("inf")
    if model is not None:
        cands[kind] = model
    limited = min(cands, key=lambda c: cands[c])
    return {
        "channel": cands["channel"],
        "per_class": per_class,
        "model": model,
        "ideal": cands[limited],
        "limited_by": limited,
    }
