"""The iq router model's arrays by name (docs/iq-router.md): one bundle, :class:`IQArrays`,
and the run's constants, :class:`IQParams`, as :mod:`~mpinet.engine.flit.layout` names the
ideal model's.

A rank keeps the arrays of its own nodes ``lo .. hi - 1`` only, numbered from its first
(``node`` below is ``global node - lo``; the active list holds these numbers), the links'
too: the neighbour and reverse-port tables ``nbt``/``rev``, ``lcount`` and ``load`` of its
nodes' links out (``node * degree + port``), and each channel by the port that reads it (a
flit's ``fc`` by the input port it reaches, a credit's ``cr`` by the output port it
returns to), so a link from another rank's node needs no row here: its flits and credits
come in the exchange naming the port they reach (``global node * degree + port``).

Index formulas. Each node is a router with ``nport = degree + 1`` ports, port ``degree`` its
terminal (injection in, ejection out). Input VC ``iv = (node * nport + port) * nvc + v``; its
buffer ``ib[iv * bsz : (iv + 1) * bsz]`` a ring (front ``hv[iv, IBH]``, ``hv[iv, IBN]`` flits;
``hv[iv]`` is the input VC's row of the fields a body flit's hop touches, one 64-byte line: the
ring, its state ``VST``, output port and VC ``VOP``/``VOV`` and switch allocation's item
``SA_T``/``SA_RD``/``SA_SEQ``, the columns named in :mod:`~mpinet.engine.flit.iq_lists`; ``va[iv]``
the same for a head: its route ``VRP``/``VLO``/``VHI`` and VC allocation's item). The
downstream buffer states (BookSim's ``BufferState``): ``(node * nport + out_port) * nvc + v``
for a router's outputs, then ``nnode * nport * nvc + node * nvc + v`` for the terminals'
injection channels. Channels are rings of ``latency + 1`` slots indexed by the cycle (a flit
sent at ``t`` is taken in at ``t + latency + 1``, as BookSim's channels deliver): ``fc`` the
links by (node, port), ``ec``/``ic`` ejection and injection (latency 1), ``cr``/``tcr``/``ecr``
the credits going back (masks of VCs). A flit is the integer ``packet slot * fl + flit index``;
on a link (``fc``) and in an output queue (``ob``) it travels with its VC as one word
(``f << 6 | v``). The crossbar's ring ``xr`` (a row a slot: flit and VC, output port,
completion cycle, ready step) is used only where the crossbar takes more than a cycle or a
cycle has several internal steps (``IQParams.dx`` 0); otherwise switch allocation queues the
flit at its output at once and the internal step sends its credits (no ``cq`` between).

Pipeline items per input VC, columns of a row (``rt[iv]``, ``va[iv]``, ``hv[iv]`` for route
computation, VC and switch allocation): ``*_T`` is -2 (none), -1 (waiting, evaluable from
internal step ``*_RD``) or the cycle its stage completes; ``bt[node * 4 + stage]`` the completion
cycle of the router's batch in a stage (-1: none), since BookSim's stage queues evaluate
nothing new while a batch is in flight. ``*_SEQ`` an item's place in its stage's queue (from
the router's counter ``qseq``): BookSim's queues are first in, first out, and with output
speedup their order is the order flits enter a shared output queue.

Events (bit sets, :mod:`~mpinet.engine.flit.iq_lists`): ``fm``/``cm`` per arrival slot
(``cycle % sl``; words of ``node * nport + port``) the flits reaching an input port (the
terminal's injection channel: port ``degree``) and the credit messages reaching an output
port; ``tm`` per cycle parity the terminals with an ejected flit or credits; ``pm[slot]``
the count of the credits due at a ``credit_delay`` slot (their port and VCs in ``pc``, in the
order read); ``obm``/``cqm`` the non-empty output and credit
queues (``obp``: the output queues that got their first flit in this cycle's internal step,
sent from the next cycle on, under ``dx``); ``rb`` the routers with an item in a stage or the
crossbar (``rl`` its list);
``actb`` the active nodes (``act`` rebuilt from it in node order). ``fvm[node * nport +
out_port]``: the router's output VCs not in use (bit ``v``: ``bs_use`` 0), so VC allocation
reads one word where it scanned a route's VCs (the terminals' injection states have none).
"""

from __future__ import annotations

from collections import namedtuple
from math import ceil
from typing import Any

import numpy as np

from mpinet.engine.flit import iq_lists as il
from mpinet.engine.flit.iq_alloc import INPUT_FIRST, ISLIP, OUTPUT_FIRST
from mpinet.engine.flit.iq_lists import magic

IQParams = namedtuple(
    "IQParams",
    (  # namedtuple takes the names space-separated
        "nnode deg nport nvc bsz fl lat sl cs rd vad sad xd cd isp osp spec wftc vak sak "
        "iters xqs obs cqs record_hops lo hi mport lport mvc lvc mfl lfl misp lisp mosp losp dx rot"
    ),
)
IQParams.__doc__ = """The run's constants: nodes, degree, ports (degree + 1), VCs, slots per
VC, flits per packet, channel latency and its ring size, credit ring size, the delays
(routing, VC and switch allocation, crossbar, credit), speedups, speculative,
wait_for_tail_credit, the allocator codes and iterations, ring sizes of the crossbar,
output and credit queues, whether hop rows are kept, the rank's nodes ``lo .. hi - 1`` (the
others' flits and credits go in the exchange, :mod:`~mpinet.engine.flit.iq_ranks`), then
:func:`~mpinet.engine.flit.iq_lists.magic` of the ports, VCs, flits and speedups (the
kernels divide by them with :func:`~mpinet.engine.flit.iq_lists.div`), and ``dx``: a crossbar
of one cycle and one internal step a cycle, where switch allocation puts a flit in its output
queue at once (:func:`~mpinet.engine.flit.iq_moves.sa_update`) and the internal step sends
its credit messages (:func:`~mpinet.engine.flit.iq_write.send_credit`), and ``rot``: BookSim's
number of state port ``q`` is ``q + rot`` modulo the ports (:mod:`~mpinet.engine.flit.iq_ports`)."""

FIELDS = (
    # input VCs
    "ib",
    "hv",
    "va",
    "rt",
    "sa_res",
    "sa_spec",
    # per stage, the input VCs with an item (:mod:`~mpinet.engine.flit.iq_lists`)
    "m_rt",
    "m_va",
    "m_sa",
    # per router
    "qseq",
    "bt",
    "va_pin",
    "va_pout",
    "sa_pin",
    "sa_pout",
    "sw_rr",
    "xr",
    "xqh",
    "xqn",
    "ob",
    "obh",
    "obn",
    "cq",
    "cqh",
    "cqn",
    "oqc",
    "pc",
    # downstream buffer states
    "bs_cred",
    "bs_use",
    "bs_tail",
    "fvm",
    # channels
    "fc",
    "ec",
    "ecv",
    "ic",
    "icv",
    "cr",
    "tcr",
    "ecr",
    "ecr_p",
    # terminals
    "sq_h",
    "sq_t",
    "sq_k",
    "sq_vc",
    "last_vc",
    # packets
    "pk_pid",
    "pk_src",
    "pk_dst",
    "pk_inj",
    "pk_adm",
    "pk_hops",
    "pk_state",
    "pk_hdr",
    "pk_next",
    "pk_away",
    "pk_free",
    "pk_nfree",
    # tables, work, outputs
    "nbt",
    "rev",
    "lcount",
    "sport",
    "work",
    "act",
    "inact",
    "nact",
    "actb",
    # events (bit sets, :mod:`~mpinet.engine.flit.iq_lists`): the phases visit what moves
    "fm",
    "cm",
    "tm",
    "pm",
    "obm",
    "obp",
    "cqm",
    "rb",
    "rl",
    "load",
    "istep",
    # allocator scratch
    "rin",
    "rout",
    "rpri",
    "rlab",
    "grant",
    "best_in",
    "best_out",
    "sa_map",
    "ei_grant",
    "order",
    "ro",
    "mv",
    # the flits and credits for other ranks (rows ``wo[:wn[0]]``, pairs ``co[:cn[0]]``), and
    # per input VC the packet slot of the flits that come to it from another rank
    "wo",
    "wn",
    "co",
    "cn",
    "rmap",
)
IQArrays = namedtuple("IQArrays", FIELDS)


def _words(n: int) -> int:
    """Words of a bit set over ``n`` items (:func:`~mpinet.engine.flit.iq_lists.words` in
    Python: calling the compiled one from here loaded its cache, 0.1-0.5 s of each plan)."""
    return (n + 63) // 64


def _rows(n: int, k: int, fill: int) -> np.ndarray:
    """An ``(n, k)`` int64 array (``k`` of 4 or 8) whose rows start on a 64-byte boundary, so
    that a row of 8 is one cache line (numpy aligns its data to 16 bytes only)."""
    buf = np.full(n * k + 8, fill, np.int64)
    off = (-buf.ctypes.data % 64) // 8
    return buf[off : off + n * k].reshape(n, k)


ALLOC_CODES = {"separable_input_first": INPUT_FIRST, "separable_output_first": OUTPUT_FIRST,
               "islip": ISLIP}  # fmt: skip


def make_params(n: int, deg: int, vcs: int, bsize: int, flits: int, iq, record_hops: bool,
                lo: int = 0, hi: int = -1, rot: int = 0):  # fmt: skip
    """The :class:`IQParams` of a run (``iq``: an
    :class:`~mpinet.engine.iq_config.IQConfig`) on the rank of nodes ``lo .. hi - 1``
    (``hi = -1``: every node; ``rot``: BookSim's number of a state port less its own,
    :func:`~mpinet.engine.flit.iq_ports.booksim_order`)."""
    nport = deg + 1
    lat = iq.channel_latency
    xd = iq.crossbar_delay
    isp, osp = iq.input_speedup, iq.output_speedup
    steps = ceil(iq.internal_speedup)
    xq = nport * max(isp, osp) * (xd + 2) * steps
    return IQParams(n, deg, nport, vcs, bsize, flits, lat, lat + 1, iq.credit_delay + 1,
                    iq.routing_delay, iq.vc_alloc_delay, iq.sw_alloc_delay, xd, iq.credit_delay,
                    isp, osp, iq.speculative, iq.wait_for_tail_credit,
                    ALLOC_CODES[iq.vc_allocator], ALLOC_CODES[iq.sw_allocator], iq.alloc_iters,
                    xq, vcs * bsize + nport * max(isp, osp) * steps + 2,
                    vcs * bsize + 2 * steps + 4, int(record_hops), lo, n if hi < 0 else hi,
                    *magic(nport), *magic(vcs), *magic(flits), *magic(isp),
                    *magic(osp), int(xd == 1 and iq.internal_speedup == 1), int(rot))  # fmt: skip


def make_arrays(prm: IQParams, nbt: np.ndarray, rev: np.ndarray, lcount: np.ndarray,
                hw: int, packets: int, width: int = 1,
                sport: np.ndarray | None = None) -> IQArrays:  # fmt: skip
    """Every array of a run, empty (``nbt``, ``rev``, ``lcount``: the rows of the rank's
    nodes; ``packets``: packet slots to start with; ``width``: a row's words in the exchange,
    :mod:`~mpinet.engine.flit.iq_ranks`; ``sport``: each own node's state port of each of
    its ports, ``(own, degree)``, None: the same, :func:`~.iq_ports.state_ports`; the tables
    in state ports). The allocators' round-robin pointers start at BookSim's port 0 (state
    port ``-rot``: the rotation leaves every round-robin choice as BookSim's)."""
    nnode, deg, nport, nvc, bsz = prm.nnode, prm.deg, prm.nport, prm.nvc, prm.bsz
    own = prm.hi - prm.lo  # the rank's nodes: their arrays and their links'
    niv, nrp = own * nport * nvc, own * nport
    i64 = lambda n, v=0: np.full(n, v, np.int64)  # noqa: E731
    nin = nport * max(nvc, prm.isp)
    nout = nport * max(nvc, prm.osp)
    nreq = max(nport * nvc * nvc, nport * prm.isp * nport * prm.osp)
    remote = own < nnode  # one rank: no exchange
    nout_links = own * deg if remote else 1
    hv = _rows(niv, il.HV, 0)  # an input VC's row (il.SA_T ...): see _rows
    hv[:, il.SA_T] = -2
    hv[:, il.VOP] = -1
    hv[:, il.VOV] = -1
    va = _rows(niv, il.VA, 0)  # a head's route and VC allocation item (il.VRP ...)
    va[:, il.VRP], va[:, il.VA_T], va[:, il.VA_EV] = -1, -2, -1
    rt = _rows(niv, il.RT, 0)  # route computation's item (il.RT_T ...)
    rt[:, il.RT_T] = -2
    sw_rr = np.tile(np.arange(nport * prm.isp) % prm.isp, own).astype(np.int64)
    if sport is None:
        sport = np.tile(np.arange(deg, dtype=np.int64), (own, 1))
    p0 = (nport - prm.rot) % nport  # the state port BookSim numbers 0
    a = dict(
        ib=i64(niv * bsz, -1),
        hv=hv,
        va=va,
        rt=rt,
        sa_res=i64(niv),
        sa_spec=i64(niv),
        qseq=i64(own),
        m_rt=np.zeros(own * _words(nport * nvc), np.uint64),  # >= _words(niv), per node
        m_va=np.zeros(own * _words(nport * nvc), np.uint64),  # >= _words(niv), per node
        m_sa=np.zeros(own * _words(nport * nvc), np.uint64),  # >= _words(niv), per node
        bt=i64(own * 4, -1),
        va_pin=i64(niv, p0 * nvc),  # over output VCs
        va_pout=i64(niv, p0 * nvc),  # over input VCs
        sa_pin=i64(nrp * prm.isp, p0 * prm.osp),  # over crossbar outputs
        sa_pout=i64(nrp * prm.osp, p0 * prm.isp),  # over crossbar inputs
        sw_rr=sw_rr,
        xr=_rows(own * prm.xqs, il.XR, 0),
        xqh=i64(own),
        xqn=i64(own),
        ob=i64(nrp * prm.obs),
        obh=i64(nrp),
        obn=i64(nrp),
        cq=np.zeros(nrp * prm.cqs, np.uint64),
        cqh=i64(nrp),
        cqn=i64(nrp),
        oqc=np.zeros(nrp, np.uint64),
        pc=np.zeros(2 * nrp * prm.cs, np.uint64),  # per slot: (port, VCs), as read
        bs_cred=i64(niv + own * nvc, bsz),
        bs_use=i64(niv + own * nvc),
        bs_tail=i64(niv + own * nvc),
        fvm=np.full(nrp, ~np.uint64(0) >> np.uint64(64 - nvc), np.uint64),
        fc=i64(own * deg * prm.sl, -1),
        ec=i64(own * 2, -1),
        ecv=i64(own * 2),
        ic=i64(own * 2, -1),
        icv=i64(own * 2),
        cr=np.zeros(own * deg * prm.sl, np.uint64),
        tcr=np.zeros(own * 2, np.uint64),
        ecr=np.zeros(own * 2, np.uint64),
        ecr_p=np.zeros(own, np.uint64),
        sq_h=i64(own, -1),
        sq_t=i64(own, -1),
        sq_k=i64(own),
        sq_vc=i64(own, -1),
        last_vc=i64(own, -1),
        pk_pid=i64(packets),
        pk_src=i64(packets),
        pk_dst=i64(packets),
        pk_inj=i64(packets),
        pk_adm=i64(packets),
        pk_hops=i64(packets),
        pk_state=i64(packets),
        pk_hdr=np.zeros((packets, max(hw, 1)), np.int64),
        pk_next=i64(packets, -1),
        pk_away=i64(packets),
        pk_free=np.arange(packets - 1, -1, -1, dtype=np.int64),
        pk_nfree=i64(1, packets),
        nbt=np.ascontiguousarray(nbt, np.int64).ravel(),
        rev=np.ascontiguousarray(rev, np.int64).ravel(),
        lcount=np.ascontiguousarray(lcount, np.int64).ravel(),
        sport=np.ascontiguousarray(sport, np.int64).ravel(),
        work=i64(own),
        act=i64(own),
        inact=i64(own),
        nact=i64(1),
        actb=np.zeros(_words(own), np.uint64),
        fm=np.zeros(prm.sl * _words(nrp), np.uint64),
        cm=np.zeros(prm.sl * _words(nrp), np.uint64),
        tm=np.zeros(2 * _words(own), np.uint64),
        pm=i64(prm.cs),
        obm=np.zeros(_words(nrp), np.uint64),
        obp=np.zeros(_words(nrp), np.uint64),
        cqm=np.zeros(_words(nrp), np.uint64),
        rb=np.zeros(_words(own), np.uint64),
        rl=i64(own),
        load=i64(own * deg),
        istep=i64(1),
        rin=i64(nreq),
        rout=i64(nreq),
        rpri=i64(nreq),
        rlab=i64(nreq),
        grant=i64(nreq),
        best_in=i64(nin, -1),
        best_out=i64(nout, -1),
        sa_map=i64(nport * prm.isp * nport * prm.osp, -1),
        ei_grant=i64(nport * prm.isp, -1),
        order=i64(nport * nvc),
        ro=i64(3),  # run_block's scratch: a head's (port, VC range), flits moved
        mv=i64(1),
        wo=np.zeros((nout_links, width), np.int64),
        wn=i64(1),
        co=np.zeros((nout_links, 2), np.int64),
        cn=i64(1),
        rmap=i64(niv if remote else 1, -1),
    )
    return IQArrays(**a)


def event_bytes(prm: IQParams) -> int:
    """Bytes of the event bit sets sized in words of the rank's nodes or ports (``actb``,
    ``rb``, ``tm``, ``fm``, ``cm``, ``obm``, ``obp``, ``cqm``) and of ``pm``'s counts: not
    linear in the nodes, so the memory plan counts them apart (:mod:`mpinet.jobs.plans_iq`)."""
    own = prm.hi - prm.lo
    wn, wp = _words(own), _words(own * prm.nport)
    return 8 * (4 * wn + (2 * prm.sl + 3) * wp + prm.cs)


PK_FIELDS = ("pk_pid", "pk_src", "pk_dst", "pk_inj", "pk_adm", "pk_hops", "pk_state", "pk_next",
             "pk_away")  # fmt: skip


def grow_packets(s: Any, more: int, fields: tuple = PK_FIELDS) -> Any:
    """``s`` with ``more`` packet slots added (free): its packet arrays ``fields``, ``pk_hdr``
    and the free list (the general path's bundle, or the lean path's with its fields)."""
    old = s.pk_pid.size
    new = old + more
    rep = {}
    for f in fields:
        a = np.full(new, -1 if f == "pk_next" else 0, np.int64)
        a[:old] = getattr(s, f)
        rep[f] = a
    h = np.zeros((new, s.pk_hdr.shape[1]), np.int64)
    h[:old] = s.pk_hdr
    rep["pk_hdr"] = h
    k = int(s.pk_nfree[0])
    free = np.empty(new, np.int64)
    free[:k] = s.pk_free[:k]
    free[k : k + more] = np.arange(new - 1, old - 1, -1)
    s.pk_nfree[0] = k + more
    rep["pk_free"] = free
    return s._replace(**rep)
