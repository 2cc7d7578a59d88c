"""The balls-to-boxes game of MS(l, n) on arrays (paper 004, sections 2.1, 2.3 and 3).

Helpers of :mod:`mpinet.routing.macrostar`. A packet's position relative to
its destination is the permutation ``rel = d^-1 * c`` (0-based symbols), to be
sorted into the identity. In the game's words: position 0 holds the *outside
ball*; block ``b`` (0-based, positions ``b n + 1 .. b n + n``) is the box at
position ``b``; symbol ``s >= 1`` is a ball of colour ``(s - 1) // n`` (0-based,
the paper's colour minus one) whose place is offset ``(s - 1) % n`` of its box;
symbol 0 is the paper's ball of colour 0. Boxes have colours too, a
permutation ``sig`` of ``0..l-1`` (``sig[b]`` = colour of the box at position
``b``) that moves with the boxes: it is routing state, carried in the header.

A ball is *clean* when it lies at its offset in the box of its colour, a box
when all its balls are. Port numbers are the topology's: ``T_{o+2}`` (the
outside ball with offset ``o`` of the leftmost box) is port ``o``, ``S_{b+1}``
(swap the leftmost box with the box at position ``b >= 1``) is port
``n + b - 1``.
"""

from __future__ import annotations

import numpy as np

from mpinet import perm

#: bits of one box colour in a packed header word, and colours per word
COLOUR_BITS = 5
PER_WORD = 12
_MASK = (1 << COLOUR_BITS) - 1
#: the two deterministic-or-random rules for the algorithms' free choices
CHOICES = ("first", "random")


def relative(k: int, nodes: np.ndarray, dests: np.ndarray) -> np.ndarray:
    """``d^-1 * c`` for every packet: ``(M, k)`` uint8 permutations to sort into the identity."""
    c = perm.unrank(np.asarray(nodes, dtype=np.int64), k)
    d = perm.unrank(np.asarray(dests, dtype=np.int64), k)
    return perm.compose(perm.inverse(d), c)


def colour_words(l: int) -> int:
    """int64 header words holding ``l`` packed box colours (12 per word)."""
    return -(-l // PER_WORD)


def pack_colours(sig: np.ndarray) -> np.ndarray:
    """``(M, l)`` box colours -> ``(M, colour_words(l))`` int64, 5 bits per box."""
    m, l = sig.shape
    out = np.zeros((m, colour_words(l)), dtype=np.int64)
    for b in range(l):
        out[:, b // PER_WORD] |= sig[:, b].astype(np.int64) << (COLOUR_BITS * (b % PER_WORD))
    return out


def unpack_colours(words: np.ndarray, l: int) -> np.ndarray:
    """Inverse of :func:`pack_colours`: ``(M, l)`` int64 box colours."""
    sig = np.empty((words.shape[0], l), dtype=np.int64)
    for b in range(l):
        sig[:, b] = (words[:, b // PER_WORD] >> (COLOUR_BITS * (b % PER_WORD))) & _MASK
    return sig


def home_colours(m: int, l: int) -> np.ndarray:
    """Box colours with the box at position ``b`` of colour ``b`` (boxes in order)."""
    return np.tile(np.arange(l, dtype=np.int64), (m, 1))


def match_colours(rel: np.ndarray, n: int, l: int) -> np.ndarray:
    """Box colours chosen greedily to leave as many balls clean as possible.

    ``W[b, c]`` counts the balls of box ``b`` lying at their place in a box of
    colour ``c``. The pairs ``(b, c)`` are taken in decreasing ``W``, ties
    broken by ``c == b`` first (the box stays where Phase 2 wants it), then the
    lowest ``b``, then the lowest ``c``, skipping boxes and colours already
    taken. This is the assignment of the paper's Fig. 2 (colours 3, 1, 2 for
    the boxes of 6 57 23 41).

    Returns
    -------
    (M, l) int64 colours.
    """
    m = rel.shape[0]
    balls = rel[:, 1:].reshape(m, l, n).astype(np.int16) - 1
    at_place = balls % n == np.arange(n, dtype=np.int16)  # ball s at offset (s - 1) % n
    colour = np.where(at_place & (balls >= 0), balls // n, l)  # l: no colour
    cell = (np.arange(m)[:, None, None] * l + np.arange(l)[None, :, None]) * (l + 1) + colour
    w = np.bincount(cell.ravel(), minlength=m * l * (l + 1)).reshape(m, l, l + 1)
    rows = np.arange(m)
    b_idx, c_idx = np.meshgrid(np.arange(l), np.arange(l), indexing="ij")
    tie = (b_idx == c_idx) * (l * l) + (l * l - 1 - (b_idx * l + c_idx))
    key = w[:, :, :l].astype(np.int32) * (2 * l * l) + tie[None].astype(np.int32)
    sig = np.empty((m, l), dtype=np.int64)
    for _ in range(l):
        best = np.argmax(key.reshape(m, l * l), axis=1)
        b, c = best // l, best % l
        sig[rows, b] = c
        key[rows, b, :] = -1
        key[rows, :, c] = -1
    return sig


def pick(mask: np.ndarray, u: np.ndarray | None) -> np.ndarray:
    """Index of the chosen ``True`` of each row: the first one, or a uniform one (``u``).

    Rows without a ``True`` give 0 (callers mask them out).
    """
    if mask.shape[1] == 0:
        return np.zeros(mask.shape[0], dtype=np.int64)
    if u is None:
        return np.argmax(mask, axis=1)
    cum = np.cumsum(mask, axis=1)
    count = cum[:, -1]
    r = np.minimum((u * count).astype(np.int64), np.maximum(count - 1, 0))
    return np.argmax(cum > r[:, None], axis=1)


class Game:
    """The game state of ``M`` packets: balls, boxes and what is clean.

    Parameters
    ----------
    rel : (M, k) uint8 relative permutations
    sig : (M, l) int64 box colours
    n, l : int
    """

    def __init__(self, rel: np.ndarray, sig: np.ndarray, n: int, l: int) -> None:
        m = rel.shape[0]
        self.n, self.l = n, l
        self.sig = sig
        self.x = rel[:, 0].astype(np.int64)  # outside ball
        self.colour = (self.x - 1) // n  # its colour (-1 for ball 0)
        self.offset = (self.x - 1) % n  # its place in a box of that colour
        boxes = rel[:, 1:].reshape(m, l, n).astype(np.int64)
        self.clean = boxes == 1 + sig[:, :, None] * n + np.arange(n)  # (M, l, n)
        self.box_clean = self.clean.all(axis=2)  # (M, l)
        self.all_clean = self.box_clean.all(axis=1)
        self.rows = np.arange(m)

    def s_port(self, b: np.ndarray) -> np.ndarray:
        """Port ``S_{b+1}``: swap the leftmost box with the box at position ``b >= 1``."""
        return self.n + b - 1

    def box_of(self, colour: np.ndarray) -> np.ndarray:
        """Position of the box of each colour (any value for colours out of range)."""
        return np.argmax(self.sig == colour[:, None], axis=1)

    def place_outside_ball(self) -> np.ndarray:
        """Case 1.2 (outside ball of colour c != 0): S to box c (1.2.1), else T into it (1.2.2)."""
        here = self.sig[:, 0] == self.colour
        return np.where(here, self.offset, self.s_port(self.box_of(self.colour)))

    def order_boxes(self, u: np.ndarray | None) -> np.ndarray:
        """Phase 2 (all boxes clean): l-star routing of the boxes.

        2.2: a leftmost box of colour ``i != 1`` goes to position ``i``; 2.1: the
        box of colour 1 is exchanged with a box not at its position (the chosen one).
        """
        lead = self.sig[:, 0]
        misplaced = self.sig[:, 1:] != np.arange(1, self.l)
        other = pick(misplaced, u) + 1
        return self.s_port(np.where(lead != 0, lead, other))

    def dirty_ball_here(self, u: np.ndarray | None) -> np.ndarray:
        """1.1.2: T to a dirty ball of the leftmost box (the chosen one)."""
        return pick(~self.clean[:, 0, :], u)

    def dirty_box(self, u: np.ndarray | None) -> np.ndarray:
        """1.1.1: S to a dirty box (the chosen one among positions 1..l-1)."""
        return self.s_port(pick(~self.box_clean[:, 1:], u) + 1)

    def swap(self, ports: np.ndarray) -> np.ndarray:
        """Box colours after the hops ``ports`` (S ports swap two entries)."""
        sig = self.sig.copy()
        moved = np.flatnonzero(ports >= self.n)
        if moved.size:
            b = ports[moved] - self.n + 1
            lead = sig[moved, 0].copy()
            sig[moved, 0] = sig[moved, b]
            sig[moved, b] = lead
        return sig


def star_step(rel: np.ndarray, u: np.ndarray | None) -> np.ndarray:
    """Position ``j >= 1`` the first symbol is exchanged with on a minimal star route.

    Cycle following (Akers and Krishnamurthy): a first symbol ``x != 0`` goes to
    its place ``x``; symbol 0 in front is exchanged with a misplaced symbol,
    the chosen one (the lowest position, or uniform with ``u``). Each step
    lowers :func:`mpinet.perm.star_distance` by one.
    """
    k = rel.shape[1]
    x = rel[:, 0].astype(np.int64)
    misplaced = rel[:, 1:] != np.arange(1, k, dtype=rel.dtype)
    return np.where(x != 0, x, pick(misplaced, u) + 1)


def star_emulation_hop(
    owed: np.ndarray, block: np.ndarray, offset: np.ndarray, s_port: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """One hop of Theorem 3.1's emulation (macro-star and IMS): ports and headers.

    ``owed``: the header, the ports still owed inside an ``S T S`` triple
    (``(p1 + 1) + 256 (p2 + 1)``, 0: none); the next star transposition is
    ``T`` at ``offset`` of ``block``, reached through ``s_port``. The owed port
    goes first; else block 0's ``T`` directly; else ``S``, owing ``T`` and ``S``.
    """
    ports = np.where(owed != 0, (owed & 255) - 1, np.where(block == 0, offset, s_port))
    queued = np.where(block == 0, 0, (offset + 1) + ((s_port + 1) << 8))
    out = np.where(owed != 0, owed >> 8, queued)
    return ports.astype(np.int64), out[:, None].astype(np.int64)
