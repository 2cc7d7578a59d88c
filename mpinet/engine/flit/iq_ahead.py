"""Prefetch walks of the iq model's read and write phases (numba, inlined): where a rank's
state is past the caches (ms:3,2's 24 MB), each phase asks for the lines of its bit set's
next word (the flits and queues it will take there) while it takes this word's, so their
misses overlap. A prefetch changes nothing and never faults (:func:`.iq_lists.ahead`).
Why: on ms:3,2 each flit-hop missed L1 about 39 times, the write phase a quarter of them and
the read phase a sixth, mostly one line a destination touched (docs/iq-router.md,
"Session 14" and "Session 17, part 2")."""

from __future__ import annotations

import numpy as np
from numba import njit

from mpinet.engine.flit import iq_lists as il
from mpinet.engine.flit.layout import PREFETCH_MIN

#: the fewest input VCs on a rank for which the phases prefetch (below it the state stays
#: in a core's caches: hypercube:8 has 4,608, ms:3,2 50,400)
FAR = PREFETCH_MIN


@njit(cache=True, inline="always")
def ahead_out(wi, word, tl, prm, s):
    """The lines that sending the output queues of word ``wi`` of ``obm`` (bits ``word``)
    touches: each queue's front and, for a flit to a router of the rank, the channel slot
    it lands in and that router's ``work`` and ``inact``."""
    nport, deg = prm.nport, prm.deg
    while word:
        c = (wi << 6) + il.low(word)
        word &= word - np.uint64(1)
        il.ahead(s.ob, c * prm.obs + s.obh[c])
        n = il.div(c, nport, prm.mport, prm.lport)
        o = c - n * nport
        if o < deg:
            w = s.nbt[n * deg + o]
            if prm.lo <= w < prm.hi:
                key = w * deg + s.rev[n * deg + o]
                il.ahead(s.fc, (key - prm.lo * deg) * prm.sl + tl)
                il.ahead(s.work, w - prm.lo)
                il.ahead(s.inact, w - prm.lo)


@njit(cache=True, inline="always")
def ahead_in(wi, word, tl, t2, prm, s):
    """The lines that taking the flits of word ``wi`` of the slot's ``fm`` (bits ``word``)
    into their buffers touches: each input VC's row ``hv`` and its buffer ring."""
    nport, deg, nvc = prm.nport, prm.deg, prm.nvc
    while word:
        b = (wi << 6) + il.low(word)
        word &= word - np.uint64(1)
        n = il.div(b, nport, prm.mport, prm.lport)
        p = b - n * nport
        v = s.fc[(n * deg + p) * prm.sl + tl] & 63 if p < deg else s.icv[n * 2 + t2]
        iv = b * nvc + v
        il.ahead(s.hv, iv)
        il.ahead(s.ib, iv * prm.bsz)


@njit(cache=True, inline="always")
def ahead_router(n, prm, s):
    """The lines router ``n``'s internal step reads first: the rows and buffer rings of its
    input VCs in switch allocation (``m_sa``) and its output VCs' buffer states."""
    base = n * prm.nport * prm.nvc
    end = base + prm.nport * prm.nvc
    for wi in range(base >> 6, ((end - 1) >> 6) + 1):
        word = il.span(s.m_sa, wi, base, end)
        while word:
            iv = (wi << 6) + il.low(word)
            word &= word - np.uint64(1)
            il.ahead(s.hv, iv)
            il.ahead(s.ib, iv * prm.bsz)
    il.ahead(s.bs_cred, base)
    il.ahead(s.bs_cred, end - 1)
