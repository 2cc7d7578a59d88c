"""sdc's links of a step's port (:mod:`mpinet.engine.flit.port_links`): the same links, in
the same order, as the pass over the whole active list they replace (the reference's order
of the moves), and the active list compacted alike, on random kept states: active lists
sorted and not, tails, empty buffers, fronts without flits, links without movable requests.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

from mpinet.engine.flit.port_links import (
    EMPTY,
    H_DEAD,
    H_EMP,
    H_SRT,
    NONE,
    port_links,
    sort_kept,
    squeeze,
)

Prm = namedtuple("Prm", "deg nvcbuf far", defaults=(None,))  # far: Params.far (no prefetch)
Bufs = namedtuple("Bufs", "act active nact")
Inc = namedtuple("Inc", "breq bport bnext lhead mc bits emp hole")


def state(rng, nodes, deg, nvc):
    """A kept state: each buffer empty, a front without a request, or a request for a link
    of its node; the links' lists; movable counts; an active list holding every buffer with
    a front (and some emptied ones), sorted up to a random point and in any order after."""
    nvcbuf = nodes * deg * nvc
    nbuf, nlinks = nvcbuf + nodes * deg, nodes * deg
    node = np.concatenate([np.arange(nvcbuf) // (deg * nvc), np.arange(nodes * deg) // deg])
    breq = np.full(nbuf, -1, np.int32)
    bport = np.full(nbuf, EMPTY, np.int8)
    kind = rng.choice(3, nbuf, p=[0.45, 0.15, 0.4])  # empty, no request, a request
    for b in np.flatnonzero(kind > 0):
        p = int(rng.integers(deg))
        routed = kind[b] == 2 or rng.random() < 0.5
        breq[b] = node[b] * deg + p if routed else -1
        bport[b] = p if kind[b] == 2 else NONE
    bnext = np.full(nbuf, -1, np.int32)
    lhead = np.full(nlinks, -1, np.int32)
    mc = np.zeros(nlinks, np.int64)
    for link in range(nlinks):
        members = rng.permutation(np.flatnonzero(breq == link))
        for x, y in zip(members[:-1], members[1:], strict=True):
            bnext[x] = y
        if members.size:
            lhead[link] = members[0]
        movable = int((bport[members] >= 0).sum())
        mc[link] = rng.integers(0, movable + 1) if rng.random() < 0.8 else movable
    fronts = np.flatnonzero(bport != EMPTY)
    emptied = rng.permutation(np.flatnonzero(bport == EMPTY))[: int(rng.integers(0, 20))]
    members = rng.permutation(np.concatenate([fronts, emptied]))
    cut = int(rng.integers(0, members.size + 1))
    act = np.concatenate([np.sort(members[:cut]), members[cut:]]).astype(np.int64)
    active = np.zeros(nbuf, np.uint8)
    active[act] = 1
    inc = Inc(breq, bport, bnext, lhead, mc, bitmap(mc, nodes, deg), np.zeros(nbuf, np.int32),
              np.array([-1, 0, cut, 0], np.int64))  # fmt: skip
    return Prm(deg, nvcbuf), act, active, inc, nlinks


def bitmap(mc, nodes, deg):
    """``Demand.bits`` of the counts ``mc``: per port, a bit per node whose link has a
    movable request (as kept_requests.recount keeps it)."""
    words = (nodes + 63) // 64
    bits = np.zeros(deg * words, np.uint64)
    for link in np.flatnonzero(mc):
        node, port = divmod(int(link), deg)
        bits[port * words + node // 64] |= np.uint64(1) << np.uint64(node % 64)
    return bits.view(np.int64)


def reference(port, act, bport, breq, mc):
    """The pass over the active list: empty buffers dropped, the port's links listed at
    their first request with something movable."""
    kept = [int(b) for b in act if bport[b] != EMPTY]
    links: list[int] = []
    for b in kept:
        if bport[b] == port and mc[breq[b]] != 0 and breq[b] not in links:
            links.append(int(breq[b]))
    return kept, links


def random_case(rng):
    """A random state (mostly small, some of 60-200 nodes), a port, and the reference's
    kept list and links for it."""
    nodes = int(rng.integers(1, 12) if rng.random() < 0.8 else rng.integers(60, 200))
    deg, nvc = int(rng.integers(1, 5)), int(rng.integers(1, 3))
    prm, act, active, inc, nlinks = state(rng, nodes, deg, nvc)
    port = int(rng.integers(deg))
    kept, want = reference(port, act, inc.bport, inc.breq, inc.mc)
    return prm, act, active, inc, nlinks, port, kept, want


@pytest.mark.parametrize("seed", range(6))
def test_the_ports_links_in_the_active_lists_order(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        prm, act, active, inc, nlinks, port, kept, want = random_case(rng)
        n = act.size
        buf = np.full(act.size + 5, -7, np.int64)
        buf[:n] = act
        bufs = Bufs(buf, active.copy(), np.array([n], np.int64))
        lreq = np.zeros(nlinks, np.int64)
        touched = np.full(2 * n + 2, -9, np.int64)
        na = port_links(port, prm, bufs, lreq, inc, touched, False)
        assert touched[:na].tolist() == want
        assert int(bufs.nact[0]) == len(kept) and bufs.act[: len(kept)].tolist() == kept
        on = np.zeros(active.size, np.uint8)
        on[kept] = 1
        assert bufs.active.tolist() == on.tolist()  # the tail's mark undone, emptied dropped
        assert sorted(np.flatnonzero(lreq).tolist()) == sorted(want)


@pytest.mark.parametrize("seed", range(6))
def test_holes_left_in_the_sorted_part_give_the_same_links_and_list(seed):
    """One rank's lazy compaction: the emptied buffers listed (those of the sorted part,
    some of the tail's) found by bisection and left as holes (-1) beside earlier holes; the
    links and their order, the list less its holes and the active marks as the pass over
    the whole list gives them; then the holes squeezed out, or dropped by the sort."""
    rng = np.random.default_rng(100 + seed)
    for _ in range(40):
        prm, act, active, inc, nlinks, port, kept, want = random_case(rng)
        srt = int(inc.hole[H_SRT])
        prefix = act[:srt].tolist()
        assert prefix == sorted(prefix)
        gone = [b for b in prefix if inc.bport[b] == EMPTY]
        gone += [b for b in act[srt:].tolist() if inc.bport[b] == EMPTY and rng.random() < 0.5]
        holes = 0
        with_holes = []
        for b in prefix:  # earlier holes: -1 anywhere in the sorted part
            while rng.random() < 0.15:
                with_holes.append(-1)
                holes += 1
            with_holes.append(b)
        act = np.array(with_holes + act[srt:].tolist(), np.int64)
        n = act.size
        buf = np.full(max(n, active.size) + 5, -7, np.int64)  # ids below its size (the sort)
        buf[:n] = act
        bufs = Bufs(buf, active.copy(), np.array([n], np.int64))
        inc.emp[: len(gone)] = rng.permutation(np.array(gone, np.int64))
        inc.hole[:3] = len(gone), holes, len(with_holes)
        lreq = np.zeros(nlinks, np.int64)
        touched = np.full(2 * n + 2, -9, np.int64)
        na = port_links(port, prm, bufs, lreq, inc, touched, True)
        assert touched[:na].tolist() == want
        left = bufs.act[: int(bufs.nact[0])]
        assert left[left >= 0].tolist() == kept
        gone_prefix = [b for b in prefix if inc.bport[b] == EMPTY]
        assert int(inc.hole[H_DEAD]) == int((left < 0).sum()) == holes + len(gone_prefix)
        assert inc.hole[H_EMP] == 0 and inc.hole[H_SRT] == len(with_holes)
        on = np.zeros(active.size, np.uint8)
        on[kept] = 1
        assert bufs.active.tolist() == on.tolist()
        if rng.random() < 0.5:
            squeeze(bufs, inc)
            assert bufs.act[: int(bufs.nact[0])].tolist() == kept
            assert inc.hole[H_DEAD] == 0 and inc.hole[H_SRT] == len(prefix) - len(gone_prefix)
        else:
            tmp = np.zeros(2 * n + 2, np.int64)
            sort_kept(bufs, inc, tmp)
            assert bufs.act[: int(bufs.nact[0])].tolist() == sorted(kept)
            assert inc.hole[H_DEAD] == 0 and inc.hole[H_SRT] == len(kept)
