"""Deadlocks of worms found while traffic is still injected (docs/switching.md, "Deadlock").

Every :data:`CHECK_EVERY` steps while packets are injected, the flit engine describes its
state to :func:`mpinet.engine.waitfor.dead_fronts` (the search the packet engine uses):

* a **front** is the front segment of a buffer (a VC buffer, named by its receiver,
  ``((w * degree + q) * V + v``, or a source queue, ``NV + w * degree + port``);
* it **waits** for: the credits of the VC it holds (buffer ``k``: a slot frees only when
  ``k``'s front moves); its own flits, when it has none (it is a worm's piece whose
  flits are upstream: the *allocation* ``A(k) = NV + k`` of its own VC, held by the
  worm's piece at the sender); or a VC for its head: the single VC its policy allows
  (``k`` if full, ``A(k)`` if another worm holds it), or, with several, a *choice*
  ``C(f) = 2 NV + f`` held by one pseudo-front per allowed VC, each waiting for that
  VC as above (the head moves when any of them frees);
* ``k`` is closed when it has fewer free slots than a head needs and its front is listed;
  ``A(k)`` while a listed front holds it; ``C(f)`` always. A resource whose holder is not
  listed counts as free (its holder counts as able to move).

A front that can move waits for nothing. Only fronts that were blocked at this check and
unchanged since the previous one are listed (the others count as able to move), so a
deadlock is found 16 to 31 steps after it forms, later where searches must be paced
(:data:`PACE`). Dead fronts never move again: the run
stops, and :func:`walk_cycle` names a cycle of the VCs they wait for.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from mpinet.engine.comm import max_op, sum_op
from mpinet.engine.flit import kernels as fk
from mpinet.engine.flit.layout import vc_id
from mpinet.engine.flit.park import PARKED
from mpinet.engine.waitfor import dead_fronts, walk_cycle
from mpinet.prefetch import ahead

CHECK_EVERY = 16
#: a search listing W fronts (all ranks) lets the next look run only once the steps since
#: have done PACE x W units of work (flits moved plus active buffers, all ranks): in a
#: network where many worms wait long without a deadlock, the searches stay a small part
#: of the run (docs/performance.md) and a deadlock is still found while injecting
PACE = 128


@njit(cache=True, _nrt=False)
def _scan(prm, segs, pkts, links, bufs, rev, nv, nl, snap, fronts, waits, fpid, hf, hb, closed,
          cnt):  # fmt: skip
    """Fronts, waits, holds and closed buffers of the rank (ids in the module docstring).

    ``snap[b]`` = (pid, sent, recv) of buffer ``b``'s front at the previous check; a
    blocked front is listed only if unchanged. ``cnt`` = (fronts, holds, closed).
    """
    deg, nvc, lo, need, bsize, nvcbuf = prm.deg, prm.nvc, prm.lo, prm.need, prm.bsize, prm.nvcbuf
    saf = prm.mode == fk.SAF
    act, head, nbt, credit, held = bufs.act, bufs.head, links.nbt, links.credit, links.held
    seg_cnt, seg_recv, seg_sent, seg_out, seg_ovc = (
        segs.cnt,
        segs.recv,
        segs.sent,
        segs.out,
        segs.ovc,
    )
    seg_vlo, seg_vhi, seg_pkt, pkt_pid, pkt_dst = segs.vlo, segs.vhi, segs.pkt, pkts.pid, pkts.dst
    bocc = bufs.occ
    gb = lo * deg * nvc  # global id of local VC buffer 0
    nf = nh = nc = 0
    na, npk = bufs.nact[0], bufs.nact[1]
    snap0 = snap[:, 0]
    plist, active = bufs.park, bufs.active
    nall = na + npk
    for i in range(nall):
        # ahead of use, as in the step's kernels, the parked too (one-port parks some 900
        # buffers, read in no order) and the front's packet record (its id is the key)
        if i + 16 < nall:
            b16 = act[i + 16] if i + 16 < na else plist[i + 16 - na]
            ahead(prm.far, head, b16)
            ahead(prm.far, snap0, b16)
        if i + 8 < nall:
            s8 = head[act[i + 8] if i + 8 < na else plist[i + 8 - na]]
            ahead(prm.far, seg_cnt, s8)
        if i + 4 < nall:
            ahead(prm.far, pkt_pid, seg_pkt[head[act[i + 4] if i + 4 < na else plist[i + 4 - na]]])
        if i < na:
            b = act[i]
        else:
            b = plist[i - na]
            if active[b] != PARKED:  # a stale entry: the buffer came back
                continue
        s = head[b]
        if s < 0:
            continue
        fid = gb + b if b < nvcbuf else nv + lo * deg + (b - nvcbuf)
        p = seg_pkt[s]
        key0, key1, key2 = pkt_pid[p], seg_sent[s], seg_recv[s]
        same = snap[b, 0] == key0 and snap[b, 1] == key1 and snap[b, 2] == key2
        snap[b, 0], snap[b, 1], snap[b, 2] = key0, key1, key2
        if not same:  # not listed whatever it waits for: its wait not read (most buffers)
            continue
        link = seg_out[s]
        ovc = seg_ovc[s]
        wait = -1
        if link < 0 or ovc == fk.DEST:
            wait = -1
        elif seg_cnt[s] <= 0 or (saf and b < nvcbuf and seg_recv[s] < prm.flits):
            wait = nv + gb + b  # its flits are upstream: the worm's hold of this VC
        else:
            w2 = nbt[link]
            kin = vc_id(w2 * deg + rev[link], 0, nvc)  # the next node's VC 0 of the link
            if ovc >= 0:
                if credit[vc_id(link, ovc, nvc)] <= 0:
                    wait = kin + ovc
            elif w2 != pkt_dst[p]:
                lo_v, hi_v = seg_vlo[s], seg_vhi[s]
                free = False
                for v in range(lo_v, hi_v):
                    k = vc_id(link, v, nvc)
                    if held[k] == 0 and credit[k] >= need:
                        free = True
                if not free:
                    if hi_v - lo_v == 1:
                        wait = nv + kin + lo_v if held[vc_id(link, lo_v, nvc)] else kin + lo_v
                    else:
                        wait = 2 * nv + fid
        if wait < 0:
            continue  # not listed: it counts as able to move, so do the buffers it holds
        fronts[nf], waits[nf], fpid[nf] = fid, wait, key0
        nf += 1
        # what it holds, closed only while it is blocked (an unlisted holder frees it)
        if b < nvcbuf:  # every slot of a VC buffer frees only when its front moves
            hf[nh], hb[nh] = fid, gb + b
            nh += 1
            if bsize - bocc[b] < need:
                closed[nc] = gb + b
                nc += 1
        if ovc >= 0:  # the VC it took, until its tail crosses
            kv = vc_id(nbt[link] * deg + rev[link], ovc, nvc)
            hf[nh], hb[nh] = fid, nv + kv
            nh += 1
            closed[nc] = nv + kv
            nc += 1
        if wait >= 2 * nv:  # one pseudo-front per allowed VC, holding the choice
            closed[nc] = wait
            nc += 1
            for v in range(seg_vlo[s], seg_vhi[s]):
                k = vc_id(link, v, nvc)
                pf = nv + nl + fid * nvc + v
                fronts[nf] = pf
                waits[nf] = nv + kin + v if held[k] else kin + v
                fpid[nf] = -1
                nf += 1
                hf[nh], hb[nh] = pf, wait
                nh += 1
    cnt[0], cnt[1], cnt[2] = nf, nh, nc


class LiveCheck:
    """The flit engine's deadlock search during injection (see the module docstring)."""

    def __init__(self, eng: Any) -> None:
        self.eng = eng
        n, deg, nvc = eng.topo.num_nodes, eng.deg, eng.vcs
        self.nv, self.nl = n * deg * nvc, n * deg
        self.snap = np.full((eng.st.bhead.size, 3), -1, np.int64)
        self.dead_pids = np.empty(0, np.int64)
        self.budget = 0  # work done since the last search, less PACE x its fronts
        self.searches = 0

    def due(self, t: int, last: int, in_flight: int, work: int) -> bool:
        """Whether to look at step ``t`` (``work``: this step's, summed over the ranks)."""
        self.budget += work
        return t % CHECK_EVERY == 0 and t <= last and in_flight > 0 and self.budget >= 0

    def _node_of_front(self, ids: np.ndarray) -> np.ndarray:
        deg, nvc, nv, nl = self.eng.deg, self.eng.vcs, self.nv, self.nl
        ids = np.asarray(ids, np.int64)
        ids = np.where(ids >= nv + nl, (ids - nv - nl) // nvc, ids)  # a pseudo-front's front
        return np.where(ids < nv, ids // (deg * nvc), (ids - nv) // deg)

    def _node_of_buffer(self, ids: np.ndarray) -> np.ndarray:
        deg, nvc, nv = self.eng.deg, self.eng.vcs, self.nv
        ids = np.asarray(ids, np.int64)
        node = (ids % nv) // (deg * nvc)  # k and A(k): the receiver
        return np.where(ids >= 2 * nv, self._node_of_front(ids - 2 * nv), node)

    def _owner(self, node: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.eng.bounds, node, side="right") - 1

    def scratch(self, m: int) -> tuple:
        """:func:`_scan`'s outputs for ``m`` active buffers: ``(fronts, waits, fpid, hf, hb,
        closed, cnt)``."""
        vcs = self.eng.vcs
        fronts = np.empty(m * (vcs + 1) + 1, np.int64)
        hf = np.empty(m * (vcs + 2) + 1, np.int64)
        closed = np.empty(3 * m + 1, np.int64)
        return (fronts, np.empty_like(fronts), np.empty_like(fronts), hf, np.empty_like(hf),
                closed, np.zeros(3, np.int64))  # fmt: skip

    def find(self, t: int, in_flight: int) -> dict | None:
        """The deadlock report if some worm can never move again; collective."""
        eng = self.eng
        st = eng.st
        out = self.scratch(int(st.nact[0] + st.nact[2]))
        _scan(eng.prm, st.segs, st.pkts, st.links, st.bufs, eng.rev, self.nv, self.nl, self.snap,
              *out)  # fmt: skip
        return self.search(t, in_flight, out)

    def search(self, t: int, in_flight: int, scanned: tuple) -> dict | None:
        """:meth:`find` on the fronts :func:`_scan` listed (``scanned``: its outputs; the
        compiled steps scan in their loop and call this only when it listed fronts)."""
        eng = self.eng
        fronts, waits, fpid, hf, hb, closed, cnt = scanned
        nf, nh, nc = (int(x) for x in cnt)
        fr, wt, hf, hb = fronts[:nf], waits[:nf], hf[:nh], hb[:nh]
        if eng.size > 1:
            return self._search_union(t, in_flight, fr, wt, fpid[:nf], hf, hb, closed[:nc])
        listed = int(eng.comm.allreduce(nf, op=sum_op()))
        if not listed:
            return None
        self.searches += 1
        self.budget = -PACE * listed
        fo = lambda ids: self._owner(self._node_of_front(ids))  # noqa: E731
        bo = lambda ids: self._owner(self._node_of_buffer(ids))  # noqa: E731
        dead = dead_fronts(eng.comm, fr, wt, hf, hb, closed[:nc], fo, bo)
        if not eng.comm.allreduce(int(dead.sum()), op=max_op()):
            return None
        return self._dead(t, in_flight, fr, wt, fpid[:nf], dead, hf, hb)

    def _search_union(self, t: int, in_flight: int, fr: np.ndarray, wt: np.ndarray,
                      fpid: np.ndarray, hf: np.ndarray, hb: np.ndarray,
                      closed: np.ndarray) -> dict | None:  # fmt: skip
        """:meth:`search` on several ranks: every rank's listing gathered (one ``allgather``)
        and the dead set found on their union by the one-rank pass, on every rank. Exact:
        the dead set depends only on the union (:mod:`mpinet.engine.waitfor`); why: the
        listings are small (fronts blocked since the last look) and the spread search's
        rounds of messages cost about 3 ms a look on 2 ranks, where a look lists fronts
        nearly every 16 steps on ms:3,2 at L = 16 (docs/performance.md)."""
        eng = self.eng
        parts = eng.comm.allgather((fr, wt, hf, hb, closed))
        sizes = [p[0].size for p in parts]
        listed = sum(sizes)
        if not listed:
            return None
        self.searches += 1
        self.budget = -PACE * listed
        union = [np.concatenate([p[i] for p in parts]) for i in range(5)]
        dead_all = dead_fronts(None, *union, None, None)  # one rank: every id is local
        if not dead_all.any():
            return None
        at = sum(sizes[: eng.rank])
        return self._dead(t, in_flight, fr, wt, fpid, dead_all[at : at + fr.size], hf, hb)

    def _dead(self, t: int, in_flight: int, fr: np.ndarray, wt: np.ndarray, fpid: np.ndarray,
              dead: np.ndarray, hf: np.ndarray, hb: np.ndarray) -> dict:  # fmt: skip
        """The report of the dead fronts ``dead`` (this rank's); collective."""
        eng = self.eng
        walk = walk_cycle(eng.comm, fr, wt, dead, hf, hb)
        real = dead & (fr < self.nv + self.nl)
        self.dead_pids = np.unique(fpid[real])  # this rank's, for the tests
        stuck = int(eng.comm.allreduce(int(real.sum()), op=sum_op()))
        return self._report(t, in_flight, stuck, walk)

    def _report(self, t: int, in_flight: int, stuck: int, walk: list) -> dict:
        eng = self.eng
        topo, deg, nvc, nv = eng.topo, eng.deg, eng.vcs, self.nv
        rows = []
        for _, b in walk:
            if b >= 2 * nv:
                continue  # a head's choice: the VCs follow
            k = b % nv
            w, q, v = k // (deg * nvc), (k // nvc) % deg, k % nvc
            u = int(topo.neighbors(np.array([w]))[0, q])
            back = int(topo.reverse_ports(np.array([w]))[0, q])
            row = {"node": topo.label(u), "port": topo.ports[back],
                   "next": topo.label(w), "class": v, "vc": v}  # fmt: skip
            if not rows or rows[-1] != row:  # held by a worm, then full of it: one VC
                rows.append(row)
        if len(rows) > 1 and rows[0] == rows[-1]:
            rows.pop()
        hops = " ".join(f"{c['node']} --{c['port']}--> (VC {c['vc']})" for c in rows)
        end = f" {rows[0]['node']}" if rows else ""
        return {
            "step": int(t),
            "found": "check",
            "blocked_packets": int(in_flight),
            "dead_fronts": stuck,
            "message": f"deadlock in step {t}: {stuck:,} worm pieces can never move "
            f"({in_flight:,} packets in flight, traffic still injected); wait-for cycle of "
            f"{len(rows)} virtual channels: {hops}{end}",
            "cycle": rows,
            "vcs": nvc,
            "flits": eng.flits,
            "switching": eng.model.switching,
        }
