"""The network catalogue: bad network files and Cayley specs, refused in one line.

Every case runs the real CLI on a file it writes (``file:PATH`` networks) or a spec
(``cayley:``, ``rotator:``) and is checked by :func:`catalogue.check`: exit code 2, one
line from rank 0 naming the file, the line (or element) and the fault, no traceback,
nothing written. The formats' rules are docs/networks.md.
"""

from __future__ import annotations

import pytest
from catalogue import Case, Given, param, run_and_check, section

TRI = "0 1\n1 2\n2 0\n"
GRAPHML = (
    '<?xml version="1.0"?>\n<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n'
    '<graph edgedefault="undirected">\n<node id="a"/><node id="b"/>\n{edges}</graph>\n'
    "</graphml>\n"
)


#: a path of 20,000 links after a triangle: 0.3 MB, whose reading plans about 6 MB
CHAIN = Given(TRI + "".join(f"{i} {i + 1}\n" for i in range(2, 20000)), "a path of 20,000 links")


def net(text: str, name: str = "net.edges") -> dict:
    return {name: text}


C = Case
CASES: list[Case] = [
    *section(
        "Networks: edge lists",
        C(
            "edges-missing",
            "info file:nothing.edges",
            r"network file 'nothing\.edges' does not "
            r"exist",
        ),  # fmt: skip
        C(
            "edges-self-loop",
            "info file:net.edges",
            r"net\.edges line 3: self loop at node 2",
            files=net("0 1\n1 2\n2 2\n"),
        ),  # fmt: skip
        C(
            "edges-duplicate",
            "info file:net.edges",
            r"net\.edges line 4: duplicate link 0 1 \(first at line 1\)",
            files=net(TRI + "0 1\n"),
        ),  # fmt: skip
        C(
            "edges-one-way",
            "run --topology file:net.edges --quiet",
            r"net\.edges line 3: link 1 2 is listed in one direction only, but line 1 lists a "
            r"link in both directions",
            files=net("0 1\n1 0\n1 2\n"),
        ),  # fmt: skip
        C(
            "edges-not-integer",
            "info file:net.edges",
            r"net\.edges line 2: node id 'b' is not a non-negative integer",
            files=net("# ids must be integers\nb c\n"),
        ),  # fmt: skip
        C(
            "edges-one-id",
            "info file:net.edges",
            r"net\.edges line 2: a link needs two node ids, found one \('7'\)",
            files=net("0 1\n7\n"),
        ),  # fmt: skip
        C(
            "edges-empty",
            "info file:net.edges",
            r"net\.edges: no links \(an empty network\)",
            files=net("# nothing here\n"),
        ),  # fmt: skip
        C(
            "edges-disconnected",
            "info file:net.edges",
            r"net\.edges is disconnected: 2 components .*only `mpinet info "
            r"--allow-disconnected` reads such a network",
            files=net(TRI + "3 4\n"),
        ),  # fmt: skip
        C(
            "edges-disconnected-run",
            "run --topology file:net.edges --quiet",
            r"is disconnected: 2 components",
            files=net(TRI + "3 4\n"),
            ranks=2,
        ),  # fmt: skip
        C(
            "edges-memory-plan",
            "info file:net.edges",
            r"reading net\.edges .* could need up to "
            r".* over the .* available",
            files={"net.edges": CHAIN},
            env={"MPINET_MEMORY_LIMIT": "1M"},
        ),  # fmt: skip
        C(
            "edges-sources-range",
            "info file:net.edges --sources 1000",
            r"--sources K must be in \[1, 3\], got 1000",
            files=net(TRI),
        ),
    ),
    *section(
        "Networks: GraphML and anynet",
        C(
            "graphml-malformed",
            "info file:net.graphml",
            r"net\.graphml line 3: malformed XML \(mismatched tag\)",
            files=net("<graphml><graph>\n<node id='a'>\n</graph>", "net.graphml"),
        ),  # fmt: skip
        C(
            "graphml-undeclared",
            "info file:net.graphml",
            r"net\.graphml line 5: edge 1 names node 'c', not declared",
            files=net(GRAPHML.format(edges='<edge source="a" target="c"/>\n'), "net.graphml"),
        ),  # fmt: skip
        C(
            "anynet-one-way",
            "info file:net.anynet",
            r"net\.anynet line 2: link 1 2 is listed in one direction only",
            files=net(
                "router 0 node 0 router 1\nrouter 1 node 1 router 0 router 2\n"
                "router 2 node 2 router 0\n",
                "net.anynet",
            ),
        ),  # fmt: skip
        C(
            "anynet-latency",
            "info file:net.anynet",
            r"net\.anynet line 1: latency 5 on the link from router 0 to router 1",
            files=net("router 0 node 0 router 1 5\nrouter 1 node 1 router 0 5\n", "net.anynet"),
        ),  # fmt: skip
    ),
    *section(
        "Networks: Cayley specs",
        C(
            "cayley-not-inverse-closed",
            "info 'cayley:4:(1 2 3),(1 4)'",
            r"the inverse of generator \(1 2 3\) .*is not in the set.*add \(1 3 2\)",
        ),
        C(
            "cayley-subgroup",
            "info 'cayley:4:(1 2),(3 4)'",
            r"generate a group of order 4, but the nodes are all K! = 4! = 24",
        ),
        C(
            "cayley-bad-symbol",
            "info 'cayley:4:(1 5),(1 2)'",
            r"symbol 5 in generator 1 \(1 5\) must be in 1\.\.K = 1\.\.4",
        ),
        C("rotator-directed", "info rotator:5", r"rotator:5 is a directed graph"),
        C(
            "sources-vertex-transitive",
            "info pancake:5 --sources 10",
            r"pancake:5 is vertex-transitive: one source gives the exact distribution",
        ),
    ),
]


def test_the_catalogue_is_complete():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_bad_input(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
