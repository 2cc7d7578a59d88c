"""Engines running routes computed at injection: the packet engine (per-link queues and the
departure calendar, 1-3 ranks) and the flit engine give the router's own runs."""

from __future__ import annotations

import numpy as np
import pytest
from test_source_routes import random_pairs

from mpinet.engine.core import Engine
from mpinet.engine.models import parse_model
from mpinet.engine.report import gather_hops, gather_packets
from mpinet.routing import make_router
from mpinet.routing.route_rows import SourceRouted
from mpinet.routing.route_tables import PATH_NEXT_PORT, PATH_TABLE, RouteTable
from mpinet.routing.source_routes import PORT_DROP, PORT_END, walk_routes
from mpinet.topology import from_spec
from mpinet.topology.faults import make_faults
from mpinet.workloads import Unicast


@pytest.mark.parametrize(
    "name,spec",
    [("scc-random", "scc:4"), ("ms-balls-to-boxes", "ms:2,2"), ("borel-cr", "borel:47,2,1,7"),
     ("shortest", "star:5"), ("scc-optimal", "scc:4"), ("borel-two-phase", "borel:47,2,1,7")],
)  # fmt: skip
def test_a_packet_engine_run_through_route_rows_is_the_routers_run(name, spec):
    topo = from_spec(spec)

    def run(router, queues):
        w = Unicast(topo, "uniform", packets=3, seed=7)
        eng = Engine(topo, router, parse_model("all-port"), None, seed=7, record_hops=True,
                     queues=queues, route_tables=False)  # fmt: skip
        assert eng.router is router
        rec = eng.run(w)
        pk, _ = gather_packets(rec, w.pid_space, eng.comm)
        return pk, gather_hops(rec, w.pid_space, eng.comm)

    pk, hops = run(make_router(name, topo), "links")
    wrapped = SourceRouted(make_router(name, topo), width=5)  # long routes chain rows
    spk, shops = run(wrapped, "links")
    assert np.array_equal(pk, spk) and np.array_equal(hops, shops)
    assert wrapped.nfree == wrapped.table.shape[0]  # every row freed on its last hop
    cpk, chops = run(SourceRouted(make_router(name, topo)), "auto")
    assert np.array_equal(pk, cpk) and np.array_equal(hops, chops)


def test_dropped_packets_are_dropped_where_the_router_drops_them():
    topo = from_spec("scc:4")
    f = make_faults(topo, random_links=0.15, random_nodes=0.05, seed=3)

    def run(router):
        w = Unicast(topo, "uniform", packets=3, seed=2)
        eng = Engine(topo, router, parse_model("all-port"), None, seed=2, faults=f,
                     route_tables=False, record_hops=True)  # fmt: skip
        rec = eng.run(w)
        return (
            gather_packets(rec, w.pid_space, eng.comm)[0],
            gather_hops(rec, w.pid_space, eng.comm),
            rec,
        )

    pk, hops, rec = run(make_router("scc-random", topo, faults=f))
    wrapped = SourceRouted(make_router("scc-random", topo, faults=f), width=3)
    spk, shops, srec = run(wrapped)
    assert np.array_equal(pk, spk) and np.array_equal(hops, shops)
    assert rec.drops.shape[0] > 0 and np.array_equal(rec.drops, srec.drops)
    src, dst, pids = random_pairs(topo, 400, 1)
    ports, nhops = walk_routes(make_router("scc-random", topo, faults=f), src, dst, pids, 0)
    dropped = ports[np.arange(src.size), np.minimum(nhops, ports.shape[1] - 1)] == PORT_DROP
    assert dropped.any()  # the faults cut some destinations off: rows end with the marker
    assert (ports[dropped, :][:, :1] != PORT_END).all()


@pytest.mark.parametrize(
    "name,spec",
    [
        ("ms-two-phase", "ms:2,2"),
        ("scc-greedy", "scc:4"),
        ("ims-star-emulation", "ims:1,3,2"),
        ("ccc", "ccc:4"),
    ],
)
def test_packet_engine_routes_table_rows_inside_the_calendar(name, spec):
    """queues auto: the calendar reads the rows in its compiled loop (SOURCE)."""
    topo = from_spec(spec)

    def run(router, queues, tables):
        w = Unicast(topo, "uniform", packets=3, seed=5)
        eng = Engine(topo, router, parse_model("all-port"), None, seed=5, record_hops=True,
                     queues=queues, route_tables=tables)  # fmt: skip
        assert eng.route_path == (PATH_TABLE if tables else PATH_NEXT_PORT)
        assert isinstance(eng.router, RouteTable) == tables
        rec = eng.run(w)
        assert eng.use_calendar == (queues == "calendar")
        return gather_packets(rec, w.pid_space, eng.comm)[0], gather_hops(
            rec, w.pid_space, eng.comm
        )

    pk, hops = run(make_router(name, topo), "links", False)
    router = make_router(name, topo)  # the engine builds the table (once per router)
    for queues in ("links", "calendar"):
        tpk, thops = run(router, queues, True)
        assert np.array_equal(pk, tpk) and np.array_equal(hops, thops)
    assert len(router._route_tables) == 1


@pytest.mark.parametrize("mode", ["wormhole", "cut-through"])
def test_flit_engine_runs_table_rows_as_the_router(mode):
    from dataclasses import replace

    from mpinet.engine.flit import chunk
    from mpinet.engine.flit.engine import FlitEngine
    from mpinet.routing.vc_policies import make_vc_policy

    topo = from_spec("ms:2,2")
    m = replace(parse_model("all-port"), flit=True, switching=mode, flits=4, vcs=2,
                vc_buffer=2 if mode == "wormhole" else 4, vc_policy="any")  # fmt: skip

    def run(router, compiled_steps):
        w = Unicast(topo, injection="bernoulli", rate=0.02, steps=60, seed=3)
        eng = FlitEngine(topo, router, m, make_vc_policy("any", topo, 2), seed=3,
                         record_hops=True, compiled_steps=compiled_steps)  # fmt: skip
        assert chunk.usable(eng) == compiled_steps  # the rows read inside the compiled steps
        return eng.run(w)

    def same(a, b):
        assert a.steps == b.steps and np.array_equal(a.packets, b.packets)
        assert np.array_equal(a.counters, b.counters) and np.array_equal(a.hop_rows, b.hop_rows)

    a = run(make_router("ms-merged", topo), False)
    for compiled_steps in (False, True):
        same(a, run(RouteTable(make_router("ms-merged", topo)), compiled_steps))
    # random choices: rows walked at the first hop, chained (width 4), freed on the last hop
    a = run(make_router("ms-merged", topo, choice="random"), False)
    rows = SourceRouted(make_router("ms-merged", topo, choice="random"), width=4)
    same(a, run(rows, False))
    assert rows.nfree == rows.table.shape[0]


@pytest.mark.mpi
@pytest.mark.parametrize("name,spec", [("ms-merged", "ms:2,2"), ("scc-optimal", "scc:4"),
                                       ("borel-two-phase", "borel:47,2,1,7")])  # fmt: skip
def test_route_tables_on_every_rank_give_the_serial_run(name, spec):
    """Each rank builds the same table: packets crossing ranks keep their words."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    topo = from_spec(spec)

    def run(c, tables):
        w = Unicast(topo, "uniform", packets=2, seed=4)
        eng = Engine(topo, make_router(name, topo), parse_model("all-port"), c, seed=4,
                     record_hops=True, route_tables=tables)  # fmt: skip
        assert eng.route_path == (PATH_TABLE if tables else PATH_NEXT_PORT)
        rec = eng.run(w)
        return gather_packets(rec, w.pid_space, eng.comm)[0], gather_hops(
            rec, w.pid_space, eng.comm
        )

    pk, hops = run(comm, True)
    spk, shops = run(None, False)
    assert np.array_equal(np.concatenate(comm.allgather(pk)), spk)
    assert np.array_equal(np.concatenate(comm.allgather(hops)), shops)
