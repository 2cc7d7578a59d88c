"""The edge-list reader: ``u v [port [class]]`` per line, ``#`` comments.

One compiled pass over the file's bytes finds each line's two node ids and the
hashes and offsets of its optional port name and class, into preallocated
arrays (no Python object per line): 3 M lines in about a second. Node ids are
non-negative integers; nodes are numbered in the order of their ids, so a file
with ids ``0..N-1`` keeps them. A port name (third token) is the port at the
line's first node; naming ports needs every link listed from both ends.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from mpinet.topology.filegraph import QUOTE_CHARS, FileError, links_from_pairs, port_tables, shown

#: bytes of working memory per line of the file (scan arrays, links, sorts): the peak above
#: the file measured 177-211 per line on dense and sparse ids (docs/networks.md, "The read
#: plan"), and 1.2x the most
BYTES_PER_LINE = 256

_ERRORS = {
    1: "node id {tok} is not a non-negative integer",
    2: "a link needs two node ids, found one ({tok})",
    3: "too many fields at {tok} (expected: u v [port [class]])",
    4: "node id {tok} is too large (ids must be below 2**62)",
}


@nb.njit(cache=True, nogil=True)
def _hash(buf, a, b):
    h = np.uint64(14695981039346656037)  # FNV-1a
    for i in range(a, b):
        h = (h ^ np.uint64(buf[i])) * np.uint64(1099511628211)
    return h


@nb.njit(cache=True, nogil=True)
def _scan(buf, u, v, line_of, ntok, h3, s3, h4, s4):
    """Parse every line; returns (lines kept, error code, line, token start, token end)."""
    n = buf.size
    i = 0
    line = 1
    m = 0
    limit = np.int64(1) << 62
    while i < n:
        tok = 0
        first = i
        while True:
            while i < n and (buf[i] == 32 or buf[i] == 9 or buf[i] == 13):
                i += 1
            if i >= n or buf[i] == 10 or buf[i] == 35:  # end of line, '#'
                break
            a = i
            if tok == 0:
                first = a
            while i < n and buf[i] != 32 and buf[i] != 9 and buf[i] != 13 and buf[i] != 10:
                i += 1
            if tok < 2:
                x = np.int64(0)
                for j in range(a, i):
                    c = buf[j]
                    if c < 48 or c > 57:
                        return m, 1, line, a, i
                    d = np.int64(c - 48)
                    if x > (limit - 1 - d) // 10:  # checked before the product could wrap
                        return m, 4, line, a, i
                    x = x * 10 + d
                if tok == 0:
                    u[m] = x
                else:
                    v[m] = x
            elif tok == 2:
                h3[m] = _hash(buf, a, i)
                s3[m] = a
            elif tok == 3:
                h4[m] = _hash(buf, a, i)
                s4[m] = a
            else:
                return m, 3, line, a, i
            tok += 1
        while i < n and buf[i] != 10:  # the rest of a comment
            i += 1
        if tok == 1:
            return m, 2, line, first, i
        if tok >= 2:
            line_of[m] = line
            ntok[m] = tok
            m += 1
        i += 1
        line += 1
    return m, 0, line, 0, 0


def _token(buf: np.ndarray, a: int) -> str:
    """The token at byte ``a`` as text (a port name or class; a message quotes it shown)."""
    b = a
    while b < buf.size and buf[b] not in (32, 9, 13, 10):
        b += 1
    return bytes(buf[a:b]).decode("utf-8", "replace")


def parse(buf: np.ndarray, source: str) -> dict:
    """Parse an edge list held in ``buf`` (uint8 bytes of the whole file).

    Returns
    -------
    dict with ``nbt``, ``rev`` (tables), ``labels`` (the file ids, or None when
    they are ``0..N-1``), ``ports``, ``port_classes`` (None when unnamed),
    ``links`` (lines read).
    """
    cap = int(np.count_nonzero(buf == 10)) + 1
    u = np.empty(cap, np.int64)
    v = np.empty(cap, np.int64)
    line_of = np.empty(cap, np.int64)
    ntok = np.zeros(cap, np.int8)
    h3 = np.zeros(cap, np.uint64)
    h4 = np.zeros(cap, np.uint64)
    s3 = np.zeros(cap, np.int64)
    s4 = np.zeros(cap, np.int64)
    m, err, line, a, b = _scan(buf, u, v, line_of, ntok, h3, s3, h4, s4)
    if err:
        tok = shown(bytes(buf[a : min(b, a + 4 * QUOTE_CHARS)]), size=b - a)  # never copied whole
        raise FileError(f"{source} line {line}: " + _ERRORS[err].format(tok=tok))
    u, v, line_of, ntok = u[:m], v[:m], line_of[:m], ntok[:m]
    if m == 0:
        raise FileError(f"{source}: no links (an empty network)")
    ids, labels = _number(u, v)
    n = int(ids[0])
    u, v = ids[1 : m + 1], ids[m + 1 :]
    named = ntok >= 3
    if named.any() and not named.all():
        i, j = np.flatnonzero(~named)[0], np.flatnonzero(named)[0]
        raise FileError(
            f"{source} line {line_of[i]}: no port name, but line {line_of[j]} names its port "
            "(name every line's port or none)"
        )
    src, dst, at, directed = links_from_pairs(u, v, line_of, n, source, labels=labels)
    ports = classes = port = None
    if named.all():
        if not directed:
            raise FileError(
                f"{source} line {line_of[0]}: a port name is the port at the line's first node, "
                "so naming ports needs every link listed from both ends (as `mpinet export "
                "--format edgelist` writes)"
            )
        ports, classes, port = _names(buf, h3[:m], s3[:m], h4[:m], s4[:m], ntok, line_of, source)
        port = port[at]
    nbt, rev = port_tables(src, dst, n, source, port=port, where=line_of[at], labels=labels)
    return {"nbt": nbt, "rev": rev, "labels": labels, "ports": ports,
            "port_classes": classes, "links": m}  # fmt: skip


def _number(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``[N, ids of u..., ids of v...]`` and the file ids by node (None when they are 0..N-1)."""
    both = np.concatenate(([0], u, v))
    top = int(both.max()) + 1
    if top <= 4 * (both.size - 1) + 1024:  # dense ids: a presence map, no sort
        present = np.zeros(top, dtype=bool)
        present[both[1:]] = True
        if present.all():
            both[0] = top
            return both, None
        new = np.cumsum(present) - 1
        labels = np.flatnonzero(present)
        both[1:] = new[both[1:]]
    else:
        labels, inv = np.unique(both[1:], return_inverse=True)
        both[1:] = inv
    both[0] = labels.size
    return both, labels


def _names(buf, h3, s3, h4, s4, ntok, line_of, source):
    """Port names by first appearance; each link's port index; one class per name."""
    uniq, first, inv = np.unique(h3, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # names in order of first appearance
    index = np.empty(uniq.size, dtype=np.int64)
    index[order] = np.arange(uniq.size)
    names = tuple(_token(buf, int(s3[first[k]])) for k in order)
    # one class per name: every classed line's class against the name's first classed line
    rows = np.flatnonzero(ntok >= 4)
    named, at = np.unique(inv[rows], return_index=True)
    ref = np.full(uniq.size, -1, dtype=np.int64)  # the name's first classed line
    ref[named] = rows[at]
    bad = np.flatnonzero(h4[rows] != h4[ref[inv[rows]]])
    if bad.size:
        j = rows[bad[0]]
        i = ref[inv[j]]
        raise FileError(
            f"{source} line {line_of[j]}: port {shown(names[index[inv[j]]])} has class "
            f"{shown(_token(buf, int(s4[j])))}, but line {line_of[i]} gives it "
            f"{shown(_token(buf, int(s4[i])))}"
        )
    classes = tuple(_token(buf, int(s4[ref[k]])) if ref[k] >= 0 else "link" for k in order)
    return names, classes, index[inv]
