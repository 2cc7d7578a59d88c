"""``file:PATH`` networks in GraphML and BookSim2 anynet: round trips and every bad file."""

from __future__ import annotations

import re
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from mpinet.cli import main
from mpinet.errors import TopologyError
from mpinet.netfile import load_topology, read_network
from mpinet.topology import from_spec
from mpinet.topology.filegraph import FileError

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "jobs" / "networks"


def exported(tmp_path: Path, spec: str, fmt: str) -> Path:
    """``mpinet export SPEC --format FMT`` into a file, through the CLI."""
    out = tmp_path / f"{spec.replace(':', '-').replace(',', '-')}.{fmt}"
    assert main(["export", spec, "--format", fmt, "--out", str(out)]) == 0
    return out


def same_neighbours(topo, g) -> None:
    """Identical neighbour tables (ports the file never uses are -1 in the family)."""
    ids = np.arange(topo.num_nodes)
    want, got = topo.neighbors(ids), g.neighbors(ids)
    assert g.num_nodes == topo.num_nodes
    np.testing.assert_array_equal(got, want[:, : g.degree])
    assert (want[:, g.degree :] < 0).all()


def bad(tmp_path: Path, name: str, text: str, match: str) -> None:
    """Reading ``text`` fails with one line naming the file and matching ``match``."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(FileError, match=match) as e:
        read_network(str(path))
    msg = str(e.value)
    assert msg.startswith(str(path)) and "\n" not in msg


def edges_by_label(g) -> set[frozenset[str]]:
    nb = g.neighbors(range(g.num_nodes))
    v, p = np.nonzero(nb >= 0)
    return {frozenset((g.label(int(a)), g.label(int(nb[a, q])))) for a, q in zip(v, p, strict=True)}


# ---------------------------------------------------------------- GraphML


@pytest.mark.parametrize("spec", ["star:4", "ms:2,2", "scc:4", "fccn:2", "hypercube:4"])
def test_graphml_export_round_trip(tmp_path, spec):
    topo = from_spec(spec)
    g = load_topology(f"file:{exported(tmp_path, spec, 'graphml')}")
    same_neighbours(topo, g)
    assert g.ports == topo.ports and g.port_classes == topo.port_classes
    ids = np.arange(topo.num_nodes)
    assert list(g.labels(ids)) == list(topo.labels(ids))
    assert g.reverse_port == tuple(topo.reverse_port)
    assert g.file_info["links_listed"] == int((topo.neighbors(ids) >= 0).sum())
    for v in (0, topo.num_nodes - 1):
        assert g.parse_label(topo.label(v)) == v


def nx_graphs():
    ring = nx.cycle_graph(7)
    ring.add_edges_from([(0, 3), (2, 5)])
    shuffled = nx.Graph()
    shuffled.add_edges_from([(5, 2), (2, 9), (9, 5), (9, 0), (0, 7)])  # ids not 0..N-1 in order
    words = nx.relabel_nodes(nx.petersen_graph(), {i: f"r{i:02d}" for i in range(10)})
    labelled = nx.Graph(words)
    for v in labelled:
        labelled.nodes[v]["label"] = v.upper()
    return {"int": ring, "int-shuffled": shuffled, "str": words, "str-label": labelled}


@pytest.mark.parametrize("kind", list(nx_graphs()))
def test_graphml_networkx_round_trip(tmp_path, kind):
    graph = nx_graphs()[kind]
    path = tmp_path / "g.graphml"
    nx.write_graphml(graph, str(path))
    g = read_network(str(path))
    name = {v: str(graph.nodes[v].get("label", v)) for v in graph}
    assert [g.label(i) for i in range(g.num_nodes)] == [name[v] for v in graph]
    assert g.edges == graph.number_of_edges()
    assert edges_by_label(g) == {frozenset((name[a], name[b])) for a, b in graph.edges}
    for v in graph:
        assert g.label(g.parse_label(name[v])) == name[v]
    # ports: a node's links in the order the file lists them
    first = next(iter(graph))
    mine = [name[b] for a, b in graph.edges if a == first] + [
        name[a] for a, b in graph.edges if b == first
    ]
    nb = g.neighbors(np.array([0]))[0]
    assert [g.label(int(x)) for x in nb if x >= 0] == mine


def test_graphml_sample_is_petersen():
    path = SAMPLES / "petersen.graphml"
    g = load_topology(f"file:{path}")
    pet = nx.petersen_graph()
    assert g.num_nodes == 10 and g.degree == 3 and g.regular and g._labels is None
    assert edges_by_label(g) == {frozenset((str(a), str(b))) for a, b in pet.edges}
    assert nx.is_isomorphic(nx.read_graphml(path), pet)


def graphml(body: str, edgedefault: str = "undirected", keys: str = "") -> str:
    return (
        '<?xml version="1.0"?>\n<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n'
        f'{keys}<graph edgedefault="{edgedefault}">\n{body}</graph>\n</graphml>\n'
    )


NODES = "".join(f'<node id="{c}"/>\n' for c in "abcd")  # lines 4-7 (7-10 after PORT_KEYS)
NODES3 = NODES.replace('<node id="d"/>\n', "")
PORT_KEYS = (
    '<key id="p" for="edge" attr.name="port" attr.type="string"/>\n'
    '<key id="c" for="edge" attr.name="port_class" attr.type="string"/>\n'
    '<key id="i" for="edge" attr.name="port_index" attr.type="int"/>\n'
)


def edge(a: str, b: str, port: str | None = None, cls: str | None = None, idx=None) -> str:
    data = "" if port is None else f'<data key="p">{port}</data>'
    data += "" if cls is None else f'<data key="c">{cls}</data>'
    data += "" if idx is None else f'<data key="i">{idx}</data>'
    return f'<edge source="{a}" target="{b}">{data}</edge>\n'


def test_graphml_forward_references_and_one_way_directed(tmp_path):
    # edges before their nodes; a directed graph listing each link once (as yEd writes)
    path = tmp_path / "y.graphml"
    path.write_text(graphml(edge("a", "b") + edge("b", "c") + edge("c", "a") + NODES3, "directed"))
    g = read_network(str(path))
    assert g.num_nodes == 3 and g.edges == 3 and [g.label(i) for i in range(3)] == ["a", "b", "c"]
    np.testing.assert_array_equal(g.neighbors(range(g.num_nodes)), [[1, 2], [0, 2], [1, 0]])


def test_graphml_port_names_without_index(tmp_path):
    links = [("a", "b", "x", "ring"), ("b", "a", "y", "ring"), ("b", "c", "x", "ring"),
             ("c", "b", "y", "ring"), ("c", "a", "x", "ring"), ("a", "c", "y", "ring")]  # fmt: skip
    path = tmp_path / "n.graphml"
    path.write_text(graphml("".join(edge(*e) for e in links) + NODES, "directed", PORT_KEYS))
    with pytest.raises(TopologyError, match="disconnected: 2 components"):
        read_network(str(path))  # node d has no link
    g = read_network(str(path), allow_disconnected=True)
    assert g.ports == ("x", "y") and g.port_classes == ("ring", "ring")
    np.testing.assert_array_equal(g.neighbors(range(g.num_nodes))[:3], [[1, 2], [2, 0], [0, 1]])
    assert g.reverse_port == (1, 0)


BAD_GRAPHML = {
    "not-graphml": ("<html><body/></html>", r"line 1: not GraphML \(the root element is <html>"),
    "not-xml": ("0 1\n1 2\n", r"line 1: not GraphML \(not XML: syntax error\)"),
    "empty-file": ("", r"not GraphML \(not XML: no element found\)"),
    "malformed": (graphml('<node id="a">\n</graph>'), r"line 5: malformed XML \(mismatched tag\)"),
    "no-nodes": (graphml(""), r": no nodes \(an empty network\)"),
    "no-links": (graphml(NODES), r": no links"),
    "self-loop": (graphml(NODES + edge("a", "b") + edge("c", "c")), r"line 9: self loop at node c"),
    "duplicate": (
        graphml(NODES + edge("a", "b") + edge("b", "c") + edge("b", "a")),
        r"line 10: duplicate link a b \(first at line 8\)",
    ),
    "one-way": (
        graphml(NODES + edge("a", "b") + edge("b", "a") + edge("b", "c"), "directed"),
        r"line 10: link b c is listed in one direction only",
    ),
    "undeclared": (
        graphml(NODES + edge("a", "b") + edge("b", "zz")),
        r"line 9: edge 2 names node 'zz', not declared",
    ),
    "hyperedge": (
        graphml(NODES + '<hyperedge><endpoint node="a"/></hyperedge>\n'),
        r"line 8: hyperedges are not supported",
    ),
    "port-element": (
        graphml('<node id="a"><port name="N"/></node>\n'),
        r"line 4: <port> elements are not supported",
    ),
    "nested": (
        graphml('<node id="a"><graph edgedefault="undirected"/></node>'),
        r"line 4: nested graphs are not supported",
    ),
    "node-twice": (graphml(NODES + '<node id="b"/>\n'), r"line 8: node id 'b' declared twice"),
    "same-label": (
        graphml(
            '<node id="a"><data key="l">x</data></node>\n<node id="b"><data key="l">x</data>'
            '</node>\n<edge source="a" target="b"/>\n',
            keys='<key id="l" for="node" attr.name="label" attr.type="string"/>\n',
        ),
        r": node 'b' has label 'x', as node 'a' does",
    ),
    "mixed-directed": (
        graphml(NODES + '<edge source="a" target="b" directed="true"/>\n'),
        r"line 8: edge 1 has directed='true' in a graph of edgedefault='undirected'",
    ),
    "class-clash": (
        graphml(
            NODES + edge("a", "b", "x", "k1") + edge("b", "a", "x", "k2"), "directed", PORT_KEYS
        ),
        r"line 12: port 'x' has class 'k2', but 'k1' at line 11 \(one class per port\)",
    ),
    "index-name-clash": (
        graphml(
            NODES + edge("a", "b", "x", idx=0) + edge("b", "a", "y", idx=0), "directed", PORT_KEYS
        ),
        r"line 12: port 0 is named 'y', but 'x' at line 11",
    ),
    "name-index-clash": (
        graphml(
            NODES + edge("a", "b", "x", idx=0) + edge("b", "a", "x", idx=1), "directed", PORT_KEYS
        ),
        r"line 12: port 'x' has index 1, but 0 at line 11",
    ),
    "bad-index": (
        graphml(NODES + edge("a", "b", idx="-1") + edge("b", "a", idx=0), "directed", PORT_KEYS),
        r"line 11: edge 1: port_index '-1' is not a non-negative integer",
    ),
    "ports-undirected": (
        graphml(NODES + edge("a", "b", "x") + edge("b", "c", "x"), keys=PORT_KEYS),
        r"line 11: a port is the port at the edge's source, so naming ports needs a directed",
    ),
    "ports-partly": (
        graphml(NODES + edge("a", "b", "x") + edge("b", "a"), "directed", PORT_KEYS),
        r"line 12: edge without a port, but line 11 names its port",
    ),
}
BAD_GRAPHML["two-graphs"] = (
    graphml(NODES).replace("</graphml>", '<graph edgedefault="directed"/></graphml>'),
    r"line 9: a second <graph>: one graph per file",
)


@pytest.mark.parametrize("case", list(BAD_GRAPHML))
def test_graphml_bad_files(tmp_path, case):
    text, match = BAD_GRAPHML[case]
    bad(tmp_path, f"{case}.graphml", text, match)


# ---------------------------------------------------------------- anynet


@pytest.mark.parametrize("spec", ["star:4", "ms:2,2", "fccn:2", "hypercube:4"])
def test_anynet_export_round_trip(tmp_path, spec):
    topo = from_spec(spec)
    g = load_topology(f"file:{exported(tmp_path, spec, 'anynet')}")
    same_neighbours(topo, g)
    assert g._labels is None and g.ports == tuple(f"p{i + 1}" for i in range(g.degree))


def test_anynet_sample_ring():
    g = load_topology(f"file:{SAMPLES / 'ring8.anynet'}")
    ring = np.arange(8)
    np.testing.assert_array_equal(
        g.neighbors(range(g.num_nodes)), np.c_[(ring + 1) % 8, (ring - 1) % 8]
    )
    assert g.reverse_port == (1, 0) and g.file_info["format"] == "anynet"


def anynet(tmp_path: Path, text: str, name: str = "t.anynet"):
    path = tmp_path / name
    path.write_text(text)
    return read_network(str(path))


def test_anynet_forms_booksim_reads(tmp_path):
    # each link once (BookSim adds the reverse), node heads, latencies of 1, tabs, blank lines
    g = anynet(tmp_path, "router 0 node 0 router 1 1\n\nrouter 1\trouter 2 node 1\n"
               "router 2 router 0\r\nnode 2 router 2 3\nnode 3 router 0\n")  # fmt: skip
    np.testing.assert_array_equal(g.neighbors(range(g.num_nodes)), [[1, 2], [0, 2], [1, 0]])
    # each link from both ends, routers of degree 1 and 2, no terminals
    g = anynet(tmp_path, "router 0 router 1\nrouter 1 router 0 router 2\nrouter 2 router 1\n")
    np.testing.assert_array_equal(g.neighbors(range(g.num_nodes)), [[1, -1], [0, 2], [1, -1]])


def test_anynet_latencies(tmp_path):
    ok = anynet(tmp_path, "router 0 node 0 9 router 1 1\nrouter 1 node 1 router 0 1\n")
    assert ok.edges == 1
    with pytest.raises(FileError, match=r"line 2: latency 3 on the link from router 1 to router 0"):
        anynet(tmp_path, "router 0 router 1\nrouter 1 router 0 3\n")


BAD_ANYNET = {
    "empty": ("", r": no routers \(an empty network\)"),
    "blank": ("\n  \n", r": no routers"),
    "no-links": ("router 0 node 0\n", r": no links"),
    "one-way": (
        "router 0 router 1 router 2\nrouter 1 router 0\nrouter 2\n",
        r"line 1: link 0 2 is listed in one direction only, but line 1 lists",
    ),
    "self-loop": ("router 0 router 1\nrouter 1 router 1\n", r"line 2: self loop at node 1"),
    "duplicate": (
        "router 0 router 1 router 1\n",
        r"line 1: duplicate link 0 1 \(first at line 1\)",
    ),
    "router-twice": (
        "router 0 router 1\nrouter 1 router 0\nrouter 0 router 1\n",
        r"line 3: router 0 is listed twice \(first at line 1",
    ),
    "non-integer": ("router 0 router x\n", r"line 1: router id 'x' is not a non-negative integer"),
    "negative": ("router -1 router 0\n", r"line 1: router id '-1' is not a non-negative integer"),
    "head-token": ("switch 0 router 1\n", r"line 1: unknown token 'switch'"),
    "body-token": ("router 0 router 1\nrouter 1 link 0\n", r"line 2: unknown token 'link'"),
    "comment": ("# a ring\nrouter 0 router 1\n", r"line 1: unknown token '#'"),
    "two-latencies": ("router 0 router 1 1 1\n", r"line 1: unknown token '1'"),
    "latency-zero": ("router 0 router 1 0\n", r"line 1: latency '0' is not a positive integer"),
    "latency-word": ("router 0 node 0 fast\n", r"line 1: latency 'fast' is not a positive"),
    "no-id": ("router 0 router 1\nrouter 1 router\n", r"line 2: 'router' needs an id"),
    "router-gap": (
        "router 0 router 2\nrouter 2 router 0\n",
        r": router ids must be 0..R-1 .*; router 1 is missing \(ids go up to 2\)",
    ),
    "node-gap": (
        "router 0 node 1 router 1\nrouter 1 router 0\n",
        r": node ids must be 0..T-1 .*; node 0 is missing",
    ),
    "node-node": ("node 0 node 1\n", r"line 1: node 0 is linked to node 1"),
    "node-two-routers": (
        "router 0 node 0 router 1\nrouter 1 node 0 router 0\n",
        r"line 2: node 0 is attached to router 1 here and to router 0 at line 1",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD_ANYNET))
def test_anynet_bad_files(tmp_path, case):
    text, match = BAD_ANYNET[case]
    bad(tmp_path, f"{case}.anynet", text, match)


def test_cli_names_the_file_and_line(tmp_path, capsys):
    for name, text, where in [
        ("x.anynet", "router 0 router 1\nrouter 1 router 0 router 0\n", "line 2: duplicate link"),
        ("x.graphml", graphml(NODES + edge("a", "q")), "line 8: edge 1 names node 'q'"),
    ]:
        path = tmp_path / name
        path.write_text(text)
        assert main(["info", f"file:{path}"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and re.search(re.escape(f"{path} {where}"), err[0])


# -- issue 32: files that cannot lie -------------------------------------------------------------
PORT_INDEX = (
    '<graphml><key id="i" for="edge" attr.name="port_index"/><graph edgedefault="directed">\n'
    '<node id="a"/><node id="b"/>\n'
    '<edge source="a" target="b"><data key="i">{i}</data></edge>\n'
    '<edge source="b" target="a"><data key="i">0</data></edge>\n</graph></graphml>\n'
)


@pytest.mark.parametrize(
    "index,says",
    [
        (2**64, r"port_index '18446744073709551616' is over 63 \(at most 64 ports: routing"),
        (2**70, r"port_index '1180591620717411303424' is over 63"),
        ("9" * 5000, r"port_index '9{60}'\.\.\. \(5,000 characters\) is over 63"),
        (64, r"port_index '64' is over 63"),
        ("²", r"port_index '²' is not a non-negative integer"),
        ("٣", r"port_index '٣' is not a non-negative integer"),
        ("-1", r"port_index '-1' is not a non-negative integer"),
    ],
)
def test_graphml_port_index_of_any_width_is_refused(tmp_path, index, says):
    bad(tmp_path, "t.graphml", PORT_INDEX.format(i=index), r"line 3: edge 1: " + says)


def test_graphml_port_index_63_is_the_last_port(tmp_path):
    path = tmp_path / "t.graphml"
    path.write_text(PORT_INDEX.format(i=63))
    g = read_network(str(path))
    assert g.degree == 64 and g.neighbors([0])[0, 63] == 1 and g.neighbors([0])[0, 0] == -1


def test_graphml_with_bom_and_cr_only_lines_reads_the_same_network(tmp_path):
    text = (SAMPLES / "petersen.graphml").read_text()
    want = load_topology(f"file:{SAMPLES / 'petersen.graphml'}")
    path = tmp_path / "p.graphml"
    path.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r").encode())
    g = read_network(str(path))
    same_neighbours(want, g)
    bad(tmp_path, "q.graphml", text.replace("\n", "\r").replace('<node id="3"', '<node id="0"'),
        r"line \d+: node id '0' declared twice")  # fmt: skip


def test_anynet_switch_and_long_tokens_get_clear_short_words(tmp_path):
    with pytest.raises(
        FileError, match=r"line 1: unknown token 'switch' .*names a switch `router`"
    ):
        anynet(tmp_path, "switch 0 router 1\n")
    with pytest.raises(FileError, match=r"line 2: unknown token 'Switch' .*write `router ID`"):
        anynet(tmp_path, "router 0 router 1\nrouter 1 Switch 0\n")
    with pytest.raises(FileError, match=r"unknown token 'hub' \(a line starts") as e:
        anynet(tmp_path, "hub 0 router 1\n")
    assert "BookSim's anynet names" not in str(e.value)
    with pytest.raises(FileError) as e:
        anynet(tmp_path, "router 0 " + "z" * (1 << 20) + " 1\n")
    assert len(str(e.value)) < 400 and "(1,048,576 bytes)" in str(e.value)
    with pytest.raises(FileError, match=r"latency '9{60}'\.\.\. \(5,000 bytes\) is too large"):
        anynet(tmp_path, "router 0 router 1 " + "9" * 5000 + "\nrouter 1 router 0\n")


def test_anynet_cr_only_lines_are_lines(tmp_path):
    path = tmp_path / "r.anynet"
    path.write_bytes(b"router 0 router 1\rrouter 1 router 2\rrouter 2 router 0\r")
    g = read_network(str(path))
    assert g.num_nodes == 3 and g.edges == 3
