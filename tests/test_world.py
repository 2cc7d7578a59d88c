"""The door stays light: ``mpinet --help`` loads none of the heavy dependencies, serial use
never starts MPI, and MPI missing is one line naming the extra.

Each check runs in a fresh interpreter, since what a process has imported is the subject.
"""

from __future__ import annotations

import pytest
from fresh_python import LAUNCHER, run_fresh

HEAVY = ("mpi4py", "h5py", "matplotlib", "pandas", "networkx", "mpinet.outputs", "mpinet.trace")


def _loaded_after(code: str) -> set[str]:
    """The modules of :data:`HEAVY` (and their submodules) loaded after running ``code``."""
    probe = (
        f"{code}\n"
        "import sys\n"
        f"print(' '.join(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}"
        f" or any(m == h or m.startswith(h + '.') for h in {HEAVY!r})))\n"
    )
    return set(run_fresh(probe).stdout.split())


def test_help_loads_no_heavy_dependency():
    code = (
        "import contextlib, io\n"
        "from mpinet.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
    )
    assert _loaded_after(code) == set()


def test_the_engine_without_a_command_never_starts_mpi():
    """``comm`` is a parameter: the engine, the plans and the trace writer load no mpi4py."""
    code = "import mpinet.engine.comm, mpinet.jobs.execute, mpinet.trace.writer"
    loaded = _loaded_after(code)
    assert not any(m.startswith("mpi4py") for m in loaded), loaded
    assert "h5py" in loaded  # the trace writer's own dependency, at its top


def test_mpi_missing_is_one_line_naming_the_extra():
    code = (
        "import sys; sys.modules['mpi4py'] = None\n"
        "from mpinet.engine.world import world\n"
        "from mpinet.errors import MPIError\n"
        "try:\n"
        "    world()\n"
        "except MPIError as exc:\n"
        "    print(exc)\n"
        "from mpinet.cli import get_comm\n"
        "print(type(get_comm()).__name__)\n"
    )
    done = run_fresh(code, alone=True)
    message, comm = done.stdout.strip().split("\n")
    assert message.startswith("cannot use MPI (") and "pip install 'mpinet[mpi]'" in message
    assert comm == "SerialComm"  # not under a launcher: one process, no MPI


def test_a_command_alone_starts_no_mpi():
    """A process no launcher started takes the serial stand-in without starting MPI (40-50 ms
    of CPU of every command; docs/performance.md, session 13); asked, MPI starts."""
    code = (
        "import sys\n"
        "from mpinet.cli import get_comm\n"
        "alone = type(get_comm()).__name__\n"
        "quiet = 'mpi4py' not in sys.modules\n"
        "asked = type(get_comm(alone_serial=False)).__name__\n"
        "print(alone, quiet, asked, 'mpi4py' in sys.modules)\n"
    )
    done = run_fresh(code, alone=True)
    alone, quiet, asked, loaded = done.stdout.split()
    assert (alone, quiet, loaded) == ("SerialComm", "True", "True") and asked != "SerialComm"


@pytest.mark.parametrize("var", ["PMI_RANK", "SLURM_PROCID", "PALS_RANKID", "FLUX_TASK_RANK"])
def test_a_launchers_variable_means_launched(monkeypatch, var):
    """Each launcher's rank variable is recognised, and names the rank that prints."""
    from mpinet.cli.ranks import RANK_VARS, SIZE_VARS, launch_rank, launched_by_mpi

    assert all(v.startswith(LAUNCHER) for v in RANK_VARS + SIZE_VARS)  # run_fresh's list
    for v in RANK_VARS + SIZE_VARS:
        monkeypatch.delenv(v, raising=False)
    assert not launched_by_mpi() and launch_rank() == 0
    monkeypatch.setenv(var, "3")
    assert launched_by_mpi() and launch_rank() == 3
