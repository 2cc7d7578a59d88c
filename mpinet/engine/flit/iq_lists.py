"""The iq routers' event lists (numba): per pipeline stage, the input VCs with an item in
that stage (waiting or in flight), as a bit set over every input VC ``iv`` (``m_rt``,
``m_va``, ``m_sa`` of :mod:`~mpinet.engine.flit.iq_state`, bit ``iv % 64`` of word
``iv // 64``).

A stage visits only a router's VCs whose bit is set, in increasing order (the order of a
scan of every VC, so the allocators' requests, the batches and the first routing error are
those of a full scan); a router with no bit set and nothing in its crossbar costs nothing
in an internal step. A bit is set when a VC's item joins the stage's queue (``*_T = -1``,
:func:`push`) and cleared when it leaves (``*_T = -2``); the stages still test each item's
own state, so a set bit is a candidate, never a decision.

The other phases visit bit sets of the same kind (:mod:`~mpinet.engine.flit.iq_state`):
per arrival slot the input ports a flit reaches (``fm``), the output ports a credit message
returns to (``cm``), the terminals with a flit or credits (``tm``) and the credits due from
the delay line (``pm``); the non-empty output and credit queues (``obm``, ``cqm``); the
routers with an item (``rb``) and the active nodes (``actb``), all walked in index order,
so a cycle costs what moves in it, not the ports of every busy router.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

__all__ = ["words", "mark", "unmark", "span", "low", "any_in", "wrap", "magic", "div", "push",
           "push_sa", "push_va", "batch", "activate", "vmask", "first_from", "first_at", "HV", "VA",
           "RT", "XR"]  # fmt: skip

#: columns of ``hv[iv]``, an input VC's row (:mod:`~mpinet.engine.flit.iq_state`): the fields a
#: body flit's hop reads and writes (buffer ring, state, output VC, switch allocation's item)
#: side by side in one 64-byte line, where eight arrays cost eight lines a hop
SA_T, SA_RD, VST, VOP, VOV, IBH, IBN, SA_SEQ = range(8)
HV = 8
#: columns of ``va[iv]``, an input VC's row of a head's route and VC allocation item: the
#: route's output port and VC range, the item's cycle, ready step, granted output VC, the
#: internal step it was evaluated at and its place in the queue (one line, not eight arrays:
#: fewer lines a head and fewer array pointers live in the compiled step)
VRP, VLO, VHI, VA_T, VA_RD, VA_RES, VA_EV, VA_SEQ = range(8)
VA = 8
#: columns of ``rt[iv]``, route computation's item (``routing_delay > 0``)
RT_T, RT_RD, RT_SEQ = range(3)
RT = 4
#: columns of ``xr[x]``, a crossbar slot: flit and VC (``f << 6 | v``), output port, the
#: completion cycle and the internal step it is ready from (one line, not four arrays)
X_FV, X_OP, X_T, X_RD = range(4)
XR = 4


@njit(cache=True, inline="always")
def words(niv: int) -> int:
    """Words of a bit set over ``niv`` input VCs (or nodes, or ports)."""
    return (niv + 63) // 64


@njit(cache=True, inline="always")
def mark(m, iv):
    """Input VC ``iv`` joins the set ``m``."""
    m[iv >> 6] |= np.uint64(1) << np.uint64(iv & 63)


@njit(cache=True, inline="always")
def unmark(m, iv):
    """Input VC ``iv`` leaves the set ``m``."""
    m[iv >> 6] &= ~(np.uint64(1) << np.uint64(iv & 63))


@njit(cache=True, inline="always")
def span(m, wi, lo, hi):
    """Word ``wi`` of ``m`` with only the bits of input VCs ``lo <= iv < hi`` (one router's;
    ``wi`` between ``lo >> 6`` and ``(hi - 1) >> 6``)."""
    word = m[wi]
    a = wi << 6
    if lo > a:
        word &= ~np.uint64(0) << np.uint64(lo - a)
    if hi < a + 64:
        word &= (np.uint64(1) << np.uint64(hi - a)) - np.uint64(1)
    return word


@njit(cache=True, inline="always")
def low(word):
    """The index of the lowest set bit of ``word`` (not 0)."""
    return np.int64(trailing_zeros(word))


@njit(cache=True, inline="always")
def vmask(lo, hi):
    """The bits ``lo <= v < hi`` of a word (a route's VC range, ``hi - lo <= 64``)."""
    if hi - lo >= 64:
        return ~np.uint64(0)
    return ((np.uint64(1) << np.uint64(hi - lo)) - np.uint64(1)) << np.uint64(lo)


@njit(cache=True, inline="always")
def first_from(m, rel):
    """The lowest set bit of ``m`` (not 0) at or after bit ``rel`` if any, else its lowest:
    a round-robin arbiter's choice among one input's requests with its pointer at ``rel``
    (``rel`` outside ``0 .. 63``: the pointer is outside the word, its lowest bit wins)."""
    if 0 < rel < 64:
        h = m & (~np.uint64(0) << np.uint64(rel))
        if h:
            return low(h)
    return low(m)


@njit(cache=True, inline="always")
def first_at(m, rel):
    """:func:`first_from` for a pointer ``0 <= rel < 64`` (a crossbar's ports, at most 64):
    no test of ``rel``, as a hot loop wants."""
    h = m & (~np.uint64(0) << np.uint64(rel))
    return low(h if h else m)


@njit(cache=True, inline="always")
def any_in(m, lo, hi):
    """Whether a bit of input VCs ``lo <= iv < hi`` is set."""
    for wi in range(lo >> 6, ((hi - 1) >> 6) + 1):  # noqa: SIM110 (numba: no generators)
        if span(m, wi, lo, hi):
            return True
    return False


@njit(cache=True, inline="always")
def wrap(x, size):
    """``x % size`` for ``0 <= x`` (a ring's index; one subtraction where ``x < 2 size``, the
    usual case: a division costs tens of cycles)."""
    if x < size:
        return x
    if x < 2 * size:
        return x - size
    return x % size


def magic(d: int) -> tuple[int, int]:
    """``(m, lim)`` of :func:`div` by ``d >= 1``: ``m = ceil(2^32 / d)``, exact below ``lim``."""
    return -(-(1 << 32) // d), (1 << 32) // d


@njit(cache=True, inline="always")
def div(x, d, m, lim):
    """``x // d`` for ``0 <= x`` with ``(m, lim) = magic(d)``: a multiplication and a shift
    where ``x < lim`` (then ``x d < 2^32``, so ``x m / 2^32`` errs by less than ``1 / d``),
    else the division (a dependent 64-bit division costs about 14 ns here: the node of a
    port, the port of a VC and the packet of a flit are taken several times a flit-hop)."""
    if x < lim:
        return np.int64((np.uint64(x) * np.uint64(m)) >> np.uint64(32))
    return x // d


@njit(cache=True, inline="always")
def deliver(pk, t, nd, deliv, s):
    """Packet slot ``pk``'s tail delivered at cycle ``t``: row ``nd`` of ``deliv`` written
    (id, source, destination, injection, delivery, hops, admission), the slot freed; returns
    the next row. Both paths' states (general and lean) hold these fields."""
    deliv[nd, 0], deliv[nd, 1] = s.pk_pid[pk], s.pk_src[pk]
    deliv[nd, 2], deliv[nd, 3], deliv[nd, 4] = s.pk_dst[pk], s.pk_inj[pk], t
    deliv[nd, 5], deliv[nd, 6] = s.pk_hops[pk], s.pk_adm[pk]
    s.pk_free[s.pk_nfree[0]] = pk
    s.pk_nfree[0] += 1
    return nd + 1


@njit(cache=True, inline="always")
def push(rows, ct, crd, cseq, qseq, n, iv, ready, m, rb):
    """Input VC ``iv`` of router ``n`` joins the back of a stage's queue (its item's cycle,
    ready step and place are columns ``ct``, ``crd``, ``cseq`` of ``rows``; ``m`` the stage's
    event list), evaluable from internal step ``ready``; the router joins ``rb``, the routers
    an internal step visits."""
    rows[iv, ct], rows[iv, crd] = -1, ready
    mark(m, iv)
    mark(rb, n)
    rows[iv, cseq] = qseq[n]
    qseq[n] += 1


@njit(cache=True, inline="always")
def push_sa(hv, qseq, n, iv, ready, m, rb):
    """:func:`push` into switch allocation's queue (columns of ``hv``)."""
    push(hv, SA_T, SA_RD, SA_SEQ, qseq, n, iv, ready, m, rb)


@njit(cache=True, inline="always")
def push_va(va, qseq, n, iv, ready, m, rb):
    """:func:`push` into VC allocation's queue (columns of ``va``)."""
    push(va, VA_T, VA_RD, VA_SEQ, qseq, n, iv, ready, m, rb)


@njit(cache=True, inline="always")
def batch(rows, ct, cseq, base, m, ordered, order, ev):
    """The input VCs ``j < m`` of the router at ``base`` whose stage item completes now
    (``rows[base + j, ct] >= 0``; ``ev`` the stage's event list, ``cseq`` the column of the
    item's place) into ``order``, in their queue's order when ``ordered`` (only output
    speedup makes it matter), else by index; returns their count."""
    k = 0
    for wi in range(base >> 6, ((base + m - 1) >> 6) + 1):
        word = span(ev, wi, base, base + m)
        while word:
            j = (wi << 6) + low(word) - base
            word &= word - np.uint64(1)
            if rows[base + j, ct] < 0:
                continue
            i = k
            if ordered:  # insertion: a batch holds a few items
                x = rows[base + j, cseq]
                while i > 0 and rows[base + order[i - 1], cseq] > x:
                    order[i] = order[i - 1]
                    i -= 1
            order[i] = j
            k += 1
    return k


@njit(cache=True, inline="always")
def activate(w, work, inact, act, nact, actb):
    """Node ``w`` gets one more thing to do (``work``) and joins the active list."""
    work[w] += 1
    if inact[w] == 0:
        inact[w] = 1
        act[nact[0]] = w
        nact[0] += 1
        mark(actb, w)
