"""The BookSim2 anynet reader: routers, their terminals and links; one node per router.

What is read is what BookSim's ``AnyNet::readFile`` accepts
(``src/networks/anynet.cpp``; docs/booksim.md): a line is a head, ``router R``
or ``node T``, then any number of bodies, ``router R2`` or ``node T2``, each
optionally followed by a latency. ``router R router R2`` is a link,
``router R node T`` and ``node T router R`` attach terminal T to router R.
mpinet node ``R`` is router ``R``; its ports are its neighbour routers in the
order they are listed (on its own line when every link is listed from both
ends, as BookSim's users and ``mpinet export --format anynet`` write; in file
order at either end when every link is listed once, which BookSim also reads,
adding the reverse itself).

Where BookSim is lax this reader refuses, naming the file, the line and the fault:

- router ids must be ``0..R-1`` (BookSim indexes its router array by id and
  reads past it otherwise), so they are kept as they are (no labels); terminal
  ids must be ``0..T-1`` (BookSim asserts it); a terminal hangs on one router;
- ids and latencies are decimal integers (BookSim's ``atoi`` makes ``x`` a 0),
  latencies positive; a token that is neither ``router``, ``node``, an id after
  one of them nor one latency after an id is refused (BookSim asserts, or takes
  a second latency as a new one);
- a router heads one line only, a link is listed once per end (BookSim merges
  repeats), a file lists every link from both ends or every link once (a mix
  is a one-way link), no self loops;
- **latencies**: mpinet's links are unit-latency (a hop is one step), and
  BookSim's ``min`` routing is a Dijkstra over latencies, so a router-to-router
  latency other than 1 is refused rather than ignored (the routes would differ
  from BookSim's); a terminal's latency is checked and ignored (mpinet has no
  terminal links).

Tabs and carriage returns separate tokens as spaces do (BookSim splits on
spaces only); the format has no comments.
"""

from __future__ import annotations

import io
from array import array

import numpy as np

from mpinet.topology.filegraph import QUOTE_CHARS, FileError, links_from_pairs, port_tables, shown

_ROUTER, _NODE = b"router", b"node"
_KINDS = (_ROUTER, _NODE)


def _text(tok: bytes) -> str:
    """A token as a message shows it: as it is when short and printable, else quoted and cut."""
    text = tok.decode("utf-8", "replace")
    return text if len(text) <= QUOTE_CHARS and text.isprintable() else shown(tok)


#: words other tools use for a router, with what BookSim's reader does with them
_ALIASES = (b"switch", b"Switch", b"Router", b"ROUTER", b"sw", b"s")


def _unknown(tok: bytes, where: str) -> str:
    """The words for a token that is neither ``router`` nor ``node``."""
    if tok in _ALIASES or tok.lower() == b"switch":
        return (
            f"unknown token {shown(tok)} {where}: BookSim's anynet names a switch `router` "
            "(its reader knows only `router` and `node`, and stops on any other word with "
            "'illegal head type'); write `router ID`"
        )
    return f"unknown token {shown(tok)} {where}"


class _Lines:
    """The state of one pass: links, routers seen, terminals, for messages the lines."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.line = 0
        self.u, self.v, self.where = array("q"), array("q"), array("q")
        self.routers = array("q")  # every router id named (heads, bodies, terminals' routers)
        self.heads: dict[int, int] = {}  # router -> the line it heads
        self.term: dict[int, tuple[int, int]] = {}  # terminal -> (router, line)

    def fail(self, what: str) -> None:
        raise FileError(f"{self.source} line {self.line}: {what}")

    def number(self, kind: bytes, tok: bytes | None) -> int:
        if tok is None:
            self.fail(f"{shown(kind)} needs an id after it")
        if not tok.isdigit():
            self.fail(f"{_text(kind)} id {shown(tok)} is not a non-negative integer")
        if len(tok) > 18:
            self.fail(f"{_text(kind)} id {_text(tok)} is too large (ids must be below 10**18)")
        return int(tok)

    def attach(self, term: int, router: int) -> None:
        was = self.term.get(term)
        if was is not None and was[0] != router:
            self.fail(
                f"node {term} is attached to router {router} here and to router {was[0]} at "
                f"line {was[1]} (a terminal hangs on one router)"
            )
        self.term[term] = (router, self.line)
        self.routers.append(router)

    def read(self, toks: list[bytes]) -> None:
        head = toks[0]
        if head not in _KINDS:
            self.fail(_unknown(head, "(a line starts with router ID or node ID)"))
        hid = self.number(head, toks[1] if len(toks) > 1 else None)
        if head == _ROUTER:
            first = self.heads.setdefault(hid, self.line)
            if first != self.line:
                self.fail(
                    f"router {hid} is listed twice (first at line {first}; "
                    "give each router one line)"
                )
            self.routers.append(hid)
        i = 2
        while i < len(toks):
            kind = toks[i]
            if kind not in _KINDS:
                self.fail(
                    _unknown(
                        kind,
                        "(expected router ID or node ID, each optionally followed by one latency)",
                    )
                )
            bid = self.number(kind, toks[i + 1] if i + 1 < len(toks) else None)
            i += 2
            lat = 1
            if i < len(toks) and toks[i] not in _KINDS:
                if not toks[i].isdigit() or not toks[i].strip(b"0"):
                    self.fail(f"latency {shown(toks[i])} is not a positive integer")
                if len(toks[i]) > 18:  # int() of 5,000 digits raises; BookSim's atoi wraps
                    self.fail(f"latency {shown(toks[i])} is too large (links are unit-latency)")
                lat = int(toks[i])
                i += 1
            if head == _NODE and kind == _NODE:
                self.fail(f"node {hid} is linked to node {bid} (a terminal links to a router)")
            if head == _NODE:
                self.attach(hid, bid)
            elif kind == _NODE:
                self.attach(bid, hid)
            else:
                if lat != 1:
                    self.fail(
                        f"latency {lat} on the link from router {hid} to router {bid}: mpinet's "
                        "links are unit-latency (one step a hop) and BookSim routes by latency, "
                        "so only 1 is accepted (set it to 1 or leave it out)"
                    )
                self.u.append(hid)
                self.v.append(bid)
                self.where.append(self.line)
                self.routers.append(bid)


def _dense(ids: np.ndarray, what: str, top: str, why: str, source: str) -> int:
    """The count of ``ids`` when they are exactly ``0..K-1``, else an error naming the gap."""
    uniq = np.unique(ids)
    if uniq.size and uniq[-1] != uniq.size - 1:
        gap = int(np.flatnonzero(uniq != np.arange(uniq.size))[0])
        raise FileError(
            f"{source}: {what} ids must be 0..{top}-1 ({why}); {what} {gap} is "
            f"missing (ids go up to {uniq[-1]})"
        )
    return int(uniq.size)


def parse(buf: np.ndarray, source: str) -> dict:
    """Parse an anynet file held in ``buf`` (uint8 bytes of the whole file).

    Returns
    -------
    dict with ``nbt``, ``rev`` (tables over routers ``0..R-1``), ``labels``
    (None: router ids are kept), ``ports``, ``port_classes`` (None: the format
    names no ports), ``links`` (router-to-router entries read).
    """
    r = _Lines(source)
    for r.line, raw in enumerate(io.BytesIO(memoryview(buf)), 1):
        toks = raw.split()
        if toks:
            r.read(toks)
    routers = np.frombuffer(r.routers, dtype=np.int64)
    if routers.size == 0:
        raise FileError(f"{source}: no routers (an empty network)")
    n = _dense(routers, "router", "R", "BookSim indexes its routers by id", source)
    terms = np.fromiter(r.term, dtype=np.int64, count=len(r.term))
    _dense(terms, "node", "T", "BookSim's traffic manager numbers its terminals so", source)
    u = np.frombuffer(r.u, dtype=np.int64)
    v = np.frombuffer(r.v, dtype=np.int64)
    where = np.frombuffer(r.where, dtype=np.int64)
    src, dst, _, _ = links_from_pairs(u, v, where, n, source)
    nbt, rev = port_tables(src, dst, n, source)
    return {"nbt": nbt, "rev": rev, "labels": None, "ports": None,
            "port_classes": None, "links": int(u.size)}  # fmt: skip
