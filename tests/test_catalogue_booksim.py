"""The BookSim configuration catalogue: ``mpinet booksim`` refusing in one line before any work.

Every case runs the real CLI on a configuration it writes and is checked by
:func:`catalogue.check`: exit code 2, one line from rank 0 naming the file and line (or the
override) and the fault, no traceback, nothing written, in an address space that any run
would exceed. docs/booksim.md ("Running BookSim configurations") has the rules.
"""

from __future__ import annotations

import pytest
from catalogue import BEFORE_WORK, Case, param, run_and_check, section

MESH = "topology = mesh;\nk = 4;\nn = 2;\nrouting_function = dim_order;\n"


def cfg(text: str | bytes) -> dict:
    return {"c.cfg": text}


def mkdir(path, traces) -> None:
    path.mkdir()


mkdir.text = "a directory"


def C(cid: str, cmd: str, match: str, **kw) -> Case:  # noqa: N802 (the catalogue's name)
    return Case(cid, cmd, match, cap=BEFORE_WORK, **kw)


CASES: list[Case] = [
    *section(
        "BookSim configurations: the file",
        C("bsc-missing", "booksim nothing.cfg router=ideal",
          r"BookSim configuration nothing\.cfg does not exist"),
        C("bsc-directory", "booksim d router=ideal",
          r"BookSim configuration d is a directory, not a file", files={"d": mkdir}),
        C("bsc-binary", "booksim c.cfg router=ideal", r"c\.cfg is binary, not a text file",
          files=cfg("k = 4;\0\0")),
        C("bsc-not-utf8", "booksim c.cfg router=ideal",
          r"c\.cfg is not UTF-8 text \(byte 0xff at offset 4\)", files=cfg(b"k = \xff;")),
    ),
    *section(
        "BookSim configurations: syntax",
        C("bsc-no-semicolon", "booksim c.cfg router=ideal",
          r"c\.cfg:5: syntax error at 'n': expected ';' after the value of 'k'",
          files=cfg("topology = mesh;\nrouting_function = dim_order;\n// k and n\n"
                    "k = 4\nn = 2;\n")),
        C("bsc-stray-character", "booksim c.cfg router=ideal",
          r"c\.cfg:5: syntax error at '@': expected a key name", files=cfg(MESH + "@\n")),
        C("bsc-only-comments", "booksim c.cfg router=ideal",
          r"c\.cfg: has no assignment: BookSim configurations are 'key = value;' lines",
          files=cfg("// nothing but a comment\n")),
        C("bsc-unknown-key", "booksim c.cfg router=ideal",
          r"c\.cfg:5: unknown key 'injecton_rate' \(did you mean 'injection_rate'\?\)",
          files=cfg(MESH + "injecton_rate = 0.1;\n")),
        C("bsc-real-for-integer", "booksim c.cfg router=ideal",
          r"c\.cfg:5: num_vcs takes an integer, got 2\.5", files=cfg(MESH + "num_vcs = 2.5;\n")),
        C("bsc-class-list", "booksim c.cfg router=ideal",
          r"c\.cfg:5: injection_rate = \{0\.1,0\.2\}: one value per traffic class",
          files=cfg(MESH + "injection_rate = {0.1,0.2};\n")),
    ),
    *section(
        "BookSim configurations: overrides",
        C("bsc-override-no-equals", "booksim c.cfg router=ideal k",
          r"override 'k' is not key=value \(BookSim's form, e.g\. k=4\)", files=cfg(MESH)),
        C("bsc-override-no-value", "booksim c.cfg router=ideal k=",
          r"override 'k=': syntax error at ';': expected a value for 'k'", files=cfg(MESH)),
        C("bsc-override-unknown", "booksim c.cfg router=ideal vcs=4",
          r"override 'vcs=4': unknown key 'vcs'", files=cfg(MESH)),
    ),
    *section(
        "BookSim configurations: keys refused by name",
        C("bsc-refused-key", "booksim c.cfg router=ideal",
          r"c\.cfg:5: use_read_write = 1: not modeled by mpinet booksim \(request-reply "
          r"traffic\); remove it", files=cfg(MESH + "use_read_write = 1;\n")),
        C("bsc-topology", "booksim c.cfg router=ideal topology=flatfly",
          r"override 'topology=flatfly': topology = flatfly: mpinet booksim runs mesh, torus "
          r"and anynet", files=cfg(MESH)),
        C("bsc-routing", "booksim c.cfg router=ideal routing_function=romm",
          r"routing_function = romm: mpinet booksim runs dor or dim_order on mesh",
          files=cfg(MESH)),
        C("bsc-seed-time", "booksim c.cfg router=ideal seed=time",
          r"override 'seed=time': seed = time: mpinet booksim takes a seed >= 0",
          files=cfg(MESH)),
        C("bsc-rate", "booksim c.cfg router=ideal injection_rate=1.5",
          r"injection_rate = 1\.5: 1\.5 packets per node per step must be in \(0, 1\]",
          files=cfg(MESH)),
        C("bsc-anynet-no-file", "booksim c.cfg router=ideal",
          r"c\.cfg: network_file = \"\" \(BookSim's default\): topology = anynet needs "
          r"network_file", files=cfg("topology = anynet;\nrouting_function = min;\n")),
        C("bsc-anynet-concentration", "booksim c.cfg router=ideal",
          r"c\.cfg:3: network_file = n\.anynet: router 0 has terminals 0, 1, 2: mpinet runs "
          r"anynet files with one terminal per router",
          files={"c.cfg": "topology = anynet;\nrouting_function = min;\nnetwork_file = n.anynet;\n",
                 "n.anynet": "router 0 node 0 node 1 node 2 router 1\nrouter 1 node 3\n"}),
    ),
]  # fmt: skip


def test_the_catalogue_is_complete():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)) and all(i.startswith("bsc-") for i in ids)


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_bad_input(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
