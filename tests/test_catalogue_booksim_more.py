"""BookSim's traffic leftovers, refused in one line before any work: hotspot lists and
rates (job keys and ``mpinet booksim``'s ``hotspot({{h...},{r...}})``), on_off's start
states, and the on_off and flit-rate keys of ``mpinet sweep`` (a burst key derived from a
load must be a probability at every load of the sweep).

Every case runs the real CLI on a file it writes and is checked by :func:`catalogue.check`:
exit code 2, one line from rank 0, no traceback, nothing written, in an address space any
run would exceed. docs/booksim.md ("BookSim's networks, routing and traffic in mpinet") has
the rules.
"""

from __future__ import annotations

import pytest
from catalogue import BEFORE_WORK, Case, param, run_and_check, section

HOT = 'topology = "mesh:4,2"\n[workload]\nkind = "booksim-hotspot"\n'
ONOFF = 'topology = "mesh:4,2"\n[workload]\nkind = "uniform"\ninjection = "on_off"\nrate = 0.05\nsteps = 100\n'  # noqa: E501
MESH = "topology = mesh;\nk = 4;\nn = 2;\nrouting_function = dim_order;\n"


def job(text: str) -> dict:
    return {"j.toml": text}


def C(cid: str, cmd: str, match: str, **kw) -> Case:  # noqa: N802 (the catalogue's name)
    return Case(cid, cmd, match, cap=BEFORE_WORK, **kw)


CASES: list[Case] = [
    *section(
        "BookSim traffic: hotspot lists",
        C("bsm-hotspot-more-rates", "run j.toml",
          r"workload\.hotspot_rates has 3 entries for 2 hotspot node\(s\): give at most one "
          r"rate per node", files=job(HOT + "hotspot_nodes = [1, 2]\nhotspot_rates = [1, 2, 3]\n")),
        C("bsm-hotspot-rate-zero", "run j.toml",
          r"j\.toml: workload\.hotspot_rates\[1\] must be an integer in \[1, 2,147,483,647\] "
          r"\(relative weights\), got 0",
          files=job(HOT + "hotspot_nodes = [1, 2]\nhotspot_rates = [2, 0]\n")),
        C("bsm-hotspot-node-range", "run j.toml",
          r"workload\.hotspot_nodes\[1\] must be a node id in \[0, 15\] \(or negative: a node "
          r"drawn at random, as BookSim's -1\) for mesh:4,2, got 16",
          files=job(HOT + "hotspot_nodes = [1, 16]\n")),
        C("bsm-hotspot-empty", "run j.toml",
          r"j\.toml: workload\.hotspot_nodes must be a non-empty list of node ids or labels",
          files=job(HOT + "hotspot_nodes = []\n")),
        C("bsm-hotspot-rates-alone", "run j.toml",
          r"workload\.hotspot_rates needs workload\.hotspot_nodes \(the hotspots\)",
          files=job(HOT + "hotspot_rates = [2]\n")),
        C("bsm-hotspot-and-target", "run j.toml",
          r"workload\.target and workload\.hotspot_nodes both name the hotspot: give one",
          files=job(HOT + 'target = "#3"\nhotspot_nodes = [1]\n')),
        C("bsm-hotspot-other-pattern", "run j.toml",
          r"j\.toml: workload\.hotspot_nodes = \[1\] has no effect: applies to workload\.kind "
          r"= 'booksim-hotspot' only; remove it",
          files=job(HOT.replace("booksim-hotspot", "uniform") + "hotspot_nodes = [1]\n")),
    ),
    *section(
        "BookSim traffic: hotspot in a BookSim configuration",
        C("bsm-booksim-hotspot-rates", "booksim c.cfg router=ideal",
          r"c\.cfg:5: traffic = hotspot\(\{\{0,5\},\{2,1,3\}\}\): 3 rate\(s\) for 2 "
          r"hotspot\(s\): give each hotspot an integer rate >= 1",
          files={"c.cfg": MESH + "traffic = hotspot({{0,5},{2,1,3}});\n"}),
        C("bsm-booksim-hotspot-not-int", "booksim c.cfg router=ideal traffic=hotspot({{0,x}})",
          r"override 'traffic=hotspot\(\{\{0,x\}\}\)': traffic = hotspot\(\{\{0,x\}\}\): "
          r"hotspot's hotspots must be integers, got '\{0,x\}'", files={"c.cfg": MESH}),
        C("bsm-booksim-hotspot-params", "booksim c.cfg router=ideal",
          r"c\.cfg:5: traffic = hotspot\(\{\{0\},\{1\},\{2\}\}\): hotspot takes its hotspots "
          r"and at most their rates",
          files={"c.cfg": MESH + "traffic = hotspot({{0},{1},{2}});\n"}),
        C("bsm-booksim-pattern-params", "booksim c.cfg router=ideal traffic=tornado(4)",
          r"traffic = tornado\(4\): patterns with parameters are not run by mpinet booksim yet "
          r"\(hotspot's lists are\)", files={"c.cfg": MESH}),
    ),
    *section(
        "BookSim traffic: on_off start states",
        C("bsm-burst-initial-value", "run j.toml",
          r"j\.toml: workload\.burst_initial\[1\] must be an integer in \[0, 1\] \(1 on, 0 "
          r"off\), got 2", files=job(ONOFF + "burst_initial = [1, 2]\n")),
        C("bsm-burst-initial-long", "run j.toml",
          r"workload\.burst_initial has 17 entries for 16 nodes: give at most one per node",
          files=job(ONOFF + f"burst_initial = {[1] * 17}\n")),
    ),
    *section(
        "BookSim traffic: mpinet sweep's on_off and flit loads",
        C("bsm-sweep-r1-high-load", "sweep j.toml --rates 0.05,0.7",
          r"j\.toml: mpinet sweep at load 0\.7: workload\.burst_r1 derived as rate \* \(alpha "
          r"\+ beta\) / alpha = 1\.4 with rate = 0\.7 is not a probability", files=job(ONOFF)),
        C("bsm-sweep-beta-low-load", "sweep j.toml --rates 0.02,0.2",
          r"j\.toml: mpinet sweep at load 0\.02: workload\.burst_beta derived as alpha \* \(r1 "
          r"- rate\) / rate = 7 with rate = 0\.02",
          files=job(ONOFF.replace("0.05", "0.2") + "burst_beta = -1\nburst_r1 = 0.3\n")),
        C("bsm-sweep-flit-load", "sweep j.toml --rates 0.4,0.8",
          r"mpinet sweep at load 0\.8: workload\.burst_r1 derived as rate \* \(alpha \+ beta\) "
          r"/ alpha = 1\.2 with rate = 0\.2 is not a probability",
          files=job(ONOFF + "burst_alpha = 0.1\nrate_uses_flits = 1\n[model]\n"
                    'switching = "wormhole"\nflits = 4\n')),
        C("bsm-sweep-flits-once", "sweep j.toml --rates 0.1",
          r"j\.toml: workload\.rate_uses_flits = 1 has no effect: applies to injection = "
          r"'bernoulli' or 'on_off' only; remove it",
          files=job('topology = "mesh:4,2"\n[workload]\nkind = "uniform"\nrate_uses_flits = 1\n')),
        C("bsm-sweep-r1-2-ranks", "sweep j.toml --rates 0.05,0.7",
          r"j\.toml: mpinet sweep at load 0\.7: workload\.burst_r1 derived", files=job(ONOFF),
          ranks=2),
    ),
]  # fmt: skip


def test_the_catalogue_is_complete():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)) and all(i.startswith("bsm-") for i in ids)


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_bad_input(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
