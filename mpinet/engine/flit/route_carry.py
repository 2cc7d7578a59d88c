"""Walked routes carried across ranks in the compiled blocks of steps (both router models).

A router whose routes are walked at injection (:class:`~mpinet.routing.route_rows.SourceRouted`:
random ties, ``scc-random``, ``fccn-sroute``, ``borel-cr``, ...) gives each packet a word that
names rows of its rank's table. A head that crosses to another rank needs rows there. The
one-step path walks the route again in Python (the router's ``next_port`` once per hop
index); inside a block of steps (the ideal model's :mod:`~mpinet.engine.flit.rank_loop`, the
iq router's :mod:`~mpinet.engine.flit.iq_ranks`) no router can run, so the sender appends the
route's remaining ports to its message instead (:func:`add_routes`: after the wire rows and
credits, per head in row order, the number of cells and the cells eight to a word) and the
receiver writes them into free rows of its own table and puts their word in the head's row
(:func:`take_routes`), before the rows are taken in. The ports are the router's own, so the
run is the one-rank run, bit for bit. The table does not grow inside a call: the block
returns for room before a step whose arrivals might not find rows, and :class:`CarriedRows`
frees and grows them in Python (:func:`reserve`).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

from mpinet.engine.comm import max_op
from mpinet.engine.flit.ranks import H_CRED, H_ROWS, HEADER
from mpinet.routing.route_rows import SourceRouted
from mpinet.routing.source_routes import PORT_DROP, PORT_END, PORT_NEXT

#: cells (one byte each) packed into a message word
PER_WORD = 8

Carry = namedtuple("Carry", ["ta", "tb", "head", "last", "free", "nfree", "width", "need",
                             "hcol", "wcol", "cw"])  # fmt: skip
Carry.__doc__ = """The walked rows a compiled block reads and writes: the table's cells
(``ta``, flat uint8), the rows' links (``tb``, int32), each row's first row of its route
(``head``) and a route's last cell (``last``), the free-row stack ``free[:nfree[0]]``; ``width``
the cells of a row (0: no walked rows, nothing carried); ``need``: free rows a step's
arrivals may take at most (the block returns for room below it); ``hcol``, ``wcol``: the
columns of a message row's head flag and route word (the model's row layout); ``cw``: the
words of a credit in the message (2, a pair; the iq lean path's, 1)."""


def words_per_head(cells: int) -> int:
    """Message words of a head's route of up to ``cells`` cells: its count, then the cells."""
    return 1 + -(-int(cells) // PER_WORD)


def empty() -> Carry:
    """The :class:`Carry` of a router without walked rows (the block carries nothing)."""
    z = np.zeros(0, np.int64)
    return Carry(np.zeros(0, np.uint8), np.zeros(0, np.int32), z, z, z, np.zeros(1, np.int64),
                 np.int64(0), np.int64(0), np.int64(0), np.int64(0), np.int64(2))  # fmt: skip


def of(rows: SourceRouted, need: int, cols: tuple[int, int], cw: int = 2) -> Carry:
    """``rows``' arrays as they are now (a growth replaces them), its free rows in ``nfree``
    (give them back with :func:`give_back` after the call); ``cols``: ``(hcol, wcol)``;
    ``cw``: a credit's words in the message."""
    return Carry(rows.table.reshape(-1), rows.links, rows.head, rows.last, rows.free,
                 np.array([rows.nfree], np.int64), np.int64(rows.width), np.int64(need),
                 np.int64(cols[0]), np.int64(cols[1]), np.int64(cw))  # fmt: skip


def give_back(rows: SourceRouted, cy: Carry) -> None:
    """The free rows a call left (it took rows from the stack's top)."""
    if cy.width:
        rows.nfree = int(cy.nfree[0])


def rows_needed(max_in: int, cells: int, width: int) -> int:
    """Free rows the heads of one step's messages may take: ``max_in`` wire rows in, each
    a head whose route of up to ``cells`` cells takes rows of ``width - 1`` cells."""
    return max(max_in, 1) * max(1, -(-int(cells) // (width - 1)))


def reserve(rows: SourceRouted, keep: np.ndarray, need: int) -> bool:
    """Free every row but those of the words ``keep`` (packets on the rank, injections drawn
    and not yet run), then grow the table until ``2 * need`` rows are free; returns whether
    the table's arrays were replaced (the compiled rule must be read again)."""
    before = rows.table
    rows.keep(keep)
    if rows.nfree < 2 * need:
        rows.grow(2 * need)
    return rows.table is not before


@njit(cache=True, error_model="numpy")
def add_routes(ex, cy):
    """Append to each message the remaining route of each head among its rows (in row
    order): its cell count, then the cells from the head's word on, eight to a word."""
    width = ex.width
    ta, tb, rw = cy.ta, cy.tb, cy.width
    for j in range(ex.send.shape[0]):
        m = ex.send[j]
        at = ex.nsend[j]
        for i in range(m[H_ROWS]):
            r = HEADER + i * width
            if not m[r + cy.hcol]:
                continue
            h = m[r + cy.wcol]
            n = 0  # the cells to carry: up to the route's end, its drop marker included
            while True:
                c = ta[h]
                if c == PORT_NEXT:
                    h = np.int64(tb[h // rw]) * rw
                    continue
                if c == PORT_END:
                    break
                k = at + 1 + n // 8
                if n % 8 == 0:
                    m[k] = 0
                m[k] |= np.int64(c) << (8 * (n % 8))
                n += 1
                if c == PORT_DROP:
                    break
                h += 1
            m[at] = n
            at += 1 + (n + 7) // 8
        ex.nsend[j] = at


@njit(cache=True, error_model="numpy")
def take_routes(ex, cy):
    """Give each head that came in the messages rows of this rank holding its route as the
    message carries it, their word in the head's row (read as the packet's header when
    the rows are taken in)."""
    width = ex.width
    ta, tb, rw = cy.ta, cy.tb, cy.width
    per = rw - 1
    free, nfree = cy.free, cy.nfree
    for j in range(ex.recv.shape[0]):
        m = ex.recv[j]
        at = HEADER + m[H_ROWS] * width + cy.cw * m[H_CRED]
        for i in range(m[H_ROWS]):
            r = HEADER + i * width
            if not m[r + cy.hcol]:
                continue
            n = m[at]
            nrows = max(1, (n + per - 1) // per)
            first = free[nfree[0] - 1]
            prev = -1
            for _ in range(nrows):  # popped as SourceRouted._take pops them
                nfree[0] -= 1
                row = free[nfree[0]]
                cy.head[row] = first
                cy.last[row] = -1
                tb[row] = -1
                ta[row * rw : (row + 1) * rw] = PORT_END
                if prev >= 0:
                    tb[prev] = row
                    ta[prev * rw + per] = PORT_NEXT
                prev = row
            row = first
            for c in range(n):
                if c > 0 and c % per == 0:
                    row = tb[row]
                ta[row * rw + c % per] = (m[at + 1 + c // 8] >> (8 * (c % 8))) & 0xFF
            if n:
                cy.last[row] = row * rw + (n - 1) % per
            m[r + cy.wcol] = first * rw
            at += 1 + (n + 7) // 8


class CarriedRows:
    """A rank's side of the walked rows in blocks of steps: the messages' room for the
    longest route walked on any rank, and free rows before each call for the heads a step
    may bring.

    Parameters
    ----------
    rows : SourceRouted or None
        The router's rows (None: nothing walked, nothing carried).
    comm : Comm
        The run's communicator (:meth:`start` is collective).
    max_in : int
        Wire rows a step's messages bring at most.
    cols : tuple of int
        ``(hcol, wcol)``: a message row's head flag and route word (:class:`Carry`).
    room : callable
        ``room(words)``: the messages' room for ``words`` words per head's route.
    live : callable
        ``live()``: the route words of the packets on the rank.
    regrown : callable
        Called after the table's arrays were replaced (the compiled rule reads them).
    cw : int
        A credit's words in the message (:class:`Carry`).
    """

    def __init__(self, rows: SourceRouted | None, comm: Any, max_in: int,
                 cols: tuple[int, int], room: Callable[[int], None],
                 live: Callable[[], np.ndarray], regrown: Callable[[], None],
                 cw: int = 2) -> None:  # fmt: skip
        self.rows, self.comm, self.max_in, self.cols, self.cw = rows, comm, max_in, cols, cw
        self.room, self.live, self.regrown = room, live, regrown
        self.need = 0
        self.none = empty()

    def start(self) -> None:
        """Before a block's call, once its injections are walked: every rank's longest route
        (one ``Allreduce``), the messages' room for it and the rows a step may take.
        Collective (nothing without walked rows: the same on every rank)."""
        if self.rows is None:
            return
        mine = np.array([self.rows.longest], np.int64)
        most = np.empty_like(mine)
        self.comm.Allreduce(mine, most, op=max_op())
        cells = int(most[0])
        self.room(words_per_head(cells))
        self.need = rows_needed(self.max_in, cells, self.rows.width)

    def bundle(self, later: np.ndarray) -> Carry:
        """The :class:`Carry` of a call: rows freed (all but those of the packets on the
        rank and of ``later``, the header rows of injections walked and not yet run, their
        word first) and grown first where fewer than twice :attr:`need` are free."""
        rows = self.rows
        if rows is None:
            return self.none
        if rows.nfree < 2 * self.need:
            keep = np.concatenate([np.asarray(self.live(), np.int64).reshape(-1),
                                   np.asarray(later[:, 0], np.int64)])  # fmt: skip
            if reserve(rows, keep, self.need):
                self.regrown()  # the rule reads the table's new arrays
        return of(rows, self.need, self.cols, self.cw)

    def done(self, cy: Carry) -> None:
        """After the call: the free rows it left."""
        if self.rows is not None:
            give_back(self.rows, cy)
