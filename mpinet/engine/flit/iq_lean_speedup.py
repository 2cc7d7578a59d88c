"""Internal speedup on the lean iq path (numba, compiled apart and called from
:func:`~mpinet.engine.flit.iq_lean.run_block`; docs/iq-router.md, "Session 23: internal
speedup on the lean path").

``internal_speedup = s`` runs the routers' stages ``k`` times in a cycle, ``k`` from the
fraction carried over (:func:`steps`, the general path's ``acc``: BookSim's
``_partial_internal_cycles``). Each pass of the lean kernel over its routers is one internal
step, and an input VC's ``TOK`` counts internal steps (``tb``, the cycle's first, stands for
the cycle where arrivals set it), so a VC granted at one step bids at the next, in the same
cycle where one is left, as the general path's items evaluable from ``istep + 1``.

What leaves a router then waits in queues, as on the general path (``IQParams.dx`` 0):

- a flit granted at a step enters its output queue at the router's next step (the crossbar
  of one cycle): in this cycle if a step is left, else the next; the queue sends one flit a
  cycle (``osend``, as output speedup's queues);
- each step's credits of one input port are one message (the general path's ``oqc``), and a
  port sends one message a cycle (:func:`credit_slot`: ``csnd``, ``cstp``).
"""

from __future__ import annotations

from numba import njit

from mpinet.engine.flit import iq_lists as il
from mpinet.engine.flit.iq_lean_io import wait
from mpinet.engine.flit.iq_lean_state import FS, HD, TOK


@njit(cache=True, error_model="numpy", _nrt=False)
def steps(s):
    """This cycle's internal steps: ``(the first step's number, how many)``. ``spa``: the
    fraction carried and the speedup (the same float operations as the general path's, so
    the same steps each cycle); ``spg[0]``: the next step's number (the cycle's number where
    the speedup is 1: :func:`mode`'s copy with this code keeps every other key exact)."""
    a = s.spa[0] + s.spa[1]
    k = 0
    while a >= 1.0:
        a -= 1.0
        k += 1
    s.spa[0] = a
    g0 = s.spg[0]
    s.spg[0] = g0 + k
    if s.spg.size > 2:  # stages of several cycles: the next cycles' first steps (first)
        g = g0 + k
        s.spg[2] = g0
        for j in range(3, s.spg.size):
            s.spg[j] = g
            a += s.spa[1]
            while a >= 1.0:
                a -= 1.0
                g += 1
    return g0, k


@njit(cache=True, error_model="numpy", _nrt=False)
def credit_slot(s, ip, g, t, off, nkr):
    """The credit ring's slot of a credit from input port ``ip`` (the rank's ``node * nport +
    port``) granted at step ``g`` of cycle ``t``, read ``off`` cycles after its message is
    sent: one message a step and a port (several VCs with input speedup), one message a
    cycle sent, in order."""
    if s.cstp[ip] == g:  # this step's message: already placed
        c = s.csnd[ip]
    else:
        c = s.csnd[ip] + 1
        c = c if c > t else t
        s.csnd[ip], s.cstp[ip] = c, g
    return (c + off) % nkr


@njit(cache=True, error_model="numpy", _nrt=False)
def wrap_down(x, n):
    """``x`` in ``[-n, n)`` into ``[0, n)`` (a flit sent in the cycle of its grant: one slot
    before the ring's usual offset)."""
    return x + n if x < 0 else x


# Stages of several cycles under internal speedup (docs/iq-router.md, "Session 24"): a stage
# of d > 1 cycles evaluated at step g of cycle c is updated at the router's first step of
# cycle c + d - 1 (BookSim's stage queues compare cycles, GetSimTime) and hands on at the
# step after. So the batches (``stb[node, k]``) are kept in steps: column k the batch's step,
# 4 + k its update's step, 8 + k its update's cycle. sbatch, start and after are compiled
# apart and called (array arguments, no reference counts: _nrt=False): inlined at their
# seven calls they cost the speedup copy 17 s more to compile (76 s against main's 59 s).


@njit(cache=True, error_model="numpy", _nrt=False)
def first(spg, t, tb, c):
    """The first internal step of cycle ``c >= t`` (``tb``: cycle ``t``'s): :func:`steps`
    wrote those of cycles ``t .. t + 2 d + 1`` (``spg[2:]``, ``d`` the longest stage), by
    its float operations carried forward, once a cycle (a loop here cost 24 s more to
    compile the speedup copy, when the helpers were inlined). A batch's update is at most
    ``2 d - 1`` cycles on (:func:`sbatch`), and the cycle after it is read."""
    return tb if c <= t else spg[2 + c - t]


@njit(cache=True, _nrt=False)
def after(spg, u, cu, t, tb):
    """The cycle of step ``u + 1``, ``u`` the first step of cycle ``cu >= t``."""
    return cu if u + 1 < first(spg, t, tb, cu + 1) else cu + 1


@njit(cache=True, _nrt=False)
def start(stb, spg, n, k, g, c, d, t, tb):
    """Stage ``k`` (of ``d > 1`` cycles) of router ``n`` evaluates a batch at step ``g`` of
    cycle ``c``: returns its update's step (the items go on at the step after)."""
    u = first(spg, t, tb, c + d - 1)
    stb[n, k], stb[n, 4 + k], stb[n, 8 + k] = g, u, c + d - 1
    return u


@njit(cache=True, _nrt=False)
def sbatch(stb, spg, n, k, a, ca, d, t, tb):
    """The update ``(step, cycle)`` of the batch of stage ``k`` (``d > 1`` cycles) of router
    ``n`` that takes an item ready from step ``a`` (of cycle ``ca``; steps in order): the
    batch not yet evaluated (``a`` at or before its step), or the next one, at ``a`` or at
    the step after the update of the one in flight."""
    e, u, cu = stb[n, k], stb[n, 4 + k], stb[n, 8 + k]
    if a <= e:
        return u, cu
    if a <= u:  # in flight: the next batch at the step after its update
        a = u + 1
        ca = cu if a < first(spg, t, tb, cu + 1) else cu + 1
    u = start(stb, spg, n, k, a, ca, d, t, tb)
    return u, ca + d - 1


@njit(cache=True, error_model="numpy", _nrt=False)
def free(s, n, tk, vfree, sfree, smove, vad, sad):
    """VC and switch allocation of router ``n`` at step ``tk``: free (no batch in flight)
    and switch allocation's update now (``smove``), from the batches' update steps."""
    if vad > 1:
        vfree = tk > s.stb[n, 6]
    if sad > 1:
        sfree = tk > s.stb[n, 7]
        smove = tk == s.stb[n, 7]
    return vfree, sfree, smove


@njit(cache=True, error_model="numpy", _nrt=False)
def route_batches(s, t, tb, x, cnt, rd, prm, flat, wheel):
    """The heads that reached an empty VC at cycle ``t`` (arrivals' ring slot ``x``, its
    ``cnt`` entries) go to VC allocation at the step after their route computation's batch's
    update (``routing_delay = rd > 1``), out of pass 1 until its cycle (``wheel``,
    :func:`~.iq_lean_io.wait`). A head at its VC's front is one that arrived empty."""
    nv, bsz, npt = prm.nvc, prm.bsz, prm.nport
    cap = s.ck.size // s.cn.size
    for i in range(cnt):
        key, code = s.ck[x * cap + i], s.cc[x * cap + i]
        if (code & ((1 << FS) - 1)) != 0:  # not a head
            continue
        iv = (key >> 6) * nv + (key & 63)
        if s.buf[iv * bsz + s.hv[iv, HD]] != code:
            continue
        ip = key >> 6
        n = il.div(ip, npt, prm.mport, prm.lport)
        u, cu = sbatch(s.stb, s.spg, n, 0, tb, t, rd, t, tb)
        s.hv[iv, TOK] = u + 1
        if wheel:
            v = key & 63
            j = (ip - n * npt) * nv + v if flat else v
            wait(after(s.spg, u, cu, t, tb), n if flat else ip, j, s)
