"""The ``mpinet`` command line, serially and under mpiexec in a subprocess."""

from __future__ import annotations

import json

import pytest

from mpinet.cli import main

BAD = {
    "scc:2": "N in scc:N",
    "scc:x": "N in scc:N",
    "ms:0,3": "L in ms:L,N",
    "fccn:0": "fccn",
    "borel:8,2,1,7": "P",
    "borel:7,1,0,1": "A",
    "foo:3": "unknown topology family",
    "scc": "FAMILY:PARAMS",
    "star:14": "GiB",
}


@pytest.mark.parametrize("spec", sorted(BAD))
def test_bad_input_is_one_line_exit_2(spec, capsys):
    assert main(["info", spec]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpinet: error:")
    assert BAD[spec] in lines[0]


def test_info_json(capsys):
    assert main(["info", "scc:4", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["spec"] == "scc:4" and info["nodes"] == 72 and info["diameter"] == 8
    assert info["histogram"][0] == 1 and sum(info["histogram"]) == 72


def test_info_table_and_source(capsys):
    assert main(["info", "scc:5", "--source", "<3, 34125>", "--histogram"]) == 0
    out = capsys.readouterr().out
    assert "diameter" in out and "<3, 34125>" in out and "distance histogram" in out


def test_bad_source_label(capsys):
    assert main(["info", "scc:5", "--source", "<9, 12345>"]) == 2
    assert "i in the scc:5 label" in capsys.readouterr().err


def _strip(info: dict) -> dict:
    return {
        k: v
        for k, v in info.items()
        if k not in ("seconds", "ranks", "peak_rss_mib", "peak_rss_mib_all_ranks")
    }


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["scc:5", "ms:2,2", "fccn:2", "borel:7,2,0,1", "ccc:4"])
def test_info_identical_for_1_2_4_ranks(run_mpinet, spec):
    outs = []
    for ranks in (1, 2, 4):
        proc = run_mpinet(["info", spec, "--json"], ranks=ranks)
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.strip().splitlines()
        assert len(lines) == 1, "only rank 0 prints"
        info = json.loads(lines[0])
        assert info["ranks"] == ranks
        outs.append(_strip(info))
    assert outs[0] == outs[1] == outs[2]


def test_error_under_mpiexec_is_one_line_from_rank0(run_mpinet):
    proc = run_mpinet(["info", "scc:2"], ranks=2, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "mpinet: error: N in scc:N must be in [3, 20], got 2"
    ]


@pytest.mark.slow
def test_failing_rank_aborts_the_job(run_mpinet, monkeypatch):
    monkeypatch.setenv("MPINET_TEST_FAIL_RANK", "1")
    proc = run_mpinet(["info", "scc:6"], ranks=3, timeout=120)
    assert proc.returncode != 0
    assert "rank 1 failed" in proc.stderr


@pytest.fixture
def gc_state():
    """The collector as it was (enabled, nothing frozen) after a test that pauses it."""
    import gc

    was = gc.isenabled()
    yield gc
    gc.unfreeze()
    (gc.enable if was else gc.disable)()


def test_console_pauses_the_collector_until_the_command_works(gc_state, monkeypatch):
    """The console script runs its start-up without the cyclic collector, resumes it at
    get_comm (the command's work: collections go on there) and freezes what is left at exit."""
    import mpinet.cli as cli

    seen = {}

    def fake_main(meet: bool = False) -> int:
        seen["start"] = gc_state.isenabled()
        cli.get_comm()
        seen["work"] = (gc_state.isenabled(), gc_state.get_freeze_count() > 0)
        return 0

    gc_state.enable()
    gc_state.unfreeze()
    monkeypatch.setattr(cli, "main", fake_main)
    with pytest.raises(SystemExit) as done:
        cli.console()
    assert done.value.code == 0
    assert seen == {"start": False, "work": (True, True)}
    assert gc_state.isenabled() and not cli._GC_PAUSED
    # a process whose collector was off (a caller's choice) keeps it off
    gc_state.disable()
    with pytest.raises(SystemExit):
        cli.console()
    assert not gc_state.isenabled()


@pytest.mark.parametrize("name", __import__("mpinet.cli").cli.COMMANDS)
def test_every_command_ends_the_collectors_pause(name):
    """The console's start-up pause of the collector ends at get_comm or gc_resume: a command
    that called neither would run its whole work without the cyclic collector."""
    import importlib
    import inspect

    source = inspect.getsource(importlib.import_module(f"mpinet.cli.{name}"))
    assert "get_comm(" in source or "gc_resume()" in source


@pytest.mark.parametrize("ranks", [1, 2, 3, 8])
def test_warmups_large_network_reaches_the_prefetching_kernels(ranks):
    """``mpinet warmup``'s large-network job (one process, and each rank count's) is the
    smallest hypercube from dimension 11 whose VC buffers per rank reach the prefetching
    kernels' threshold (layout.PREFETCH_MIN)."""
    from mpinet.cli.warmup import JOBS, RANK_JOBS, big_hypercube
    from mpinet.engine.flit.layout import PREFETCH_MIN
    from mpinet.topology import from_spec

    def per_rank(spec: str) -> int:
        topo = from_spec(spec)
        return topo.num_nodes * topo.degree * 2 // ranks  # 2 VCs a link, as the job's

    spec = big_hypercube(ranks)
    d = int(spec.split(":")[1])
    assert per_rank(spec) >= PREFETCH_MIN
    assert d == 11 or per_rank(f"hypercube:{d - 1}") < PREFETCH_MIN
    for jobs in (JOBS, RANK_JOBS):
        (large,) = [keys for what, keys in jobs if "large network" in what]
        assert large["topology"] == "{big}" and large["model.vcs"] == 2


def test_every_warmup_job_plans_and_only_picks_them_by_words(tmp_path, capsys):
    """Each of ``mpinet warmup``'s jobs is a valid job (planned as warmup runs it: the whole
    warmup is not run by the tests, its compilation takes minutes); ``--only`` keeps those
    whose line holds one of its words, and one that holds none is refused in one line."""
    from mpinet.cli import main
    from mpinet.cli.warmup import BASE, JOBS, RANK_JOBS, RING, big_hypercube, chosen
    from mpinet.jobs import load_job
    from mpinet.jobs.execute import plan

    ring = tmp_path / "ring4.anynet"
    ring.write_text(RING)
    for ranks, jobs in ((1, JOBS), (2, RANK_JOBS)):
        for what, keys in jobs:
            keys = {k: v.format(ring=ring, big=big_hypercube(ranks)) if isinstance(v, str)
                    else v for k, v in {**BASE, **keys}.items()}  # fmt: skip
            assert plan(load_job(None, [(k.split("."), v) for k, v in keys.items()]),
                        ranks=ranks) is not None, what  # fmt: skip
    assert chosen() == JOBS and chosen("", True) == RANK_JOBS
    packet = [what for what, _ in chosen("Packet, collective")]
    assert packet == [what for what, _ in JOBS if what.startswith(("packet", "collective"))]
    assert len(packet) == 4
    assert [w for w, _ in chosen("iq router", True)] == [
        "flit engine on ranks, BookSim's iq router"
    ]
    assert main(["warmup", "--only", "nothing,such"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--only 'nothing,such'" in err[0] and "iq router" in err[0]
