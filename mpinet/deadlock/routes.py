"""Following a router's routes for the static analyses: every destination, or by symmetry.

Split from :mod:`mpinet.deadlock.analysis` (which builds the graphs). A
:class:`~mpinet.deadlock.route_enum.RouteFollower` gives hop keys ``(node,
in-port, out-port, class)``; here they are followed from every node to every
destination, or on a vertex-transitive network only to the translation
targets and then spread to every node: a port-preserving automorphism ``f_d``
maps the routes to ``d`` onto the routes to ``translation_targets[key(d)]``
when the router commutes with it, so the turns at ``x`` over all destinations
are those at the nodes ``y`` with ``(y, key) = translate(x, d)`` for some
``d``, a set that depends only on ``x``'s class ``translate(x, x).key``.

A key class that the translations do not keep, the negative-hop count, is
handled where the network is bipartite: an automorphism of a connected
bipartite graph keeps its two colours or swaps them, and a swap turns the
negative hops into positive ones, so ``swap(class)`` gives the class a route
has at its image (:mod:`mpinet.routing.vc_policies`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mpinet.deadlock import channel_graph as cg
from mpinet.deadlock.route_enum import MAX_STATES, RouteFollower
from mpinet.errors import ResourceError, RoutingError

#: refuse dependency graphs with more edges than this
MAX_EDGES = 1 << 27
#: destinations (and nodes) sampled to check the symmetry assumptions
SAMPLES = 4

#: ``progress(phase, done, total)``: what the analysis is doing, and how far it is
Progress = Callable[[str, int, int], None]
#: ``swap(classes) -> classes``: a key class at the image of a colour-swapping translation
Swap = Callable[[np.ndarray], np.ndarray]


def quiet(phase: str, done: int, total: int) -> None:
    """The default progress: none."""


class SymmetryError(RoutingError):
    """A sampled check of the symmetry assumptions failed."""


def to_target(f: RouteFollower, target: int, tell: Callable[[int], None]) -> np.ndarray:
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


def all_keys(f: RouteFollower, progress: Progress) -> np.ndarray:
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


def _swapped(f: RouteFollower, keys: np.ndarray, swap: Swap | None, flip: np.ndarray) -> np.ndarray:
    """``keys`` with their classes swapped where ``flip`` (one bool per key)."""
    if swap is None or not flip.any():
        return keys
    x, r, q, c = f.decode(keys)
    return f.encode(x, r, q, np.where(flip, swap(c), c))


def target_keys(
    f: RouteFollower, progress: Progress = quiet, swap: Swap | None = None,
    colour: np.ndarray | None = None,
) -> list[np.ndarray]:  # fmt: skip
    """Hop keys of the routes to each translation target, the router's invariance checked.

    ``swap`` and ``colour`` (a 2-colouring of every node): classes that a
    colour-swapping translation changes. Raises :class:`SymmetryError` when the
    routes to a sampled destination are not the translated routes to its target.
    """
    topo, n = f.topo, f.topo.num_nodes
    targets = np.asarray(topo.translation_targets, dtype=np.int64)
    samples = np.random.default_rng(0).choice(n, size=min(SAMPLES, n), replace=False)
    total = (targets.size + samples.size) * n  # routes followed, checks included
    what = f"following routes to {targets.size} translation target(s) and {samples.size} checks"

    def tell(base: int) -> Callable[[int], None]:
        return lambda done: progress(what, base + done, total)

    per_key = [to_target(f, int(t), tell(k * n)) for k, t in enumerate(targets)]
    for i, d in enumerate(samples):
        keys = to_target(f, int(d), tell((targets.size + i) * n))
        x, r, q, c = f.decode(keys)
        rel, key = topo.translate(x, np.full(x.size, d))
        k = int(key[0]) if key.size else 0
        moved = f.encode(rel, r, q, c)
        if colour is not None and colour[d] != colour[targets[k]]:
            moved = _swapped(f, moved, swap, np.ones(moved.size, dtype=bool))
        if not np.array_equal(cg.distinct(moved), per_key[k]):
            raise SymmetryError(
                f"router {f.router.name!r} is not invariant under the translations of "
                f"{topo.spec}: its routes to {topo.label(int(d))} are not the translated routes "
                "to the translation target; use --destinations all"
            )
    return per_key


def swapping_targets(topo, colour: np.ndarray) -> np.ndarray:
    """Per translation target: whether some destination's translation swaps the colours."""
    targets = np.asarray(topo.translation_targets, dtype=np.int64)
    nodes = np.arange(topo.num_nodes, dtype=np.int64)
    cls = topo.translate(nodes, nodes)[1]
    return np.array([(colour[cls == k] != colour[t]).any() for k, t in enumerate(targets)])


def spread(
    f: RouteFollower, per_key: list[np.ndarray], progress: Progress = quiet,
    swap: Swap | None = None, colour: np.ndarray | None = None,
    reduce: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:  # fmt: skip
    """Hop keys at every node from the keys of the routes to the translation targets.

    With ``colour``, a node ``y`` takes the turns of ``x = f_d(y)`` swapped when
    ``colour[x] != colour[y]``; ``reduce`` maps the classes to those the graph needs
    (dropping what only the swap needed). Raises :class:`SymmetryError` when the
    translations do not act alike on a node class.
    """
    topo, n = f.topo, f.topo.num_nodes
    targets = np.asarray(topo.translation_targets, dtype=np.int64)
    nodes = np.arange(n, dtype=np.int64)
    picks = np.random.default_rng(0)
    cls = topo.translate(nodes, nodes)[1]
    groups = [None] if colour is None else [0, 1]
    turns: list[list[np.ndarray]] = []
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
        per_group = []
        for g in groups:
            u = []
            for k in range(targets.size):
                x, r, q, h = f.decode(per_key[k])
                hit = mask[k, x]
                if g is not None and swap is not None:
                    h = np.where(colour[x] != g, swap(h), h)
                h = h[hit] if reduce is None else reduce(h[hit])
                u.append(f.encode(0, r[hit], q[hit], h))
            per_group.append(cg.distinct(np.concatenate(u)))
        turns.append(per_group)
    where = [
        [np.flatnonzero((cls == c) & (True if g is None else colour == g)) for g in groups]
        for c in range(targets.size)
    ]
    pairs = [
        (t, w) for tc, wc in zip(turns, where, strict=True) for t, w in zip(tc, wc, strict=True)
    ]
    total = sum(w.size * t.size for t, w in pairs)
    if total > MAX_EDGES:
        raise ResourceError(
            f"the dependency graph of {topo.spec} would have about {total:,} hops, over the "
            f"limit of {MAX_EDGES:,}; way out: a smaller network"
        )
    # the turns encode node 0, so adding x's offset puts the turn at x
    out = [(xs[:, None] * (f.deg + 1) * f.deg * f.H + t[None, :]).ravel() for t, xs in pairs]
    return np.concatenate(out)
