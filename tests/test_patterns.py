"""Structure- and label-defined traffic patterns (mpinet.workloads.patterns)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mpinet.cli import main
from mpinet.errors import WorkloadError
from mpinet.routing.tables import distances_from
from mpinet.topology import from_spec
from mpinet.workloads import PATTERNS, Unicast
from mpinet.workloads.patterns import NAMES, PERMUTATION_FAMILIES
from mpinet.workloads.registry import WORKLOADS

SPECS = ["star:5", "scc:4", "ms:2,2", "ims:1,2,2", "cms:2,2,2", "fccn:2", "borel:7,2,0,1"]
SPECS += ["hypercube:4", "ccc:3"]


def applies(spec: str, name: str) -> bool:
    return name not in ("reversal", "transpose") or spec.split(":")[0] in PERMUTATION_FAMILIES


CASES = [(s, p) for s in SPECS for p in NAMES if applies(s, p)]


def all_packets(topo, name, packets=3, seed=5):
    w = Unicast(topo, name, packets=packets, seed=seed)
    return w.injections(0, topo.num_nodes, 0)


def test_names_are_workload_kinds():
    for name in NAMES:
        assert name in PATTERNS and name in WORKLOADS


@pytest.mark.parametrize(("spec", "name"), CASES)
def test_valid_destinations_never_self(spec, name):
    topo = from_spec(spec)
    n = topo.num_nodes
    pid, src, dst = all_packets(topo, name)
    assert src.size == 3 * n and ((dst >= 0) & (dst < n)).all() and (dst != src).all()
    if name == "nearest-neighbour":
        nb = topo.neighbors(src)
        assert (nb == dst[:, None]).any(axis=1).all()
    if name in ("reversal", "transpose", "antipodal") and spec.split(":")[0] not in ("fccn", "cms"):
        one = dst[::3]  # a function of the source only
        assert (dst.reshape(-1, 3) == one[:, None]).all()
    if name in ("reversal", "transpose"):
        assert np.unique(dst[::3]).size == n  # a permutation of the nodes


@pytest.mark.parametrize("spec", SPECS)
def test_antipodal_is_at_the_diameter(spec):
    topo = from_spec(spec)
    _, src, dst = all_packets(topo, "antipodal", packets=1)
    vt = topo.translation_targets is not None
    diameter = int(distances_from(topo, topo.identity).max()) if vt else None
    for s in np.unique(np.r_[0, topo.num_nodes - 1, src[:: max(1, src.size // 9)]]):
        dist = distances_from(topo, int(s))
        want = diameter if vt else int(dist.max())  # FCCN, CMS: the source's eccentricity
        assert dist[dst[s]] == want


@pytest.mark.parametrize("spec", ["star:5", "scc:4", "ms:2,2"])
def test_reversal_and_transpose_labels(spec):
    topo = from_spec(spec)
    _, src, rev = all_packets(topo, "reversal", packets=1)
    _, _, tra = all_packets(topo, "transpose", packets=1)
    for s in (0, 7, topo.num_nodes - 1):
        label, r, t = topo.label(s), topo.label(int(rev[s])), topo.label(int(tra[s]))
        if spec.startswith("scc"):  # <i, pi>: the ring position is kept
            head, sym = label[1:-1].split(", ")
            assert r == f"<{head}, {sym[::-1]}>"
            h = len(sym) // 2
            assert t == f"<{head}, {sym[h:] + sym[:h]}>"
        else:
            h = len(label) // 2
            assert r == label[::-1] and t == label[h:] + label[:h]


@pytest.mark.parametrize(("spec", "name"), CASES)
def test_same_destinations_on_any_rank_split(spec, name):
    topo = from_spec(spec)
    n = topo.num_nodes
    for injection in ("once", "bernoulli"):
        kw = {"injection": injection, "rate": 0.5, "steps": 3} if injection == "bernoulli" else {}
        w = Unicast(topo, name, packets=2, seed=11, **kw)
        for step in range(3 if injection == "bernoulli" else 1):
            whole = np.stack(w.injections(0, n, step))
            for cuts in ([0, n // 3, n], [0, 1, n // 2, n - 1, n]):
                parts = [
                    np.stack(w.injections(a, b, step))
                    for a, b in zip(cuts[:-1], cuts[1:], strict=True)
                ]
                np.testing.assert_array_equal(np.concatenate(parts, axis=1), whole)


@pytest.mark.parametrize("spec", ["hypercube:3", "fccn:2", "borel:7,2,0,1", "cms:2,2,2"])
def test_permutation_patterns_refuse_other_families(spec):
    with pytest.raises(WorkloadError, match="permutations"):
        Unicast(from_spec(spec), "reversal")


def test_antipodal_refuses_large_networks_without_translations():
    with pytest.raises(WorkloadError, match="all-pairs"):
        Unicast(from_spec("fccn:5"), "antipodal")


@pytest.mark.parametrize("name", NAMES)
def test_job_runs_every_new_pattern(name, capsys):
    assert (
        main(["run", "--topology", "star:4", "--workload", name, "--packets", "2", "--json"]) == 0
    )
    stats = json.loads(capsys.readouterr().out)["stats"]
    assert stats["delivered"] == stats["injected"] == 48
    if name == "antipodal":
        assert stats["hops"]["p50"] == stats["hops"]["max"] == 4  # diameter of S_4
