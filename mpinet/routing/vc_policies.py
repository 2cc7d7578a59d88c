"""Virtual-channel policies: the VCs a packet may take at a hop (a registry like the routers').

docs/switching.md ("Virtual-channel policies") defines them; the flit engine
asks :meth:`VCPolicy.hop` for every head that takes a hop, on arrays of packets:

- ``any``: every VC ``[0, V)`` (the engine takes the lowest free one); may deadlock;
- ``hops``: VC = the hops taken before the hop (the structured buffer pool);
- ``negative-hop`` (Gopal 1985; Boppana & Chalasani 1996): with the nodes properly
  coloured (:mod:`mpinet.topology.colouring`), a hop from a higher to a lower
  colour is negative, and VC = the negative hops so far, this one included.

A hop into the packet's destination takes no VC, so a route of ``H`` hops uses
VCs on its first ``H - 1`` only. :meth:`VCPolicy.needed` is the number of VCs the
policy needs for a router's routes, found by following them
(:mod:`mpinet.deadlock.vc_need`); :meth:`VCPolicy.check` refuses fewer.

The same rules drive the static analysis at VC level
(:mod:`mpinet.deadlock.vc`): a route follower tracks one integer per
route (:meth:`VCPolicy.advance`), records a class per hop (:meth:`VCPolicy.key`),
and the (link, VC) dependencies are read off the classes (:meth:`VCPolicy.held`,
:meth:`VCPolicy.allowed`).
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import numpy as np

from mpinet.errors import RoutingError
from mpinet.model_names import MAX_VCS
from mpinet.routing import torus_rings
from mpinet.routing.rings import APPLIES, ring_cut
from mpinet.routing.vc_tracker import Tracker
from mpinet.topology import colouring
from mpinet.topology.base import Topology
from mpinet.values import Range

# the switching modes and MAX_VCS: mpinet.model_names (plain data, read by `mpinet --help`)
#: nodes up to which negative-hop keeps a colour table (a byte per node) instead of
#: computing the colours of every hop
COLOUR_TABLE_NODES = 1 << 25


def _as(a: Any) -> np.ndarray:
    return np.asarray(a, dtype=np.int64).ravel()


class VCPolicy:
    """Base class of the VC policies; subclasses register under :attr:`name`.

    Parameters
    ----------
    topo : the network
    vcs : V, the virtual channels per directed link (``[1, MAX_VCS]``)
    """

    #: the ``model.vc_policy`` value
    name: ClassVar[str] = ""
    #: one line for listings
    summary: ClassVar[str] = ""
    #: per-packet words of policy state the engine keeps (``hop``'s ``state``)
    state_words: ClassVar[int] = 0
    #: the (link, VC) dependency graph is acyclic for every V >= :meth:`needed` or for
    #: none, so the smallest acyclic V is ``needed`` or none: ``any``'s graph with V VCs
    #: is the link graph times every pair of VCs (a cycle of it is one of the links, and
    #: one of the links is one at VC 0), and ``hops`` / ``negative-hop`` never use a VC
    #: above the needed ones
    monotone: ClassVar[bool] = True
    #: routes may be followed by symmetry (the tracker's classes are kept, or swapped)
    symmetric: bool = True
    #: bytes the policy holds (negative-hop's colour table)
    table_bytes: int = 0
    #: the rule in the flit engine's compiled steps (:data:`ANY_VC`, :data:`HOPS_VC`,
    #: :data:`COUNT_VC`: :meth:`hop`'s values computed there); None: through :meth:`hop`
    compiled: ClassVar[int | None] = None

    def __init__(self, topo: Topology, vcs: int) -> None:
        self.topo = topo
        self.vcs = Range(1, MAX_VCS, integer=True).check("vcs", vcs, error=RoutingError)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} on {self.topo.spec}, vcs = {self.vcs}>"

    def hop(
        self, cur: Any, nxt: Any, hops: Any, state: Any = None, dst: Any = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The VCs ``[lo, hi)`` allowed for the hops ``cur -> nxt`` and the state after.

        Parameters
        ----------
        cur, nxt : (M,) node ids of the hop's ends
        hops : (M,) hops taken before this hop (0 at the source)
        state : (M, state_words) int64 policy state before the hop (zeros at the
            source; None allowed when ``state_words`` is 0)
        dst : (M,) the packets' destinations (read by ``dateline-turn`` only)

        Returns
        -------
        lo, hi : (M,) int64; ``hi > vcs`` only where :meth:`check` would refuse
        new_state : (M, state_words) int64
        """
        m = _as(cur).size
        return np.zeros(m, np.int64), np.full(m, self.vcs, np.int64), np.zeros((m, 0), np.int64)

    def tracker(self, limit: int) -> Tracker:
        """The route follower's view of this policy (:class:`Tracker`)."""
        return Tracker(self, limit)


#: compiled rules (:attr:`VCPolicy.compiled`): VCs ``[0, V)``; ``[hops, hops + 1)``; with
#: a per-link count ``c`` (:meth:`_Counting.counts`), ``[s + c, s + c + 1)`` and state
#: ``s + c``
ANY_VC, HOPS_VC, COUNT_VC = 0, 1, 2


class AnyVC(VCPolicy):
    name = "any"
    compiled = ANY_VC
    summary = "any free VC, the lowest first (may deadlock where the routes make a cycle)"


class _HopsTracker(Tracker):
    unit = True

    def __init__(self, policy: VCPolicy, limit: int) -> None:
        super().__init__(policy, limit)
        self.size = self.limit + 1

    def key(self, hops: Any, s: np.ndarray, *hop: np.ndarray) -> np.ndarray:
        return np.broadcast_to(np.asarray(hops, dtype=np.int64), s.shape).copy()

    def held(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return c - 1, c

    def allowed(
        self, c: np.ndarray, cur: np.ndarray, nxt: np.ndarray, swapped: bool = False
    ) -> tuple:
        return c, c + 1


class HopsVC(VCPolicy):
    name = "hops"
    compiled = HOPS_VC
    summary = "VC = hops taken before the hop (structured buffer pool; needs longest route - 1)"

    def hop(self, cur: Any, nxt: Any, hops: Any, state: Any = None, dst: Any = None) -> tuple:
        lo = _as(hops).copy()
        return lo, lo + 1, np.zeros((lo.size, 0), np.int64)

    def tracker(self, limit: int) -> Tracker:
        return _HopsTracker(self, limit)


class _CountTracker(Tracker):
    """Tracks the counted hops ``s`` and records ``hops * P + s`` (``P = limit + 1``).

    For negative-hop on a bipartite network a colour-swapping translation turns the
    ``s`` negative hops among ``hops`` into ``hops - s`` (:meth:`_swap`), and a
    negative hop into a positive one.
    """

    unit = True

    def __init__(self, policy: _Counting, limit: int) -> None:
        super().__init__(policy, limit)
        self.p = self.limit + 1
        self.size = self.p * self.p
        self.counts = policy.counts
        self.colour = policy.colour
        if self.colour is not None:
            self.swap = self._swap

    def advance(self, cur: np.ndarray, nxt: np.ndarray, hops: Any, s: np.ndarray,
                dst: np.ndarray) -> np.ndarray:  # fmt: skip
        return s + self.counts(cur, nxt)

    def key(self, hops: Any, s: np.ndarray, *hop: np.ndarray) -> np.ndarray:
        return np.asarray(hops, dtype=np.int64) * self.p + s

    def _swap(self, c: np.ndarray) -> np.ndarray:
        h, s = np.divmod(c, self.p)
        return h * self.p + (h - s)

    def reduce(self, c: np.ndarray) -> np.ndarray:
        return c % self.p

    def held(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = c % self.p
        return s, s + 1

    def allowed(
        self, c: np.ndarray, cur: np.ndarray, nxt: np.ndarray, swapped: bool = False
    ) -> tuple:
        k = self.counts(cur, nxt)
        lo = c % self.p + (1 - k if swapped else k)
        return lo, lo + 1


class _Counting(VCPolicy):
    """VC = the hops so far, this one included, that :meth:`counts` counts; ``state``
    holds that number."""

    state_words = 1
    compiled = COUNT_VC
    #: what the count is, for the reports (``negative hops``)
    counted = ""
    #: a 2-colouring of every node whose swap turns every counted hop into an uncounted
    #: one and back (negative-hop on a bipartite network); None otherwise
    colour: np.ndarray | None = None

    def counts(self, cur: Any, nxt: Any) -> np.ndarray:  # pragma: no cover (abstract)
        """1 where the hop ``cur -> nxt`` is counted, else 0 (int64)."""
        raise NotImplementedError

    def hop(self, cur: Any, nxt: Any, hops: Any, state: Any = None, dst: Any = None) -> tuple:
        cur = _as(cur)
        s = np.zeros(cur.size, np.int64) if state is None else np.asarray(state, np.int64)
        new = s.reshape(cur.size, -1)[:, 0] + self.counts(cur, nxt)
        return new, new + 1, new.reshape(-1, 1)

    def tracker(self, limit: int) -> Tracker:
        return _CountTracker(self, limit)


class NegativeHopVC(_Counting):
    """VC = negative hops so far, this one included (Gopal; Boppana & Chalasani 1996).

    A hop is negative when it goes from a higher to a lower colour of
    :func:`mpinet.topology.colouring.colours`.
    """

    name = "negative-hop"
    summary = "VC = negative hops so far (hops to a lower colour; Gopal, Boppana & Chalasani)"
    counted = "negative hops"

    def __init__(self, topo: Topology, vcs: int) -> None:
        super().__init__(topo, vcs)
        self.colours = colouring.num_colours(topo)
        self._table = None
        if topo.num_nodes <= COLOUR_TABLE_NODES:
            self._table = colouring.colours(topo, np.arange(topo.num_nodes, dtype=np.int64))
            self.table_bytes = int(self._table.nbytes)
        # an automorphism of a connected bipartite network keeps or swaps the colours
        self.symmetric = self.colours == 2
        if self.symmetric:
            self.colour = self.colour_of(np.arange(topo.num_nodes, dtype=np.int64))

    def colour_of(self, ids: Any) -> np.ndarray:
        """Colours of nodes ``ids``."""
        ids = _as(ids)
        return self._table[ids] if self._table is not None else colouring.colours(self.topo, ids)

    def counts(self, cur: Any, nxt: Any) -> np.ndarray:
        """1 where the hop ``cur -> nxt`` goes to a lower colour, else 0 (int64)."""
        return (self.colour_of(cur) > self.colour_of(nxt)).astype(np.int64)


class DatelineVC(_Counting):
    """VC = dateline crossings so far, this one included (Dally & Seitz 1987).

    A hop over a ring's dateline link is counted: on CCC between ring positions
    ``N - 1`` and ``0``, on SCC between ``i = n`` and ``i = 2``; on a torus two classes
    per dimension ring (:mod:`mpinet.routing.torus_rings`); on a network that is
    one ring (every node of degree 2, connected: a cycle, such as a file network or
    star:3, scc:3) over the link of node 0's first port. Elsewhere nothing would be
    counted and every hop would take VC 0: refused (:data:`APPLIES`), since a policy
    that orders nothing deadlocks where ``any`` does.
    """

    name = "dateline"
    summary = "VC = dateline crossings so far (CCC, SCC, a ring; torus: 2 classes per ring)"
    counted = "dateline crossings"
    #: the torus class chosen at a turn into a dimension (:class:`DatelineTurnVC`)
    turn: ClassVar[bool] = False

    def __init__(self, topo: Topology, vcs: int) -> None:
        super().__init__(topo, vcs)
        fam = topo.family
        #: torus:K,N: two VC classes per dimension ring (:mod:`mpinet.routing.torus_rings`)
        self.torus = fam == "torus"
        if self.torus:  # its translations move the datelines; no compiled rule
            self.ring, self.cut, self.symmetric, self.compiled = 0, None, False, None
            self.hop = functools.partial(torus_rings.hop, self)
            tracker = torus_rings.TurnTracker if self.turn else torus_rings.TorusTracker
            self.tracker = functools.partial(tracker, self)
            return
        if self.turn:
            raise RoutingError(
                f"vc_policy 'dateline-turn' is BookSim2's torus rule and applies to torus:K,N "
                f"only, not {topo.spec} (vc_policy 'dateline' cuts the rings of CCC, SCC and "
                "networks that are one ring; a mesh's dor needs no VC classes: 'any')"
            )
        #: CCC/SCC ring length (0: the network is one ring, cut at ``self.cut``)
        self.ring = {"ccc": getattr(topo, "n", 0), "scc": getattr(topo, "ring", 0)}.get(fam, 0)
        self.cut: tuple[int, int] | None = None
        if self.ring < 3:  # scc:3's rings have two nodes, but the whole network is one ring
            self.ring = 0
            cut = ring_cut(topo)
            if isinstance(cut, str):
                self._refuse(cut)
            self.cut = cut
        # SCC's translations keep ring positions; CCC's rotate them, a ring's move the cut
        self.symmetric = fam == "scc" and self.cut is None

    def _refuse(self, why: str) -> None:
        raise RoutingError(
            f"vc_policy 'dateline' orders nothing on {self.topo.spec}: it {why}, so every hop "
            f"would take VC 0; dateline applies to {APPLIES}, and to torus:K,N; use "
            "vc_policy 'hops' or 'negative-hop' here (deadlock-free with the vcs they ask for)"
        )

    def counts(self, cur: Any, nxt: Any) -> np.ndarray:
        cur, nxt = _as(cur), _as(nxt)
        if self.cut is not None:
            a, b = self.cut
            return (((cur == a) & (nxt == b)) | ((cur == b) & (nxt == a))).astype(np.int64)
        i, j, last = cur % self.ring, nxt % self.ring, self.ring - 1
        same = cur - i == nxt - j  # a ring link, not a cube or lateral one
        return (same & (((i == last) & (j == 0)) | ((i == 0) & (j == last)))).astype(np.int64)


class DatelineTurnVC(DatelineVC):
    """BookSim2's torus classes (``dim_order_torus``): two per dimension ring, the class
    chosen as a packet turns into the dimension, 1 where its coordinate there is above the
    destination's, and kept along the ring (:mod:`mpinet.routing.torus_rings`)."""

    name = "dateline-turn"
    summary = "torus: 2 classes per ring, chosen at the turn into it (BookSim2's dim_order_torus)"
    counted = "dateline classes"
    turn = True


#: every policy by its ``model.vc_policy`` name
VC_POLICIES: dict[str, type[VCPolicy]] = {}


def register(cls: type[VCPolicy]) -> type[VCPolicy]:
    """Add a policy class to :data:`VC_POLICIES` under its name (usable as a decorator)."""
    if not cls.name or cls.name in VC_POLICIES:
        raise RoutingError(f"a VC policy needs a new name, got {cls.name!r}")
    VC_POLICIES[cls.name] = cls
    return cls


for _cls in (AnyVC, HopsVC, NegativeHopVC, DatelineVC, DatelineTurnVC):
    register(_cls)


def make_vc_policy(name: str, topo: Topology, vcs: int) -> VCPolicy:
    """Build VC policy ``name`` for ``topo`` with ``vcs`` VCs per link.

    Raises
    ------
    RoutingError
        An unknown name (the message lists the valid ones) or ``vcs`` out of range.
    TopologyError
        ``negative-hop`` on a network without a closed-form colouring above
        :data:`mpinet.topology.colouring.MAX_SEARCHED` nodes.
    """
    cls = VC_POLICIES.get(name)
    if cls is None:
        raise RoutingError(f"unknown vc_policy {name!r}; valid: {', '.join(VC_POLICIES)}")
    return cls(topo, vcs)
