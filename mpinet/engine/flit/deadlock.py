"""One wait-for cycle of (node, port, VC) when the flit engine deadlocks.

Each blocked front packet waits for one VC (docs/switching.md, "Deadlock"): the VC it
holds, when it lacks credits, else the lowest VC its policy allows for the hop (held by
another packet, or full). That VC is a buffer at the next node, whose own front packet
waits in turn. A VC is named by its sender's link and index, ``(u * degree + port) * V +
v``. Every rank lists its edges "VC -> the VC its front waits for"; the edges are gathered
(a deadlock is rare and its edges few) and walked from the lowest VC holding flits until
one repeats: the cycle, the same on any number of ranks (``tests/reference_switching.py``
walks the same way). The iq router lists its edges in the same names
(:mod:`~mpinet.engine.flit.iq_deadlock`) and takes this walk and report.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.engine.flit.park import waiting


def _edges(eng: Any) -> list[tuple[int, int]]:
    st, deg, nvc, lo = eng.st, eng.deg, eng.vcs, eng.lo
    out = []
    listed = st.act[: int(st.nact[0])]
    for b in np.concatenate([listed, waiting(st.bufs)]):  # the parked wait too (park.py)
        s = int(st.bhead[b])
        if s < 0 or b >= st.nvcbuf or st.seg_cnt[s] <= 0 or st.seg_out[s] < 0:
            continue
        wq, v = divmod(int(b), nvc)  # the buffer: (local node, input port), VC
        up = int(st.nbt[wq])
        me = (up * deg + int(eng.rev[wq])) * nvc + v  # named by its sender's link
        link = int(st.seg_out[s])
        w2 = int(st.nbt[link])
        if w2 == int(st.pkt_dst[st.seg_pkt[s]]):
            continue  # a hop into the destination never waits for a VC
        v2 = int(st.seg_ovc[s]) if st.seg_ovc[s] >= 0 else int(st.seg_vlo[s])
        out.append((me, (link + lo * deg) * nvc + v2))
    return out


def wait_for_cycle(eng: Any, step: int, in_flight: int,
                   mine: list[tuple[int, int]] | None = None) -> dict:  # fmt: skip
    """The deadlock report: the step, the packets in flight and one wait-for cycle;
    collective. ``mine``: this rank's edges, named as here, where another router model
    lists them (the iq router's, :mod:`~mpinet.engine.flit.iq_deadlock`); None: the ideal
    model's state."""
    mine = _edges(eng) if mine is None else mine
    edges = dict(e for part in eng.comm.allgather(mine) for e in part)
    cycle: list[int] = []
    if edges:
        seen: dict[int, int] = {}
        k = min(edges)
        while k in edges and k not in seen:
            seen[k] = len(seen)
            k = edges[k]
        if k in seen:
            cycle = list(seen)[seen[k] :]
    deg, nvc, topo = eng.deg, eng.vcs, eng.topo
    rows = []
    for k in cycle:
        link, v = divmod(k, nvc)
        u, port = divmod(link, deg)
        w = int(topo.neighbors(np.array([u]))[0, port])
        rows.append(
            {
                "node": topo.label(u),
                "port": topo.ports[port],
                "next": topo.label(w),
                "class": v,
                "vc": v,
            }  # fmt: skip
        )
    hops = " ".join(f"{c['node']} --{c['port']}--> (VC {c['vc']})" for c in rows)
    end = f" {rows[0]['node']}" if rows else ""
    return {
        "step": step,
        "blocked_packets": int(in_flight),
        "message": f"deadlock in step {step}: {in_flight:,} packets in flight and no flit can "
        f"move; wait-for cycle of {len(rows)} virtual channels: {hops}{end}",
        "cycle": rows,
        "vcs": nvc,
        "flits": eng.flits,
        "switching": eng.model.switching,
    }
