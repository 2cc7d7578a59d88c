"""Tests of the macro-star variants of paper 004 section 5.1: IMS and CMS.

Topologies (:mod:`mpinet.topology.ims`, :mod:`mpinet.topology.cms`), their
routers (:mod:`mpinet.routing.ims`), the IMS emulation words and Table 2
(:mod:`mpinet.emulation.variants`). Facts are computed: BFS distances, composed
permutations, generator lists; the paper's numbers only where they agree.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mpinet import perm
from mpinet.emulation.variants import (
    ct_dilation,
    ims_ct_word,
    ims_sdc_word,
    module_links,
    table2_rows,
    words_perm,
)
from mpinet.errors import RoutingError, TopologyError
from mpinet.routing import available_routers, make_router
from mpinet.routing.tables import distances_from
from mpinet.routing.walk import walk
from mpinet.topology import FAMILIES, from_spec, spec_forms
from mpinet.topology.cms import ClusteredMacroStar, cluster_of_blocks
from mpinet.topology.ims import IncompleteMacroStar

IMS_SMALL = ["ims:1,2,2", "ims:1,3,2", "ims:2,2,3", "ims:1+1,3,2", "ims:2,2,2"]
CMS_SMALL = ["cms:2,2,2", "cms:3,2,2", "cms:3,2,3", "cms:5,3,2"]
IMS_ROUTERS = [
    ("ims-two-phase", {}),
    ("ims-two-phase", {"sdc": "complete"}),
    ("ims-two-phase", {"choice": "random"}),
    ("ims-star-emulation", {}),
    ("ims-star-emulation", {"choice": "random"}),
]


def all_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    s, d = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return s.ravel(), d.ravel()


def revisits(paths: np.ndarray) -> int:
    """Routes that visit some node twice."""
    return sum(len(set(p[p >= 0].tolist())) != int((p >= 0).sum()) for p in paths)


# ----------------------------------------------------------------- topologies
def test_registered() -> None:
    assert FAMILIES["ims"] is IncompleteMacroStar and FAMILIES["cms"] is ClusteredMacroStar
    assert "ims:M,L,N" in spec_forms() and "cms:C,L,N" in spec_forms()


def test_ims_paper_example_generators() -> None:
    """IMS((1),3,3): 8! nodes; T2, T3, T4, S_{3,2} = 1 567 234 8 and S_{(1),3,3} = 1 8 34 567 2."""
    t = from_spec("ims:1,3,3")
    assert isinstance(t, IncompleteMacroStar)
    assert t.num_nodes == math.factorial(8) and t.degree == 5 and t.paper_name == "IMS((1),3,3)"
    applied = {p: perm.format_perm(g) for p, g in zip(t.ports, t.gens, strict=True)}
    paper = {"T2": "21345678", "T3": "32145678", "T4": "42315678"}
    paper |= {"S2": "1 567 234 8", "S3": "1 8 34 567 2"}
    assert applied == {p: s.replace(" ", "") for p, s in paper.items()}
    assert t.port_classes == ("nucleus",) * 3 + ("intercluster",) * 2
    # IMS((m), l+1, n) is (k+m)!/k! copies of MS(l, n): here 8 copies of MS(2, 3)
    assert t.num_nodes // math.factorial(7) == 8


def test_ims_generalised_example() -> None:
    """IMS((2,2),3,3): 8! nodes, degree 5, S2 = 1 56 4 23 78, S3 = 1 78 4 56 23."""
    t = from_spec("ims:2+2,3,3")
    assert t.num_nodes == math.factorial(8) and t.degree == 5
    assert perm.format_perm(t.generator("S2")) == "15642378"
    assert perm.format_perm(t.generator("S3")) == "17845623"
    assert t.spec == "ims:2+2,3,3" and t.paper_name == "IMS((2,2),3,3)"


def test_ims_with_full_block_is_ms() -> None:
    a, b = from_spec("ims:2,3,2"), from_spec("ms:3,2")
    assert (a.gens == b.gens).all() and a.num_nodes == b.num_nodes


@pytest.mark.parametrize(
    "spec, match",
    [
        ("ims:0,3,3", "M in ims"),
        ("ims:4,3,3", r"M in ims.*\[1, 3\]"),
        ("ims:1+1+1,3,3", "at most L-1"),
        ("ims:1,1,3", "L in ims"),
        ("ims:3,3,9", "symbols"),
        ("cms:1,2,2", r"C in cms.*\[2, 20\]"),
        ("cms:21,2,2", "C in cms"),
        ("cms:2,1,2", "L in cms"),
        ("cms:2,5,4", "symbols"),
    ],
)
def test_bad_parameters(spec: str, match: str) -> None:
    with pytest.raises(TopologyError, match=match):
        from_spec(spec)


@pytest.mark.parametrize("spec", IMS_SMALL + CMS_SMALL + ["cms:20,2,2", "ims:1,3,3"])
def test_neighbours_reverse_ports_and_connected(spec: str) -> None:
    t = from_spec(spec)
    ids = np.arange(t.num_nodes)
    nb = t.neighbors(ids)
    for p in range(t.degree):
        there = nb[:, p] >= 0
        assert (nb[nb[there, p], t.reverse_port[p]] == ids[there]).all()
    assert (distances_from(t, 0) >= 0).all()
    if spec.startswith("ims"):
        assert (nb >= 0).all()
    else:  # only S_l may be missing; no node has two links to one neighbour
        assert (nb[:, :-1] >= 0).all() and (nb[:, -1] < 0).any() == (t.c < 20)
    for v in (0, t.num_nodes - 1):
        assert t.parse_label(t.label(v)) == v


def test_cms_kept_clusters() -> None:
    t = from_spec("cms:3,2,3")
    assert isinstance(t, ClusteredMacroStar)
    s = math.factorial(4)  # a level-2 cluster of MS(2, 3) is an MS(1, 3) = 4-star
    assert t.num_nodes == 3 * s and t.cluster_size == s
    ms_ids = t.to_ms(np.arange(t.num_nodes))
    assert (t.from_ms(ms_ids) == np.arange(t.num_nodes)).all()
    assert (ms_ids[:s] == np.arange(s)).all()  # the identity's cluster first, as in MS
    # each kept cluster is one MS level-l cluster: all its nodes share the last block
    last = perm.unrank(ms_ids, t.k)[:, -t.n :].reshape(3, s, t.n)
    assert (last == t.blocks[:, None, :]).all()
    # kept clusters form a connected cluster graph (BFS order)
    adj = t.cluster_adjacency()
    assert adj[0, 1] and adj[0, 2] and not adj.diagonal().any()
    assert t.label(0) == "1234567"
    removed = int(np.flatnonzero(t.from_ms(np.arange(t.ms.num_nodes)) < 0)[0])
    with pytest.raises(TopologyError, match="kept"):
        t.parse_label(t.ms.label(removed))


def test_first_clusters_in_id_order_would_be_disconnected() -> None:
    """Why the kept set is a BFS prefix: MS(2,2)'s two lowest clusters share symbol 5."""
    k = 5
    blocks = np.array([[3, 4], [2, 4]], dtype=np.uint8)  # last blocks 45 and 35
    assert cluster_of_blocks(blocks, k).tolist() == [0, 1]
    t = from_spec("cms:2,2,2")
    assert not set(t.blocks[0].tolist()) & set(t.blocks[1].tolist())


def test_cms_with_every_cluster_is_ms() -> None:
    a, b = from_spec("cms:20,2,2"), from_spec("ms:2,2")
    assert a.num_nodes == b.num_nodes
    assert (np.sort(distances_from(a, 0)) == np.sort(distances_from(b, 0))).all()


# ------------------------------------------------------------------- routers
def test_router_registry() -> None:
    assert {"ims-two-phase", "ims-star-emulation", "shortest"} <= set(
        available_routers(from_spec("ims:1,2,2"))
    )
    assert set(available_routers(from_spec("cms:2,2,2"))) == {
        "shortest",
        "cms-clusters",
        "anynet-min",
    }
    with pytest.raises(RoutingError, match="applies to ims"):
        make_router("ims-two-phase", from_spec("ms:2,2"))
    with pytest.raises(RoutingError, match="sdc"):
        make_router("ims-two-phase", from_spec("ims:1,2,2"), sdc="lazy")
    with pytest.raises(RoutingError, match="applies to cms"):
        make_router("cms-clusters", from_spec("ms:2,2"))


@pytest.mark.parametrize("spec", IMS_SMALL)
@pytest.mark.parametrize("name, opts", IMS_ROUTERS)
def test_ims_routers_every_pair(spec: str, name: str, opts: dict) -> None:
    t = from_spec(spec)
    src, dst = all_pairs(t.num_nodes) if t.num_nodes <= 120 else (np.arange(t.num_nodes), 0)
    star_diam = 3 * (t.k - 1) // 2
    bound = 3 * star_diam + 3 * (t.full - 1) // 2 + 1
    w = walk(t, make_router(name, t, **opts), src, dst, seed=2, max_hops=bound, paths=True)
    assert w["ok"].all(), "a route did not arrive within 3 x star diameter + l-star diameter"
    exact = make_router("shortest", t).distance(src, dst)
    assert (w["lengths"] >= exact).all()
    if name == "ims-star-emulation":  # dilation 3 on a minimal star route
        rel = perm.compose(perm.inverse(perm.unrank(dst, t.k)), perm.unrank(src, t.k))
        assert (w["lengths"] <= 3 * perm.star_distance(rel)).all()
    if name == "ims-two-phase" and not opts and t.n >= 2:
        assert revisits(w["paths"]) == 0


def test_ims_routes_follow_the_translation() -> None:
    t = from_spec("ims:1,3,2")
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, t.num_nodes, 400), rng.integers(0, t.num_nodes, 400)
    rel, _ = t.translate(src, dst)
    for name, opts in IMS_ROUTERS:
        r = make_router(name, t, **opts)
        a, b = walk(t, r, src, dst, seed=4), walk(t, r, rel, 0, seed=4)
        assert a["ok"].all() and (a["lengths"] == b["lengths"]).all()


@pytest.mark.slow
def test_ims_1_3_3_routes_to_identity() -> None:
    """IMS((1),3,3), all 8! sources: the merged two-phase route is at most 18 hops."""
    t = from_spec("ims:1,3,3")
    dist = distances_from(t, 0)
    assert dist.max() == 14
    w = walk(t, make_router("ims-two-phase", t), np.arange(t.num_nodes), 0)
    assert w["ok"].all() and (w["lengths"] >= dist).all() and w["lengths"].max() == 18


@pytest.mark.slow
@pytest.mark.parametrize("spec", CMS_SMALL)
@pytest.mark.parametrize("name", ["cms-clusters", "shortest"])
def test_cms_routers_every_pair(spec: str, name: str) -> None:
    t = from_spec(spec)
    src, dst = all_pairs(t.num_nodes)
    if src.size > 40_000:
        pick = np.random.default_rng(5).integers(0, src.size, 40_000)
        src, dst = src[pick], dst[pick]
    exact = make_router("shortest", t).distance(src, dst)
    w = walk(t, make_router(name, t), src, dst, max_hops=4 * t.k * t.l, paths=True)
    assert w["ok"].all() and (w["lengths"] >= exact).all()
    assert revisits(w["paths"]) == 0
    if name == "shortest":
        assert (w["lengths"] == exact).all()


def test_ms_routing_inside_a_cluster_never_leaves_it() -> None:
    """The claim behind cms-clusters: MS routes between two nodes of one level-l
    cluster never take S_l (checked on MS(3,2), all pairs of cluster 0)."""
    t = from_spec("ms:3,2")
    s = math.factorial(5)
    src, dst = all_pairs(s)
    for name in ("ms-merged", "ms-balls-to-boxes", "ms-two-phase", "ms-star-emulation"):
        w = walk(t, make_router(name, t), src, dst)
        assert w["ok"].all() and w["port_counts"][t.ports.index("S3")] == 0


# ------------------------------------------------------------------ emulation
@pytest.mark.parametrize("spec", IMS_SMALL + ["ims:1,3,3", "ims:2+2,3,3", "ims:1,4,2"])
def test_emulation_words(spec: str) -> None:
    t = from_spec(spec)
    k = t.k
    for j in range(2, k + 1):
        word = ims_sdc_word(t, j)
        assert len(word) <= 3
        assert (words_perm(t, word) == perm.transposition(k, j - 1)).all()
    for i in range(1, k + 1):
        for j in range(i + 1, k + 1):
            word = ims_ct_word(t, i, j)
            assert len(word) <= (5 if t.l == 2 else 7)
            assert (words_perm(t, word) == perm.transposition(k, i - 1, j - 1)).all()


@pytest.mark.parametrize(
    "spec, dilation",
    [("ims:1,2,2", 5), ("ims:2,2,3", 5), ("ims:1,3,2", 7), ("ims:1,3,3", 7), ("ims:1,3,1", 3)],
)
def test_ct_dilation_by_bfs(spec: str, dilation: int) -> None:
    """The claim (5 with two levels, 7 otherwise) is tight for n >= 2; n = 1 gives 3."""
    t = from_spec(spec)
    longest = max(len(ims_ct_word(t, i, j)) for i in range(1, t.k) for j in range(i + 1, t.k + 1))
    assert ct_dilation(t)[0] == dilation <= longest


# ------------------------------------------------------------------- Table 2
def test_table2_rows_computed() -> None:
    rows = table2_rows()
    for r in rows:
        t = from_spec(r.spec)
        assert r.nodes == t.num_nodes == math.factorial(t.k)
        assert r.degree == len(t.gens)
        # off-module ports: those moving a position outside the module-star
        assert r.offmodule == sum(
            int((g[r.module :] != np.arange(r.module, t.k)).any()) for g in t.gens
        )
        assert module_links(t, r.module)[0] == r.module - 1
    bad = [r.paper_network for r in rows if not r.agrees]
    assert bad == ["IMS((2),2,4)"]  # 4 + 1 + 2 = 7 symbols: 7!, not the printed 8!
    fixed = from_spec("ims:3,2,4")  # the 8!-node option with a 5-star module
    assert fixed.num_nodes == math.factorial(8) and module_links(fixed, 5) == (4, 1)


def test_doc_tables_are_current() -> None:
    """docs/ms-variants.md holds the script's tables as generated now."""
    import runpy
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    script = runpy.run_path(str(root / "scripts" / "ms_variants_table.py"))
    doc = (root / "docs" / "ms-variants.md").read_text(encoding="utf-8")
    assert script["table2_markdown"]() in doc
    assert script["emulation_markdown"]() in doc
