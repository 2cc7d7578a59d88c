"""sdc's end of a step (numba): :func:`~mpinet.engine.flit.step_end.settle` that lists what
the moves changed in its own passes over the step's rows and reads the changed buffers
again there.

Under sdc the compiled steps keep each buffer's request and each link's movable requests
between steps (:mod:`~mpinet.engine.flit.kept_requests`), and a step lists what its moves may
have changed, to read again and recount. Until session 11 that listing was a kernel of its
own (``mark_moved``) that walked the step's arrival, credit and release rows a second time
after ``settle`` had applied them, and the listed buffers were read again in one more pass
after the routing (``settle_buffers``). Here one pass over each kind of row both applies it
and lists what it changes, and a listed buffer is read again at once
(:func:`~mpinet.engine.flit.kept_requests.read_now`) while the moves left its records in
the cache, unless its front is a head not routed yet (read after the routing). Why: this
bookkeeping is sdc's gap to all-port on the port-model run (docs/performance.md, "sdc in
session 10": about 130 us a step, no layout of the same passes faster).

The same buffers and links are listed as before, in another order (which no result depends
on: a link's movable requests and its oldest are the same in any order of its list):

* an arrival's buffer when its segment is the buffer's front and became a request (its
  first flits, flits when it had none, its last under store-and-forward), tested before
  the step's drains: a segment that receives flits does not drain in that step (its tail
  has not left), and a segment that becomes the front only by a drain is in a buffer whose
  drained front, an allowed link's request, lists it anyway (:func:`mark_allowed`, after
  the drains);
* a VC's link when it gets credits back while below ``need`` (tested before they are
  added), or is released;
* the allowed links and their requests' buffers (:func:`mark_allowed`).
"""

from __future__ import annotations

from numba import njit

from mpinet.engine.flit import kernels as fk
from mpinet.engine.flit.kept_requests import read_now
from mpinet.engine.flit.layout import DEST, SAF, vc_id
from mpinet.engine.flit.port_demand import mark_link
from mpinet.engine.flit.step_end import check_step, drain_segments
from mpinet.prefetch import ahead


@njit(cache=True, error_model="numpy", _nrt=False, forceinline=True)
def settle(na, port, prm, segs, pkts, links, bufs, so, inc):
    """:func:`~mpinet.engine.flit.step_end.settle` under sdc, listing in ``inc`` what the
    moves changed (the module docstring); returns the number of ``so.new`` heads."""
    cnt, local, new, sbufs, rel, cred_l = so.cnt, so.local, so.new, so.bufs, so.rel, so.cred_l
    seg_out, seg_cnt, seg_recv, bocc, head = segs.out, segs.cnt, segs.recv, bufs.occ, bufs.head
    active, act, nact = bufs.active, bufs.act, bufs.nact
    bflag, dbuf, ndb, flag, dirty, nd = inc.bflag, inc.dbuf, inc.ndb, inc.flag, inc.dirty, inc.nd
    held, credit, nvc, need = links.held, links.credit, prm.nvc, prm.need
    saf, flits, nvcbuf, deg = prm.mode == SAF, prm.flits, prm.nvcbuf, prm.deg
    rdeg = 1.0 / deg
    breq, bport, bnext, bprev, lhead = inc.breq, inc.bport, inc.bnext, inc.bprev, inc.lhead
    nloc = cnt[fk.C_LOCAL]
    nn = 0
    for i in range(nloc):  # activated, new heads listed, flits added, new requests listed
        if i + 8 < nloc:  # the arrivals' segments and buffers, scattered: ahead of use
            ahead(prm.far, seg_out, local[i + 8, fk.LA_SEG])
            ahead(prm.far, active, local[i + 8, fk.LA_BUF])
        s, n, b = local[i, fk.LA_SEG], local[i, fk.LA_N], local[i, fk.LA_BUF]
        if seg_out[s] == -1:
            new[nn] = s
            nn += 1
        sbufs[i] = b
        if active[b] == 0:  # state.activate_one, written out (step_end.settle says why)
            active[b] = 1
            act[nact[0]] = b
            nact[0] += 1
        c0, r0 = seg_cnt[s], seg_recv[s]
        seg_cnt[s] = c0 + n
        seg_recv[s] = r0 + n
        bocc[b] += n
        # a front that became a request (else: a request before and after, or none)
        if head[b] == s and (c0 == 0 or r0 == 0 or (saf and b < nvcbuf and r0 + n == flits)):
            read_now(b, saf, flits, nvcbuf, deg, rdeg, head, seg_cnt, seg_recv, seg_out, breq,
                     bport, bnext, bprev, lhead, flag, dirty, nd, bflag, dbuf,
                     ndb)  # fmt: skip
    for i in range(cnt[fk.C_REL]):
        k = rel[i]
        held[k] = 0
        mark_link(k // nvc, flag, dirty, nd)
    for i in range(cnt[fk.C_CRED_L]):  # a buffer returns credits once a step: one row a VC
        k = cred_l[i, 0]
        if credit[k] < need:  # a head may get the VC now
            mark_link(k // nvc, flag, dirty, nd)
        credit[k] += cred_l[i, 1]
    drain_segments(segs, pkts, bufs, so)
    mark_allowed(na, prm, segs, links, bufs, so, inc)  # after the credits: it reads them
    check_step(na, port, prm, links, bufs, so.touched, nloc, sbufs, so.out)
    return nn


@njit(cache=True, inline="always")
def _unchanged(s, link, nvc, seg_cnt, seg_sent, seg_ovc, credit):
    """Whether request ``s``, which moved a flit over ``link`` (capacity 1), left the link's
    movable requests (so its count and oldest) and its buffer's request as they were: it
    still has flits (so it is still its buffer's front: a segment drains only empty), and
    goes into its destination or on a VC it held before the step (``seg_sent`` above 1: no
    VC taken now, so no other head's allocation changed) that still has a credit after
    the step's credits. A third of the allowed links on the port-model run."""
    if seg_cnt[s] <= 0:
        return False
    ovc = seg_ovc[s]
    return ovc == DEST or (seg_sent[s] > 1 and credit[vc_id(link, ovc, nvc)] > 0)


@njit(cache=True, error_model="numpy", _nrt=False)
def mark_allowed(na, prm, segs, links, bufs, so, inc):
    """After the step's credits are applied and before the routing: the ``na`` allowed links
    listed to recount and the buffers of the requests they were given (their flits left, a
    tail drained them) read again (:func:`read_now`). When every allowed link had capacity 1
    (``inc.nrq[1]`` 0: link ``touched[j]``'s request is ``rq[j]``), a link whose request
    left it :func:`_unchanged` is skipped (its count and oldest are kept). The rest of the
    listing (arrivals, credits, releases) is made where :func:`settle` applies them."""
    saf, flits, nvcbuf, deg = prm.mode == SAF, prm.flits, prm.nvcbuf, prm.deg
    rdeg = 1.0 / deg
    head, seg_cnt, seg_recv, seg_out, seg_buf = bufs.head, segs.cnt, segs.recv, segs.out, segs.buf
    breq, bport, bnext, bprev, lhead = inc.breq, inc.bport, inc.bnext, inc.bprev, inc.lhead
    bflag, dbuf, ndb, flag, dirty, nd = inc.bflag, inc.dbuf, inc.ndb, inc.flag, inc.dirty, inc.nd
    touched, rq = so.touched, so.rq
    several = inc.nrq[1]  # some link got several requests
    seg_sent, seg_ovc, credit, nvc = segs.sent, segs.ovc, links.credit, prm.nvc
    for j in range(na if not several else inc.nrq[0]):
        s = rq[j]
        if several:
            if j < na:
                mark_link(touched[j], flag, dirty, nd)
        elif _unchanged(s, touched[j], nvc, seg_cnt, seg_sent, seg_ovc, credit):
            continue
        else:
            mark_link(touched[j], flag, dirty, nd)
        read_now(seg_buf[s], saf, flits, nvcbuf, deg, rdeg, head, seg_cnt, seg_recv, seg_out,
                 breq, bport, bnext, bprev, lhead, flag, dirty, nd, bflag, dbuf,
                 ndb)  # fmt: skip
