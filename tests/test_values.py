"""The one validator (``mpinet.values``): numbers, sizes, environment, flags, strict JSON.

Unit tests of :class:`~mpinet.values.Range` and its helpers, and of the job schema's
use of them (``jobs.spec.RULES``, ``validate``, ``merge``, ``jobs.settings``) and of
``make_faults``; the CLI's behaviour is in ``tests/test_catalogue_values.py``.
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpinet import values
from mpinet.errors import JobError, MpinetError, TopologyError
from mpinet.jobs import spec
from mpinet.jobs.settings import check_settings
from mpinet.values import Range, check_int

PROB = values.prob_range(open_lo=True)
COUNT = Range(1, 1 << 20, integer=True)


# -- Range: the rules ---------------------------------------------------------------------------
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_a_number_passes_exactly_when_finite_and_in_range(x):
    rng = Range(-2.5, 7.0, open_hi=True)
    ok = math.isfinite(x) and -2.5 <= x < 7.0
    if ok:
        assert rng.check("x", x) == x
    else:
        with pytest.raises(MpinetError, match=r"^x must be in \[-2\.5, 7\), got "):
            rng.check("x", x)


@given(st.integers(min_value=-(2**70), max_value=2**70))
def test_an_integer_passes_exactly_within_its_bounds(n):
    if 1 <= n <= 1 << 20:
        assert COUNT.check("n", n) == n and type(COUNT.check("n", n)) is int
    else:
        with pytest.raises(MpinetError, match=rf"^n must be in \[1, 1,048,576\], got {n}$"):
            COUNT.check("n", n)


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
def test_parse_agrees_with_check(x):
    """A number written as text (flags, environment) is judged like the number itself."""
    rng = Range(0, 1000, open_lo=True)
    try:
        want = rng.check("v", x)
    except MpinetError:
        with pytest.raises(MpinetError, match=r"^v must be in \(0, 1,000\], got "):
            rng.parse("v", repr(x))
    else:
        assert rng.parse("v", repr(x)) == want


@pytest.mark.parametrize(
    "value", [True, False, np.bool_(True), "8", 8.0, 8.5, None, [8], {"a": 8}, b"8"]
)
def test_integers_refuse_other_types(value):
    with pytest.raises(MpinetError, match=r"must be an integer in \[1, 1,048,576\], got "):
        COUNT.check("workload.packets", value)


def test_integers_accept_numpy_and_whole_floats_only_when_asked():
    assert COUNT.check("n", np.int64(5)) == 5
    assert COUNT.check("n", 5.0, whole=True) == 5
    assert COUNT.check("n", "17", text=True) == 17
    with pytest.raises(MpinetError, match="got 5.5"):
        COUNT.check("n", 5.5, whole=True)
    with pytest.raises(MpinetError, match=r"must be in \[1, 1,048,576\], got inf"):
        COUNT.check("n", math.inf, whole=True)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, np.float32("nan"), 1e400])
def test_nan_and_infinities_are_refused_even_without_bounds(bad):
    with pytest.raises(MpinetError, match=r"^x must be finite, got "):
        Range().check("x", bad)


def test_messages_name_the_value_the_range_and_what_it_is():
    with pytest.raises(JobError) as e:
        PROB.check("workload.rate", math.nan, error=JobError)
    assert str(e.value) == "workload.rate must be in (0, 1] (a probability), got nan"
    with pytest.raises(MpinetError) as e:
        PROB.check("workload.rate", "x")
    assert str(e.value) == "workload.rate must be a probability in (0, 1], got 'x'"
    t = values.TIMEOUT
    with pytest.raises(MpinetError) as e:
        t.parse("--timeout", "soon")
    assert str(e.value) == "--timeout must be a number of seconds in [0.1, 604,800], got 'soon'"
    with pytest.raises(MpinetError) as e:
        t.parse("--timeout", " 1e-9 ")
    assert str(e.value) == "--timeout must be in [0.1, 604,800] seconds, got 1e-9"
    assert Range(0, None, integer=True).text() == ">= 0"
    assert Range(None, 5, open_hi=True).text() == "< 5"
    assert Range(0.5, 2, open_lo=True).text() == "in (0.5, 2]"


def test_the_error_class_is_the_callers():
    with pytest.raises(TopologyError, match=r"^n must be in \[1, 1,048,576\], got 0$"):
        COUNT.check("n", 0, error=TopologyError)
    with pytest.raises(JobError, match=r"^n must be an integer in \[0, 5\], got 'x'$"):
        values.integer("n", "x", 0, 5, error=JobError)
    assert values.finite("f", 2, 0, 3) == 2.0 and isinstance(values.finite("f", 2, 0, 3), float)
    assert values.probability("p", 1) == 1.0
    with pytest.raises(MpinetError, match=r"^p must be in \[0, 1\) \(a probability\), got 1$"):
        values.probability("p", 1, open_hi=True)


def test_check_int_is_the_same_validator():
    assert check_int("N in scc:N", "7", 3, 20) == 7 and check_int("N", 4.0, 3) == 4
    with pytest.raises(TopologyError, match=r"^N in scc:N must be in \[3, 20\], got inf$"):
        check_int("N in scc:N", math.inf, 3, 20)  # used to escape as an OverflowError
    with pytest.raises(TopologyError, match=r"must be an integer >= 3, got 'x'"):
        check_int("N", "x", 3)


# -- sizes and the environment ------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, size",
    [("512M", 512 << 20), ("2G", 2 << 30), ("1.5GiB", 3 << 29), ("1000000", 10**6),
     ("1e9", 10**9), (" 64 kB ", 64 << 10), ("1P", 1 << 50)],
)  # fmt: skip
def test_sizes(text, size):
    assert values.parse_size("S", text) == size


@pytest.mark.parametrize("text", ["lots", "1.5.5", "1e400", "-1G", "nan", "", "2X", "0x10"])
def test_bad_sizes(text):
    with pytest.raises(MpinetError, match=r"^S must be a size in bytes from 1 to "):
        values.parse_size("S", text)


@pytest.mark.parametrize(
    "var, text",
    [
        ("MPINET_TIMEOUT", "1e-9"), ("MPINET_TIMEOUT", "nan"), ("MPINET_TIMEOUT", "inf"),
        ("MPINET_TIMEOUT", "1e400"), ("MPINET_TIMEOUT", "0"), ("MPINET_TIMEOUT", "604801"),
        ("MPINET_MEMORY_LIMIT", "100"), ("MPINET_MEMORY_LIMIT", "2P"),
        ("MPINET_TRACE_CONSOLIDATE_MIB", "lots"), ("MPINET_TRACE_CONSOLIDATE_MIB", "-1"),
        ("MPINET_PROGRESS_DELAY", "inf"), ("MPINET_TEST_FAIL_RANK", "x"),
        ("MPINET_TEST_WRITE_DELAY", "nan"),
    ],
)  # fmt: skip
def test_environment_refused_in_one_line_naming_the_variable(var, text):
    with pytest.raises(MpinetError) as e:
        values.check_environment({var: text})
    msg = str(e.value)
    assert msg.startswith(f"{var} must be ") and "\n" not in msg and "got" in msg


def test_environment_values_and_defaults():
    env = {"MPINET_TIMEOUT": "30", "MPINET_MEMORY_LIMIT": "2G", "MPINET_PROGRESS_DELAY": " "}
    values.check_environment(env)
    assert values.env_number("MPINET_TIMEOUT", 900.0, env) == 30.0
    assert values.env_number("MPINET_MEMORY_LIMIT", None, env) == 2 << 30
    assert values.env_number("MPINET_PROGRESS_DELAY", 2.0, env) == 2.0  # empty: unset
    assert values.env_number("MPINET_TRACE_CONSOLIDATE_MIB", 64.0, {}) == 64.0
    with pytest.raises(KeyError, match="MPINET_NOT_A_VARIABLE"):  # every variable read is listed
        values.env_number("MPINET_NOT_A_VARIABLE", 0, {})


def test_every_variable_mpinet_reads_is_in_the_table():
    """A grep of the package: no environment variable is read around the validator."""
    import pathlib
    import re

    root = pathlib.Path(values.__file__).parent
    read = set()
    for path in root.rglob("*.py"):
        read |= set(re.findall(r"\"(MPINET_[A-Z_]+)\"", path.read_text(encoding="utf-8")))
    assert read - set(values.ENV) == set(), "read but not validated"
    raw = [
        str(p)
        for p in root.rglob("*.py")
        if re.search(r"environ(?:\.get)?\(?\[?\"MPINET_", p.read_text(encoding="utf-8"))
    ]
    assert raw == [], raw


# -- argparse -----------------------------------------------------------------------------------
def test_argparse_types_name_the_key_and_the_range():
    p = argparse.ArgumentParser(exit_on_error=False)
    p.add_argument("--rate", type=spec.key_arg("workload.rate"))
    p.add_argument("--timeout", type=values.arg(values.TIMEOUT))
    assert p.parse_args(["--rate", "0.25"]).rate == 0.25
    for argv, text in [
        (["--rate", "nan"], "workload.rate must be in (0, 1] (a probability), got nan"),
        (["--rate", "x"], "workload.rate must be a probability in (0, 1], got 'x'"),
        (["--timeout", "inf"], "must be in [0.1, 604,800] seconds, got inf"),
    ]:
        with pytest.raises(argparse.ArgumentError) as e:
            p.parse_args(argv)
        assert str(e.value).endswith(text) and argv[0] in str(e.value)


# -- strict JSON --------------------------------------------------------------------------------
def test_json_text_is_strict():
    x = {"a": math.nan, 1: [np.float64(2.5), (np.int64(3), np.float32("inf"))], "b": "s",
         "c": np.arange(3), "d": -math.inf, "e": np.array([1.0, np.nan])}  # fmt: skip
    text = values.json_text(x)
    got = json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c}"))
    assert got == {"a": None, "1": [2.5, [3, None]], "b": "s", "c": [0, 1, 2], "d": None,
                   "e": [1.0, None]}  # fmt: skip
    with pytest.raises(TypeError, match="type object is not JSON serializable"):  # loudly
        values.json_text({"x": object()})


@given(st.recursive(st.floats() | st.integers() | st.text(max_size=3),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c,
                                                                         max_size=3)))  # fmt: skip
def test_json_text_never_prints_nan(obj):
    json.loads(values.json_text(obj), parse_constant=lambda c: pytest.fail(f"bare {c}"))


# -- the job schema -----------------------------------------------------------------------------
def job(**sections):
    return spec.validate({"topology": "star:4", **sections}, "job.toml")


@pytest.mark.parametrize(
    "raw, text",
    [
        (
            {"workload": {"locality": math.nan}},
            "workload.locality must be in [0, 1] (a probability), got nan",
        ),
        ({"workload": {"locality": [0.5, math.inf]}}, "workload.locality[1] must be in [0, 1]"),
        ({"workload": {"locality": []}}, "workload.locality must be a probability or a list"),
        (
            {"workload": {"locality": "x"}},
            "workload.locality must be a probability in [0, 1] or a list",
        ),
        (
            {"workload": {"rate": math.inf}},
            "workload.rate must be in (0, 1] (a probability), got inf",
        ),
        (
            {"workload": {"packets": "many"}},
            "workload.packets must be an integer in [1, 1,048,576], got 'many'",
        ),
        ({"workload": {"packets": 8.0}}, "workload.packets must be an integer"),
        ({"seed": -1}, "seed must be in [0, 9,223,372,036,854,775,807], got -1"),
        ({"max_steps": 2**31}, "max_steps must be in [1, 2,147,483,646], got 2147483648"),
        (
            {"model": {"capacity": {"star": 0}}},
            "model.capacity of port class 'star' must be in [1, 1,048,576], got 0",
        ),
        (
            {"model": {"capacity": {"star": math.nan}}},
            "model.capacity of port class 'star' must be in",
        ),
        ({"model": {"capacity": 2}}, "model.capacity must be a table of port class"),
        (
            {"faults": {"random_links": "x"}},
            "faults.random_links must be a probability in [0, 1), got 'x'",
        ),
        (
            {"faults": {"random_nodes": 1.0}},
            "faults.random_nodes must be in [0, 1) (a probability), got 1.0",
        ),
        ({"faults": {"nodes": 5}}, "faults.nodes must be a list of node labels"),
        ({"faults": {"nodes": [1.5]}}, "faults.nodes[0] must be a node label"),
        ({"faults": {"links": [[1]]}}, "faults.links takes pairs of node labels"),
        ({"faults": {"links": [["1234", True]]}}, "must be a node label"),
        (
            {"faults": {"step": 1.5}},
            "faults.step must be an integer in [0, 2,147,483,646], got 1.5",
        ),
        ({"workload": 5}, "[workload] must be a table or a kind (a string), got 5"),
    ],
)
def test_job_values_refused_with_the_key(raw, text):
    with pytest.raises(JobError) as e:
        job(**raw)
    assert str(e.value).startswith("job.toml: ") and text in str(e.value), str(e.value)


def test_rules_cover_every_numeric_key_and_bounds_follow():
    for sec, keys in spec.SCHEMA.items():
        items = keys.items() if isinstance(keys, dict) else [(None, keys)]
        for k, (types, default, _) in items:
            key = sec if k is None else f"{sec}.{k}"
            if float in types or (int in types and str not in types):
                assert key in spec.RULES, key
            if key in spec.RULES and default is not None and key != "workload.locality":
                spec.RULES[key].check(key, default)  # every default is valid
    assert spec.BOUNDS["seed"] == (0, 2**63 - 1) and "model.capacity" not in spec.BOUNDS


def test_set_shorthand_merges_into_the_section():
    raw: dict = {}
    spec.merge(raw, ["workload", "packets"], 2)
    spec.merge(raw, ["workload"], "uniform")
    assert raw == {"workload": {"packets": 2, "kind": "uniform"}}
    spec.merge(raw, ["workload"], {"kind": "hotspot", "target": "4321"})
    assert raw["workload"] == {"packets": 2, "kind": "hotspot", "target": "4321"}
    raw = {"workload": "uniform", "model": "sdc"}  # a job file's shorthand
    spec.merge(raw, ["workload", "packets"], 3)
    spec.merge(raw, ["model"], "one-port")
    assert raw == {"workload": {"kind": "uniform", "packets": 3}, "model": {"kind": "one-port"}}
    j = spec.validate({"topology": "star:4", **raw})
    assert j.workload["packets"] == 3 and j.model["kind"] == "one-port"
    raw = {}
    spec.merge(raw, ["seed"], 5)
    spec.merge(raw, ["model", "capacity"], {"star": 2})
    spec.merge(raw, ["model", "capacity"], {"other": 3})  # a key's table is replaced
    assert raw == {"seed": 5, "model": {"capacity": {"other": 3}}}


# -- settings that cannot take effect -----------------------------------------------------------
@pytest.mark.parametrize(
    "raw, text",
    [
        ({"max_steps": 50, "workload": {"injection": "bernoulli", "rate": 0.1, "steps": 1000}},
         "workload.steps = 1,000 can never take effect: the run stops at max_steps = 50"),
        ({"workload": {"injection": "bernoulli", "rate": 0.1, "steps": 100_001}},
         "workload.steps = 100,001 can never take effect"),  # the default max_steps counts
        ({"max_steps": 100, "faults": {"nodes": ["4321"], "step": 101}},
         "faults.step = 101 can never take effect: the run stops at max_steps = 100"),
        ({"model": {"max_hops": 5}}, "model.max_hops = 5 has no effect"),
    ],
)  # fmt: skip
def test_settings_that_cannot_take_effect(raw, text):
    with pytest.raises(JobError, match=text.replace("(", r"\(").replace(")", r"\)")):
        check_settings(job(**raw))


def test_settings_at_the_limit_pass():
    check_settings(job(max_steps=1000, workload={"injection": "bernoulli", "rate": 0.1,
                                                 "steps": 1000}))  # fmt: skip
    check_settings(job(max_steps=100, faults={"nodes": ["4321"], "step": 100}))
    check_settings(job(model={"buffer": 2, "buffer_classes": "hops", "max_hops": 5}))


# -- make_faults --------------------------------------------------------------------------------
def test_make_faults_validates_its_inputs():
    from mpinet.topology import from_spec
    from mpinet.topology.faults import make_faults

    topo = from_spec("star:4")
    for kw, text in [
        ({"random_links": math.nan}, r"faults\.random_links must be in \[0, 1\) .*got nan"),
        ({"random_nodes": 1.0}, r"faults\.random_nodes must be in \[0, 1\)"),
        ({"seed": -5}, r"faults seed must be in \[0, "),
        ({"step": 1.5}, r"faults\.step must be an integer"),
        ({"nodes": 5}, r"faults\.nodes must be a list"),
        ({"nodes": [None]}, r"faults\.nodes: a node label is a string"),
        ({"links": [["1234"]]}, r"faults\.links takes pairs"),
    ]:
        with pytest.raises(TopologyError, match=text):
            make_faults(topo, **kw)
    f = make_faults(topo, nodes=[1234], step=3)  # an integer label is its digits
    assert f.nodes.tolist() == [topo.parse_label("1234")]
    assert f.describe(steps=2)["applied"] is False and f.describe(steps=3)["applied"] is True
    assert "applied" not in f.describe()


def test_label_rows_align_values_after_the_longest_label():
    from mpinet.values import label_rows

    rows = [("a", 1), ("longer label", "x y"), ("mid", None)]
    lines = label_rows(rows, indent="  ")
    assert lines == ["  a             1", "  longer label  x y", "  mid           None"]
    assert {line.index(str(v)) for line, (_, v) in zip(lines, rows, strict=True)} == {16}
    assert label_rows([]) == []


def test_channel_text_one_notation_for_vc_class_and_none():
    from mpinet.values import channel_text

    hop = {"node": "1234", "port": "T2", "next": "2134"}
    assert channel_text({**hop, "vc": 0, "class": 0}) == "1234 --T2--> 2134 (VC 0)"
    assert channel_text({**hop, "class": 3}) == "1234 --T2--> 2134 (class 3)"
    assert channel_text({**hop, "class": None}) == "1234 --T2--> 2134"
