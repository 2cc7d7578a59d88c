"""The flit engine's state by name: its bundles of arrays and its index formulas, once.

Every kernel of a step (:mod:`~mpinet.engine.flit.kernels`, :mod:`~mpinet.engine.flit.step_end`,
:mod:`~mpinet.engine.flit.route_io`, the compiled steps of :mod:`~mpinet.engine.flit.chunk`
and the live deadlock scan) takes the rank's arrays as five bundles, named tuples that numba
compiles to structs of arrays (a field read costs what an argument read costs):

* :class:`Segments`: the segment pool (one segment: the flits of one packet in one buffer);
* :class:`Packets`: the packet records on this rank and their router headers;
* :class:`Links`: per output link and per VC of it, the sender's side;
* :class:`Buffers`: per input buffer (VC buffers, then source queues) its FIFO of segments;
* :class:`StepOut`: a step's scratch and its outputs (requests, arrivals, credits, rows);

and the run's constants as :class:`Params`. A bundle is rebuilt only when a pool grows
(:meth:`~mpinet.engine.flit.state.FlitState.reserve`); numba caches kernels on named tuples
like any signature. Two costs, measured, shape how the kernels use them: a kernel takes its
arrays out of the bundles once, before its loops (numba copies and reference-counts a whole
bundle wherever one is handed to a function inlined in a loop: ``move`` ran 14x slower), so
per-request helpers take arrays; and numba's dispatcher types every array of every bundle
on each call from Python (about 30 us for a step's bundles), which the multi-rank steps
avoid (:class:`mpinet.engine.flit.ranks.Direct`).

Index formulas (docs/switching.md): the rank's links are ``(node - lo) * degree + port``; a
link's VC ``v`` is ``link * V + v`` (the sender's credit counter and hold flag); the VC
buffers of the rank are numbered as the links *into* its nodes, ``(w - lo) * degree + q``
times ``V`` plus ``v``; the source queue of (node, port) is ``nvcbuf + link``.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

Segments = namedtuple(
    "Segments",
    ["pkt", "cnt", "recv", "sent", "next", "buf", "out", "ovc", "vlo", "vhi", "hops", "age",
     "free", "nfree"],
)  # fmt: skip
Segments.__doc__ = """The segment pool: per segment its packet, flits present (``cnt``), received
and sent, the next segment of its buffer, its buffer, its output link (-1: not routed), the VC
it took there (``NO_VC``/``DEST``), the VCs its policy allows ``[vlo, vhi)``, the hops of its
packet's head at its buffer, its packet's injection step (``age``, set when the segment is made:
an age compared without the packet record); ``free[:nfree[0]]`` the free segments."""

Packets = namedtuple(
    "Packets", ["pid", "src", "dst", "inj", "adm", "state", "nseg", "hdr", "free", "nfree"]
)
Packets.__doc__ = """The packet records: id, source, destination, injection step, the step its
head left the source queue (``adm``), the VC policy's state, its segments on this rank, its
router header (``hdr``, (records, words)); ``free[:nfree[0]]`` the free records."""

Links = namedtuple(
    "Links", ["nbt", "cap", "down", "credit", "held", "load", "flits", "nreq", "start"]
)
Links.__doc__ = """Per output link: the node it leads to (-1: none), its capacity in flits per
step, the receiver's VC 0 buffer (relative to this rank's first), flits sent (trace window,
``load``; this step, ``flits``), this step's requests (``nreq``, their bucket ``start``); per
VC of a link (``link * V + v``): the sender's ``credit`` and ``held`` (a packet holds it)."""

Buffers = namedtuple(
    "Buffers", ["head", "tail", "occ", "active", "act", "nact", "ucred", "park", "pwait"]
)
Buffers.__doc__ = """Per input buffer: its FIFO of segments (``head``/``tail``), flits held
(``occ``), whether it is in the active list ``act[:nact[0]]`` or parked (``active``; the park
list ``park[:nact[1]]``, ``nact[2]`` parked: :mod:`~mpinet.engine.flit.park`); per VC buffer
the sender's credit counter (``ucred``, relative as ``Links.down``); per VC of a link the
buffer parked for its credits (``pwait``)."""

StepOut = namedtuple(
    "StepOut",
    ["touched", "allow", "rq", "rq_prev", "local", "wire", "deliv", "cred_l", "cred_r", "rel",
     "drain", "hop", "cnt", "out", "bufs", "new", "node", "route", "rhdr"],
)  # fmt: skip
StepOut.__doc__ = """A step's scratch and outputs: links with requests (``touched``), which may
send (``allow``), the requests bucketed by link (``rq``, chained by ``rq_prev``); the moves'
lists (local arrivals, wire rows to other ranks, deliveries, credits local and remote, VC
releases, drained segments, hop rows) counted in ``cnt`` (``C_*`` of the kernels); a model
check's ``out``; the buffers checked (``bufs``); the heads to route (``new``); per node of
the rank, -1 between steps, the k-port choice's chains (``node``); the routing's scratch
(``route``, 11 rows of one word per head, ``rhdr`` their headers: the compiled steps route
without allocating)."""

Params = namedtuple(
    "Params",
    ["mode", "flits", "nvc", "need", "deg", "lo", "hi", "nvcbuf", "bsize", "kind", "k",
     "record_hops", "far"],
    defaults=(None,),
)  # fmt: skip
Params.__doc__ = """The run's constants (int64): switching mode, flits per packet, VCs per
link, free slots a head needs, degree, the rank's nodes ``[lo, hi)``, VC buffers on the rank,
slots per VC, port model and its ``k``, whether hop rows are kept (0/1); ``far``: True where
the kernels prefetch, None where they do not (:func:`far`; a type, so each kind compiles
apart: :func:`mpinet.prefetch.ahead`)."""

#: the fewest VC buffers on a rank for which the kernels of a step prefetch: below it the
#: rank's state stays in a core's caches from one step to the next (hypercube:8 has 4,096,
#: ms:3,2 40,320), and the prefetches cost more than the misses they hide (docs/performance.md,
#: "hypercube:8 at light load in session 9")
PREFETCH_MIN = 1 << 14


def far(nvcbuf: int) -> bool | None:
    """:attr:`Params.far` of a rank with ``nvcbuf`` VC buffers."""
    return True if nvcbuf >= PREFETCH_MIN else None


#: ``seg_ovc`` before the head crossed the output link, and for a hop into the destination
NO_VC, DEST = -1, -2
#: switching codes
SAF, CUT, WORM = 0, 1, 2
#: port model codes
ALL, KPORT, SDC = 0, 1, 2


#: ``x & POS`` is ``x`` for any index here, and tells LLVM that it is not negative: numba's
#: wraparound of a negative index (3 instructions an index) is then not compiled (one-port's
#: choice and check, docs/performance.md "One-port in session 21")
POS = (1 << 62) - 1


@njit(cache=True, inline="always")
def link_id(node, port, lo, deg):
    """The rank's link leaving ``node`` by ``port``."""
    return (node - lo) * deg + port


@njit(cache=True, inline="always")
def link_node(link, lo, deg):
    """The node a link of the rank leaves."""
    return link // deg + lo


@njit(cache=True, inline="always")
def link_port(link, deg):
    """The port of a link."""
    return link % deg


@njit(cache=True, inline="always")
def quotient(a, d, rd):
    """``a // d`` for ``0 <= a < 2**40``, ``d >= 1``, by a multiply with ``rd = 1.0 / d``
    (computed once per kernel call) and one correction: a 64-bit integer division costs
    40-90 cycles, and the port models' kernels take a link's node or port for every link
    with requests (measured on ms:3,2 k-port:2: the divisions were a third of a step).
    ``a * rd`` is within one of ``a / d`` for such ``a``."""
    q = np.int64(a * rd)
    r = a - q * d
    if r < 0:
        q -= 1
    elif r >= d:
        q += 1
    return q


@njit(cache=True, inline="always")
def vc_id(link, v, nvc):
    """VC ``v`` of ``link`` (the sender's credit counter and hold flag; for a link into a
    node of the rank, its VC buffer)."""
    return link * nvc + v


@njit(cache=True, inline="always")
def allocate_vc(link, s, p, nvc, need, nbt, pkt_dst, seg_vlo, seg_vhi, held, credit):
    """VC allocation for a head about to cross ``link``: ``DEST`` into its destination,
    else the lowest VC its policy allows that no packet holds and that has the credits a
    head needs (``need``), else ``NO_VC`` (start-of-step state: nothing moved this step
    changes the answer, as credits and releases are applied after the moves)."""
    if nbt[link] == pkt_dst[p]:
        return DEST
    for v in range(seg_vlo[s], seg_vhi[s]):
        k = vc_id(link, v, nvc)
        if held[k] == 0 and credit[k] >= need:
            return v
    return NO_VC


@njit(cache=True, inline="always")
def list_once(i, flag, ids, n):
    """Append ``i`` to the list ``ids[:n[0]]`` unless ``flag[i]`` says it is in it: the
    active buffers, the links to recount, the buffers to re-read."""
    if flag[i] == 0:
        flag[i] = 1
        ids[n[0]] = i
        n[0] += 1


@njit(cache=True, inline="always")
def can_move(link, s, nvc, need, seg_ovc, seg_pkt, seg_vlo, seg_vhi, nbt, held, credit,
             pkt_dst):  # fmt: skip
    """Whether request ``s`` (a front segment with flits) can move flits over ``link`` now:
    into its destination, on its VC with a credit, or a head for which :func:`allocate_vc`
    finds a VC (start-of-step state). The one test of the port models' choices and of
    ``move``'s VC allocation; inlined (numba IR), so no call counts references."""
    ovc = seg_ovc[s]
    if ovc == DEST:
        return True
    if ovc >= 0:
        return credit[vc_id(link, ovc, nvc)] > 0
    return allocate_vc(link, s, seg_pkt[s], nvc, need, nbt, pkt_dst, seg_vlo, seg_vhi, held,
                       credit) != NO_VC  # fmt: skip


@njit(cache=True, inline="always")
def buffer_node(b, span, lo):
    """The node of VC buffer ``b`` (``span = degree * V``)."""
    return b // span + lo


@njit(cache=True, inline="always")
def source_queue(nvcbuf, link):
    """The source queue of a link's (node, port)."""
    return nvcbuf + link


# the rows a step writes (StepOut): their columns, and the step's counters
#: columns of a local arrival row: segment, flits, buffer
LA_SEG, LA_N, LA_BUF = 0, 1, 2
#: columns of a wire row (flits sent to another rank); then the router header
W_HEAD, W_PID, W_BUF, W_N, W_SRC, W_DST, W_INJ, W_ADM, W_HOPS, W_STATE, W_WIDTH = range(11)
#: columns of a delivery row (the run's packet rows)
D_WIDTH = 7
#: counters the step returns
C_FLITS, C_DELIV, C_LOCAL, C_WIRE, C_CRED_L, C_CRED_R, C_REL, C_HOPS, C_CROSS, C_DRAIN = range(10)
NCOUNT = 10
