"""Per-rank queue state of the engine and the scratch buffers its kernels write.

One 32-byte record per local link (:func:`link_dtype`): the head and tail of
its class-0 queue, its packet count, its neighbour, its load, the credit of
its class-0 buffer and the k-port stamp. A hop reads and writes most of them,
so they share a cache line: as separate arrays they were five random misses
per hop on large networks. The kernels see each field as a strided view
(``qhead``, ``lcount``, ...). With ``buffer_classes = "hops"`` the queues and
credits of all classes live in a second record array, one 12-byte record per
(link, class). See :mod:`mpinet.engine.kernels`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpinet.engine import kernels as kn
from mpinet.engine import kernels_check as kc
from mpinet.engine.models import Model
from mpinet.engine.pool import Pool, aligned_empty, node_dtype
from mpinet.errors import ResourceError
from mpinet.topology.base import Topology

_CHUNK = 1 << 20  # nodes per neighbour-table chunk (bounds the int64 transient)


def neighbor_block(topo: Topology, lo: int, hi: int) -> np.ndarray:
    """Flat neighbour table of nodes ``[lo, hi)``: entry ``(v - lo) * degree + port``."""
    dt = node_dtype(topo.num_nodes)
    out = np.empty((hi - lo) * topo.degree, dtype=dt)
    for a in range(lo, hi, _CHUNK):
        b = min(hi, a + _CHUNK)
        out[(a - lo) * topo.degree : (b - lo) * topo.degree] = topo.neighbors(
            np.arange(a, b, dtype=np.int64)
        ).ravel()
    return out


def check_scratch(links: int, caps: np.ndarray) -> np.ndarray:
    """Zeroed per-link counts for ``check_moves``: uint8, int32 when a capacity reaches 255.

    A uint8 count could wrap before it exceeds such a capacity.
    """
    big = caps.size and int(caps.max()) >= 255
    return np.zeros(links, dtype=np.int32 if big else np.uint8)


@dataclass
class Outputs:
    """What ``select`` writes in one step (views into buffers kept between steps)."""

    link: np.ndarray
    deliv: np.ndarray
    mv: np.ndarray  # local arrival rows from the front, wire rows from the back
    cl: np.ndarray
    cr: np.ndarray
    hop: np.ndarray
    cnt: np.ndarray


def link_dtype(node_t: np.dtype) -> np.dtype:
    """One record per link: 32 bytes with int32 node ids (two per cache line)."""
    return np.dtype(
        [("head", "i4"), ("tail", "i4"), ("count", "i4"), ("nbr", node_t), ("load", "i8"),
         ("credit", "i4"), ("stamp", "i4")], align=True,
    )  # fmt: skip


_QUEUE = np.dtype([("head", "i4"), ("tail", "i4"), ("credit", "i4")])


class LinkState:
    """Queues, credits and counters of one rank's ``block`` nodes."""

    def __init__(self, block: int, deg: int, model: Model, pool: Pool, nbt: np.ndarray) -> None:
        self.block, self.deg, self.pool = block, deg, pool
        self.finite = model.buffer > 0
        self.use_cls = model.classes == "hops"
        self.ncls = model.max_hops + 1 if self.use_cls else 1
        nl = block * deg
        if nl * self.ncls >= 2**31:
            raise ResourceError(
                f"{nl * self.ncls:,} link queues on one rank is over 2**31; use more ranks"
            )
        self.links = links = aligned_empty(nl, link_dtype(nbt.dtype))
        links["head"] = links["tail"] = -1
        links["count"] = links["load"] = links["stamp"] = 0
        links["nbr"] = nbt
        links["credit"] = model.buffer if self.finite else 0
        # field views: what the kernels index (strided, one record per link)
        self.lcount, self.nbt, self.load = links["count"], links["nbr"], links["load"]
        self.lstamp = links["stamp"]
        if self.ncls == 1:
            self.qhead, self.qtail, self.credit = links["head"], links["tail"], links["credit"]
        else:
            q = aligned_empty(nl * self.ncls, _QUEUE, 16)
            q["head"] = q["tail"] = -1
            q["credit"] = model.buffer if self.finite else 0
            self.qhead, self.qtail, self.credit = q["head"], q["tail"], q["credit"]
        self.pcount = np.zeros(deg, dtype=np.int64)
        self.act = np.empty(nl, dtype=np.int32)
        self.srv = np.empty(nl, dtype=np.int32)  # links served in a step
        # zeroed byte map that sorts dense active lists, and the same bytes as words
        self.mark = np.zeros(-(-nl // 8), dtype=np.uint64)
        self.mark8 = self.mark.view(np.uint8)
        self.na = np.zeros(1, dtype=np.int64)
        self.nstamp = np.zeros(block if model.kind in ("one-port", "k-port") else 1, np.int32)
        self.lcnt = np.zeros(nl, dtype=np.uint8)  # zeroed scratch of the model check
        self.ncnt = np.zeros(block if model.kind in ("one-port", "k-port") else 1, np.int32)
        self.maxcap = 1
        if self.finite:
            self.injfree = np.full(block, model.buffer, dtype=np.int32)
            self.shead = np.full(block, -1, dtype=np.int64)
            self.stail = np.full(block, -1, dtype=np.int64)
            self.sact = np.empty(block, dtype=np.int64)
            self.nsact = np.zeros(1, dtype=np.int64)
        else:
            self.injfree = np.zeros(1, dtype=np.int32)
        self._cap = 0
        self._bufs: dict[str, np.ndarray] = {}
        self.cnt = np.zeros(8, dtype=np.int64)

    def link_load(self) -> np.ndarray:
        """Packets sent on each link (in the load window): a (block, degree) int64 copy."""
        return np.ascontiguousarray(self.load).reshape(self.block, self.deg)

    def set_max_capacity(self, caps: np.ndarray) -> None:
        self.maxcap = int(caps.max()) if caps.size else 1
        self.lcnt = check_scratch(self.lcnt.size, caps)

    def outputs(self, record_hops: bool) -> Outputs:
        """Buffers large enough for every move this step can make."""
        bound = min(int(self.pcount.sum()), int(self.na[0]) * self.maxcap)
        if bound > self._cap or not self._bufs:
            cap = max(bound, self._cap + self._cap // 4, 1024)  # 1.25x: a step rarely grows much
            self._bufs = {
                "link": np.empty(cap, np.int64),
                "deliv": np.empty((cap, 7), np.int64),
                "mv": np.empty((cap, max(kn.A_WIDTH, kn.W_WIDTH) + self.pool.hw), np.int64),
                "cl": np.empty(cap, np.int64),
                "cr": np.empty(cap, np.int64),
                "hop": np.empty((cap if record_hops else 0, 5), np.int64),
            }
            self._cap = cap
        if record_hops and self._bufs["hop"].shape[0] < self._cap:
            self._bufs["hop"] = np.empty((self._cap, 5), np.int64)
        self.cnt[:] = 0
        return Outputs(**self._bufs, cnt=self.cnt)

    def return_credits(self, local: np.ndarray, received: np.ndarray, lo: int) -> None:
        """Credits of the slots freed this step, usable from the next step on."""
        if not self.finite:
            return
        kc.apply_credits(local, self.credit)
        if received.size:
            kc.apply_credits(received - lo * self.deg * self.ncls, self.credit)

    def movable_ports(self, p: Pool) -> np.ndarray:
        out = np.zeros(self.deg, dtype=np.int64)
        kn.movable_ports(self.nbt, self.deg, self.ncls, self.use_cls, p.rec, self.qhead,
                         self.lcount, self.act, self.na, self.credit, out)  # fmt: skip
        return out

    def source_push(self, slots: np.ndarray, lo: int, p: Pool) -> None:
        kn.source_push(slots, lo, p.rec, self.shead, self.stail, self.sact, self.nsact)

    def admit(self) -> np.ndarray:
        """Source-queued packets that take a free injection-buffer slot now."""
        p = self.pool
        out = np.empty(int(self.injfree.sum(dtype=np.int64)), dtype=np.int64)
        m = kn.admit(self.injfree, self.shead, self.stail, p.rec, self.sact, self.nsact, out)
        return out[:m]
