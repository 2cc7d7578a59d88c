"""Exact streaming histograms and their statistics (quantiles, Gini), in bounded memory.

A histogram grows with the *values* it has seen, never with the number of rows added:
:class:`IntHistogram` keeps one int64 per value ``0..max`` (latency, hops, distance: at
most ``steps + 1`` entries), :class:`SparseHistogram` one (value, count) pair per distinct
value (link loads).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mpinet.errors import TraceError


class IntHistogram:
    """Exact histogram of non-negative integers, grown as larger values arrive.

    Attributes
    ----------
    counts : numpy.ndarray
        ``counts[v]`` is how many times ``v`` was added.
    """

    def __init__(self) -> None:
        self.counts = np.zeros(0, dtype=np.int64)

    def add(self, values: np.ndarray) -> None:
        """Count ``values`` (any shape; non-negative integers).

        Raises
        ------
        TraceError
            A negative value.
        """
        v = np.asarray(values, dtype=np.int64).ravel()
        if v.size == 0:
            return
        if v.min() < 0:
            raise TraceError(f"negative value {int(v.min())} where a count was expected")
        b = np.bincount(v)
        if b.size > self.counts.size:
            b[: self.counts.size] += self.counts
            self.counts = b
        else:
            self.counts[: b.size] += b

    def stats(self) -> dict[str, Any]:
        """See :func:`hist_stats`."""
        return hist_stats(np.arange(self.counts.size), self.counts)


class SparseHistogram:
    """Exact histogram of integers kept as sorted (value, count) pairs (distinct values only).

    Attributes
    ----------
    values, counts : numpy.ndarray
        The distinct values seen, ascending, and how often each was seen.
    """

    def __init__(self) -> None:
        self.values = np.zeros(0, dtype=np.int64)
        self.counts = np.zeros(0, dtype=np.int64)

    def add(self, values: np.ndarray) -> None:
        """Count ``values`` (any shape; integers)."""
        v = np.asarray(values, dtype=np.int64).ravel()
        if v.size == 0:
            return
        u, c = np.unique(v, return_counts=True)
        allv = np.concatenate([self.values, u])
        allc = np.concatenate([self.counts, c.astype(np.int64)])
        self.values, inv = np.unique(allv, return_inverse=True)
        self.counts = np.bincount(inv, weights=allc, minlength=self.values.size).astype(np.int64)

    def stats(self) -> dict[str, Any]:
        """:func:`hist_stats` plus ``gini`` (:func:`gini`)."""
        out = hist_stats(self.values, self.counts)
        out["gini"] = gini(self.values, self.counts)
        return out


def _quantile(values: np.ndarray, cum: np.ndarray, n: int, q: float) -> int:
    """Nearest-rank quantile (numpy's ``method="inverted_cdf"``)."""
    k = max(1, math.ceil(q * n))
    return int(values[np.searchsorted(cum, k)])


def hist_stats(values: np.ndarray, counts: np.ndarray) -> dict[str, Any]:
    """Statistics of the multiset where ``values[i]`` occurs ``counts[i]`` times.

    Returns
    -------
    dict
        ``count``, ``total`` (sum of the values, exact), ``mean``, ``min``, ``p50``,
        ``p99`` (nearest rank, as ``numpy.percentile(..., method="inverted_cdf")``) and
        ``max``; all but ``count`` and ``total`` are ``None`` when the multiset is empty.
    """
    n = int(counts.sum())
    if n == 0:
        return {
            "count": 0,
            "total": 0,
            "mean": None,
            "min": None,
            "p50": None,
            "p99": None,
            "max": None,
        }
    cum = np.cumsum(counts)
    nz = np.flatnonzero(counts)
    total = int(sum(int(v) * int(c) for v, c in zip(values[nz], counts[nz], strict=True)))
    return {
        "count": n,
        "total": total,
        "mean": total / n,
        "min": int(values[nz[0]]),
        "p50": _quantile(values, cum, n, 0.50),
        "p99": _quantile(values, cum, n, 0.99),
        "max": int(values[nz[-1]]),
    }


def gini(values: np.ndarray, counts: np.ndarray) -> float | None:
    """Gini coefficient of a multiset given as a histogram.

    ``sum_ij |x_i - x_j| / (2 n^2 mean)``: 0 when every element is equal (every link carries
    the same load), ``(n - 1) / n`` when one element holds everything.

    Parameters
    ----------
    values, counts : numpy.ndarray
        Distinct non-negative values in ascending order and their multiplicities.

    Returns
    -------
    float or None
        ``None`` for an empty multiset, ``0.0`` when all values are zero.
    """
    n = int(counts.sum())
    if n == 0:
        return None
    total = 0
    weighted = 0  # sum over sorted order of rank_i * x_i, ranks from 1, exact in Python ints
    rank = 0
    for v, c in zip(values.tolist(), counts.tolist(), strict=True):
        if c == 0:
            continue
        weighted += v * (c * rank + c * (c + 1) // 2)
        total += v * c
        rank += c
    if total == 0:
        return 0.0
    return 2 * weighted / (n * total) - (n + 1) / n
