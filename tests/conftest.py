"""Shared test setup.

Under ``mpiexec -n R python -m pytest --with-mpi`` every rank runs pytest.
Rank 0 reports to the terminal; the other ranks write their report to
``$MPINET_TEST_LOGDIR/pytest-rank{r}.log`` (default: the current directory is
not touched, their output is dropped into a temporary file) and a JUnit path
containing ``{rank}`` is expanded per rank. At the end the exit status is
reduced with MAX over the ranks, so a failure on any rank fails rank 0 too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("MPIR_CVAR_CH4_PROGRESS_THROTTLE", "1")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from launcher import find_mpiexec as _find_mpiexec  # noqa: E402


def _with_mpi(config: pytest.Config) -> bool:
    try:
        return bool(config.getoption("--with-mpi"))
    except ValueError:
        return False


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if not _with_mpi(config):
        return
    from mpi4py import MPI

    rank = MPI.COMM_WORLD.Get_rank()
    xml = getattr(config.option, "xmlpath", None)
    if xml and "{rank}" in xml:
        config.option.xmlpath = xml.format(rank=rank)
    if rank != 0:
        logdir = os.environ.get("MPINET_TEST_LOGDIR") or tempfile.mkdtemp(prefix="mpinet-test-")
        sys.stdout = open(Path(logdir) / f"pytest-rank{rank}.log", "w")  # noqa: SIM115


#: the serial stage's longest files, longest first: a worker takes whole files (``--dist
#: loadfile``), so a heavy file started last leaves one worker running alone. Measured
#: 2026-11-29 (--durations, 2 workers, load 10-27: the order, not the seconds):
#: test_first_run.py (7 tests: a cold numba cache, `mpinet warmup` compiling every path) came
#: last by xdist's count of tests and ran 20 minutes alone. The others go by their number of
#: tests, as xdist would.
FIRST: tuple[str, ...] = (
    "test_first_run.py",
    "test_docs.py",
    "test_cli_run.py",
    "test_booksim_iq.py",
    "test_catalogue_iq.py",
    "test_anynet_router.py",
    "test_reproduce.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker, order the files as :data:`FIRST` says (the controller hands them
    out in this order: scripts/run_tests.py passes ``--no-loadscope-reorder``); the tests of
    a file keep their order."""
    if not hasattr(config, "workerinput"):
        return
    sizes: dict[str, int] = {}
    for item in items:
        sizes[item.path.name] = sizes.get(item.path.name, 0) + 1
    first = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda it: (first.get(it.path.name, len(FIRST)), -sizes[it.path.name]))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _with_mpi(session.config):
        return
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    if comm.Get_size() > 1:
        session.exitstatus = comm.allreduce(int(exitstatus), op=MPI.MAX)


def find_mpiexec() -> list[str]:
    """The launcher prefix of ``scripts/launcher.py``; the test fails if there is none."""
    try:
        return _find_mpiexec()
    except FileNotFoundError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def mpiexec() -> list[str]:
    """Command prefix that launches MPI ranks (see :func:`find_mpiexec`)."""
    return find_mpiexec()


@pytest.fixture
def booksim_stand_in(tmp_path):
    """A maker of stand-ins for BookSim2: ``make(router)`` is an executable in ``tmp_path``
    that runs ``mpinet booksim CFG router=ROUTER KEY=VALUE ...`` as BookSim2 takes its
    arguments (the scripts' end-to-end tests, without BookSim2)."""
    import stat

    def make(router: str) -> Path:
        exe = tmp_path / f"fake-booksim-{router}"
        # this checkout's mpinet, as the scripts run theirs (PYTHONPATH), from any directory
        exe.write_text(f'#!/bin/sh\ncfg="$1"; shift\nPYTHONPATH={ROOT} exec {sys.executable} '
                       f'-m mpinet booksim "$cfg" router={router} "$@"\n')  # fmt: skip
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
        return exe

    return make


@pytest.fixture(scope="session")
def run_mpinet(mpiexec):
    """Run ``mpinet ARGS`` under ``mpiexec -n ranks``; return the CompletedProcess."""

    def run(args: list[str], ranks: int = 1, timeout: float = 300) -> subprocess.CompletedProcess:
        cmd = [*mpiexec, "-n", str(ranks), sys.executable, "-m", "mpinet", *args]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)

    return run


@pytest.fixture(scope="session")
def catalogue_traces(tmp_path_factory, mpiexec) -> dict[str, Path]:
    """The real traces the catalogue's cases copy (:func:`catalogue.make_traces`)."""
    from catalogue import make_traces

    return make_traces(tmp_path_factory.mktemp("catalogue-traces"), mpiexec)
