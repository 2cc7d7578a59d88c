"""The iq router (docs/iq-router.md) with routers that have no compiled hop: their routes
walked at injection into rows (:mod:`mpinet.routing.route_rows`), as the ideal model's
compiled steps walk them. Each packet must take the links it takes under the ideal model
(the routers are oblivious: the route is the router's, whatever the router model), and the
rows freed by delivered packets must serve later ones."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_flit_engine import Packets
from test_iq_router import iq_model

from mpinet.engine.flit.engine import FlitEngine
from mpinet.engine.flit.iq_lean_run import LEAN_PATH
from mpinet.routing import make_router
from mpinet.routing import route_tables as rt
from mpinet.routing.route_rows import SourceRouted
from mpinet.routing.vc_policies import make_vc_policy
from mpinet.topology import from_spec

#: routers whose routes are walked into rows (no compiled hop, no exact translated table)
WALKED = [("scc:4", "scc-random"), ("fccn:2", "fccn-sroute"), ("borel:47,2,1,7", "borel-cr"),
          ("cms:2,2,2", "cms-clusters")]  # fmt: skip


@pytest.mark.parametrize("spec,rname", WALKED)
def test_walked_routes_are_the_routers_routes(spec, rname):
    topo = from_spec(spec)
    assert rt.compile_routes(make_router(rname, topo))[1] == rt.PATH_WALKED
    n = topo.num_nodes
    rng = np.random.default_rng(11)
    # two waves: the second reuses the rows the first one freed
    rows = [(i, int(rng.integers(n)), int(rng.integers(n)), (i // 200) * 400 + i % 40)
            for i in range(400)]  # fmt: skip
    paths = []
    for router_model in ("iq", "ideal"):
        m = iq_model(topo, flits=2, vcs=2, vc_buffer=2)
        if router_model == "ideal":
            m = replace(m, router="ideal", iq=None)
        pol = make_vc_policy(m.vc_policy, topo, m.vcs)
        eng = FlitEngine(topo, make_router(rname, topo), m, pol, record_hops=True,
                         max_steps=50000, seed=4)  # fmt: skip
        rec = eng.run(Packets(rows))
        if router_model == "iq":
            assert isinstance(eng.router, SourceRouted)
            # one rank: the lean path walks them (a run that stops moving goes to the
            # general path, which reports it)
            assert eng.steps_path in (LEAN_PATH, f"{LEAN_PATH[:-9]}general path (stopped moving)")
        assert (rec.packets[:, 4] >= 0).all() and rec.packets.shape[0] == 400
        h = rec.hop_rows[np.lexsort((rec.hop_rows[:, 0], rec.hop_rows[:, 1]))]
        paths.append(h[:, [1, 2, 3]])
    assert paths[0].shape[0] > 400 and np.array_equal(paths[0], paths[1])


def test_every_registered_router_runs_under_iq():
    """Each registered router, on a network of each family it applies to (the ideal model's
    compiled-steps cases), runs under iq: nothing refused, every packet delivered on the
    links its own router chooses (hop rows checked against the topology's links, the link loads
    against the hop rows: the iq state's ports are BookSim's order, renamed back)."""
    from test_flit_routers_compiled import CASES

    from mpinet.routing import ROUTERS

    assert {r for _, r, _ in CASES} == set(ROUTERS)
    for spec, rname, opts in CASES:
        topo = from_spec(spec)
        n = topo.num_nodes
        rows = [(i, i % n, (7 * i + 3) % n, 4 * (i // n)) for i in range(2 * n)]
        m = iq_model(topo, flits=2, vcs=4, vc_buffer=4)
        pol = make_vc_policy("any", topo, m.vcs)
        eng = FlitEngine(topo, make_router(rname, topo, **opts), m, pol, record_hops=True,
                         max_steps=20000)  # fmt: skip
        rec = eng.run(Packets(rows))
        assert (rec.packets[:, 4] >= 0).all() and rec.packets.shape[0] == len(rows), (spec, rname)
        h = rec.hop_rows
        nb = np.asarray(topo.neighbors(h[:, 2]))
        assert (nb[np.arange(h.shape[0]), h[:, 4]] == h[:, 3]).all(), (spec, rname)
        load = np.zeros_like(rec.link_load)  # each link's flits: two a head's hop on it
        np.add.at(load, (h[:, 2], h[:, 4]), 2)
        assert np.array_equal(load, rec.link_load), (spec, rname)
