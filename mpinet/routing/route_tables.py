"""Translated route tables, and the choice of how each router routes in compiled steps.

On a vertex-transitive network (:meth:`Topology.translate`) a port-preserving
automorphism moves a packet's destination to one of a few targets. A router
that decides from the network's structure alone (the papers' routers work on
the relative position ``d^-1 c``) and makes no random choice then routes
``src -> dst`` exactly as it routes ``rel -> target[key]``: the same ports, hop
for hop. So its every route is one of ``K * N`` rows, walked once when the
table is built (:func:`~mpinet.routing.source_routes.walk_routes`), and a
packet's header word is ``row * width + hop`` from its injection on: a hop is
one byte read, compiled (:data:`mpinet.routing.compiled.SOURCE`) or vectorized.

Exactness is not assumed: the table is built only for routers whose choices are
fixed (no ``random`` tie or choice, no faults) and is checked at construction on
random pairs, ids and a seed against the router's own walk; a router that fails
the check is refused (:class:`RoutingError`) and :func:`compile_routes` walks
its routes at injection instead (:class:`~mpinet.routing.source_routes.SourceRouted`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.errors import RoutingError
from mpinet.routing.base import DROP, CompiledHop, HopContext, Router
from mpinet.routing.route_rows import SourceRouted
from mpinet.routing.source_routes import (
    PORT_DROP,
    PORT_END,
    source_headers,
    source_rule,
    walk_routes,
)
from mpinet.routing.walk import default_max_hops

#: most rows (``K * N``) built by default: about a second of walking at 1 us a hop
MAX_ROWS = 1 << 20
#: pairs checked against the router's own walk when a table is built
CHECK_PAIRS = 2048

#: how a router routes in the engines' compiled steps (:func:`compile_routes`)
PATH_COMPILED = "own compiled hop"
PATH_TABLE = "translated table"
PATH_WALKED = "walked rows"
PATH_NEXT_PORT = "next_port"


def random_choices(router: Router) -> bool:
    """Whether the router draws random choices (its routes depend on the pid and seed)."""
    return (
        router.name == "scc-random"
        or getattr(router, "choice", None) == "random"
        or getattr(router, "tie", None) == "random"
    )


class RouteTable(Router):
    """``router``'s routes from a table of its routes to the translation targets.

    Parameters
    ----------
    router : Router
        Deterministic (no random choice), without faults, that does not hold packets,
        on a network with translations.
    max_rows : int
        Refuse networks with more than this many rows (``K * N``).

    Raises
    ------
    RoutingError
        Any condition above unmet, or a route of the check that differs from the
        router's own (the router is not translation-invariant); the message says which.
    """

    distributed = False
    header_width = 1

    def __init__(self, router: Router, max_rows: int = MAX_ROWS) -> None:
        super().__init__(router.topo)
        topo, name = router.topo, router.name
        why = _unfit(router, max_rows)
        if why:
            raise RoutingError(f"router {name} on {topo.spec}: no translated route table: {why}")
        self.inner, self.name = router, name
        targets = topo.translation_targets
        n = topo.num_nodes
        src = np.tile(np.arange(n, dtype=np.int64), targets.size)
        dst = np.repeat(np.asarray(targets, dtype=np.int64), n)
        self.max_hops = default_max_hops(topo)
        self.table, _ = walk_routes(
            router, src, dst, np.arange(src.size), 0, 0, self.max_hops, True
        )
        self.width = self.table.shape[1]  # the longest route and its end
        self.rule = source_rule(self.table)
        self._check(CHECK_PAIRS)

    def __getattr__(self, attr: str) -> Any:  # distance, prepare, ... of the router
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    def _check(self, m: int) -> None:
        g = np.random.default_rng(12345)
        n = self.topo.num_nodes
        src, dst = g.integers(0, n, m), g.integers(0, n, m)
        pids, seed = g.integers(0, 1 << 40, m), int(g.integers(0, 1 << 31))
        ports, _ = walk_routes(self.inner, src, dst, pids, seed, 0, self.max_hops, True)
        rows = self.init_headers(src, dst)[:, 0] // self.width
        w = min(self.width, ports.shape[1])
        same = (ports[:, :w] == self.table[rows, :w]).all(1)
        same &= (ports[:, w:] == PORT_END).all(1) & (self.table[rows, w:] == PORT_END).all(1)
        if not same.all():
            i = int(np.flatnonzero(~same)[0])
            raise RoutingError(
                f"router {self.name} on {self.topo.spec}: no translated route table: its route "
                f"from {self.topo.label(int(src[i]))} to {self.topo.label(int(dst[i]))} differs "
                "from the translated one (not translation-invariant)"
            )

    def set_faults(self, faults: object) -> None:
        """Refused: the table holds the routes of the network without faults."""
        raise RoutingError(
            f"router {self.name}: a translated route table cannot follow faults that appear "
            "during the run"
        )

    def init_headers(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """The word of each packet's row, at hop 0: ``(key * N + rel) * width``."""
        rel, key = self.topo.translate(src, dst)
        rows = np.asarray(key, np.int64) * self.topo.num_nodes + np.asarray(rel, np.int64)
        return source_headers(rows, self.width)[:, None]

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """The port at the packet's word, and the word plus one (``DROP`` where the router
        dropped the packet, as the compiled rule reads it)."""
        h = np.asarray(headers, dtype=np.int64)[:, 0]
        port = self.table.reshape(-1)[h].astype(np.int64)
        dropped = port == PORT_DROP
        port[dropped] = DROP
        return port, (h + ~dropped)[:, None]

    def compiled_hop(self) -> CompiledHop:
        """The same read, compiled (:data:`mpinet.routing.compiled.SOURCE`)."""
        return self.rule


def _unfit(router: Router, max_rows: int) -> str | None:
    topo = router.topo
    if router.holds:
        return "it holds packets"
    if random_choices(router):
        return "its choices are random (they depend on the packet id)"
    if getattr(router, "faults", None) is not None:
        return "faults break the network's symmetry"
    if topo.translation_targets is None:
        return "the network has no translations (not vertex-transitive)"
    rows = int(topo.translation_targets.size) * topo.num_nodes
    if rows > max_rows:
        return f"{rows:,} rows, over the limit of {max_rows:,}"
    return None


#: bytes per row while a table is built: its ports (a route of up to ~64 hops, the array
#: doubled as routes grow), the walk's ids and the router's vectorized temporaries; and a
#: fixed part (the router's own lazily built tables, the check's walk). Measured peaks
#: (tracemalloc) 0.4-0.9x of this on scc:6/7, ms:2,4 and star:8 (tests/test_source_routes.py)
BUILD_ROW_BYTES = 2 * 64 + 160
BUILD_FIXED_BYTES = 24 << 20


def planned_bytes(router: Router, max_rows: int = MAX_ROWS) -> int:
    """Bytes :func:`compile_routes` would take to build ``router``'s route table (its peak
    while walking every row), or 0 where it builds none: for the run's memory plan."""
    if router.compiled_hop() is not None or _unfit(router, max_rows) is not None:
        return 0
    rows = int(router.topo.translation_targets.size) * router.topo.num_nodes
    return BUILD_FIXED_BYTES + rows * BUILD_ROW_BYTES


def compile_routes(
    router: Router, dynamic_faults: bool = False, max_rows: int = MAX_ROWS
) -> tuple[Router, str, str]:
    """How ``router`` routes inside compiled steps: ``(router to run, path, why)``.

    Its own compiled hop where it has one; else a translated route table where it is
    exact and affordable (built once per router object, then kept on it); else its
    routes walked at injection; ``next_port`` only for routers that hold packets or
    route around faults appearing during the run (their routes change after injection).
    ``path`` is one of the ``PATH_*`` names, ``why`` says why a faster path did not
    apply ("" for a compiled hop).

    The router returned for :data:`PATH_WALKED` is a
    :class:`~mpinet.routing.route_rows.SourceRouted` the engine drives: it gives packets
    their words at injection (``walk_rows``, or the first ``next_port`` call), reads
    ``compiled_hop()`` again after any call that walked rows (the table may grow), frees
    a packet's rows (``release``) when it is delivered, dropped or sent to another rank, or
    frees at once every row no live packet names (``keep``: the flit engine, per block of
    injections walked), and gives a received packet a row of its own (``rewalk``, or the
    route the flit engine's blocks carry written into free rows, ``grow`` first). The
    other paths need nothing: their tables are the same on every rank.
    """
    if router.compiled_hop() is not None:
        return router, PATH_COMPILED, ""
    if router.holds:
        return router, PATH_NEXT_PORT, f"router {router.name} holds packets until a later step"
    if dynamic_faults and router.fault_tolerant:
        return router, PATH_NEXT_PORT, f"router {router.name} reroutes after faults appear"
    why = _unfit(router, max_rows)
    if why is None:
        built = router.__dict__.setdefault("_route_tables", {})  # one table per router
        if max_rows not in built:
            try:
                built[max_rows] = RouteTable(router, max_rows)
            except RoutingError as exc:
                built[max_rows] = str(exc)
        if isinstance(built[max_rows], RouteTable):
            return built[max_rows], PATH_TABLE, ""
        why = built[max_rows]
    return SourceRouted(router, release="engine"), PATH_WALKED, why
