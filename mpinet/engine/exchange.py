"""Moving rows of packet records between ranks: one ``Alltoallv`` per call.

Rows are int64 records (one packet each, fixed width). Counts travel first
with ``Alltoall``; the rows then move in a single buffer-based ``Alltoallv``
(never pickled, never one message per packet).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def displacements(counts: np.ndarray) -> np.ndarray:
    """Exclusive prefix sums of ``counts``."""
    return np.cumsum(counts) - counts  # two calls: it runs twice every step


def exchange_rows(comm: Any, rows: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """Send each row of ``rows`` (M, F) int64 to rank ``owner[i]``; return received rows.

    Received rows are grouped by source rank in rank order, each group in the
    order the sender had them (stable).
    """
    size = comm.Get_size()
    width = rows.shape[1]
    if size == 1:
        return rows
    scount = np.bincount(owner, minlength=size).astype(np.int64)
    if np.count_nonzero(scount) <= 1:  # one destination (always on 2 ranks): no sort
        send = np.ascontiguousarray(rows)
    else:
        key = owner.astype(np.int16 if size < 32768 else np.int32)
        send = np.take(rows, np.argsort(key, kind="stable"), axis=0)
    rcount = np.empty(size, dtype=np.int64)
    comm.Alltoall(scount, rcount)
    recv = np.empty((int(rcount.sum()), width), dtype=np.int64)
    sc, rc = scount * width, rcount * width
    comm.Alltoallv([send, (sc, displacements(sc))], [recv, (rc, displacements(rc))])
    return recv


def exchange_packets(
    comm: Any, rows: np.ndarray, owner: np.ndarray, credits: np.ndarray, cowner: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """One step's exchange: packet rows to their new owners, credits to the upstream ranks.

    Both ride in one ``Alltoallv`` of int64: each destination's segment is its
    packet rows followed by its credit indices (counts first, with ``Alltoall``).
    Returns (rows received, credit indices received).
    """
    size = comm.Get_size()
    width = rows.shape[1]
    po = np.argsort(owner.astype(np.int32), kind="stable")
    co = np.argsort(cowner.astype(np.int32), kind="stable")
    pc = np.bincount(owner, minlength=size).astype(np.int64)
    cc = np.bincount(cowner, minlength=size).astype(np.int64)
    scount = np.stack([pc, cc], 1).ravel()
    rcount = np.empty(2 * size, dtype=np.int64)
    comm.Alltoall(scount.reshape(size, 2), rcount.reshape(size, 2))
    rp, rc = rcount[0::2], rcount[1::2]
    seg = pc * width + cc
    sd = displacements(seg)
    prow = np.take(rows, po, axis=0)
    if not cc.any():  # rows only: grouped by owner already, each segment in place
        send = prow.reshape(-1)
    else:
        send = _interleave(prow, np.take(credits, co), pc, cc, seg, sd, width)
    rseg = rp * width + rc
    recv = np.empty(int(rseg.sum()), dtype=np.int64)
    rd = displacements(rseg)
    comm.Alltoallv([send, (seg, sd)], [recv, (rseg, rd)])
    if not rc.any():  # no credits came (unbounded buffers): the rows are the whole buffer
        return recv.reshape(-1, width), recv[:0]
    out_rows = np.empty((int(rp.sum()), width), dtype=np.int64)
    out_cred = np.empty(int(rc.sum()), dtype=np.int64)
    i = j = 0
    for r in range(size):
        a = rd[r]
        out_rows[i : i + rp[r]] = recv[a : a + rp[r] * width].reshape(-1, width)
        out_cred[j : j + rc[r]] = recv[a + rp[r] * width : a + rseg[r]]
        i += rp[r]
        j += rc[r]
    return out_rows, out_cred


def _interleave(prow, pcred, pc, cc, seg, sd, width) -> np.ndarray:
    """The send buffer: for each rank, its packet rows then its credits."""
    send = np.empty(int(seg.sum()), dtype=np.int64)
    pstart, cstart = displacements(pc), displacements(cc)
    for r in range(pc.size):  # one memcpy pair per rank, not per packet
        a = sd[r]
        send[a : a + pc[r] * width] = prow[pstart[r] : pstart[r] + pc[r]].ravel()
        send[a + pc[r] * width : a + seg[r]] = pcred[cstart[r] : cstart[r] + cc[r]]
    return send
