"""Prototype (not kept): waiting buffers parked in a list; a body's VC marked in its credit word."""

from __future__ import annotations

from numba import njit

PARKED, STALE = 4, 8
BIG, HALF = 1 << 30, 1 << 29


@njit(cache=True, inline="always")
def park(b, a, active, plist, nact):
    if a == 1:
        plist[nact[1]] = b
        nact[1] += 1
    active[b] = PARKED
    nact[2] += 1


@njit(cache=True, inline="always")
def activate(b, active, act, nact):
    a = active[b]
    if a & 3 == 0:
        act[nact[0]] = b
        nact[0] += 1
        if a == 0:
            active[b] = 1
        else:
            active[b] = STALE | 1
            if a == PARKED:
                nact[2] -= 1


@njit(cache=True, inline="always")
def credit_back(k, n, credit, pwait, active, act, nact):
    c = credit[k]
    if c < -HALF:  # marked: a body parked for these credits
        credit[k] = c + BIG + n
        b = pwait[k]
        if active[b] == PARKED:
            act[nact[0]] = b
            nact[0] += 1
            active[b] = STALE | 1
            nact[2] -= 1
    else:
        credit[k] = c + n


@njit(cache=True, error_model="numpy", _nrt=False)
def compact(active, plist, nact):
    k = 0
    for i in range(nact[1]):
        b = plist[i]
        if active[b] == PARKED:
            plist[k] = b
            k += 1
        else:
            active[b] = active[b] & 3
    nact[1] = k
