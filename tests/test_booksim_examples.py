"""BookSim2's own example files (``src/examples``) as ``mpinet booksim`` takes them: each
runs, or is refused in one line naming the key it does not model (the network first).

The keys are written here, copied from BookSim2's files (in their order, comments left out),
not read from a BookSim2 checkout; ``scripts/booksim_examples.py`` runs the files themselves
and writes docs/booksim.md's table of them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpinet.engine.comm import SerialComm
from mpinet.jobs.booksim_config import ConfigError, read_config
from mpinet.jobs.booksim_map import to_job
from mpinet.jobs.booksim_run import prepare, run

ROOT = Path(__file__).resolve().parent.parent

MESH88_LAT = """topology = mesh;
k = 8;
n = 2;
routing_function = dor;
num_vcs     = 8;
vc_buf_size = 8;
wait_for_tail_credit = 1;
vc_allocator = islip;
sw_allocator = islip;
alloc_iters  = 1;
credit_delay   = 2;
routing_delay  = 0;
vc_alloc_delay = 1;
sw_alloc_delay = 1;
input_speedup     = 2;
output_speedup    = 1;
internal_speedup  = 1.0;
traffic = transpose;
packet_size = 20;
sim_type = latency;
injection_rate = 0.005;
"""
TORUS88 = """topology = torus;
k = 8;
n = 2;
routing_function = dim_order;
num_vcs = 2;
traffic = uniform;
injection_rate = 0.15;
"""
#: the other examples' keys up to their topology line, and the keys after it that mpinet
#: refuses (c, watch_out, use_read_write ...): the topology is named, not those
FOREIGN = {
    "cmeshconfig": ("cmesh", "topology = cmesh;\nk = 4;\nn = 2;\nc = 4;\nxr = 2;\nyr = 2;\n"
                    "routing_function = dor_no_express;\ntraffic = bitcomp;\n"),
    "dragonflyconfig": ("dragonflynew", "vc_buf_size = 256;\nwait_for_tail_credit = 0;\n"
                        "internal_speedup  = 2.0;\nsample_period  = 10000;\n"
                        "routing_function = min;\nnum_vcs     = 2;\npriority = none;\n"
                        "injection_rate = 0.8;\npacket_size = 10;\n"
                        "injection_rate_uses_flits=1;\ntopology = dragonflynew;\nk  = 4;\n"
                        "n  = 1;\nwatch_out=-;\n"),
    "fattree_config": ("fattree", "hold_switch_for_packet=1;\nvc_buf_size = 16;\n"
                       "routing_function = nca;\nnum_vcs     = 4;\ninjection_rate = 0.6;\n"
                       "topology = fattree;\nk  = 4;\nn  = 3;\nwatch_out=-;\n"),
    "flatflyconfig": ("flatfly", "num_vcs     = 8;\nvc_buf_size = 4;\ntopology = flatfly;\n"
                      "c  = 4;\nk  = 4;\nn  = 2;\nx  = 4;\ny  = 4;\nxr = 2;\nyr = 2;\n"
                      "routing_function = ran_min;\nuse_read_write = 0;\n"),
    "singleconfig": ("fly", "topology = fly;\nk = 10;\nn = 1;\nnum_vcs = 8;\n"
                     "routing_function = dest_tag;\ninjection_rate = 1.0;\n"),
}  # fmt: skip
#: BookSim2's examples/anynet/anynet_file: routers with two or three terminals each
ANYNET_FILE = """router 0 router 1 15 router 2 node 0 node 1 node 2
router 1 router 2 node 3 node 4 5 node 5
router 2 node 6 node 7 node 8
"""
ANYNET = """topology = anynet;
routing_function = min;
network_file = anynet_file;
traffic = uniform;
use_read_write = 0;
sample_period = 10000;
injection_rate = 0.01;
vc_allocator = separable_input_first;
sw_allocator = separable_input_first;
"""


def _write(tmp: Path, name: str, text: str) -> str:
    (tmp / name).write_text(text)
    return name


@pytest.mark.parametrize("name", sorted(FOREIGN))
def test_a_foreign_network_is_refused_naming_its_topology(tmp_path, name):
    topo, text = FOREIGN[name]
    path = _write(tmp_path, name, text)
    line = 1 + text.splitlines().index(f"topology = {topo};")
    with pytest.raises(ConfigError) as err:
        to_job(read_config(str(tmp_path / path)))
    assert str(err.value) == (f"{tmp_path / path}:{line}: topology = {topo}: mpinet booksim "
                              "runs mesh, torus and anynet")  # fmt: skip


def test_the_cli_refuses_dragonfly_in_one_line_exit_2(tmp_path):
    _write(tmp_path, "dragonflyconfig", FOREIGN["dragonflyconfig"][1])
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "mpinet", "booksim", "dragonflyconfig"]
    p = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.splitlines() == ["mpinet: error: dragonflyconfig:11: topology = dragonflynew: "
                                     "mpinet booksim runs mesh, torus and anynet"]  # fmt: skip


def test_anynet_example_is_refused_naming_its_concentrated_file(tmp_path, monkeypatch):
    _write(tmp_path, "anynet_file", ANYNET_FILE)
    _write(tmp_path, "anynet_config", ANYNET)
    monkeypatch.chdir(tmp_path)  # BookSim opens network_file from the working directory
    with pytest.raises(Exception) as err:
        to_job(read_config("anynet_config"))
    msg = str(err.value)
    assert msg.startswith("anynet_config:3: network_file = anynet_file: router 0 has terminals "
                          "0, 1, 2: ")  # fmt: skip
    assert "one terminal per router" in msg


def test_mesh88_lat_maps_every_key_and_runs(tmp_path):
    path = str(tmp_path / _write(tmp_path, "mesh88_lat", MESH88_LAT))
    raw, measure, _ = to_job(read_config(path))
    model = raw["model"]
    assert raw["topology"] == "mesh:8,2" and raw["router"] == {"name": "dor"}
    assert raw["workload"] == {"kind": "booksim-transpose", "injection": "bernoulli",
                               "rate": 0.005, "rate_uses_flits": 0}  # fmt: skip
    assert (model["router"], model["flits"], model["vcs"], model["vc_buffer"]) == ("iq", 20, 8, 8)
    iq = model["iq"]
    keys = ("vc_allocator", "sw_allocator", "input_speedup", "credit_delay",
            "wait_for_tail_credit", "routing_delay")  # fmt: skip
    assert [iq[k] for k in keys] == ["islip", "islip", 2, 2, 1, 0]
    assert (measure.sim_type, measure.sample_period, measure.max_samples) == ("latency", 1000, 10)
    # a shorter measurement of the same network and traffic: converges and drains
    prep = prepare(path, ["sample_period=300", "warmup_periods=1", "max_samples=6"])
    res = run(prep, SerialComm())
    out, ov = res["outcome"], res["overall"]
    assert out.stable and ov is not None and ov["plat"].count > 0
    # transpose on the mesh: (x, y) -> (y, x), 2 |x - y| links, the diagonal to itself
    assert ov["hops"].lo >= 0 and ov["hops"].hi <= 14 and ov["hops"].hi % 2 == 0
    assert ov["plat"].lo >= ov["hops"].lo + 20 - 1  # a packet's 20 flits cross the links


def test_torus88_maps_to_the_dateline_torus(tmp_path):
    raw, _, _ = to_job(read_config(str(tmp_path / _write(tmp_path, "torus88", TORUS88))))
    assert raw["topology"] == "torus:8,2" and raw["model"]["vc_policy"] == "dateline-turn"
    assert raw["workload"]["kind"] == "booksim-uniform" and raw["model"]["flits"] == 1
    assert raw["model"]["router"] == "iq" and raw["model"]["vcs"] == 2
