#!/usr/bin/env bash
# Parallel HDF5 for mpinet on Debian 12: a virtual environment whose h5py is built with MPI
# (driver="mpio"), so that traces are written as one file by all ranks. See docs/parallel-hdf5.md.
#
#   bash scripts/parallel_hdf5.sh [VENV]        # default VENV: /tmp/venvP
#
# Idempotent: every step checks first and is skipped when already done, so a second run takes
# seconds. A first run takes ~5-6 min on 2 cores (mpi4py ~3 min and h5py ~2 min of compiling).
# Environment: PYTHON (python3), MPI4PY_WHEEL=1 (use mpi4py's PyPI wheel, which loads the
# system Open MPI at run time, instead of compiling it), H5PY_SPEC (h5py==3.16.0, the version
# measured with Debian's HDF5 1.10.8).
#
# One MPI for everything: Debian's Open MPI (/usr/bin/mpicc, /usr/bin/mpiexec) for mpi4py,
# HDF5 and h5py. Do not install mpinet's `mpi` extra (MPICH wheel) into this environment, and
# do not mix in Debian's MPICH HDF5 (libhdf5-mpich-dev).
set -euo pipefail

VENV=${1:-${VENV:-/tmp/venvP}}
PYTHON=${PYTHON:-python3}
H5PY_SPEC=${H5PY_SPEC:-h5py==3.16.0}
REPO=$(cd "$(dirname "$0")/.." && pwd)
MPICC=/usr/bin/mpicc    # Debian's Open MPI wrapper, never a venv's MPICH mpicc on PATH
MPIEXEC=/usr/bin/mpiexec
APT_PACKAGES=(libopenmpi-dev openmpi-bin libhdf5-openmpi-dev)

say() { printf '== %s\n' "$*"; }

# 1. Debian packages: Open MPI and HDF5 built with it.
missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    SUDO=""
    [[ $(id -u) -eq 0 ]] || SUDO=sudo
    say "apt-get install ${missing[*]}"
    $SUDO apt-get update -q
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
else
    say "apt packages present: ${APT_PACKAGES[*]}"
fi

# 2. The virtual environment.
if [[ ! -x $VENV/bin/python ]]; then
    say "creating $VENV with $PYTHON"
    "$PYTHON" -m venv "$VENV"
fi
PY=$VENV/bin/python
PIP=("$PY" -m pip install -q --disable-pip-version-check)

# 3. mpi4py on the system Open MPI.
if "$PY" -c 'import sys; from mpi4py import MPI; sys.exit("Open MPI" not in MPI.Get_library_version())' 2>/dev/null; then
    say "mpi4py present, on Open MPI"
elif [[ ${MPI4PY_WHEEL:-0} == 1 ]]; then
    say "mpi4py: PyPI wheel (loads the system Open MPI at run time)"
    "${PIP[@]}" --force-reinstall "mpi4py>=4.1"
else
    say "mpi4py: compiling against $MPICC (~3 min)"
    MPICC=$MPICC "${PIP[@]}" --force-reinstall --no-cache-dir --no-binary=mpi4py "mpi4py>=4.1"
fi

# 4. h5py built with MPI against Debian's HDF5-openmpi (found by pkg-config as hdf5-openmpi).
if "$PY" -c 'import sys, h5py; sys.exit(not h5py.get_config().mpi)' 2>/dev/null; then
    say "h5py present, built with MPI"
else
    say "h5py: compiling $H5PY_SPEC with HDF5_MPI=ON (~2 min)"
    "${PIP[@]}" numpy "Cython>=3,<4" pkgconfig "setuptools>=77"
    # --no-build-isolation: h5py's isolated build would pin and compile an old mpi4py
    HDF5_MPI=ON CC=$MPICC HDF5_PKGCONFIG_NAME=hdf5-openmpi H5PY_SETUP_REQUIRES=0 \
        "${PIP[@]}" --force-reinstall --no-deps --no-cache-dir --no-binary=h5py \
        --no-build-isolation "$H5PY_SPEC"
fi

# 5. mpinet with the test extras, without the `mpi` extra (that is the MPICH wheel).
say "pip install -e $REPO[test]"
"${PIP[@]}" -e "$REPO[test]"

# 6. Check: same MPI in mpi4py and h5py, and a 2-rank parallel trace read back.
"$PY" - <<'EOF'
import h5py
from mpi4py import MPI

assert h5py.get_config().mpi, "h5py is not built with MPI"
print("h5py", h5py.version.version, "HDF5", h5py.version.hdf5_version, "mpi", h5py.get_config().mpi)
print("mpi4py on", MPI.Get_library_version().split(",")[0])
EOF
FLAGS=(--oversubscribe)
[[ $(id -u) -ne 0 ]] || FLAGS+=(--allow-run-as-root)
# (a script file, not stdin: mpiexec gives stdin to rank 0 only)
SMOKE=$(mktemp --suffix=.py)
trap 'rm -f "$SMOKE"' EXIT
cat >"$SMOKE" <<'EOF'
import os, shutil, tempfile

import h5py
import numpy as np
from mpi4py import MPI

import mpinet.trace as trace

comm = MPI.COMM_WORLD
d = comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None)
rows = np.arange(10 * comm.rank, 10 * comm.rank + 10)
path = trace.write_trace(os.path.join(d, "t.h5"), comm, attrs={}, tables={"t": {"c": rows}})
comm.Barrier()
if comm.rank == 0:
    with h5py.File(path) as f:
        assert f["t/c"].chunks is None, "not written by the parallel path"
    with trace.open(path) as t:
        assert (t.column("t", "c") == np.arange(10 * comm.size)).all()
    shutil.rmtree(d)
    print(f"parallel trace on {comm.size} ranks: ok")
EOF
"$MPIEXEC" "${FLAGS[@]}" -n 2 "$PY" "$SMOKE"
say "done: $VENV (run MPI jobs with $MPIEXEC ${FLAGS[*]} -n R $PY -m mpinet ...)"
