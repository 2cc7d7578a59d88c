"""Tests of the star, star-connected cycles (SCC) and macro-star (MS) families.

The reference graphs are built in plain Python on tuples of symbols 1..k from
the papers' definitions (paper 004 sec. 2.2 for MS, paper 001 sec. 2 for SCC)
and mapped to ids only through ``topo.parse_label``.
"""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest

from mpinet.errors import MpinetError, TopologyError
from mpinet.topology import from_spec

SMALL = {
    # spec: (nodes, degree)
    "star:3": (6, 2),
    "star:4": (24, 3),
    "star:5": (120, 4),
    "star:6": (720, 5),
    "scc:3": (12, 2),
    "scc:4": (72, 3),
    "scc:5": (480, 3),
    "ms:1,3": (24, 3),
    "ms:2,2": (120, 3),
    "ms:3,2": (5040, 4),
    "ms:2,3": (5040, 4),
}

# bigger ones, checked on a sample of nodes only
BIG = ["star:10", "star:12", "scc:10", "scc:12", "ms:3,3", "ms:5,3", "ms:4,2", "ms:19,1"]

_TOPOS: dict = {}


def topo(spec: str):
    if spec not in _TOPOS:
        _TOPOS[spec] = from_spec(spec)
    return _TOPOS[spec]


def all_neighbors(t) -> np.ndarray:
    return t.neighbors(np.arange(t.num_nodes))


def sample_ids(t, count: int = 300, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, t.num_nodes, size=count)
    return np.concatenate([[0, t.num_nodes - 1], ids]).astype(np.int64)


# ---------------------------------------------------------------- structure


@pytest.mark.parametrize("spec", list(SMALL))
def test_size_and_degree(spec):
    t = topo(spec)
    nodes, degree = SMALL[spec]
    assert t.num_nodes == nodes
    assert t.degree == degree
    assert len(t.ports) == len(t.port_classes) == len(t.reverse_port) == degree
    assert t.spec == spec
    assert t.identity == 0


def test_port_names():
    assert topo("star:5").ports == ("T2", "T3", "T4", "T5")
    assert topo("ms:3,2").ports == ("T2", "T3", "S2", "S3")
    assert topo("ms:3,2").port_classes == ("nucleus", "nucleus", "intercluster", "intercluster")
    assert topo("ms:2,3").ports == ("T2", "T3", "T4", "S2")
    assert topo("ms:1,3").ports == ("T2", "T3", "T4")
    assert topo("scc:5").ports == ("local+", "local-", "lateral")
    assert topo("scc:5").port_classes == ("local", "local", "lateral")
    assert topo("scc:3").ports == ("local", "lateral")


def check_neighbor_table(t, ids: np.ndarray, nb: np.ndarray) -> None:
    assert nb.shape == (ids.size, t.degree)
    assert nb.dtype == np.int64
    # every port exists and leads to a valid id
    assert nb.min() >= 0 and nb.max() < t.num_nodes
    # no self loops
    assert not (nb == ids[:, None]).any()
    # distinct neighbours: the graph is simple and regular of full degree
    assert all(len(set(row)) == t.degree for row in nb.tolist())
    # reverse ports lead back
    for p in range(t.degree):
        back = t.neighbors(nb[:, p])[:, t.reverse_port[p]]
        assert np.array_equal(back, ids), (t.spec, t.ports[p])


@pytest.mark.parametrize("spec", list(SMALL))
def test_neighbor_table_all_nodes(spec):
    t = topo(spec)
    ids = np.arange(t.num_nodes)
    check_neighbor_table(t, ids, all_neighbors(t))


@pytest.mark.parametrize("spec", BIG)
def test_neighbor_table_sampled(spec):
    t = topo(spec)
    ids = sample_ids(t)
    check_neighbor_table(t, ids, t.neighbors(ids))


def test_neighbors_rejects_bad_ids():
    t = topo("scc:4")
    for bad, says in (
        ([-1], r"ids must be in \[0, 71\] for scc:4, got -1"),
        ([t.num_nodes], r"ids must be in \[0, 71\] for scc:4, got 72"),
        ([0.5], r"ids must be integer node ids in \[0, 71\]"),
    ):
        with pytest.raises(TopologyError, match=says):
            t.neighbors(bad)


# ---------------------------------------------------------------- labels


@pytest.mark.parametrize("spec", list(SMALL))
def test_label_round_trip_all(spec):
    t = topo(spec)
    labels = t.labels(np.arange(t.num_nodes))
    assert len(set(labels)) == t.num_nodes
    for i, lab in enumerate(labels):
        assert t.parse_label(lab) == i
        assert t.label(i) == lab


@pytest.mark.parametrize("spec", BIG)
def test_label_round_trip_sampled(spec):
    t = topo(spec)
    for i in sample_ids(t, 200, seed=3).tolist():
        lab = t.label(i)
        assert t.parse_label(lab) == i
    # k >= 10 symbols use the dotted form
    k = t.n if t.family in ("star", "scc") else t.k
    assert ("." in t.label(0)) == (k > 9)


@pytest.mark.parametrize("spec", list(SMALL) + ["star:12", "scc:12"])
def test_hash_id_form(spec):
    t = topo(spec)
    for i in (0, 1, t.num_nodes // 2, t.num_nodes - 1):
        assert t.parse_label(f"#{i}") == i
        assert t.parse_label(f"  #{i} ") == i
    top = rf"node id must be in \[0, {t.num_nodes - 1}\] for {t.spec}, got"
    for bad, says in (
        ("#", "node id '#' must be '#' followed by an integer"),
        ("#x", "node id '#x' must be '#' followed by an integer"),
        ("#1.5", r"node id '#1\.5' must be '#' followed by an integer"),
        (f"#{t.num_nodes}", f"{top} {t.num_nodes}"),
        ("#-1", f"{top} -1"),
    ):
        with pytest.raises(TopologyError, match=says):
            t.parse_label(bad)


def test_hash_id_out_of_range_message_names_range():
    t = topo("scc:5")
    with pytest.raises(TopologyError) as exc:
        t.parse_label("#480")
    assert "[0, 479]" in str(exc.value)


def test_identity_labels():
    assert topo("star:5").label(0) == "12345"
    assert topo("ms:3,2").label(0) == "1234567"
    assert topo("scc:5").label(0) == "<2, 12345>"
    assert topo("scc:5").parse_label("<2, 12345>") == 0
    assert topo("star:10").label(0) == "1.2.3.4.5.6.7.8.9.10"


def test_scc_label_paper_example():
    t = topo("scc:5")
    i = t.parse_label("<3, 34125>")
    assert t.label(i) == "<3, 34125>"
    # tolerant spellings name the same node
    for alt in ("<3,34125>", " < 3 , 34125 > ", "3, 34125", "<3, 3 4 1 2 5>"):
        assert t.parse_label(alt) == i
    ii, pr = t.split(np.array([i]))
    assert ii[0] == 3
    assert t.join(ii, pr)[0] == i


@pytest.mark.parametrize(
    "text, says",
    [
        ("<1, 12345>", r"i in the scc:5 label <i, pi> must be in \[2, 5\], got 1"),
        ("<6, 12345>", r"i in the scc:5 label <i, pi> must be in \[2, 5\], got 6"),
        ("<3, 1234>", "'1234' must hold each of the symbols 1..5 exactly once"),
        ("<3, 11234>", "'11234' must hold each of the symbols 1..5 exactly once"),
        ("34125", "scc:5 label must look like <i, pi> e.g. <3, 34125>, got '34125'"),
        ("<x, 34125>", "scc:5 label must look like <i, pi> e.g. <3, 34125>, got '<x, 34125>'"),
        ("", "scc:5 label must look like <i, pi> e.g. <3, 34125>, got ''"),
    ],
)
def test_scc_bad_labels(text, says):
    with pytest.raises(TopologyError, match=says):
        topo("scc:5").parse_label(text)


@pytest.mark.parametrize(
    "text, says",
    [
        ("1234", "'1234' must hold each of the symbols 1..5 exactly once"),
        ("123456", "'123456' must hold each of the symbols 1..5 exactly once"),
        ("12245", "'12245' must hold each of the symbols 1..5 exactly once"),
        ("1234x", "'1234x' must list the symbols 1..5"),
        ("<2, 12345>", "'<2, 12345>' must list the symbols 1..5"),
    ],
)
def test_star_bad_labels(text, says):
    with pytest.raises(TopologyError, match=f"^star:5 label: permutation label {says}"):
        topo("star:5").parse_label(text)


# ---------------------------------------------------------------- independent reference graphs


def sym(t: tuple) -> str:
    return "".join(map(str, t))


def ref_star(k: int) -> nx.Graph:
    """Paper definition: T_i swaps positions 1 and i (1-based), i = 2..k."""
    g = nx.Graph()
    for u in itertools.permutations(range(1, k + 1)):
        g.add_node(sym(u))
        for i in range(2, k + 1):
            v = list(u)
            v[0], v[i - 1] = v[i - 1], v[0]
            g.add_edge(sym(u), sym(tuple(v)))
    return g


def s_gen(u: tuple, n: int, i: int) -> tuple:
    """Def. 2.2 literally, with 1-based u_{a:b} = u[a-1:b]:
    S_{n,i}(u_{1:k}) = u_1 u_{(i-1)n+2:in+1} u_{n+2:(i-1)n+1} u_{2:n+1} u_{in+2:k}."""
    k = len(u)

    def seg(a: int, b: int) -> tuple:
        return tuple(u[a - 1 : b]) if a <= b else ()

    return (
        seg(1, 1)
        + seg((i - 1) * n + 2, i * n + 1)
        + seg(n + 2, (i - 1) * n + 1)
        + seg(2, n + 1)
        + seg(i * n + 2, k)
    )


def ref_ms(l: int, n: int) -> nx.Graph:
    """Def. 2.3: U ~ V iff U = T_j(V) (2 <= j <= n+1) or U = S_i(V) (2 <= i <= l)."""
    k = n * l + 1
    g = nx.Graph()
    for u in itertools.permutations(range(1, k + 1)):
        g.add_node(sym(u))
        for j in range(2, n + 2):
            v = list(u)
            v[0], v[j - 1] = v[j - 1], v[0]
            g.add_edge(sym(u), sym(tuple(v)))
        for i in range(2, l + 1):
            g.add_edge(sym(u), sym(s_gen(u, n, i)))
    return g


def ref_scc(n: int) -> nx.Graph:
    """Paper 001 sec. 2, checked pairwise: local iff pi = pi' and
    min(|i-i'|, n-1-|i-i'|) = 1; lateral iff i = i' and pi, pi' differ only in
    the first and i-th digits with pi(1) = pi'(i), pi(i) = pi'(1)."""
    perms = list(itertools.permutations(range(1, n + 1)))
    g = nx.Graph()

    def lab(i: int, p: tuple) -> str:
        return f"<{i}, {sym(p)}>"

    for p in perms:
        for i in range(2, n + 1):
            g.add_node(lab(i, p))
            for i2 in range(i + 1, n + 1):
                if min(abs(i - i2), n - 1 - abs(i - i2)) == 1:
                    g.add_edge(lab(i, p), lab(i2, p))
    for p, q in itertools.combinations(perms, 2):
        diff = [j for j in range(n) if p[j] != q[j]]
        if len(diff) != 2 or diff[0] != 0:
            continue
        i = diff[1] + 1  # 1-based position of the other differing digit
        if p[0] == q[i - 1] and p[i - 1] == q[0]:
            g.add_edge(lab(i, p), lab(i, q))
    return g


def edge_set_of(t) -> set:
    nb = all_neighbors(t)
    ids = np.repeat(np.arange(t.num_nodes), t.degree)
    flat = nb.ravel()
    assert (flat >= 0).all()
    lo, hi = np.minimum(ids, flat), np.maximum(ids, flat)
    return set(zip(lo.tolist(), hi.tolist(), strict=True))


def ref_edge_set(t, g: nx.Graph) -> set:
    idx = {v: t.parse_label(v) for v in g.nodes}
    assert sorted(idx.values()) == list(range(t.num_nodes))
    return {(min(idx[a], idx[b]), max(idx[a], idx[b])) for a, b in g.edges}


def ref_graph(spec: str) -> nx.Graph:
    fam, params = spec.split(":")
    if fam == "star":
        return ref_star(int(params))
    if fam == "scc":
        return ref_scc(int(params))
    l, n = map(int, params.split(","))
    return ref_ms(l, n)


@pytest.mark.parametrize("spec", list(SMALL))
def test_edge_set_matches_paper_definition(spec):
    t = topo(spec)
    g = ref_graph(spec)
    assert g.number_of_nodes() == t.num_nodes
    got = edge_set_of(t)
    want = ref_edge_set(t, g)
    assert got == want
    # simple regular graph: each edge is seen from both ends exactly once
    assert len(got) * 2 == t.num_nodes * t.degree


def test_scc_link_counts_paper():
    # (n-1)n! local links and (n-1)n!/2 lateral links for n >= 4
    for n in (4, 5):
        t = topo(f"scc:{n}")
        nb = all_neighbors(t)
        lateral = t.ports.index("lateral")
        ids = np.arange(t.num_nodes)
        local_edges = {
            (min(a, b), max(a, b))
            for p, cls in enumerate(t.port_classes)
            if cls == "local"
            for a, b in zip(ids.tolist(), nb[:, p].tolist(), strict=True)
        }
        lat_edges = {
            (min(a, b), max(a, b))
            for a, b in zip(ids.tolist(), nb[:, lateral].tolist(), strict=True)
        }
        assert len(local_edges) == (n - 1) * math.factorial(n)
        assert len(lat_edges) == (n - 1) * math.factorial(n) // 2


def test_ms_1n_is_star():
    assert edge_set_of(topo("ms:1,3")) == edge_set_of(topo("star:4"))


# ---------------------------------------------------------------- paper 004 examples


def port_of_identity(t, port: str) -> str:
    ident = t.parse_label("".join(str(s) for s in range(1, 10)))
    assert ident == 0
    return t.label(int(t.neighbors([ident])[0, t.ports.index(port)]))


@pytest.mark.parametrize(
    "port, want", [("T2", "213456789"), ("T5", "523416789"), ("T8", "823456719")]
)
def test_paper_T_examples(port, want):
    assert port_of_identity(topo("star:9"), port) == want


@pytest.mark.parametrize(
    "port, want", [("S2", "145236789"), ("S3", "167452389"), ("S4", "189456723")]
)
def test_paper_S_examples(port, want):
    assert port_of_identity(topo("ms:4,2"), port) == want


def test_reference_s_generator_matches_paper_examples():
    ident = tuple(range(1, 10))
    assert sym(s_gen(ident, 2, 2)) == "145236789"
    assert sym(s_gen(ident, 2, 3)) == "167452389"
    assert sym(s_gen(ident, 2, 4)) == "189456723"


def test_paper_004_routing_example_path():
    """Fig. 2 of paper 004 on MS(3, 2): 6572341 -T2-> 5672341 -S3-> 5412367
    -T3-> 1452367 -S2-> 1234567."""
    t = topo("ms:3,2")
    path = ["6572341", "5672341", "5412367", "1452367", "1234567"]
    ports = ["T2", "S3", "T3", "S2"]
    for a, b, p in zip(path[:-1], path[1:], ports, strict=True):
        u = t.parse_label(a)
        assert t.label(int(t.neighbors([u])[0, t.ports.index(p)])) == b


# ---------------------------------------------------------------- id order and clusters


def test_ms_clusters_are_contiguous():
    t = topo("ms:3,2")  # l = 3, n = 2, k = 7
    n, k = 2, 7
    ids = np.arange(t.num_nodes)
    p = t.perms(ids)
    nb = all_neighbors(t)
    for level in (2, 3):
        size = math.factorial((level - 1) * n + 1)
        tail = p[:, (level - 1) * n + 1 :]
        blocks = tail.reshape(-1, size, k - ((level - 1) * n + 1))
        # all members of one block share their tail ...
        assert (blocks == blocks[:, :1, :]).all()
        # ... and different blocks have different tails
        assert len({row.tobytes() for row in blocks[:, 0, :]}) == t.num_nodes // size
    nucleus = math.factorial(n + 1)
    for j, name in enumerate(t.ports):
        same_block = nb[:, j] // nucleus == ids // nucleus
        if name.startswith("T"):
            assert same_block.all(), name
        else:
            assert not same_block.any(), name
    # S2 stays inside the level-3 cluster, S3 leaves it
    lvl3 = math.factorial(2 * n + 1)
    assert (nb[:, t.ports.index("S2")] // lvl3 == ids // lvl3).all()
    assert not (nb[:, t.ports.index("S3")] // lvl3 == ids // lvl3).any()


def test_scc_supernodes_are_contiguous():
    t = topo("scc:5")
    ring = 4
    ids = np.arange(t.num_nodes)
    labels = t.labels(ids)
    for q in range(t.num_nodes // ring):
        block = labels[q * ring : (q + 1) * ring]
        pis = {lab.split(",")[1].strip(" >") for lab in block}
        assert len(pis) == 1
        assert [int(lab[1 : lab.index(",")]) for lab in block] == [2, 3, 4, 5]
    nb = all_neighbors(t)
    for j, cls in enumerate(t.port_classes):
        same = nb[:, j] // ring == ids // ring
        assert same.all() if cls == "local" else not same.any()


def test_scc_ports_semantics():
    t = topo("scc:5")
    u = t.parse_label("<3, 34125>")
    nb = t.neighbors([u])[0]
    got = {p: t.label(int(v)) for p, v in zip(t.ports, nb, strict=True)}
    assert got == {"local+": "<4, 34125>", "local-": "<2, 34125>", "lateral": "<3, 14325>"}
    # the ring wraps around: <5, pi> -local+-> <2, pi>
    w = t.parse_label("<5, 34125>")
    assert t.label(int(t.neighbors([w])[0, 0])) == "<2, 34125>"


# ---------------------------------------------------------------- spec errors


@pytest.mark.parametrize(
    "spec, needle",
    [
        ("scc:2", "N in scc:N"),
        ("scc:21", "N in scc:N"),
        ("scc:x", "N in scc:N"),
        ("star:2", "N in star:N"),
        ("star:", "star:N"),
        ("ms:0,3", "L in ms:L,N"),
        ("ms:3,0", "N in ms:L,N"),
        ("ms:3", "ms:L,N"),
        ("ms:1,2,3", "ms:L,N"),
        ("ms:10,2", "ms:L,N"),  # 21 symbols
        ("ms:1,1", "ms:L,N"),  # 2 symbols
        ("foo:3", "foo"),
        ("scc", "FAMILY:PARAMS"),
    ],
)
def test_from_spec_errors(spec, needle):
    with pytest.raises(MpinetError) as exc:
        from_spec(spec)
    assert isinstance(exc.value, ValueError)
    assert needle in str(exc.value)


def test_from_spec_ok_forms():
    assert from_spec("scc:5").num_nodes == 480
    assert from_spec(" SCC:5 ").spec == "scc:5"
    assert from_spec("ms: 3 , 2").spec == "ms:3,2"
    assert from_spec("ms:1,3").num_nodes == 24
    assert from_spec("star:20").num_nodes == math.factorial(20)
