"""Route enumeration: follow a router from many sources, through every random choice.

:class:`RouteFollower` moves arrays of packet states (node, destination,
header, in-port) hop by hop, vectorized like :func:`~mpinet.routing.walk.walk`
but without packet ids: states that coincide are merged, and every hop taken
that does not deliver the packet is recorded as a key ``(node, in-port,
out-port, hops)`` (a delivered packet takes no buffer at its destination).

Random routers (``shortest`` with ``tie="random"``, ``scc-random``, the MS
routers with ``choice="random"``) pick ``floor(u * c)`` among ``c`` candidates
with ``u = ctx.uniform()``, a choice that is monotone in ``u``. So a hop
whose port and header are the same for ``u`` near 0 and near 1 has one
choice; one that differs is followed for one ``u`` in every interval between
the fractions ``i / c``, ``c <= choices`` (a Farey sequence; the values of
``u`` are those of packet ids searched for, since the routers draw ``u`` from
the counter-based :mod:`mpinet.rng` keyed by packet id and hop), found by
bisection: a range of intervals whose two ends choose alike is one choice.
That is the union over every choice the router can make among up to
``choices`` candidates, whichever packet makes it.
"""

from __future__ import annotations

from fractions import Fraction
from functools import cache
from typing import Any

import numpy as np

from mpinet import rng
from mpinet.deadlock import channel_graph as cg
from mpinet.errors import RoutingError
from mpinet.routing.base import HopContext, Router
from mpinet.routing.tables import neighbor_table
from mpinet.topology.base import Topology

#: states (packet positions) followed at once
MAX_STATES = 1 << 20
#: random choices among up to this many candidates are enumerated exactly
CHOICES = 16


@cache
def _breaks(choices: int) -> np.ndarray:
    """Sorted fractions i/c in [0, 1], c = 1..choices, as floats."""
    fr = {Fraction(i, c) for c in range(1, choices + 1) for i in range(c + 1)}
    return np.array(sorted(float(f) for f in fr))


@cache
def _branch_pids(seed: int, hop: int, choices: int) -> np.ndarray:
    """One packet id per interval between the breaks whose ``u`` at ``hop`` falls in it."""
    br = _breaks(choices)
    need = br.size - 1
    out = np.full(need, -1, dtype=np.int64)
    base = 0
    while (out < 0).any():
        cand = np.arange(base, base + (1 << 16), dtype=np.int64)
        u = rng.uniform(seed, cand, hop, rng.STREAM_ROUTE)
        slot = np.searchsorted(br, u, side="right") - 1
        slot, first = cg.first_of_each(slot)
        fill = out[slot] < 0
        out[slot[fill]] = cand[first[fill]]
        base += 1 << 16
    return out


class RouteFollower:
    """Follows a router's routes from many sources, the union over random choices.

    Parameters
    ----------
    topo, router : the network and a router built for it (not a ``holds`` one)
    seed : the seed the random choices are drawn under
    limit : the longest route allowed (longer: RoutingError, e.g. a livelock)
    with_hops : record the hops taken in each key (hop classes), else 0
    state : optional, a per-route state to track and record instead (virtual-channel
        policies, :mod:`mpinet.routing.vc_policies`): ``state.size`` key classes,
        ``state.key(hops, s, cur, nxt, dst)`` the class recorded for the hop ``cur ->
        nxt`` of a packet for ``dst`` taken with state ``s`` after ``hops`` hops,
        ``state.advance(cur, nxt, hops, s, dst)`` the state after it (start 0); routes are
        merged only where their states are equal too

    Attributes ``random`` (a random hop was seen), ``max_length`` (the
    longest route) and ``pairs`` (routes followed) accumulate over calls.
    """

    def __init__(
        self, topo: Topology, router: Router, seed: int, limit: int, with_hops: bool,
        state: Any = None,
    ):  # fmt: skip
        if getattr(router, "holds", False):
            raise RoutingError(
                f"router {router.name!r} holds packets for scheduled steps; its waits are not "
                "buffer dependencies this analysis models"
            )
        self.topo, self.router, self.seed = topo, router, int(seed)
        self.limit, self.with_hops = int(limit), with_hops
        self.nb = neighbor_table(topo).astype(np.int64)
        self.deg = topo.degree
        self.state = state
        self.H = state.size if state is not None else (self.limit + 1 if with_hops else 1)
        self.choices = max(CHOICES, self.deg)
        self.random = False
        self.max_length = 0
        self.pairs = 0

    def encode(self, node, inport, outport, hops) -> np.ndarray:
        """One int64 key per hop (``inport = degree``: injected at the node)."""
        return ((node * (self.deg + 1) + inport) * self.deg + outport) * self.H + hops

    def decode(self, key: np.ndarray) -> tuple[np.ndarray, ...]:
        """``(node, inport, outport, hops)`` arrays of keys."""
        rest, h = np.divmod(key, self.H)
        rest, q = np.divmod(rest, self.deg)
        x, r = np.divmod(rest, self.deg + 1)
        return x, r, q, h

    def _hop(self, cur, dst, hdr, h, pids) -> tuple[np.ndarray, np.ndarray]:
        """Ports and new headers of one hop, ``ctx.uniform()`` keyed by ``pids``."""
        m = cur.size
        ctx = HopContext(
            step=h, pids=np.broadcast_to(pids, m).copy(), hops=np.full(m, h), seed=self.seed
        )
        ports, new = self.router.next_port(cur, dst, hdr, ctx)
        ports = np.asarray(ports).astype(np.int64, copy=False)
        bad = (ports < 0) | (ports >= self.deg)
        if not bad.any():
            bad = self.nb[cur, ports] < 0
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise RoutingError(
                f"router {self.router.name!r} chose port {int(ports[i])} at node "
                f"{self.topo.label(int(cur[i]))} of {self.topo.spec} (destination "
                f"{self.topo.label(int(dst[i]))}), but no such link exists"
            )
        return ports, np.asarray(new, dtype=np.int64).reshape(m, -1)

    def _bisect(self, cur, dst, hdr, h, pids, rnd, p_lo, n_lo, p_hi, n_hi):
        """The choices of random states ``rnd`` strictly between the first and last ``u``.

        Intervals ``[a, b]`` of break indices whose ends choose differently are
        halved (the choice is monotone in ``u``, so equal ends mean one choice
        between them): a few batched router calls instead of one per interval.
        Returns the (state index, port, header) of every choice evaluated.
        """
        st = rnd
        a = np.zeros(st.size, dtype=np.int64)
        b = np.full(st.size, pids.size - 1, dtype=np.int64)
        pa, na, pb, nb_ = p_lo[st], n_lo[st], p_hi[st], n_hi[st]
        out_i, out_p, out_n = [], [], []
        while st.size:
            go = (b - a > 1) & ((pa != pb) | (na != nb_).any(axis=1))
            st, a, b, pa, na, pb, nb_ = (x[go] for x in (st, a, b, pa, na, pb, nb_))
            if not st.size:
                break
            m = (a + b) // 2
            pm, nm = self._hop(cur[st], dst[st], hdr[st], h, pids[m])
            out_i.append(st)
            out_p.append(pm)
            out_n.append(nm)
            # left halves [a, m] then right halves [m, b]
            st, a, b = np.r_[st, st], np.r_[a, m], np.r_[m, b]
            pa, pb = np.r_[pa, pm], np.r_[pm, pb]
            na, nb_ = np.concatenate([na, nm]), np.concatenate([nm, nb_])
        if not out_i:
            w = hdr.shape[1]
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty((0, w), np.int64)
        return np.concatenate(out_i), np.concatenate(out_p), np.concatenate(out_n)

    def follow(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Keys of the hops that do not deliver, on the routes ``src[i] -> dst[i]``."""
        cur, dst = src.astype(np.int64), dst.astype(np.int64)
        self.pairs += int(cur.size)
        hdr = np.asarray(self.router.init_headers(cur, dst), dtype=np.int64).reshape(cur.size, -1)
        inp = np.full(cur.size, self.deg, dtype=np.int64)
        st = np.zeros(cur.size, dtype=np.int64)  # the tracked state (0 without one)
        keys: list[np.ndarray] = []
        h = 0
        while cur.size:
            if h >= self.limit:
                raise RoutingError(
                    f"router {self.router.name!r} on {self.topo.spec}: a packet at "
                    f"{self.topo.label(int(cur[0]))} for {self.topo.label(int(dst[0]))} has "
                    f"taken {self.limit} hops (a livelock, or raise --max-hops)"
                )
            pids = _branch_pids(self.seed, h, self.choices)
            ports, new = self._hop(cur, dst, hdr, h, pids[0])
            p_hi, n_hi = self._hop(cur, dst, hdr, h, pids[-1])
            rnd = np.flatnonzero((ports != p_hi) | (new != n_hi).any(axis=1))
            idx = np.arange(cur.size)
            if rnd.size:
                self.random = True
                more = self._bisect(cur, dst, hdr, h, pids, rnd, ports, new, p_hi, n_hi)
                idx = np.concatenate([idx, rnd, more[0]])
                ports = np.concatenate([ports, p_hi[rnd], more[1]])
                new = np.concatenate([new, n_hi[rnd], more[2]])
            x = cur[idx]
            nxt = self.nb[x, ports]
            go = nxt != dst[idx]
            if not go.all():
                self.max_length = max(self.max_length, h + 1)
            # only hops that do not deliver: a packet is consumed at its destination and
            # takes no buffer there (the engine's rule), so its last hop waits for nothing
            hx, hn, hd = x[go], nxt[go], dst[idx][go]
            cols = [hn, hd, self.topo.reverse_of(hx, ports[go]), new[go]]
            if self.state is None:
                cls = h if self.with_hops else 0
            else:
                s = st[idx][go]
                cls = self.state.key(h, s, hx, hn, hd)
                cols.append(self.state.advance(hx, hn, h, s, hd))
            hk = self.encode(hx, inp[idx][go], ports[go], cls)
            keys.append(cg.distinct(hk))
            rows = cg.distinct_rows(np.column_stack(cols))
            w = new.shape[1]
            cur, dst, inp, hdr = rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3 : 3 + w]
            st = rows[:, 3 + w] if self.state is not None else np.zeros(cur.size, np.int64)
            h += 1
        return cg.distinct(np.concatenate(keys)) if keys else np.empty(0, dtype=np.int64)
