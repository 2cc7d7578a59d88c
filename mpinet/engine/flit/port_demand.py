"""sdc's demand kept between steps: the state's arrays (:class:`Demand`) and the listing of
the links to recount (:func:`mark_link`).

sdc sends on the links of the port with the most movable requests. Counting them afresh
(:func:`~mpinet.engine.flit.port_choice.movable`) walks every waiting request each step,
and sdc keeps about 8x as many requests waiting as it sends (ms:3,2 at Bernoulli 0.003:
12,000 active buffers, 6,450 links with requests, 1,500 sending): docs/performance.md,
"Cost per step". So the compiled steps keep, between steps, per link its movable requests
(``mc``) and per port their sum (``dem``), recounting only the links listed (``dirty``):
those allowed to send, those whose VC got credits back below ``need`` or was released,
and those whose requests came, went or changed (:mod:`~mpinet.engine.flit.kept_requests`,
which keeps each buffer's request too). The k-port choice keeps its per-node counts here
(:func:`~mpinet.engine.flit.kport_nodes.kport_deny`).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from mpinet.engine.flit.layout import list_once

Demand = namedtuple("Demand", ["mc", "dem", "flag", "dirty", "nd", "chk", "cdem", "nstep",
                               "ncnt", "breq", "bport", "bnext", "bprev", "lhead", "bflag",
                               "emp", "hole",
                               "dbuf", "ndb", "cm", "nrq", "best", "bits"])  # fmt: skip
Demand.__doc__ = """sdc's demand between steps: per link its movable requests (``mc``), per
port their sum (``dem``), whether a link is listed to recount (``flag``) and the list
(``dirty[:nd[0]]``); ``chk = (on, steps checked, mismatches, afresh)``: :func:`check`'s,
and 1 while the next step must read every request afresh (set by the caller);
``cdem`` the check's scratch. k-port's count of a node's links with requests in a step
(:func:`~mpinet.engine.flit.kport_nodes.kport_deny`): ``ncnt``, zero between steps;
one-port's decisions kept between steps (:mod:`~mpinet.engine.flit.kept_choice`):
``nstep[node]`` = (step, port, segment, signature). sdc's requests kept per buffer
(:mod:`~mpinet.engine.flit.kept_requests`): each buffer's link (``breq``) and port
(``bport``), each link's requesting buffers (``lhead``, ``bnext``, ``bprev``), the buffers
listed to re-read (``bflag``, ``dbuf[:ndb[0]]``), a per-link scratch of the check (``cm``),
the requests the step's allowed links were given (``nrq[0]``; ``nrq[1]``: 1 if a link got
several), per link its oldest movable
request (``best``, a segment; -1: none), kept with ``mc``; per port a bitmap of the nodes
whose link has a movable request (``bits[port * W + node // 64]``, ``W`` words a port: the
links :func:`~mpinet.engine.flit.port_links.port_links` visits). One rank's active list with
holes (:mod:`~mpinet.engine.flit.port_links`): the buffers emptied since the last step's
compaction (``emp[:hole[0]]``; ``hole[0]`` -1: not kept), ``hole[1]`` the holes in the list,
``hole[2]`` the end of its sorted part, ``hole[3]`` the most flits a step moves."""


def make_demand(nlinks: int, deg: int, check: bool = False, nbuf: int = 0) -> Demand:
    """Empty state for ``nlinks`` links of ``deg`` ports and, under sdc, ``nbuf`` buffers
    (0: none kept); ``check``: compare every step's counts with fresh ones (tests)."""
    nk = nlinks if nbuf else 0
    words = (nlinks // deg + 63) // 64 if nbuf else 0
    return Demand(np.zeros(nlinks, np.int64), np.zeros(deg, np.int64),
                  np.zeros(nlinks, np.uint8), np.empty(nlinks + 1, np.int64), np.zeros(1, np.int64),
                  np.array([int(check), 0, 0, 1], np.int64), np.zeros(deg, np.int64),
                  np.full((nlinks // deg, 4), -1, np.int64),
                  np.zeros(nlinks // deg, np.int64), np.full(nbuf, -1, np.int32),
                  np.full(nbuf, -2, np.int8), np.full(nbuf, -1, np.int32),
                  np.full(nbuf, -1, np.int32), np.full(nk, -1, np.int32),
                  np.zeros(nbuf, np.uint8), np.empty(nbuf, np.int32), np.array([-1, 0, 0, 0]),
                  np.empty(nbuf + 1, np.int32), np.zeros(1, np.int64),
                  np.zeros(nk, np.int64), np.zeros(2, np.int64),
                  np.full(nk, -1, np.int64), np.zeros(deg * words, np.int64))  # fmt: skip


@njit(cache=True, inline="always")
def mark_link(link, flag, dirty, nd):
    """List ``link`` to recount (once; -1: no link)."""
    if link >= 0:
        list_once(link, flag, dirty, nd)


@njit(cache=True, inline="always")
def list_if(m, i, flag, ids, n):
    """Append ``i`` to ``ids[:n[0]]`` if ``m`` and ``flag[i]`` does not say it is there, as
    :func:`~mpinet.engine.flit.layout.list_once` does but without a branch: ``i`` is written
    at ``n[0]`` always and counted only if appended (``ids`` has a slot more than it can
    hold; ``i`` must be an index of ``flag`` even if not ``m``). Why: the outcomes of
    :func:`~mpinet.engine.flit.kept_requests.mark_moved`'s tests depend on the data (a
    third to a half of what they visit is listed), so a branch on them mispredicts often."""
    k = n[0]
    ids[k] = i
    f = flag[i]
    a = 1 if m else 0
    n[0] = k + (a & (1 - f))
    flag[i] = f | a
