"""Counter-based random numbers keyed by (seed, packet, hop, stream).

A value depends only on its key, never on how many values were drawn before
or on which rank draws it, so a run gives the same packet paths on any number
of MPI ranks. The mixer is SplitMix64's finaliser applied to a combination of
the key words (wrap-around uint64 arithmetic, one compiled pass over the keys).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from mpinet import numba_cache  # noqa: F401 (an unreadable kernel index compiles again)

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)

#: streams used by mpinet itself (any other int is free for callers)
STREAM_DEST = 1
STREAM_INJECT = 2
STREAM_ROUTE = 3


def _mix(x: np.ndarray) -> np.ndarray:
    x = x ^ (x >> _S30)
    x = x * _M1
    x = x ^ (x >> _S27)
    x = x * _M2
    return x ^ (x >> _S31)


def _stream_key(seed: int, stream: int) -> np.uint64:
    """The first mix of every draw of (seed, stream)."""
    with np.errstate(over="ignore"):
        return _mix(np.uint64(seed & 0xFFFFFFFFFFFFFFFF) * _GOLD + np.uint64(stream))


def bits(seed: int, key: object, hop: object = 0, stream: int = 0) -> np.ndarray:
    """64 random bits per element of ``key`` (broadcast with ``hop``)."""
    with np.errstate(over="ignore"):
        k = np.asarray(key).astype(np.uint64)
        h = np.asarray(hop).astype(np.uint64)
    x = _stream_key(seed, stream)
    shape = np.broadcast_shapes(k.shape, h.shape)
    out = np.empty(shape, dtype=np.uint64)
    if out.size:  # np.broadcast_to, not broadcast_arrays: numba reads a view's writeable flag,
        # which warns (FutureWarning) for broadcast_arrays' views when it compiles
        _bits(x, _flat(k, shape), _flat(h, shape), out.ravel())
    return out if out.ndim else out[()]


def _flat(a: np.ndarray, shape: tuple) -> np.ndarray:
    """``a`` broadcast to ``shape``, contiguous, writeable (one compiled type), flattened."""
    if a.shape != shape:
        a = np.broadcast_to(a, shape)
    a = np.ascontiguousarray(a).ravel()
    return a if a.flags.writeable else a.copy()


@nb.njit(cache=True, nogil=True)
def _bits(x0, k, h, out):
    """:func:`bits` with the key and hop words broadcast, in one pass.

    Why compiled: numpy makes 17 passes over the keys (about 1 s for ms:3,3's
    29 M destinations, against 0.1 s), and costs more even for 100 keys
    (12 us against 9).
    """
    for i in range(out.size):
        out[i] = _mix_one(_mix_one(x0 ^ (k[i] * _GOLD)) ^ (h[i] + _GOLD))


@nb.njit(cache=True, nogil=True, inline="always")
def _mix_one(x):
    x = x ^ (x >> _S30)
    x = x * _M1
    x = x ^ (x >> _S27)
    x = x * _M2
    return x ^ (x >> _S31)


def grid_below(
    seed: int, keys: np.ndarray, hops: np.ndarray, p: float, stream: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Where ``uniform(seed, keys[None, :], hops[:, None], stream) < p``: (rows, cols) of
    the hits, rows (hops) major, as ``np.nonzero`` gives them, without making the floats.

    Exact: ``uniform`` is ``(bits >> 11) * 2**-53``, so ``u < p`` is ``bits >> 11 <
    ceil(p * 2**53)`` (scaling by a power of two is exact).
    """
    k = np.ascontiguousarray(np.asarray(keys).astype(np.uint64).ravel())
    h = np.ascontiguousarray(np.asarray(hops).astype(np.uint64).ravel())
    thr = below_threshold(p)
    out = np.empty(k.size * h.size, dtype=np.int64)
    n = _grid_below(_stream_key(seed, stream), k, h, thr, out)
    return np.divmod(out[:n], max(k.size, 1))


def below_threshold(p: float) -> np.uint64:
    """The integer that ``bits >> 11`` stays below where ``uniform < p`` (:func:`grid_below`)."""
    return np.uint64(min(math.ceil(float(p) * 2.0**53), 2**53)) if p > 0 else np.uint64(0)


def stream_key(seed: int, stream: int) -> np.uint64:
    """The first mix of every draw of ``(seed, stream)``, for the compiled draws below."""
    return _stream_key(seed, stream)


@nb.njit(cache=True, nogil=True, inline="always")
def key_mix(x0, key):
    """The first mix of ``key`` (:func:`grid_below`'s, once per key)."""
    return _mix_one(x0 ^ (np.uint64(key) * _GOLD))


@nb.njit(cache=True, nogil=True, inline="always")
def hits_below(km, hop, thr, hit):
    """``hit[c]``: whether the draw of (key ``c``, ``hop``) is below the threshold ``thr``
    (:func:`below_threshold`), from the keys' first mixes ``km``: one row of
    :func:`grid_below`, for a kernel that draws step by step (the same bits)."""
    hh = np.uint64(hop) + _GOLD
    for c in range(km.size):  # branch-free: LLVM vectorizes the mixes
        hit[c] = (_mix_one(km[c] ^ hh) >> _S11) < thr


@nb.njit(cache=True, nogil=True, inline="always")
def integer_below(x0, key, n):
    """:func:`integers` ``(seed, key, n)`` at hop 0 for one key, ``x0`` the stream's
    :func:`stream_key`: the same float and the same truncation."""
    b = _mix_one(_mix_one(x0 ^ (np.uint64(key) * _GOLD)) ^ _GOLD)
    u = np.float64(b >> _S11) * (1.0 / (1 << 53))
    return min(np.int64(u * np.float64(n)), n - 1)


@nb.njit(cache=True, nogil=True)
def _grid_below(x0, k, h, thr, out):
    """:func:`grid_below` in one pass (each key's first mix once, not once per hop).

    Why compiled: a Bernoulli injection draws one value per node and step; as floats in
    numpy that was a third of a light flit run (docs/performance.md)."""
    km = np.empty(k.size, dtype=np.uint64)
    hit = np.empty(k.size, dtype=np.uint8)
    for c in range(k.size):
        km[c] = _mix_one(x0 ^ (k[c] * _GOLD))
    n = 0
    for r in range(h.size):
        hh = h[r] + _GOLD
        for c in range(k.size):  # branch-free: LLVM vectorizes the mixes (2x faster)
            hit[c] = (_mix_one(km[c] ^ hh) >> _S11) < thr
        for c in range(k.size):
            if hit[c]:
                out[n] = r * k.size + c
                n += 1
    return n


def uniform(seed: int, key: object, hop: object = 0, stream: int = 0) -> np.ndarray:
    """Uniform floats in [0, 1) keyed by ``(seed, key, hop, stream)``."""
    return (bits(seed, key, hop, stream) >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def integers(seed: int, key: object, n: object, hop: object = 0, stream: int = 0) -> np.ndarray:
    """Uniform integers in ``[0, n)`` (``n`` broadcasts) keyed like :func:`uniform`."""
    u = uniform(seed, key, hop, stream)
    return np.minimum((u * np.asarray(n)).astype(np.int64), np.asarray(n, dtype=np.int64) - 1)
