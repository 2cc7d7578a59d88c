"""The flit engine's per-rank arrays: links, buffers, segments, packet records.

Links are the rank's output links, ``(v - lo) * degree + port``; each has ``V`` VCs whose
sender-side state (credits, held) lives here. Input buffers are the VCs of the links into
the rank's nodes, ``((w - lo) * degree + q) * V + v`` for the link arriving by ``w``'s port
``q``, then the source queues, ``NB * degree * V + (w - lo) * degree + port``. A buffer is
a FIFO of segments (``bhead`` / ``btail`` / ``seg_next``). Segments and packet records come
from free stacks and grow on demand (:meth:`FlitState.reserve`).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from mpinet.engine.flit import kernels as fk
from mpinet.engine.flit import park
from mpinet.engine.flit.layout import (
    Buffers,
    Links,
    Packets,
    Segments,
    link_id,
    source_queue,
)
from mpinet.engine.pool import aligned_empty
from mpinet.errors import ResourceError

#: one segment: the flits of one packet in one buffer (48 bytes: fields a step reads together
#: share a cache line; as eleven arrays they were eleven misses per request); ``age``: its
#: packet's injection step, so that comparing two requests' ages reads no packet record
#: unless they are equal (docs/performance.md, "One-port in session 21")
SEG = np.dtype(
    [("pkt", "i4"), ("cnt", "i4"), ("recv", "i4"), ("sent", "i4"), ("next", "i4"),
     ("buf", "i4"), ("out", "i4"), ("ovc", "i4"), ("vlo", "i4"), ("vhi", "i4"),
     ("hops", "i4"), ("age", "i4")], align=True,
)  # fmt: skip
#: one packet record on this rank (64 bytes); its router header is a separate array
PKT = np.dtype(
    [("pid", "i8"), ("src", "i8"), ("dst", "i8"), ("inj", "i8"), ("adm", "i8"),
     ("state", "i8"), ("nseg", "i8"), ("pad", "i8")], align=True,
)  # fmt: skip
SEG_FIELDS = (
    "pkt", "cnt", "recv", "sent", "next", "buf", "out", "ovc", "vlo", "vhi", "hops", "age",
)  # fmt: skip
PKT_FIELDS = ("pid", "src", "dst", "inj", "adm", "state", "nseg")


class FlitState:
    """Everything one rank's flit engine keeps between steps.

    Parameters
    ----------
    block, deg : the rank's nodes and the degree
    vcs, vc_buffer : VCs per link and flit slots per VC
    nbt : the rank's neighbour table (global ids, -1 where a port has no link)
    hw : router header words
    lo, rev, caps : the rank's first node, the reverse port of each of its links, the flits per
        step of each port (for the per-link tables below)

    The kernels take the arrays as the bundles of :mod:`~mpinet.engine.flit.layout`:
    ``segs``, ``pkts`` (each field of a record a strided view, made again after the records
    grow), ``links`` and ``bufs``; Python reads the same arrays as ``seg_cnt``, ``pkt_dst``,
    ``credit``, ... .
    """

    def __init__(self, block: int, deg: int, vcs: int, vc_buffer: int, nbt: np.ndarray,
                 hw: int, lo: int, rev: np.ndarray, caps: np.ndarray) -> None:  # fmt: skip
        self.block, self.deg, self.vcs, self.bsize = block, deg, vcs, vc_buffer
        nl = block * deg
        self.nvcbuf = nl * vcs
        nbuf = self.nvcbuf + nl
        if nbuf >= 2**31:
            raise ResourceError(
                f"the flit engine's buffers on this rank ({nbuf:,} = links x (VCs + 1)) exceed "
                "2**31; use more ranks"
            )
        self.nbt = np.ascontiguousarray(nbt, dtype=np.int64)
        self._tables(lo, np.asarray(rev, np.int64), np.asarray(caps, np.int64))
        self.credit = np.full(nl * vcs, vc_buffer, dtype=np.int32)
        self.held = np.zeros(nl * vcs, dtype=np.uint8)
        self.load = np.zeros(nl, dtype=np.int64)
        self.lflits = np.zeros(nl, dtype=np.int32)
        self.lreq = np.zeros(nl, dtype=np.int32)
        self.lstart = np.zeros(nl, dtype=np.int32)
        self.bhead = np.full(nbuf, -1, dtype=np.int32)
        self.btail = np.full(nbuf, -1, dtype=np.int32)
        self.bocc = np.zeros(nbuf, dtype=np.int32)
        self.inact = np.zeros(nbuf, dtype=np.uint8)
        self.act = np.zeros(nbuf, dtype=np.int32)
        self.park = np.zeros(nbuf, dtype=np.int32)
        self.pwait = np.zeros(nl * vcs, dtype=np.int32)
        self.nact = np.zeros(3, dtype=np.int64)
        self.hw = hw
        self.nseg = self.npkt = 0
        self.seg = aligned_empty(0, SEG)
        self.pkt = aligned_empty(0, PKT)
        self.pkt_hdr = np.zeros((0, hw), np.int64)
        self.seg_free = np.zeros(0, np.int64)
        self.nfree = np.zeros(1, dtype=np.int64)
        self.pkt_free = np.zeros(0, np.int64)
        self.npfree = np.zeros(1, dtype=np.int64)
        self.links = Links(self.nbt, self.lcap, self.down, self.credit, self.held, self.load,
                           self.lflits, self.lreq, self.lstart)  # fmt: skip
        self.bufs = Buffers(self.bhead, self.btail, self.bocc, self.inact, self.act, self.nact,
                            self.ucred, self.park, self.pwait)  # fmt: skip
        self._views()
        self.reserve(1024, 1024)

    def _tables(self, lo: int, rev: np.ndarray, caps: np.ndarray) -> None:
        """Per link its capacity and the first VC buffer it feeds; per VC buffer the credit
        counter of its sender: what a request would otherwise compute with four integer
        divisions (a third of a request's cost, measured)."""
        deg, nvc = self.deg, self.vcs
        link = np.arange(self.block * deg, dtype=np.int64)
        port = link % deg
        self.lcap = caps[port].astype(np.int32)
        w = self.nbt.ravel()
        #: the receiver's VC 0 of each link, relative to this rank's first buffer (global
        #: VC-buffer ids minus ``lo * deg * V``: outside ``[0, nvcbuf)`` on another rank)
        self.down = np.where(w >= 0, (w * deg + rev) * nvc - lo * deg * nvc, -1)
        b = np.arange(self.nvcbuf, dtype=np.int64)
        wl = b // nvc
        up = w[wl]
        #: the sender's credit counter of each VC buffer, relative as ``down``
        self.ucred = np.where(up >= 0, (up * deg + rev[wl]) * nvc + b % nvc - lo * deg * nvc,
                              -1)  # fmt: skip

    def _views(self) -> None:
        for f in SEG_FIELDS:
            setattr(self, f"seg_{f}", self.seg[f])
        for f in PKT_FIELDS:
            setattr(self, f"pkt_{f}", self.pkt[f])
        self.segs = Segments(*(self.seg[f] for f in SEG_FIELDS), self.seg_free, self.nfree)
        self.pkts = Packets(*(self.pkt[f] for f in PKT_FIELDS), self.pkt_hdr, self.pkt_free,
                            self.npfree)  # fmt: skip

    # -- capacity ----------------------------------------------------------------
    def reserve(self, segs: int, pkts: int) -> None:
        """Make sure ``segs`` more segments and ``pkts`` more packet records are free."""
        grew = False
        if self.nfree[0] < segs:
            self._grow_segs(max(segs, self.nseg))
            grew = True
        if self.npfree[0] < pkts:
            self._grow_pkts(max(pkts, self.npkt))
            grew = True
        if grew:
            self._views()

    def _grow_segs(self, more: int) -> None:
        old, new = self.nseg, self.nseg + more
        if new >= 2**31:
            raise ResourceError(
                f"the flit engine needs {new:,} segments on one rank; use more ranks"
            )
        seg = aligned_empty(new, SEG)
        seg[:old] = self.seg
        seg[old:] = 0
        self.seg = seg
        free = np.empty(new, np.int64)
        k = int(self.nfree[0])
        free[:k] = self.seg_free[:k]
        free[k : k + more] = np.arange(new - 1, old - 1, -1)  # popped low ids first
        self.seg_free, self.nfree[0], self.nseg = free, k + more, new

    def _grow_pkts(self, more: int) -> None:
        old, new = self.npkt, self.npkt + more
        pkt = aligned_empty(new, PKT)
        pkt[:old] = self.pkt
        pkt[old:] = 0
        self.pkt = pkt
        h = np.zeros((new, self.hw), np.int64)
        h[:old] = self.pkt_hdr
        self.pkt_hdr = h
        free = np.empty(new, np.int64)
        k = int(self.npfree[0])
        free[:k] = self.pkt_free[:k]
        free[k : k + more] = np.arange(new - 1, old - 1, -1)
        self.pkt_free, self.npfree[0], self.npkt = free, k + more, new

    @property
    def segments_used(self) -> int:
        return self.nseg - int(self.nfree[0])

    @property
    def packets_used(self) -> int:
        return self.npkt - int(self.npfree[0])

    def link_load(self) -> np.ndarray:
        """Flits per output link, (block, degree)."""
        return self.load.reshape(self.block, self.deg).copy()


@njit(cache=True, _nrt=False)
def open_sources(pid, src, dst, inj, hdr, port, vlo, vhi, state, prm, segs, pkts, bufs):
    """Injected packets: a record each and a segment of all ``flits`` flits at the back of
    the source queue of (source, first port), in the given order."""
    pkt_free, npfree, pkt_hdr = pkts.free, pkts.nfree, pkts.hdr
    seg_cnt, seg_recv, seg_out, seg_vlo, seg_vhi = segs.cnt, segs.recv, segs.out, segs.vlo, segs.vhi
    active, act, nact = bufs.active, bufs.act, bufs.nact
    for i in range(pid.shape[0]):
        npfree[0] -= 1
        p = pkt_free[npfree[0]]
        pkts.pid[p] = pid[i]
        pkts.src[p] = src[i]
        pkts.dst[p] = dst[i]
        pkts.inj[p] = inj
        pkts.adm[p] = -1
        pkts.state[p] = state[i]
        for c in range(pkt_hdr.shape[1]):
            pkt_hdr[p, c] = hdr[i, c]
        pkts.nseg[p] = 1
        link = link_id(src[i], port[i], prm.lo, prm.deg)
        b = source_queue(prm.nvcbuf, link)
        s = fk.push_segment(p, b, 0, segs.free, segs.nfree, segs.pkt, seg_cnt, seg_recv,
                            segs.sent, segs.next, segs.buf, seg_out, segs.ovc, segs.hops,
                            bufs.head, bufs.tail, segs.age, inj)  # fmt: skip
        seg_cnt[s] = seg_recv[s] = prm.flits  # the whole packet waits at its source
        seg_out[s] = link
        seg_vlo[s] = vlo[i]
        seg_vhi[s] = vhi[i]
        activate_one(b, active, act, nact)


@njit(cache=True, inline="always")
def activate_one(b, active, act, nact):
    """Buffer ``b`` into the active list ``act[:nact[0]]`` (once)."""
    park.activate(b, active, act, nact)


@njit(cache=True)
def activate(ids, bufs):
    """Add buffers that received a segment to the active list."""
    active, act, nact = bufs.active, bufs.act, bufs.nact
    for b in ids:
        activate_one(b, active, act, nact)


@njit(cache=True, inline="always")
def _sift(a, lo, root, end):
    """Sift ``a[lo + root]`` down the max-heap ``a[lo:lo + end]``."""
    x = a[lo + root]
    while True:
        c = 2 * root + 1
        if c >= end:
            break
        if c + 1 < end and a[lo + c + 1] > a[lo + c]:
            c += 1
        if a[lo + c] <= x:
            break
        a[lo + root] = a[lo + c]
        root = c
    a[lo + root] = x


@njit(cache=True, _nrt=False)
def heap_sort(a, lo, hi):
    """Sort ``a[lo:hi]`` ascending in place (heapsort): no allocation, unlike numba's
    ``ndarray.sort`` (its quicksort keeps a list), so the compiled steps that call it run
    without reference counts (docs/performance.md, "Cost per step")."""
    m = hi - lo
    for r in range(m // 2 - 1, -1, -1):
        _sift(a, lo, r, m)
    for end in range(m - 1, 0, -1):
        a[lo], a[lo + end] = a[lo + end], a[lo]
        _sift(a, lo, 0, end)


#: the longest unsorted tail :func:`sort_active` sorts by insertion (a heapsort above it)
SHORT_TAIL = 32


@njit(cache=True, inline="always")
def insertion_sort(a, lo, hi):
    """Sort ``a[lo:hi]`` ascending in place by insertion: for a few dozen values, fewer
    mispredicted branches than a heapsort's sifts."""
    for i in range(lo + 1, hi):
        x = a[i]
        j = i - 1
        while j >= lo and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


@njit(cache=True, inline="always")
def bitmap_sort(act, n, words):
    """Sort the distinct ids ``act[:n]`` ascending through a bitmap of them in ``words``
    (``act.shape[0] // 64 + 1`` int64 words, zero; left zero): a bit set per id, then the
    set bits read in order; negative entries (sdc's holes, ``port_links``) dropped. No
    compare but the holes' test, no mispredicted branch but one per non-zero word. Returns
    the ids' count."""
    for i in range(n):
        b = act[i]
        if b >= 0:
            words[b >> 6] |= np.int64(1) << (b & 63)
    k = 0
    for w in range(act.shape[0] // 64 + 1):
        x = words[w]
        if x != 0:
            words[w] = 0
            while x != 0:
                act[k] = (w << 6) + trailing_zeros(x)
                x &= x - 1
                k += 1
    return k


@njit(cache=True, _nrt=False)
def sort_active(act, n, tmp):
    """Sort ``act[:n]`` (distinct buffer ids below ``act.shape[0]``) ascending: its sorted
    prefix (what the last sort left, compacted in order) merged with the rest sorted (a few
    hundred buffers activated since); a full sort of the whole list every 8 steps cost twice
    as much. A short rest (a small network's few activations in 8 steps) is sorted by
    insertion: the heapsort was 5 % of hypercube:8's light-load steps (docs/performance.md,
    "hypercube:8 at light load in session 9"). A longer rest in a list with more buffers
    than a bitmap of every buffer has words (so it fits ``tmp``) sorts the whole list through
    the bitmap: 21 us against the heapsort and merge's 70 for sdc's 10,900 buffers, 700 of
    them new (docs/performance.md, "sdc in session 13"). ``tmp``: scratch of ``n``."""
    p = 1
    while p < n and act[p - 1] < act[p]:
        p += 1
    if p >= n:
        return
    if n - p <= SHORT_TAIL:
        insertion_sort(act, p, n)
    elif act.shape[0] // 64 + 1 <= n:  # dense: every word of the bitmap in tmp
        tmp[: act.shape[0] // 64 + 1] = 0
        bitmap_sort(act, n, tmp)
        return
    else:
        heap_sort(act, p, n)
    for i in range(p):  # a loop: a slice copy may allocate (overlap)
        tmp[i] = act[i]
    i, j, k = 0, p, 0
    while i < p and j < n:
        if tmp[i] < act[j]:
            act[k] = tmp[i]
            i += 1
        else:
            act[k] = act[j]
            j += 1
        k += 1
    while i < p:
        act[k] = tmp[i]
        i += 1
        k += 1
