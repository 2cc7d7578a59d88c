"""The lean iq path's arrays by name (docs/iq-router.md, "Session 18: the lean path"): one
bundle, :class:`LeanArrays`, for :func:`~mpinet.engine.flit.iq_lean.run_block`, the iq step
in the shape of session 17's exact prototype, on the keys
:func:`~mpinet.engine.flit.iq_lean_run.why_not_lean` accepts (one-cycle stages, iSLIP of one
iteration, no speedups, one rank).

Ports are the general path's state ports (:mod:`~mpinet.engine.flit.iq_ports`), nodes
``0 .. nnode - 1``; ``nport = degree + 1``, port ``degree`` the terminal. Input VC
``iv = (node * nport + port) * nvc + v``, its ring ``buf[iv * bsz ...]``; a flit is the word
``packet slot << FS | flit index``. ``hv[iv]``: ring head and count, its output
(``port << 6 | VC``, -1 none), the first cycle it may go (``TOK``: VC allocation for a head
without an output, switch allocation after); ``rte[iv]`` its head's route (port ``RP``, -1:
not computed, and VC range ``RLO .. RHI - 1``).
``cred`` the downstream credits: ``(node * nport + out_port) * nvc + v`` for the routers'
outputs (the ejection's too), then ``nnode * nport * nvc + node * nvc + v`` for the
terminals' injection VCs; ``otl[k]`` (``wait_for_tail_credit``): VC ``k`` of ``cred`` held,
its tail sent, until its last credit is back. The events are lists per due cycle, rings of
slots: ``ck``/``cc`` the flits reaching an input VC (``input port << 6 | v``, the flit),
``kk`` the credits due (an index of ``cred``), ``dq`` the packets delivered (their tails
ejected). ``actb``: the routers holding flits, a bit set walked in node order;
``vm``/``pm``: per input port its non-empty VCs, per router its non-empty ports (where a
router's input VCs fit a word, ``pm`` holds them instead, bit ``port * nvc + v``, and ``vm``
is not kept).
``misc[0]``: the link flits granted this cycle (they leave on the next: that cycle's step
row and link loads), ``misc[1]``: the terminals in ``tact``. ``stb[node, k]``: stages of
several cycles, the cycle of the router's last batch of route computation (``k`` 0), the
crossbar (1) (:func:`~mpinet.engine.flit.iq_lean_io.batch`), VC allocation (2) and switch
allocation (3) (under internal speedup: the batch's step, its update's step at ``4 + k`` and
cycle at ``8 + k``, :mod:`~mpinet.engine.flit.iq_lean_speedup`); ``sdw``/``sdn`` a
router's switch grants kept for the batch's update; ``wm`` (as ``vm``, or ``pm`` where it
holds the VCs) the heads waiting, out of pass 1 until their ``TOK``, ``wq``/``wn`` a ring of
them per due cycle. ``internal_speedup``
(:mod:`~mpinet.engine.flit.iq_lean_speedup`): ``spa`` the fraction carried and the speedup,
``spg`` the next internal step's number and the most steps a cycle (with stages of several
cycles, then the first steps of this and the next cycles), ``csnd``/``cstp`` per
input port the cycle its last credit message goes and the step that made it. ``vpd`` per
output port the VCs granted by a VC allocation batch in flight (speculation, "Session 24").
"""

from __future__ import annotations

from collections import namedtuple
from math import ceil

import numpy as np

from mpinet.engine.flit import iq_state

#: an input VC's row: ring head, flits, output, next cycle; its head's route: port, VC range
HD, CNT, OUT, TOK = range(4)
RP, RLO, RHI = range(3)
#: a flit's word: packet slot << FS | flit index, 32 bits (packets of at most 2 ** FS flits,
#: fewer than 2 ** (31 - FS) packet slots: :data:`MAX_SLOTS`)
FS = 6
MAX_SLOTS = 1 << (31 - FS)

FIELDS = (  # namedtuple takes the names space-separated
    "buf hv rte vm pm vrr ofree cred otl sa_pin sa_pout va_pin va_pout "
    "rin rout rlab grant bo bi smap ro hj hq hm opc "
    "ck cc cn kk kn dq dn actb tact ton misc "
    "sq_h sq_t sq_k sq_vc last_vc "
    "pk_pid pk_src pk_dst pk_inj pk_adm pk_hops pk_state pk_hdr pk_next pk_free pk_nfree "
    "nbt rev lcount sport down up load "
    "skey vkey osend lf wo wk rop xo stb sdw sdn wm wq wn spa spg csnd cstp vpd"
)
LeanArrays = namedtuple("LeanArrays", FIELDS)

PK_FIELDS = ("pk_pid", "pk_src", "pk_dst", "pk_inj", "pk_adm", "pk_hops", "pk_state", "pk_next")


def make_lean(prm, nbt, rev, lcount, sport, hw: int, packets: int,
              speedup: float = 1.0) -> LeanArrays:  # fmt: skip
    """Every array of a lean run, empty (``prm``: the run's
    :class:`~mpinet.engine.flit.iq_state.IQParams`; the tables in state ports, as
    :func:`~mpinet.engine.flit.iq_state.make_arrays` takes them). The allocators' pointers
    start at BookSim's port 0, as the general path's. ``speedup``: ``internal_speedup``."""
    n, deg, npt, nv, bsz = prm.nnode, prm.deg, prm.nport, prm.nvc, prm.bsz
    niv, nq = n * npt * nv, npt * nv
    i64 = lambda k, v=0: np.full(k, v, np.int64)  # noqa: E731
    hv = np.zeros((niv, 4), np.int32)  # 16 bytes a row (ms:3,2: 50,400 rows); the route
    hv[:, OUT] = -1  # apart (read once a head)
    rte = np.full((niv, 4), -1, np.int32)
    p0 = (npt - prm.rot) % npt
    full = ~np.uint64(0) >> np.uint64(64 - nv)
    nbt = np.ascontiguousarray(nbt, np.int64).ravel()
    rev = np.ascontiguousarray(rev, np.int64).ravel()
    node = np.repeat(np.arange(n, dtype=np.int64), deg)
    down = i64(n * npt)  # a link's downstream input port (node * nport + port)
    up = i64(n * npt)  # an input port's credit: the upstream output's first index of cred
    link = np.flatnonzero(nbt >= 0)
    lp = link % deg
    down[node[link] * npt + lp] = nbt[link] * npt + rev[link]
    up[node[link] * npt + lp] = (nbt[link] * npt + rev[link]) * nv
    term = np.arange(n, dtype=np.int64)
    up[term * npt + deg] = niv + term * nv
    isp, osp = prm.isp, prm.osp  # input speedup: isp crossbar inputs a port, a VC pointer each
    # output speedup: a flit waits in its output queue at most one a credit of the output;
    # a crossbar of xd > 1 cycles: a batch in flight, then its own (the output queue too)
    xd = prm.xd
    wait = nv * bsz + (2 * xd if xd > 1 else 0) if osp > 1 or xd > 1 else 0
    multi = speedup != 1  # several internal steps: output and credit queues (a flit or a
    if multi:  # message waits at most one a credit), and a flit may go in its grant's cycle
        wait = max(wait, nv * bsz + 2)
    nar, nkr = prm.lat + 3 + wait, max(prm.lat + 2, 6 + wait) + prm.cd  # past the longest delay
    nkr += wait + prm.lat + 2 if multi else 0
    ndq = 4 if wait == 0 else 1 << (wait + 3).bit_length()  # the deliveries: a power of 2
    nreq = nq * nv + npt * isp * npt
    nk = niv if osp > 1 else 1  # the input VCs' places in the queues (iq_lean_spec)
    wheel = prm.rd > 1 or prm.vad > 1  # heads waiting over 1 cycle (a ring past the longest)
    nw = 1 << (2 * max(prm.rd, prm.vad) + 2).bit_length() if wheel else 1
    # internal speedup with stages of several cycles: the first steps of the next 2 d + 1
    # cycles (iq_lean_speedup.first)
    dmax = max(prm.rd, prm.vad, prm.sad, prm.xd)
    nah = 2 * dmax + 2 if multi and dmax > 1 else 0
    a = dict(
        buf=np.zeros(niv * bsz, np.int32),  # 32-bit words: half the lines (ms:3,2: 1.6 MB)
        hv=hv,
        rte=rte,
        vm=np.zeros(n * npt, np.uint64),
        pm=np.zeros(n, np.uint64),
        # the pointers 32-bit (the lines a visit reads); a crossbar input's VC pointer starts
        # at its first VC (VC v goes through input v % isp), as the general path's sw_rr
        vrr=np.tile(np.arange(npt * isp, dtype=np.int32) % isp, n),
        ofree=np.full(n * npt, full, np.uint64),
        cred=np.full(niv + n * nv, bsz, np.int32),
        otl=np.zeros(niv + n * nv, np.uint8),  # wait_for_tail_credit: the tail sent
        sa_pin=np.full(n * npt * isp, p0 * osp, np.int32),  # over the crossbar outputs
        sa_pout=np.full(n * npt * osp, p0 * isp, np.int32),  # over the crossbar inputs
        va_pin=np.full(niv, p0 * nv, np.int32),
        va_pout=np.full(niv, p0 * nv, np.int32),
        rin=i64(nreq),
        rout=i64(nreq),
        rlab=i64(nreq),
        grant=i64(nreq),
        bo=i64(max(nq, npt * osp), -1),
        bi=i64(npt * max(nv, isp), -1),
        smap=i64(npt * isp * npt, -1),
        ro=i64(3),
        hj=i64(nq),  # VC allocation's heads this visit: input VC, output port, free VCs
        hq=i64(nq),
        hm=np.zeros(nq, np.uint64),
        opc=i64(npt),  # heads a port
        ck=i64(nar * n * npt),
        cc=np.zeros(nar * n * npt, np.int32),
        cn=i64(nar),
        kk=i64(nkr * 3 * n * npt),
        kn=i64(nkr),
        dq=i64(ndq * n),
        dn=i64(ndq),
        actb=np.zeros((n + 63) // 64, np.uint64),
        tact=i64(n),
        ton=i64(n),
        misc=i64(2),
        sq_h=i64(n, -1),
        sq_t=i64(n, -1),
        sq_k=i64(n),
        sq_vc=i64(n, -1),
        last_vc=i64(n, -1),
        pk_hdr=np.zeros((packets, max(hw, 1)), np.int64),
        pk_free=np.arange(packets - 1, -1, -1, dtype=np.int64),
        pk_nfree=i64(1, packets),
        nbt=nbt,
        rev=rev,
        lcount=np.ascontiguousarray(lcount, np.int64).ravel(),
        sport=np.ascontiguousarray(sport, np.int64).ravel(),
        down=down,
        up=up,
        load=i64(n * deg),
        skey=i64(nk),
        vkey=i64(nk),
        osend=i64(n * npt if wait else 1, -1),  # an output queue's last flit's cycle
        lf=i64(nar),  # the link flits sent a cycle (output queues)
        wo=i64(nreq),
        wk=i64(nreq),
        rop=i64(nreq),
        xo=(np.arange(npt) + prm.rot) % npt % osp,  # a port's crossbar output (BookSim's number)
        stb=np.full((n, 12 if multi else 4), -(1 << 40), np.int64),  # (before any cycle)
        sdw=i64(n * npt * isp if prm.sad > 1 else 1),
        sdn=i64(n if prm.sad > 1 else 1),
        wm=np.zeros(n * npt if wheel else 1, np.uint64),
        wq=np.zeros((nw, niv) if wheel else (1, 1), np.int64),  # (a row a due cycle)
        wn=i64(nw),
        spa=np.array([0.0, float(speedup)]),
        spg=np.array([0, ceil(speedup)] + [0] * nah, np.int64),
        csnd=i64(n * npt if multi else 1, -1),
        cstp=i64(n * npt if multi else 1, -1),
        # speculation with vc_alloc_delay > 1: the output VCs VC allocation's batch in flight
        # granted, still free to the speculative bids until its update (iq_lean_spec.pend)
        vpd=np.zeros(n * npt if prm.spec and prm.vad > 1 else 1, np.uint64),
    )
    for f in PK_FIELDS:
        a[f] = i64(packets, -1 if f == "pk_next" else 0)
    return LeanArrays(**a)


def grow_packets(s: LeanArrays, more: int) -> LeanArrays:
    """``s`` with ``more`` packet slots added (free)."""
    return iq_state.grow_packets(s, more, PK_FIELDS)
