"""``mpinet booksim`` in one engine run prints what the two runs printed: the measurement
taken while the run goes, the traffic stopped mid-run where BookSim's stops
(:mod:`mpinet.jobs.booksim_live`), against the first run replayed and the second run with
the traffic stopped there (``booksim_run._two_runs``), on the same configurations."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from mpinet.cli.booksim import as_json, text_lines
from mpinet.engine.comm import SerialComm, resolve
from mpinet.jobs import booksim_run as br

ROOT = Path(__file__).resolve().parent.parent
MESH = str(ROOT / "tests" / "data" / "booksim" / "mesh44.cfg")
WORMS = ["sample_period=10", "max_samples=4", "warmup_periods=1", "packet_size=16",
         "injection_rate=0.02"]  # fmt: skip
#: (configuration overrides, what the case is for)
CASES = [
    (["injection_rate=0.3"], "latency, drained step by step"),
    (["injection_rate=0.05", "packet_size=4", "seed=7"], "light, 4 flits"),
    (WORMS, "worms outlasting the extra period (two runs took three)"),
    (["sim_type=throughput", "injection_rate=0.2"], "throughput: stopped at a period's end"),
    (["injection_rate=0.9", "latency_thres=100"], "past saturation: aborted, stopped at once"),
    (["injection_rate=0.25", "max_samples=2", "stopping_thres=0.0001"], "not converged"),
]


def ring(tmp: Path) -> str:
    """anynet's min on an 8-ring with one VC: wormhole packets close the ring's cycle."""
    (tmp / "ring.anynet").write_text(
        "".join(f"router {i} node {i} router {(i + 1) % 8} router {(i - 1) % 8}\n"
                for i in range(8)))  # fmt: skip
    (tmp / "ring.cfg").write_text(
        "topology = anynet; routing_function = min; network_file = ring.anynet;\n"
        "num_vcs = 1; vc_buf_size = 2; packet_size = 8; injection_rate = 0.9;\n"
        "injection_rate_uses_flits = 1; sample_period = 100;\n")  # fmt: skip
    return str(tmp / "ring.cfg")


def printed(prep: br.Prepared, res: dict) -> tuple[list[str], str]:
    """The text output and the JSON (NaN as NaN: equal) but their seconds and engine runs."""
    lines = [x for x in text_lines(prep, res) if not x.startswith("Total run time")]
    j = {
        k: v
        for k, v in as_json(prep, res).items()
        if k not in ("seconds", "engine_runs", "engine_path")
    }
    return lines, json.dumps(j, sort_keys=True)


def both(cfg: str, overrides: list[str], comm=None) -> tuple[dict, dict, br.Prepared]:
    comm = resolve(comm if comm is not None else SerialComm())
    prep = br.prepare(cfg, overrides, comm.Get_size())
    one = br.run(prep, comm)
    two = br._two_runs(br.prepare(cfg, overrides, comm.Get_size()), comm, time.perf_counter())
    return one, two, prep


@pytest.mark.parametrize("router", ["iq", "ideal"])
@pytest.mark.parametrize("case", CASES, ids=[c[1].split(":")[0] for c in CASES])
def test_one_run_prints_what_two_runs_printed(router, case):
    one, two, prep = both(MESH, [f"router={router}", *case[0]])
    assert printed(prep, one) == printed(prep, two)
    assert one["runs"] < two["runs"] or one["runs"] == two["runs"] == (1 + one["outcome"].stable)


def test_the_cases_cover_what_they_say():
    """Stable latency and throughput, an abort, no convergence and the worms' longer first
    run are each among the cases (on the iq router)."""
    seen = {}
    for overrides, what in CASES:
        one, two, _ = both(MESH, ["router=iq", *overrides])
        seen[what] = (one["outcome"].stable, two["runs"])
    assert seen["latency, drained step by step"] == (True, 2)
    assert seen["worms outlasting the extra period (two runs took three)"] == (True, 3)
    assert seen["throughput: stopped at a period's end"][0]
    assert not seen["past saturation: aborted, stopped at once"][0]
    assert not seen["not converged"][0]


@pytest.mark.parametrize("router", ["iq", "ideal"])
def test_a_deadlock_in_one_run_is_the_two_runs_deadlock(tmp_path, monkeypatch, router):
    monkeypatch.chdir(tmp_path)
    one, two, prep = both(ring(tmp_path), [f"router={router}"])
    assert one["deadlock"] is not None and one["deadlock"] == two["deadlock"]
    assert printed(prep, one) == printed(prep, two)


def test_the_ideal_router_stopped_a_step_late_runs_again():
    """The ideal router dates a head leaving its source a step early (BookSim's itime), so
    a period's statistics need the step after it: a throughput measurement has then run
    the traffic of its stop step, and the run with the traffic stopped there is made."""
    one, two, prep = both(MESH, ["router=ideal", "sim_type=throughput", "injection_rate=0.2"])
    assert one["runs"] == 2 and printed(prep, one) == printed(prep, two)


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


@pytest.mark.mpi
@pytest.mark.parametrize("router", ["iq", "ideal"])
@pytest.mark.parametrize("case", CASES[:4], ids=[c[1].split(":")[0] for c in CASES[:4]])
def test_one_run_on_ranks_prints_what_one_rank_printed(comm, router, case):
    """Both routers measure on several ranks as on one (one engine run where one rank takes
    one; the ideal router's blocks of compiled steps take the measurement's cap on ranks too):
    the same output as one rank's one run and as the two runs."""
    prep1 = br.prepare(MESH, [f"router={router}", *case[0]])
    alone = br.run(prep1, SerialComm())
    one, two, prep = both(MESH, [f"router={router}", *case[0]], comm)
    assert printed(prep, one) == printed(prep1, alone) == printed(prep, two)
    assert one["runs"] == alone["runs"]


def test_the_live_rows_are_the_concatenation_of_the_deliveries_so_far():
    """LiveSource copies each delivery once into a buffer that grows (not the whole run at
    every period): its rows equal ``np.concatenate`` of the list and the live rows, at every
    refresh, across the buffer's growth, and from the start for another run's list."""
    import numpy as np

    from mpinet.jobs.booksim_live import LiveSource

    src = LiveSource(4, 1, 100, SerialComm(), object, 0)
    rng = np.random.default_rng(3)
    for run, refreshes in enumerate((12, 6)):  # a second run hands a new list
        delivered = []
        for step in range(refreshes):
            delivered.append(rng.integers(0, 99, size=(int(rng.integers(0, 40)), 7)))
            live = rng.integers(0, 99, size=(int(rng.integers(0, 30)), 7))
            src.refresh(step, delivered, lambda: None)
            want = np.concatenate([*delivered, live])
            assert np.array_equal(src._packets(live), want), (run, step)
    assert src._buf.shape[0] >= src._rows == sum(d.shape[0] for d in delivered) > 0
