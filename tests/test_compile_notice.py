"""The line a command prints before numba compiles mpinet's kernels (issue 35: a first
``mpinet booksim`` of BookSim2's ``mesh88_lat`` compiled for 43 s in silence)."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import mpinet.cli.booksim as booksim_cli
from mpinet import rng
from mpinet.cli import main
from mpinet.cli.compiling import GROUPS, Notice, line, notice
from mpinet.engine.flit import iq_step


def _uncached(kernel):
    """A fresh dispatcher of ``kernel``'s Python function (its module kept): its first call
    compiles, as a first run's does, and no cache is written."""
    return numba.njit(cache=False)(kernel.py_func)


def _draw(kernel) -> int:
    k = np.arange(4, dtype=np.uint64)
    return int(kernel(np.uint64(7), k, k, rng.below_threshold(0.5), np.empty(16, np.int64)))


def test_the_line_names_the_group_and_what_compiles_it_ahead():
    iq = line(iq_step.__name__)
    assert iq.startswith("[mpinet] first run: compiling the iq router's kernels (")
    assert "`mpinet warmup` does it ahead" in iq and "about 45 s" in iq
    ranks = line("mpinet.engine.flit.iq_ranks")
    assert "multi-rank" in ranks and "`mpiexec -n 2 mpinet warmup`" in ranks
    assert line("mpinet.engine.flit.chunk").startswith(
        "[mpinet] first run: compiling the flit engine's kernels"
    )
    assert line("numpy.linalg") is None  # not mpinet's: not said
    assert GROUPS[-1][0] == "mpinet."  # any other kernel of mpinet: a line too


def test_a_compilation_is_said_before_it_runs_once_per_group():
    said = []
    listener = Notice(lambda text: said.append((text, len(compiled))))
    compiled = []
    with numba.core.event.install_listener("numba:compile", listener):
        first = _uncached(rng._grid_below)
        n = _draw(first)
        compiled.append(1)
        _draw(_uncached(rng._grid_below))  # the same group again: said once
        assert _draw(first) == n  # compiled: no event
    assert said == [(line("mpinet.rng"), 0)]  # before the compilation ended


def _fake_booksim(state: dict):
    def run(args):
        state["n"] = _draw(_uncached(rng._grid_below))
        return 0

    return run


@pytest.mark.parametrize("extra, shown", [([], True), (["--quiet"], False)])
def test_booksim_says_it_on_stderr_unless_quiet(monkeypatch, capsys, extra, shown):
    state: dict = {}
    monkeypatch.setattr(booksim_cli, "run", _fake_booksim(state))
    assert main(["booksim", "any.cfg", *extra]) == 0
    err = capsys.readouterr().err
    assert state["n"] > 0
    assert err.splitlines() == ([line("mpinet.rng")] if shown else [])


def test_only_rank_0_says_it_and_warmup_says_it_its_own_way(capsys):
    class Args:
        quiet = False

    for rank, args in ((1, Args()), (0, type("W", (), {"compile_notice": False})())):
        with notice(args, rank) as listener:
            assert listener is None
            _draw(_uncached(rng._grid_below))
    assert capsys.readouterr().err == ""
