"""Route-quality reports (``mpinet routes``): lengths of a router's routes vs the truth.

The pairs are split over the ranks of ``comm`` in blocks; each rank follows
its routes without contention (:func:`mpinet.routing.walk.walk`) and the
histograms are summed, so the report is identical for any number of ranks.
:func:`engine_lengths` routes the same pairs through the engine instead (one
packet per pair, all-port, unlimited patience) to show both agree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mpinet import perm, rng
from mpinet.engine.comm import max_op, resolve, sum_op
from mpinet.engine.core import Engine
from mpinet.engine.models import parse_model
from mpinet.engine.partition import block_bounds
from mpinet.engine.report import gather_packets
from mpinet.errors import MpinetError, ResourceError
from mpinet.routing import exact_distance
from mpinet.routing.base import Router
from mpinet.routing.scc_analysis import scc_cost_split
from mpinet.routing.scc_cycles import relative
from mpinet.routing.tables import distances_from
from mpinet.routing.walk import walk
from mpinet.topology.base import Topology

MAX_ALL_PAIRS = 50_000_000
_BATCH = 1 << 18


class PairsError(MpinetError, ValueError):
    """A bad ``--pairs`` value."""


def parse_pairs(text: str, topo: Topology) -> tuple[str, int]:
    """``to-identity`` | ``from-identity`` | ``all`` | ``sample:K`` -> (kind, pairs)."""
    n = topo.num_nodes
    if text in ("to-identity", "from-identity"):
        return text, n
    if text == "all":
        if n * (n - 1) > MAX_ALL_PAIRS:
            raise PairsError(
                f"--pairs all on {topo.spec} is {n * (n - 1):,} pairs (limit {MAX_ALL_PAIRS:,}); "
                "use --pairs sample:K or to-identity"
            )
        return "all", n * (n - 1)
    if text.startswith("sample:"):
        try:
            k = int(text.partition(":")[2])
        except ValueError:
            k = 0
        if k < 1:
            raise PairsError(f"--pairs sample:K needs an integer K >= 1, got {text!r}")
        return "sample", k
    raise PairsError(f"--pairs must be to-identity, from-identity, all or sample:K; got {text!r}")


def make_pairs(topo: Topology, kind: str, lo: int, hi: int, seed: int) -> tuple[np.ndarray, ...]:
    """Pairs number ``lo..hi-1`` of the chosen kind: (pair ids, sources, destinations)."""
    n = topo.num_nodes
    idx = np.arange(lo, hi, dtype=np.int64)
    if kind == "to-identity":
        return idx, idx, np.full(idx.size, topo.identity, dtype=np.int64)
    if kind == "from-identity":
        return idx, np.full(idx.size, topo.identity, dtype=np.int64), idx
    if kind == "all":  # ordered pairs of distinct nodes
        src, d = idx // (n - 1), idx % (n - 1)
        return idx, src, d + (d >= src)
    src = rng.integers(seed, idx, n, stream=rng.STREAM_DEST)
    d = rng.integers(seed, idx, n - 1, stream=rng.STREAM_INJECT)
    return idx, src, d + (d >= src)


def _exact(topo: Topology, kind: str, src: np.ndarray, dst: np.ndarray, cache: dict) -> np.ndarray:
    if kind in ("to-identity", "from-identity"):
        if "to_id" not in cache:  # undirected graphs: d(v, id) = d(id, v)
            cache["to_id"] = distances_from(topo, topo.identity).astype(np.int64)
        return cache["to_id"][src if kind == "to-identity" else dst]
    if "exact" not in cache:
        try:
            cache["exact"] = exact_distance(topo)
        except ResourceError as exc:
            raise ResourceError(f"exact distances for --pairs {kind}: {exc}") from None
    return np.asarray(cache["exact"](src, dst), dtype=np.int64)


def route_report(
    topo: Topology,
    router: Router,
    pairs: str,
    comm: Any = None,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Route every pair with ``router``; report lengths against exact distances.

    ``progress(done, total)`` is called after each batch with this rank's pairs routed.

    Returns
    -------
    dict with keys ``spec``, ``router``, ``pairs``, ``pair_kind``, ``avg_length``,
    ``max_length``, ``avg_shortest``, ``pct_shortest``, ``histogram``,
    ``shortest_histogram``, ``class_hops`` (average hops per port class),
    ``header_bytes``, ``distributed``, ``ranks``.
    """
    comm = resolve(comm)
    kind, total = parse_pairs(pairs, topo)
    bounds = block_bounds(total, comm.Get_size())
    lo, hi = int(bounds[comm.Get_rank()]), int(bounds[comm.Get_rank() + 1])
    cache: dict = {}
    classes = list(dict.fromkeys(topo.port_classes))
    sums = np.zeros(3 + len(classes), dtype=np.float64)  # length, exact, shortest, per class
    split = np.zeros(4, dtype=np.float64) if topo.family == "scc" else None
    check = 0
    longest = 0
    h_len: list[np.ndarray] = []
    h_ex: list[np.ndarray] = []
    for b in range(lo, hi, _BATCH):
        ids, src, dst = make_pairs(topo, kind, b, min(b + _BATCH, hi), seed)
        res = walk(topo, router, src, dst, seed=seed, pids=ids, per_packet_classes=True)
        if not res["ok"].all():
            i = int(np.flatnonzero(~res["ok"])[0])
            raise MpinetError(
                f"router {router.name} did not deliver {topo.label(int(src[i]))} -> "
                f"{topo.label(int(dst[i]))} within {res['max_hops']} hops (a loop?)"
            )
        length = res["lengths"].astype(np.int64)
        exact = _exact(topo, kind, src, dst, cache)
        sums[0] += length.sum()
        sums[1] += exact.sum()
        sums[2] += (length == exact).sum()
        for c, cls in enumerate(classes):
            sums[3 + c] += res["class_hops"][cls].sum()
        if split is not None:
            split += _scc_split(topo, src, dst, res)
        longest = max(longest, int(length.max()) if length.size else 0)
        check = (check + _checksum(ids, length)) % _MOD
        h_len.append(np.bincount(length))
        h_ex.append(np.bincount(exact))
        if progress is not None:
            progress(min(b + _BATCH, hi) - lo, hi - lo)
    total_sums = np.zeros_like(sums)
    comm.Allreduce(sums, total_sums, op=sum_op())
    longest = comm.allreduce(longest, op=max_op())
    check = comm.allreduce(check, op=sum_op()) % _MOD
    extra = {}
    if split is not None:
        tot = np.zeros_like(split)
        comm.Allreduce(split, tot, op=sum_op())
        names = ("lat", "mi_local", "mb_local")
        extra = {
            "split": {k: tot[i] / total for i, k in enumerate(names)},
            "split_follows_cycles": bool(tot[3] == 0),
        }
    hist = _sum_hist(h_len, comm)
    ex_hist = _sum_hist(h_ex, comm)
    return {
        "spec": topo.spec,
        "router": router.name,
        "distributed": bool(router.distributed),
        "header_bytes": 8 * int(router.header_width),
        "pairs": total,
        "pair_kind": kind,
        "includes_self_pairs": kind in ("to-identity", "from-identity"),
        "avg_length": total_sums[0] / total,
        "max_length": longest,
        "avg_shortest": total_sums[1] / total,
        "max_shortest": int(ex_hist.size - 1),
        "pct_shortest": 100.0 * total_sums[2] / total,
        "class_hops": {cls: total_sums[3 + c] / total for c, cls in enumerate(classes)},
        "histogram": hist.tolist(),
        "shortest_histogram": ex_hist.tolist(),
        "ranks": comm.Get_size(),
        "checksum": int(check),
        **extra,
    }


def _scc_split(topo: Topology, src: np.ndarray, dst: np.ndarray, res: dict) -> np.ndarray:
    """Papers 000/001 cost split of SCC routes: sums of lat, MI local, MB local, and the
    number of routes whose lateral links do not follow the cycle structure (eq. 2-3)."""
    sp = scc_cost_split(topo, src, dst, res["lengths"], res["class_hops"]["lateral"])
    star = perm.star_distance(relative(topo, src, dst)[0])
    return np.array(
        [sp["lat"].sum(), sp["mi_local"].sum(), sp["mb_local"].sum(), (sp["lat"] != star).sum()],
        dtype=np.float64,
    )


_MOD = 1 << 64


def _checksum(ids: np.ndarray, lengths: np.ndarray) -> int:
    """Order-free fingerprint of (pair id, route length) pairs: a sum mod 2**64."""
    with np.errstate(over="ignore"):
        return int(rng.bits(12345, ids, lengths).sum(dtype=np.uint64))


def _sum_hist(parts: list[np.ndarray], comm: Any) -> np.ndarray:
    size = max((p.size for p in parts), default=0)
    size = comm.allreduce(size, op=max_op())
    local = np.zeros(size, dtype=np.int64)
    for p in parts:
        local[: p.size] += p
    out = np.zeros_like(local)
    comm.Allreduce(local, out, op=sum_op())
    return out


class _PairWorkload:
    """One packet per pair, injected at step 0 by the rank that owns its source."""

    last_injection_step = 0

    def __init__(self, topo: Topology, kind: str, total: int, seed: int) -> None:
        self.topo, self.kind, self.total, self.seed = topo, kind, total, seed
        self.pid_space = total

    def injections(self, lo: int, hi: int, step: int):
        if step:
            return (np.empty(0, np.int64),) * 3
        ids, src, dst = make_pairs(self.topo, self.kind, 0, self.total, self.seed)
        mine = (src >= lo) & (src < hi)
        return ids[mine], src[mine], dst[mine]


def engine_lengths(
    topo: Topology,
    router: Router,
    pairs: str,
    comm: Any = None,
    seed: int = 0,
    progress: Callable[[int, int, int, int], None] | None = None,
) -> dict:
    """Route the same pairs on the engine (all-port); hops per packet, summed histogram.

    ``progress``: the :class:`~mpinet.engine.core.Engine`'s callback.
    """
    comm = resolve(comm)
    kind, total = parse_pairs(pairs, topo)
    w = _PairWorkload(topo, kind, total, seed)
    eng = Engine(
        topo,
        router,
        parse_model("all-port"),
        comm,
        seed=seed,
        max_steps=1 << 30,
        progress=progress,
    )
    rec = eng.run(w)
    packets, _ = gather_packets(rec, total, eng.comm)
    check = eng.comm.allreduce(_checksum(packets[:, 0], packets[:, 5]), op=sum_op()) % _MOD
    hist = _sum_hist([np.bincount(packets[:, 5])], eng.comm)
    return {"histogram": hist.tolist(), "checksum": int(check), "steps": int(rec.steps)}
