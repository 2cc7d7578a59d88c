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
    d = np.zeros_like(counts)
    np.cumsum(counts[:-1], out=d[1:])
    return d


def exchange_rows(comm: Any, rows: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """Send each row of ``rows`` (M, F) int64 to rank ``owner[i]``; return received rows.

    Received rows are grouped by source rank in rank order, each group in the
    order the sender had them (stable).
    """
    size = comm.Get_size()
    width = rows.shape[1]
    if size == 1:
        return rows
    key = owner.astype(np.int16 if size < 32768 else np.int32)
    order = np.argsort(key, kind="stable")
    send = np.take(rows, order, axis=0)
    scount = np.bincount(owner, minlength=size).astype(np.int64)
    rcount = np.empty(size, dtype=np.int64)
    comm.Alltoall(scount, rcount)
    recv = np.empty((int(rcount.sum()), width), dtype=np.int64)
    sc, rc = scount * width, rcount * width
    comm.Alltoallv([send, (sc, displacements(sc))], [recv, (rc, displacements(rc))])
    return recv
