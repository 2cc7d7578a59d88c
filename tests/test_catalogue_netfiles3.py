"""Network files that cannot lie (issue 32): each refused, or read, in one short line.

Ids of any width (never wrapped into another network), the file's SHA-256 compared
across ranks (two working directories under ``mpiexec``), an output that would replace
the network file it reads, paths that are not regular files named as what they are,
binary content and megabyte tokens in messages of a few hundred bytes, a byte-order
mark and CR-only lines read, the degree limit the same in every command, and the read
plan counting bytes. Every case runs the real CLI (:func:`catalogue.check`).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest
from catalogue import Case, Given, described, param, run_and_check, section

TRI = "0 1\n1 2\n2 0\n"
SQUARE = "0 1\n1 2\n2 3\n3 0\n"
GML = (
    '<?xml version="1.0"?>\n<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n'
    '<key id="i" for="edge" attr.name="port_index" attr.type="int"/>\n'
    '<graph edgedefault="directed">\n<node id="a"/><node id="b"/>\n'
    '<edge source="a" target="b"><data key="i">{i}</data></edge>\n'
    '<edge source="b" target="a"><data key="i">0</data></edge>\n</graph>\n</graphml>\n'
)
RING_GML = (
    '<?xml version="1.0"?>\n<graphml><graph edgedefault="undirected">\n'
    + "".join(f'<node id="{i}"/>\n' for i in range(4))
    + "".join(f'<edge source="{i}" target="{(i + 1) % 4}"/>\n' for i in range(4))
    + "</graph></graphml>\n"
)
RING_ANYNET = "".join(f"router {i} router {(i + 1) % 4}\n" for i in range(4))
#: a star of 65 leaves: degree 65, one over the limit of the port masks
STAR65 = Given("".join(f"0 {i}\n" for i in range(1, 66)), "a star: node 0 with 65 links")
STAR64 = Given("".join(f"0 {i}\n" for i in range(1, 65)), "a star: node 0 with 64 links")
NAMED_STAR = (
    '<graphml><key id="p" for="edge" attr.name="port"/><graph edgedefault="directed">\n'
    + "".join(f'<node id="{i}"/>' for i in range(66))
    + "\n"
    + "".join(
        f'<edge source="0" target="{k}"><data key="p">q{k}</data></edge>\n'
        f'<edge source="{k}" target="0"><data key="p">up</data></edge>\n'
        for k in range(1, 66)
    )
    + "</graph></graphml>\n"
)
DEGREE = r"net\.edges: node 0 has 65 ports, over the limit of 64 \(routing tables keep"
LONG = r"^.{0,400}$"  # a message of at most a few hundred characters


def _one_line_graphml(n: int) -> str:
    nodes = "".join(f'<node id="{i}"/>' for i in range(n))
    edges = "".join(f'<edge source="{i}" target="{i + 1}"/>' for i in range(n - 1))
    head = '<?xml version="1.0"?><graphml><graph edgedefault="undirected">'
    return f"{head}{nodes}{edges}</graph></graphml>"


#: 5 MB of GraphML on one line: its lines say nothing, its bytes about 79 MB of reading
ONE_LINE = Given(_one_line_graphml(100_000), "100,000 nodes and edges on one line (5 MB)")


@described("-> a FIFO outside the directory that nobody writes")
def fifo(path: Path, traces) -> None:
    target = Path(tempfile.mkdtemp(prefix="mpinet-fifo-")) / "net.fifo"
    os.mkfifo(target)
    path.symlink_to(target)


@described("-> itself, through `loop2.edges`")
def loop(path: Path, traces) -> None:
    (path.parent / "loop2.edges").symlink_to(path.name)
    path.symlink_to("loop2.edges")


@described("-> `gone.edges`, which does not exist")
def dangling(path: Path, traces) -> None:
    path.symlink_to("gone.edges")


@described("a directory", slash=True)
def folder(path: Path, traces) -> None:
    path.mkdir()
    (path / "0.edges").write_text(TRI)


@described("a copy of the Python interpreter (ELF)")
def elf(path: Path, traces) -> None:
    path.write_bytes(Path(sys.executable).resolve().read_bytes()[:65536])


@described("-> `x.edges`")
def link_to_x(path: Path, traces) -> None:
    path.symlink_to("x.edges")


@described("a hard link of `x.edges`")
def hard_x(path: Path, traces) -> None:
    os.link(path.parent / "x.edges", path)


def two_dirs(a: str, b: str):
    """``A/x.edges`` and ``B/x.edges``: one name, two files."""

    @described(f"`A/x.edges`: `{a.strip()}`, `B/x.edges`: `{b.strip()}`".replace("\n", " "))
    def make(path: Path, traces) -> None:
        for sub, text in (("A", a), ("B", b)):
            (path.parent / sub).mkdir()
            (path.parent / sub / "x.edges").write_text(text)
        path.write_text("the directories A and B\n")

    return make


C = Case
CASES: list[Case] = [
    *section(
        "Network files: ids of any width",
        C(
            "nf3-ids-2e64-plus-2",
            "info file:net.edges",
            r"net\.edges line 2: node id '18446744073709551618' is too large \(ids must be below "
            r"2\*\*62\)",
            files={"net.edges": "0 1\n1 18446744073709551618\n18446744073709551618 0\n"},
        ),
        C(
            "nf3-ids-2e63",
            "run --topology file:net.edges --quiet",
            r"net\.edges line 1: node id '9223372036854775808' is too large",
            files={"net.edges": "0 9223372036854775808\n9223372036854775808 1\n1 0\n"},
        ),
        C(
            "nf3-ids-100-digits",
            "info file:net.edges",
            r"net\.edges line 1: node id '1{60}'\.\.\. \(100 bytes\) is too large",
            files={"net.edges": Given("0 " + "1" * 100 + "\n", "`0` and an id of 100 digits")},
        ),
        C(
            "nf3-graphml-port-index-2e70",
            "info file:net.graphml",
            r"net\.graphml line 6: edge 1: port_index '1180591620717411303424' is over 63 \(at "
            r"most 64 ports",
            files={"net.graphml": GML.format(i=2**70)},
        ),
        C(
            "nf3-graphml-port-index-superscript",
            "info file:net.graphml",
            r"net\.graphml line 6: edge 1: port_index '²' is not a non-negative integer",
            files={"net.graphml": GML.format(i="²")},
        ),
        C(
            "nf3-anynet-latency-5000-digits",
            "info file:net.anynet",
            r"net\.anynet line 1: latency '9{60}'\.\.\. \(5,000 bytes\) is too large",
            files={
                "net.anynet": Given(
                    "router 0 router 1 " + "9" * 5000 + "\nrouter 1 router 0\n",
                    "a link of latency 99...9 (5,000 digits)",
                )
            },
        ),
        C(
            "nf3-anynet-id-30-digits",
            "info file:net.anynet",
            r"net\.anynet line 1: router id 1000000000000000000000000000000 is too large",
            files={"net.anynet": "router 0 router " + "1" + "0" * 30 + "\n"},
        ),
    ),
    *section(
        "Network files: one file on every rank",
        C(
            "nf3-ranks-differ-info",
            "info file:x.edges",
            r"network file x\.edges differs between ranks: rank 0 read sha256 [0-9a-f]{12}; rank 1 "
            r"read sha256 [0-9a-f]{12} \(one name, different files",
            files={"dirs.txt": two_dirs(SQUARE, SQUARE + "0 2\n")},
            ranks=2,
            wdirs=("A", "B"),
        ),
        C(
            "nf3-ranks-differ-run",
            "run --topology file:x.edges --quiet",
            r"network file x\.edges differs between ranks: rank 0 read sha256 [0-9a-f]{12}; rank 1",
            files={"dirs.txt": two_dirs(SQUARE, "0 1\n1 2\n2 3\n3 0\n0 4\n4 2\n")},
            ranks=2,
            wdirs=("A", "B"),
        ),
    ),
    *section(
        "Network files: an output never replaces its input",
        C(
            "nf3-export-onto-itself",
            "export file:x.edges --format edgelist --out x.edges --force",
            r"edge list path \S*x\.edges is the network file this command reads; an output never "
            r"replaces its input",
            files={"x.edges": TRI},
        ),
        C(
            "nf3-export-onto-a-link-to-it",
            "export file:x.edges --format graphml --out y.graphml --force",
            r"GraphML file path \S*y\.graphml is the network file \(\S*x\.edges, by another name\)",
            files={"x.edges": TRI, "y.graphml": link_to_x},
        ),
        C(
            "nf3-export-onto-a-hard-link",
            "export file:x.edges --format edgelist --out y.edges --force",
            r"edge list path \S*y\.edges is the network file \(\S*x\.edges, by another name\)",
            files={"x.edges": TRI, "y.edges": hard_x},
        ),
        C(
            "nf3-run-trace-onto-the-network",
            "run --topology file:x.edges --out x.edges --force --quiet",
            r"trace path \S*x\.edges is the network file this command reads",
            files={"x.edges": TRI},
        ),
    ),
    *section(
        "Network files: paths that are not regular files",
        C(
            "nf3-fifo",
            "info file:net.edges",
            r"network file 'net\.edges' is a FIFO \(named pipe\), not a regular file",
            files={"net.edges": fifo},
        ),
        C(
            "nf3-dev-zero",
            "run --topology file:/dev/zero --quiet",
            r"network file '/dev/zero' is a character device, not a regular file",
        ),
        C(
            "nf3-symlink-loop",
            "info file:net.edges",
            r"network file 'net\.edges' is a loop of symbolic links",
            files={"net.edges": loop},
        ),
        C(
            "nf3-dangling-link",
            "info file:net.edges",
            r"network file 'net\.edges' does not exist",
            files={"net.edges": dangling},
        ),
        C(
            "nf3-directory",
            "info file:nets",
            r"network file 'nets' is a directory, not a regular file \(a directory of files is "
            r"not a network\)",
            files={"nets": folder},
        ),
        C(
            "nf3-proc-file",
            "info file:/proc/self/status",
            r"/proc/self/status line 1: node id 'Name:' is not a non-negative integer",
        ),
    ),
    *section(
        "Network files: binary content and long tokens, in short lines",
        C(
            "nf3-elf",
            "info file:net.edges",
            r"net\.edges line 1: a NUL byte at byte \d+: an ELF executable, not a network file",
            files={"net.edges": elf},
        ),
        C(
            "nf3-nul-in-text",
            "info file:net.edges",
            r"net\.edges line 3: a NUL byte at byte 9: binary content, not a network file",
            files={"net.edges": Given(b"0 1\n1 2\n2\x000\n", "`0 1`, `1 2`, `2` NUL `0`")},
        ),
        C(
            "nf3-hdf5",
            "info file:t.h5",
            r"t\.h5 line \d+: a NUL byte at byte \d+: an HDF5 file \(a trace\?\)",
            files={"t.h5": Given(b"\x89HDF\r\n\x1a\n" + bytes(4096), "an HDF5 signature")},
        ),
        C(
            "nf3-utf16",
            "info file:net.edges",
            r"net\.edges line 1: a NUL byte at byte 3: UTF-16 text \(save it as UTF-8\)",
            files={"net.edges": Given(TRI.encode("utf-16"), "a triangle in UTF-16")},
        ),
        C(
            "nf3-megabyte-token",
            "info file:net.edges",
            LONG,
            files={"net.edges": Given("0 1\n1 " + "x" * (1 << 20) + "\n", "a 1 MiB token")},
        ),
        C(
            "nf3-graphml-megabyte-id",
            "info file:net.graphml",
            LONG,
            files={
                "net.graphml": Given(
                    '<graphml><graph><node id="'
                    + "n" * (1 << 20)
                    + '"/><node id="'
                    + "n" * (1 << 20)
                    + '"/></graph></graphml>',
                    "a 1 MiB node id declared twice",
                )
            },
        ),
        C(
            "nf3-anynet-megabyte-token",
            "info file:net.anynet",
            LONG,
            files={"net.anynet": Given("router 0 " + "r" * (1 << 20) + " 1\n", "a 1 MiB token")},
        ),
    ),
    *section(
        "Network files: byte-order marks, CR-only lines, anynet words",
        C(
            "nf3-bom-edges",
            "info file:net.edges",
            None,
            code=0,
            files={"net.edges": Given(b"\xef\xbb\xbf" + SQUARE.encode(), "BOM, then a 4-ring")},
            stdout=r"^nodes\s+4$",
        ),
        C(
            "nf3-cr-only-edges",
            "info file:net.edges",
            None,
            code=0,
            files={"net.edges": Given(SQUARE.replace("\n", "\r").encode(), "a 4-ring, CR-only")},
            stdout=r"^nodes\s+4$",
        ),
        C(
            "nf3-bom-cr-graphml",
            "info file:net.graphml",
            None,
            code=0,
            files={
                "net.graphml": Given(
                    b"\xef\xbb\xbf" + RING_GML.replace("\n", "\r").encode(), "BOM, CR-only 4-ring"
                )
            },
            stdout=r"^diameter\s+2$",
        ),
        C(
            "nf3-cr-only-anynet",
            "info file:net.anynet",
            None,
            code=0,
            files={"net.anynet": Given(RING_ANYNET.replace("\n", "\r").encode(), "CR-only ring")},
            stdout=r"^nodes\s+4$",
        ),
        C(
            "nf3-anynet-switch",
            "info file:net.anynet",
            r"net\.anynet line 1: unknown token 'switch' \(a line starts with router ID or node "
            r"ID\): BookSim's anynet names a switch `router`",
            files={"net.anynet": "switch 0 switch 1\nswitch 1 switch 0\n"},
        ),
    ),
    *section(
        "Network files: one degree limit in every command",
        C("nf3-degree-65-info", "info file:net.edges", DEGREE, files={"net.edges": STAR65}),
        C(
            "nf3-degree-65-routes",
            "routes file:net.edges --router shortest --pairs 1:2",
            DEGREE,
            files={"net.edges": STAR65},
        ),
        C(
            "nf3-degree-64-run",
            "run --topology file:net.edges --packets 1",
            None,
            code=0,
            files={"net.edges": STAR64},
            stdout=r"delivered",
        ),
        C(
            "nf3-graphml-66-port-names",
            "info file:net.graphml",
            r"net\.graphml line \d+: 66 port names, over the limit of 64 ports",
            files={"net.graphml": Given(NAMED_STAR, "a star of 65 leaves, 66 port names")},
        ),
    ),
    *section(
        "Network files: the read plan counts bytes",
        C(
            "nf3-plan-one-line-graphml",
            "info file:net.graphml",
            r"reading net\.graphml \([\d,]+ bytes\) as graphml could need up to [\d.]+ MiB on "
            r"this machine \(1 rank\(s\) each read it\), over the [\d.]+ MiB available",
            files={"net.graphml": ONE_LINE},
            env={"MPINET_MEMORY_LIMIT": "64M"},
        ),
        C(
            "nf3-plan-anynet",
            "info file:net.anynet",
            r"reading net\.anynet \([\d,]+ bytes\) as anynet could need up to",
            files={
                "net.anynet": Given(
                    "".join(f"router {i} router {i + 1}\n" for i in range(200_000)),
                    "a path of 200,000 links (5 MB)",
                )
            },
            env={"MPINET_MEMORY_LIMIT": "64M"},
        ),
    ),
]


def test_the_catalogue_is_complete():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)) and all(i.startswith("nf3-") for i in ids)
    assert len(ids) >= 25


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_bad_input(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
