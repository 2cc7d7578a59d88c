"""The edge-list reader and the file network it builds (``file:PATH``).

Round trips of every family through ``mpinet export --format edgelist``, ports in
the file's order with reverse ports checked on every link, labels kept, and every
bad-file case's one-line message (file, line, fault).
"""

from __future__ import annotations

import io

import networkx as nx
import numpy as np
import pytest

from mpinet.errors import ResourceError, TopologyError
from mpinet.jobs.spec import load_job
from mpinet.netfile import load_topology
from mpinet.topology import export, from_spec
from mpinet.topology.filegraph import FileError

FAMILIES = ["star:4", "scc:4", "ms:2,2", "fccn:2", "hypercube:4", "ccc:3", "borel:7,3,2,1"]


def write(tmp_path, text: str, name: str = "net.edges") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def exported(topo, fmt: str = "edgelist") -> str:
    buf = io.StringIO()
    export.write(topo, fmt, buf)
    return buf.getvalue()


def check_reverse(g) -> None:
    ids = np.arange(g.num_nodes)
    nb, rev = g.neighbors(ids), g.reverse_ports(ids)
    has = nb >= 0
    node, port = np.nonzero(has)
    assert np.array_equal(nb[nb[node, port], rev[node, port]], node)
    assert (rev[~has] == -1).all()


@pytest.mark.parametrize("spec", FAMILIES)
def test_export_round_trip_is_identical(tmp_path, spec):
    topo = from_spec(spec)
    g = load_topology("file:" + write(tmp_path, exported(topo)))
    ids = np.arange(topo.num_nodes)
    assert g.num_nodes == topo.num_nodes
    assert np.array_equal(g.neighbors(ids), topo.neighbors(ids))
    assert g.ports == topo.ports and g.port_classes == topo.port_classes
    assert g.uniform_reverse and g.reverse_port == tuple(topo.reverse_port)
    check_reverse(g)


def test_ports_follow_the_file_order_and_reverses_differ_by_node(tmp_path):
    # a triangle and a tail, listed once each: ports in line order at both ends
    g = load_topology("file:" + write(tmp_path, "# t\n0 1\n1 2\n2 0\n2 3\n"))
    assert g.neighbors(np.arange(4)).tolist() == [[1, 2, -1], [0, 2, -1], [1, 0, 3], [2, -1, -1]]
    assert g.degree == 3 and not g.regular and not g.vertex_transitive
    check_reverse(g)
    assert not g.uniform_reverse
    with pytest.raises(TopologyError, match="differs from node to node"):
        g.reverse_port  # noqa: B018
    assert g.reverse_of(np.array([0, 2]), np.array([1, 2])).tolist() == [1, 0]


def test_random_graph_from_networkx(tmp_path):
    G = nx.random_regular_graph(3, 40, seed=5)
    text = "".join(f"{u} {v}\n" for u, v in G.edges())
    g = load_topology("file:" + write(tmp_path, text))
    check_reverse(g)
    nb = g.neighbors(range(40))
    got = {tuple(sorted((int(u), int(v)))) for u, row in enumerate(nb) for v in row}
    assert got == {tuple(sorted(e)) for e in G.edges()}


def test_sparse_ids_are_kept_as_labels(tmp_path):
    g = load_topology("file:" + write(tmp_path, "10 500\n500 7\n7 10\n"))
    assert g.num_nodes == 3
    assert g.labels([0, 1, 2]) == ["7", "10", "500"]
    assert g.parse_label("500") == 2 and g.parse_label("#1") == 1
    with pytest.raises(TopologyError, match="no node labelled '8'"):
        g.parse_label("8")
    huge = load_topology("file:" + write(tmp_path, "0 4000000000000\n4000000000000 9\n9 0\n"))
    assert huge.labels([0, 1, 2]) == ["0", "9", "4000000000000"]


def test_named_ports_need_both_directions(tmp_path):
    text = "0 1 a x\n1 0 a x\n1 2 b x\n2 1 a x\n2 0 b x\n0 2 b x\n"
    g = load_topology("file:" + write(tmp_path, text))
    assert g.ports == ("a", "b") and g.port_classes == ("x", "x")
    assert g.neighbors([0, 1, 2]).tolist() == [[1, 2], [0, 2], [1, 0]]
    check_reverse(g)


BAD = [
    ("0 1\n1 1\n", r"net.edges line 2: self loop at node 1"),
    ("0 1\n1 2\n0 1\n", r"line 3: duplicate link 0 1 \(first at line 1\)"),
    ("0 1\n1 0\n1 2\n", r"line 3: link 1 2 is listed in one direction only, but line 1"),
    ("0 1\nx 2\n", r"line 2: node id 'x' is not a non-negative integer"),
    ("0 -1\n", r"line 1: node id '-1' is not a non-negative integer"),
    ("0 1\n# c\n7\n", r"line 3: a link needs two node ids, found one \('7'\)"),
    ("0 1 a b c\n", r"line 1: too many fields at 'c'"),
    ("0 99999999999999999999\n", r"line 1: node id '99999999999999999999' is too large"),
    ("# only comments\n\n", r"net.edges: no links \(an empty network\)"),
    ("", r"net.edges: no links"),
    ("0 1 a\n1 0\n", r"line 2: no port name, but line 1 names its port"),
    ("0 1 a\n1 2 a\n", r"line 1: a port name is the port at the line's first node"),
    ("0 1 a x\n1 0 a y\n", r"line 2: port 'a' has class 'y', but line 1 gives it 'x'"),
    ("0 1 a\n1 0 a\n0 2 a\n2 0 a\n", r"node 0 has port 0 twice \(lines 1 and 3\)"),
    ("0 1\n2 3\n", r"is disconnected: 2 components .* `mpinet info --allow-disconnected`"),
]


@pytest.mark.parametrize("text,match", BAD)
def test_bad_files_are_refused_naming_line_and_fault(tmp_path, text, match):
    with pytest.raises(TopologyError, match=match):
        load_topology("file:" + write(tmp_path, text))


def test_degree_limit_is_the_port_masks_and_applied_at_read_time(tmp_path):
    from mpinet.routing.tables import mask_dtype
    from mpinet.topology.filegraph import MAX_DEGREE

    assert np.dtype(mask_dtype(MAX_DEGREE)).itemsize * 8 == MAX_DEGREE  # the widest mask
    star = "".join(f"0 {i}\n" for i in range(1, MAX_DEGREE + 1))
    g = load_topology("file:" + write(tmp_path, star))
    assert g.degree == MAX_DEGREE and mask_dtype(g.degree) == np.uint64
    text = star + f"0 {MAX_DEGREE + 1}\n"
    with pytest.raises(FileError, match=r"node 0 has 65 ports, over the limit of 64 \(routing"):
        load_topology("file:" + write(tmp_path, text, "big.edges"))
    with pytest.raises(ResourceError, match=r"degree 65 is over the limit of 64 \(routing"):
        mask_dtype(MAX_DEGREE + 1)


def test_missing_file_and_format(tmp_path):
    with pytest.raises(FileError, match="does not exist"):
        load_topology(f"file:{tmp_path}/nothing.edges")
    with pytest.raises(FileError, match="is a directory"):
        load_topology(f"file:{tmp_path}")
    p = write(tmp_path, "0 1\n", "x.txt")
    assert load_topology(f"file:edgelist:{p}").num_nodes == 2


def test_disconnected_allowed_reports_components(tmp_path):
    g = load_topology("file:" + write(tmp_path, "0 1\n2 3\n3 4\n"), allow_disconnected=True)
    assert g.num_components == 2 and g.describe()["components"] == 2


def test_memory_plan_refuses_before_reading(tmp_path):
    p = write(tmp_path, "0 1\n" * 1000)
    with pytest.raises(ResourceError, match="could need up to .* over the .* available"):
        load_topology("file:" + p, memory=10_000)


def test_job_file_paths_are_relative_to_the_job(tmp_path):
    (tmp_path / "nets").mkdir()
    write(tmp_path / "nets", "0 1\n1 2\n2 0\n", "tri.edges")
    job = tmp_path / "job.toml"
    job.write_text('topology = "file:nets/tri.edges"\n[workload]\nkind = "uniform"\n')
    spec = load_job(str(job)).topology
    assert spec == f"file:{tmp_path}/nets/tri.edges"
    assert load_topology(spec).num_nodes == 3


def test_unknown_format_is_named(tmp_path):
    from mpinet.errors import SpecError

    with pytest.raises(SpecError, match="unknown network file format 'csv'"):
        load_topology(f"file:csv:{tmp_path}/x.edges")


# -- issue 32: files that cannot lie -------------------------------------------------------------
@pytest.mark.parametrize("big", [2**62, 2**63 - 1, 2**63, 2**64, 2**64 + 2, 10**19, 10**100])
def test_ids_of_any_width_are_refused_never_wrapped(tmp_path, big):
    # 0 - 1 - BIG - 0 is a triangle only if BIG were read as another id (2**64 + 2 was 2)
    text = f"0 1\n1 {big}\n{big} 0\n"
    with pytest.raises(
        FileError, match=r"line 2: node id '\d+'(\.\.\. \(\d+ bytes\))? is too large"
    ):
        load_topology("file:" + write(tmp_path, text))


def test_the_largest_id_is_kept_as_a_label(tmp_path):
    top = 2**62 - 1
    g = load_topology("file:" + write(tmp_path, f"0 1\n1 {top}\n{top} 0\n"))
    assert g.num_nodes == 3 and g.label(2) == str(top)


def test_bom_and_cr_only_lines_are_read_as_their_lines(tmp_path):
    text = "0 1\n1 2\n2 3\n3 0\n0 2\n"
    want = load_topology("file:" + write(tmp_path, text, "lf.edges"))
    for raw in (b"\xef\xbb\xbf" + text.encode(), text.replace("\n", "\r").encode(),
                b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode()):  # fmt: skip
        p = tmp_path / "x.edges"
        p.write_bytes(raw)
        g = load_topology(f"file:{p}")
        assert g.neighbors(np.arange(4)).tolist() == want.neighbors(np.arange(4)).tolist()
        assert g.file_info["sha256"] != want.file_info["sha256"]  # the bytes as on disk
    p.write_bytes(b"0 1\r1 2\r2 x\r")  # the line an editor shows
    with pytest.raises(FileError, match=r"x\.edges line 3: node id 'x'"):
        load_topology(f"file:{p}")


@pytest.mark.parametrize(
    "raw,match",
    [
        (b"0 1\n1 2\n2\x000\n", r"line 3: a NUL byte at byte 9: binary content"),
        (
            b"\x7fELF\x02\x01\x01\x00" + bytes(64),
            r"line 1: a NUL byte at byte 7: an ELF executable",
        ),
        ("0 1\n1 2\n".encode("utf-16"), r"line 1: a NUL byte at byte 3: UTF-16 text"),
    ],
)
def test_binary_content_is_refused_by_line_and_offset(tmp_path, raw, match):
    p = tmp_path / "bin.edges"
    p.write_bytes(raw)
    with pytest.raises(FileError, match=match):
        load_topology(f"file:{p}")


@pytest.mark.parametrize(
    "text",
    ["0 1\n1 " + "x" * (1 << 20) + "\n", "0 " + "9" * (1 << 20) + "\n", "0 1 a b " + "c" * 10**6],
)
def test_messages_quote_at_most_a_few_hundred_bytes(tmp_path, text):
    with pytest.raises(FileError) as e:
        load_topology("file:" + write(tmp_path, text))
    msg = str(e.value)
    assert len(msg) < 400 and msg.isprintable() and "bytes)" in msg, msg


def test_paths_that_are_not_regular_files_are_named(tmp_path, monkeypatch):
    import os

    from mpinet.netfile import source

    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    (tmp_path / "gone").symlink_to("nowhere")
    for path, says in [
        (tmp_path / "pipe", "is a FIFO \\(named pipe\\), not a regular file"),
        ("/dev/zero", "is a character device, not a regular file"),
        (tmp_path / "a", "is a loop of symbolic links"),
        (tmp_path / "gone", "does not exist"),
        (tmp_path, "is a directory, not a regular file"),
    ]:
        with pytest.raises(FileError, match=says):
            load_topology(f"file:{path}")
    p = write(tmp_path, "0 1\n")

    def denied(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(source.os, "open", denied)  # root reads any file: the error is made
    with pytest.raises(FileError, match=r"net\.edges' cannot be read: permission denied"):
        load_topology(f"file:{p}")


def test_files_stating_size_zero_are_read_bounded(monkeypatch):
    from mpinet.netfile import source

    with pytest.raises(FileError, match=r"/proc/self/status line 1: node id 'Name:'"):
        load_topology("file:/proc/self/status")  # its content, not an empty network
    monkeypatch.setattr(source, "UNSIZED_BYTES", 16)
    with pytest.raises(FileError, match=r"states size 0 but gives over 0 MiB \(a /proc"):
        load_topology("file:/proc/self/status")


def test_the_read_plan_counts_bytes_for_graphml_and_anynet(tmp_path):
    from mpinet.netfile import estimate_read_bytes

    one_line = (
        "<graphml><graph>"
        + "".join(f'<node id="{i}"/>' for i in range(20000))
        + "</graph></graphml>"
    )
    p = write(tmp_path, one_line, "one.graphml")
    size = len(one_line)
    need = estimate_read_bytes(size, 1, "graphml")
    assert need >= 10 * size  # a Python object per element: bytes, not lines, count
    with pytest.raises(ResourceError, match=r"reading .*one\.graphml .* as graphml could need"):
        load_topology(f"file:{p}", memory=need - 1)
    with pytest.raises(FileError, match="no links|empty"):  # the plan passes: the reader runs
        load_topology(f"file:{p}", memory=need)
    assert estimate_read_bytes(size, 1, "anynet") > 10 * size
    assert estimate_read_bytes(size, 1, "edgelist") < 2 * size + (8 << 20)  # one line, one link


def test_an_output_is_never_the_network_file_it_reads(tmp_path):
    from mpinet.errors import OutputError
    from mpinet.outputs import EXPORTS, check_target

    text = exported(from_spec("star:3"))  # an mpinet export: --force may replace a copy
    p = write(tmp_path, text, "x.edges")
    (tmp_path / "link.edges").symlink_to("x.edges")
    other = write(tmp_path, text, "other.edges")  # the same bytes, another file
    load_topology(f"file:{p}")
    for out in (p, tmp_path / "link.edges"):
        with pytest.raises(OutputError, match="is the network file .*this command reads"):
            check_target(str(out), EXPORTS["edgelist"], force=True)
    assert check_target(other, EXPORTS["edgelist"], force=True).path == other


class FakeComm:
    def __init__(self, every):
        self.every = every

    def Get_size(self):
        return len(self.every)

    def allgather(self, mine):
        return self.every


def test_ranks_holding_different_files_are_refused_naming_them(tmp_path):
    from mpinet.jobs.netcheck import same_network

    a = load_topology("file:" + write(tmp_path, "0 1\n1 2\n2 0\n", "x.edges"))
    b = load_topology("file:" + write(tmp_path, "0 1\n1 2\n2 3\n3 0\n", "y.edges"))
    b.file_info["path"] = a.file_info["path"]  # one name, two files
    mine = lambda t: [("file", t.file_info["path"], t.file_info["sha256"])]  # noqa: E731
    same_network(FakeComm([mine(a), mine(a), mine(a)]), a)
    renamed = [("file", "../A/x.edges", a.file_info["sha256"])]  # one file, another name: same
    same_network(FakeComm([mine(a), renamed]), a)
    with pytest.raises(FileError, match=r"x\.edges differs between ranks: ranks 0, 2 read sha256 "
                       + a.file_info["sha256"][:12] + "; rank 1 read sha256 "
                       + b.file_info["sha256"][:12]):  # fmt: skip
        same_network(FakeComm([mine(a), mine(b), mine(a)]), a)
    with pytest.raises(FileError, match=r"the ranks loaded different networks: rank 0 loaded "
                       r"file:.*x\.edges .*; rank 1 loaded star:4"):  # fmt: skip
        same_network(FakeComm([mine(a), [("spec", "star:4", None)]]), a)
