"""Exports (BookSim2 anynet, GraphML, edge list) read back and checked against the topology."""

from __future__ import annotations

import io

import networkx as nx
import numpy as np
import pytest

from mpinet.cli import main
from mpinet.errors import ResourceError, SpecError
from mpinet.routing.tables import distances_from
from mpinet.topology import export, from_spec

#: one network of every family
FAMILIES = ["star:4", "scc:4", "ms:2,2", "ims:1,2,2", "cms:2,2,2", "fccn:2", "borel:7,2,0,1"]
FAMILIES += ["hypercube:4", "ccc:3"]


def text(topo, fmt, chunk_nodes=export.CHUNK_NODES) -> str:
    buf = io.StringIO()
    export.write(topo, fmt, buf, chunk_nodes)
    return buf.getvalue()


def check_graph(topo, g, node) -> None:
    """Out-degrees, edge ports and BFS distances of a networkx DiGraph of ``topo``."""
    n = topo.num_nodes
    nb = topo.neighbors(np.arange(n))
    assert g.number_of_nodes() == n and g.number_of_edges() == int((nb >= 0).sum())
    degrees = np.array([g.out_degree(node(v)) for v in range(n)])
    np.testing.assert_array_equal(degrees, (nb >= 0).sum(axis=1))
    for v in (0, n // 2, n - 1):
        for p in np.flatnonzero(nb[v] >= 0):
            e = g.edges[node(v), node(int(nb[v, p]))]
            assert e["port"] == topo.ports[p] and e["port_class"] == topo.port_classes[p]
        dist = distances_from(topo, v)
        got = nx.single_source_shortest_path_length(g, node(v))
        np.testing.assert_array_equal([got[node(u)] for u in range(n)], dist)


@pytest.mark.parametrize("spec", FAMILIES)
def test_graphml_round_trip(spec, tmp_path):
    topo = from_spec(spec)
    path = tmp_path / "g.graphml"
    path.write_text(text(topo, "graphml", chunk_nodes=7))
    g = nx.read_graphml(path)
    assert isinstance(g, nx.DiGraph) and g.graph["spec"] == spec
    check_graph(topo, g, lambda v: f"n{v}")
    assert [g.nodes[f"n{v}"]["label"] for v in range(topo.num_nodes)] == topo.labels(
        np.arange(topo.num_nodes)
    )


@pytest.mark.parametrize("spec", FAMILIES)
def test_edgelist_round_trip(spec, tmp_path):
    topo = from_spec(spec)
    path = tmp_path / "g.edges"
    path.write_text(text(topo, "edgelist", chunk_nodes=5))
    g = nx.read_edgelist(
        path, create_using=nx.DiGraph, nodetype=int, data=[("port", str), ("port_class", str)]
    )
    check_graph(topo, g, lambda v: v)


def parse_anynet(body: str) -> tuple[dict[int, set[int]], dict[int, int]]:
    """Router adjacency and node -> router of an anynet file, as BookSim2's parser reads it."""
    adj: dict[int, set[int]] = {}
    attach: dict[int, int] = {}
    for line in body.splitlines():
        if not line:
            continue
        tok = line.split(" ")
        assert tok[0] == "router", line
        head = int(tok[1])
        adj.setdefault(head, set())
        i = 2
        while i < len(tok):
            kind, ident = tok[i], int(tok[i + 1])
            i += 2
            if kind == "node":
                assert attach.setdefault(ident, head) == head  # one router per node
            else:
                assert kind == "router"
                adj[head].add(ident)
                adj.setdefault(ident, set()).add(head)  # BookSim inserts the reverse link
                if i < len(tok) and tok[i] not in ("router", "node"):
                    assert int(tok[i]) == 1  # latency
                    i += 1
    return adj, attach


@pytest.mark.parametrize("spec", FAMILIES)
def test_anynet_gives_the_same_adjacency(spec):
    topo = from_spec(spec)
    adj, attach = parse_anynet(text(topo, "anynet", chunk_nodes=3))
    n = topo.num_nodes
    nb = topo.neighbors(np.arange(n))
    assert sorted(adj) == list(range(n)) and attach == {v: v for v in range(n)}
    for v in range(n):
        assert adj[v] == set(nb[v][nb[v] >= 0].tolist())


def test_chunking_does_not_change_the_output():
    topo = from_spec("scc:4")
    for fmt in export.FORMATS:
        assert text(topo, fmt, chunk_nodes=5) == text(topo, fmt)
        assert len(text(topo, fmt)) <= export.estimate_bytes(topo, fmt)


def test_size_limit_and_bad_format():
    with pytest.raises(ResourceError, match="over the limit"):
        export.check_size(from_spec("star:6"), "graphml", limit=1 << 16)
    with pytest.raises(SpecError, match="anynet"):
        export.check_format("dot")


def test_cli_export(tmp_path, capsys):
    out = tmp_path / "s.anynet"
    assert main(["export", "star:4", "--format", "anynet", "--out", str(out)]) == 0
    assert out.read_text() == text(from_spec("star:4"), "anynet")
    assert main(["export", "star:4", "--format", "anynet", "--out", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["export", "star:4", "--format", "edgelist", "--out", str(out), "--force"]) == 0
    assert out.read_text().startswith("# mpinet export star:4")
    assert main(["export", "star:14", "--format", "graphml"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "GiB" in err[0] and err[0].startswith("mpinet: error:")
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left behind
