"""Routers for macro-star networks MS(l, n) (Yeh and Varvarigos, paper 004, sections 2-3).

Every router here is *distributed*: at each node the packet's position
relative to its destination, ``rel = d^-1 * c``, is recomputed from the
current node and the destination (:func:`macrostar_game.relative`) and the
node decides the next port from ``rel`` and a few words of header state. The
game vocabulary (outside ball, boxes, colours, clean, ports) is that of
:mod:`mpinet.routing.macrostar_game`.

``ms-balls-to-boxes``
    Section 2.1's Balls-to-Boxes algorithm, Phase 1 then Phase 2.
``ms-merged``
    Section 3.2's fastest algorithm: the same game (whose Phase 1 already is the
    restricted cycle order of 3.2) with Phases 1 and 2 merged, i.e. a clean
    leftmost box is sent straight to its final position. Diameter bound
    ``floor(2.5 n l) + 2 l - 2`` (Theorem 3.2).
``ms-two-phase``
    Section 3.1's MS routing algorithm: a minimal star-graph route followed
    symbol by symbol (Phase 1), then the boxes sorted as an l-star (Phase 2).
``ms-star-emulation``
    Section 3.1 / Theorem 3.1: a minimal k-star route, each far transposition
    ``T_j`` (j > n + 1) done as ``S_i T_j' S_i`` (Definition 2.2).

Free choices of the paper ("any dirty ball", "a dirty box", "any box not at its
position", the star route's next cycle) are made by ``choice``: ``"first"``
(the lowest position, default) or ``"random"`` (uniform, from ``ctx.uniform()``,
the same on any number of ranks).

``ms-balls-to-boxes`` and ``ms-merged`` route around faults (``faults=``): a
move whose link failed is replaced by another move the game allows at that
node (another dirty ball, dirty box or misplaced box, by the same ``choice``
rule), and the packet is dropped (:data:`DROP`) where the move is forced
(an outside ball goes to its place, a box to its final position) or every
allowed move's link failed. Any sequence of allowed moves ends the game, so
routes stay loop-free and no longer than the paper's bounds.
"""

from __future__ import annotations

import numpy as np

from mpinet.errors import RoutingError
from mpinet.routing import macrostar_game as mg
from mpinet.routing.base import DROP, HopContext, Router
from mpinet.topology.base import Topology
from mpinet.topology.macrostar import MacroStar

BOXES = ("match", "home")


class ChoiceRouter(Router):
    """A router of one family (``topology_type``) whose free choices follow ``choice``.

    Shared by the MS routers here and the IMS ones (:mod:`mpinet.routing.ims`).
    """

    distributed = True
    topology_type: type[Topology] = MacroStar

    def __init__(self, topo: Topology, choice: str = "first", **options: object) -> None:
        super().__init__(topo, choice=choice, **options)
        if not isinstance(topo, self.topology_type):
            fam = self.families[0]
            raise RoutingError(f"router {self.name!r} applies to {fam} only, not {topo.spec}")
        if choice not in mg.CHOICES:
            raise RoutingError(
                f"choice of router {self.name!r} must be one of {mg.CHOICES}, got {choice!r}"
            )
        self.choice = choice

    def _u(self, ctx: HopContext) -> np.ndarray | None:
        return ctx.uniform() if self.choice == "random" else None


class _MacroStarRouter(ChoiceRouter):
    """Common set-up: the network's ``l``, ``n``, ``k`` and the ``choice`` rule."""

    families = ("ms",)

    def __init__(self, topo: Topology, choice: str = "first", **options: object) -> None:
        super().__init__(topo, choice=choice, **options)
        self.l, self.n, self.k = topo.l, topo.n, topo.k

    def _rel(self, nodes: np.ndarray, dests: np.ndarray) -> np.ndarray:
        return mg.relative(self.k, nodes, dests)


class _BoxGameRouter(_MacroStarRouter):
    """A router playing the balls-to-boxes game; the header holds the box colours."""

    fault_tolerant = True

    def __init__(
        self, topo: Topology, choice: str = "first", boxes: str = "match", faults: object = None
    ) -> None:
        super().__init__(topo, choice=choice, boxes=boxes)
        if boxes not in BOXES:
            raise RoutingError(
                f"boxes of router {self.name!r} must be one of {BOXES}, got {boxes!r}"
            )
        self.boxes = boxes
        self.header_width = mg.colour_words(self.l)
        # dynamic faults (step > 0) apply from set_faults on
        self.faults = faults if faults is not None and getattr(faults, "step", 0) == 0 else None

    def set_faults(self, faults: object) -> None:
        """Route around ``faults`` from now on (dynamic faults)."""
        self.faults = faults

    def init_headers(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """The colours given to the source's boxes, packed (:func:`macrostar_game.pack_colours`)."""
        src = np.asarray(src, dtype=np.int64).ravel()
        if self.boxes == "home":
            sig = mg.home_colours(src.size, self.l)
        else:
            sig = mg.match_colours(self._rel(src, dst), self.n, self.l)
        return mg.pack_colours(sig)

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """One move of the game per packet; S moves update the colours in the header."""
        game = mg.Game(self._rel(nodes, dests), mg.unpack_colours(headers, self.l), self.n, self.l)
        u = self._u(ctx)
        ports = self._move(game, u).astype(np.int64)
        if self.faults is not None:
            ports = self._around_faults(np.asarray(nodes, dtype=np.int64), game, ports, u)
        return ports, mg.pack_colours(game.swap(ports))

    def _around_faults(
        self, nodes: np.ndarray, game: mg.Game, ports: np.ndarray, u: np.ndarray | None
    ) -> np.ndarray:
        """The move where its link is live, else another allowed live move, else DROP."""
        deg = self.topo.degree
        down = self.faults.link_down(np.repeat(nodes, deg), np.tile(np.arange(deg), nodes.size))
        live = ~down.reshape(nodes.size, deg)
        bad = np.flatnonzero(~live[game.rows, ports])
        if bad.size:
            allowed = self._allowed(game)[bad] & live[bad]
            alt = mg.pick(allowed, None if u is None else u[bad])
            ports[bad] = np.where(allowed.any(axis=1), alt, DROP)
        return ports

    def _allowed(self, game: mg.Game) -> np.ndarray:
        """``(M, degree)`` bool: every move section 2.1 allows (the choices of :meth:`_move`)."""
        n = self.n
        a = np.zeros((game.x.size, self.topo.degree), dtype=bool)
        forced = game.x != 0  # Case 1.2: the outside ball goes to its place
        a[game.rows[forced], game.place_outside_ball()[forced]] = True
        lead = game.sig[:, 0]
        misplaced = game.sig[:, 1:] != np.arange(1, self.l)
        phase2 = ~forced & game.all_clean  # 2.2 forced (lead != 0), 2.1 any misplaced box
        to_lead = phase2 & (lead != 0)
        a[game.rows[to_lead], game.s_port(lead[to_lead])] = True
        a[:, n:] |= (phase2 & (lead == 0))[:, None] & misplaced
        phase1 = ~forced & ~game.all_clean
        here_dirty = phase1 & ~game.box_clean[:, 0]  # 1.1.2: any dirty ball here
        a[:, :n] |= here_dirty[:, None] & ~game.clean[:, 0, :]
        a[:, n:] |= (phase1 & game.box_clean[:, 0])[:, None] & ~game.box_clean[:, 1:]  # 1.1.1
        return a

    def _move(self, game: mg.Game, u: np.ndarray | None) -> np.ndarray:
        """One move of section 2.1: Case 1.2, Phase 2, or Case 1.1 (1.1.2 or 1.1.1)."""
        here_dirty = ~game.box_clean[:, 0]
        return np.where(
            game.x != 0,
            game.place_outside_ball(),  # Case 1.2
            np.where(
                game.all_clean,
                game.order_boxes(u),  # Phase 2
                np.where(here_dirty, game.dirty_ball_here(u), game.dirty_box(u)),  # 1.1.2, 1.1.1
            ),
        )


class BallsToBoxes(_BoxGameRouter):
    """Section 2.1's Balls-to-Boxes algorithm (distributed; header = the box colours).

    Each node recomputes ``rel = d^-1 c`` and makes one move of the game:
    Case 1.2 (outside ball of colour ``c != 0``): swap box ``c`` to the left
    (1.2.1), else put the ball at its place (1.2.2); Case 1.1 (ball 0 outside):
    a dirty leftmost box takes ball 0 in place of one of its dirty balls
    (1.1.2), a clean one is exchanged with a dirty box (1.1.1); when every box
    is clean, Phase 2 sorts the boxes (2.1, 2.2). A node of the network only
    fixes the balls; the colours of the boxes are the router's, chosen at the
    source and carried in the header (``colour_words(l)`` int64 words, 5 bits
    per box, 0-based colours in block order) and swapped on every S hop.

    Parameters
    ----------
    topo : MacroStar
    choice : {"first", "random"}
        The free choices: "first" takes the dirty ball at the lowest offset
        (1.1.2), the dirty box at the lowest position (1.1.1) and the lowest
        box not at its position (2.1); "random" a uniform one (``ctx.uniform()``).
    boxes : {"match", "home"}
        Colours of the source's boxes: "match" (default) the greedy assignment
        of :func:`macrostar_game.match_colours`, which greedily leaves many
        balls clean and reproduces the paper's Fig. 2; "home" box ``b`` gets colour ``b``.
    """

    name = "ms-balls-to-boxes"
    summary = (
        "balls-to-boxes game, Phase 1 then Phase 2 (paper 004, sec. 2.1); routes around faults"
    )


class Merged(_BoxGameRouter):
    """Section 3.2's fastest routing: the game with Phases 1 and 2 merged
    (distributed; header = the box colours).

    Like :class:`BallsToBoxes`, whose Phase 1 already follows the restricted
    cycle order of 3.2 (the next cycle starts in the box the last one ended
    in), except for the restriction of 3.2 on Step 1.1.1: a clean leftmost box
    of colour ``i != 1`` is exchanged with the box at position ``i``, its final
    place; a clean leftmost box of colour 1 is exchanged with a dirty box or a
    clean box not at its final position. Once all boxes are clean they are in
    order, so there is no separate Phase 2. Paper bound: ``floor(2.5 n l) + 2 l - 2``.

    Parameters
    ----------
    topo : MacroStar
    choice : {"first", "random"}
        "first": the dirty ball at the lowest offset (1.1.2); for the exception
        of 1.1.1 the dirty box at the lowest position, or if none is dirty the
        lowest clean box out of place; "random": uniform among the same candidates.
    boxes : {"match", "home"}
        Colours of the source's boxes, as for :class:`BallsToBoxes`.
    """

    name = "ms-merged"
    summary = (
        "balls-to-boxes with merged phases, the fastest of paper 004 sec. 3.2; routes around faults"
    )

    def _allowed(self, game: mg.Game) -> np.ndarray:
        """Every move section 3.2 allows (the choices of :meth:`_move`)."""
        n = self.n
        a = np.zeros((game.x.size, self.topo.degree), dtype=bool)
        forced = game.x != 0
        a[game.rows[forced], game.place_outside_ball()[forced]] = True
        lead = game.sig[:, 0]
        clean = ~forced & game.box_clean[:, 0]
        to_lead = clean & (lead != 0)  # a clean box of colour i != 1 goes to position i
        a[game.rows[to_lead], game.s_port(lead[to_lead])] = True
        dirty = ~game.box_clean[:, 1:]
        misplaced = game.sig[:, 1:] != np.arange(1, self.l)
        other = np.where(dirty.any(axis=1)[:, None], dirty, misplaced)
        a[:, n:] |= (clean & (lead == 0))[:, None] & other
        a[:, :n] |= (~forced & ~game.box_clean[:, 0])[:, None] & ~game.clean[:, 0, :]
        return a

    def _move(self, game: mg.Game, u: np.ndarray | None) -> np.ndarray:
        lead = game.sig[:, 0]
        dirty = ~game.box_clean[:, 1:]
        misplaced = game.sig[:, 1:] != np.arange(1, self.l)
        other = mg.pick(np.where(dirty.any(axis=1)[:, None], dirty, misplaced), u) + 1
        clean_lead = np.where(lead != 0, game.s_port(lead), game.s_port(other))
        return np.where(
            game.x != 0,
            game.place_outside_ball(),  # Case 1.2
            np.where(game.box_clean[:, 0], clean_lead, game.dirty_ball_here(u)),
        )


#: ``ms-two-phase``: bit of the owed port in a one-word header, and the colour bits below it
OWED_SHIFT = 56
_COLOURS = (1 << OWED_SHIFT) - 1


class TwoPhase(_MacroStarRouter):
    """Section 3.1's MS routing algorithm (distributed; header = owed T port, box colours).

    Phase 1 exchanges symbols in exactly the order of a minimal star-graph
    route of the source (cycle following, :func:`macrostar_game.star_step`),
    computed on the *home order* of the boxes: the boxes keep the colours they
    had at the source (box ``b`` of colour ``b``), swapped along with them, and
    the symbol to exchange next is found by reading the boxes in colour order.
    A symbol in the leftmost box is exchanged by one T hop, one in another box
    by an S hop bringing its box to the left, then the T hop. Phase 2 sorts the
    boxes as an l-star (section 2.1's Phase 2). Header: the T port still owed
    after an S hop (plus one; 0 = none) and the packed colours. Up to l = 11
    (every network that fits a machine) both share one word, the owed port in
    bits 56-63, so the engine keeps the header inside the packet's record (a
    second word lives in a separate array: one more cache miss per hop);
    beyond, word 0 is the owed port and the colours follow.

    Parameters
    ----------
    topo : MacroStar
    choice : {"first", "random"}
        The star route's choice of the next cycle (ball 0 in front): "first"
        the misplaced symbol of the lowest home position, "random" a uniform
        one; the same rule for the box exchanged in Phase 2's Step 2.1.
    """

    name = "ms-two-phase"
    summary = "star route symbol by symbol, then the boxes as an l-star (paper 004, sec. 3.1)"

    def __init__(self, topo: Topology, choice: str = "first") -> None:
        super().__init__(topo, choice=choice)
        self.packed = self.l * mg.COLOUR_BITS <= OWED_SHIFT
        self.header_width = 1 if self.packed else 1 + mg.colour_words(self.l)

    def init_headers(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """No owed port, and box ``b`` of colour ``b``."""
        m = np.asarray(src).size
        colours = mg.pack_colours(mg.home_colours(m, self.l))
        if self.packed:
            return colours
        out = np.zeros((m, self.header_width), dtype=np.int64)
        out[:, 1:] = colours
        return out

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """A star transposition (one or two hops) or a Phase 2 box exchange."""
        n, l = self.n, self.l
        u = self._u(ctx)
        if self.packed:
            owed, words = headers[:, 0] >> OWED_SHIFT, headers[:, :1] & _COLOURS
        else:
            owed, words = headers[:, 0], headers[:, 1:]
        game = mg.Game(self._rel(nodes, dests), mg.unpack_colours(words, l), n, l)
        m = game.x.size
        # the dirty balls read in home order: row c = the box of colour c
        pos = np.argsort(game.sig, axis=1)  # pos[c] = position of the box of colour c
        dirty_home = ~np.take_along_axis(game.clean, pos[:, :, None], axis=1)
        flat = mg.pick(dirty_home.reshape(m, l * n), u)
        box = pos[game.rows, flat // n]
        offset = flat % n
        to_ball = np.where(box == 0, offset, game.s_port(box))
        ports = np.where(
            owed != 0,
            owed - 1,
            np.where(
                game.x != 0,
                game.place_outside_ball(),
                np.where(game.all_clean, game.order_boxes(u), to_ball),
            ),
        ).astype(np.int64)
        out = np.empty_like(headers)
        owe = np.where((owed == 0) & (game.x == 0) & ~game.all_clean & (box != 0), offset + 1, 0)
        colours = mg.pack_colours(game.swap(ports))
        if self.packed:
            out[:, 0] = (owe.astype(np.int64) << OWED_SHIFT) | colours[:, 0]
        else:
            out[:, 0] = owe
            out[:, 1:] = colours
        return ports, out


class StarEmulation(_MacroStarRouter):
    """Section 3.1's emulation of a star-graph route (distributed; header = owed ports).

    At every node of the emulated k-star route (boxes in order) the next
    transposition ``T_j`` of a minimal star route (cycle following,
    :func:`macrostar_game.star_step`) is taken directly when ``j <= n + 1`` and
    as ``S_i T_j' S_i`` otherwise, with ``i = (j - 2) // n + 1``, ``j' = (j - 2) % n + 2``
    (Definition 2.2: ``S_i T_j' S_i = T_{(i-1) n + j'}``). The header holds the
    ports still owed inside such a triple: ``(p1 + 1) + 256 (p2 + 1)``, 0 when none.
    The route has at most ``star_distance`` T hops and two S hops per far
    transposition (fewer when an S hop happens to reach the destination), at
    most ``3 floor(1.5 n l)`` hops. Two far transpositions in a row in the same
    block give ``S_i S_i`` (a node visited twice): the literal emulation of
    Theorem 3.1.

    Parameters
    ----------
    topo : MacroStar
    choice : {"first", "random"}
        The star route's choice of the next cycle: "first" the misplaced
        symbol at the lowest position, "random" a uniform one.
    """

    name = "ms-star-emulation"
    summary = "minimal star route, far transpositions as S T S (paper 004, Thm. 3.1)"

    header_width = 1

    def __init__(self, topo: Topology, choice: str = "first") -> None:
        # explicit, so that make_router sees the only option and rejects others
        super().__init__(topo, choice=choice)

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """The owed port if any, else the first hop of the next star transposition."""
        n = self.n
        owed = headers[:, 0]
        j = mg.star_step(self._rel(nodes, dests), self._u(ctx))
        block, offset = (j - 1) // n, (j - 1) % n
        return mg.star_emulation_hop(owed, block, offset, n + block - 1)


#: the router classes this module registers
ROUTERS_HERE: tuple[type[Router], ...] = (BallsToBoxes, Merged, StarEmulation, TwoPhase)
