"""First-run honesty: the kernels' compilation is reported apart from engine time.

numba compiles a kernel at its first call unless its cache holds it; ``mpinet run`` counts
that apart (:class:`mpinet.engine.compile_clock.CompileClock`) and computes the rate
without it, and ``mpinet warmup`` fills the cache ahead of the first run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numba
import pytest

from mpinet.cli.run import format_result
from mpinet.engine.compile_clock import CompileClock, mark_engine_start

ROOT = Path(__file__).resolve().parent.parent
TIME = re.compile(
    r"^time +([\d.]+) s engine(?: \+ ([\d.]+) s compiling the kernels)?, ([\d.]+) s in all; "
    r"([\d.]+) M packet-hops/s per rank$",
    re.M,
)
RUN = ["run", "--topology", "star:4", "--router", "shortest", "--packets", "2", "--quiet"]


def _fresh_kernel():
    """A kernel no cache holds (defined here, uncached): its first call compiles it."""

    @numba.njit(cache=False)
    def twice_plus(a, b):
        return 2 * a + b

    return twice_plus


def test_the_clock_counts_a_compilation_once_and_only_the_first_call():
    f = _fresh_kernel()
    with CompileClock() as clock:
        assert f(3, 4) == 10
        first = clock.seconds
        assert f(5, 6) == 16  # compiled: no second event
    assert first > 0 and clock.seconds == first
    assert clock.kernels == [f"{__name__}._fresh_kernel.<locals>.twice_plus"]
    assert clock.in_engine == first  # no engine started: all of it


def test_compilation_before_the_engine_starts_is_not_engine_time():
    before, during = _fresh_kernel(), _fresh_kernel()
    with CompileClock() as clock:
        before(1, 2)
        mark_engine_start()
        during(1.5, 2.5)  # another kernel: compiled after the mark
    assert len(clock.spans) == 2
    start, end = clock.spans[1]
    assert clock.in_engine == pytest.approx(end - start)
    assert clock.in_engine < clock.seconds
    with CompileClock() as later:  # a clock no longer listening is not marked
        mark_engine_start()
    assert later.mark is not None and clock.mark is not None and clock.mark < later.mark


def _result(engine: float, compiled: float, hops: int) -> dict:
    """A run's result as execute() gives it, its times set."""
    stats = {
        "steps": 3, "completion_step": 3, "injected": 4, "delivered": 4, "transmissions": hops,
        "latency": {"count": 0}, "hops": {}, "link_load": {}, "cross_rank_fraction": 0.0,
        "checks": [],
    }  # fmt: skip
    job = {"workload": {"kind": "uniform", "injection": "once", "packets": 1},
           "router": {"name": "shortest"}, "model": {"kind": "all-port", "order": "fifo"},
           "trace": {"level": "none"}}  # fmt: skip
    return {"stats": stats, "job": job, "spec": "star:3", "nodes": 6, "ranks": 2,
            "engine_seconds": engine, "compile_seconds": compiled, "seconds": engine + 1,
            "trace": None}  # fmt: skip


@pytest.mark.parametrize(
    "engine, compiled, hops, shown",
    [
        (10.0, 9.5, 20_000_000, "0.50 s engine + 9.50 s compiling the kernels, 11.00 s in "
         "all; 20.00 M packet-hops/s per rank"),
        (30.0, 29.9, 884, "0.10 s engine + 29.90 s compiling the kernels, 31.00 s in all; "
         "0.0044 M packet-hops/s per rank"),
        (2.0, 0.0, 3_000_000, "2.00 s engine, 3.00 s in all; 0.75 M packet-hops/s per rank"),
    ],
)  # fmt: skip
def test_the_time_row_names_compilation_apart(engine, compiled, hops, shown):
    """The rate is hops / (engine - compilation) / ranks."""
    out = format_result(_result(engine, compiled, hops))
    assert re.search(rf"^time +{re.escape(shown)}$", out, re.M), out


def _env(cache: Path) -> dict[str, str]:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    env.pop("MPINET_MEMORY_LIMIT", None)
    return env


def _mpinet(args: list[str], cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mpinet", *args], env=_env(cache), capture_output=True, text=True
    )


NOTICE = "[mpinet] first run: compiling the flit engine's kernels"  # mpinet.cli.compiling
PACKET = "[mpinet] first run: compiling the packet engine's kernels"
FLIT = ["run", "--topology", "star:4", "--set", "model.switching=wormhole", "--set",
        "model.flits=4", "--set", "model.vcs=2", "--set", "model.vc_buffer=4"]  # fmt: skip


@pytest.mark.slow
def test_a_fresh_cache_reports_compilation_apart_then_warmup_has_nothing_left(tmp_path):
    """One fresh numba cache, filled step by step (each cold compilation paid once):

    1. The notice follows the flit engine's own kernels: said on a cold cache, not on the
       next flit run (it once checked the packet engine's calendar, which a flit run never
       compiles, so a warm flit run could say it and a cold one stay silent).
    2. The calendar is still cold: the first packet run says so, its time row names the
       compilation and a rate above 0; the second compiles nothing and says nothing.
    3. The notice checks the path that runs: the calendar's kernels are cached now, the link
       queues' are not (it once checked a kernel the default path never compiles, so it said
       so on every run: README's statement, tests/test_docs.py).
    4. warmup finds the calendar path compiled, compiles another path, and a second
       warmup compiles nothing (``--only`` those two jobs: the whole warmup's compilation
       took 5 minutes of CI; every job's keys are checked in tests/test_cli.py).
    """
    cache = tmp_path / "numba-cache"
    said = []
    for _ in range(2):
        p = _mpinet(FLIT, cache)
        assert p.returncode == 0, p.stderr
        said.append(NOTICE in p.stderr)
    assert said == [True, False]
    talk = [a for a in RUN if a != "--quiet"]  # --quiet silences the notice too
    first = _mpinet(talk, cache)
    assert first.returncode == 0, first.stderr
    assert PACKET in first.stderr and NOTICE not in first.stderr
    engine, compiled, _, rate = TIME.search(first.stdout).groups()
    assert compiled is not None and float(compiled) > 0 and float(rate) > 0
    second = _mpinet(talk, cache)
    assert second.returncode == 0 and "first run" not in second.stderr
    assert TIME.search(second.stdout).group(2) is None  # nothing compiled
    code = "from mpinet.engine.kernel_cache import cache_is_warm as w; print(w(), w('links'))"
    probe = subprocess.run([sys.executable, "-c", code], env=_env(cache), capture_output=True,
                           text=True)  # fmt: skip
    assert probe.stdout.split() == ["True", "False"], probe.stderr
    only = ["--only", "departure calendar,link queues"]
    warm = _mpinet(["warmup", "--json", *only], cache)
    assert warm.returncode == 0, warm.stderr
    paths = json.loads(warm.stdout)["paths"]
    assert all(p["ok"] for p in paths)
    assert [p["path"] for p in paths] == ["packet engine, departure calendar",
                                          "packet engine, link queues"]  # fmt: skip
    assert paths[0]["kernels"] == 0  # the run compiled the departure calendar's kernels
    assert paths[1]["kernels"] > 0 and paths[1]["compile_seconds"] > 0
    again = json.loads(_mpinet(["warmup", "--json", *only], cache).stdout)
    assert sum(p["kernels"] for p in again["paths"]) == 0 and again["compile_seconds"] == 0
