"""The BookSim networks catalogue: mesh and torus specs, dor, the torus dateline, BookSim's
traffic patterns and on/off injection, refused in one line before any work.

Every case runs the real CLI and is checked by :func:`catalogue.check`: exit code 2, one
line from rank 0 naming the argument and its valid range or rule, nothing written.
docs/booksim.md ("BookSim's networks, routing and traffic in mpinet") has the rules.
"""

from __future__ import annotations

import pytest
from catalogue import Case, param, run_and_check, section

RUN = "run --quiet --topology"
FLIT = "--set model.switching=wormhole --set model.flits=2"
ONOFF = "--router dor --injection on_off --steps 10"

C = Case
CASES: list[Case] = [
    *section(
        "BookSim networks: mesh and torus specs",
        C("bsn-mesh-k1", "info mesh:1,2", r"K in mesh:K,N must be in \[2, "),
        C("bsn-torus-k2", "info torus:2,3", r"K in torus:K,N must be >= 3: torus:2,N would join"),
        C("bsn-mesh-n0", "info mesh:4,0", r"N in mesh:K,N must be in \[1, 32\], got 0"),
        C("bsn-torus-too-big", "info torus:1024,5", r"torus:K,N has K\^N nodes, at most 2\^40"),
        C("bsn-mesh-one-param", "info mesh:4", r"mesh takes 2 parameter\(s\): mesh:K,N"),
    ),
    *section(
        "BookSim networks: dor and the torus dateline",
        C("bsn-dor-hypercube", "routes hypercube:3 --router dor",
          r"router 'dor' applies to mesh, torus only, not hypercube:3"),
        C("bsn-dor-tie", "routes torus:4,2 --router dor --option tie=first",
          r"tie of router 'dor' must be one of random, plus, minus, got 'first'"),
        C("bsn-dateline-mesh",
          "deadlock mesh:4,2 --router dor --switching wormhole --vc-policy dateline",
          r"vc_policy 'dateline' orders nothing on mesh:4,2: it has nodes of degree 4"),
        C("bsn-dateline-one-vc",
          f"{RUN} torus:4,2 --router dor {FLIT} --set model.vcs=1 --set model.vc_policy=dateline",
          r"vc_policy 'dateline' needs vcs >= 2 for dor on torus:4,2"),
        C("bsn-dateline-turn-mesh",
          "deadlock mesh:4,2 --router dor --switching wormhole --vc-policy dateline-turn",
          r"vc_policy 'dateline-turn' is BookSim2's torus rule and applies to torus:K,N only, "
          r"not mesh:4,2"),
        C("bsn-dateline-turn-one-vc",
          f"{RUN} torus:4,2 --router dor {FLIT} --set model.vcs=1 "
          "--set model.vc_policy=dateline-turn",
          r"vc_policy 'dateline-turn' needs vcs >= 2 for dor on torus:4,2 \(two classes per "
          r"ring"),
    ),
    *section(
        "BookSim networks: traffic patterns and on/off injection",
        C("bsn-bitcomp-not-pow2", f"{RUN} mesh:3,2 --router dor --workload bitcomp",
          r"workload pattern 'bitcomp' needs a power-of-two number of nodes .*mesh:3,2 has 9"),
        C("bsn-transpose-odd-power", f"{RUN} mesh:2,3 --router dor --workload booksim-transpose",
          r"'booksim-transpose' needs an even power of two nodes .* has 8 = 2\^3"),
        C("bsn-tornado-not-cube", f"{RUN} hypercube:4 --workload tornado",
          r"workload pattern 'tornado' moves the coordinates of a k-ary n-cube"),
        C("bsn-onoff-r1-derived", f"{RUN} mesh:4,2 {ONOFF} --rate 0.8",
          r"workload\.burst_r1 derived as rate \* \(alpha \+ beta\) / alpha = 1\.6"),
        C("bsn-onoff-r1-derived-mpi", f"{RUN} torus:4,2 {ONOFF} --rate 0.8",
          r"workload\.burst_r1 derived as rate \* \(alpha \+ beta\) / alpha = 1\.6", ranks=2),
        C("bsn-onoff-two-derived",
          f"{RUN} mesh:4,2 {ONOFF} --rate 0.1 --set workload.burst_alpha=-1 "
          "--set workload.burst_beta=-1",
          r"injection = 'on_off' needs exactly one of burst_alpha, burst_beta, burst_r1"),
        C("bsn-onoff-alpha-range",
          f"{RUN} mesh:4,2 {ONOFF} --rate 0.1 --set workload.burst_alpha=2",
          r"workload\.burst_alpha must be in \[-1, 1\]"),
        C("bsn-burst-bernoulli",
          f"{RUN} mesh:4,2 --router dor --injection bernoulli --steps 10 --rate 0.1 "
          "--set workload.burst_beta=0.2",
          r"workload\.burst_beta = 0\.2 has no effect: applies to injection = 'on_off' only"),
        C("bsn-flits-rate-once", f"{RUN} mesh:4,2 --router dor --set workload.rate_uses_flits=1",
          r"workload\.rate_uses_flits = 1 has no effect: applies to injection = 'bernoulli' or"),
        C("bsn-flits-rate-two",
          f"{RUN} mesh:4,2 {ONOFF} --rate 0.1 --set workload.rate_uses_flits=2",
          r"workload\.rate_uses_flits must be in \[0, 1\]"),
    ),
]  # fmt: skip


def test_the_catalogue_is_complete():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)) and all(i.startswith("bsn-") for i in ids)


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_bad_input(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
