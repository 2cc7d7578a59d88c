"""Internal speedup on the lean iq path (numba, inlined into
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


@njit(cache=True, inline="always")
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
    return g0, k


@njit(cache=True, inline="always")
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


@njit(cache=True, inline="always")
def wrap_down(x, n):
    """``x`` in ``[-n, n)`` into ``[0, n)`` (a flit sent in the cycle of its grant: one slot
    before the ring's usual offset)."""
    return x + n if x < 0 else x
