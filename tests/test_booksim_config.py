"""BookSim2 configurations: the syntax, the key table, the mapping and the measurement loop.

BookSim's own runfiles and ``booksim_config.cpp`` are read from /work/booksim when that
clone is there (the tests that need them skip otherwise, saying so); tests/data/booksim/
mesh44.cfg is mpinet's own configuration, for CI.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from mpinet.engine.comm import SerialComm
from mpinet.jobs.booksim_config import ConfigError, parse, read_config, split_list, tokens
from mpinet.jobs.booksim_keys import KEYS, markdown
from mpinet.jobs.booksim_map import to_job
from mpinet.jobs.booksim_measure import Measure, single_sim
from mpinet.jobs.booksim_run import RecordSource

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "booksim"
BOOKSIM = Path("/work/booksim")
RUNFILES = sorted((BOOKSIM / "runfiles").glob("*")) if (BOOKSIM / "runfiles").is_dir() else []
NO_BOOKSIM = "BookSim2's clone is not at /work/booksim (it is built outside the repository)"


def cfg_of(tmp_path: Path, text: str, *overrides: str):
    p = tmp_path / "c.cfg"
    p.write_text(text)
    return read_config(str(p), list(overrides))


# -- the syntax ------------------------------------------------------------------------------


def test_tokens_take_the_longest_match_and_ties_to_the_earlier_rule():
    toks = tokens("a = 1; b=1.0;c=.5 ;d=1e3; e=-5; f=-; g={x,{y,z}}; // 1.5 ignored\nh=x/y.z", "t")
    kinds = [(t.kind, t.text) for t in toks if t.kind not in ("=", ";")]
    assert kinds == [("str", "a"), ("int", "1"), ("str", "b"), ("real", "1.0"), ("str", "c"),
                     ("real", ".5"), ("str", "d"), ("real", "1e3"), ("str", "e"), ("int", "-5"),
                     ("str", "f"), ("str", "-"), ("str", "g"), ("list", "{x,{y,z}}"),
                     ("str", "h"), ("str", "x/y.z")]  # fmt: skip
    assert toks[-1].line == 2


def test_assignments_are_typed_by_their_token():
    a = parse("k = 4;\ninjection_rate = 0.25;\ntopology = mesh;\ntraffic = {uniform};", "f")
    assert [(x.key, x.kind, x.value, x.where) for x in a] == [
        ("k", "int", 4, "f:1"), ("injection_rate", "real", 0.25, "f:2"),
        ("topology", "str", "mesh", "f:3"), ("traffic", "str", "{uniform}", "f:4")]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("k = 4\nn = 2;", r"^f:2: syntax error at 'n': expected ';' after the value of 'k'$"),
        ("k 4;", r"^f:1: syntax error at '4': expected '=' after 'k'$"),
        ("k = ;", r"^f:1: syntax error at ';': expected a value for 'k'$"),
        ("// only a comment\n", r"^f: has no assignment"),
        ("k = 4;\n\n= 3;", r"^f:3: syntax error at '=': expected a key name$"),
        ("k = 4", r"^f:1: syntax error at the end of the file: expected ';'"),
        ("k = 4; @", r"^f:1: syntax error at '@': expected a key name$"),
    ],
)
def test_syntax_errors_name_the_file_the_line_and_the_token(text, message):
    with pytest.raises(ConfigError, match=message):
        parse(text, "f")


def test_lists_split_as_booksim_splits_them():
    assert split_list("{a,b,{c,d}}") == ["a", "b", "{c,d}"]
    assert split_list("x") == ["x"]
    assert split_list("") == []


def test_overrides_apply_after_the_file_in_order(tmp_path):
    c = cfg_of(tmp_path, "k = 8;\nn = 2;\n", "k=4", "n=3", "k=5")
    g = c.given()
    assert (g["k"].value, g["n"].value) == (5, 3)
    assert g["k"].where == "override 'k=5'" and c.overrides == ["k=4", "n=3", "k=5"]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("k", r"override 'k' is not key=value"),
        ("k=", r"override 'k=': syntax error at ';': expected a value for 'k'"),
        ("k=4;n", r"override 'k=4;n': syntax error at ';': expected '=' after 'n'"),
        ("=4", r"override '=4': syntax error at '=': expected a key name"),
    ],
)
def test_bad_overrides_are_refused_naming_them(tmp_path, override, message):
    with pytest.raises(ConfigError, match=message):
        cfg_of(tmp_path, "k = 8;\n", override)


def test_file_faults_are_one_line(tmp_path):
    with pytest.raises(ConfigError, match=r"c\.cfg is binary"):
        (tmp_path / "c.cfg").write_bytes(b"k = 4;\0")
        read_config(str(tmp_path / "c.cfg"))
    with pytest.raises(ConfigError, match=r"is not UTF-8 text \(byte 0xff at offset 4\)"):
        (tmp_path / "c.cfg").write_bytes(b"k = \xff;")
        read_config(str(tmp_path / "c.cfg"))
    with pytest.raises(Exception, match=r"nothing\.cfg.* not exist"):
        read_config(str(tmp_path / "nothing.cfg"))


# -- the key table ---------------------------------------------------------------------------


def _booksim_defaults() -> dict[str, tuple[str, str]]:
    """Every key of booksim_config.cpp's constructor: slots and the default's text."""
    src = (BOOKSIM / "src" / "booksim_config.cpp").read_text()
    body = src[src.index("BookSimConfig::BookSimConfig") : src.index("PowerConfig::PowerConfig")]
    body = re.sub(r"#ifdef TRACK_\w+.*?#endif", "", body, flags=re.S)
    body = re.sub(r"//[^\n]*", "", body)  # commented-out keys
    out: dict[str, list] = {}
    for m in re.finditer(r'_(int|float)_map\["(\w+)"\]\s*=\s*([^;]+);', body):
        out.setdefault(m[2], ["", None])
        out[m[2]][0] += "i" if m[1] == "int" else "f"
        out[m[2]][1] = m[3].strip()
    for m in re.finditer(r'AddStrField\(\s*"(\w+)"\s*,\s*"([^"]*)"\s*\)', body):
        out.setdefault(m[1], ["", None])
        out[m[1]][0] += "s"
        if out[m[1]][1] is None:
            out[m[1]][1] = m[2]
    return {k: (v[0], v[1]) for k, v in out.items()}


@pytest.mark.skipif(not (BOOKSIM / "src" / "booksim_config.cpp").is_file(), reason=NO_BOOKSIM)
def test_the_table_has_every_booksim_key_with_its_slots_and_default():
    bs = _booksim_defaults()
    assert set(bs) == set(KEYS)
    for name, (slots, default) in bs.items():
        k = KEYS[name]
        assert k.slots == slots, name
        if isinstance(k.default, str):
            assert k.default == default, name
        else:
            assert float(k.default) == float(default), name


def test_the_docs_table_is_the_code_table():
    text = (ROOT / "docs" / "booksim.md").read_text()
    a, b = "<!-- BEGIN booksim_keys.markdown -->\n", "\n<!-- END booksim_keys.markdown -->"
    assert text[text.index(a) + len(a) : text.index(b)] == markdown()


def test_every_key_is_classified_with_a_reason():
    assert {k.what for k in KEYS.values()} == {"model", "diff", "iq", "refuse"}
    assert all(k.note for k in KEYS.values())


# -- the mapping -----------------------------------------------------------------------------


def test_own_config_maps_to_the_flit_job():
    raw, m, info = to_job(read_config(str(DATA / "mesh44.cfg"), ["router=ideal"]))
    assert raw["topology"] == "mesh:4,2" and raw["router"] == {"name": "dor"}
    assert raw["workload"] == {"kind": "booksim-uniform", "injection": "bernoulli",
                               "rate": 0.05, "rate_uses_flits": 0}  # fmt: skip
    assert raw["model"] == {"kind": "all-port", "switching": "wormhole", "flits": 1, "vcs": 2,
                            "vc_buffer": 4, "vc_policy": "any"}  # fmt: skip
    assert (m.warmup_periods, m.sample_period, m.max_samples) == (3, 200, 10)
    assert info["not_modeled_by_ideal_router"] == {"credit_delay": 2, "routing_delay": 0}


def test_torus_gets_booksims_dateline_classes_and_anynet_its_file(tmp_path):
    _, _, info = to_job(cfg_of(tmp_path, "topology = torus; routing_function = dim_order;",
                               "router=ideal", "k=4"))  # fmt: skip
    assert (info["topology"], info["vc_policy"]) == ("torus:4,2", "dateline-turn")
    text = "topology = anynet; routing_function = min; network_file = net.anynet; router = ideal;"
    raw, _, _ = to_job(cfg_of(tmp_path, text))
    assert raw["topology"] == f"file:anynet:{Path.cwd() / 'net.anynet'}"
    assert raw["router"] == {"name": "anynet-min"}


def test_anynet_files_need_one_terminal_per_router_of_its_id(tmp_path, monkeypatch):
    """mpinet reads router R as node R: BookSim's concentration would silently shrink."""
    monkeypatch.chdir(tmp_path)
    text = "topology = anynet; routing_function = min; network_file = n.anynet; router = ideal;"
    (tmp_path / "n.anynet").write_text("router 0 node 0 router 1\nrouter 1 node 1 router 0\n")
    assert to_job(cfg_of(tmp_path, text))[2]["topology"].endswith("n.anynet")
    where = r"c\.cfg:1: network_file = n\.anynet: router "
    for body, says in (("router 0 node 0 node 2 router 1\nrouter 1 node 1\n",
                        "0 has terminals 0, 2"),
                       ("router 0 node 1 router 1\nrouter 1 node 0\n", "0 has terminals 1"),
                       ("router 0 node 0 router 1\n", "1 has terminals none")):  # fmt: skip
        (tmp_path / "n.anynet").write_text(body)
        with pytest.raises(ConfigError, match=where + says):
            to_job(cfg_of(tmp_path, text))


MESH = "topology = mesh; routing_function = dor; router = ideal;\n"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("", r"c\.cfg:1: noq = 1: not modeled by mpinet's iq router \(a detail of BookSim's "
             r"input-queued router mpinet's iq model does not have\); remove it"),
        ("classes = 2;", r"c\.cfg:2: classes = 2: not modeled by mpinet booksim \(one traffic "
                         r"class\); remove it"),
        ("injecton_rate = 0.1;", r"c\.cfg:2: unknown key 'injecton_rate' \(did you mean "
                                 r"'injection_rate'\?\)"),
        ("k = 2.5;", r"c\.cfg:2: k takes an integer, got 2\.5"),
        ("topology = 5;", r"c\.cfg:2: topology takes a name, got 5"),
        ("injection_rate = {0.1,0.2};", r"one value per traffic class"),
        ("topology = fly;", r"topology = fly: mpinet booksim runs mesh, torus and anynet"),
        ("routing_function = romm;", r"routing_function = romm: mpinet booksim runs dor or "
                                     r"dim_order on mesh"),
        ("traffic = diagonal;", r"traffic = diagonal: mpinet has no such pattern yet"),
        ("sim_type = batch;", r"sim_type = batch: mpinet booksim runs latency or throughput"),
        ("seed = time;", r"seed = time: mpinet booksim takes a seed >= 0"),
        ("injection_rate = 2.0;", r"injection_rate = 2\.0: 2 packets per node per step must be "
                                  r"in \(0, 1\]"),
    ],
)  # fmt: skip
def test_refusals_name_the_key(tmp_path, extra, message):
    text = MESH.replace("router = ideal;", "noq = 1;") if not extra else MESH + extra
    with pytest.raises(ConfigError, match=message):
        to_job(cfg_of(tmp_path, text))


def test_defaults_of_refused_keys_and_integers_for_reals_are_accepted(tmp_path):
    _, _, info = to_job(cfg_of(tmp_path, MESH + "classes = 1; injection_rate = 1; k = 4;"))
    assert info["rate"] == 1.0


@pytest.mark.skipif(not RUNFILES, reason=NO_BOOKSIM)
@pytest.mark.parametrize("path", RUNFILES, ids=lambda p: p.name)
def test_booksims_runfiles_parse_and_map_or_refuse_by_name(path):
    """Every runfile's syntax reads; its keys are BookSim's (but two BookSim refuses too:
    ``limit`` and ``physical_subnetworks`` are in no map of booksim_config.cpp)."""
    cfg = read_config(str(path), ["router=ideal"])
    unknown = {a.key for a in cfg.assignments} - set(KEYS)
    assert unknown <= {"limit", "physical_subnetworks"}
    try:
        raw, _, _ = to_job(cfg)
    except ConfigError as exc:
        assert re.match(rf"{re.escape(str(path))}(:\d+)?: \w+ ", str(exc)), exc
        return
    assert path.name == "meshconfig" and raw["topology"] == "mesh:8,2"


# -- the measurement loop on known inputs ---------------------------------------------------


def steady(nodes: int, steps: int, latency: int, every: int = 1) -> RecordSource:
    """Every node generates a packet every ``every`` steps, delivered ``latency`` later."""
    gen = np.repeat(np.arange(0, steps, every), nodes)
    src = np.tile(np.arange(nodes), gen.size // nodes)
    dst = (src + 1) % nodes
    pk = np.stack([np.arange(gen.size), src, dst, gen, gen + latency, np.ones_like(gen), gen],
                  axis=1).astype(np.int64)  # fmt: skip
    rec = SimpleNamespace(packets=pk, steps=steps + latency)
    return RecordSource(rec, nodes, 1, steps, SerialComm())


def lines(out) -> list[str]:
    return [x for k, x in out.items if k == "line"]


def test_steady_traffic_warms_up_then_converges_after_three_calm_periods():
    m = Measure(warmup_periods=3, sample_period=100, max_samples=10)
    out = single_sim(steady(4, 1100, 5), m)
    # warm-up: periods 0-2 (cleared at 0 and 200), running from 300; three calm periods
    assert lines(out)[6] == "Warmed up ...Time used is 300 cycles"
    assert (out.reset, out.drain_time, out.stable) == (300, 600, True)
    st = [x for k, x in out.items if k == "stats"]
    assert [s["time"] for s in st] == [100, 200, 300, 400, 500, 600]
    assert [s["reset"] for s in st] == [0, 0, 200, 300, 300, 300]
    assert st[-1]["plat"].mean == 5.0 and st[-1]["plat"].count == 4 * 300 - 4 * 5
    assert st[-1]["rates"]["accepted"]["sum"] == 4 * 300
    assert out.stop == 600 + 5 and "Draining all recorded packets ..." in lines(out)


def test_latency_threshold_aborts_as_unstable_in_the_periods_and_in_the_drain():
    abort = "Average latency for class 0 exceeded 500 cycles. Aborting simulation."
    # nothing delivered: the changes are nan, which passes BookSim's tests (nan > x is false)
    # periods of 200: at 1000 the 4,000 packets in flight have ages 1..1000, mean 500.5
    out = single_sim(steady(4, 3000, 2000), Measure(sample_period=200))
    assert lines(out)[-3:] == [abort, "Too many sample periods needed to converge",
                               "Simulation unstable, ending ..."]  # fmt: skip
    assert (out.drain_time, out.stable) == (1000, False)
    # periods of 100: converged at 600 (mean age 300.5); the drain's test at 1600 aborts
    out = single_sim(steady(4, 3000, 2000), Measure(sample_period=100))
    assert lines(out)[-3:] == ["Draining all recorded packets ...", abort,
                               "Simulation unstable, ending ..."]  # fmt: skip
    assert (out.drain_time, out.stable, out.need_horizon) == (600, False, 1600)


def test_no_warmup_periods_waits_for_calm_and_max_samples_ends_the_warmup_unstable():
    calm = single_sim(steady(4, 1100, 5), Measure(warmup_periods=0, sample_period=100))
    assert "Warmed up ...Time used is 200 cycles" in lines(calm)  # period 0 changes by 100 %
    short = single_sim(steady(4, 1100, 5), Measure(warmup_periods=5, max_samples=4,
                                                   sample_period=100))  # fmt: skip
    assert "Too many sample periods needed to converge" in lines(short) and not short.stable


def test_throughput_mode_stops_traffic_at_the_drain_time():
    out = single_sim(steady(4, 1100, 5), Measure(sim_type="throughput", sample_period=100))
    assert out.stable and out.stop == out.drain_time == 600
    assert "Draining all recorded packets ..." not in lines(out)


def test_changes_are_relative_as_booksim_computes_them():
    out = single_sim(steady(2, 1100, 5, every=2), Measure(sample_period=100))
    ch = [float(x.split("=")[1]) for x in lines(out) if x.startswith("latency change")]
    assert ch[0] == 1.0 and all(c == 0.0 for c in ch[1:])
    assert not math.isnan(ch[-1])
