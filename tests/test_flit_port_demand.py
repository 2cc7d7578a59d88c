"""sdc's requests and demand kept between steps (mpinet/engine/flit/kept_requests.py,
port_demand.py; issue 33, the port models within 1.5x of all-port): at every step of random
sdc runs each buffer's kept request, each link's list of requesting buffers and the kept
counts (per link its movable requests, per port their sum) equal a fresh read, and the runs
equal the step-by-step path row for row. A state whose links are never listed for a
recount, or whose buffers are never read again, is caught by the same check, so the check
can fail. The runs also hold the allowed links of capacity 1 (only their oldest movable
request given to ``move``) to the step-by-step path's sorted buckets, with links of
capacity 2 and 3 beside."""

from __future__ import annotations

import numpy as np
import pytest
from test_flit_active import bernoulli_plan
from test_flit_chunk import assert_identical

from mpinet.engine.flit import chunk
from mpinet.jobs.execute import plan
from mpinet.jobs.spec import load_job
from mpinet.jobs.switching import make_engine

SPECS = (("hypercube:4", "anynet-min"), ("star:4", "shortest"), ("ms:2,2", "shortest"))
MODES = ("store-and-forward", "cut-through", "wormhole")


def run_checked(monkeypatch, p, compiled, *, never_listed=False, never_read=False):
    """The run's record and its compiled steps' demand state (None on the step path)."""
    made = []

    class Checked(chunk.Steps):
        def __init__(self, eng):
            super().__init__(eng)
            if never_listed:  # every link looks listed already: none is ever recounted
                self.inc.flag[:] = 1
            if never_read:  # every buffer looks listed already: none is ever read again
                self.inc.bflag[:] = 1
            made.append(self)

    monkeypatch.setattr(chunk, "Steps", Checked)
    eng = make_engine(p, None, seed=p.job.seed, max_steps=20_000, record_hops=True,
                      progress=None, compiled_steps=compiled)  # fmt: skip
    eng.check_demand = True
    rec = eng.run(p.workload.traffic)
    monkeypatch.undo()
    return rec, (made[0].inc if made else None)


@pytest.mark.parametrize("seed", range(6))
def test_kept_demand_equals_a_fresh_count_every_step(monkeypatch, seed):
    rng = np.random.default_rng(seed)
    spec, router = SPECS[seed % len(SPECS)]
    mode = MODES[int(rng.integers(len(MODES)))]
    vcs = int(rng.integers(1, 4))
    policy = "hops" if spec == "star:4" and vcs >= 3 else "any"
    vcs = 4 if policy == "hops" else vcs
    flits = int(rng.integers(1, 6))
    rate = float(rng.uniform(0.02, 0.12)) / flits
    p = bernoulli_plan(spec, router, "sdc", mode, rate, 200, flits=flits, vcs=vcs,
                       buf=int(rng.integers(1, 4)), policy=policy)  # fmt: skip
    a, inc = run_checked(monkeypatch, p, True)
    b, _ = run_checked(monkeypatch, p, False)
    assert_identical(a, b)
    assert inc.chk[1] >= a.steps - 5  # every step checked (a call's last may end it)
    assert inc.chk[2] == 0, f"{inc.chk[2]} steps of {inc.chk[1]} differed"
    assert a.counters[:, 0].sum() > 0


def test_a_link_never_recounted_is_caught(monkeypatch):
    p = bernoulli_plan("hypercube:4", "anynet-min", "sdc", "wormhole", 0.05, 200)
    _, inc = run_checked(monkeypatch, p, True, never_listed=True)
    assert inc.chk[1] > 100 and inc.chk[2] > 10


def test_a_buffer_never_read_again_is_caught(monkeypatch):
    p = bernoulli_plan("hypercube:4", "anynet-min", "sdc", "wormhole", 0.05, 200)
    _, inc = run_checked(monkeypatch, p, True, never_read=True)
    assert inc.chk[1] > 100 and inc.chk[2] > 10


@pytest.mark.parametrize(("spec", "router", "capacity"),
                         [("ccc:3", "shortest", {"cycle": 2}),
                          ("hypercube:4", "anynet-min", {"cube": 3})])  # fmt: skip
def test_links_of_capacity_above_one_keep_their_sorted_bucket(monkeypatch, spec, router, capacity):
    """An allowed link of capacity 1 is given only its oldest movable request; a link of more
    serves several a step, in order, so it is given them all (ccc:3 mixes both)."""
    sets = [(["topology"], spec), (["router", "name"], router), (["trace", "level"], "none"),
            (["model", "kind"], "sdc"), (["model", "switching"], "wormhole"),
            (["model", "flits"], 3), (["model", "vcs"], 2), (["model", "vc_buffer"], 2),
            (["model", "capacity"], capacity), (["workload", "injection"], "bernoulli"),
            (["workload", "rate"], 0.04), (["workload", "steps"], 200)]  # fmt: skip
    p = plan(load_job(None, sets), ranks=1)
    a, inc = run_checked(monkeypatch, p, True)
    b, _ = run_checked(monkeypatch, p, False)
    assert_identical(a, b)
    assert inc.chk[1] > 100 and inc.chk[2] == 0
    assert a.counters[:, 0].sum() > 0
