"""The floor of a hop on this machine: only the memory accesses a hop cannot avoid.

Why: issue 11 asks for 20 M packet-hops/s per rank (50 ns per hop) on ms:3,3,
scc:8 and fccn:6. This kernel does, for each of ``--hops`` packets with
uniformly random positions and headers, what any engine on these tables
must do at a hop and nothing else: read the packet's record, look up the
router's port and next header (translated tables: a 1-byte port per node, a
4-byte neighbour per link), read the link's neighbour, update the link's
last departure and its load, and write the record back out. No tie order,
no buckets, no delivery, no model check, no exchange, no Python per step.
Its time is therefore a lower bound for the engine's on tables of that size
(docs/history/performance-log.md, "The floor of a hop").

A third layout sorts the packets by link first (an LSD radix sort of
(link, index) pairs, as a design that turns the link-state reads into a sweep
would) and then does the same work in link order: the record and the router's
next header are then the random reads.

    python scripts/bench_floor.py --nodes 3628800 --degree 5    # ms:3,3's tables
    python scripts/bench_floor.py --nodes 282240 --degree 3     # scc:8's
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numba as nb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reports  # noqa: E402

from mpinet.engine.calendar_kernels import RECORD  # noqa: E402

#: one record per link when the link's fields are kept together (neighbour, last, load)
LINKREC = np.dtype([("nbt", "i4"), ("last", "i4"), ("load", "i4"), ("pad", "i4")])


# The two kernels spell out the same router look-ups on purpose: with them in an inlined
# helper the floor measured 20-30 ns per hop slower (alternated runs), which a floor cannot be.


@nb.njit(cache=True)
def _apart(cin, cout, deg, port_tab, nb_flat, nbt, last, load, t, count_load):
    """Link fields in separate arrays (the engine's layout): up to three misses per link."""
    for i in range(cin.size):
        x = cin[i].h
        p = np.int64(port_tab[x])
        lk = cin[i].cur * deg + p
        cout[i] = cin[i]
        cout[i].h = np.int64(nb_flat[x * deg + p])
        cout[i].nxt = nbt[lk]
        d = max(last[lk], t + 1)
        last[lk] = d + 1
        cout[i].port = d
        if count_load:
            load[lk] += 1


@nb.njit(cache=True)
def _together(cin, cout, deg, port_tab, nb_flat, links, t, count_load):
    """Link fields in one 16-byte record: one miss per link."""
    for i in range(cin.size):
        x = cin[i].h
        p = np.int64(port_tab[x])
        lk = cin[i].cur * deg + p
        cout[i] = cin[i]
        cout[i].h = np.int64(nb_flat[x * deg + p])
        cout[i].nxt = links[lk].nbt
        d = max(links[lk].last, t + 1)
        links[lk].last = d + 1
        cout[i].port = d
        if count_load:
            links[lk].load += 1


@nb.njit(cache=True)
def _link_keys(cin, deg, port_tab, key, idx):
    for i in range(cin.size):
        key[i] = cin[i].cur * deg + np.int64(port_tab[cin[i].h])
        idx[i] = i


@nb.njit(cache=True)
def _radix(key, idx, tk, ti, bits, r):
    """LSD radix sort of (key, idx) by ``bits`` of key, ``r`` bits a pass; 1: result in tk, ti."""
    mask = (1 << r) - 1
    cnt = np.empty(mask + 2, np.int64)
    a_k, a_i, b_k, b_i = key, idx, tk, ti
    passes = 0
    for shift in range(0, bits, r):
        cnt[:] = 0
        for i in range(a_k.size):
            cnt[((a_k[i] >> shift) & mask) + 1] += 1
        for b in range(mask + 1):
            cnt[b + 1] += cnt[b]
        for i in range(a_k.size):
            b = (a_k[i] >> shift) & mask
            j = cnt[b]
            cnt[b] = j + 1
            b_k[j], b_i[j] = a_k[i], a_i[i]
        a_k, b_k, a_i, b_i = b_k, a_k, b_i, a_i
        passes += 1
    return passes % 2


@nb.njit(cache=True)
def _sweep(cin, cout, sk, si, deg, nb_flat, nbt, last, load, t, count_load):
    """The hop in link order: the link's fields are a sweep, the record a gather."""
    for j in range(sk.size):
        lk = np.int64(sk[j])
        i = si[j]
        x = cin[i].h
        cout[j] = cin[i]
        cout[j].h = np.int64(nb_flat[x * deg + lk % deg])
        cout[j].nxt = nbt[lk]
        d = max(last[lk], t + 1)
        last[lk] = d + 1
        cout[j].port = d
        if count_load:
            load[lk] += 1


_SCRATCH: dict = {}


def _sorted(cin, cout, deg, port_tab, nb_flat, nbt, last, load, t, count_load):
    """Sort by link (radix, 11 bits a pass), then :func:`_sweep`."""
    m = cin.size
    if _SCRATCH.get("m") != m:  # once: an engine would keep its sort buffers
        _SCRATCH.update(m=m, bufs=[np.zeros(m, np.int32) for _ in range(4)])
    key, idx, tk, ti = _SCRATCH["bufs"]
    _link_keys(cin, deg, port_tab, key, idx)
    swapped = _radix(key, idx, tk, ti, int(nbt.size).bit_length(), 11)
    sk, si = (tk, ti) if swapped else (key, idx)
    if m <= 100:  # the compiling call: a wrong sort would make a wrong floor
        assert (np.diff(sk[:m]) >= 0).all() and (np.sort(si[:m]) == np.arange(m)).all()
    _sweep(cin, cout, sk, si, deg, nb_flat, nbt, last, load, t, count_load)


def main(argv: list[str] | None = None) -> int:
    ap = reports.arguments(__doc__.split("\n\n")[0], out_help="also write the lines to FILE",
                           json_rows=True)  # fmt: skip
    ap.add_argument("--nodes", type=int, default=3628800, help="nodes (ms:3,3: 3628800)")
    ap.add_argument("--degree", type=int, default=5, help="ports per node (ms:3,3: 5)")
    ap.add_argument("--hops", type=int, default=7_000_000, help="hops per pass (one step's worth)")
    ap.add_argument("--repeat", type=int, default=3, help="passes; the fastest is reported")
    a = ap.parse_args(argv)
    run = reports.Run(__file__, a, a.out)
    n, deg, m = a.nodes, a.degree, a.hops
    run.progress("random tables and records")
    rng = np.random.default_rng(1)
    port_tab = rng.integers(0, deg, n).astype(np.uint8)
    nb_flat = rng.integers(0, n, n * deg).astype(np.int32)
    nbt = rng.integers(0, n, n * deg).astype(np.int32)
    last = np.zeros(n * deg, np.int32)
    load = np.zeros(n * deg, np.int64)
    links = np.zeros(n * deg, LINKREC)
    links["nbt"] = nbt
    cin = np.zeros(m, RECORD)
    cin["h"], cin["cur"] = rng.integers(0, n, m), rng.integers(0, n, m)
    cout = np.zeros(m, RECORD)
    cases = {
        "link fields apart, loads counted": (_apart, (port_tab, nb_flat, nbt, last, load), True),
        "link fields apart, no loads": (_apart, (port_tab, nb_flat, nbt, last, load), False),
        "one 16-byte link record, loads counted": (_together, (port_tab, nb_flat, links), True),
        "one 16-byte link record, no loads": (_together, (port_tab, nb_flat, links), False),
        "sorted by link, loads counted": (_sorted, (port_tab, nb_flat, nbt, last, load), True),
    }
    if not a.json:
        run.emit(f"{n:,} nodes, degree {deg}, {m:,} hops per pass (48-byte records)")
    for name, (f, tabs, cl) in cases.items():
        run.progress(name)
        f(cin[:100], cout[:100], deg, *tabs, 0, cl)  # compile (or load the cache)
        best = min(_timed(f, cin, cout, deg, tabs, t, cl) for t in range(a.repeat))
        if a.json:
            run.emit(json.dumps({"layout": name, "nodes": n, "degree": deg, "hops": m,
                                 "ns_per_hop": best * 1e9 / m}))  # fmt: skip
            continue
        run.emit(f"  {name:40s} {best * 1e9 / m:6.1f} ns/hop  {m / best / 1e6:5.1f} M hops/s")
    run.save(a.out, argv or sys.argv[1:], a.json)
    return 0


def _timed(f, cin, cout, deg, tabs, t, cl) -> float:
    t0 = time.perf_counter()
    f(cin, cout, deg, *tabs, t, cl)
    return time.perf_counter() - t0


if __name__ == "__main__":
    sys.exit(main())
