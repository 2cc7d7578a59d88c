"""The packet pool of one rank: struct-of-arrays slots, a free stack, growth.

A packet lives in one slot from its injection (or arrival from another rank)
until it is delivered or leaves the rank. A slot is one record (array of
structs: a move touches one cache line), its fields as narrow as the network
allows: node ids int32 below 2**31 nodes, hop counts and keys int32; packet
ids stay int64 (a total exchange has N**2 of them). Router headers are a
(slots, width) int64 array: inside the record when one word wide (a view of
field ``h``: a hop reads or writes it with the rest of its packet), a separate
array otherwise. ``pool.cur`` and the like are field views for numpy.
"""

from __future__ import annotations

import numpy as np

from mpinet.errors import ResourceError

#: the fields of a slot, in record order (``node`` = the network's node dtype)
FIELDS = (
    ("pid", "i8"),
    ("up", "i8"),
    ("h", "i8"),  # the router header when it is one word (most routers): no second miss
    ("nxt", "i4"),  # queue links: slots (a pool stays below 2**31 slots)
    ("prv", "i4"),
    ("dst", "node"),
    ("cur", "node"),
    ("src", "node"),
    ("inj", "i4"),
    ("hops", "i4"),
    ("key", "i4"),
    ("port", "i4"),
    ("adm", "i4"),  # the step it entered the network (after any wait at its source)
)


def record_dtype(node_t: np.dtype) -> np.dtype:
    """One aligned record per packet: 64 bytes with int32 node ids, a cache line."""
    return np.dtype([(n, node_t if k == "node" else k) for n, k in FIELDS], align=True)


def node_dtype(num_nodes: int) -> np.dtype:
    """int32 when every node id fits, else int64."""
    return np.dtype(np.int32 if num_nodes < 2**31 else np.int64)


def slot_bytes(num_nodes: int, header_width: int) -> int:
    """Bytes of one pool slot: the record, a header wider than one word, the free stack."""
    extra = 8 * header_width if header_width > 1 else 0  # one word lives in the record
    return record_dtype(node_dtype(num_nodes)).itemsize + extra + 8


def aligned_empty(n: int, dtype: np.dtype, align: int = 64) -> np.ndarray:
    """``np.empty(n, dtype)`` starting on an ``align``-byte boundary.

    Why: numpy's large arrays start 16 bytes past a page, so every 64-byte
    record straddled two cache lines: two misses per packet touched, not one.
    """
    raw = np.empty(n * dtype.itemsize + align, dtype=np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off : off + n * dtype.itemsize].view(dtype)


class Pool:
    """Packet slots with a free stack; :meth:`alloc` grows the pool when full."""

    def __init__(self, num_nodes: int, header_width: int, capacity: int = 1024) -> None:
        self.node_t = node_dtype(num_nodes)
        self.dtype = record_dtype(self.node_t)
        self.hw = header_width
        self.cap = 0
        self.rec = np.empty(0, dtype=self.dtype)
        self._hdr = np.empty((0, header_width), dtype=np.int64)
        self.free = np.empty(0, dtype=np.int64)
        self.nfree = np.zeros(1, dtype=np.int64)
        self._grow(max(int(capacity), 16))

    def __getattr__(self, name: str) -> np.ndarray:
        rec = self.__dict__.get("rec")
        if rec is not None and name in rec.dtype.names:
            return rec[name]
        raise AttributeError(name)

    @property
    def hdr(self) -> np.ndarray:
        """Router headers, (slots, width) int64 (a view of the records when width <= 1)."""
        if self.hw > 1:
            return self._hdr
        return self.rec["h"].reshape(self.cap, 1)[:, : self.hw]

    @property
    def used(self) -> int:
        """Slots holding a packet."""
        return self.cap - int(self.nfree[0])

    def _grow(self, cap: int) -> None:
        old = self.cap
        rec = aligned_empty(cap, self.dtype)
        rec[:old] = self.rec
        self.rec = rec
        if cap >= 2**31:
            raise ResourceError(f"{cap:,} packet slots on one rank is over 2**31; use more ranks")
        if self.hw > 1:
            hdr = np.empty((cap, self.hw), dtype=np.int64)
            hdr[:old] = self._hdr
            self._hdr = hdr
        free = np.empty(cap, dtype=np.int64)
        n = int(self.nfree[0])
        free[:n] = self.free[:n]
        # new slots, highest first, so the lowest is handed out first
        free[n : n + cap - old] = np.arange(cap - 1, old - 1, -1)
        self.free = free
        self.nfree[0] = n + cap - old
        self.cap = cap

    def alloc(self, count: int) -> np.ndarray:
        """``count`` free slots (the pool grows as needed)."""
        n = int(self.nfree[0])
        if count > n:
            self._grow(max(2 * self.cap, self.cap + count - n))
            n = int(self.nfree[0])
        out = self.free[n - count : n][::-1].copy()
        self.nfree[0] = n - count
        return out

    def release(self, slots: np.ndarray) -> None:
        """Return ``slots`` to the free stack."""
        n = int(self.nfree[0])
        self.free[n : n + slots.size] = slots
        self.nfree[0] = n + slots.size

    def live(self) -> np.ndarray:
        """Slots holding a packet, ascending."""
        mask = np.ones(self.cap, dtype=bool)
        mask[self.free[: int(self.nfree[0])]] = False
        return np.flatnonzero(mask)
